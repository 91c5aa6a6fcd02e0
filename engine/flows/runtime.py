"""The flow runtime: scheduling, state, retries and statistics, shared by every execution mode.

:class:`FlowRuntime` owns the flows of one gateway. It knows nothing of *how* a flow evaluates:
that is a :class:`FlowExecutor` chosen by the flow's ``flow_type`` from :data:`EXECUTORS`. The
runtime:

* loads every flow from :class:`catalog.flows.FlowStore` at start (restart resumes from the stored
  per-source versions), plans it (sources, output, time window; creates or checks the sink);
* runs periodic executors every EVAL INTERVAL (else ``Settings.flow_default_interval_s``) on a
  small worker pool, one evaluation per flow at a time, and at once on ADMIN FLUSH_FLOW
  (synchronously, in the caller's thread);
* records statistics after each run and, on failure, the error, retrying with exponential
  backoff (1 s doubling to 60 s) without touching other flows;
* activates pending flows (``defer_on_missing_source``) once their sources exist: polled every
  second and nudged by CREATE TABLE;
* stops a flow's work (cancelling its Spark jobs by tag) before DROP FLOW returns.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from catalog.flows import FlowDef, FlowProgress, FlowStats, FlowStore, register
from catalog.store import TableDef
from engine import events as ev
from engine.flows.plan import (FlowPlan, analyze, check_sink, find_sources, parse_query, sink_column_of,
                              sink_definition)
from engine.flows.batch import BatchExecutor
from engine.flows.seam import ActiveFlow, FlowCancelled, FlowExecutor, RunResult
from engine.flows.streaming import StreamingExecutor
from engine.spark import background_jobs
from tidegate.errors import SqlError
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from engine.executor import Engine, EngineSession

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0
PENDING_POLL_S = 1.0
TICK_S = 0.2


EXECUTORS: dict[str, type[FlowExecutor]] = {
    BatchExecutor.flow_type: BatchExecutor, StreamingExecutor.flow_type: StreamingExecutor}


def available_flow_types() -> list[str]:
    return sorted(EXECUTORS)


def _now() -> datetime:
    return datetime.now(timezone.utc)


class FlowRuntime:
    """Runs the flows of one gateway (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.catalog = engine.catalog
        self.store = engine.store
        self.settings = engine.settings
        self.flows = FlowStore(self.settings.catalog_target)
        register(self.catalog, self.flows)
        available_flow_types()
        self._executors = {name: cls(self) for name, cls in EXECUTORS.items()}
        self._active: dict[int, ActiveFlow] = {}
        self._guard = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        workers = max(1, int(getattr(self.settings, "flow_workers", 2) or 2))
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tidegate-flow")
        self._tls = threading.local()
        self._last_pending_check = 0.0
        self._gone: dict[int, set[int]] = {}  # flow id -> oids of its source tables being dropped

    @property
    def node(self) -> str:
        """Where this gateway listens (the address bound): flows' ``flownode_addrs``."""
        return self.engine.events.gateway

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        with self._guard:
            if self._thread is not None:
                return
            for f in self.flows.list():
                self._adopt(f)
            self._thread = threading.Thread(target=self._loop, name="tidegate-flow-scheduler", daemon=True)
            self._thread.start()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake.set()
        with self._guard:
            flows = list(self._active.values())
        for af in flows:
            self._halt(af, dropped=False)
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.flows.close()

    def _adopt(self, f: FlowDef) -> ActiveFlow:
        af = ActiveFlow(f)
        af.stats = self.flows.stats(f.flow_id)
        if not f.pending:
            af.stats.start_time = _now()
            af.stats.node = self.node
            if af.stats.status == "pending":
                af.stats.status = "active"
            self.flows.save_stats(f.flow_id, af.stats)
        with self._guard:
            self._active[f.flow_id] = af
        if not f.pending:
            self._executor(f).start(af)
        return af

    def _executor(self, f: FlowDef) -> FlowExecutor:
        ex = self._executors.get(f.flow_type)
        if ex is None:
            raise SqlError("0A000", f"flow_type '{f.flow_type}' is not available",
                           hint=f"Available: {', '.join(sorted(self._executors))}.")
        return ex

    def has_executor(self, flow_type: str) -> bool:
        return flow_type in self._executors

    # -- events -----------------------------------------------------------------------------------

    def event(self, type_: str, f: FlowDef, user: str | None = None, **payload: Any) -> None:
        """Record a flow event (engine.events): which flow, its sink and mode, and ``payload``."""
        self.engine.events.record(type_, object=f"{f.schema}.{f.name}", user=user, payload={
            "flow": f.name, "flow_id": f.flow_id, "sink": f"{f.sink_schema}.{f.sink_table}",
            "flow_type": f.flow_type, **payload})

    # -- per-thread engine sessions ---------------------------------------------------------------

    def session(self) -> EngineSession:
        s = getattr(self._tls, "session", None)
        if s is None:
            s = self._tls.session = self.engine.open_session()
        return s

    def session_info(self, f: FlowDef) -> SessionInfo:
        # A flow runs on its own behalf: its owner's privileges were checked at CREATE FLOW.
        # WITH (spark_writes = ...) chooses the sink's writer as tidegate.spark_writes does a statement's
        return SessionInfo(settings={"search_path": f.search_path,
                                     "tidegate.spark_writes": f.options.get("spark_writes", "auto")}, internal=True)

    # -- planning --------------------------------------------------------------------------------

    def prepare(self, af: ActiveFlow, session: EngineSession) -> tuple[FlowPlan, TableDef]:
        """The flow's plan and sink, re-planned when a source's definition changed; the sink is
        created again (and rebuilt whole) if it was dropped."""
        f = af.flow
        tree = parse_query(f.query)
        info = self.session_info(f)
        sources, missing = find_sources(self.catalog, tree, info, f.schema)
        if missing:
            raise SqlError("42P01", f"source table(s) of flow \"{f.name}\" do not exist: {', '.join(missing)}")
        key = tuple((t.oid, tuple((c.name, c.type) for c in t.columns)) for t in sources)
        if af.plan is None or af.plan_key != key:
            af.plan = analyze(session, tree, info, sources)
            af.plan_key = key
        sink = self.catalog.get_table(f.sink_schema, f.sink_table)
        if sink is None:
            sink = self.create_sink(sink_definition(af.plan, f.sink_schema, f.sink_table), f.owner)
            af.force_full = True
        elif sink.kind != "table":
            raise SqlError("42809", f'sink "{sink.qualified_name}" is not a table')
        else:
            check_sink(af.plan, sink)
        window = af.plan.window
        if window is not None and sink.time_index != sink_column_of(af.plan, sink, window.output):
            # Window rows can only be replaced through the sink's time index.
            af.plan.window = None
            af.plan.full_reason = f'the sink\'s time index is not the window column "{window.output}"'
        af.stats.execution = af.plan.execution
        af.sink = sink
        return af.plan, sink

    def create_sink(self, table: TableDef, owner: str | None) -> TableDef:
        schema = self.catalog.get_schema(table.schema)
        if schema is None:
            raise SqlError("3F000", f'schema "{table.schema}" does not exist')
        table.oid = self.catalog.next_oid()
        table.owner = owner
        table.location = self.store.location_for(schema.oid, table.oid)
        self.store.create(table)
        try:
            stored = self.catalog.create_table(table)
        except BaseException:
            self.store.drop(table.location)
            raise
        return stored or table

    # -- statements -------------------------------------------------------------------------------

    def add(self, f: FlowDef) -> None:
        """Start running a newly stored flow (its first run comes at once)."""
        af = self._adopt(f)
        af.next_due = 0.0
        self._wake.set()

    def remove(self, flow_id: int, *, dropped: bool = True) -> None:
        """Stop a flow's work and forget it; returns once no evaluation of it is running."""
        with self._guard:
            af = self._active.pop(flow_id, None)
        if af is not None:
            self._halt(af, dropped=dropped)

    def _halt(self, af: ActiveFlow, *, dropped: bool) -> None:
        af.stopped = True
        job = af.running_job
        if job is not None:
            spark, tag = job
            try:
                spark.interruptTag(tag)
                spark.sparkContext.cancelJobsWithTag(tag)
            except Exception:  # noqa: BLE001 - the job may have finished
                pass
        if not af.flow.pending:
            try:
                self._executor(af.flow).stop(af, dropped=dropped)
            except SqlError:
                pass
        with af.lock:  # wait for an evaluation in flight
            pass

    def get(self, flow_id: int) -> ActiveFlow | None:
        with self._guard:
            return self._active.get(flow_id)

    def updated(self, f: FlowDef) -> None:
        """A stored definition changed (COMMENT ON FLOW): keep the in-process copy current."""
        af = self.get(f.flow_id)
        if af is not None:
            af.flow = f

    def flush(self, f: FlowDef) -> int:
        """ADMIN FLUSH_FLOW: evaluate now over every pending change; the rows written."""
        if f.pending:
            raise SqlError("55000", f'flow "{f.name}" is pending: its source tables do not exist yet: '
                                    f"{', '.join(f.missing_sources)}")
        af = self.get(f.flow_id)
        if af is None:
            raise SqlError("42704", f'flow "{f.name}" does not exist')
        result = self._run(af, flush=True)
        return result.rows_written

    def nudge(self) -> None:
        """A table was created: look at pending flows now rather than at the next poll."""
        self._last_pending_check = 0.0
        self._wake.set()

    def activate_pending(self) -> None:
        """Activate pending flows whose sources all exist now (synchronously)."""
        with self._guard:
            pending = [af for af in self._active.values() if af.flow.pending]
        for af in pending:
            self._try_activate(af)

    # -- the scheduler -----------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(TICK_S)
            self._wake.clear()
            if self._stop.is_set():
                return
            now = time.monotonic()
            try:
                if now - self._last_pending_check >= PENDING_POLL_S:
                    self._last_pending_check = now
                    with self._guard:
                        has_pending = any(af.flow.pending for af in self._active.values())
                    if has_pending:
                        self._pool.submit(self.activate_pending)
                with self._guard:
                    due = [af for af in self._active.values()
                           if not af.flow.pending and not af.running and not af.stopped and af.next_due <= now]
                for af in due:
                    ex = self._executors.get(af.flow.flow_type)
                    if ex is None or not ex.periodic:
                        continue
                    af.running = True
                    self._pool.submit(self._scheduled, af)
            except Exception:  # noqa: BLE001 - the scheduler must survive anything
                if self._stop.is_set():
                    return  # the pool refuses work while shutting down
                log.exception("flow scheduler tick failed")

    def _interval(self, f: FlowDef) -> float:
        if f.eval_interval:
            return float(f.eval_interval)
        return float(getattr(self.settings, "flow_default_interval_s", 5.0) or 5.0)

    def _scheduled(self, af: ActiveFlow) -> None:
        try:
            self._run(af, flush=False)
        except FlowCancelled:
            pass
        except SqlError:
            pass  # recorded in the statistics; retried with backoff
        except Exception:  # noqa: BLE001 - recorded; a flow never takes the runtime down
            log.exception("flow %s failed", af.flow.name)
        finally:
            af.running = False

    def _run(self, af: ActiveFlow, *, flush: bool) -> RunResult:
        with af.lock:
            af.check_cancelled()
            if not flush and af.next_due > time.monotonic():
                # An ADMIN FLUSH_FLOW ran between scheduling and now and did this run's work; a
                # run here would take changes made since, which the next flush should report.
                return RunResult(0, changed=False)
            started = time.monotonic()
            try:
                # A flush has a statement waiting on it: it keeps the interactive pool.
                pool = nullcontext() if flush else background_jobs(self.engine.runtime.wait())
                with pool:
                    result = self._executor(af.flow).run(af, flush=flush)
            except FlowCancelled:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is recorded
                if af.stopped:
                    raise FlowCancelled(af.flow.name) from None
                err = exc if isinstance(exc, SqlError) else SqlError("XX000", f"flow evaluation failed: {exc}")
                af.failures += 1
                backoff = min(MAX_BACKOFF_S, 2.0 ** (af.failures - 1))
                af.next_due = time.monotonic() + backoff
                af.plan = None  # re-plan on retry: the query may no longer fit its sources
                af.stats.status = "error"
                af.stats.last_error = err.message
                af.stats.failures = af.failures
                self.flows.save_stats(af.flow.flow_id, af.stats)
                log.warning("flow %s failed (retry in %.0f s): %s", af.flow.name, backoff, err.message)
                self.event(ev.FLOW_FAILED, af.flow, error=err.message, sqlstate=err.sqlstate, failures=af.failures,
                           retry_in_s=backoff, trigger="ADMIN FLUSH_FLOW" if flush else "schedule",
                           duration_s=round(time.monotonic() - started, 3))
                raise err from None
            af.next_due = started + self._interval(af.flow)
            if result.changed or af.failures or af.stats.status != "active":
                if af.failures:
                    self.event(ev.FLOW_RECOVERED, af.flow, failures=af.failures, last_error=af.stats.last_error,
                               rows_written=result.rows_written, rows_deleted=result.rows_deleted)
                af.failures = 0
                af.stats.status = "active"
                af.stats.last_error = None
                af.stats.failures = 0
                if result.changed:
                    af.stats.runs += 1
                    af.stats.rows_written += result.rows_written
                    af.stats.rows_deleted += result.rows_deleted
                    af.stats.last_execution_time = _now()
                self.flows.save_stats(af.flow.flow_id, af.stats)
            return result

    # -- pending flows -----------------------------------------------------------------------------

    def _try_activate(self, af: ActiveFlow) -> None:
        with af.lock:
            if af.stopped or not af.flow.pending:
                return
            f = af.flow
            info = self.session_info(f)
            tree = parse_query(f.query)
            sources, missing = find_sources(self.catalog, tree, info, f.schema)
            with self._guard:
                gone = self._gone.get(f.flow_id, set())
            # a source being dropped under the flow is still listed until its DROP completes
            missing += [t.qualified_name for t in sources if t.oid in gone and t.qualified_name not in missing]
            if missing:
                if missing != f.missing_sources:
                    f.missing_sources = missing
                    self.flows.update(f)
                return
            try:
                session = self.session()
                plan = analyze(session, tree, info, sources)
                sink_name = (f.sink_schema, f.sink_table)
                if any((t.schema, t.name) == sink_name for t in sources):
                    raise SqlError("42P16", f'flow "{f.name}" cannot sink into its own source table '
                                            f'"{f.sink_schema}.{f.sink_table}"')
                sink = self.catalog.get_table(*sink_name)
                if sink is None:
                    self.create_sink(sink_definition(plan, f.sink_schema, f.sink_table), f.owner)
                else:
                    check_sink(plan, sink)
            except Exception as exc:  # noqa: BLE001 - recorded; activation is retried at the next poll
                af.stats.last_error = exc.message if isinstance(exc, SqlError) else str(exc)
                self.flows.save_stats(f.flow_id, af.stats)
                return
            f.sources = [t.qualified_name for t in sources]
            f.source_ids = [t.oid for t in sources]
            f.missing_sources = []
            self.flows.update(f)
            with self._guard:
                self._gone.pop(f.flow_id, None)
            self.flows.save_progress(f.flow_id, FlowProgress())
            af.plan = None
            af.stats = FlowStats(status="active", start_time=_now(), node=self.node, execution=plan.execution)
            self.flows.save_stats(f.flow_id, af.stats)
            af.next_due = 0.0
            self._executor(f).start(af)
            log.info("flow %s activated: its sources exist now", f.name)
            self.event(ev.FLOW_ACTIVATED, f, sources=f.sources, reason="its source tables exist now")
        self._wake.set()

    # -- dependencies --------------------------------------------------------------------------------

    def flows_reading(self, table: TableDef) -> list[FlowDef]:
        """Flows that read ``table`` (active ones by oid, pending ones by name)."""
        out = []
        for f in self.flows.list():
            if table.oid in f.source_ids or (f.pending and table.qualified_name in f.sources):
                out.append(f)
        return out

    def suspend(self, f: FlowDef, dropped: list[TableDef]) -> list[str]:
        """A source table of ``f`` is being dropped: stop its work and keep it pending until a
        table of that name exists again (then it is rebuilt from the new table's rows, see
        :meth:`_try_activate`). Returns the tables it waits for."""
        gone = [t for t in dropped if t.oid in f.source_ids or (f.pending and t.qualified_name in f.sources)]
        names = [t.qualified_name for t in gone]
        self.remove(f.flow_id, dropped=True)
        with self._guard:
            self._gone[f.flow_id] = self._gone.get(f.flow_id, set()) | {t.oid for t in gone}
        f.missing_sources = sorted(set(f.missing_sources) | set(names))
        f.source_ids = []
        f.epoch += 1
        stored = self.flows.update(f)
        self.flows.save_progress(f.flow_id, FlowProgress())
        stats = self.flows.stats(f.flow_id)
        stats.status = "pending"
        stats.execution = ""
        self.flows.save_stats(f.flow_id, stats)
        self._adopt(stored)
        self.event(ev.FLOW_SUSPENDED, f, waiting_for=names,
                   reason="its source table was dropped; it resumes, rebuilding its sink, when the table exists again")
        return names

    def drop_flow(self, f: FlowDef, *, user: str | None = None, reason: str = "DROP FLOW") -> None:
        self.remove(f.flow_id)
        try:
            self.flows.drop(f.name)
        except SqlError:
            pass
        self.event(ev.FLOW_DROPPED, f, user, reason=reason, sources=f.sources)
