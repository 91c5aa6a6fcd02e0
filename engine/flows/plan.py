"""What a flow's query reads and writes: sources, output columns, time window and sink shape.

:func:`find_sources` only consults the catalog (no Spark), so CREATE FLOW can report missing
sources at once; :func:`analyze` translates the query (Spark resolves the output schema, no job
runs) and finds the time-window expression incremental runs are keyed on.

The window is usable when the query is one SELECT whose GROUP BY (or, without aggregation, select
list) has as first timestamp key ``date_bin(<const interval>, col, <const origin>)``,
``date_trunc('<unit>', col)`` or ``col`` itself, where ``col`` is a timestamp/timestamptz/date
column of a table that appears exactly once in the query, directly in the outer FROM/JOIN, and
that key is an output column (it becomes the sink's time index). Otherwise every run recomputes
the whole query; :attr:`FlowPlan.execution` says which and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from sqlglot import exp

from catalog.store import ColumnDef, TableDef
from engine.flows.windows import US, WindowFn, _from_dt
from engine.storage import parse_interval
from tidegate import dialect
from tidegate.errors import SqlError
from tidegate.pgtypes import TEXT, TIMESTAMP, ColumnType, pg_type_for_arrow
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from catalog.store import Catalog
    from engine.executor import EngineSession

AUTO_SINK_COMMENT = "Auto created table by flow engine"
UPDATE_AT = "update_at"
TS_PLACEHOLDER = "__ts_placeholder"
_TIME_TYPES = ("timestamp", "timestamptz")
_TRUNC_UNITS = {"microsecond", "millisecond", "second", "minute", "hour", "day", "week", "month", "quarter",
                "year", "decade", "century", "millennium"}


@dataclass
class TimeWindow:
    """The window incremental runs are keyed on."""

    fn: WindowFn
    table: TableDef  # the source table holding the time column
    column: str  # its time column
    column_type: str  # "timestamp" | "timestamptz" | "date"
    output: str  # the output (= sink time index) column

    def describe(self) -> str:
        return f"incremental: {self.fn.describe()} on {self.table.qualified_name}.{self.column}"


@dataclass
class FlowPlan:
    sources: list[TableDef]
    output_names: list[str]
    output_types: list[ColumnType]
    group_outputs: list[str]  # GROUP BY keys that are output columns, in GROUP BY order
    aggregating: bool
    window: TimeWindow | None
    full_reason: str = ""
    query_tree: exp.Expression | None = field(default=None, repr=False)

    @property
    def execution(self) -> str:
        if self.window is not None:
            return self.window.describe()
        return f"full recompute: {self.full_reason}"


def parse_query(query: str) -> exp.Expression:
    from engine.translate import check_functions

    trees = dialect.parse(query)
    if len(trees) != 1:
        raise SqlError("42601", "a flow's query must be exactly one SELECT statement")
    tree = trees[0]
    if not isinstance(tree, exp.Query):
        raise SqlError("42601", "a flow's query must be a SELECT statement")
    # Refused at CREATE FLOW even when the flow waits for its sources (not translated until then).
    check_functions(tree)
    return tree


def _cte_names(tree: exp.Expression) -> set[str]:
    return {c.alias_or_name for c in tree.find_all(exp.CTE)}


def table_refs(tree: exp.Expression) -> list[exp.Table]:
    ctes = _cte_names(tree)
    out = []
    for t in tree.find_all(exp.Table):
        if not isinstance(t.this, exp.Identifier):
            continue  # table functions
        if not t.args.get("db") and t.name in ctes:
            continue
        out.append(t)
    return out


def _ref_key(t: exp.Table) -> tuple[str | None, str]:
    catalog = t.args.get("catalog")
    if catalog is not None and catalog.name not in ("tidegate",):
        raise SqlError("0A000", f'cross-database references are not implemented: "{t.sql("postgres")}"')
    db = t.args.get("db")
    return (db.name if db is not None else None), t.name


def find_sources(catalog: Catalog, tree: exp.Expression, info: SessionInfo, default_schema: str
                 ) -> tuple[list[TableDef], list[str]]:
    """(existing source tables in order of appearance, missing ones as ``schema.table``)."""
    found: list[TableDef] = []
    missing: list[str] = []
    for ref in table_refs(tree):
        schema, name = _ref_key(ref)
        try:
            t = catalog.resolve_table(name, schema, info.search_path)
        except SqlError:
            label = f"{schema or default_schema}.{name}"
            if label not in missing:
                missing.append(label)
            continue
        if t.kind == "view":
            raise SqlError("0A000", f'flow sources must be tables; "{t.qualified_name}" is a view',
                           hint="Use the view's query in the flow instead.")
        if all(t.oid != f.oid for f in found):
            found.append(t)
    return found, missing


def analyze(session: EngineSession, tree: exp.Expression, info: SessionInfo, sources: list[TableDef]) -> FlowPlan:
    """Translate the query (output names and types) and find its time window."""
    from engine import spark as sparkmod
    from engine.resolver import StatementResolver
    from engine.translate import translate_query

    session.engine.runtime.wait()
    resolver = StatementResolver(session, info, stored_rows=True)
    try:
        tq = translate_query(tree, resolver, [])
        df = session.spark.sql(tq.spark_sql)
        arrow = sparkmod.arrow_schema_of(df)
    except SqlError:
        raise
    except Exception as exc:  # noqa: BLE001 - Spark analysis errors become SqlErrors
        from engine.errors import map_spark_error

        raise map_spark_error(exc, None) from None
    names = list(tq.output_names) if tq.output_names else list(arrow.names)
    types = [_storable(t if t is not None else pg_type_for_arrow(f.type))
             for t, f in zip(tq.output_types or [None] * len(names), arrow)]
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise SqlError("42701", f'column "{n}" specified more than once in the flow\'s output',
                           hint="Give the output columns distinct names with AS.")
        seen.add(n)
    plan = FlowPlan(sources, names, types, [], False, None, query_tree=tree)
    _find_window(plan, tree, sources)
    return plan


def _storable(t: ColumnType) -> ColumnType:
    base = t.element if t.is_array else t
    if base.pg.name in ("unknown", "record", "void", "name", "char"):
        return ColumnType(TEXT).array_of() if t.is_array else ColumnType(TEXT)
    return t


def _unalias(e: exp.Expression) -> exp.Expression:
    return e.this if isinstance(e, exp.Alias) else e


def _group_to_output(select: exp.Select, key: exp.Expression) -> int | None:
    items = select.expressions
    if isinstance(key, exp.Literal) and not key.is_string and key.name.isdigit():
        k = int(key.name) - 1
        return k if 0 <= k < len(items) else None
    if isinstance(key, exp.Column) and not key.table:
        for i, it in enumerate(items):
            if isinstance(it, exp.Alias) and it.alias == key.name:
                return i
    text = key.sql("postgres")
    for i, it in enumerate(items):
        if _unalias(it).sql("postgres") == text:
            return i
    return None


def _has_aggregate(select: exp.Select) -> bool:
    """Whether the select list aggregates (aggregates inside scalar subqueries do not count)."""
    return any(node.find_ancestor(exp.Select) is select
               for it in select.expressions for node in it.find_all(exp.AggFunc))


def _find_window(plan: FlowPlan, tree: exp.Expression, sources: list[TableDef]) -> None:
    if not isinstance(tree, exp.Select):
        plan.full_reason = "the query is not a single SELECT"
        return
    group = tree.args.get("group")
    keys = list(group.expressions) if group is not None else []
    distinct = tree.args.get("distinct")
    if not keys and isinstance(distinct, exp.Distinct) and not distinct.args.get("on") and not _has_aggregate(tree):
        # SELECT DISTINCT a, b is GROUP BY a, b: its output columns are the sink's keys (one row
        # per distinct combination; without keys the sink would keep a single row).
        keys = [_unalias(it).copy() for it in tree.expressions]
    from_distinct = group is None and bool(keys)
    plan.aggregating = bool(keys) or _has_aggregate(tree)
    for key in keys:
        idx = _group_to_output(tree, key)
        if idx is not None and plan.output_names[idx] not in plan.group_outputs:
            plan.group_outputs.append(plan.output_names[idx])
    if any(True for _ in tree.find_all(exp.Window)):
        plan.full_reason = "window functions need whole partitions"
        return
    if tree.args.get("limit") is not None or tree.args.get("offset") is not None:
        plan.full_reason = "LIMIT/OFFSET depends on all rows"
        return
    if isinstance(tree.args.get("distinct"), exp.Distinct) and tree.args["distinct"].args.get("on"):
        plan.full_reason = "DISTINCT ON depends on all rows"
        return
    # The candidate: the first timestamp-typed GROUP BY key that is output (the sink time index),
    # or without aggregation the first timestamp output column.
    candidates: list[tuple[int, exp.Expression]] = []
    if plan.aggregating:
        if not keys:
            plan.full_reason = "an aggregate without GROUP BY covers all rows"
            return
        for key in keys:
            idx = _group_to_output(tree, key)
            if idx is not None and plan.output_types[idx].pg.name in _TIME_TYPES:
                candidates.append((idx, _unalias(tree.expressions[idx])))
                break
    else:
        for idx, it in enumerate(tree.expressions):
            if plan.output_types[idx].pg.name in _TIME_TYPES:
                candidates.append((idx, _unalias(it)))
                break
    if not candidates:
        plan.full_reason = ("no timestamp output column" if not plan.aggregating else
                            "no timestamp column among the DISTINCT columns" if from_distinct else
                            "no timestamp column among the GROUP BY keys")
        return
    idx, expr = candidates[0]
    fn, column = _window_fn(expr)
    if fn is None or column is None:
        plan.full_reason = f"the time key {expr.sql('postgres')} is not date_bin(), date_trunc() or a column"
        return
    table, col_type, why = _column_table(tree, column, sources)
    if table is None:
        plan.full_reason = why
        return
    plan.window = TimeWindow(fn, table, column.name, col_type, plan.output_names[idx])


def _window_fn(e: exp.Expression) -> tuple[WindowFn | None, exp.Column | None]:
    if isinstance(e, exp.Column):
        return WindowFn("raw"), e
    if isinstance(e, exp.DateBin):
        stride, source, origin = e.this, e.expression, e.args.get("unit")
        if not isinstance(source, exp.Column):
            return None, None
        stride_us = _interval_us(stride)
        origin_us = _timestamp_us(origin) if origin is not None else 0
        if stride_us is None or stride_us <= 0 or origin_us is None:
            return None, None
        return WindowFn("date_bin", stride_us, origin_us), source
    if isinstance(e, (exp.TimestampTrunc, exp.DateTrunc)):
        if e.args.get("zone") is not None or not isinstance(e.this, exp.Column):
            return None, None
        unit = e.args.get("unit")
        name = (unit.name if unit is not None else "").lower()
        if name not in _TRUNC_UNITS:
            return None, None
        return WindowFn("date_trunc", unit=name), e.this
    return None, None


def _interval_us(e: exp.Expression) -> int | None:
    try:
        if isinstance(e, exp.Interval):
            text = e.this.name if isinstance(e.this, exp.Literal) else None
            if text is None:
                return None
            unit = e.args.get("unit")
            if unit is not None:
                text = f"{text} {unit.name}"
            months, days, us = parse_interval(text)
        elif isinstance(e, exp.Literal) and e.is_string:
            months, days, us = parse_interval(e.name)
        elif isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal):
            months, days, us = parse_interval(e.this.name)
        else:
            return None
    except SqlError:
        return None
    if months:
        return None
    return days * 86_400 * US + us


def _timestamp_us(e: exp.Expression) -> int | None:
    lit = e.this if isinstance(e, exp.Cast) else e
    if not (isinstance(lit, exp.Literal) and lit.is_string):
        return None
    text = lit.name.strip().replace("T", " ", 1)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        d = datetime.fromisoformat(text)
    except ValueError:
        return None
    d = d.astimezone(timezone.utc) if d.tzinfo else d.replace(tzinfo=timezone.utc)
    return _from_dt(d)


def _column_table(select: exp.Select, column: exp.Column, sources: list[TableDef]
                  ) -> tuple[TableDef | None, str, str]:
    """The source table of ``column`` when incremental runs can filter it (else a reason)."""
    direct: dict[str, TableDef] = {}
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this] if from_ is not None else []
    items += [j.this for j in select.args.get("joins") or []]
    for it in items:
        if isinstance(it, exp.Table):
            for t in sources:
                if it.name == t.name and (not it.args.get("db") or it.args["db"].name == t.schema):
                    direct[it.alias_or_name] = t
                    break
    if column.table:
        table = direct.get(column.table)
    else:
        having = [t for t in direct.values() if t.column(column.name) is not None]
        table = having[0] if len(having) == 1 else None
    if table is None:
        return None, "", f"the time column {column.sql('postgres')} is not a column of a table in the outer FROM"
    uses = sum(1 for ref in table_refs(select) if ref.name == table.name)
    if uses != 1:
        return None, "", f"{table.qualified_name} is read more than once"
    c = table.column(column.name)
    if c is None or c.type.pg.name not in ("timestamp", "timestamptz", "date"):
        return None, "", f"{column.sql('postgres')} is not a timestamp column"
    return table, c.type.pg.name, ""


# -- sinks -----------------------------------------------------------------------------------------

def sink_definition(plan: FlowPlan, schema: str, name: str) -> TableDef:
    """The sink a flow creates when it does not exist (the issue's rules)."""
    cols = [ColumnDef(n, t) for n, t in zip(plan.output_names, plan.output_types)]
    time_index: str | None = None
    keys = plan.group_outputs if plan.aggregating else []
    by_name = {c.name: c for c in cols}
    if plan.aggregating:
        for k in keys:
            if by_name[k].type.pg.name in _TIME_TYPES:
                time_index = k
                break
    else:
        for c in cols:
            if c.type.pg.name in _TIME_TYPES:
                time_index = c.name
                break
    primary_key = [k for k in keys if k != time_index]
    cols.append(ColumnDef(UPDATE_AT, ColumnType(TIMESTAMP, precision=3)))
    if time_index is None:
        cols.append(ColumnDef(TS_PLACEHOLDER, ColumnType(TIMESTAMP, precision=3), not_null=True))
        time_index = TS_PLACEHOLDER
    else:
        cols = [ColumnDef(c.name, c.type, not_null=True) if c.name == time_index else c for c in cols]
    return TableDef(schema, name, cols, primary_key=primary_key, time_index=time_index,
                    comment=AUTO_SINK_COMMENT)


_NUMERIC_RANK = {"int2": 1, "int4": 2, "int8": 3, "numeric": 4, "float4": 5, "float8": 6}
_TEXTUAL = {"text", "varchar", "bpchar", "name"}


def compatible(out: ColumnType, sink: ColumnType) -> bool:
    """Whether a flow output column of type ``out`` can be stored in a sink column of ``sink``."""
    if out.is_array or sink.is_array:
        return out.is_array and sink.is_array and compatible(out.element, sink.element)
    a, b = out.pg.name, sink.pg.name
    if a == b:
        return True
    if a in _NUMERIC_RANK and b in _NUMERIC_RANK:
        return _NUMERIC_RANK[a] <= _NUMERIC_RANK[b]
    if a in _TEXTUAL and b in _TEXTUAL:
        return True
    if {a, b} <= {"json", "jsonb"}:
        return True
    return False


def check_sink(plan: FlowPlan, sink: TableDef) -> None:
    """Refuse a sink whose columns do not take the flow's output (42P16, listing the differences)."""
    sink_columns(plan, sink)


def sink_columns(plan: FlowPlan, sink: TableDef) -> list[str]:
    """The sink column each output column is stored in, in output order (42P16 when none fits).

    Outputs are matched to sink columns by name when every output name is a sink column;
    otherwise, as GreptimeDB does, by position: the sink's columns other than ``update_at`` and
    ``__ts_placeholder``, in order, take the outputs in order, whatever their names.
    """
    out = dict(zip(plan.output_names, plan.output_types))
    sink_cols = {c.name: c for c in sink.columns}
    optional = {UPDATE_AT, TS_PLACEHOLDER}
    flow_text = ", ".join(f"{n} {t.sql()}" for n, t in out.items())
    sink_text = ", ".join(f"{c.name} {c.type.sql()}" for c in sink.columns)
    head = [f'sink table "{sink.qualified_name}" does not match the output of the flow',
            f"flow output columns: {flow_text}", f"sink columns: {sink_text}"]
    hint = ("Make the sink's columns match the query's output (by name, or in order and type), or sink into "
            "a new table to have it created.")
    missing = [n for n in plan.output_names if n not in sink_cols]
    if not missing:
        extra = [c.name for c in sink.columns if c.name not in out and c.name not in optional]
        clashes = [f"{n} (flow: {t.sql()}, sink: {sink_cols[n].type.sql()})"
                   for n, t in out.items() if not compatible(t, sink_cols[n].type)]
        if not (extra or clashes):
            return list(plan.output_names)
        parts = list(head)
        if extra:
            parts.append(f"extra in sink: {', '.join(extra)}")
        if clashes:
            parts.append(f"type clash: {'; '.join(clashes)}")
        raise SqlError("42P16", "; ".join(parts), hint=hint)
    positional = [c for c in sink.columns if c.name not in optional]
    if len(positional) != len(plan.output_names):
        parts = head + [f"missing in sink: {', '.join(missing)}",
                        f"matched by position (the names differ), the sink has {len(positional)} column(s) "
                        f"for the flow's {len(plan.output_names)} output column(s)"]
        raise SqlError("42P16", "; ".join(parts), hint=hint)
    clashes = [f"position {i + 1}: {n} (flow: {t.sql()}) into {c.name} (sink: {c.type.sql()})"
               for i, (n, t, c) in enumerate(zip(plan.output_names, plan.output_types, positional))
               if not compatible(t, c.type)]
    if clashes:
        parts = head + ["matched by position (the names differ)", f"type clash: {'; '.join(clashes)}"]
        raise SqlError("42P16", "; ".join(parts), hint=hint)
    return [c.name for c in positional]


def sink_column_of(plan: FlowPlan, sink: TableDef, output: str) -> str:
    """The sink column holding output column ``output``."""
    return sink_columns(plan, sink)[plan.output_names.index(output)]


def upsert_keys(sink: TableDef, plan: FlowPlan) -> list[str]:
    """The columns a sink row is identified by: its primary key and time index.

    A flow without aggregation writing to a sink without primary key keeps every distinct output
    row: its rows are identified by all their (comparable) columns, not by the time index alone
    (an auto-created sink's ``__ts_placeholder`` would otherwise keep a single row).
    """
    keys = list(sink.primary_key)
    if not plan.aggregating and not keys:
        names = sink_columns(plan, sink)
        keys = [n for n, t in zip(names, plan.output_types)
                if not t.is_array and t.pg.name not in ("json", "jsonb")]
    if sink.time_index and sink.time_index not in keys:
        keys.append(sink.time_index)
    if not keys:
        keys = sink_columns(plan, sink)
    return keys
