"""The FLOW statements as an engine session executes them (see :mod:`engine.flows.syntax`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from catalog.flows import FlowDef, render_create_flow
from catalog.store import is_temp_schema
from engine.events import FLOW_CREATED, FLOW_REPLACED
from engine.flows import syntax
from engine.flows.plan import analyze, check_sink, find_sources, parse_query, sink_definition
from tidegate import pgvalues
from tidegate.errors import SqlError
from tidegate.pgtypes import INT8, TEXT, ColumnType
from tidegate.results import CommandResult, ResultField, RowStream
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from engine.executor import EngineSession
    from engine.flows.runtime import FlowRuntime

__all__ = ["dependent_flows", "describe", "drop_dependent_flows", "execute"]

_TEXT = ColumnType(TEXT)


def execute(session: EngineSession, node: exp.Expression, info: SessionInfo) -> RowStream | CommandResult:
    """Run one FLOW statement (a tree of the dialect) for ``session``."""
    rt: FlowRuntime = session.engine.flows
    stmt = syntax.statement(node)
    led = _LED.get(type(stmt))
    if led is not None:  # the leading gateway runs the flows (catalog/active.py)
        session.engine.require_leader(led)
    if isinstance(stmt, syntax.CreateFlow):
        return _create(session, rt, stmt, info)
    if isinstance(stmt, syntax.DropFlow):
        f = rt.flows.get(stmt.name)
        if f is None:
            if stmt.if_exists:
                return CommandResult("DROP FLOW", notices=[f'flow "{stmt.name}" does not exist, skipping'])
            raise _unknown(stmt.name)
        _check_flow_owner(session, info, f)
        rt.drop_flow(f, user=info.user)
        return CommandResult("DROP FLOW")
    if isinstance(stmt, syntax.ShowFlows):
        return _show_flows(session, rt, stmt, info)
    if isinstance(stmt, syntax.ShowCreateFlow):
        f = rt.flows.get(stmt.name)
        if f is None:
            raise _unknown(stmt.name)
        return RowStream.from_table([ResultField("Flow", _TEXT), ResultField("Create Flow", _TEXT)],
                                    pa.table({"Flow": [f.name], "Create Flow": [render_create_flow(f)]}),
                                    command="SHOW")
    if isinstance(stmt, syntax.ShowFlowStatus):
        return _show_status(rt, stmt)
    if isinstance(stmt, syntax.FlushFlow):
        f = rt.flows.get(stmt.name)
        if f is None:
            raise _unknown(stmt.name)
        _check_flow_owner(session, info, f)
        rows = rt.flush(f)
        return RowStream.from_table([ResultField(stmt.call_text, ColumnType(INT8))],
                                    pa.table({stmt.call_text: pa.array([rows], pa.int64())}))
    if isinstance(stmt, syntax.CommentOnFlow):
        f = rt.flows.get(stmt.name)
        if f is None:
            raise _unknown(stmt.name)
        _check_flow_owner(session, info, f)
        f.comment = stmt.comment
        rt.updated(rt.flows.update(f))
        return CommandResult("COMMENT")
    raise SqlError("0A000", "statement is not supported")


_LED = {syntax.CreateFlow: "CREATE FLOW", syntax.DropFlow: "DROP FLOW", syntax.FlushFlow: "ADMIN FLUSH_FLOW",
        syntax.CommentOnFlow: "COMMENT ON FLOW"}


def _check_flow_owner(session: EngineSession, info: SessionInfo, f: FlowDef) -> None:
    session.catalog.roles.check_owner(info, "flow", f.name, f.owner)


def _unknown(name: str) -> SqlError:
    return SqlError("42704", f'flow "{name}" does not exist')


def current_schema(session: EngineSession, info: SessionInfo) -> str:
    for s in info.search_path:
        if not is_temp_schema(s) and session.catalog.get_schema(s) is not None:
            return s
    return "public"


def _create(session: EngineSession, rt: FlowRuntime, stmt: syntax.CreateFlow, info: SessionInfo) -> CommandResult:
    catalog = session.catalog
    existing = rt.flows.get(stmt.name)
    if existing is not None and stmt.if_not_exists:
        return CommandResult("CREATE FLOW", notices=[f'flow "{stmt.name}" already exists, skipping'])
    if existing is not None and not stmt.or_replace:
        raise SqlError("42710", f'flow "{stmt.name}" already exists',
                       hint="Use CREATE OR REPLACE FLOW to replace it, or DROP FLOW first.")
    if existing is not None:
        _check_flow_owner(session, info, existing)
    schema = current_schema(session, info)
    sink_schema = stmt.sink_schema or schema
    if catalog.get_schema(sink_schema) is None:
        raise SqlError("3F000", f'schema "{sink_schema}" does not exist')
    flow_type = stmt.options.get("flow_type", "batching")
    if not rt.has_executor(flow_type):
        raise SqlError("0A000", f"flow_type '{flow_type}' is not available in this gateway",
                       hint="Use WITH (flow_type = 'batching').")
    tree = parse_query(stmt.query)
    sources, missing = find_sources(catalog, tree, info, schema)
    if sink_schema == "pg_temp" or is_temp_schema(sink_schema) or any(is_temp_schema(t.schema) for t in sources):
        # a flow outlives the session; a temporary table does not
        raise SqlError("0A000", f'flow "{stmt.name}" cannot read or write a temporary table',
                       hint="Use ordinary tables as the flow's sources and sink.")
    sink_label = f"{sink_schema}.{stmt.sink_table}"
    if any(t.qualified_name == sink_label for t in sources) or sink_label in missing:
        raise SqlError("42P16", f'flow "{stmt.name}" cannot sink into its own source table "{sink_label}"',
                       hint="Choose another SINK TO table.")
    if missing and not stmt.defer_on_missing_source:
        raise SqlError("42P01", f"source table(s) of flow \"{stmt.name}\" do not exist: {', '.join(missing)}",
                       hint="Create them first, or use WITH (defer_on_missing_source = true) to create the "
                            "flow pending until they exist.")
    roles = catalog.roles
    for t in sources:  # read on the owner's behalf at every run: checked now, as for a view
        roles.check_table(info, t, "SELECT")
    f = FlowDef(stmt.name, schema, sink_schema, stmt.sink_table, stmt.query,
                info.settings.get("search_path", '"$user", public'), flow_type, dict(stmt.options),
                stmt.expire_after, stmt.eval_interval, stmt.comment,
                owner=None if info.internal else info.user)
    sink = catalog.get_table(sink_schema, stmt.sink_table)
    plan = None
    if sink is not None and sink.kind != "table":
        raise SqlError("42809", f'sink "{sink.qualified_name}" is not a table')
    if sink is not None:
        roles.check_table(info, sink, "INSERT", "UPDATE", "DELETE")
    else:
        roles.check_schema(info, sink_schema, "CREATE")
    if missing:
        f.sources = [t.qualified_name for t in sources] + missing
        f.missing_sources = missing
    else:
        plan = analyze(session, tree, info, sources)
        f.flow_type = _mode_rule(plan, stmt)
        if sink is not None:
            check_sink(plan, sink)
        f.sources = [t.qualified_name for t in sources]
        f.source_ids = [t.oid for t in sources]
    if existing is not None:
        rt.remove(existing.flow_id)
    if plan is not None and sink is None:
        rt.create_sink(sink_definition(plan, sink_schema, stmt.sink_table), f.owner)
    stored = rt.flows.create(f, replace_existing=existing is not None)
    rt.add(stored)
    rt.event(FLOW_REPLACED if existing is not None else FLOW_CREATED, stored, info.user,
             sources=stored.sources, pending=bool(missing), missing_sources=missing, query=stmt.query,
             options=dict(stmt.options))
    return CommandResult("CREATE FLOW")


def _mode_rule(plan, stmt: syntax.CreateFlow) -> str:
    """Part 2 (streaming): the flow's mode, see :func:`engine.flows.streaming.decide_flow_type`."""
    from engine.flows.streaming import decide_flow_type

    explicit = stmt.options.get("flow_type") or ("batching" if "spark_writes" in stmt.options else None)
    return decide_flow_type(plan, explicit, stmt.eval_interval)


def _show_flows(session: EngineSession, rt: FlowRuntime, stmt: syntax.ShowFlows, info: SessionInfo) -> RowStream:
    schema = stmt.schema or current_schema(session, info)
    if session.catalog.get_schema(schema) is None:
        raise SqlError("3F000", f'schema "{schema}" does not exist')
    names = [f.name for f in rt.flows.list() if f.schema == schema]
    if stmt.like is not None:
        rx = pgvalues.like_regex(stmt.like)
        names = [n for n in names if rx.match(n)]
    table = pa.table({"Flows": pa.array(names, pa.string())})
    if stmt.where is not None:
        table = _filter(table, stmt.where)
    return RowStream.from_table([ResultField("Flows", _TEXT)], table, command="SHOW")


def _filter(table: pa.Table, where: exp.Expression) -> pa.Table:
    """Apply a SHOW ... WHERE condition (the dialect's tree, written for DuckDB) to a small result."""
    import duckdb

    # the condition is the client's text: no files, extensions or settings for it
    con = duckdb.connect(":memory:", config={"enable_external_access": False, "autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False, "lock_configuration": True})
    try:
        con.register("tg_show", table)
        names = ", ".join('"' + n.replace('"', '""') + '"' for n in table.column_names)
        out = con.execute(f"SELECT {names} FROM tg_show WHERE {where.sql(dialect='duckdb')}").to_arrow_table()
    except duckdb.Error as e:
        msg = str(e).split("\n")[0]
        code = "42703" if "not found" in msg.lower() and "column" in msg.lower() else "42601"
        raise SqlError(code, f"invalid WHERE condition: {msg}") from None
    finally:
        con.close()
    return pa.table({n: out.column(n).cast(table.schema.field(n).type) for n in table.column_names})


_STATUS_FIELDS = [("Flow", _TEXT), ("Type", _TEXT), ("Status", _TEXT), ("Execution", _TEXT), ("Runs", ColumnType(INT8)),
                  ("Rows Written", ColumnType(INT8)), ("Last Execution Time", _TEXT), ("Last Error", _TEXT)]


def _show_status(rt: FlowRuntime, stmt: syntax.ShowFlowStatus) -> RowStream:
    flows = rt.flows.list()
    if stmt.like is not None:
        rx = pgvalues.like_regex(stmt.like)
        flows = [f for f in flows if rx.match(f.name)]
    stats = rt.flows.all_stats()
    cols: dict[str, list] = {n: [] for n, _ in _STATUS_FIELDS}
    for f in flows:
        st = stats.get(f.flow_id)
        af = rt.get(f.flow_id)
        execution = (st.execution if st and st.execution else "")
        if af is not None and af.plan is not None:
            execution = af.plan.execution
        if f.pending:
            status = f"pending: waiting for {', '.join(f.missing_sources)}"
            execution = ""
        else:
            status = st.status if st else "active"
        cols["Flow"].append(f.name)
        cols["Type"].append(f.flow_type)
        cols["Status"].append(status)
        cols["Execution"].append(execution or None)
        cols["Runs"].append(st.runs if st else 0)
        cols["Rows Written"].append(st.rows_written if st else 0)
        cols["Last Execution Time"].append(st.last_execution_time.strftime("%Y-%m-%d %H:%M:%S.%f+00:00")
                                           if st and st.last_execution_time else None)
        cols["Last Error"].append(st.last_error if st else None)
    table = pa.table({"Flow": pa.array(cols["Flow"], pa.string()), "Type": pa.array(cols["Type"], pa.string()),
                      "Status": pa.array(cols["Status"], pa.string()), "Execution": pa.array(cols["Execution"], pa.string()),
                      "Runs": pa.array(cols["Runs"], pa.int64()), "Rows Written": pa.array(cols["Rows Written"], pa.int64()),
                      "Last Execution Time": pa.array(cols["Last Execution Time"], pa.string()),
                      "Last Error": pa.array(cols["Last Error"], pa.string())})
    return RowStream.from_table([ResultField(n, t) for n, t in _STATUS_FIELDS], table, command="SHOW")


def dependent_flows(session: EngineSession, tables: list) -> list[FlowDef]:
    """Flows reading any of ``tables`` (for DROP TABLE's dependency check)."""
    rt: FlowRuntime = session.engine.flows
    out: list[FlowDef] = []
    for t in tables:
        for f in rt.flows_reading(t):
            if all(f.flow_id != g.flow_id for g in out):
                out.append(f)
    return out


def describe(node: exp.Expression) -> list[ResultField] | None:
    """The result columns of a FLOW statement without running it (None: no rows)."""
    stmt = syntax.statement(node)
    if isinstance(stmt, syntax.ShowFlows):
        return [ResultField("Flows", _TEXT)]
    if isinstance(stmt, syntax.ShowCreateFlow):
        return [ResultField("Flow", _TEXT), ResultField("Create Flow", _TEXT)]
    if isinstance(stmt, syntax.ShowFlowStatus):
        return [ResultField(n, t) for n, t in _STATUS_FIELDS]
    if isinstance(stmt, syntax.FlushFlow):
        return [ResultField(stmt.call_text, ColumnType(INT8))]
    return None


def drop_dependent_flows(session: EngineSession, tables: list, cascade: bool) -> list[str]:
    """DROP TABLE/SCHEMA of tables flows read: with CASCADE, drop those flows (stopping their work
    first); without, keep them pending until tables of those names exist again (GreptimeDB keeps a
    flow whose source is dropped; re-creating the source rebuilds the sink from its rows).
    Returns the notices to send."""
    flows = dependent_flows(session, tables)
    if not flows:
        return []
    session.engine.require_leader(f"DROP of a table flow {flows[0].name} reads")
    rt: FlowRuntime = session.engine.flows
    if cascade:
        for f in flows:
            rt.drop_flow(f, reason="a source table was dropped with CASCADE")
        return [f"drop cascades to flow {f.name}" for f in flows]
    if session.in_block:
        # Flows are not transactional: a rolled-back DROP would leave them waiting.
        first = next(t for t in tables if any(t.oid in f.source_ids or t.qualified_name in f.sources
                                              for f in flows))
        raise SqlError("25001", f"DROP TABLE of {first.name}, which flows read, cannot run inside a transaction block",
                       detail="\n".join(f"flow {f.name} reads table {first.name}" for f in flows),
                       hint="Run it outside a transaction block (the flows then wait for the table to be created "
                            "again), or DROP FLOW first.")
    notices = []
    for f in flows:
        names = rt.suspend(f, tables)
        notices.append(f"flow {f.name} is pending until table{'s' if len(names) != 1 else ''} "
                       f"{', '.join(names)} exist{'s' if len(names) == 1 else ''} again")
    return notices
