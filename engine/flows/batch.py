"""Batch execution of a flow on Spark: dirty windows in, one idempotent sink commit out.

A run (see :meth:`BatchExecutor.run`):

1. pins one Delta snapshot per source; if no source moved since the last run, there is nothing
   to do (no Spark job);
2. decides what to re-evaluate: the dirty windows of the time table, from its change data feed
   between the last processed version and the snapshot (every change type: inserts, deletes,
   update pre/post images), or everything (first run, a change in another source, no usable
   window, an unreadable change feed);
3. re-evaluates the flow's query on Spark with the time table replaced by a view of its snapshot
   restricted to those windows (files pruned by their Delta min/max statistics first);
4. writes the sink in ONE Delta merge: the windows' new rows are upserted on the sink's (primary
   key, time index), and the sink rows of those windows that the new result lacks are deleted.
   The commit carries the app transaction (``tidegate-flow-<id>``, run sequence), recorded before
   and checked after a crash, so a replay neither loses nor duplicates rows. A result the
   optimizer expects over 8 MB (the flow option ``spark_writes``: ``auto``, ``on``, ``off``) is
   merged by Delta Lake's own MERGE on Spark with the same app transaction
   (engine.sparkwrite.sink_merge): its rows never pass through the gateway; smaller ones, and
   results needing one of PostgreSQL's conversions into the sink's types, are collected and
   merged by delta-rs.

EXPIRE AFTER narrows the re-evaluated windows to those ending after ``now - expire``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from deltalake import CommitProperties, Transaction

from catalog.store import TableDef
from engine import sparkwrite, ttl
from engine.flows.plan import (TS_PLACEHOLDER, UPDATE_AT, FlowPlan, sink_column_of, sink_columns, table_refs,
                               upsert_keys)
from engine.flows.seam import ActiveFlow, FlowExecutor, RunResult
from engine.flows.windows import (US, Range, delta_predicate, merge_ranges, spark_predicate, spark_time_literal,
                                  times_to_micros)
from engine.storage import (WRITER_PROPERTIES, Snapshot, TableStore, action_path, coerce_array, dedupe_last,
                            key_match, storage_schema, storage_to_result)
from tidegate.errors import SqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from engine.executor import EngineSession

log = logging.getLogger(__name__)
_view_seq = itertools.count(1)


def app_id(flow_id: int, epoch: int = 0) -> str:
    return f"tidegate-flow-{flow_id}" if not epoch else f"tidegate-flow-{flow_id}.{epoch}"


class BatchExecutor(FlowExecutor):
    """``flow_type = 'batching'``: re-evaluate dirty windows on the runtime's cadence and on flush."""

    flow_type = "batching"
    periodic = True

    def start(self, flow: ActiveFlow) -> None:
        """Nothing runs between evaluations."""

    def stop(self, flow: ActiveFlow, *, dropped: bool) -> None:
        """A running evaluation is interrupted by the runtime (job tag); nothing else to release."""

    def run(self, af: ActiveFlow, *, flush: bool) -> RunResult:
        rt = self.runtime
        flow = af.flow
        session = rt.session()
        plan, sink = rt.prepare(af, session)
        progress = rt.flows.progress(flow.flow_id)
        aid = app_id(flow.flow_id, flow.epoch)
        # A run whose plan was recorded but whose outcome was not: did its sink commit land?
        if progress.planned_seq is not None:
            landed = rt.store.app_version(sink.location, aid)
            if landed is not None and landed >= progress.planned_seq:
                progress.seq = progress.planned_seq
                progress.versions = dict(progress.planned_versions or {})
            progress.planned_seq = progress.planned_versions = None
            rt.flows.save_progress(flow.flow_id, progress)
        snaps: dict[str, Snapshot] = {str(t.oid): rt.store.snapshot(t.location) for t in plan.sources}
        changed = [oid for oid, s in snaps.items() if progress.versions.get(oid, -1) != s.version]
        if not changed and not af.force_full:
            return RunResult(0, 0, changed=False)
        new_versions = {oid: s.version for oid, s in snaps.items()}
        window = plan.window
        ranges: list[Range] | None = None  # None: every row (within EXPIRE AFTER)
        full = (window is None or af.force_full
                or any(progress.versions.get(oid, -1) < 0 for oid in snaps)
                or any(oid != str(window.table.oid) for oid in changed))
        if not full and window is not None:
            oid = str(window.table.oid)
            try:
                starts = self._dirty_starts(window.table.location, window.column, progress.versions[oid] + 1,
                                            snaps[oid].version, plan)
                ranges = merge_ranges(window.fn, starts)
            except Exception as exc:  # noqa: BLE001 - e.g. a schema change in between: recompute whole
                log.info("flow %s: change feed unreadable (%s); recomputing whole", flow.name, exc)
                ranges = None
        if window is not None and ttl.of(window.table).micros:
            # Windows wholly past the source's ttl are not re-evaluated: their sink rows stay as
            # they were built (GreptimeDB: a source's expiry is not a delete for its flows).
            horizon = ttl.horizon_us(ttl.of(window.table))
            assert horizon is not None
            lo = window.fn.start_of(horizon)
            if ranges is None:
                ranges = [(lo, None)]
            else:
                ranges = [(max(a, lo), b) for a, b in ranges if b is None or b > lo]
        if window is not None and flow.expire_after is not None:
            lo = window.fn.start_of(int(time.time() * US) - flow.expire_after * US)
            if ranges is None:
                ranges = [(lo, None)]
            else:
                ranges = [(max(a, lo), b) for a, b in ranges if b is None or b > lo]
        if ranges is not None and not ranges:
            # Only expired windows changed: nothing to write.
            progress.versions = new_versions
            rt.flows.save_progress(flow.flow_id, progress)
            return RunResult(0, 0)
        data = self._evaluate(session, af, plan, sink, snaps, ranges)
        seq = progress.seq + 1
        progress.planned_seq, progress.planned_versions = seq, new_versions
        rt.flows.save_progress(flow.flow_id, progress)
        af.check_cancelled()
        # Without a time window, a source with a ttl loses rows as they expire: a recompute then
        # upserts what its rows still give and deletes nothing.
        keep_unmatched = window is None and any(not ttl.of(t).forever for t in plan.sources)
        written, deleted = self._commit(sink, plan, data, ranges, window.output if window else None,
                                        window.column_type if window else None, aid, seq, af=af,
                                        keep_unmatched=keep_unmatched)
        progress.seq, progress.versions = seq, new_versions
        progress.planned_seq = progress.planned_versions = None
        rt.flows.save_progress(flow.flow_id, progress)
        af.force_full = False
        return RunResult(written, deleted)

    # -- change feed -------------------------------------------------------------------------------

    def _dirty_starts(self, location: str, column: str, start: int, end: int, plan: FlowPlan) -> list[int]:
        if start > end:
            return []
        table = self.runtime.store.changes(location, start, end, [column])
        if table.num_rows == 0:
            return []
        assert plan.window is not None
        return plan.window.fn.starts(times_to_micros(table.column(column)))

    # -- evaluation -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _tagged(self, af: ActiveFlow, spark: SparkSession) -> Iterator[None]:
        """The Spark jobs run inside carry the run's tag: DROP FLOW and shutdown cancel them."""
        tag = f"tidegate-flow-{af.flow.flow_id}-r{next(_view_seq)}"
        af.running_job = (spark, tag)
        spark.addTag(tag)
        spark.sparkContext.addJobTag(tag)
        try:
            yield
        finally:
            af.running_job = None
            spark.removeTag(tag)
            spark.sparkContext.removeJobTag(tag)

    def _evaluate(self, session: EngineSession, af: ActiveFlow, plan: FlowPlan, sink: TableDef,
                  snaps: dict[str, Snapshot], ranges: list[Range] | None) -> pa.Table | DataFrame:
        """The flow's result over ``ranges`` in the sink's storage form: collected rows, or (a
        large result needing no conversion, see :meth:`_sink_frame`) the Spark frame that
        computes them, which the commit merges on Spark."""
        from engine import spark as sparkmod
        from engine.resolver import StatementResolver
        from engine.translate import ResolvedRelation, translate_query

        rt = self.runtime
        info = rt.session_info(af.flow)
        overrides: dict[str, Any] = {}
        view_name: str | None = None
        spark = session.spark
        try:
            window = plan.window
            if window is not None and ranges is not None:
                t = window.table
                snap = snaps[str(t.oid)]
                files = _prune_files(rt.store, snap, window.column, ranges)
                df = session.snapshot_frame(t, Snapshot(snap.location, snap.version, files))
                df = df.where(spark_predicate(window.column, window.column_type, ranges))
                view_name = f"tg_flow_{af.flow.flow_id}_{next(_view_seq)}"
                df.createOrReplaceTempView(view_name)
                rel = ResolvedRelation(t.schema, t.name, view_name, [(c.name, c.type) for c in t.columns], None)
                assert plan.query_tree is not None
                for ref in table_refs(plan.query_tree):
                    if ref.name == t.name:
                        db = ref.args.get("db")
                        overrides[ref.name if db is None else f"{db.name}.{ref.name}"] = rel
            resolver = StatementResolver(session, info, overrides, stored_rows=True)
            assert plan.query_tree is not None
            tq = translate_query(plan.query_tree, resolver, [])
            df = spark.sql(tq.spark_sql)  # analysed now: the view may go once it is built
            if sparkwrite.worth_writing_on_spark(df, info):
                frame = _sink_frame(df, plan, sink)
                if frame is not None:
                    return frame
            with self._tagged(af, spark):
                result = sparkmod.collect_arrow(df)
        except Exception as exc:  # noqa: BLE001 - Spark failures become SqlErrors
            raise _as_sql_error(exc, af) from None
        finally:
            if view_name is not None:
                try:
                    spark.catalog.dropTempView(view_name)
                except Exception:  # noqa: BLE001 - best effort
                    pass
        return _to_sink_rows(result, plan, sink)

    # -- the sink commit --------------------------------------------------------------------------

    def _commit(self, sink: TableDef, plan: FlowPlan, data: pa.Table | DataFrame, ranges: list[Range] | None,
                window_output: str | None, window_type: str | None, aid: str, seq: int, *,
                af: ActiveFlow | None = None, keep_unmatched: bool = False) -> tuple[int, int]:
        rt = self.runtime
        location = sink.location
        assert location
        keys = upsert_keys(sink, plan)
        held = _window_column(sink, plan, window_output) if ranges is not None else None
        if not isinstance(data, pa.Table):
            delete_sql = spark_predicate(*held, ranges, qualifier="t") if held and ranges else None
            return self._commit_on_spark(sink, data, keys, delete_sql, aid, seq, af, keep_unmatched)
        data = dedupe_last(data, keys)
        delete_pred = "(" + delta_predicate(*held, ranges) + ")" if held and ranges is not None else None
        with rt.store.writing(location) as dt:
            landed = dt.transaction_version(aid)
            if landed is not None and landed >= seq:
                return data.num_rows, 0
            merger = dt.merge(data, predicate=key_match(keys), source_alias="s", target_alias="t",
                              commit_properties=CommitProperties(app_transactions=[Transaction(aid, seq)]),
                              writer_properties=WRITER_PROPERTIES)
            merger = merger.when_matched_update_all().when_not_matched_insert_all()
            if keep_unmatched:
                pass
            elif delete_pred is None:
                merger = merger.when_not_matched_by_source_delete()
            else:
                merger = merger.when_not_matched_by_source_delete(predicate=delete_pred)
            metrics = merger.execute()
        return data.num_rows, int(metrics.get("num_target_rows_deleted", 0))

    def _commit_on_spark(self, sink: TableDef, frame: DataFrame, keys: list[str], delete_sql: str | None,
                         aid: str, seq: int, af: ActiveFlow | None, keep_unmatched: bool) -> tuple[int, int]:
        """:meth:`_commit` of a result left on Spark (:func:`_sink_frame`): Delta Lake's MERGE
        (engine.sparkwrite.sink_merge) under the sink's lock, skipped when this run already landed."""
        store = self.runtime.store
        location = sink.location or ""
        with store.write_lock(location), self._tagged(af, frame.sparkSession) if af else contextlib.nullcontext():
            try:
                landed = store.app_version(location, aid)
                if landed is not None and landed >= seq:
                    return 0, 0
                return sparkwrite.sink_merge(frame.sparkSession, frame, sink, keys, delete_sql, keep_unmatched, aid, seq)
            except Exception as exc:  # noqa: BLE001 - Spark failures (a NOT NULL's 23502...) become SqlErrors
                raise _as_sql_error(exc, af) from None
            finally:
                store.forget(location)  # Spark committed (or may have): the cached log is behind


def _as_sql_error(exc: Exception, af: ActiveFlow | None) -> SqlError:
    """A failure of a flow run's Spark work as the SqlError the flow reports (a cancelled run's as
    the cancel: :meth:`ActiveFlow.check_cancelled` raises it)."""
    if isinstance(exc, SqlError):
        return exc
    if af is not None:
        af.check_cancelled()
    from engine.errors import map_spark_error

    return map_spark_error(exc, None)


def _window_column(sink: TableDef, plan: FlowPlan, window_output: str | None) -> tuple[str, str]:
    """The sink's time index holding the flow's window column, with its type's name; 42P16 when
    the sink has none (its rows of a re-evaluated window could not be found)."""
    held = sink_column_of(plan, sink, window_output) if window_output in plan.output_names else None
    column = sink.time_index if sink.time_index == held else None
    ctype = sink.column(column).type.pg.name if column else None
    if column is None or ctype not in ("timestamp", "timestamptz", "date"):
        raise SqlError("42P16", f'sink table "{sink.qualified_name}" has no time index holding the '
                                f'flow\'s window column "{window_output}"')
    return column, ctype


def _sink_frame(df: DataFrame, plan: FlowPlan, sink: TableDef) -> DataFrame | None:
    """The flow's result ``df`` as the sink stores it, computed on Spark (:func:`_to_sink_rows`'
    twin: update_at stamped, the placeholder time index, NULL in the columns the flow does not
    give, NOT NULL checked on the executors with 23502); None when a column needs one of
    PostgreSQL's conversions into the sink's type (the collected path makes it)."""
    by_name = {name: i for i, name in enumerate(sink_columns(plan, sink))}
    types = sparkwrite.result_types(df, list(plan.output_types))
    now_us = int(time.time() * 1000) * 1000  # milliseconds, as the collected path stamps
    given: dict[str, int] = {}
    filled: dict[str, sparkwrite.Filled] = {}
    for c in sink.columns:
        if c.name in by_name:
            if not sparkwrite.same_storage(types[by_name[c.name]], c.type):
                return None
            given[c.name] = by_name[c.name]
        elif c.name in (UPDATE_AT, TS_PLACEHOLDER) and c.type.pg.name in ("timestamp", "timestamptz", "date"):
            filled[c.name] = sparkwrite.Filled(None, spark_time_literal(now_us if c.name == UPDATE_AT else 0,
                                                                         c.type.pg.name))
        elif c.name in (UPDATE_AT, TS_PLACEHOLDER):
            return None
        else:
            filled[c.name] = sparkwrite.Filled(None)
    return sparkwrite.storage_frame(df, sink, given, filled)


def _prune_files(store: TableStore, snap: Snapshot, column: str, ranges: list[Range]) -> list[str]:
    """The snapshot's files, less those whose min/max statistics of ``column`` miss ``ranges``.

    The statistics come from the table's current log, which may be newer than the snapshot: a
    snapshot file the log no longer lists (compacted since) has no statistics here and is kept.
    """
    try:
        actions = store.file_actions(snap.location)
    except Exception:  # noqa: BLE001 - statistics are an optimisation
        return snap.files
    lo_col, hi_col = f"min.{column}", f"max.{column}"
    if lo_col not in actions.column_names or hi_col not in actions.column_names or actions.num_rows == 0:
        return snap.files
    mins = times_to_micros(actions.column(lo_col)).to_pylist()
    maxs = times_to_micros(actions.column(hi_col)).to_pylist()
    missed = set()
    for path, mn, mx in zip(actions.column("path").to_pylist(), mins, maxs):
        if mn is not None and mx is not None and not any(mx >= lo and (hi is None or mn < hi) for lo, hi in ranges):
            missed.add(action_path(snap.location, path))
    return [path for path in snap.files if path not in missed]


def _to_sink_rows(result: pa.Table, plan: FlowPlan, sink: TableDef) -> pa.Table:
    """Spark's result -> the sink's storage form (update_at stamped, placeholder time index)."""
    n = result.num_rows
    by_name = {name: i for i, name in enumerate(sink_columns(plan, sink))}
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)
    arrays = []
    for c in sink.columns:
        if c.name in by_name:
            i = by_name[c.name]
            col = storage_to_result(result.column(i), plan.output_types[i])
            arr = coerce_array(col, c.type, c.name)
        elif c.name == UPDATE_AT:
            arr = pa.array([now] * n, pa.timestamp("us"))
            arr = coerce_array(arr, c.type, c.name)
        elif c.name == TS_PLACEHOLDER:
            arr = coerce_array(pa.array([datetime(1970, 1, 1)] * n, pa.timestamp("us")), c.type, c.name)
        else:
            arr = pa.nulls(n, storage_schema([c]).field(0).type)
        arrays.append(arr)
    for c, arr in zip(sink.columns, arrays):
        if c.not_null and arr.null_count:
            what = "time index" if c.name == sink.time_index else "NOT NULL column"
            raise SqlError("23502", f'null value in column "{c.name}" of relation "{sink.name}" violates not-null constraint',
                           detail=f'The flow produced a row whose {what} "{c.name}" is NULL.')
    return pa.Table.from_arrays(arrays, schema=storage_schema(sink.columns))


__all__ = ["BatchExecutor", "app_id"]
