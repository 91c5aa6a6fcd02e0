"""Continuous flows (``flow_type = 'streaming'``) on Spark Structured Streaming.

One Structured Streaming query per flow, supervised by one thread of this gateway:

* **source**: the source table's change feed through :mod:`engine.flows.cdf_source` (offsets are
  Delta versions; the first micro-batch is the backfill of the rows that existed before the flow);
* **projections/filters** (no aggregation): a micro-batch of inserts only is run through the flow's
  query (the source replaced by the batch) and upserted into the sink; a micro-batch with deletes
  or update pre-images re-evaluates the time-index points it touched from the source snapshot and
  replaces them in the sink (or the whole query when the output has no time column);
* **windowed aggregations**: the change rows are grouped by their window (``window()`` on the time
  column for fixed strides, the column itself or ``date_trunc`` otherwise) in a stateful
  aggregation (RocksDB state store, output mode *update*, watermark = EXPIRE AFTER). Each batch
  thus yields exactly the windows it touched and not yet expired; those windows are re-evaluated
  from the source's snapshot and replace their rows in the sink (upsert, groups that vanished are
  deleted, ``update_at`` set). Recomputing touched windows instead of folding deltas into state
  is deliberate: it makes deletes and updates in the source retract correctly for every
  aggregate (min/max, count distinct, ...) at the cost of re-reading those windows' rows;
* **sink**: ``foreachBatch`` writes each micro-batch in ONE Delta commit carrying the app
  transaction ``(tidegate-stream-<flow id>, batch id + 1)``; a batch replayed after a crash whose
  commit already landed is skipped, so the sink has no lost and no duplicated rows. The first
  commit a sink gets from a flow (backfill, OR REPLACE, a re-created sink) rebuilds it whole;
* **EXPIRE AFTER**: the watermark on the time column; change rows older than it are dropped by
  Spark (counted as late rows) and their windows are not re-evaluated;
* **checkpoints** under ``<data-dir>/flows/<flow id>/`` (offsets, commits, state); a restart of
  the gateway resumes from there and catches up with the versions committed meanwhile. DROP FLOW
  stops the query and removes them. A failed query restarts from its checkpoint with backoff
  (1 s doubling to 60 s); other flows are unaffected.

The default mode rule (:func:`decide_flow_type`): a flow over a single append-mostly source whose
query is a projection/filter or a windowed aggregation runs as streaming; anything else as
batching. ``WITH (flow_type = 'streaming')`` on a query streaming cannot run incrementally is
refused (:func:`streamable`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from sqlglot import exp

from catalog.store import TableDef
from engine import ttl
from engine.events import FLOW_FAILED, FLOW_REBUILT, FLOW_RECOVERED
from engine.flows import cdf_source
from engine.flows.batch import BatchExecutor, _sink_frame, _to_sink_rows
from engine.flows.plan import FlowPlan, check_sink, table_refs, upsert_keys
from engine.flows.seam import ActiveFlow, RunResult
from engine.flows.windows import _FIXED_UNITS, _WEEK_ORIGIN, merge_ranges, times_to_micros
from engine.spark import background_jobs
from engine.sparkwrite import quoted
from engine.storage import WRITER_PROPERTIES, all_new, dedupe_last, key_match
from tidegate.errors import SqlError
from tidegate.pgtypes import TEXT, ColumnType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from engine.executor import EngineSession
    from engine.flows.runtime import FlowRuntime

log = logging.getLogger(__name__)

# Micro-batch trigger: 250 ms keeps freshness well under a second; with many streaming flows on
# one gateway each trigger is stretched (250 ms per 4 flows) so queries are not starved.
TRIGGER_MS = 250
FLOWS_PER_TRIGGER_STEP = 4
# A micro-batch costs Spark ~0.15-0.3 s of CPU whatever its size (planning, offset and commit
# logs, a Python read task, the sink commit). The gateway admits at most this many micro-batches
# a second across all streaming flows, in turn: one flow keeps its 250 ms cadence, ten flows
# each get a batch every ~2.5 s, and statements keep most of the machine.
MAX_BATCHES_PER_SECOND = 4.0
STATE_STORE_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# Checkpoints live on the local disk. Spark's default (FileContext) manager creates and renames
# each offset/commit file through calls that Hadoop, without its native library, serves by
# forking `chmod` and `readlink`. The FileSystem manager renames in-process (one fork fewer per
# file; the raw local file system, which would save the rest, breaks the RocksDB state store).
LOCAL_CHECKPOINT_CONF = {
    "spark.sql.streaming.checkpointFileManagerClass":
        "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
}
MAX_BACKOFF_S = 60.0
FLUSH_TIMEOUT_S = 300.0
FLUSH_GIVE_UP_FAILURES = 6  # consecutive query failures after which ADMIN FLUSH_FLOW reports the error
EVENT_TIME = "__tg_event_time"
WINDOW_KEY = "__tg_window"
CHANGE_COLUMN = "__tg_change"
# A projection flow's micro-batch of more rows than this is written on Spark (Delta Lake's MERGE),
# not collected into the gateway (flow option spark_writes 'auto'; 'on': every batch, 'off':
# none): about the 8 MB a statement's result may have before Spark writes it
# (engine.sparkwrite.SPARK_WRITE_BYTES), for rows of ~80 bytes.
STREAM_COLLECT_ROWS = 100_000
# A batch on Spark with deletes re-evaluates the time points it touched; past this many distinct
# points, the flow's whole query.
MAX_DELETED_POINTS = 10_000
# The words a micro-batch fails with when the source's columns changed under the running query
# (the supervisor starts the flow over, see StreamingExecutor._new_epoch).
SOURCE_CHANGED = "tidegate: the flow's source table changed its columns"
# Append-mostly: at most this share of a source's recent commits delete or update rows.
APPEND_MOSTLY_MAX_SHARE = 0.1


def app_id(flow_id: int, epoch: int = 0) -> str:
    """The Delta app-transaction id of a streaming flow's sink commits (version = batch id + 1)."""
    return f"tidegate-stream-{flow_id}" if not epoch else f"tidegate-stream-{flow_id}.{epoch}"


def checkpoint_dir(data_dir: Path | str, flow_id: int) -> Path:
    return Path(data_dir) / "flows" / str(flow_id)


# -- the mode rule --------------------------------------------------------------------------------

def streamable(plan: FlowPlan) -> str | None:
    """None when streaming can run ``plan`` incrementally, else why not."""
    tree = plan.query_tree
    if len(plan.sources) != 1:
        return f"a streaming flow reads exactly one source table; this query reads {len(plan.sources)}"
    if not isinstance(tree, exp.Select):
        return "the query is not a single SELECT"
    if tree.args.get("with") is not None or any(True for _ in tree.find_all(exp.Subquery)):
        return "subqueries and WITH need the whole source"
    if tree.args.get("joins"):
        return "joins need the whole source"
    if len(table_refs(tree)) != 1:
        return "the source table is read more than once"
    if any(True for _ in tree.find_all(exp.Window)):
        return "window functions need whole partitions"
    if tree.args.get("limit") is not None or tree.args.get("offset") is not None:
        return "LIMIT/OFFSET depends on all rows"
    distinct = tree.args.get("distinct")
    if plan.aggregating or distinct is not None:
        if plan.window is None:
            what = "DISTINCT" if distinct is not None and tree.args.get("group") is None else "an aggregation"
            return (f"{what} without a time window over the source is not incremental "
                    f"({plan.full_reason or 'no usable time window'})")
        if plan.window.table.oid != plan.sources[0].oid:
            return "the time window is not on the source table"
    return None


def append_mostly(location: str | None) -> bool:
    """Whether at most a small share of the table's recent commits deleted or updated rows."""
    if not location:
        return False
    try:
        history = DeltaTable(location).history(100)
    except Exception:  # noqa: BLE001 - unreadable: not evidence of updates
        return True
    ops = [str(h.get("operation", "")).upper() for h in history]
    changes = sum(1 for op in ops if op in ("DELETE", "UPDATE"))
    data_ops = sum(1 for op in ops if op not in ("CREATE TABLE", "OPTIMIZE", "VACUUM START", "VACUUM END",
                                                 "SET TBLPROPERTIES", "ADD COLUMN", ttl.OPERATION))
    return data_ops == 0 or changes / data_ops <= APPEND_MOSTLY_MAX_SHARE


def decide_flow_type(plan: FlowPlan, explicit: str | None, eval_interval: int | None = None) -> str:
    """The flow's mode.

    ``explicit`` (``WITH (flow_type = ...)``) wins; streaming is refused, with the reason, when it
    cannot run the query incrementally. Otherwise streaming is the default for a projection/filter
    or a windowed aggregation over ONE append-mostly source (at most 10% of its recent commits
    delete or update rows) without EVAL INTERVAL (a cadence asks for batches); everything else
    runs as batching. The chosen mode is the ``flow_type`` of INFORMATION_SCHEMA.FLOWS.options.
    """
    why = streamable(plan)
    instant = [t.qualified_name for t in plan.sources if ttl.of(t).instant]  # GreptimeDB's flow-only source
    if instant:
        # GreptimeDB: a source with ttl = 'instant' keeps no rows for batches to re-read; its flows
        # run in streaming mode (the rows reach the flow as they are written).
        if explicit == "batching" or why is not None:
            reason = ("WITH (flow_type = 'batching') was given" if explicit == "batching" else
                      f"this query cannot run as a streaming flow: {why}")
            raise SqlError("0A000", f"source table {', '.join(instant)} has ttl = 'instant', so its flows must run "
                                    f"in streaming mode, but {reason}",
                           hint="Keep the source's rows (a ttl other than 'instant') to run the flow in batching "
                                "mode, or make the query a projection/filter or a windowed aggregation over "
                                "that one table.")
        return "streaming"
    if explicit == "streaming":
        if why is not None:
            raise SqlError("0A000", f"this flow cannot run as a streaming flow: {why}",
                           hint="Use WITH (flow_type = 'batching') to re-evaluate it in batches.")
        return "streaming"
    if explicit:
        return explicit
    if why is None and eval_interval is None and append_mostly(plan.sources[0].location):
        return "streaming"
    return "batching"


# -- per-flow state ---------------------------------------------------------------------------------

@dataclass
class _Stream:
    """The supervised query of one flow."""

    af: ActiveFlow
    checkpoint: Path
    stop: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    query: StreamingQuery | None = None
    session: EngineSession | None = None
    spark: SparkSession | None = None
    rows_written: int = 0
    error: SqlError | None = None
    failures: int = 0
    seen_batches: set[int] = field(default_factory=set)
    behind_since: float | None = None
    # (end source version, rows written) of recent batches; FLUSH_FLOW sums those it covered.
    written: list[tuple[int, int]] = field(default_factory=list)
    flushed_upto: int = -1
    window_counts: dict[int, int] = field(default_factory=dict)  # window start -> state count seen
    current_end: int = -1


def _now() -> datetime:
    return datetime.now(timezone.utc)


class StreamingExecutor(BatchExecutor):
    """``flow_type = 'streaming'``: a supervised Structured Streaming query per flow."""

    flow_type = "streaming"
    periodic = False

    def __init__(self, runtime: FlowRuntime) -> None:
        super().__init__(runtime)
        self._streams: dict[int, _Stream] = {}
        self._guard = threading.Lock()
        self._next_slot = 0.0  # monotonic time of the next free micro-batch slot

    # -- FlowExecutor -------------------------------------------------------------------------------

    def start(self, af: ActiveFlow) -> None:
        """Launch the supervisor; it starts the query once Spark is up (returns at once)."""
        fid = af.flow.flow_id
        with self._guard:
            old = self._streams.get(fid)
            if old is not None and old.thread is not None and old.thread.is_alive():
                return
            st = _Stream(af, checkpoint_dir(self.runtime.settings.data_dir, fid))
            self._streams[fid] = st
        st.thread = threading.Thread(target=self._supervise, args=(st,), name=f"tidegate-stream-{fid}", daemon=True)
        st.thread.start()

    def stop(self, af: ActiveFlow, *, dropped: bool) -> None:
        with self._guard:
            st = self._streams.pop(af.flow.flow_id, None)
        if st is None:
            if dropped:
                shutil.rmtree(checkpoint_dir(self.runtime.settings.data_dir, af.flow.flow_id), ignore_errors=True)
            return
        st.stop.set()
        q = st.query
        if q is not None:
            try:
                q.stop()
            except Exception:  # noqa: BLE001 - stopping a failed query
                pass
        if st.thread is not None and st.thread is not threading.current_thread():
            st.thread.join(timeout=60)
        if st.session is not None:
            try:
                st.session.close()
            except Exception:  # noqa: BLE001
                pass
        if dropped:
            shutil.rmtree(st.checkpoint, ignore_errors=True)

    def run(self, af: ActiveFlow, *, flush: bool) -> RunResult:
        """ADMIN FLUSH_FLOW: wait until every source commit made before the call is in the sink."""
        with self._guard:
            st = self._streams.get(af.flow.flow_id)
        if st is None:
            raise SqlError("55000", f'streaming flow "{af.flow.name}" is not running')
        rt = self.runtime
        targets = [rt.store.version(location) for location in self._source_locations(af)]
        target = max(targets) if targets else -1
        deadline = time.monotonic() + FLUSH_TIMEOUT_S
        while True:
            if st.stop.is_set():
                raise SqlError("57014", f'flow "{af.flow.name}" was stopped while flushing')
            if st.started.is_set() and committed_version(st.checkpoint) >= target:
                self._await_progress(st)
                rows = sum(n for end, n in st.written if end > st.flushed_upto)
                st.flushed_upto = max(st.flushed_upto, target)
                return RunResult(rows, changed=False)
            q = st.query
            # A transient failure restarts from the checkpoint and the wait goes on; a flow that
            # keeps failing reports its error.
            if st.error is not None and st.failures >= FLUSH_GIVE_UP_FAILURES and (q is None or not q.isActive):
                raise SqlError(st.error.sqlstate, st.error.message,
                               hint="The flow restarts from its checkpoint with backoff; see SHOW FLOW STATUS.")
            if time.monotonic() > deadline:
                raise SqlError("57014", f'ADMIN FLUSH_FLOW timed out waiting for streaming flow "{af.flow.name}"')
            time.sleep(0.05)

    def _source_locations(self, af: ActiveFlow) -> list[str]:
        if af.plan is not None:
            return [t.location for t in af.plan.sources if t.location]
        ids = set(af.flow.source_ids)
        return [t.location for t in self.runtime.catalog.list_tables() if t.oid in ids and t.location]

    # -- supervision --------------------------------------------------------------------------------

    def _supervise(self, st: _Stream) -> None:
        af = st.af
        while not st.stop.is_set():
            try:
                self._run_query(st)
                if st.stop.is_set():
                    return
                raise RuntimeError("the streaming query stopped")
            except Exception as exc:  # noqa: BLE001 - every failure is recorded and retried
                if st.stop.is_set() or af.stopped:
                    return
                st.query = None
                if SOURCE_CHANGED in str(exc):
                    af.plan = None
                    self._new_epoch(st, "its source table's columns changed (ALTER TABLE)")
                    continue
                err = exc if isinstance(exc, SqlError) else self._cause(af, exc)
                st.error = err
                st.failures += 1
                backoff = min(MAX_BACKOFF_S, 2.0 ** (st.failures - 1))
                af.plan = None
                af.stats.status = "error"
                af.stats.last_error = err.message
                af.stats.failures = st.failures
                self._save_stats(af)
                log.warning("streaming flow %s failed (restart in %.0f s): %s", af.flow.name, backoff, err.message)
                self.runtime.event(FLOW_FAILED, af.flow, error=err.message, sqlstate=err.sqlstate,
                                   failures=st.failures, retry_in_s=backoff, trigger="streaming query")
                st.stop.wait(backoff)

    def _new_epoch(self, st: _Stream, why: str) -> None:
        """Start the flow over: a fresh checkpoint (its first micro-batch is the backfill of the
        source's current rows) under a new epoch, whose app-transaction id the sink has never
        seen, so the first commit rebuilds the sink whole from the query."""
        af = st.af
        # The epoch is stored first: a crash before the checkpoint is gone resumes the old
        # checkpoint under the new id (the first commit still rebuilds); the other order would
        # restart batch ids under the old id, whose versions the sink has seen (skipped as replays).
        af.flow.epoch += 1
        self.runtime.flows.update(af.flow)
        shutil.rmtree(st.checkpoint, ignore_errors=True)
        st.window_counts.clear()
        st.written.clear()
        st.seen_batches.clear()
        st.current_end = -1
        log.info("streaming flow %s starts epoch %d, rebuilding its sink: %s", af.flow.name, af.flow.epoch, why)
        self.runtime.event(FLOW_REBUILT, af.flow, epoch=af.flow.epoch, reason=why)

    def _check_source(self, plan: FlowPlan) -> None:
        """Refuse a micro-batch once the source's columns differ from those the running query was
        planned with. The change feed the query reads gives the old and new rows in the schema it
        started with: after a RENAME COLUMN (or a DROP and ADD of one name) its rows no longer
        mean what the query says, and the sink's earlier rows may disagree with the query too.
        Nothing of the batch is committed; the supervisor starts the flow over, and the new
        query's plan either fails (42703: the flow waits in error, as a batching flow does) or
        rebuilds the sink."""
        for planned in plan.sources:
            current = self.runtime.catalog.get_table(planned.schema, planned.name)
            if current is None or current.oid != planned.oid:
                continue  # dropped: the flow is suspended by the DROP itself
            if [(c.name, c.type) for c in current.columns] != [(c.name, c.type) for c in planned.columns]:
                raise RuntimeError(f"{SOURCE_CHANGED}: {planned.qualified_name}")

    def _cause(self, af: ActiveFlow, exc: Exception) -> SqlError:
        """The reason a micro-batch failed, as the user can act on it: a sink altered under the
        running query (a column dropped, a type changed) fails inside the writer with the storage
        layer's wording; the flow's own sink check names what no longer fits."""
        sink = self.runtime.catalog.get_table(af.flow.sink_schema, af.flow.sink_table)
        if af.plan is not None and sink is not None and sink.kind == "table":
            try:
                check_sink(af.plan, sink)
            except SqlError as mismatch:
                return mismatch
        return SqlError("XX000", f"streaming flow failed: {_short(exc)}")

    def _run_query(self, st: _Stream) -> None:
        rt = self.runtime
        af = st.af
        rt.engine.runtime.wait(timeout=None)
        if st.session is None:
            st.session = rt.engine.open_session()
        plan, sink = rt.prepare(af, st.session)
        why = streamable(plan)
        if why is not None:
            raise SqlError("0A000", f"this flow cannot run as a streaming flow: {why}",
                           hint="Recreate it WITH (flow_type = 'batching').")
        if st.spark is None:
            spark = rt.engine.runtime.new_session()
            spark.conf.set("spark.sql.shuffle.partitions", "1")
            spark.conf.set("spark.sql.streaming.stateStore.providerClass", STATE_STORE_PROVIDER)
            spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
            spark.conf.set("spark.sql.adaptive.enabled", "false")
            for key, value in LOCAL_CHECKPOINT_CONF.items():
                spark.conf.set(key, value)
            cdf_source.register(spark)
            st.spark = spark
        with background_jobs(st.spark):
            query = self._build(st, plan)
        st.query = query
        if st.stop.is_set():  # stopped while starting: stop() may have missed the query
            query.stop()
            return
        st.started.set()
        while not st.stop.is_set():
            if query.awaitTermination(0.5):
                break
            self._progress(st)
        self._progress(st)
        if st.stop.is_set():
            return
        exc = query.exception()
        if exc is not None:
            raise exc

    def _build(self, st: _Stream, plan: FlowPlan) -> StreamingQuery:
        from engine import spark as sparkmod
        from pyspark.sql import functions as F  # noqa: N812

        af = st.af
        spark = st.spark
        assert spark is not None
        source = plan.sources[0]
        ddl = sparkmod.spark_schema_ddl([(c.name, c.type) for c in source.columns])
        ddl += f", `{cdf_source.CHANGE_TYPE}` STRING, `{cdf_source.COMMIT_VERSION}` BIGINT"
        df = spark.readStream.format(cdf_source.NAME).schema(ddl).option("path", source.location).load()
        st.checkpoint.mkdir(parents=True, exist_ok=True)
        writer_df: DataFrame
        if plan.aggregating:
            window = plan.window
            assert window is not None
            df = df.withColumn(EVENT_TIME, F.col(f"`{window.column}`").cast("timestamp"))
            if af.flow.expire_after is not None:
                df = df.withWatermark(EVENT_TIME, f"{int(af.flow.expire_after)} seconds")
            fn = window.fn
            stride = fn.stride_us if fn.kind == "date_bin" else _FIXED_UNITS.get(fn.unit, 0) if fn.kind == "date_trunc" else 0
            origin = fn.origin_us if fn.kind == "date_bin" else (_WEEK_ORIGIN if fn.unit == "week" else 0)
            if stride:
                grouped = df.groupBy(F.window(F.col(EVENT_TIME), f"{stride} microseconds",
                                              startTime=f"{origin % stride} microseconds").alias(WINDOW_KEY))
                writer_df = grouped.agg(F.count(F.lit(1)).alias("n")).select(
                    F.col(f"{WINDOW_KEY}.start").alias(WINDOW_KEY), "n")
            else:
                key = F.date_trunc(fn.unit, F.col(EVENT_TIME)) if fn.kind == "date_trunc" else F.col(EVENT_TIME)
                writer_df = df.groupBy(key.alias(WINDOW_KEY)).agg(F.count(F.lit(1)).alias("n"))
            handler = self._windows_batch
            mode = "update"
        else:
            if plan.window is not None and af.flow.expire_after is not None:
                df = df.withColumn(EVENT_TIME, F.col(f"`{plan.window.column}`").cast("timestamp"))
                df = df.withWatermark(EVENT_TIME, f"{int(af.flow.expire_after)} seconds")
            writer_df = self._project_stream(st, plan, df)
            handler = self._rows_batch
            mode = "append"

        def on_batch(batch: DataFrame, batch_id: int) -> None:
            self._await_turn(st)
            self._check_source(plan)
            handler(st, batch, int(batch_id))

        return (writer_df.writeStream.outputMode(mode).foreachBatch(on_batch)
                .option("checkpointLocation", str(st.checkpoint))
                .queryName(f"tidegate_flow_{af.flow.flow_id}")
                .trigger(processingTime=f"{self._trigger_ms()} milliseconds").start())

    def _await_turn(self, st: _Stream) -> None:
        """Wait for this micro-batch's slot in the gateway-wide budget (MAX_BATCHES_PER_SECOND)."""
        with self._guard:
            now = time.monotonic()
            slot = max(now, self._next_slot)
            self._next_slot = slot + 1.0 / MAX_BATCHES_PER_SECOND
        if slot > now:
            st.stop.wait(slot - now)

    def _trigger_ms(self) -> int:
        with self._guard:
            n = len(self._streams)
        return TRIGGER_MS * max(1, -(-n // FLOWS_PER_TRIGGER_STEP))

    # -- micro-batches --------------------------------------------------------------------------------

    def _landed_version(self, sink: TableDef, aid: str) -> int | None:
        """The last batch version committed to the sink (None: the flow never wrote to it)."""
        return self.runtime.store.app_version(sink.location or "", aid)

    def _windows_batch(self, st: _Stream, batch: DataFrame, batch_id: int) -> None:
        """Re-evaluate the windows this micro-batch touched; one sink commit."""
        af = st.af
        plan, sink = af.plan, af.sink
        assert plan is not None and sink is not None and plan.window is not None
        aid, version = app_id(af.flow.flow_id, af.flow.epoch), batch_id + 1
        st.current_end, watermark = batch_offsets(st.checkpoint, batch_id)
        landed = self._landed_version(sink, aid)
        if landed is not None and landed >= version:
            return
        keys = batch.toArrow()
        full = landed is None
        fn = plan.window.fn
        micros = times_to_micros(keys.column(WINDOW_KEY)).to_pylist()
        counts = [int(n or 0) for n in keys.column("n").to_pylist()]
        seen = dict(st.window_counts)
        for t, n in zip(micros, counts):
            if t is not None:
                st.window_counts[t] = n
        if len(st.window_counts) > 10000:
            for t in sorted(st.window_counts)[:5000]:
                del st.window_counts[t]
        ranges = None
        if not full:
            starts = fn.starts(pa.array(micros, pa.int64()))
            if watermark is not None:
                # Windows closed by the watermark (EXPIRE AFTER) keep their sink rows: the change
                # rows that reopened them are late, counted and ignored. The state's count is
                # cumulative, so the late rows are its growth since the window was last seen.
                closed = {s for s in starts if fn.end(s) <= watermark}
                for t, n in zip(micros, counts):
                    if t is not None and fn.start_of(t) in closed:
                        st.af.stats.late_rows += max(1, n - seen.get(t, 0))
                starts = [s for s in starts if s not in closed]
            if not starts:
                self._batch_done(st, 0, 0)
                return
            ranges = merge_ranges(fn, starts)
        self._recompute(st, plan, sink, ranges, aid, version)

    def _recompute(self, st: _Stream, plan: FlowPlan, sink: TableDef, ranges: list | None, aid: str,
                   version: int) -> None:
        af = st.af
        assert st.session is not None
        rt = self.runtime
        snaps = {str(t.oid): rt.store.snapshot(t.location) for t in plan.sources}
        data = self._evaluate(st.session, af, plan, sink, snaps, ranges)
        window = plan.window
        written, deleted = self._commit(sink, plan, data, ranges, window.output if window else None,
                                        window.column_type if window else None, aid, version)
        self._batch_done(st, written, deleted)

    def _project_stream(self, st: _Stream, plan: FlowPlan, df: DataFrame) -> DataFrame:
        """The flow's query applied to the change stream itself (the source replaced by it), with
        each output row's change type appended as ``__tg_change``: one Spark job per batch."""
        from engine.resolver import StatementResolver
        from engine.translate import ResolvedRelation, translate_query

        af = st.af
        source = plan.sources[0]
        spark = st.spark
        assert spark is not None and plan.query_tree is not None and st.session is not None
        view = f"tg_stream_src_{af.flow.flow_id}"
        df.createOrReplaceTempView(view)
        cols = [(c.name, c.type) for c in source.columns] + [(cdf_source.CHANGE_TYPE, ColumnType(TEXT))]
        rel = ResolvedRelation(source.schema, source.name, view, cols, None)
        overrides: dict[str, Any] = {}
        for ref in table_refs(plan.query_tree):
            db = ref.args.get("db")
            overrides[ref.name if db is None else f"{db.name}.{ref.name}"] = rel
        tree = plan.query_tree.copy()
        assert isinstance(tree, exp.Select)
        tree = tree.select(exp.alias_(exp.column(cdf_source.CHANGE_TYPE), CHANGE_COLUMN), copy=False)
        resolver = StatementResolver(st.session, self.runtime.session_info(af.flow), overrides, stored_rows=True)
        tq = translate_query(tree, resolver, [])
        return spark.sql(tq.spark_sql)

    def _rows_batch(self, st: _Stream, batch: DataFrame, batch_id: int) -> None:
        """A projection flow's micro-batch (already projected): inserts upsert into the sink;
        deletes re-evaluate the time points they touched (everything without a time column)."""
        import pyarrow.compute as pc

        af = st.af
        plan, sink = af.plan, af.sink
        assert plan is not None and sink is not None
        aid, version = app_id(af.flow.flow_id, af.flow.epoch), batch_id + 1
        st.current_end, watermark = batch_offsets(st.checkpoint, batch_id)
        landed = self._landed_version(sink, aid)
        if landed is not None and landed >= version:
            return
        if landed is None:
            self._recompute(st, plan, sink, None, aid, version)
            return
        mode = af.flow.options.get("spark_writes", "auto")
        data = None
        if mode == "off":
            data = batch.toArrow()
        elif mode == "auto":
            # At most one row past the limit is collected: a larger batch is written on Spark.
            data = batch.limit(STREAM_COLLECT_ROWS + 1).toArrow()
            if data.num_rows > STREAM_COLLECT_ROWS:
                data = None
        if data is None:
            if self._rows_batch_on_spark(st, batch, aid, version, watermark):
                return
            data = batch.toArrow()  # a sink column needs one of PostgreSQL's conversions
        window = plan.window
        if watermark is not None and window is not None and data.num_rows:
            # Change rows older than the watermark (EXPIRE AFTER) are late: counted, ignored.
            times = times_to_micros(data.column(window.output))
            keep = pc.fill_null(pc.greater_equal(times, pa.scalar(watermark, pa.int64())), True)
            late = data.num_rows - pc.sum(pc.cast(keep, pa.int64())).as_py()
            if late:
                af.stats.late_rows += int(late)
                data = data.filter(keep)
        if data.num_rows == 0:
            self._batch_done(st, 0, 0)
            return
        kinds = set(pc.unique(data.column(CHANGE_COLUMN)).to_pylist())
        if kinds & set(cdf_source.DELETE_TYPES):
            if window is None:
                self._recompute(st, plan, sink, None, aid, version)
                return
            starts = window.fn.starts(times_to_micros(data.column(window.output)))
            self._recompute(st, plan, sink, merge_ranges(window.fn, starts), aid, version)
            return
        result = data.select(list(range(len(plan.output_names))))
        written = self._upsert(sink, plan, _to_sink_rows(result, plan, sink), aid, version)
        self._batch_done(st, written, 0)

    def _rows_batch_on_spark(self, st: _Stream, batch: DataFrame, aid: str, version: int,
                             watermark: int | None) -> bool:
        """:meth:`_rows_batch` of a micro-batch left on Spark: late rows counted and dropped, one
        job that also tells whether the batch deletes; inserts only are upserted by Delta Lake's
        MERGE under the batch's app transaction (engine.sparkwrite.sink_merge), deletes
        re-evaluate the time points they touched. False when a sink column needs one of
        PostgreSQL's conversions (the collected path makes them).

        The batch is kept (memory, then disk) while its jobs run: each would otherwise read the
        source's changes and run the flow's query again."""
        from pyspark import StorageLevel

        batch = batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            return self._write_batch_on_spark(st, batch, aid, version, watermark)
        finally:
            batch.unpersist()

    def _write_batch_on_spark(self, st: _Stream, batch: DataFrame, aid: str, version: int,
                              watermark: int | None) -> bool:
        from pyspark.sql import functions as F  # noqa: N812

        af = st.af
        plan, sink = af.plan, af.sink
        assert plan is not None and sink is not None
        window = plan.window
        keep = F.lit(True)
        if watermark is not None and window is not None:
            # Change rows older than the watermark (EXPIRE AFTER) are late: counted, ignored.
            t = F.col(quoted(window.output))
            keep = t.isNull() | (F.unix_micros(t.cast("timestamp")) >= F.lit(watermark))
        kept = batch.where(keep)
        frame = _sink_frame(kept.select(*[F.col(quoted(n)) for n in plan.output_names]), plan, sink)
        if frame is None:
            return False
        deletes = F.col(quoted(CHANGE_COLUMN)).isin(*cdf_source.DELETE_TYPES)
        with self._tagged(af, batch.sparkSession):
            seen = batch.agg(F.count(F.lit(1)).alias("n"), F.count_if(~keep).alias("late"),
                             F.count_if(keep & deletes).alias("deletes")).first()
        late = int(seen["late"] or 0)
        af.stats.late_rows += late
        if int(seen["n"] or 0) == late:
            self._batch_done(st, 0, 0)
            return True
        if int(seen["deletes"] or 0):
            ranges = None
            if window is not None:
                with self._tagged(af, batch.sparkSession):
                    points = kept.select(quoted(window.output)).distinct().limit(MAX_DELETED_POINTS + 1).toArrow()
                if points.num_rows <= MAX_DELETED_POINTS:
                    ranges = merge_ranges(window.fn, window.fn.starts(times_to_micros(points.column(0))))
            self._recompute(st, plan, sink, ranges, aid, version)
            return True
        written, _ = self._commit_on_spark(sink, frame, upsert_keys(sink, plan), None, aid, version, af,
                                           keep_unmatched=True)
        self._batch_done(st, written, 0)
        return True

    def _upsert(self, sink: TableDef, plan: FlowPlan, data: pa.Table, aid: str, version: int) -> int:
        """Upsert ``data`` on the sink's keys in one commit carrying the app transaction."""
        rt = self.runtime
        location = sink.location
        assert location
        keys = upsert_keys(sink, plan)
        data = dedupe_last(data, keys)
        if data.num_rows == 0:
            return 0  # nothing to write: a replay of this batch is harmless
        with rt.store.writing(location) as dt:
            landed = dt.transaction_version(aid)
            if landed is not None and landed >= version:
                return 0
            props = CommitProperties(app_transactions=[Transaction(aid, version)])
            if all_new(dt, location, keys, data):
                write_deltalake(dt, data, mode="append", commit_properties=props,
                                writer_properties=WRITER_PROPERTIES)
                return data.num_rows
            (dt.merge(data, predicate=key_match(keys), source_alias="s", target_alias="t", commit_properties=props,
                      writer_properties=WRITER_PROPERTIES)
             .when_matched_update_all().when_not_matched_insert_all().execute())
        return data.num_rows

    def _batch_done(self, st: _Stream, written: int, deleted: int) -> None:
        af = st.af
        st.rows_written += written
        st.written.append((st.current_end, written))
        del st.written[:-1000]
        if st.failures:
            self.runtime.event(FLOW_RECOVERED, af.flow, failures=st.failures,
                               last_error=st.error.message if st.error is not None else None,
                               rows_written=written, rows_deleted=deleted)
        st.failures = 0
        st.error = None
        stats = af.stats
        stats.status = "active"
        stats.last_error = None
        stats.failures = 0
        stats.runs += 1
        stats.rows_written += written
        stats.rows_deleted += deleted
        stats.last_execution_time = _now()
        stats.last_batch_time = stats.last_execution_time
        self._save_stats(af)

    def _save_stats(self, af: ActiveFlow) -> None:
        try:
            self.runtime.flows.save_stats(af.flow.flow_id, af.stats)
        except Exception:  # noqa: BLE001 - statistics never fail a batch
            log.debug("saving statistics of flow %s failed", af.flow.name, exc_info=True)

    def _await_progress(self, st: _Stream, timeout: float = 2.0) -> None:
        """Fold the progress report of the last committed batch into the statistics (it is
        posted just after the batch's commit log entry)."""
        last = last_committed_batch(st.checkpoint)
        deadline = time.monotonic() + timeout
        q = st.query
        while q is not None and last >= 0 and time.monotonic() < deadline:
            p = q.lastProgress
            if p is not None and _batch_id(p) >= last:
                break
            time.sleep(0.02)
        self._progress(st)

    def _progress(self, st: _Stream) -> None:
        """Fold the query's progress reports into the flow's statistics."""
        q = st.query
        if q is None:
            return
        try:
            # The last report is one JSON document; all recent ones (up to 100) are fetched only
            # when batches completed since the last look were missed.
            last = q.lastProgress
            if last is None:
                return
            newest, seen = _batch_id(last), max(st.seen_batches, default=-1)
            reports = [] if newest == seen else [last] if newest == seen + 1 else q.recentProgress
        except Exception:  # noqa: BLE001 - the query is going away
            return
        stats = st.af.stats
        changed = False
        for p in reports:
            bid = _batch_id(p)
            if bid in st.seen_batches:
                continue
            st.seen_batches.add(bid)
            changed = True
            stats.input_rows += int(p.numInputRows or 0)
            stats.batches += 1
            size = 0
            for op in p.stateOperators or []:
                stats.late_rows += int(getattr(op, "numRowsDroppedByWatermark", 0) or 0)  # Spark's own drops
                size += int(getattr(op, "memoryUsedBytes", 0) or 0)
                metrics = getattr(op, "customMetrics", None) or {}
                size += int(metrics.get("rocksdbSstFileSize", 0) or 0)
            stats.state_size = size
        if len(st.seen_batches) > 1000:
            st.seen_batches = set(sorted(st.seen_batches)[-200:])
        # Lag: source versions not yet in the sink, and for how long the flow has been behind.
        try:
            latest = max((self.runtime.store.version(loc) for loc in self._source_locations(st.af)), default=-1)
            done = committed_version(st.checkpoint)
        except Exception:  # noqa: BLE001
            latest = done = -1
        behind = max(0, latest - done)
        now = time.monotonic()
        if behind:
            st.behind_since = st.behind_since or now
        else:
            st.behind_since = None
        lag_s = round(now - st.behind_since, 3) if st.behind_since else 0.0
        if lag_s != stats.lag_seconds:
            stats.lag_seconds = lag_s
            changed = True
        if changed:
            self._save_stats(st.af)


def _batch_id(progress: Any) -> int:
    """A progress report's batch id (PySpark hands reports over as objects or as dicts)."""
    return int(progress["batchId"] if isinstance(progress, dict) else progress.batchId)


def batch_offsets(checkpoint: Path, batch_id: int) -> tuple[int, int | None]:
    """(source version micro-batch ``batch_id`` reads up to, its watermark in µs or None), from
    the batch's offset log entry (written before the batch runs)."""
    try:
        lines = (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
    except FileNotFoundError:
        return -1, None
    version, watermark = -1, None
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "version" in doc:
            version = int(doc["version"])
        elif isinstance(doc, dict) and "batchWatermarkMs" in doc:
            ms = int(doc["batchWatermarkMs"])
            watermark = ms * 1000 if ms > 0 else None
    return version, watermark


def batch_end_version(checkpoint: Path, batch_id: int) -> int:
    return batch_offsets(checkpoint, batch_id)[0]


def last_committed_batch(checkpoint: Path) -> int:
    try:
        return max((int(n) for n in os.listdir(checkpoint / "commits") if n.isdigit()), default=-1)
    except FileNotFoundError:
        return -1


def committed_version(checkpoint: Path) -> int:
    """The source version the query's last committed micro-batch ended at (-1: none)."""
    commits = checkpoint / "commits"
    try:
        ids = sorted((int(n) for n in os.listdir(commits) if n.isdigit()), reverse=True)
    except FileNotFoundError:
        return -1
    for bid in ids:
        version = batch_end_version(checkpoint, bid)
        if version >= 0:
            return version
    return -1


def _short(exc: BaseException) -> str:
    """One line a user can act on. A failure inside the micro-batch function reaches us wrapped by
    Spark with the Python traceback embedded; its cause is the line that ends that traceback."""
    lines = [line.rstrip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    marks = [i for i, line in enumerate(lines) if "Traceback (most recent call last):" in line]
    if marks:
        for line in lines[marks[-1] + 1:]:
            if not line.startswith((" ", "\t")):
                return line[:500]
    return lines[0][:500]


__all__ = ["STATE_STORE_PROVIDER", "StreamingExecutor", "app_id", "append_mostly",
           "checkpoint_dir", "committed_version", "decide_flow_type", "streamable"]
