"""Queries: SELECT / VALUES / TABLE, EXPLAIN, SHOW, and Describe (parameter and result types).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from catalog.store import TableDef
from engine import ddl, interactive, scalar, spark as sparkmod
from engine.dml import fill_params, target_columns
from engine.flows import statements as flow_statements
from engine.resolver import StatementResolver, node_name, param_index
from engine.storage import convert_batches
from engine.translate import TypedNull, translate_query, use_session_zone
from tidegate import dialect, pgvalues, sqllex, statements
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType, pg_type_for_arrow, TEXT
from tidegate.results import ResultField, RowStream
from tidegate.session import SessionInfo
from tidegate.sqllex import Token
from tidegate.statements import Kind

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class QueryStatements:
    """The queries statements of :class:`engine.executor.EngineSession` (a mixin: ``self`` is the session)."""

    def _query(self, tree: exp.Expression, sql: str, params: list[Any], info: SessionInfo) -> RowStream:
        if tree.args.get("locks"):
            self._lock_rows(tree, info)
        const = scalar.shape(tree, sql) if interactive.enabled(info) else None
        if const is not None:  # no table: computed in the gateway
            stream = scalar.run(const, params)
            if stream is not None:
                return stream
        lookup = interactive.shape(self, tree, info, sql)
        plan = interactive.bind(self, lookup, params) if lookup is not None else None
        if plan is not None:  # a small read of one table: its files, in the gateway
            return interactive.run(plan)
        self.engine.runtime.wait()

        def work() -> RowStream:
            described = None if params else self._take_analyzed(sql, info)
            if described is not None:
                tq, df = described.tq, described.df
            else:
                tq, df = self._planned(tree, sql, params, info)
            return self._rowstream(df, tq.output_names, tq.output_types, tq.spark_sql, small=_small_result(tree),
                                   operands=tq.operands)

        return self._run(work, sql)

    def _planned(self, tree: exp.Expression, sql: str, params: list[Any], info: SessionInfo) -> tuple[Any, DataFrame]:
        """The query's translation and frame: the session's kept plan with ``params`` bound when
        nothing it read changed (engine.plans), else translated now (and kept on its second run)."""
        key = self._plans.key(self, sql, tree, params, info)
        if key is not None:
            resolver = StatementResolver(self, info)
            with self.store.gate.reading():
                plan = self._plans.get(self, key, resolver)
            if plan is not None:
                use_session_zone(resolver)
                tq = plan.query(params)
                self._integer_ops.append(tq.integer_ops)
                return tq, self.spark.sql(tq.spark_sql)
        clock = pgvalues.clock_reads()
        tq, resolver = self._translate(tree, params, info, client=True)
        # analysed now, before learning translates again: a newer commit meanwhile replaces the
        # table's view, and this run must read the version it was translated for
        df = self.spark.sql(tq.spark_sql)
        if key is not None:
            def again(t: exp.Expression, values: list[Any]) -> Any:
                with self.store.gate.reading():
                    return translate_query(t, resolver, values, exact_numeric=True)

            self._plans.learn(self, key, tree, params, tq, resolver, again, pgvalues.clock_reads() != clock)
        return tq, df

    def computes_in_gateway(self, sql: str, params: Sequence[Any] | None, info: SessionInfo) -> bool:
        """Whether ``sql`` is a relation-free query :mod:`engine.scalar` evaluates (executed with
        ``params``, or described when None): microseconds, no lock, no I/O (the gateway may run
        it on its event loop)."""
        if not interactive.enabled(info):
            return False
        const = scalar.cached(sql)
        if const is False:
            if statements.classify(sql).kind is not Kind.SQL:
                return False
            try:
                const = scalar.shape(self._parse_one(sql), sql)
            except (SqlError, RecursionError):  # executed in a worker, which reports it
                return False
        return const is not None and (params is None or scalar.accepts(const, list(params)))

    def answer_now(self, sql: str, params: Sequence[Any], info: SessionInfo) -> RowStream | None:
        """A read of one table's files this session ran before, answered now if that needs no wait
        and no file read (:func:`engine.interactive.answer_now`): the gateway calls it on its event
        loop. None: :meth:`execute` it."""
        if self.temp_schema is not None or self._pending is not None:
            return None
        self._interrupt.clear()
        with pgvalues.use_session_zone(info.timezone):
            return interactive.answer_now(self, sql, list(params), info)

    def _lock_rows(self, tree: exp.Expression, info: SessionInfo) -> None:
        """SELECT ... FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE: the write lock of each table
        it locks (those after OF, else every table it reads), taken before it reads and held until
        the block ends (outside a block: released at once, after waiting for other holders), as
        UPDATE takes it. Table granularity: rows of a locked table that the query does not return
        are locked too. NOWAIT fails with 55P03 when another transaction holds one."""
        locks = tree.args.get("locks") or []
        if any(lock.args.get("wait") is False for lock in locks):
            raise SqlError("0A000", "SELECT ... SKIP LOCKED is not supported (locks here are per table)",
                           hint="Use NOWAIT, or plain FOR UPDATE to wait.")
        nowait = any(lock.args.get("wait") is True for lock in locks)
        ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        nodes: list[exp.Table] = []
        for lock in locks:
            named = {node_name(e.this if isinstance(e, exp.Table) else e) for e in lock.expressions or []}
            for node in tree.find_all(exp.Table):
                if node.name in ctes or not node.name:
                    continue
                if not named or node.name in named or node.alias_or_name in named:
                    nodes.append(node)
        try:
            for node in nodes:
                t = self._resolve_target(node, info, allow_view=True)
                if t.kind == "table" and t.location:
                    self.catalog.roles.check_table(info, t, "UPDATE")
                    self.engine.locks.acquire(self.id, t.location, t.name, self._interrupt.is_set, nowait=nowait)
        finally:
            if not self.in_block:
                self.engine.locks.release_all(self.id)

    def _analysis_context(self, info: SessionInfo) -> tuple:
        pending = self._pending
        return (self.catalog.version, info.user, tuple(sorted(info.settings.items())),
                None if pending is None else (id(pending), len(pending)))

    def _take_analyzed(self, sql: str, info: SessionInfo) -> Analyzed | None:
        """The last described query's analysis if ``sql`` is that query and nothing it read changed."""
        described, self._analyzed = self._analyzed, None
        if described is None or described.sql != sql or described.context != self._analysis_context(info):
            return None
        try:
            if any(self.store.snapshot(loc).version != v for loc, v in described.versions.items()):
                return None
        except Exception:  # noqa: BLE001 - a table gone since: analyze again (and fail properly)
            return None
        return described

    def _rowstream(self, df: DataFrame, names: Sequence[str] | None, types: Sequence[ColumnType | None] | None,
                   spark_sql: str | None, command: str = "SELECT", small: bool = False,
                   operands: dict[int, tuple[int, ...]] | None = None) -> RowStream:
        """Run ``df`` and wrap its result; anything but a bounded result streams as partitions finish.

        ``small``: the query's shape (aggregate without GROUP BY, LIMIT) bounds its result, so
        it is collected in one job without asking the optimizer.
        """
        arrow_schema = sparkmod.arrow_schema_of(df)
        names = list(names) if names else [f.name for f in arrow_schema]
        types = list(types) if types else [None] * len(names)
        fields = [ResultField(n, _reconcile(t, f.type)) for n, t, f in zip(names, types, arrow_schema)]
        strategy = sparkmod.COLLECT if small else sparkmod.result_strategy(df)
        if strategy == sparkmod.COLLECT:
            table = sparkmod.collect_arrow(df)
            batches: Iterator[pa.RecordBatch] = iter(table.to_batches())
            return RowStream(fields, convert_batches(batches, fields, operands), command=command)
        # The job outlives this call: every later fetch runs under the same tag, so cancel()
        # reaches it whichever fetch is in progress.
        tag = self._new_tag()
        raw = sparkmod.collect_arrow_streamed(df) if strategy == sparkmod.COLLECT_STREAMED else sparkmod.stream_arrow(df)
        session = self
        exhausted = False

        def guarded() -> Iterator[pa.RecordBatch]:
            nonlocal exhausted
            it = iter(raw)
            while True:
                batch = session._run(lambda: next(it, None), spark_sql, tag)
                if batch is None:
                    exhausted = True
                    return
                yield batch

        def close() -> None:
            try:
                raw.close()
            except Exception:  # noqa: BLE001 - already finished
                pass
            if not exhausted:  # closed early: the rest of the job is not wanted
                session._cancel_tag(tag)

        return RowStream(fields, convert_batches(guarded(), fields, operands), close=close, command=command)

    def _explain(self, sql: str, params: list[Any], info: SessionInfo) -> RowStream:
        """EXPLAIN [(options)] query: Spark's plan, one line per row in column ``QUERY PLAN``."""
        tree = self._parse_one(sql)
        query = _explained_select(tree)
        const = scalar.shape(query) if query is not None and interactive.enabled(info) else None
        if const is not None and scalar.run(const, params) is not None:
            table = pa.table({"QUERY PLAN": pa.array(scalar.explain(const), pa.string())})
            return RowStream.from_table([ResultField("QUERY PLAN", ColumnType(TEXT))], table, command="EXPLAIN")
        lookup = interactive.shape(self, query, info) if query is not None else None
        plan = interactive.bind(self, lookup, params) if lookup is not None else None
        if plan is not None:
            table = pa.table({"QUERY PLAN": pa.array(interactive.explain(plan), pa.string())})
            return RowStream.from_table([ResultField("QUERY PLAN", ColumnType(TEXT))], table, command="EXPLAIN")
        self.engine.runtime.wait()

        def work() -> RowStream:
            tq, _ = self._translate(tree, params, info)
            rows = sparkmod.collect_arrow(self.spark.sql(tq.spark_sql))
            text = "\n".join(str(v) for v in rows.column(0).to_pylist()) if rows.num_columns else ""
            if text.startswith("Error occurred during query planning"):
                # Spark prints a planning failure as the plan; PostgreSQL's EXPLAIN fails with it
                # (constant folding: EXPLAIN SELECT 9223372036854775807::int8 + 1 is 22003).
                # Planning the query again raises it, mapped as the query's own error.
                inner = tq.spark_sql.split(" ", 2)[2]  # EXPLAIN <mode> <query>
                self.spark.sql(inner)._jdf.queryExecution().executedPlan()
                raise SqlError("XX000", text.split("\n", 2)[1].strip() if "\n" in text else text)
            lines = [line for line in text.rstrip("\n").split("\n")]
            table = pa.table({"QUERY PLAN": pa.array(lines, pa.string())})
            return RowStream.from_table([ResultField("QUERY PLAN", ColumnType(TEXT))], table, command="EXPLAIN")

        return self._run(work, sql)

    # -- SHOW --------------------------------------------------------------------------------

    def _show(self, sql: str, toks: list[Token], info: SessionInfo) -> RowStream:
        words = [t.upper for t in toks]
        full = len(words) > 1 and words[1] == "FULL"
        i = 2 if full else 1
        if i < len(words) and words[i] == "TABLES":
            schema = self._current_schema(info)
            rest = toks[i + 1:]
            pattern = None
            if len(rest) >= 2 and rest[0].upper in ("FROM", "IN"):
                schema = ddl.ident_value(rest[1])
                rest = rest[2:]
            if len(rest) >= 2 and rest[0].upper == "LIKE" and rest[1].kind == "str":
                pattern = rest[1].value
            if self.catalog.get_schema(schema) is None:
                raise SqlError("3F000", f'schema "{schema}" does not exist')
            tables = sorted((t for t in self.catalog.list_tables(schema) if t.kind != "sequence"), key=lambda t: t.name)
            if pattern is not None:
                rx = pgvalues.like_regex(pattern)
                tables = [t for t in tables if rx.match(t.name)]
            names = pa.array([t.name for t in tables], pa.string())
            if full:
                kinds = pa.array(["VIEW" if t.kind == "view" else "BASE TABLE" for t in tables], pa.string())
                return RowStream.from_table([ResultField("Tables", ColumnType(TEXT)), ResultField("Table_type", ColumnType(TEXT))],
                                            pa.table({"Tables": names, "Table_type": kinds}), command="SHOW")
            return RowStream.from_table([ResultField("Tables", ColumnType(TEXT))], pa.table({"Tables": names}), command="SHOW")
        if words[1:] == ["GATEWAYS"]:  # INFORMATION_SCHEMA.GATEWAYS: the leader and its followers
            from catalog.active import gateway_rows

            table = gateway_rows(self.catalog)
            fields = [ResultField(f.name, pg_type_for_arrow(f.type)) for f in table.schema]
            return RowStream.from_table(fields, table, command="SHOW")
        if i + 1 < len(words) and words[1] == "CREATE" and words[2] in ("TABLE", "VIEW"):
            rest = toks[3:]
            if not rest:
                raise SqlError("42601", "syntax error at end of input")
            parts = [ddl.ident_value(rest[0])]
            j = 1
            while j + 1 < len(rest) and rest[j].text == ".":
                parts.append(ddl.ident_value(rest[j + 1]))
                j += 2
            t = self.catalog.resolve_table(parts[-1], parts[-2] if len(parts) > 1 else None, info.search_path)
            if t.kind == "view":
                text = f"CREATE VIEW {ddl.quote_ident(t.name)} AS {t.view_sql}"
                return RowStream.from_table([ResultField("View", ColumnType(TEXT)), ResultField("Create View", ColumnType(TEXT))],
                                            pa.table({"View": [t.name], "Create View": [text]}), command="SHOW")
            text = ddl.render_create_table(t)
            return RowStream.from_table([ResultField("Table", ColumnType(TEXT)), ResultField("Create Table", ColumnType(TEXT))],
                                        pa.table({"Table": [t.name], "Create Table": [text]}), command="SHOW")
        raise SqlError("0A000", f"{' '.join(w for w in words[:3])} is not supported")

    def describe(self, sql: str, param_types: Sequence[ColumnType | None], info: SessionInfo | None = None,
                 ) -> tuple[list[ColumnType], list[ResultField] | None]:
        info = info or SessionInfo()
        self._interrupt.clear()  # a cancel sent before this began is not for it
        statement = statements.classify(sql)
        first, kind = statement.command, statement.kind
        if kind in (Kind.FLOW, Kind.JOB, Kind.REFRESH):  # tidegate's statements, by their tree's type
            node = self._parse_one(sql)
            if isinstance(node, dialect.ShowRefreshStatus):
                return list(fill_params(param_types, {})), self.engine.refresh.status_rows().fields
            if isinstance(node, self._JOB_STATEMENTS):
                return list(fill_params(param_types, {})), self.engine.jobs.describe(node, info)
            return list(fill_params(param_types, {})), (
                flow_statements.describe(node) if isinstance(node, self._FLOW_STATEMENTS) else None)
        if first == "SHOW":
            stream = self._show(sql, sqllex.scan(sql), info)
            return list(fill_params(param_types, {})), stream.fields
        if first in ("CREATE", "DROP", "ALTER", "TRUNCATE", "COMMENT", "EXPLAIN", "COPY"):
            if first == "EXPLAIN":
                return list(fill_params(param_types, {})), [ResultField("QUERY PLAN", ColumnType(TEXT))]
            return list(fill_params(param_types, {})), None
        fast = self._describe_insert_fast(sql, param_types, info)
        if fast is not None:
            return fast, None
        # computed in the gateway: its parameters (each one cast) and columns, a known text unparsed
        const = scalar.cached(sql) if interactive.enabled(info) else None
        if const:
            return fill_params(param_types, const.params, max(const.params, default=0)), const.fields
        tree = self._parse_one(sql)
        const = scalar.shape(tree, sql) if const is False else None
        if const is not None:
            return fill_params(param_types, const.params, max(const.params, default=0)), const.fields
        lookup = interactive.shape(self, tree, info, sql) if isinstance(tree, exp.Select) else None
        if lookup is not None:  # the interactive path's parameters and columns; no Spark analysis
            return fill_params(param_types, interactive.param_types(lookup), _max_param(tree)), lookup.fields
        inferred = self._infer_params(tree, info)
        types = fill_params(param_types, inferred, _max_param(tree))
        if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)):
            returning = tree.args.get("returning")
            if returning is None:
                return types, None
            target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
            t = self._resolve_target(target, info)
            fields: list[ResultField] = []
            for e in returning.expressions:
                node = e.this if isinstance(e, exp.Alias) else e
                if isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star)):
                    fields.extend(ResultField(c.name, c.type) for c in t.columns)
                elif isinstance(node, exp.Column) and t.column(node_name(node.this)) is not None:
                    fields.append(ResultField(e.alias_or_name, t.column(node_name(node.this)).type))
                else:
                    return types, self._describe_returning(t, target, returning, len(types), info)
            return types, fields
        if isinstance(tree, (exp.Query, exp.Values)):
            self.engine.runtime.wait()

            def work() -> list[ResultField]:
                self._analyzed = None
                tq, resolver = self._translate(tree, [TypedNull.of(t) for t in types], info, client=True)
                df = self.spark.sql(tq.spark_sql)
                arrow = sparkmod.arrow_schema_of(df)
                if not types:  # no parameters: the Execute that follows runs this very plan
                    self._analyzed = Analyzed(sql, self._analysis_context(info),
                                               {loc: snap.version for loc, snap in resolver.snapshots.items()},
                                               tq, df)
                names = list(tq.output_names) if tq.output_names else arrow.names
                otypes = list(tq.output_types) if tq.output_types else [None] * len(names)
                return [ResultField(n, ty if ty is not None else pg_type_for_arrow(f.type))
                        for n, ty, f in zip(names, otypes, arrow)]

            return types, self._run(work, sql)
        return types, None

    def _describe_returning(self, t: TableDef, target: exp.Table, returning: exp.Returning, nparams: int,
                            info: SessionInfo) -> list[ResultField]:
        """RETURNING columns with expressions: the types of SELECT <returning> FROM t (analysis only)."""
        alias = target.alias or None
        table = exp.Table(this=exp.to_identifier(t.name), db=exp.to_identifier(t.schema),
                          alias=exp.TableAlias(this=exp.to_identifier(alias)) if alias else None)
        select = exp.Select(expressions=[e.copy() for e in returning.expressions]).from_(table)
        self.engine.runtime.wait()

        def work() -> list[ResultField]:
            tq, _ = self._translate(select, [None] * nparams, info)
            arrow = sparkmod.arrow_schema_of(self.spark.sql(tq.spark_sql))
            names = list(tq.output_names) if tq.output_names else arrow.names
            otypes = list(tq.output_types) if tq.output_types else [None] * len(names)
            return [ResultField(n, ty if ty is not None else pg_type_for_arrow(f.type))
                    for n, ty, f in zip(names, otypes, arrow)]

        return self._run(work)

    def _infer_params(self, tree: exp.Expression, info: SessionInfo) -> dict[int, ColumnType]:
        """$n compared with / assigned to / inserted into a typed column -> that column's type."""
        out: dict[int, ColumnType] = {}
        columns: dict[str, ColumnType] = {}
        for tbl in tree.find_all(exp.Table):
            try:
                schema, name = self._table_name(tbl)
                t = self.catalog.resolve_table(name, schema, info.search_path)
            except SqlError:
                continue
            for c in t.columns:
                columns.setdefault(c.name, c.type)
        if isinstance(tree, exp.Insert) and isinstance(tree.expression, exp.Values):
            target = tree.this
            cols = [node_name(e) for e in target.expressions] if isinstance(target, exp.Schema) else None
            tnode = target.this if isinstance(target, exp.Schema) else target
            try:
                schema, name = self._table_name(tnode)
                t = self.catalog.resolve_table(name, schema, info.search_path)
                tcols = target_columns(t, cols)
            except SqlError:
                tcols = []
            for tup in tree.expression.expressions:
                for k, e in enumerate(tup.expressions if isinstance(tup, exp.Tuple) else [tup]):
                    n = param_index(e)
                    if n is not None and k < len(tcols):
                        out.setdefault(n, tcols[k].type)
        if isinstance(tree, exp.Update):
            for eq in tree.expressions:
                n = param_index(eq.expression)
                name = node_name(eq.this.this if isinstance(eq.this, exp.Column) else eq.this)
                if n is not None and name in columns:
                    out.setdefault(n, columns[name])
        for node in tree.find_all(exp.Binary):
            if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Add, exp.Sub, exp.Like, exp.ILike)):
                left, right = node.this, node.expression
                for a, b in ((left, right), (right, left)):
                    n = param_index(b)
                    if n is not None and isinstance(a, exp.Column) and node_name(a.this) in columns:
                        out.setdefault(n, columns[node_name(a.this)])
        for node in tree.find_all(exp.In):
            if isinstance(node.this, exp.Column) and node_name(node.this.this) in columns:
                for e in node.expressions:
                    n = param_index(e)
                    if n is not None:
                        out.setdefault(n, columns[node_name(node.this.this)])
        for node in tree.find_all(exp.Cast):
            n = param_index(node.this)
            if n is not None:
                try:
                    out.setdefault(n, ddl.type_from_sqlglot(node.to))
                except SqlError:
                    pass
        return out


@dataclass
class Analyzed:
    """A described query's translation and analyzed DataFrame, kept for the Execute that follows.

    Extended-protocol clients (psycopg, asyncpg, JDBC) describe a statement before executing it;
    without parameters both steps would translate and analyze the same SQL over the same
    snapshots, 15-35 ms each time.
    """
    sql: str
    context: tuple  # catalog version, session settings, pending rows: what translation depends on
    versions: dict[str, int]  # the Delta version of every table read
    tq: Any
    df: DataFrame


def _reconcile(declared: ColumnType | None, actual: pa.DataType) -> ColumnType:
    """The result type of a column: the translator's, else the one Spark's Arrow type implies.

    A float32 column is real (float4) whatever was declared: its values have no more precision.
    """
    if declared is None:
        return pg_type_for_arrow(actual)
    if declared.pg.name == "float8" and pa.types.is_float32(actual):
        return pg_type_for_arrow(actual)
    return declared


def _explained_select(tree: exp.Expression) -> exp.Select | None:
    """The SELECT of ``EXPLAIN SELECT ...`` (no options: EXPLAIN ANALYZE / VERBOSE show Spark's plan)."""
    if not isinstance(tree, exp.Command) or not isinstance(tree.expression, exp.Literal):
        return None
    text = tree.expression.name
    first = sqllex.leading(text, 1)
    if not first or first[0].upper != "SELECT":
        return None
    statements = dialect.parse(text)
    return statements[0] if len(statements) == 1 and isinstance(statements[0], exp.Select) else None


def _small_result(tree: exp.Expression) -> bool:
    """A query whose result is small by its shape: LIMIT n (n <= 100000) or aggregates without GROUP BY."""
    if not isinstance(tree, exp.Select):
        return False
    limit = tree.args.get("limit")
    if limit is not None and isinstance(limit.expression, exp.Literal) and not limit.expression.is_string:
        try:
            if int(limit.expression.this) <= 100_000:
                return True
        except ValueError:
            pass
    if tree.args.get("group") is None and tree.args.get("from_", tree.args.get("from")) is not None:
        if any(isinstance(n, exp.Window) for e in tree.expressions for n in e.walk()):
            return False
        return all(any(isinstance(n, exp.AggFunc) for n in e.walk()) for e in tree.expressions) and bool(tree.expressions)
    return tree.args.get("from_", tree.args.get("from")) is None


def _max_param(tree: exp.Expression) -> int:
    n = 0
    for node in tree.find_all(exp.Parameter, exp.Placeholder):
        k = param_index(node)
        if k:
            n = max(n, k)
    return n
