"""UNIQUE and FOREIGN KEY constraints, CREATE/DROP INDEX (see docs/DESIGN.md, "Constraints and indexes").

The checks run when a statement writes, over the table as the statement's transaction sees it
(its own pending writes included); UNIQUE is checked again at commit under the table's lock
(``engine.storage.WriteOp.unique_sets``), as PRIMARY KEY is. Everything here works on a
:class:`engine.executor.EngineSession` passed in as ``s``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from catalog.store import TableDef
from engine import ddl
from engine.storage import duplicate_keys, key_text, non_null_keys, storage_schema
from tidegate.errors import SqlError
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from engine.executor import EngineSession


# -- definitions ---------------------------------------------------------------------------------

def resolve_new(s: EngineSession, table_name: str, schema: str, columns: list, primary_key: list[str],
                time_index: str | None, constraints: list[dict], existing: TableDef | None,
                info: SessionInfo) -> list[dict]:
    """Constraints of a CREATE TABLE / ALTER TABLE ADD CONSTRAINT named, validated and numbered.
    ``existing``: the table being altered (None for CREATE TABLE)."""
    if not constraints:
        return []
    if time_index is not None:
        raise SqlError("0A000", "UNIQUE and FOREIGN KEY constraints are not supported on tables with a TIME INDEX",
                       hint="A time-series table's key is its PRIMARY KEY plus its TIME INDEX (last write wins).")
    taken = {t.name for t in s.catalog.list_tables(schema)}
    for t in s.catalog.list_tables(schema):
        if t.kind == "table":
            taken.update(t.index_names())
            taken.update(c["name"] for c in t.constraints)
    serial = existing.next_serial() if existing is not None else 1
    out = []
    by_name = {c.name: c for c in columns}
    for con in ddl.choose_constraint_names(table_name, constraints, taken):
        for k in con["columns"]:
            if k not in by_name:
                raise SqlError("42703", f'column "{k}" named in key does not exist')
        if con["type"] == "f":
            con = _resolve_reference(s, table_name, schema, by_name, primary_key, con, existing,
                                     out + (existing.constraints if existing else []), info)
        con["n"] = serial
        serial += 1
        out.append(con)
    return out


def _resolve_reference(s: EngineSession, table_name: str, schema: str, by_name: dict, primary_key: list[str],
                       con: dict, existing: TableDef | None, siblings: list[dict], info: SessionInfo) -> dict:
    ref_schema, ref_name = con["ref"]
    self_ref = ref_name == table_name and (ref_schema or schema) == schema and (
        ref_schema is not None or s.catalog.get_table(schema, table_name) is None or existing is not None)
    if self_ref:
        parent_cols = by_name
        parent_pk = primary_key
        parent_unique = [c["columns"] for c in siblings if c["type"] == "u"] + (
            [cols for _, cols in existing.unique_sets()] if existing is not None else [])
        parent_oid = existing.oid if existing is not None else 0
        ref_schema = schema
    else:
        parent = s.catalog.resolve_table(ref_name, ref_schema, info.search_path)
        if parent.kind != "table":
            raise SqlError("42809", f'referenced relation "{parent.name}" is not a table')
        s.catalog.roles.check_table(info, parent, "REFERENCES")
        if parent.time_index is not None:
            raise SqlError("0A000", f'a foreign key cannot reference time-series table "{parent.name}"',
                           hint="Reference an ordinary table with a PRIMARY KEY or UNIQUE constraint.")
        parent_cols = {c.name: c for c in parent.columns}
        parent_pk = parent.primary_key
        parent_unique = [cols for _, cols in parent.unique_sets()]
        parent_oid = parent.oid
        ref_schema, ref_name = parent.schema, parent.name
    ref_cols = list(con["ref_columns"])
    if not ref_cols:
        if not parent_pk:
            raise SqlError("42830", f'there is no primary key for referenced table "{ref_name}"')
        ref_cols = list(parent_pk)
    for k in ref_cols:
        if k not in parent_cols:
            raise SqlError("42703", f'column "{k}" referenced in foreign key constraint does not exist')
    if len(ref_cols) != len(con["columns"]):
        raise SqlError("42830", "number of referencing and referenced columns for foreign key disagree")
    if sorted(ref_cols) not in [sorted(parent_pk)] + [sorted(u) for u in parent_unique]:
        raise SqlError("42830", f'there is no unique constraint matching given keys for referenced table "{ref_name}"')
    for mine, theirs in zip(con["columns"], ref_cols):
        a, b = by_name[mine].type, parent_cols[theirs].type
        if a.pg.category != b.pg.category or a.is_array != b.is_array:
            raise SqlError("42804", f'foreign key constraint "{con["name"]}" cannot be implemented',
                           detail=f'Key columns "{mine}" and "{theirs}" are of incompatible types: '
                                  f"{a.sql()} and {b.sql()}.")
    return dict(con, ref=[ref_schema, ref_name], ref_columns=ref_cols, ref_oid=parent_oid)


def referencing(s: EngineSession, t: TableDef) -> list[tuple[TableDef, dict]]:
    """(child table, FOREIGN KEY constraint) pairs that reference ``t``."""
    out = []
    for child in s.catalog.list_tables(kind="table"):
        for con in child.constraints:
            if con["type"] == "f" and (con.get("ref_oid") or child.oid) == t.oid:
                out.append((child, con))
    return out


def parent_of(s: EngineSession, t: TableDef, con: dict) -> TableDef | None:
    oid = con.get("ref_oid") or t.oid
    if oid == t.oid:
        return t
    for p in s.catalog.list_tables(kind="table"):
        if p.oid == oid:
            return p
    return None


# -- checks ----------------------------------------------------------------------------------

def _distinct(table: pa.Table, cols: list[str]) -> pa.Table:
    return table.group_by(cols, use_threads=False).aggregate([])


def _minus(a: pa.Table, b: pa.Table | None, cols: list[str]) -> pa.Table:
    """Rows of ``a`` whose ``cols`` tuple is not in ``b``."""
    if b is None or b.num_rows == 0 or a.num_rows == 0:
        return a
    gone = _distinct(b.select(cols).cast(a.select(cols).schema), cols)
    gone = gone.append_column("__tg_x", pa.repeat(True, gone.num_rows))
    joined = a.join(gone, keys=cols, join_type="left outer")
    return joined.filter(pc.is_null(joined.column("__tg_x"))).drop_columns(["__tg_x"])


def stored_values(s: EngineSession, t: TableDef, cols: list[str], candidates: pa.Table,
                  info: SessionInfo) -> pa.Table:
    """The distinct NULL-free ``cols`` tuples of ``candidates`` that ``t`` holds as this
    transaction sees it (committed rows, or with the block's pending writes replayed)."""
    wanted = non_null_keys(candidates, cols)
    if wanted.num_rows == 0:
        return wanted
    wanted = _distinct(wanted.cast(storage_schema([t.column(k) for k in cols])), cols)
    pending = s._pending_ops(t)
    if all(op.kind == "append" and isinstance(op.data, pa.Table) for op in pending):
        # committed rows plus the block's own appends (an executemany): no Spark scan needed
        found = [s.store.existing_keys(t.location, cols, wanted).select(cols)]
        for op in pending:
            mine = _distinct(non_null_keys(op.data, cols).cast(wanted.schema), cols)
            found.append(mine.join(wanted, keys=cols, join_type="inner").select(cols))
        return _distinct(pa.concat_tables([f.cast(wanted.schema) for f in found]), cols)
    rows, _ = s._scan_with_flag(t, t.name, None, [], [], info, True)
    have = _distinct(rows.select(cols).cast(wanted.schema), cols)
    return have.join(wanted, keys=cols, join_type="inner")


def unique_error(name: str, row: dict[str, Any]) -> SqlError:
    return SqlError("23505", f'duplicate key value violates unique constraint "{name}"',
                    detail=f"{key_text(row)} already exists.")


def check_unique(s: EngineSession, t: TableDef, data: pa.Table, info: SessionInfo,
                 moving: pa.Table | None = None, changed: set[str] | None = None) -> None:
    """23505 when ``data`` repeats a UNIQUE constraint's / unique index's value among itself or
    with a stored row (``moving``: the old versions of updated rows, whose values are freed)."""
    for name, cols in t.unique_sets():
        if changed is not None and not changed & set(cols):
            continue
        keys = non_null_keys(data, cols)
        dups = duplicate_keys(keys, cols)
        if dups.num_rows:
            raise unique_error(name, dups.slice(0, 1).to_pylist()[0])
        present = stored_values(s, t, cols, keys, info)
        if moving is not None:
            present = _minus(present, non_null_keys(moving, cols), cols)
        if present.num_rows:
            raise unique_error(name, present.slice(0, 1).to_pylist()[0])


def check_references(s: EngineSession, t: TableDef, data: pa.Table, info: SessionInfo,
                     changed: set[str] | None = None) -> None:
    """23503 when a row of ``data`` (being inserted into / updated in ``t``) names a parent key
    that does not exist (MATCH SIMPLE: a row with a NULL in the key is not checked)."""
    for con in t.constraints:
        if con["type"] != "f" or (changed is not None and not changed & set(con["columns"])):
            continue
        parent = parent_of(s, t, con)
        if parent is None:
            continue
        keys = _distinct(non_null_keys(data, con["columns"]), con["columns"])
        if keys.num_rows == 0:
            continue
        ref_cols = con["ref_columns"]
        asked = keys.rename_columns(ref_cols).cast(storage_schema([parent.column(k) for k in ref_cols]))
        present = stored_values(s, parent, ref_cols, asked, info)
        if parent.oid == t.oid:  # a self-reference may name a row of the same statement
            own = _distinct(non_null_keys(data, ref_cols), ref_cols).cast(present.schema)
            present = pa.concat_tables([present, own])
        missing = _minus(asked, present, ref_cols)
        if missing.num_rows:
            row = dict(zip(con["columns"], missing.slice(0, 1).to_pylist()[0].values()))
            raise SqlError("23503", f'insert or update on table "{t.name}" violates foreign key constraint "{con["name"]}"',
                           detail=f'{key_text(row)} is not present in table "{parent.name}".')


def check_referenced(s: EngineSession, t: TableDef, removed: pa.Table, info: SessionInfo,
                     remaining: pa.Table | None = None) -> None:
    """23503 when rows removed from ``t`` (deleted, or the old versions of updated rows whose key
    is no longer in ``remaining``) are still referenced by another table's FOREIGN KEY."""
    for child, con in referencing(s, t):
        ref_cols = con["ref_columns"]
        gone = _distinct(non_null_keys(removed, ref_cols), ref_cols)
        if remaining is not None:
            gone = _minus(gone, non_null_keys(remaining, ref_cols), ref_cols)
        if gone.num_rows == 0:
            continue
        asked = gone.rename_columns(con["columns"])
        hits = stored_values(s, child, con["columns"], asked, info)
        if child.oid == t.oid and hits.num_rows:  # rows referencing themselves go with them
            hits = _minus(hits, removed.select(con["columns"]), con["columns"])
        if hits.num_rows:
            row = dict(zip(ref_cols, hits.slice(0, 1).to_pylist()[0].values()))
            raise SqlError("23503", f'update or delete on table "{t.name}" violates foreign key constraint '
                                    f'"{con["name"]}" on table "{child.name}"',
                           detail=f'{key_text(row)} is still referenced from table "{child.name}".')


def check_truncate(s: EngineSession, tables: list[TableDef]) -> None:
    """0A000 when TRUNCATE would leave another table's rows referencing nothing."""
    oids = {t.oid for t in tables}
    for t in tables:
        for child, _ in referencing(s, t):
            if child.oid not in oids:
                raise SqlError("0A000", "cannot truncate a table referenced in a foreign key constraint",
                               detail=f'Table "{child.name}" references "{t.name}".',
                               hint=f'Truncate table "{child.name}" at the same time.')


def drop_dependents(s: EngineSession, dropped: list[TableDef], cascade: bool) -> list[str]:
    """DROP TABLE of a table other tables reference: 2BP01, or with CASCADE the referencing
    FOREIGN KEY constraints are dropped (the NOTICEs PostgreSQL sends)."""
    oids = {t.oid for t in dropped}
    notices = []
    for t in dropped:
        deps = [(child, con) for child, con in referencing(s, t) if child.oid not in oids]
        if deps and not cascade:
            raise SqlError("2BP01", f"cannot drop table {t.name} because other objects depend on it",
                           detail="\n".join(f"constraint {con['name']} on table {child.name} depends on table {t.name}"
                                            for child, con in deps),
                           hint="Use DROP ... CASCADE to drop the dependent objects too.")
        for child, con in deps:
            notices.append(f"drop cascades to constraint {con['name']} on table {child.name}")
            fresh = s.catalog.get_table(child.schema, child.name)
            if fresh is not None:
                s.catalog.replace_table(replace(fresh, constraints=[c for c in fresh.constraints if c["name"] != con["name"]]))
    return notices


# -- ALTER TABLE ----------------------------------------------------------------------------------

def _table_values(s: EngineSession, t: TableDef, cols: list[str], info: SessionInfo) -> pa.Table:
    """``cols`` of every row of ``t`` as this transaction sees it."""
    if not s._pending_ops(t):
        return s.store.read_arrow(t.location, columns=cols)
    rows, _ = s._scan_with_flag(t, t.name, None, [], [], info, True)
    return rows.select(cols)


def check_existing_unique(s: EngineSession, t: TableDef, name: str, cols: list[str], info: SessionInfo) -> None:
    """23505 ``could not create unique index`` when stored rows already repeat a value of ``cols``."""
    dups = duplicate_keys(non_null_keys(_table_values(s, t, cols, info), cols), cols)
    if dups.num_rows:
        raise SqlError("23505", f'could not create unique index "{name}"',
                       detail=f"{key_text(dups.slice(0, 1).to_pylist()[0])} is duplicated.")


def add_constraints(s: EngineSession, t: TableDef, action: Any, info: SessionInfo) -> TableDef:
    """ALTER TABLE ... ADD [CONSTRAINT name] UNIQUE (cols) | FOREIGN KEY (cols) REFERENCES ...:
    the stored rows are checked first (23505 / 23503)."""
    from sqlglot import exp

    specs = []
    for node in action.expressions:
        name = _name(node.this) if isinstance(node, exp.Constraint) else None
        inner = node.expressions[0] if isinstance(node, exp.Constraint) and len(node.expressions) == 1 else node
        if not isinstance(inner, (exp.UniqueColumnConstraint, exp.ForeignKey)):
            raise SqlError("0A000", f"ALTER TABLE ADD {node.sql('postgres')} is not supported",
                           hint="UNIQUE and FOREIGN KEY constraints can be added; a PRIMARY KEY only in CREATE TABLE.")
        specs.append(ddl.table_constraint(inner, name))
    added = resolve_new(s, t.name, t.schema, t.columns, t.primary_key, t.time_index, specs, t, info)
    new = replace(t, constraints=list(t.constraints) + added)
    for con in added:
        if con["type"] == "u":
            check_existing_unique(s, new, con["name"], con["columns"], info)
        else:
            if con.get("ref_oid") == 0:
                con["ref_oid"] = t.oid
            check_references(s, replace(new, constraints=[con]), _table_values(s, t, [c.name for c in t.columns], info), info)
    stored = s.catalog.replace_table(new)
    s.store.keep_stats_columns(stored)
    return stored


def drop_constraints(s: EngineSession, t: TableDef, action: Any) -> TableDef:
    """ALTER TABLE ... DROP CONSTRAINT [IF EXISTS] name [CASCADE]."""
    new = t
    for node in action.args.get("tables") or action.expressions or []:
        name = _name(node.this if hasattr(node, "this") and node.this is not None else node)
        con = next((c for c in new.constraints if c["name"] == name), None)
        if con is None:
            if t.primary_key and name == f"{t.name}_pkey":
                raise SqlError("0A000", f'dropping the primary key constraint "{name}" is not supported',
                               hint="Create a new table without the primary key and copy the rows with INSERT ... SELECT.")
            if action.args.get("exists"):
                continue
            raise SqlError("42704", f'constraint "{name}" of relation "{t.name}" does not exist')
        if con["type"] == "u":
            users = [(child, fk) for child, fk in referencing(s, t) if sorted(fk["ref_columns"]) == sorted(con["columns"])
                     and not (t.primary_key and sorted(t.primary_key) == sorted(con["columns"]))]
            if users and not action.args.get("cascade"):
                child, fk = users[0]
                raise SqlError("2BP01", f"cannot drop constraint {name} on table {t.name} because other objects depend on it",
                               detail=f"constraint {fk['name']} on table {child.name} depends on index {name}",
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            for child, fk in users:
                fresh = s.catalog.get_table(child.schema, child.name)
                if fresh is not None and fresh.oid != t.oid:
                    s.catalog.replace_table(replace(fresh, constraints=[c for c in fresh.constraints if c["name"] != fk["name"]]))
        new = replace(new, constraints=[c for c in new.constraints if c["name"] != name])
    return s.catalog.replace_table(new) if new is not t else t


def without_column(s: EngineSession, t: TableDef, column: str, cascade: bool) -> TableDef:
    """``t`` without the constraints and indexes that use ``column`` (DROP COLUMN drops them, as in
    PostgreSQL); 2BP01 when another table's FOREIGN KEY references the column, unless CASCADE."""
    for child, fk in referencing(s, t):
        if column in fk["ref_columns"] and child.oid != t.oid:
            if not cascade:
                raise SqlError("2BP01", f"cannot drop column {column} of table {t.name} because other objects depend on it",
                               detail=f"constraint {fk['name']} on table {child.name} depends on column {column} of table {t.name}",
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            fresh = s.catalog.get_table(child.schema, child.name)
            if fresh is not None:
                s.catalog.replace_table(replace(fresh, constraints=[c for c in fresh.constraints if c["name"] != fk["name"]]))
    return replace(t, constraints=[c for c in t.constraints if column not in c["columns"]
                                   and not (c["type"] == "f" and c.get("ref_oid") == t.oid and column in c["ref_columns"])],
                   indexes=[i for i in t.indexes if column not in i["columns"]])


def renamed_column(s: EngineSession, t: TableDef, old: str, to: str) -> TableDef:
    """``t`` with ``old`` renamed in its constraints and indexes, and in the FOREIGN KEYs referencing it."""
    def ren(cols: list[str]) -> list[str]:
        return [to if c == old else c for c in cols]

    cons = []
    for c in t.constraints:
        c = dict(c, columns=ren(c["columns"]))
        if c["type"] == "f" and c.get("ref_oid") == t.oid:
            c["ref_columns"] = ren(c["ref_columns"])
        cons.append(c)
    for child, fk in referencing(s, t):
        if child.oid != t.oid and old in fk["ref_columns"]:
            fresh = s.catalog.get_table(child.schema, child.name)
            if fresh is not None:
                s.catalog.replace_table(replace(fresh, constraints=[
                    dict(c, ref_columns=ren(c["ref_columns"])) if c["name"] == fk["name"] else c for c in fresh.constraints]))
    return replace(t, constraints=cons, indexes=[dict(i, columns=ren(i["columns"])) for i in t.indexes])


def _name(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    if isinstance(node, exp.Expression) and node.this is not None:
        return _name(node.this)
    return str(node).lower()


# -- CREATE / DROP INDEX -------------------------------------------------------------------------

def index_statement(s: EngineSession, sql: str, info: SessionInfo) -> Any:
    from tidegate.results import CommandResult

    r = ddl.TokenReader(sql)
    if r.accept("DROP"):
        return _drop_index(s, r, info)
    r.expect("CREATE")
    unique = r.accept("UNIQUE")
    r.expect("INDEX")
    if r.word() == "CONCURRENTLY":
        raise SqlError("0A000", "CREATE INDEX CONCURRENTLY is not supported", hint="Drop CONCURRENTLY.")
    if_not_exists = r.accept("IF", "NOT", "EXISTS")
    name = None if r.word() == "ON" else r.ident()
    if if_not_exists and name is None:
        raise r.error()
    r.expect("ON")
    r.accept("ONLY")
    parts = r.qualified()
    if len(parts) > 2:
        raise SqlError("0A000", f'cross-database references are not implemented: "{".".join(parts)}"')
    t = s.catalog.resolve_table(parts[-1], parts[-2] if len(parts) == 2 else None, info.search_path)
    if t.kind != "table":
        raise SqlError("42809", f'cannot create index on relation "{t.name}"',
                       detail=f'This operation is not supported for {"views" if t.kind == "view" else "sequences"}.')
    using = "btree"
    if r.accept("USING"):
        using = r.ident()
        if using not in ("btree", "hash", "brin", "gin", "gist", "spgist"):
            raise SqlError("42704", f'access method "{using}" does not exist')
        if using != "btree":
            raise SqlError("0A000", f'index access method "{using}" is not supported',
                           hint="Use USING btree (the default).")
    r.expect_text("(")

    def column() -> tuple[str, str]:
        tok = r.peek()
        if tok is None or tok.kind not in ("word", "qid") or (r.peek(1) is not None and r.peek(1).text in ("(", ".", "::")):
            raise SqlError("0A000", "indexes on expressions are not supported", hint="Index plain columns.")
        col = r.ident()
        opts = []
        for w in ("ASC", "DESC"):
            if r.accept(w):
                opts.append(w)
        if r.accept("NULLS"):
            opts.append("NULLS " + r.one_of("FIRST", "LAST"))
        return col, " ".join(opts)

    cols = r.comma_list(column)
    r.expect_text(")")
    if not r.at_end():
        word = r.word() or r.peek().text
        raise SqlError("0A000", f"CREATE INDEX ... {word} is not supported",
                       hint="Write CREATE [UNIQUE] INDEX name ON table (columns) without INCLUDE, WITH, TABLESPACE or WHERE.")
    names = [c for c, _ in cols]
    for c in names:
        if t.column(c) is None:
            raise SqlError("42703", f'column "{c}" does not exist')
    if unique and t.time_index is not None:
        raise SqlError("0A000", "unique indexes are not supported on tables with a TIME INDEX",
                       hint="A time-series table's key is its PRIMARY KEY plus its TIME INDEX (last write wins).")
    if name is None:
        name = f"{t.name}_{'_'.join(names)}_idx"
        k = 0
        while s.catalog.relation_name_taken(t.schema, name):
            k += 1
            name = f"{t.name}_{'_'.join(names)}_idx{k}"
    elif s.catalog.relation_name_taken(t.schema, name):
        if if_not_exists:
            return CommandResult("CREATE INDEX", notices=[f'relation "{name}" already exists, skipping'])
        raise SqlError("42P07", f'relation "{name}" already exists')
    s.catalog.roles.check_owner(info, "table", t.name, t.owner, schema=t.schema)
    s._lock_for_ddl(t)
    if unique:
        check_existing_unique(s, t, name, names, info)
    entry = {"name": name, "columns": names, "unique": unique, "n": t.next_serial(),
             "options": [o for _, o in cols]}
    s.store.keep_stats_columns(s.catalog.replace_table(replace(t, indexes=list(t.indexes) + [entry])))
    return CommandResult("CREATE INDEX")


def _drop_index(s: EngineSession, r: ddl.TokenReader, info: SessionInfo) -> Any:
    from tidegate.results import CommandResult

    r.expect("INDEX")
    if r.word() == "CONCURRENTLY":
        raise SqlError("0A000", "DROP INDEX CONCURRENTLY is not supported", hint="Drop CONCURRENTLY.")
    if_exists = r.accept("IF", "EXISTS")
    targets = r.comma_list(r.qualified)
    r.accept("RESTRICT") or r.accept("CASCADE")
    r.done()
    notices = []
    for parts in targets:
        if len(parts) > 2:
            raise SqlError("0A000", f'cross-database references are not implemented: "{".".join(parts)}"')
        name = parts[-1]
        schemas = [parts[0]] if len(parts) == 2 else info.search_path
        owner = next((o for o in (s.catalog.index_owner(sch, name) for sch in schemas) if o is not None), None)
        if owner is None:
            other = next((x for x in (s.catalog.get_table(sch, name) for sch in schemas) if x is not None), None)
            if other is not None:
                raise SqlError("42809", f'"{name}" is not an index', hint="Use DROP TABLE to remove a table."
                               if other.kind == "table" else None)
            if if_exists:
                notices.append(f'index "{name}" does not exist, skipping')
                continue
            raise SqlError("42704", f'index "{name}" does not exist')
        entry = next((i for i in owner.indexes if i["name"] == name), None)
        if entry is None:
            raise SqlError("2BP01", f"cannot drop index {name} because constraint {name} on table {owner.name} requires it",
                           hint=f"You can drop constraint {name} on table {owner.name} instead.")
        s.catalog.roles.check_owner(info, "table", owner.name, owner.owner, schema=owner.schema)
        s._lock_for_ddl(owner)
        s.catalog.replace_table(replace(owner, indexes=[i for i in owner.indexes if i["name"] != name]))
    return CommandResult("DROP INDEX", notices=notices)
