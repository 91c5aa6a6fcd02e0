"""Schema statements: CREATE TABLE [AS], CREATE VIEW, CREATE / DROP DATABASE, DROP, ALTER TABLE,
TRUNCATE and COMMENT ON.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from catalog.store import ColumnDef, is_temp_schema, relation_word, SequenceParams, TableDef
from engine import constraints, ddl, spark as sparkmod, sparkwrite, ttl
from engine.dml import NotConstant
from engine.flows import statements as flow_statements
from engine.resolver import node_name
from engine.sequences import refuse_other_temp_schema, sequence_default
from engine.storage import coerce_array, python_value, storage_schema, storage_to_result, storage_type, WriteOp
from tidegate import dialect, sqllex
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType, pg_type_for_arrow, TEXT
from tidegate.results import CommandResult
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class SchemaStatements:
    """The schema statements of :class:`engine.executor.EngineSession` (a mixin: ``self`` is the session)."""

    def _create_table(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        ct = ddl.create_table(self._parse_one(sql))
        self.engine.refresh.check_create(ct.options, info)  # connector tables: superuser, readable path
        if ct.schema == "pg_temp" or (ct.schema is not None and ct.schema == info.temp_schema):
            ct.temp = True  # CREATE TABLE pg_temp.t: a temporary table, as in PostgreSQL
        if ct.temp:
            self._check_temp_table(ct)
            schema = self._temp_schema_for(ct.schema, info)
            if ct.on_commit in ("delete", "drop"):
                ct.options[ddl.ON_COMMIT_OPTION] = ct.on_commit
        else:
            schema = ct.schema or self._current_schema(info)
            refuse_other_temp_schema(schema)
        if ct.as_query_sql is not None:
            return self._create_table_as(ct, schema, params, info)
        exists = self._existing_target(ct, schema, info, "CREATE TABLE")
        if exists is not None:
            return exists
        for c in ct.columns:
            if c.default is not None:
                self._check_default(c, info)
        cons = constraints.resolve_new(self, ct.name, schema, ct.columns, ct.primary_key, ct.time_index,
                                       ct.constraints, None, info)
        table = self.new_table(TableDef(schema, ct.name, ct.columns, primary_key=ct.primary_key,
                                        time_index=ct.time_index, options=ct.options, comment=ct.comment,
                                        constraints=cons), info)
        if any(c.get("ref_oid") == 0 for c in cons):  # self-references: the table's own oid
            table = replace(table, constraints=[dict(c, ref_oid=table.oid) if c.get("ref_oid") == 0 else c
                                                for c in cons])
        if not ct.generated:
            self._create_storage_and_entry(table, ct.if_not_exists)
            return CommandResult("CREATE TABLE", notices=ct.notices)
        # SERIAL / identity columns: a sequence each, owned by the column, created with the table
        # (one catalog transaction outside a block; the block's changes inside one)
        sequences = []
        taken = {t.name for t in self.catalog.list_tables(schema)}
        columns = list(table.columns)
        for i, c in enumerate(columns):
            gen = ct.generated.get(c.name)
            if gen is None:
                continue
            seq_name = _choose_sequence_name(ct.name, c.name, taken)
            taken.add(seq_name)
            options = dict(gen[1], type=c.type.pg.name)
            params = replace(ddl.sequence_params(options), owned_by=(table.oid, c.name))
            sequences.append(TableDef(schema, seq_name, [], kind="sequence", options=params.to_options(),
                                      oid=self.catalog.next_oid(), owner=table.owner))
            spelled = ddl.quote_ident(seq_name) if schema == "public" else f"{ddl.quote_ident(schema)}.{ddl.quote_ident(seq_name)}"
            columns[i] = replace(c, default=f"nextval({ddl.quote_literal(spelled)}::regclass)")
        table = replace(table, columns=columns)
        with (self.engine.catalog.transaction() if self._ddl is None else nullcontext()):
            for seq in sequences:
                self.catalog.create_table(seq)
            self._create_storage_and_entry(table, ct.if_not_exists)
        return CommandResult("CREATE TABLE", notices=ct.notices)

    def _existing_target(self, ct: ddl.CreateTable, schema: str, info: SessionInfo, tag: str) -> CommandResult | None:
        """A CREATE TABLE [AS]'s checks of its target: the schema exists and the role may create in
        it (3F000, 42501); an existing relation is 42P07, or with IF NOT EXISTS the result to return."""
        if self.catalog.get_schema(schema) is None:
            raise SqlError("3F000", f'schema "{schema}" does not exist')
        if not ct.temp:
            self.catalog.roles.check_schema(info, schema, "CREATE")
        if self.catalog.get_table(schema, ct.name) is not None:
            if ct.if_not_exists:
                return CommandResult(tag, notices=[f'relation "{ct.name}" already exists, skipping'])
            raise SqlError("42P07", f'relation "{ct.name}" already exists')
        return None

    def _create_table_as(self, ct: ddl.CreateTable, schema: str, params: list[Any], info: SessionInfo) -> CommandResult:
        exists = self._existing_target(ct, schema, info, "CREATE TABLE AS")
        if exists is not None:
            return exists
        tree = ct.as_query
        self.engine.runtime.wait()

        def work() -> tuple[list[str], list[ColumnType], pa.Table | DataFrame]:
            tq, _ = self._translate(tree, params, info)
            df = self.spark.sql(tq.spark_sql)
            names = list(tq.output_names) if tq.output_names else df.columns
            known = sparkwrite.result_types(df, list(tq.output_types or []))
            # a large result whose types are stored as they are: written by Spark (engine.sparkwrite)
            if self._pending is None and len(known) == len(names) and all(
                    sparkwrite.same_storage(t, _storable_type(t)) for t in known) \
                    and sparkwrite.worth_writing_on_spark(df, info):
                return names, known, df
            table = sparkmod.collect_arrow(df)
            types = [t if t is not None else pg_type_for_arrow(f.type)
                     for t, f in zip(tq.output_types or [None] * len(names), table.schema)]
            return names, types, table

        names, types, data = self._run(work, ct.as_query_sql)
        if len(ct.as_columns) > len(names):
            raise SqlError("42601", "too many column names were specified")
        names = ct.as_columns + names[len(ct.as_columns):]
        seen: set[str] = set()
        for n in names:
            if n in seen:
                raise SqlError("42701", f'column "{n}" specified more than once')
            seen.add(n)
        for n, t in zip(names, types):
            if (t.element if t.is_array else t).pg.name == "record":
                raise SqlError("42P16", f'column "{n}" has pseudo-type {t.pg.sql_name}')
        columns = [ColumnDef(n, _storable_type(t)) for n, t in zip(names, types)]
        table = self.new_table(TableDef(schema, ct.name, columns, options=ct.options, comment=ct.comment), info)
        if not isinstance(data, pa.Table):
            return self._create_table_on_spark(table, data)
        arrays = [coerce_array(storage_to_result(data.column(i), t), c.type, c.name)
                  for i, (c, t) in enumerate(zip(columns, types))]
        rows = pa.Table.from_arrays(arrays, schema=storage_schema(columns))
        stored = self._create_storage_and_entry(table, False)
        try:
            if rows.num_rows:
                self.store.apply(WriteOp(stored, "append", rows))
        except BaseException:
            self.catalog.drop_table(schema, ct.name)
            self.store.drop(stored.location)
            raise
        return CommandResult(f"SELECT {rows.num_rows}")

    def _create_table_on_spark(self, table: TableDef, df: DataFrame) -> CommandResult:
        """CREATE TABLE AS's table made, then its rows appended by Spark; dropped again if that fails."""
        stored = self._create_storage_and_entry(table, False)
        try:
            frame = sparkwrite.storage_frame(df.toDF(*[c.name for c in stored.columns]), stored,
                                             {c.name: i for i, c in enumerate(stored.columns)}, {})
            written = self._run(lambda: sparkwrite.append(frame, stored.location or ""))
        except BaseException:
            self.catalog.drop_table(stored.schema, stored.name)
            self.store.drop(stored.location)
            raise
        return CommandResult(f"SELECT {written}")

    def _create(self, tree: exp.Create, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        kind = (tree.args.get("kind") or "").upper()
        if kind == "SCHEMA":
            node = tree.this
            name = node_name(node.args.get("db") or node.this)
            self.catalog.roles.check_database(info, "CREATE")
            created = self.catalog.create_schema(name, if_not_exists=bool(tree.args.get("exists")), owner=info.user)
            notices = [] if created else [f'schema "{name}" already exists, skipping']
            return CommandResult("CREATE SCHEMA", notices=notices)
        if kind == "VIEW":
            return self._create_view(tree, sql, info)
        raise SqlError("0A000", f"CREATE {kind or 'statement'} is not supported")

    def _database_statement(self, sql: str, info: SessionInfo) -> CommandResult:
        """GreptimeDB's ``CREATE DATABASE [IF NOT EXISTS] db``: one PostgreSQL database holds
        everything here, and a GreptimeDB database is a schema of it (``db.table`` names its
        tables, ``USE db`` sets the search path), so it creates schema ``db``. DROP DATABASE
        would drop a schema's tables under another statement's name: refused with the way to do it."""
        r = ddl.TokenReader(sql)
        verb = r.one_of("CREATE", "DROP")
        r.expect("DATABASE")
        exists_clause = r.accept("IF", "NOT", "EXISTS") if verb == "CREATE" else r.accept("IF", "EXISTS")
        name = r.ident()
        current = self.catalog.database
        if verb == "DROP":
            if name == current:
                raise SqlError("55006", "cannot drop the currently open database")
            raise SqlError("0A000", "DROP DATABASE is not supported: a GreptimeDB database is a schema here",
                           hint=f"Use DROP SCHEMA {ddl.quote_ident(name)} CASCADE to drop it and its tables.")
        if not r.at_end():
            raise SqlError("0A000", f'CREATE DATABASE options ("{r.peek().text}" ...) are not supported',
                           hint=f"A database is created as a schema of database \"{current}\": "
                                f"run CREATE DATABASE {ddl.quote_ident(name)} without options, "
                                "and give table options (such as ttl) in CREATE TABLE ... WITH (...).")
        if name == current:
            if exists_clause:
                return CommandResult("CREATE DATABASE", notices=[f'database "{name}" already exists, skipping'])
            raise SqlError("42P04", f'database "{name}" already exists')
        self.catalog.roles.check_database(info, "CREATE")
        if self.catalog.get_schema(name) is not None:
            if exists_clause:
                return CommandResult("CREATE DATABASE", notices=[f'database "{name}" already exists, skipping'])
            raise SqlError("42P04", f'database "{name}" already exists',
                           detail=f'Schema "{name}" of database "{current}" is that database.')
        self.catalog.create_schema(name, owner=info.user)
        return CommandResult("CREATE DATABASE", notices=[
            f'database "{name}" is schema "{name}" of database "{current}": name its tables '
            f'{ddl.quote_ident(name)}.table, or run USE {ddl.quote_ident(name)} to make it the default'])

    def _create_view(self, tree: exp.Create, sql: str, info: SessionInfo) -> CommandResult:
        target = tree.this
        columns_alias: list[str] = []
        if isinstance(target, exp.Schema):
            columns_alias = [node_name(e) for e in target.expressions]
            target = target.this
        schema, name = self._table_name(target)
        explicit_schema = schema
        props = tree.args.get("properties")
        temp = props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions)
        if temp or schema == "pg_temp" or (schema is not None and schema == info.temp_schema):
            schema = self._temp_schema_for(schema, info)  # CREATE TEMP VIEW: the session's own
        else:
            schema = schema or self._current_schema(info)
            refuse_other_temp_schema(schema)
        query = tree.expression
        if query is None:
            raise SqlError("42601", "CREATE VIEW needs AS query")
        if not temp:
            self.catalog.roles.check_schema(info, schema, "CREATE")
        query_sql = _original_query_text(sql) or query.sql("postgres")
        if columns_alias:
            query_sql = f"SELECT * FROM ({query_sql}) AS __tg_v({', '.join(ddl.quote_ident(c) for c in columns_alias)})"
        # Validate the query (and learn its columns) through the translator and Spark's analysis.
        self.engine.runtime.wait()

        def work() -> tuple[list[ColumnDef], bool]:
            qtree = self._parse_one(query_sql)
            # As in PostgreSQL, the view's reads are checked when it is used (as its owner), not now.
            tq, resolver = self._translate(qtree, [], replace(info, internal=True))
            df = self.spark.sql(tq.spark_sql)
            arrow = sparkmod.arrow_schema_of(df)
            names = list(tq.output_names) if tq.output_names else arrow.names
            types = list(tq.output_types) if tq.output_types else [None] * len(names)
            reads_temp = any(is_temp_schema(t.schema) for t in resolver.tables.values())
            return [ColumnDef(n, t if t is not None else pg_type_for_arrow(f.type))
                    for n, t, f in zip(names, types, arrow)], reads_temp

        view_cols, reads_temp = self._run(work, query_sql)
        notices = []
        if reads_temp and not is_temp_schema(schema):
            # PostgreSQL: a view over a temporary table is itself temporary
            if explicit_schema is not None:
                raise SqlError("42P16", "cannot create temporary relation in non-temporary schema",
                               detail="The view reads a temporary table, so it is a temporary view.")
            schema = self._temp_schema_for(None, info)
            notices.append(f'view "{name}" will be a temporary view')
        existing = self.catalog.get_table(schema, name)
        view = TableDef(schema, name, view_cols, kind="view", view_sql=query_sql,
                        owner=None if info.internal else info.user)
        if existing is not None:
            if not tree.args.get("replace"):
                raise SqlError("42P07", f'relation "{name}" already exists')
            if existing.kind != "view":
                raise SqlError("42809", f'"{name}" is not a view')
            self.catalog.roles.check_owner(info, "view", name, existing.owner, schema=existing.schema)
            self.catalog.replace_table(replace(view, oid=existing.oid, comment=existing.comment, owner=existing.owner))
        else:
            self.catalog.create_table(view)
        return CommandResult("CREATE VIEW", notices=notices)

    def _dependent_views(self, t: TableDef) -> list[TableDef]:
        out = []
        for v in self.catalog.list_tables(kind="view"):
            if v.view_sql and (v.schema, v.name) != (t.schema, t.name) and t.name in sqllex.identifiers(v.view_sql):
                out.append(v)
        return out

    def _drop(self, tree: exp.Drop, info: SessionInfo) -> CommandResult:
        kind = (tree.args.get("kind") or "").upper()
        if_exists = bool(tree.args.get("exists"))
        cascade = bool(tree.args.get("cascade"))
        notices: list[str] = []
        if kind == "SCHEMA":
            for node in _drop_targets(tree):
                name = node_name(node.args.get("db") or node.this)
                s = self.catalog.get_schema(name)
                if s is None and if_exists:
                    notices.append(f'schema "{name}" does not exist, skipping')
                    continue
                if s is not None:
                    self.catalog.roles.check_owner(info, "schema", name, s.owner)
                if s is not None and cascade:
                    self._refuse_flow_cascade_in_block(self.catalog.list_tables(name))
                dropped = self.catalog.drop_schema(name, if_exists=if_exists, cascade=cascade)
                if dropped:
                    notices.append(f"drop cascades to {len(dropped)} other object{'s' if len(dropped) != 1 else ''}")
                    notices += flow_statements.drop_dependent_flows(self, [t for t in dropped if t.kind == "table"], True)
                for t in dropped:
                    self._forget_relation(t)
                if s is not None:
                    self._after_ddl(lambda oid=s.oid: self.catalog.roles.forget_object("n", oid))
                    if self._ddl is not None:
                        self._ddl.drop_schema_dirs.append(s.oid)
                    else:
                        self.store.drop_schema_dir(s.oid)
            return CommandResult("DROP SCHEMA", notices=notices)
        if kind not in ("TABLE", "VIEW"):
            raise SqlError("0A000", f"DROP {kind} is not supported")
        targets: list[TableDef] = []
        for node in _drop_targets(tree):
            schema, name = self._table_name(node)
            try:
                t = self.catalog.resolve_table(name, schema, info.search_path)
            except SqlError:
                if if_exists:
                    notices.append(f'{kind.lower()} "{name}" does not exist, skipping')
                    continue
                raise SqlError("42P01", f'{kind.lower()} "{name}" does not exist') from None
            if (t.kind == "view") != (kind == "VIEW") or t.kind == "sequence":
                word = relation_word(t)
                raise SqlError("42809", f'"{t.name}" is not a {kind.lower()}',
                               hint=f"Use DROP {word.upper()} to remove a {word}.")
            self.catalog.roles.check_owner(info, kind.lower(), t.name, t.owner, schema=t.schema)
            targets.append(t)
        dropping = {(t.schema, t.name) for t in targets}
        for t in list(targets):
            deps = [v for v in self._dependent_views(t) if (v.schema, v.name) not in dropping]
            if deps and not cascade:
                raise SqlError("2BP01", f"cannot drop {'view' if t.kind == 'view' else 'table'} {t.name} because other objects depend on it",
                               detail="\n".join(f"view {v.name} depends on {'view' if t.kind == 'view' else 'table'} {t.name}" for v in deps),
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            for v in deps:
                notices.append(f"drop cascades to view {v.name}")
                dropping.add((v.schema, v.name))
                targets.append(v)
        # Flows reading a dropped table: 2BP01, or dropped with it under CASCADE.
        if cascade:
            self._refuse_flow_cascade_in_block(targets)
        notices += flow_statements.drop_dependent_flows(self, [t for t in targets if t.kind == "table"], cascade)
        notices += constraints.drop_dependents(self, [t for t in targets if t.kind == "table"], cascade)
        for t in targets:
            self._lock_for_ddl(t)
        for t in targets:
            if self.catalog.get_table(t.schema, t.name) is None:
                continue
            self.catalog.drop_table(t.schema, t.name)
            self._forget_relation(t)
        self._drop_owned_sequences({t.oid for t in targets if t.kind == "table"})
        return CommandResult(f"DROP {kind}", notices=notices)

    def _after_ddl(self, fn: Any) -> None:
        """Run ``fn`` now, or after the block commits."""
        if self._ddl is not None:
            self._ddl.after_commit.append(fn)
        else:
            fn()

    def _forget_relation(self, t: TableDef) -> None:
        """A dropped relation's grants and storage: removed now, or once the block commits."""
        self._after_ddl(lambda: self.engine.catalog.roles.forget_object("r", t.oid))
        if t.kind == "sequence":
            self._after_ddl(lambda: self.engine.catalog.sequences.forget(t.oid))
        if t.kind != "table":
            return
        self._forget_view(t.location)
        if self._ddl is not None:
            self._ddl.drop_locations.append(t.location or "")
        else:
            self.store.drop(t.location)

    def _refuse_flow_cascade_in_block(self, tables: list[TableDef]) -> None:
        """Flows are not transactional: dropping them with a table waits for autocommit."""
        if self.in_block and flow_statements.dependent_flows(self, [t for t in tables if t.kind == "table"]):
            raise SqlError("25001", "DROP ... CASCADE of a table that flows read cannot run inside a transaction block",
                           hint="Run it outside a transaction block, or DROP FLOW first.")

    def _alter_table_options(self, sql: str, info: SessionInfo) -> CommandResult:
        """``ALTER TABLE t SET (ttl = '7d')`` / ``RESET (ttl)``, and GreptimeDB's ``SET 'ttl' = '7d'``
        / ``UNSET 'ttl'``. ttl is the one table option that may change after CREATE TABLE."""
        r = ddl.TokenReader(sql)
        r.expect("ALTER", "TABLE")
        missing_ok = r.accept("IF", "EXISTS")
        r.accept("ONLY")
        parts = r.qualified()
        verb = r.one_of("SET", "RESET", "UNSET")
        wrapped = r.peek() is not None and r.peek().text == "("
        if wrapped:
            r.expect_text("(")
        changes: dict[str, str | None] = {}
        while True:
            tok = r.peek()
            key = (r.string() if tok is not None and tok.kind == "str" else r.ident()).lower()
            value = None
            if verb == "SET":
                r.expect_text("=")
                tok = r.peek()
                if tok is None or tok.kind not in ("str", "word", "num"):
                    raise r.error()
                value = r.string() if tok.kind == "str" else tok.text
                if tok.kind != "str":
                    r.i += 1
            changes[key] = value
            if not (r.peek() is not None and r.peek().text == ","):
                break
            r.expect_text(",")
        if wrapped:
            r.expect_text(")")
        r.done()
        schema, name = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[-1])
        try:
            t = self.catalog.resolve_table(name, schema, info.search_path)
        except SqlError:
            if missing_ok:
                return CommandResult("ALTER TABLE", notices=[f'relation "{name}" does not exist, skipping'])
            raise
        if t.kind != "table":
            raise SqlError("42809", f'"{t.name}" is not a table')
        for key in changes:
            if key == ttl.OPTION:
                continue
            if key in _PG_STORAGE_PARAMETERS or key.startswith(("autovacuum_", "toast.", "vacuum_")):
                raise SqlError("0A000", f'storage parameter "{key}" is not supported: tables are Delta Lake tables',
                               hint="Leave the parameter out; ttl is the table option ALTER TABLE SET can change.")
            raise SqlError("22023", f'unrecognized parameter "{key}"',
                           hint="ttl is the table option ALTER TABLE SET can change.")
        self.catalog.roles.check_owner(info, t.kind, t.name, t.owner, schema=t.schema)
        self._lock_for_ddl(t)
        options = dict(t.options or {})
        for key, value in changes.items():
            if value is None:
                options.pop(key, None)
            else:
                options[key] = value
        ttl.validate(options, t.time_index, t.name)
        self.catalog.replace_table(replace(t, options=options))
        return CommandResult("ALTER TABLE")

    def _alter(self, tree: exp.Alter, info: SessionInfo) -> CommandResult:
        kind = (tree.args.get("kind") or "TABLE").upper()
        if kind not in ("TABLE", "VIEW"):
            raise SqlError("0A000", f"ALTER {tree.args.get('kind')} is not supported")
        actions = tree.args.get("actions") or []
        renaming = bool(actions) and all(isinstance(a, exp.AlterRename) for a in actions)
        try:
            # As in PostgreSQL, ALTER TABLE ... RENAME TO also renames a view.
            t = self._resolve_target(tree.this, info, allow_view=kind == "VIEW" or renaming)
        except SqlError:
            if tree.args.get("exists"):
                return CommandResult(f"ALTER {kind}", notices=[f'relation "{tree.this.name}" does not exist, skipping'])
            raise
        if kind == "VIEW" and t.kind != "view":
            raise SqlError("42809", f'"{t.name}" is not a view', hint="Use ALTER TABLE instead.")
        if kind == "VIEW" and not renaming:
            raise SqlError("0A000", "ALTER VIEW supports RENAME TO only",
                           hint="Use CREATE OR REPLACE VIEW to change the query.")
        self.catalog.roles.check_owner(info, t.kind, t.name, t.owner, schema=t.schema)
        self._lock_for_ddl(t)
        if any(op.kind != "add_columns" for op in self._pending_ops(t)) and any(map(_reads_rows, actions)):
            # these read or rewrite the stored rows, which would miss the block's pending ones;
            # catalog-only changes (renames, defaults, comments, a new nullable column) are fine
            raise SqlError("0A000", f'ALTER TABLE "{t.name}" that fills a default, checks NOT NULL, drops or renames '
                                    "a column, after writing the table in the same transaction block, is not supported",
                           hint="COMMIT the writes first, or run the ALTER before them.")
        for action in actions:
            t = self._alter_action(t, action, info)
        return CommandResult(f"ALTER {kind}")

    def _alter_action(self, t: TableDef, action: exp.Expression, info: SessionInfo) -> TableDef:
        if isinstance(action, exp.ColumnDef):
            holder = ddl.CreateTable(t.schema, t.name, False)
            col = ddl._column_def(action, holder)
            if holder.primary_key:
                raise SqlError("0A000", "ALTER TABLE ADD COLUMN ... PRIMARY KEY is not supported")
            if t.column(col.name) is not None:
                if action.args.get("exists"):
                    return t
                raise SqlError("42701", f'column "{col.name}" of relation "{t.name}" already exists')
            if col.default is not None:
                self._check_default(col, info)
            if sequence_default(col.default) is not None:
                raise SqlError("0A000", "ALTER TABLE ADD COLUMN with a nextval() default is not supported",
                               hint="Add the column without the default, fill it with UPDATE, then ALTER COLUMN ... SET DEFAULT.")
            fill = None
            if col.default is not None:
                fill = self._eval_default_text(col.default, {})
            has_rows = self._row_count(t) > 0
            if col.not_null and fill is None and has_rows:
                raise SqlError("23502", f'column "{col.name}" of relation "{t.name}" contains null values')
            new = replace(t, columns=_placed(t, col, action.args.get("position")))
            if fill is not None and has_rows:
                self._rewrite(t, new, {col.name: fill})
            else:
                self._write(WriteOp(new, "add_columns"))
            return self.catalog.replace_table(new)
        if isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "COLUMN":
            new = t
            for node in _drop_targets(action):
                name = node_name(node.this if isinstance(node, exp.Column) else node)
                if new.column(name) is None:
                    if action.args.get("exists"):
                        continue
                    raise SqlError("42703", f'column "{name}" of relation "{t.name}" does not exist')
                if name in t.primary_key or name == t.time_index:
                    raise SqlError("0A000", f'cannot drop column "{name}": it is part of the primary key or the time index')
                if len(new.columns) == 1:
                    raise SqlError("0A000", "a table must keep at least one column")
                new = constraints.without_column(self, new, name, bool(action.args.get("cascade")))
                new = replace(new, columns=[c for c in new.columns if c.name != name])
            if new is not t:
                self._rewrite(t, new, {})
                stored = self.catalog.replace_table(new)
                gone = {c.name for c in t.columns} - {c.name for c in new.columns}
                for seq in self.catalog.list_tables(kind="sequence"):  # owned sequences go with their column
                    owner = SequenceParams.of(seq).owned_by
                    if owner is not None and owner[0] == t.oid and owner[1] in gone:
                        self.catalog.drop_table(seq.schema, seq.name)
                        self._forget_relation(seq)
                return stored
            return t
        if isinstance(action, exp.RenameColumn):
            old = node_name(action.this.this if isinstance(action.this, exp.Column) else action.this)
            to = node_name(action.args["to"].this if isinstance(action.args["to"], exp.Column) else action.args["to"])
            if t.column(old) is None:
                raise SqlError("42703", f'column "{old}" does not exist')
            if t.column(to) is not None:
                raise SqlError("42701", f'column "{to}" of relation "{t.name}" already exists')
            cols = [replace(c, name=to) if c.name == old else c for c in t.columns]
            new = replace(t, columns=cols, primary_key=[to if k == old else k for k in t.primary_key],
                          time_index=to if t.time_index == old else t.time_index)
            new = constraints.renamed_column(self, new, old, to)
            self._rewrite(t, new, {}, renames={to: old})
            stored = self.catalog.replace_table(new)
            for seq in self.catalog.list_tables(kind="sequence"):  # ownership follows the column
                p = SequenceParams.of(seq)
                if p.owned_by == (t.oid, old):
                    self.catalog.replace_table(replace(seq, options={**seq.options, **replace(p, owned_by=(t.oid, to)).to_options()}))
            return stored
        if isinstance(action, exp.AlterRename):
            new_name = node_name(action.this.this)
            if self.catalog.get_table(t.schema, new_name) is not None:
                raise SqlError("42P07", f'relation "{new_name}" already exists')
            # Storage is addressed by oid, so a rename touches only the catalog.
            renamed = self.catalog.rename_table(t.schema, t.name, new_name)
            self._forget_view(t.location)
            return renamed
        if isinstance(action, exp.AlterColumn):
            return self._alter_column(t, action)
        if isinstance(action, exp.AddConstraint):
            return constraints.add_constraints(self, t, action, info)
        if isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() == "CONSTRAINT":
            return constraints.drop_constraints(self, t, action)
        raise SqlError("0A000", f"ALTER TABLE action {action.sql('postgres')} is not supported")

    def _alter_column(self, t: TableDef, action: exp.AlterColumn) -> TableDef:
        """ALTER COLUMN SET/DROP DEFAULT and SET/DROP NOT NULL (metadata; SET NOT NULL checks rows)."""
        name = node_name(action.this)
        c = t.column(name)
        if c is None:
            raise SqlError("42703", f'column "{name}" of relation "{t.name}" does not exist')
        if action.args.get("dtype") is not None:
            raise SqlError("0A000", "ALTER COLUMN ... TYPE is not supported")
        allow_null = action.args.get("allow_null")
        if allow_null is not None:
            if allow_null:
                if name == t.time_index or (t.time_index is None and name in t.primary_key):
                    raise SqlError("42P16", f'column "{name}" is in a primary key')
                new_col = replace(c, not_null=False)
            else:
                values = self.store.read_arrow(t.location, columns=[name]).column(0)
                if values.null_count:
                    raise SqlError("23502", f'column "{name}" of relation "{t.name}" contains null values')
                new_col = replace(c, not_null=True)
        elif action.args.get("default") is not None:
            new_col = replace(c, default=ddl.default_text(action.args["default"]))
            self._check_default(new_col)
        elif action.args.get("drop"):
            new_col = replace(c, default=None)
        else:
            raise SqlError("0A000", f"ALTER TABLE action {action.sql('postgres')} is not supported")
        return self.catalog.replace_table(replace(t, columns=[new_col if x.name == name else x for x in t.columns]))

    def _row_count(self, t: TableDef) -> int:
        return self.store.read_arrow(t.location, columns=[t.columns[0].name]).num_rows

    def _rewrite(self, old: TableDef, new: TableDef, fills: dict[str, Any], renames: dict[str, str] | None = None) -> None:
        """Rewrite the table's content for a new column list in one overwrite commit."""
        renames = renames or {}
        base = self.store.version(old.location)
        data = self.store.read_arrow(old.location)
        arrays = []
        for c in new.columns:
            src = renames.get(c.name, c.name)
            if src in data.column_names and old.column(src) is not None:
                arrays.append(data.column(src))
            else:
                value = python_value(fills.get(c.name), c.type, c.name)
                arrays.append(pa.array([value] * data.num_rows, type=storage_type(c.type)))
        table = pa.Table.from_arrays(arrays, schema=storage_schema(new.columns))
        self._write(WriteOp(replace(new, location=old.location), "overwrite", table, base_version=base, schema_change=True))

    def _truncate(self, tree: exp.TruncateTable, info: SessionInfo) -> CommandResult:
        tables = [self._resolve_target(node, info) for node in tree.expressions]
        for t in tables:
            self.catalog.roles.check_table(info, t, "TRUNCATE")
        constraints.check_truncate(self, tables)
        for t in tables:
            with self._rewriting(t):
                base = self.store.version(t.location)
                self._write(WriteOp(t, "overwrite", storage_schema(t.columns).empty_table(), base_version=base))
        if str(tree.args.get("identity") or "").upper() == "RESTART":  # the owned sequences: when it commits
            oids = {t.oid for t in tables}
            for seq in self.catalog.list_tables(kind="sequence"):
                p = SequenceParams.of(seq)
                if p.owned_by is not None and p.owned_by[0] in oids:
                    self._after_ddl(lambda seq=seq, p=p: self.engine.catalog.sequences.restart(seq, p.start))
        return CommandResult("TRUNCATE TABLE")

    def _comment(self, sql: str, info: SessionInfo) -> CommandResult:
        """COMMENT ON {TABLE|VIEW|COLUMN|SCHEMA} name IS 'text' | NULL (sqlglot cannot read IS NULL)."""
        toks = sqllex.scan(sql)
        words = [t.upper for t in toks]
        if len(toks) < 6 or words[1] != "ON":
            raise SqlError("42601", "syntax error in COMMENT", position=1)
        kind = words[2]
        try:
            is_at = words.index("IS", 3)
        except ValueError:
            raise SqlError("42601", "syntax error at end of input", position=len(sql)) from None
        name_toks = toks[3:is_at]
        parts = [ddl.ident_value(t) for t in name_toks if t.kind in ("word", "qid")]
        if len(name_toks) != 2 * len(parts) - 1 or not parts:
            raise SqlError("42601", f'syntax error at or near "{toks[3].text}"', position=toks[3].start + 1)
        value_toks = [t for t in toks[is_at + 1:] if t.text != ";"]
        if len(value_toks) == 1 and value_toks[0].upper == "NULL":
            comment = None
        elif len(value_toks) == 1 and value_toks[0].kind == "str":
            comment = value_toks[0].value
        else:
            raise SqlError("42601", "COMMENT needs a string literal or NULL", position=toks[is_at].start + 1)
        if kind == "SCHEMA":
            s = self.catalog.get_schema(parts[-1])
            if s is not None:
                self.catalog.roles.check_owner(info, "schema", s.name, s.owner)
            self.catalog.set_schema_comment(parts[-1], comment)
        elif kind in ("TABLE", "VIEW"):
            if len(parts) > 2:
                raise SqlError("0A000", "cross-database references are not implemented")
            t = self.catalog.resolve_table(parts[-1], parts[-2] if len(parts) == 2 else None, info.search_path)
            if (t.kind == "view") != (kind == "VIEW"):
                raise SqlError("42809", f'"{t.name}" is not a {kind.lower()}')
            self.catalog.roles.check_owner(info, kind.lower(), t.name, t.owner, schema=t.schema)
            self.catalog.replace_table(replace(t, comment=comment))
        elif kind == "COLUMN":
            if len(parts) < 2:
                raise SqlError("42601", "column name must be qualified")
            col_name, table_name = parts[-1], parts[-2]
            schema_name = parts[-3] if len(parts) >= 3 else None
            t = self.catalog.resolve_table(table_name, schema_name, info.search_path)
            self.catalog.roles.check_owner(info, "view" if t.kind == "view" else "table", t.name, t.owner,
                                           schema=t.schema)
            if t.column(col_name) is None:
                raise SqlError("42703", f'column "{col_name}" of relation "{t.name}" does not exist')
            cols = [replace(c, comment=comment) if c.name == col_name else c for c in t.columns]
            self.catalog.replace_table(replace(t, columns=cols))
        else:
            raise SqlError("0A000", f"COMMENT ON {kind} is not supported")
        return CommandResult("COMMENT")

    # -- new tables --------------------------------------------------------------------------

    def new_table(self, table: TableDef, info: SessionInfo) -> TableDef:
        """``table`` with its oid, owner and storage location: ``<warehouse>/<schema oid>/<oid>``,
        derived from ids so that no name a client chooses can address a path."""
        schema = self.catalog.get_schema(table.schema)
        if schema is None:
            raise SqlError("3F000", f'schema "{table.schema}" does not exist')
        oid = self.catalog.next_oid()
        owner = None if info.internal else info.user
        return replace(table, oid=oid, owner=owner, location=self.store.location_for(schema.oid, oid))

    def _create_storage_and_entry(self, table: TableDef, if_not_exists: bool) -> TableDef:
        if self._ddl is not None:  # ROLLBACK, or a crash before COMMIT, removes it
            self._ddl.created.append((table.location or "", self.engine.journal.note_created(table.location or "")))
        self.store.create(table)
        try:
            stored = self.catalog.create_table(table, if_not_exists=if_not_exists)
        except BaseException:
            self.store.drop(table.location)
            raise
        return stored or table

    def _check_default(self, c: ColumnDef, info: SessionInfo | None = None) -> None:
        if sequence_default(c.default) is not None:
            self._default_sequence(c, info or SessionInfo())  # 42P01 / 42809 now, as 'name'::regclass does
            return
        try:
            value = self._eval_default_text(c.default, {})
        except NotConstant:
            # evaluated by Spark at INSERT: only functions clients may call (42883 now, not then)
            from engine.translate import check_functions

            for tree in dialect.parse(f"SELECT {c.default}"):
                check_functions(tree)
            return
        python_value(value, c.type, c.name)

    @staticmethod
    def _check_temp_table(ct: ddl.CreateTable) -> None:
        """What a temporary table cannot have: connector / refreshable tables read other storage."""
        if ct.options.get("connector") or ct.options.get("refresh_mode"):
            raise SqlError("0A000", "a temporary table cannot be a connector or refreshable table",
                           hint="Create it as an ordinary table, or leave TEMP out.")


_PG_STORAGE_PARAMETERS = {"fillfactor", "parallel_workers", "user_catalog_table", "log_autovacuum_min_duration",
                          "toast_tuple_target"}


def _reads_rows(action: exp.Expression) -> bool:
    """Whether an ALTER TABLE action reads or rewrites the table's rows (fills a DEFAULT,
    checks NOT NULL, drops or renames a column)."""
    if isinstance(action, exp.ColumnDef):
        return any(isinstance(c.kind, (exp.DefaultColumnConstraint, exp.NotNullColumnConstraint))
                   for c in action.args.get("constraints") or [])
    if isinstance(action, exp.AlterColumn):
        return action.args.get("allow_null") is False
    return not isinstance(action, exp.AlterRename)


def _drop_targets(tree: exp.Drop) -> list[exp.Expression]:
    return list(tree.args.get("tables") or []) or list(tree.expressions)


def _storable_type(t: ColumnType) -> ColumnType:
    """A result column type a CREATE TABLE AS column can have."""
    base = t.element if t.is_array else t
    if base.pg.name in ("unknown", "record", "void", "name", "char"):
        return ColumnType(TEXT).array_of() if t.is_array else ColumnType(TEXT)
    return t


def _placed(t: TableDef, col: ColumnDef, position: exp.ColumnPosition | None) -> list[ColumnDef]:
    """``t``'s columns with ``col`` added at GreptimeDB's ``FIRST`` / ``AFTER c`` (default: last).
    Only the catalog's order changes: storage is read and written by column name."""
    if position is None:
        return t.columns + [col]
    if position.args.get("position") == "FIRST":
        return [col] + t.columns
    after = node_name(position.this.this if isinstance(position.this, exp.Column) else position.this)
    at = next((i for i, c in enumerate(t.columns) if c.name == after), None)
    if at is None:
        raise SqlError("42703", f'column "{after}" of relation "{t.name}" does not exist')
    return t.columns[:at + 1] + [col] + t.columns[at + 1:]


def _choose_sequence_name(table: str, column: str, taken: set[str]) -> str:
    """PostgreSQL's <table>_<column>_seq, cut to 63 bytes, numbered when taken."""
    def fit(t: str, c: str, suffix: str) -> str:
        while len(f"{t}_{c}_{suffix}".encode()) > 63:
            if len(t.encode()) >= len(c.encode()):
                t = t[:-1]
            else:
                c = c[:-1]
        return f"{t}_{c}_{suffix}"

    name = fit(table, column, "seq")
    k = 0
    while name in taken:
        k += 1
        name = fit(table, column, f"seq{k}")
    return name


def _original_query_text(sql: str) -> str | None:
    """The text after the first top-level AS of a CREATE VIEW statement (kept as written)."""
    toks = sqllex.scan(sql)
    depth = 0
    for i, tok in enumerate(toks):
        if tok.text == "(":
            depth += 1
        elif tok.text == ")":
            depth -= 1
        elif depth == 0 and tok.upper == "AS" and i + 1 < len(toks):
            return sql[toks[i + 1].start:].strip().rstrip(";").strip()
    return None
