"""MERGE INTO (PostgreSQL 15): one statement that updates, deletes and inserts by a join.

    MERGE INTO target [AS t] USING source [AS s] ON condition
      WHEN MATCHED [AND cond] THEN UPDATE SET ... | DELETE | DO NOTHING
      WHEN NOT MATCHED [AND cond] THEN INSERT [(cols)] VALUES (...) | INSERT DEFAULT VALUES | DO NOTHING

Spark evaluates the whole decision in one query over one snapshot: ``source LEFT JOIN target ON
condition``, every row tagged with the first WHEN clause that applies to it (clauses are tried in
order, MATCHED ones for rows with a target partner, NOT MATCHED ones for the others) and with the
values that clause computes. The gateway then checks PostgreSQL's rules (a target row changed by
two source rows is 21000; NOT NULL, keys) and writes the updates, deletes and inserts as ONE
commit: inside a transaction block they join the block's writes, otherwise the statement is its
own small block. The command tag is ``MERGE n``, n the rows inserted, updated or deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from engine import constraints, spark as sparkmod, sparkwrite
from engine.dml import (conflict_columns, does_nothing, fast_array, is_default, name_target_columns,
                        refuse_sequence_functions, row_id_column, set_targets, target_columns)
from engine.resolver import node_name
from engine.storage import (WriteOp, coerce_array, dedupe_last, duplicate_keys, storage_schema,
                            storage_to_result)
from tidegate.errors import SqlError
from tidegate.results import CommandResult
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from catalog.store import ColumnDef, TableDef
    from engine.executor import EngineSession

_TWICE_HINT = "Ensure that not more than one source row matches any one target row."
_PROPOSED_TWICE_HINT = "Ensure that no rows proposed for insertion within the same command have duplicate constrained values."


@dataclass
class _Clause:
    """One WHEN clause: its kind, condition and (for UPDATE/INSERT) target columns and values."""

    matched: bool
    action: str  # "update" | "delete" | "nothing" | "insert"
    condition: exp.Expression | None
    columns: list[ColumnDef] = field(default_factory=list)
    values: list[exp.Expression | None] = field(default_factory=list)  # None: DEFAULT
    value_slots: list[int] = field(default_factory=list)  # output column of each non-DEFAULT value


def execute_merge(session: EngineSession, tree: exp.Merge, params: list[Any], info: SessionInfo) -> CommandResult:
    target = tree.this
    if not isinstance(target, exp.Table):
        raise SqlError("42601", "MERGE target must be a table")
    t = session._resolve_target(target, info)
    tree = name_target_columns(tree, t)
    target = tree.this
    alias = target.alias or t.name
    clauses = _clauses(tree, t)
    needed = {"update": "UPDATE", "delete": "DELETE", "insert": "INSERT"}
    privileges = sorted({needed[c.action] for c in clauses if c.action in needed})
    session.catalog.roles.check_table(info, t, "SELECT", *privileges)
    with session._rewriting(t):
        return session._retrying(_merge_once, session, tree, t, alias, clauses, params, info)


def _clauses(tree: exp.Merge, t: TableDef) -> list[_Clause]:
    if tree.args.get("returning") is not None:
        raise SqlError("0A000", "MERGE ... RETURNING is not supported (PostgreSQL 17 added it; tidegate follows 15)",
                       hint="Run the MERGE, then SELECT the rows it changed.")
    whens = tree.args.get("whens")
    out: list[_Clause] = []
    for when in (whens.expressions if whens is not None else []):
        if when.args.get("source"):
            raise SqlError("0A000", "WHEN NOT MATCHED BY SOURCE is not supported (PostgreSQL 17 added it; "
                           "tidegate follows 15)",
                           hint="Delete or update the target rows without a source partner in a separate statement.")
        matched = bool(when.args.get("matched"))
        then = when.args.get("then")
        cond = when.args.get("condition")
        if isinstance(then, exp.Var) and then.name.upper() in ("DELETE", "DO NOTHING"):
            action = "delete" if then.name.upper() == "DELETE" else "nothing"
            if action == "delete" and not matched:
                raise SqlError("42601", 'syntax error at or near "DELETE"')
            out.append(_Clause(matched, action, cond))
        elif isinstance(then, exp.Update):
            if not matched:
                raise SqlError("42601", 'syntax error at or near "UPDATE"')
            clause = _Clause(True, "update", cond)
            for c, e in set_targets(t, then.expressions):
                clause.columns.append(c)
                clause.values.append(None if is_default(e) else e)
            out.append(clause)
        elif isinstance(then, exp.Insert):
            if matched:
                raise SqlError("42601", 'syntax error at or near "INSERT"')
            out.append(_insert_clause(then, cond, t))
        else:
            raise SqlError("42601", "syntax error in MERGE: WHEN ... THEN needs UPDATE, DELETE, INSERT or DO NOTHING")
    if not out:
        raise SqlError("42601", "syntax error at end of input")
    return out


def _insert_clause(then: exp.Insert, cond: exp.Expression | None, t: TableDef) -> _Clause:
    names_node = then.this
    values_node = then.expression
    clause = _Clause(False, "insert", cond)
    names = [node_name(e.this if isinstance(e, exp.Column) else e) for e in names_node.expressions] \
        if isinstance(names_node, exp.Tuple) else None
    if values_node is None and names == ["default"] and not names_node.expressions[0].this.quoted:
        return clause  # INSERT DEFAULT VALUES: every column its default
    if values_node is None:
        raise SqlError("42601", "syntax error in MERGE: INSERT needs VALUES (...) or DEFAULT VALUES")
    values = values_node.expressions if isinstance(values_node, exp.Tuple) else [values_node]
    columns = target_columns(t, names)
    if len(values) > len(columns):
        raise SqlError("42601", "INSERT has more expressions than target columns")
    if names is not None and len(values) < len(columns):
        raise SqlError("42601", "INSERT has more target columns than expressions")
    for c, v in zip(columns, values):
        if c.identity == "a" and not is_default(v):
            raise SqlError("428C9", f'cannot insert a non-DEFAULT value into column "{c.name}"',
                           detail=f'Column "{c.name}" is an identity column defined as GENERATED ALWAYS.',
                           hint="Use OVERRIDING SYSTEM VALUE to override.")
        clause.columns.append(c)
        clause.values.append(None if is_default(v) else v)
    return clause


def _decision_query(tree: exp.Merge, t: TableDef, alias: str, clauses: list[_Clause]) -> exp.Select:
    """SELECT target columns, row id, chosen clause, clause values FROM source LEFT JOIN target."""
    target = exp.Subquery(
        this=exp.Select(expressions=[exp.Star(), exp.alias_(row_id_column(), "__tg_rid")]).from_(
            exp.Table(this=exp.to_identifier(t.name), db=exp.to_identifier(t.schema))),
        alias=exp.TableAlias(this=exp.to_identifier(alias)))
    source = tree.args["using"].copy()
    source_name = source.alias_or_name
    matched = exp.Not(this=exp.Is(this=exp.column("__tg_rid", table=alias), expression=exp.null()))
    ifs_m = [exp.If(this=c.condition.copy() if c.condition is not None else exp.true(), true=exp.Literal.number(i))
             for i, c in enumerate(clauses) if c.matched]
    ifs_n = [exp.If(this=_of_source(c.condition, source_name, alias) if c.condition is not None else exp.true(),
                    true=exp.Literal.number(i))
             for i, c in enumerate(clauses) if not c.matched]
    minus_one = exp.Neg(this=exp.Literal.number(1))
    act = exp.Case(ifs=[exp.If(this=matched, true=exp.Case(ifs=ifs_m, default=minus_one) if ifs_m else minus_one)],
                   default=exp.Case(ifs=ifs_n, default=minus_one) if ifs_n else minus_one)
    exprs: list[exp.Expression] = [exp.alias_(exp.column(c.name, table=alias, quoted=True), f"__tg_t{i}")
                                   for i, c in enumerate(t.columns)]
    exprs.append(exp.alias_(exp.column("__tg_rid", table=alias), "__tg_rid"))
    exprs.append(exp.alias_(act, "__tg_act"))
    slot = len(exprs)
    for i, c in enumerate(clauses):
        for v in c.values:
            if v is None:
                continue
            chosen = exp.EQ(this=exp.paren(act.copy()), expression=exp.Literal.number(i))
            value = v.copy() if c.matched else _of_source(v, source_name, alias)
            exprs.append(exp.alias_(exp.Case(ifs=[exp.If(this=chosen, true=value)]), f"__tg_v{slot}"))
            c.value_slots.append(slot)
            slot += 1
    select = exp.Select(expressions=exprs).from_(source)
    select.set("joins", [exp.Join(this=target, side="LEFT", on=tree.args["on"].copy())])
    return select


def _of_source(e: exp.Expression, source_name: str, target_name: str) -> exp.Expression:
    """A WHEN NOT MATCHED condition or value: only the source's columns are in scope there (there
    is no target row), so a bare column name is the source's even where the target has the same
    name, and naming the target is PostgreSQL's 42P01. Names inside subqueries keep their scopes."""
    e = e.copy()
    for col in list(e.find_all(exp.Column)):
        if col.find_ancestor(exp.Select) is not None:
            continue
        if not col.table:
            col.set("table", exp.to_identifier(source_name))
        elif col.table == target_name and target_name != source_name:
            raise SqlError("42P01", f'invalid reference to FROM-clause entry for table "{target_name}"',
                           hint=f'There is an entry for table "{target_name}", but it cannot be referenced '
                                "from this part of the query (WHEN NOT MATCHED sees only the source's row).")
    return e


def _merge_once(session: EngineSession, tree: exp.Merge, t: TableDef, alias: str, clauses: list[_Clause],
                params: list[Any], info: SessionInfo) -> CommandResult:
    done = _merge_on_spark(session, tree, t, alias, clauses, params, info)
    if done is not None:
        return CommandResult(f"MERGE {done}")
    for c in clauses:
        c.value_slots = []
    query = _decision_query(tree, t, alias, clauses)
    session.engine.runtime.wait()

    def work() -> tuple[pa.Table, list[Any], int]:
        tq, resolver = session._translate(query, params, info)
        table = sparkmod.collect_arrow(session.spark.sql(tq.spark_sql))
        snap = resolver.snapshots.get(t.location)
        version = snap.version if snap else session.store.version(t.location)
        return table, list(tq.output_types or []), version

    table, types, version = session._run(work)
    n = len(t.columns)
    act = table.column(n + 1).combine_chunks()
    rid = table.column(n)
    counts = {"update": 0, "delete": 0, "insert": 0}
    touched = pc.is_in(act, value_set=pa.array([i for i, c in enumerate(clauses) if c.action in ("update", "delete")],
                                               pa.int32()).cast(act.type))
    changed_rids = pc.filter(rid, touched)
    if len(changed_rids) != len(pc.unique(changed_rids)):
        raise SqlError("21000", "MERGE command cannot affect row a second time", hint=_TWICE_HINT)

    def column(i: int) -> pa.ChunkedArray:
        col = table.column(i)
        ty = types[i] if i < len(types) else None
        return storage_to_result(col, ty) if ty is not None else col

    old_cols = [coerce_array(table.column(i), c.type, c.name) for i, c in enumerate(t.columns)]
    old_all = pa.Table.from_arrays(old_cols, schema=storage_schema(t.columns))
    ctx = session._eval_context(info)
    updates: list[pa.Table] = []
    olds: list[pa.Table] = []
    deletes: list[pa.Table] = []
    inserts: list[pa.Table] = []
    for i, clause in enumerate(clauses):
        mask = pc.fill_null(pc.equal(act, i), False)
        rows = int(pc.sum(mask).as_py() or 0)
        if not rows or clause.action == "nothing":
            continue
        if clause.action == "delete":
            deletes.append(old_all.filter(mask))
        elif clause.action == "update":
            old = old_all.filter(mask)
            new_cols = [old.column(j) for j in range(n)]
            slots = iter(clause.value_slots)
            for c, v in zip(clause.columns, clause.values):
                j = t.columns.index(c)
                if v is None:
                    new_cols[j] = _defaults(session, t, c, rows, ctx, info)
                else:
                    new_cols[j] = coerce_array(column(next(slots)).filter(mask), c.type, c.name)
            updates.append(pa.Table.from_arrays(new_cols, schema=storage_schema(t.columns)))
            olds.append(old)
        else:
            given: dict[str, Any] = {}
            slots = iter(clause.value_slots)
            for c, v in zip(clause.columns, clause.values):
                if v is not None:
                    given[c.name] = column(next(slots)).filter(mask).combine_chunks()
            inserts.append(session._build_rows(t, given, rows, ctx, info))
        counts[clause.action] += rows
    ops = _plan_writes(session, t, updates, olds, deletes, inserts, version, info)
    own_block = session._pending is None
    if ops and own_block:
        session.begin()
    try:
        for op in ops:
            session._write(op)
        if ops and own_block:
            session.commit()
    except BaseException:
        if ops and own_block:
            session.rollback()
        raise
    return CommandResult(f"MERGE {sum(counts.values())}")


def _merge_on_spark(session: EngineSession, tree: exp.Merge, t: TableDef, alias: str, clauses: list[_Clause],
                    params: list[Any], info: SessionInfo, conflict_keys: list[str] | None = None) -> int | None:
    """The MERGE run by Delta Lake's own command on Spark (engine.sparkwrite.merge): its rows never
    pass through the gateway. None when the collected path must run it: what
    ``engine.dml._rewrite_on_spark`` keeps for UPDATE (a transaction block, TTL, constraints,
    keys set, subqueries, values needing PostgreSQL's conversions, non-deterministic values), DO
    NOTHING and DEFAULT, an INSERT into a table with keys or without a value for a column that
    has a default or NOT NULL; and ``auto`` with a source of fewer than a million rows or a
    target under 8 MB (``tidegate.spark_writes``).

    ``conflict_keys``: the MERGE is an ``INSERT ... ON CONFLICT (key) DO UPDATE``
    (:func:`insert_on_conflict`): its INSERT may go into the PRIMARY KEY table, a key proposed
    twice is PostgreSQL's 21000 (checked by one job first: the source has no key twice, so each
    inserted key is new), and ``auto`` goes by the size of the rows proposed, as an append does."""
    guarded = session._spark_rewritable(t, info)
    if guarded is None:
        return None
    source_name = tree.args["using"].alias_or_name
    expressions: list[exp.Expression] = [tree.args["on"]]
    for c in clauses:
        if c.action == "nothing" or any(v is None for v in c.values):
            return None
        if c.action == "update" and any(col.name in guarded or col.identity is not None for col in c.columns):
            return None
        if c.action == "insert":
            given = {col.name for col in c.columns}
            into_keyed = conflict_keys is not None and sparkwrite.keyed_append_target(t)
            if not (sparkwrite.blind_append_target(t) or into_keyed) or any(
                    col.name not in given and (col.default is not None or col.identity is not None or col.not_null)
                    for col in t.columns):
                return None
        scoped = (lambda e: e) if c.matched else (lambda e: _of_source(e, source_name, alias))
        expressions += [scoped(e) for e in ([c.condition] if c.condition is not None else []) + c.values]
    if sparkwrite.has_subquery(expressions):
        return None
    session.engine.runtime.wait()

    def work() -> int | None:
        from engine.resolver import StatementResolver
        from engine.translate import translate_merge_parts

        resolver = StatementResolver(session, info)
        with session.store.gate.reading():
            view = session.table_view(t, resolver)
            if conflict_keys is None and not sparkwrite.worth_writing_on_spark(session.spark.table(view), info):
                return None  # off; or auto and a small table
            target = exp.Table(this=exp.to_identifier(t.name), db=exp.to_identifier(t.schema),
                               alias=exp.TableAlias(this=exp.to_identifier(alias)))
            select = exp.Select(expressions=[exp.alias_(e.copy(), f"__tg_p{k}") for k, e in enumerate(expressions)])
            select = select.from_(target).join(tree.args["using"].copy(), join_type="CROSS")
            source_sql, parts = translate_merge_parts(select, resolver, params)
        probe = session.spark.sql(f"SELECT {', '.join(sql for sql, _ in parts)} FROM "
                                  f"{sparkwrite.quoted(view)} AS {sparkwrite.quoted(alias)} CROSS JOIN {source_sql}")
        types = sparkwrite.stored_types(probe, [ty for _, ty in parts])
        if types is None:
            return None
        slots = iter(zip(parts[1:], types[1:]))
        spark_clauses = []
        for c in clauses:
            condition = next(slots)[0][0] if c.condition is not None else None
            assignments = []
            for col, v in zip(c.columns, c.values):
                (value_sql, _), value_type = next(slots)
                assigned = sparkwrite.assignment(col, v, value_sql, value_type)
                if assigned is None:
                    return None
                assignments.append(assigned)
            spark_clauses.append(sparkwrite.MergeClause(c.matched, c.action, condition, tuple(assignments)))
        source_rows = session.spark.sql(f"SELECT * FROM {source_sql}")
        if conflict_keys is not None:
            if not sparkwrite.worth_writing_on_spark(source_rows, info):
                return None  # off; or auto and a small result: the collected path's upsert
            if sparkwrite.repeated_key(source_rows, conflict_keys):
                raise SqlError("21000", "ON CONFLICT DO UPDATE command cannot affect row a second time",
                               hint=_PROPOSED_TWICE_HINT)
        elif info.settings.get(sparkwrite.SETTING, "auto") == "auto" and \
                not sparkwrite.enough_rows_to_rewrite(source_rows, None):
            return None
        return sparkwrite.merge(session.spark, t, alias, source_sql, parts[0][0], spark_clauses)

    return session._run(work)


def insert_on_conflict(session: EngineSession, tree: exp.Insert, params: list[Any],
                       info: SessionInfo) -> CommandResult | None:
    """``INSERT INTO t [AS a] [(cols)] SELECT ... ON CONFLICT (primary key) DO UPDATE SET ...`` with
    a large result, run on Spark as the MERGE it is: ``MERGE INTO t [AS a] USING (SELECT ...) AS
    excluded(cols) ON a.key = excluded.key WHEN MATCHED THEN UPDATE SET ... WHEN NOT MATCHED THEN
    INSERT (cols) VALUES (excluded.cols)`` (:func:`_merge_on_spark`); the proposed rows never pass
    through the gateway. None when the collected path runs it: VALUES, RETURNING, a WHERE or
    constraint name in the ON CONFLICT clause, a conflict target other than the primary key, a
    table with more rules than its primary key, a source with ``*`` or another column count than
    the target list, and whatever :func:`_merge_on_spark` keeps there (a small result among
    them); its errors are the collected path's."""
    conflict = tree.args.get("conflict")
    source = tree.expression
    if conflict is None or does_nothing(conflict) or tree.args.get("returning") is not None \
            or tree.args.get("with") is not None or not isinstance(source, exp.Select) \
            or any(conflict.args.get(a) is not None for a in ("constraint", "where", "index_predicate")) \
            or any(e.find(exp.Star) is not None for e in source.expressions):
        return None
    target = tree.this
    names = [node_name(e) for e in target.expressions] if isinstance(target, exp.Schema) else None
    table = target.this if isinstance(target, exp.Schema) else target
    if not isinstance(table, exp.Table):
        return None
    t = session._resolve_target(table, info)
    if not sparkwrite.keyed_append_target(t):
        return None
    keys = list(t.primary_key)
    named = conflict_columns(conflict)
    columns = target_columns(t, names)
    if sorted(named) != sorted(keys) or len(source.expressions) != len(columns):
        return None
    session.catalog.roles.check_table(info, t, "INSERT", "UPDATE")
    refuse_sequence_functions(source)
    merge_tree = _on_conflict_merge(table, source, columns, keys, conflict.expressions or [])
    merge_tree = name_target_columns(merge_tree, t)
    alias = merge_tree.this.alias or t.name
    clauses = _clauses(merge_tree, t)
    with session._rewriting(t):
        done = session._retrying(_merge_on_spark, session, merge_tree, t, alias, clauses, params, info, keys)
    return CommandResult(f"INSERT 0 {done}") if done is not None else None


def _on_conflict_merge(table: exp.Table, source: exp.Select, columns: list[ColumnDef], keys: list[str],
                       sets: list[exp.Expression]) -> exp.Merge:
    """The MERGE an ``INSERT ... ON CONFLICT (keys) DO UPDATE SET sets`` is (see :func:`insert_on_conflict`)."""
    target_name = table.args["alias"].this if table.alias else table.this

    def of(name: str, qualifier: exp.Identifier | str) -> exp.Column:
        return exp.Column(this=exp.to_identifier(name, quoted=True),
                          table=qualifier.copy() if isinstance(qualifier, exp.Identifier) else exp.to_identifier(qualifier))

    excluded = exp.Subquery(this=source.copy(), alias=exp.TableAlias(
        this=exp.to_identifier("excluded"), columns=[exp.to_identifier(c.name, quoted=True) for c in columns]))
    on = exp.and_(*[exp.EQ(this=of(k, target_name), expression=of(k, "excluded")) for k in keys])
    # a bare NULL proposed is inserted as NULL (its select-list type, text, is no column's type)
    proposed = [e.unalias() for e in source.expressions]
    insert = exp.Insert(this=exp.Tuple(expressions=[exp.column(c.name, quoted=True) for c in columns]),
                        expression=exp.Tuple(expressions=[exp.Null() if isinstance(e, exp.Null) else of(c.name, "excluded")
                                                          for c, e in zip(columns, proposed)]))
    whens = exp.Whens(expressions=[exp.When(matched=True, then=exp.Update(expressions=[e.copy() for e in sets])),
                                   exp.When(matched=False, then=insert)])
    return exp.Merge(this=table.copy(), using=excluded, on=on, whens=whens)


def _defaults(session: EngineSession, t: TableDef, c: ColumnDef, rows: int, ctx: dict[str, Any],
              info: SessionInfo) -> pa.Array:
    """``SET col = DEFAULT`` for ``rows`` rows: the column's default (a fresh value per row for a sequence)."""
    from engine.storage import python_value, storage_type

    seq = session._default_sequence(c, info)
    if seq is not None:
        return fast_array(session._next_values(seq, rows, info), c)
    dv = python_value(session._default_value(c, ctx, info), c.type, c.name) if c.default is not None else None
    return pa.array([dv] * rows, type=storage_type(c.type))


def _plan_writes(session: EngineSession, t: TableDef, updates: list[pa.Table], olds: list[pa.Table],
                 deletes: list[pa.Table], inserts: list[pa.Table], version: int, info: SessionInfo) -> list[WriteOp]:
    """The writes of one MERGE, checked: NOT NULL, keys and UNIQUE constraints never held by two
    rows afterwards, FOREIGN KEYs in both directions."""
    ops: list[WriteOp] = []
    keys = session._keys(t)
    uniques = t.unique_sets()
    match_cols = session._match_columns(t)
    schema = storage_schema(t.columns)
    # a time-series table's tags may be NULL (one series): its keys match null-safely
    null_safe = not keys or bool(t.time_index)
    if (updates or deletes) and match_cols is None:
        raise SqlError("0A000", f'MERGE ... UPDATE/DELETE on "{t.name}" is not supported: it has no primary key and '
                       "array columns, so its rows cannot be told apart", hint="Add a PRIMARY KEY to the table.")
    removed = pa.concat_tables(olds + deletes) if olds or deletes else schema.empty_table()
    written = pa.concat_tables(updates + inserts) if updates or inserts else schema.empty_table()
    if updates:
        session._check_not_null(t, pa.concat_tables(updates))
    if written.num_rows and (uniques or any(c["type"] == "f" for c in t.constraints)):
        constraints.check_unique(session, t, written, info, moving=removed)
        constraints.check_references(session, t, written, info)
    if removed.num_rows:
        constraints.check_referenced(session, t, removed, info, remaining=written)
    if deletes:
        gone = pa.concat_tables(deletes).select(match_cols)
        ops.append(WriteOp(t, "delete", dedupe_last(gone, match_cols), keys=match_cols, null_safe=null_safe,
                           base_version=version))
    if updates:
        new = pa.concat_tables(updates)
        old = pa.concat_tables(olds)
        source = new
        for m in match_cols:
            source = source.append_column(f"__tg_old_{m}", old.column(m))
        if not keys:
            source = dedupe_last(source, [f"__tg_old_{m}" for m in match_cols])
        ops.append(WriteOp(t, "update", source, keys=match_cols, null_safe=null_safe, base_version=version,
                           unique_sets=uniques))
    if keys and (updates or inserts):
        _check_keys(session, t, keys, updates, inserts, removed)
    if inserts:
        data = pa.concat_tables(inserts)
        if not keys or (t.time_index and session._append_mode(t)):
            ops.append(WriteOp(t, "append", data, unique_sets=uniques))
        elif t.time_index:
            ops.append(WriteOp(t, "upsert", dedupe_last(data, keys), keys=keys))
        else:
            ops.append(WriteOp(t, "append", data, keys=keys, unique=True, unique_sets=uniques))
    return ops


def _check_keys(session: EngineSession, t: TableDef, keys: list[str], updates: list[pa.Table],
                inserts: list[pa.Table], removed: pa.Table) -> None:
    """After the MERGE no key may be held twice: among the rows it writes, and against the stored
    rows it does not update or delete (PostgreSQL's 23505)."""
    written = pa.concat_tables(updates + inserts)
    if t.time_index:
        return  # time-series tables: the last write of a key wins (an upsert), as for INSERT
    dups = duplicate_keys(written, keys)
    if dups.num_rows:
        raise session._unique_error(t, dups.slice(0, 1).to_pylist()[0])
    # keys of rows this MERGE updates or deletes are held afterwards only by what it writes
    if removed.num_rows:
        freed = removed.select(keys).append_column("__tg_freed", pa.repeat(True, removed.num_rows))
        marked = written.select(keys).join(freed, keys=keys, join_type="left outer")
        written = marked.filter(pc.is_null(marked.column("__tg_freed"))).select(keys)
    if not written.num_rows:
        return
    clash = session.store.existing_keys(t.location, keys, written)
    if clash.num_rows:
        raise session._unique_error(t, clash.slice(0, 1).to_pylist()[0])
    taken = session._keys_in_transaction(t, keys, clash, written) if session._pending else []
    if taken:
        raise session._unique_error(t, dict(zip(keys, taken[0])))
