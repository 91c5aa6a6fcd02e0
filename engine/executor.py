"""EngineSession: one client connection's DDL, DML and queries over Spark and Delta.

Statement path: a cheap keyword scan picks the handler. DDL touches only the catalog and
deltalake (no Spark wait). Queries go through ``engine.translate`` (PostgreSQL -> Spark SQL);
the :class:`StatementResolver` pins one Delta version of every table a statement reads and
registers it as a Spark temp view (re-used while the version and columns are unchanged).

Writes (see :mod:`engine.storage`): every statement is validated in full (types, NOT NULL,
lengths, keys) before its single Delta commit. ``INSERT ... VALUES`` of constants is evaluated
in Python (no Spark round trip); other sources run on Spark and are written from Arrow.

Transaction blocks (begin/commit/rollback): DML is validated at once and its writes are queued;
commit() applies them as one transaction (``TableStore.commit_all``: checked, journaled, visible to
readers at once), rollback() drops them. A read inside the block sees the block's own writes
(``_with_pending``), an INSERT ... ON CONFLICT DO UPDATE included (computed once, on first read).
DDL inside a block changes the session's view of the catalog (``catalog.txn.CatalogTxn``, see
``engine.blockddl``): published with the block's writes at COMMIT, forgotten at ROLLBACK.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from catalog.store import (Catalog, ColumnDef, SequenceParams, TableDef, is_temp_schema, relation_word,
                           sequence_named)
from catalog.roles import DATABASE_OID
from catalog.txn import CatalogTxn
from engine import constraints, ddl, privileges, ttl, txnlog
from engine.blockddl import BlockDdl
from engine.events import DDL as DDL_EVENT, ddl_event
from engine.locks import TableLocks
from engine.flows import statements as flow_statements
from engine import spark as sparkmod
from engine.storage import (
    Snapshot, TableStore, WriteOp, coerce_array, dedupe_last, duplicate_keys, key_text,
    python_value, round_to_precision, storage_schema, storage_to_result, storage_type,
)
from tidegate import pgvalues, sqllex
from tidegate.config import Settings
from tidegate.errors import SqlError
from tidegate.pgtypes import TEXT, ColumnType, lookup_type_name, pg_type_for_arrow
from tidegate.results import CommandResult, CopyTarget, ResultField, RowStream
from tidegate.session import SessionInfo
from tidegate.sqllex import Token

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from engine.maintenance import Maintenance

log = logging.getLogger(__name__)

_session_ids = itertools.count(1)
# Temp view names are unique across sessions: a pooled Spark session keeps its views.
_view_ids = itertools.count(1)
# Spark sessions of closed connections kept for the next ones, with their temp views: a new
# connection's first query then skips creating the views of the tables it reads (30-45 ms each).
_IDLE_SPARK_SESSIONS = 8


class NotConstant(Exception):
    """An expression the Python evaluator cannot fold (it needs Spark)."""


_DEFAULT = object()  # the DEFAULT keyword in a VALUES row


# -- the engine ---------------------------------------------------------------------------------

def _refuse_other_temp_schema(schema: str) -> None:
    """A relation cannot be created in a temporary schema unless as a temporary one of this session
    (callers have already turned ``pg_temp`` / the session's own schema into CREATE TEMP)."""
    if is_temp_schema(schema):
        raise SqlError("0A000", "cannot create relations in temporary schemas of other sessions")


class Engine:
    """Owns Spark, the Delta table store and background maintenance for one gateway."""

    def __init__(self, settings: Settings, catalog: Catalog) -> None:
        from engine.maintenance import Maintenance

        self.settings = settings
        self.catalog = catalog
        self.runtime = sparkmod.SparkRuntime(settings)
        self.store = TableStore(settings.warehouse_dir)
        self.locks = TableLocks()  # UPDATE/DELETE/upsert write locks, held to transaction end
        # Transactions interrupted during COMMIT are completed before anything else runs.
        self.journal = txnlog.Journal(settings.data_dir / "txn")
        # Notes of recovered commits (CommitHooks): the jobs whose commits a crash interrupted.
        self.recovered_notes: list[dict] = []
        recovered = txnlog.recover(self.store, self.journal, catalog, self.recovered_notes)
        if recovered:
            log.info("completed %d transaction(s) interrupted during COMMIT", recovered)
        # Temporary tables of sessions of a gateway that died (kill -9) belong to no session now.
        for s in catalog.temp_schemas():
            log.info("removing temporary schema %s left by a previous run", s.name)
            self.discard_temp_schema(s.name)
        # The events table exists from the first start on; its recorder queues events at once
        # and commits them once started (engine.events).
        from engine.events import EventRecorder, ensure_events_table

        ensure_events_table(catalog, self.store, settings)
        self.events = EventRecorder(catalog, self.store, settings)
        self.maintenance: Maintenance = Maintenance(self.store, catalog, settings)
        from engine.flows import FlowRuntime

        self.flows = FlowRuntime(self)
        from engine.refresh import RefreshManager

        self.refresh = RefreshManager(self)  # REFRESH TABLE, its recovery and schedule
        from engine.jobs import JobManager

        self.jobs = JobManager(self)  # SUBMIT JOB & co., their recovery and slots
        self._idle_sessions: list[tuple[SparkSession, dict[str, _ViewEntry]]] = []
        self._idle_lock = threading.Lock()

    def start(self) -> None:
        self.events.start()
        self.runtime.start()
        self.maintenance.start()
        self.flows.start()
        self.refresh.start()
        self.jobs.start()

    def ready(self) -> bool:
        return self.runtime.ready()

    def open_session(self) -> EngineSession:
        return EngineSession(self)

    def discard_temp_schema(self, name: str) -> None:
        """Drop a session's temporary schema with its relations, their grants, sequence values
        and storage (at session end; at start for a crashed gateway's sessions)."""
        s = self.catalog.get_schema(name)
        if s is None or not is_temp_schema(name):
            return
        dropped = self.catalog.drop_schema(name, if_exists=True, cascade=True)
        for t in dropped:
            self.catalog.roles.forget_object("r", t.oid)
            if t.kind == "sequence":
                self.catalog.sequences.forget(t.oid)
            elif t.kind == "table":
                self.store.drop(t.location)
        self.catalog.roles.forget_object("n", s.oid)
        self.store.drop_schema_dir(s.oid)

    def take_spark_session(self) -> tuple[SparkSession, dict[str, _ViewEntry]]:
        """A closed connection's Spark session and its table views, else a new session."""
        with self._idle_lock:
            if self._idle_sessions:
                return self._idle_sessions.pop()
        return self.runtime.new_session(), {}

    def give_back_spark_session(self, spark: SparkSession, views: dict[str, _ViewEntry]) -> None:
        """Keep a closing connection's session for the next one (views of dropped tables dropped)."""
        live = {t.location for t in self.catalog.list_tables(kind="table")}
        for location in [loc for loc in views if loc not in live]:
            _drop_view(spark, views.pop(location).view_name)
        with self._idle_lock:
            if len(self._idle_sessions) < _IDLE_SPARK_SESSIONS and self.runtime.ready():
                self._idle_sessions.append((spark, views))
                return
        for entry in views.values():
            _drop_view(spark, entry.view_name)

    def shutdown(self) -> None:
        self.jobs.shutdown()  # running jobs stop and wait PENDING for the next start
        self.refresh.shutdown()
        self.flows.shutdown()
        self.maintenance.stop()
        self.events.close()  # last of the recorders' sources: what they recorded is committed
        self.runtime.stop()


# -- per-statement table resolution ---------------------------------------------------------------

class StatementResolver:
    """The translator's TableResolver: pins one Delta version per table for one statement."""

    def __init__(self, session: EngineSession, info: SessionInfo, overrides: dict[str, Any] | None = None,
                 *, stored_rows: bool = False) -> None:
        self.session = session
        self.info = info
        # Read what storage holds, rows past their table's ttl included (flows: a source's expiry
        # is not a delete for them); statements read only the rows a ttl keeps.
        self.stored_rows = stored_rows
        self.snapshots: dict[str, Snapshot] = {}
        self.tables: dict[str, TableDef] = {}
        self.overrides = overrides or {}
        # Whose privileges a read is checked against: the session's, or inside a view its owner's
        # (PostgreSQL checks a view's own reads as its owner).
        self.acting = info

    @contextmanager
    def view_scope(self, rel: Any) -> Iterator[None]:
        saved = self.acting
        self.acting = owner_info(rel.owner, self.info)
        try:
            yield
        finally:
            self.acting = saved

    def resolve(self, schema: str | None, name: str) -> Any:
        from engine.translate import ResolvedRelation

        key = name if schema is None else f"{schema}.{name}"
        if key in self.overrides:
            return self.overrides[key]
        if schema in ("pg_catalog", "information_schema"):
            raise SqlError("0A000", f'relation "{key}" (a system catalog) cannot be joined with tables')
        t = self.session.catalog.resolve_table(name, schema, self.info.search_path)
        self.session.catalog.roles.check_table(self.acting, t, "SELECT")
        if t.kind == "sequence":  # SELECT last_value, is_called FROM s: its state now, as a one-row view
            from tidegate.pgtypes import TYPES_BY_NAME

            last, called = self.session.engine.catalog.sequences.state(t)
            int8, boolean = ColumnType(TYPES_BY_NAME["int8"]), ColumnType(TYPES_BY_NAME["bool"])
            sql = (f"SELECT CAST({last} AS bigint) AS last_value, CAST(0 AS bigint) AS log_cnt, "
                   f"{'true' if called else 'false'} AS is_called")
            return ResolvedRelation(t.schema, t.name, None, [("last_value", int8), ("log_cnt", int8),
                                                             ("is_called", boolean)], sql, t.owner)
        cols = [(c.name, c.type) for c in t.columns]
        if t.kind == "view":
            return ResolvedRelation(t.schema, t.name, None, cols, t.view_sql, t.owner)
        view = self.session.table_view(t, self)
        return ResolvedRelation(t.schema, t.name, view, cols, None, t.owner)


def owner_info(owner: str | None, info: SessionInfo) -> SessionInfo:
    """The privileges of an object's owner, for work done on its behalf (a view's reads).
    No owner: the bootstrap superuser of catalogs older than roles."""
    if owner is None:
        return replace(info, internal=True)
    return replace(info, user=owner, superuser=True, internal=False)


@dataclass
class _ViewEntry:
    version: int
    signature: tuple  # (oid, columns, id of the pending-row list or None, pending row count, ttl applied)
    view_name: str


def _drop_view(spark: SparkSession, name: str) -> None:
    try:
        spark.catalog.dropTempView(name)
    except Exception:  # noqa: BLE001 - Spark may be stopping
        log.debug("temp view %s not dropped", name, exc_info=True)


@dataclass
class _Analyzed:
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


def _is_table_options(sql: str) -> bool:
    """ALTER TABLE [IF EXISTS] [ONLY] name SET (...) | RESET (...) | SET 'k' = v | UNSET 'k'."""
    toks = sqllex.leading(sql, 12)
    i = 2
    if [t.upper for t in toks[i:i + 2]] == ["IF", "EXISTS"]:
        i += 2
    if i < len(toks) and toks[i].upper == "ONLY":
        i += 1
    parts, i = sqllex.split_ident_chain(toks, i)
    if not 1 <= len(parts) <= 2 or i + 1 >= len(toks):
        return False
    verb, nxt = toks[i].upper, toks[i + 1]
    return (verb in ("SET", "RESET") and nxt.text == "(") or (verb == "SET" and nxt.kind == "str") or verb == "UNSET"


_PG_STORAGE_PARAMETERS = {"fillfactor", "parallel_workers", "user_catalog_table", "log_autovacuum_min_duration",
                          "toast_tuple_target"}


# -- the session --------------------------------------------------------------------------------

class EngineSession:
    """One connection's engine state: its Spark session, temp views and transaction queue."""

    @property
    def reads_own_writes(self) -> bool:
        """Whether a read now sees this transaction's pending writes (``_with_pending``), so the
        gateway may keep a multi-statement batch in one transaction, as PostgreSQL does."""
        return True

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store = engine.store
        self.id = next(_session_ids)
        self._spark: SparkSession | None = None
        self._views: dict[str, _ViewEntry] = {}
        self._analyzed: _Analyzed | None = None
        self._tag_seq = itertools.count(1)
        self._lock = threading.Lock()
        self._current_tag: str | None = None
        self._cancelled = False
        self._interrupt = threading.Event()  # set by cancel(): also stops a wait for a table lock
        self._pending: list[WriteOp] | None = None
        self._ddl: BlockDdl | None = None  # the open block's catalog changes and storage
        self.commit_hooks: txnlog.CommitHooks | None = None  # a job's (engine.jobs): added to its COMMIT
        self._closed = False
        self._overriding: str | None = None  # INSERT ... OVERRIDING {SYSTEM|USER} VALUE
        self.temp_schema: str | None = None  # pg_temp_<pid>, once this session created a temporary relation
        # DDL events of the open block (object, user, payload): recorded at COMMIT, dropped at ROLLBACK
        self._block_events: list[tuple[str | None, str, dict[str, Any]]] = []

    @property
    def catalog(self) -> Catalog | CatalogTxn:
        """The catalog as this session sees it: inside a block, with the block's own DDL."""
        return self._ddl.catalog if self._ddl is not None else self.engine.catalog

    @property
    def catalog_in_block(self) -> CatalogTxn | None:
        """The open block's view of the catalog when it ran DDL (catalog queries answer from it)."""
        return self._ddl.catalog if self._ddl is not None and self._ddl.catalog.changes else None

    @property
    def in_block(self) -> bool:
        return self._pending is not None

    # -- Spark plumbing ---------------------------------------------------------------------

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            self._spark, self._views = self.engine.take_spark_session()
        return self._spark

    def table_view(self, t: TableDef, resolver: StatementResolver) -> str:
        """Register (or re-use) a temp view over the current Delta snapshot of ``t``."""
        spark = self.spark  # first: a pooled Spark session brings its views along
        snap = self.store.snapshot(t.location)
        resolver.snapshots[t.location] = snap
        resolver.tables[t.location] = t
        pending = self._pending_ops(t)
        kept = ttl.of(t)
        expiring = not resolver.stored_rows and not kept.forever
        signature = (t.oid, tuple((c.name, c.type) for c in t.columns),
                     id(self._pending) if pending else None, len(pending),
                     kept.text if expiring else None)
        entry = self._views.get(t.location)
        if entry is not None and entry.version == snap.version and entry.signature == signature:
            return entry.view_name
        df = self.snapshot_frame(t, snap)
        if pending:
            df = self._with_pending(t, df, pending, snap.version)
        if expiring:
            df = ttl.visible(df, t, kept)
        view_name = f"tg_{re.sub(r'[^a-z0-9_]', '_', t.name.lower())[:40]}_{t.oid}_{next(_view_ids)}"
        df.createOrReplaceTempView(view_name)
        if entry is not None:
            spark.catalog.dropTempView(entry.view_name)
        self._views[t.location] = _ViewEntry(snap.version, signature, view_name)
        return view_name

    def _pending_ops(self, t: TableDef) -> list[WriteOp]:
        """This session's transaction's writes to ``t``, in order ([] outside a block)."""
        return [op for op in self._pending or [] if op.table.location == t.location and op.kind != "none"]

    def _with_pending(self, t: TableDef, df: DataFrame, ops: list[WriteOp], snap_version: int) -> DataFrame:
        """``df`` (the committed snapshot) as this transaction has changed it: a block reads its own
        writes. Each pending write is replayed in order as the commit will apply it: appends are
        added, upserts replace their keys, UPDATEs replace the rows they matched (a left join on the
        match columns, null-safe for key-less tables, so every copy of a duplicated row changes as
        the merge changes it), DELETEs remove them, an overwrite is the new content, an INSERT ...
        ON CONFLICT DO UPDATE is computed here once (``_materialize_merge``)."""
        from pyspark.sql.types import _parse_datatype_string

        spark = self.spark
        types = {c.name: c.type for c in t.columns}
        names = [c.name for c in t.columns]

        def frame(data: pa.Table) -> DataFrame:
            for c in t.columns:  # rows written before an ADD COLUMN in this block: NULL there
                if c.name not in data.column_names and not any(n.startswith("__tg_") for n in data.column_names):
                    data = data.append_column(c.name, pa.nulls(data.num_rows, storage_type(c.type)))
            cols = [(n, types[n[len("__tg_old_"):]] if n.startswith("__tg_old_") else types[n]) for n in data.column_names]
            return spark.createDataFrame(data, schema=_parse_datatype_string(sparkmod.spark_schema_ddl(cols)))

        def match(left: DataFrame, right: DataFrame, keys: list[str], prefix: str, null_safe: bool) -> Any:
            conds = [left[k].eqNullSafe(right[prefix + k]) if null_safe else left[k] == right[prefix + k] for k in keys]
            cond = conds[0]
            for c in conds[1:]:
                cond = cond & c
            return cond

        def merged(before: DataFrame, op: WriteOp) -> WriteOp:
            # An upsert's rows, computed on first read: from then on the block commits exactly them.
            upsert = self._materialize_merge(t, op, before, snap_version)
            self._pending[:] = [upsert if p is op else p for p in self._pending or []]
            return upsert

        try:
            return self._replay(df, ops, frame, match, names, merged)
        except KeyError:
            raise SqlError("0A000", f'table "{t.name}" changed its columns after this transaction wrote to it',
                           hint="COMMIT or ROLLBACK the transaction first.") from None

    @staticmethod
    def _replay(df: DataFrame, ops: list[WriteOp], frame: Any, match: Any, names: list[str], merged: Any) -> DataFrame:
        from pyspark.sql import functions as F

        for op in ops:
            if op.kind == "merge":
                op = merged(df, op)
            data = op.data if isinstance(op.data, pa.Table) else None
            if op.kind == "add_columns":
                continue  # the frame is read with the new columns already (as NULLs)
            if data is None:
                raise SqlError("XX000", f"pending write of kind {op.kind} has no rows")
            if op.kind == "overwrite":
                df = frame(data.select(names))
            elif op.kind == "append":
                df = df.unionByName(frame(data.select(names)))
            elif op.kind == "upsert":
                new = frame(data.select(names))
                keys = new.select([F.col(k).alias("__tg_old_" + k) for k in op.keys])
                # null-safe: a time-series table's NULL tag is a series like any other
                df = df.join(keys, match(df, keys, op.keys, "__tg_old_", True), "left_anti").unionByName(new)
            elif op.kind == "delete":
                gone = frame(data.select(op.keys).rename_columns(["__tg_old_" + k for k in op.keys]))
                df = df.join(gone, match(df, gone, op.keys, "__tg_old_", op.null_safe), "left_anti")
            elif op.kind == "update":
                src = frame(data).withColumn("__tg_hit", F.lit(True))
                src = src.select([F.col(c).alias("__tg_new_" + c) if not c.startswith("__tg_old_") and c != "__tg_hit"
                                  else F.col(c) for c in src.columns])
                joined = df.join(src, match(df, src, op.keys, "__tg_old_", op.null_safe), "left")
                df = joined.select([
                    (F.when(F.col("__tg_hit").isNotNull(), F.col("__tg_new_" + n)).otherwise(df[n]) if
                     "__tg_new_" + n in src.columns else df[n]).alias(n) for n in names])
            else:
                raise SqlError("XX000", f"pending write of kind {op.kind} cannot be read")
        return df

    def _materialize_merge(self, t: TableDef, op: WriteOp, before: DataFrame, base_version: int) -> WriteOp:
        """An INSERT ... ON CONFLICT DO UPDATE of the block as the upsert of the rows it leaves:
        each proposed row whose key ``before`` holds (the table as the block saw it just before
        the statement's effect) becomes that row with the SET expressions applied, evaluated by
        the same translator as every query; the others are inserted as proposed. COMMIT checks
        that no other transaction wrote one of these keys after ``base_version`` (else 40001)."""
        from pyspark.sql.types import _parse_datatype_string

        from engine.translate import ResolvedRelation

        data = op.data if isinstance(op.data, pa.Table) else op.data.read_all() if op.data is not None else None
        if data is None or not data.num_rows:
            return replace(op, kind="upsert", updates={}, base_version=base_version)
        if any(k in op.updates for k in op.keys):
            raise SqlError("0A000", "ON CONFLICT DO UPDATE SET of a key column inside a transaction block is not supported",
                           hint="Update the key with UPDATE, or run the upsert outside a block.")
        cols = [(c.name, c.type) for c in t.columns]
        target_view = f"tg_upsert_t_{self.id}_{next(_view_ids)}"
        source_view = f"tg_upsert_s_{self.id}_{next(_view_ids)}"
        spark = self.spark
        before.select([c.name for c in t.columns]).createOrReplaceTempView(target_view)
        spark.createDataFrame(data.select([c.name for c in t.columns]),
                              schema=_parse_datatype_string(sparkmod.spark_schema_ddl(cols))).createOrReplaceTempView(source_view)
        try:
            overrides = {"__tg_target": ResolvedRelation(t.schema, t.name, target_view, cols),
                         "__tg_excluded": ResolvedRelation(t.schema, "excluded", source_view, cols)}
            items = ", ".join(f"{op.updates[c.name]} AS {ddl.quote_ident(c.name)}" if c.name in op.updates
                              else f"t.{ddl.quote_ident(c.name)}" for c in t.columns)
            on = " AND ".join(f"t.{ddl.quote_ident(k)} = s.{ddl.quote_ident(k)}" for k in op.keys)
            sql = f"SELECT {items} FROM __tg_target AS t JOIN __tg_excluded AS s ON {on}"
            resolver = StatementResolver(self, SessionInfo(), overrides=overrides)
            tq, _ = self._translate(self._parse_one(sql), [], SessionInfo(), resolver)
            updated = sparkmod.collect_arrow(spark.sql(tq.spark_sql))
        finally:
            spark.catalog.dropTempView(target_view)
            spark.catalog.dropTempView(source_view)
        types = list(tq.output_types or [None] * len(cols))
        arrays = [coerce_array(storage_to_result(updated.column(i), typ or c.type), c.type, c.name)
                  for i, (c, typ) in enumerate(zip(t.columns, types))]
        updated = pa.Table.from_arrays(arrays, schema=storage_schema(t.columns))
        self._check_not_null(t, updated)
        hits = updated.select(op.keys).append_column("__tg_hit", pa.repeat(True, updated.num_rows))
        joined = data.select(op.keys).append_column("__tg_i", pa.array(range(data.num_rows), pa.int64())).join(
            hits, keys=op.keys, join_type="left outer")
        fresh = pc.filter(joined.column("__tg_i"), pc.is_null(joined.column("__tg_hit"))).combine_chunks()
        rows = pa.concat_tables([updated, data.select(updated.column_names).cast(updated.schema).take(fresh.sort())])
        return WriteOp(t, "upsert", rows, keys=op.keys, base_version=base_version)

    def snapshot_frame(self, t: TableDef, snap: Snapshot) -> DataFrame:
        schema = sparkmod.spark_schema_ddl([(c.name, c.type) for c in t.columns])
        if not snap.files:
            return self._empty_frame(t)
        return self.spark.read.schema(schema).parquet(*snap.files)

    def _empty_frame(self, t: TableDef) -> DataFrame:
        """An empty DataFrame with ``t``'s storage schema (no Python worker, unlike createDataFrame([]))."""
        cols = [f"CAST(NULL AS {sparkmod.spark_type_sql(c.type)}) AS `{c.name.replace('`', '``')}`" for c in t.columns]
        return self.spark.range(0).selectExpr(*cols)

    def _new_tag(self) -> str:
        return f"tidegate-s{self.id}-q{next(self._tag_seq)}"

    def _run(self, fn: Any, sql: str | None = None, tag: str | None = None) -> Any:
        """Run Spark work tagged for cancel(); map Spark errors to SqlError.

        ``tag``: the statement's tag when it spans several calls (a streamed result).
        """
        spark = self.spark
        sc = spark.sparkContext
        tag = tag or self._new_tag()
        with self._lock:
            self._current_tag = tag
            self._cancelled = False
        spark.addTag(tag)
        sc.addJobTag(tag)
        # Cancel interrupts the tasks' threads too: without it a cancelled task runs on until
        # it next checks its kill flag, which a tight loop (a cross join's count) may not do
        # for minutes.
        sc.setInterruptOnCancel(True)
        try:
            if self._interrupt.is_set():  # cancelled after the statement began, before its Spark work
                with self._lock:
                    self._cancelled = True
                raise SqlError("57014", "canceling statement due to user request")
            return fn()
        except SqlError:
            raise
        except Exception as exc:  # noqa: BLE001 - every Spark failure becomes a SqlError
            if self._cancelled:
                raise SqlError("57014", "canceling statement due to user request") from None
            from engine.errors import map_spark_error

            raise map_spark_error(exc, sql) from None
        finally:
            spark.removeTag(tag)
            sc.removeJobTag(tag)
            with self._lock:
                self._current_tag = None

    def cancel(self) -> None:
        """Interrupt the running statement's Spark jobs (thread-safe)."""
        self._interrupt.set()
        with self._lock:
            tag = self._current_tag
            if tag is None or self._spark is None:
                return
            self._cancelled = True
        self._cancel_tag(tag)
        # A cancel that arrives while the statement is still being analysed finds no Spark job
        # yet: keep cancelling the tag until the statement's work ends.
        threading.Thread(target=self._keep_cancelling, args=(tag,), daemon=True,
                         name=f"cancel-{tag}").start()

    def _keep_cancelling(self, tag: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(0.1)
            with self._lock:
                if self._current_tag != tag:
                    return
            self._cancel_tag(tag)

    def _cancel_tag(self, tag: str) -> None:
        spark = self._spark  # not self.spark: a closed session must not take a pooled one
        try:
            if spark is not None:
                spark.interruptTag(tag)
            self.engine.runtime.wait(0).sparkContext.cancelJobsWithTag(tag)
        except Exception:  # noqa: BLE001 - nothing running any more
            log.debug("cancel of %s found nothing to interrupt", tag)

    def close(self) -> None:
        if self._pending is not None:
            self.rollback()
        if self.temp_schema is not None:  # the session's temporary tables end with it
            try:
                self.engine.discard_temp_schema(self.temp_schema)
            except Exception:  # noqa: BLE001 - the next start removes what is left
                log.warning("session %s: temporary schema %s not removed", self.id, self.temp_schema, exc_info=True)
            self.temp_schema = None
        self._closed = True
        self.engine.locks.release_all(self.id)
        self._analyzed = None
        spark, views = self._spark, self._views
        self._spark, self._views = None, {}
        if spark is None:
            return
        # Views over a transaction's pending rows are this connection's alone.
        for location in [loc for loc, e in views.items() if e.signature[2] is not None]:
            _drop_view(spark, views.pop(location).view_name)
        try:
            self.engine.give_back_spark_session(spark, views)
        except Exception:  # noqa: BLE001 - Spark may be stopping
            log.debug("session %s: Spark session not kept", self.id, exc_info=True)

    def _forget_view(self, location: str | None) -> None:
        entry = self._views.pop(location or "", None)
        if entry is not None and self._spark is not None:
            _drop_view(self._spark, entry.view_name)

    # -- transactions ------------------------------------------------------------------------

    def begin(self) -> None:
        if self._pending is None:
            self._pending = []
            self._ddl = BlockDdl(CatalogTxn(self.engine.catalog))
            self._block_events = []

    def commit(self) -> None:
        """One commit for the block: its writes and its DDL become visible together, or (on a
        conflict: 23505, 40001, 42P07) nothing does."""
        pending, self._pending = self._pending, None
        block, self._ddl = self._ddl, None
        try:
            record = block.record() if block is not None else None
            if pending or record is not None:
                self.store.commit_all(pending or [], self.engine.journal, record, self.engine.catalog,
                                      self.commit_hooks)
        except BaseException:
            if block is not None:
                block.discard(self.store, self.engine.journal)
            raise
        finally:
            self.engine.locks.release_all(self.id)
        if block is not None:
            block.committed()
        events, self._block_events = self._block_events, []
        for obj, user, payload in events:
            self.engine.events.record(DDL_EVENT, object=obj, user=user, payload=payload)
        self._temp_on_commit()

    def discard_temp(self) -> None:
        """DISCARD TEMP: drop this session's temporary relations (inside a block, through the
        block's catalog, so ROLLBACK brings them back)."""
        if self.temp_schema is None:
            return
        if self._ddl is None:
            self.engine.discard_temp_schema(self.temp_schema)
            self.temp_schema = None
            return
        for t in sorted(self.catalog.list_tables(self.temp_schema), key=lambda t: t.kind != "view"):
            if self.catalog.get_table(t.schema, t.name) is not None:
                self.catalog.drop_table(t.schema, t.name)
                self._forget_relation(t)

    def _temp_on_commit(self) -> None:
        """A transaction committed (a block, or a statement outside one): empty the temporary
        tables created ON COMMIT DELETE ROWS and drop those created ON COMMIT DROP."""
        if self.temp_schema is None or self._pending is not None:
            return
        for t in self.engine.catalog.list_tables(self.temp_schema, kind="table"):
            action = t.options.get(ddl.ON_COMMIT_OPTION)
            if action == "drop":
                if self.engine.catalog.get_table(t.schema, t.name) is None:
                    continue
                self.engine.catalog.drop_table(t.schema, t.name)
                self._forget_relation(t)
                self._drop_owned_sequences({t.oid})
            elif action == "delete" and t.location and self.store.snapshot(t.location).files:
                self.store.apply_op(WriteOp(t, "overwrite", storage_schema(t.columns).empty_table()))
                self._forget_view(t.location)

    def rollback(self) -> None:
        self._pending = None
        self._block_events = []
        block, self._ddl = self._ddl, None
        try:
            if block is not None:
                block.discard(self.store, self.engine.journal)
        finally:
            self.engine.locks.release_all(self.id)

    def _lock_for_ddl(self, t: TableDef) -> None:
        """DROP/ALTER of a table inside a block: its write lock until the block ends, so no
        UPDATE/DELETE/upsert of another session interleaves (PostgreSQL's ACCESS EXCLUSIVE)."""
        if self.in_block and t.kind == "table" and t.location:
            self.engine.locks.acquire(self.id, t.location, t.name, self._interrupt.is_set)

    def _write(self, op: WriteOp) -> int | None:
        """Apply ``op`` now, or at COMMIT inside a transaction; returns the rows an applied
        append stored (None when deferred)."""
        if self._pending is not None:
            self._pending.append(op)
            return None
        _, applied = self.store.apply_op(op)
        return applied.data.num_rows if isinstance(applied.data, pa.Table) else None

    @contextmanager
    def _rewriting(self, t: TableDef) -> Iterator[None]:
        """Around an UPDATE/DELETE/TRUNCATE/upsert: the table's write lock (engine.locks), taken
        before the statement reads and kept until its transaction ends, so each such statement
        reads what the previous one committed and no update is lost."""
        self.engine.locks.acquire(self.id, t.location or "", t.name, self._interrupt.is_set)
        try:
            yield
        finally:
            if self._pending is None:
                self.engine.locks.release_all(self.id)

    def _retrying(self, fn: Any, *args: Any) -> Any:
        """Run an UPDATE/DELETE again when a commit that is not such a statement (an upsert, a
        flow's merge) changed its rows between its read and its commit: READ COMMITTED
        re-evaluates on the newer rows. Inside a block the 40001 goes to the client."""
        for attempt in range(5):
            try:
                return fn(*args)
            except SqlError as e:
                if e.sqlstate != "40001" or self._pending is not None or attempt == 4:
                    raise
                log.debug("statement re-run after a concurrent commit (%s)", e.message)
        raise AssertionError("unreachable")

    # -- entry points ------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] = (), info: SessionInfo | None = None) -> RowStream | CommandResult:
        """Run ONE statement; every failure is a SqlError (42P01 carries the relation's position)."""
        self._interrupt.clear()
        info = info or SessionInfo()
        try:
            with pgvalues.use_session_zone(info.timezone):  # value input in the session's TimeZone
                result = self._execute(sql, list(params), info)
            if isinstance(result, CommandResult) and not info.internal:
                self._note_ddl(sql, result, info)
            if self._pending is None:  # the statement was its own transaction: it committed
                self._temp_on_commit()
            return result
        except SqlError as exc:
            if exc.sqlstate == "42P01" and exc.position is None:
                exc.position = _relation_position(sql, exc.message)
            raise

    def _note_ddl(self, sql: str, result: CommandResult, info: SessionInfo) -> None:
        """A DDL statement succeeded: its event now, or at COMMIT inside a block."""
        try:
            event = ddl_event(sql, result.tag, lambda: self._current_schema(info))
        except Exception:  # noqa: BLE001 - recording never fails a statement
            log.exception("describing a DDL event failed")
            return
        if event is None:
            return
        obj, payload = event
        if self._pending is not None:
            self._block_events.append((obj, info.user, payload))
        else:
            self.engine.events.record(DDL_EVENT, object=obj, user=info.user, payload=payload)

    def _execute(self, sql: str, params: list[Any], info: SessionInfo) -> RowStream | CommandResult:
        toks = sqllex.leading(sql)
        if not toks:
            raise SqlError("42601", "syntax error at end of input")
        w = [t.upper for t in toks[:4]] + ["", "", "", ""]
        first = w[0]
        if privileges.handles(w) or (first == "ALTER" and privileges.is_owner_change(sqllex.scan(sql))):
            return privileges.execute(self, sql, info)
        if first in ("CREATE", "DROP", "SHOW", "ADMIN", "COMMENT") and flow_statements.is_flow_statement(sql):
            if self.in_block and first in ("CREATE", "DROP", "COMMENT"):
                raise SqlError("25001", f"{first} FLOW cannot run inside a transaction block",
                               hint="Flows are not transactional: run it outside BEGIN ... COMMIT (autocommit).")
            return flow_statements.execute(self, sql, info)
        if (first in ("CREATE", "ALTER", "DROP") and w[1] == "SEQUENCE") or (
                first == "CREATE" and w[1] in ("TEMP", "TEMPORARY", "UNLOGGED") and w[2] == "SEQUENCE"):
            return self._sequence_statement(sql, info)
        if first in ("CREATE", "DROP") and w[1] == "DATABASE":
            return self._database_statement(sql, info)
        if first == "ALTER" and w[1] == "TABLE" and _is_table_options(sql):
            return self._alter_table_options(sql, info)
        if first == "CREATE" and (w[1] == "TABLE" or (w[1] in ("TEMP", "TEMPORARY", "UNLOGGED") and w[2] == "TABLE")):
            result = self._create_table(sql, params, info)
            self.engine.flows.nudge()  # a pending flow may be waiting for this table
            return result
        self._overriding = None
        if first == "INSERT":
            clause = _overriding_clause(sql)
            if clause is not None:  # INSERT INTO t [(cols)] OVERRIDING {SYSTEM|USER} VALUE ...: identity columns
                self._overriding, start, end = clause
                sql = sql[:start] + " " + sql[end:]
            fast = self._insert_fast(sql, params, info)
            if fast is not None:
                return fast
        if (first == "CREATE" and (w[1] == "INDEX" or w[1:3] == ["UNIQUE", "INDEX"])) or w[:2] == ["DROP", "INDEX"]:
            return constraints.index_statement(self, sql, info)
        if self.engine.jobs.handles(w):  # SUBMIT JOB, SHOW JOBS, FETCH / WAIT / CANCEL JOB
            return self.engine.jobs.execute(sql, info, self, params)
        if self.engine.refresh.handles(w[:3]):  # REFRESH TABLE t [WAIT], SHOW REFRESH STATUS
            return self.engine.refresh.execute(sql, info)
        if first == "SHOW":
            return self._show(sql, sqllex.scan(sql), info)
        if first == "EXPLAIN":
            return self._explain(sql, params, info)
        if first == "COMMENT":
            return self._comment(sql, info)
        if first in ("BEGIN", "COMMIT", "ROLLBACK", "START", "END", "SET", "RESET"):
            raise SqlError("0A000", f"{first} must be handled by the session, not the engine")
        tree = self._parse_one(sql)
        return self._dispatch(tree, sql, params, info)

    def _parse_one(self, sql: str) -> exp.Expression:
        from engine.translate import parse_postgres

        trees = parse_postgres(sql)
        trees = [t for t in trees if t is not None]
        if len(trees) != 1:
            raise SqlError("42601", "cannot execute several statements at once" if trees else "empty statement")
        return trees[0]

    def _dispatch(self, tree: exp.Expression, sql: str, params: list[Any], info: SessionInfo) -> RowStream | CommandResult:
        if not isinstance(tree, exp.Insert):
            _refuse_sequence_functions(tree)
        if isinstance(tree, (exp.Query, exp.Values)) or (isinstance(tree, exp.Subquery)):
            return self._query(tree, sql, params, info)
        if isinstance(tree, exp.Insert):
            return self._insert(tree, params, info)
        if isinstance(tree, exp.Update):
            return self._update(tree, params, info)
        if isinstance(tree, exp.Delete):
            return self._delete(tree, params, info)
        if isinstance(tree, exp.Create):
            return self._create(tree, sql, params, info)
        if isinstance(tree, exp.Drop):
            return self._drop(tree, info)
        if isinstance(tree, exp.Alter):
            return self._alter(tree, info)
        if isinstance(tree, exp.TruncateTable):
            return self._truncate(tree, info)
        if isinstance(tree, exp.Merge):
            from engine.merge import execute_merge

            return execute_merge(self, tree, params, info)
        if isinstance(tree, exp.Copy):
            raise SqlError("0A000", "COPY must be sent through the COPY protocol")
        word = sql.strip().split(None, 1)[0].upper() if sql.strip() else ""
        raise SqlError("0A000", f"statement {word} is not supported")

    # -- queries -----------------------------------------------------------------------------

    def _translate(self, tree: exp.Expression, params: Sequence[Any], info: SessionInfo,
                   resolver: StatementResolver | None = None, client: bool = False) -> tuple[Any, StatementResolver]:
        """``client``: the rows go to the client (exact numeric operands ride along: translate_query)."""
        from engine.translate import translate_query

        resolver = resolver or StatementResolver(self, info)
        with self.store.gate.reading():  # the relations and snapshots of one moment
            tq = translate_query(tree, resolver, list(params), exact_numeric=client)
        return tq, resolver

    def _query(self, tree: exp.Expression, sql: str, params: list[Any], info: SessionInfo) -> RowStream:
        if tree.args.get("locks"):
            self._lock_rows(tree, info)
        self.engine.runtime.wait()

        def work() -> RowStream:
            described = None if params else self._take_analyzed(sql, info)
            if described is not None:
                tq, df = described.tq, described.df
            else:
                tq, _ = self._translate(tree, params, info, client=True)
                df = self.spark.sql(tq.spark_sql)
            return self._rowstream(df, tq.output_names, tq.output_types, tq.spark_sql, small=_small_result(tree),
                                   operands=tq.operands)

        return self._run(work, sql)

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
            named = {_ident(e.this if isinstance(e, exp.Table) else e) for e in lock.expressions or []}
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

    def _take_analyzed(self, sql: str, info: SessionInfo) -> _Analyzed | None:
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
            return RowStream(fields, _convert_batches(batches, fields, operands), command=command)
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

        return RowStream(fields, _convert_batches(guarded(), fields, operands), close=close, command=command)

    def _explain(self, sql: str, params: list[Any], info: SessionInfo) -> RowStream:
        """EXPLAIN [(options)] query: Spark's plan, one line per row in column ``QUERY PLAN``."""
        tree = self._parse_one(sql)
        self.engine.runtime.wait()

        def work() -> RowStream:
            tq, _ = self._translate(tree, params, info)
            rows = sparkmod.collect_arrow(self.spark.sql(tq.spark_sql))
            text = "\n".join(str(v) for v in rows.column(0).to_pylist()) if rows.num_columns else ""
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

    def _current_schema(self, info: SessionInfo) -> str:
        """Where an unqualified CREATE puts a relation: the first existing schema on search_path
        other than the temporary one (CREATE TEMP names it)."""
        for s in info.search_path:
            if not is_temp_schema(s) and self.catalog.get_schema(s) is not None:
                return s
        return "public"

    def _temp_schema_for(self, schema: str | None, info: SessionInfo) -> str:
        """The schema of a new temporary relation: the session's ``pg_temp_N``, created now if
        needed (it lasts until the session ends, whatever the transaction does). Needs the
        TEMPORARY privilege on the database (42501)."""
        own = info.temp_schema
        if schema is not None and schema not in ("pg_temp", own):
            if is_temp_schema(schema):
                raise SqlError("0A000", "cannot create relations in temporary schemas of other sessions")
            raise SqlError("42P16", "cannot create temporary relation in non-temporary schema",
                           hint="Leave the schema out (or write pg_temp.name).")
        catalog = self.engine.catalog
        if not catalog.roles.has(info, "d", DATABASE_OID, None, "TEMPORARY"):
            raise SqlError("42501", f'permission denied to create temporary tables in database "{catalog.database}"',
                           hint="A superuser can GRANT TEMPORARY ON DATABASE to the role.")
        catalog.create_temp_schema(own, owner=info.user)
        self.temp_schema = own
        return own

    def _table_name(self, node: exp.Table) -> tuple[str | None, str]:
        catalog_part = node.args.get("catalog")
        if catalog_part is not None and _ident(catalog_part) not in ("tidegate", self.catalog.database):
            raise SqlError("0A000", f'cross-database references are not implemented: "{node.sql("postgres")}"')
        db = node.args.get("db")
        return (_ident(db) if db is not None else None), _ident(node.this)

    def _resolve_target(self, node: exp.Table, info: SessionInfo, *, allow_view: bool = False) -> TableDef:
        schema, name = self._table_name(node)
        t = self.catalog.resolve_table(name, schema, info.search_path)
        if (t.kind == "view" and not allow_view) or t.kind == "sequence":
            raise SqlError("42809", f'"{t.name}" is not a table')
        return t

    # -- DDL ---------------------------------------------------------------------------------

    def _create_table(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        ct = ddl.parse_create_table(sql)
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
            _refuse_other_temp_schema(schema)
        if ct.as_query_sql is not None:
            return self._create_table_as(ct, schema, params, info)
        if self.catalog.get_schema(schema) is None:
            raise SqlError("3F000", f'schema "{schema}" does not exist')
        if not ct.temp:
            self.catalog.roles.check_schema(info, schema, "CREATE")
        if self.catalog.get_table(schema, ct.name) is not None:
            if ct.if_not_exists:
                return CommandResult("CREATE TABLE", notices=[f'relation "{ct.name}" already exists, skipping'])
            raise SqlError("42P07", f'relation "{ct.name}" already exists')
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

    # -- sequences ---------------------------------------------------------------------------

    def _sequence_statement(self, sql: str, info: SessionInfo) -> CommandResult:
        """CREATE / ALTER / DROP SEQUENCE: the definition is a catalog relation (kind "sequence",
        transactional in a block); the value lives in ``catalog.sequences`` (not transactional)."""
        st = ddl.parse_sequence_statement(sql)
        if st.action == "drop":
            return self._drop_sequences(st, info)
        parts = st.names[0]
        if len(parts) > 3:
            raise SqlError("42601", f"improper qualified name (too many dotted names): {'.'.join(parts)}")
        if len(parts) == 3 and parts[0] != self.catalog.database:
            raise SqlError("0A000", f'cross-database references are not implemented: "{".".join(parts)}"')
        name = parts[-1]
        if st.action == "create":
            schema = parts[-2] if len(parts) > 1 else self._current_schema(info)
            if schema == "pg_temp" or schema == info.temp_schema:
                raise SqlError("0A000", "temporary sequences are not supported",
                               hint="Create the sequence in an ordinary schema, or use a serial column of a temporary table.")
            _refuse_other_temp_schema(schema)
            if self.catalog.get_schema(schema) is None:
                raise SqlError("3F000", f'schema "{schema}" does not exist')
            self.catalog.roles.check_schema(info, schema, "CREATE")
            if self.catalog.get_table(schema, name) is not None:
                if st.if_exists:
                    return CommandResult("CREATE SEQUENCE", notices=[f'relation "{name}" already exists, skipping'])
                raise SqlError("42P07", f'relation "{name}" already exists')
            params = ddl.sequence_params(st.options)
            if "owned_by" in st.options:
                params = replace(params, owned_by=self._sequence_owner(st.options["owned_by"], schema, info))
            self.catalog.create_table(TableDef(schema, name, [], kind="sequence", options=params.to_options(),
                                               oid=self.catalog.next_oid(), owner=None if info.internal else info.user))
            return CommandResult("CREATE SEQUENCE")
        try:
            seq = self._resolve_sequence_parts(parts, info)
        except SqlError as e:
            if st.if_exists and e.sqlstate == "42P01":
                return CommandResult("ALTER SEQUENCE", notices=[f'relation "{name}" does not exist, skipping'])
            raise
        self.catalog.roles.check_owner(info, "sequence", seq.name, seq.owner)
        old = SequenceParams.of(seq)
        params = ddl.sequence_params(st.options, old)
        if "owned_by" in st.options:
            params = replace(params, owned_by=self._sequence_owner(st.options["owned_by"], seq.schema, info))
        if params != old:
            kept = {k: v for k, v in seq.options.items() if not k.startswith("seq.")}
            self.catalog.replace_table(replace(seq, options={**kept, **params.to_options()}))
        restart = st.options.get("restart")
        if restart is not None:  # as setval: takes effect at once, whatever the block does
            self.engine.catalog.sequences.restart(seq, params.start if restart == "start" else restart)
        return CommandResult("ALTER SEQUENCE")

    def _sequence_owner(self, target: list[str] | None, schema: str, info: SessionInfo) -> tuple[int, str] | None:
        """OWNED BY table.column (NONE: None): the table must be in the sequence's schema."""
        if target is None:
            return None
        tparts, col = target[:-1], target[-1]
        t = self.catalog.resolve_table(tparts[-1], tparts[-2] if len(tparts) > 1 else None, info.search_path)
        if t.kind != "table":
            raise SqlError("42809", f'sequence cannot be owned by relation "{t.name}"',
                           detail=f'This operation is not supported for {relation_word(t)}s.')
        if t.schema != schema:
            raise SqlError("55000", "sequence must be in same schema as table it is linked to")
        if t.column(col) is None:
            raise SqlError("42703", f'column "{col}" of relation "{t.name}" does not exist')
        self.catalog.roles.check_owner(info, "table", t.name, t.owner, schema=t.schema)
        return (t.oid, col)

    def _resolve_sequence_parts(self, parts: list[str], info: SessionInfo) -> TableDef:
        t = self.catalog.resolve_table(parts[-1], parts[-2] if len(parts) > 1 else None, info.search_path)
        if t.kind != "sequence":
            raise SqlError("42809", f'"{t.name}" is not a sequence')
        return t

    def _sequence_users(self, seq: TableDef, info: SessionInfo) -> list[tuple[TableDef, ColumnDef]]:
        """Columns whose DEFAULT calls nextval of ``seq``."""
        out = []
        for t in self.catalog.list_tables(kind="table"):
            for c in t.columns:
                if _sequence_default(c.default) is not None:
                    try:
                        if getattr(self._default_sequence(c, info), "oid", None) == seq.oid:
                            out.append((t, c))
                    except SqlError:
                        continue
        return out

    def _drop_sequences(self, st: ddl.SequenceStatement, info: SessionInfo) -> CommandResult:
        notices: list[str] = []
        targets: list[TableDef] = []
        for parts in st.names:
            try:
                seq = self.catalog.resolve_table(parts[-1], parts[-2] if len(parts) > 1 else None, info.search_path)
            except SqlError:
                if st.if_exists:
                    notices.append(f'sequence "{parts[-1]}" does not exist, skipping')
                    continue
                raise SqlError("42P01", f'sequence "{parts[-1]}" does not exist') from None
            if seq.kind != "sequence":
                word = relation_word(seq)
                raise SqlError("42809", f'"{seq.name}" is not a sequence', hint=f"Use DROP {word.upper()} to remove a {word}.")
            self.catalog.roles.check_owner(info, "sequence", seq.name, seq.owner)
            targets.append(seq)
        for seq in targets:
            owner = SequenceParams.of(seq).owned_by
            if owner is not None:
                t = next((x for x in self.catalog.list_tables(kind="table") if x.oid == owner[0]), None)
                c = t.column(owner[1]) if t is not None else None
                if c is not None and c.identity is not None:
                    raise SqlError("2BP01", f"cannot drop sequence {seq.name} because column {c.name} of table {t.name} requires it",
                                   hint=f"You can drop column {c.name} of table {t.name} instead.")
            users = self._sequence_users(seq, info)
            if users and not st.cascade:
                raise SqlError("2BP01", f"cannot drop sequence {seq.name} because other objects depend on it",
                               detail="\n".join(f"default value for column {c.name} of table {t.name} depends on sequence {seq.name}"
                                                for t, c in users),
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            for t, c in users:  # CASCADE drops the column defaults
                notices.append(f"drop cascades to default value for column {c.name} of table {t.name}")
                current = self.catalog.get_table(t.schema, t.name)
                if current is not None:
                    self.catalog.replace_table(replace(current, columns=[replace(x, default=None) if x.name == c.name else x
                                                                         for x in current.columns]))
            self.catalog.drop_table(seq.schema, seq.name)
            self._forget_relation(seq)
        return CommandResult("DROP SEQUENCE", notices=notices)

    def _drop_owned_sequences(self, table_oids: set[int]) -> None:
        """DROP TABLE drops the sequences its columns own (SERIAL, identity, OWNED BY)."""
        if not table_oids:
            return
        for seq in self.catalog.list_tables(kind="sequence"):
            owner = SequenceParams.of(seq).owned_by
            if owner is not None and owner[0] in table_oids and self.catalog.get_table(seq.schema, seq.name) is not None:
                self.catalog.drop_table(seq.schema, seq.name)
                self._forget_relation(seq)

    def _eval_context(self, info: SessionInfo) -> dict[str, Any]:
        """What const_eval needs for one statement: its now(), and nextval/currval/setval/lastval."""
        return {"now": datetime.now(timezone.utc), "sequences": lambda fn, args: self.sequence_call(fn, args, info)}

    def _default_sequence(self, c: ColumnDef, info: SessionInfo) -> TableDef | None:
        """The sequence of a ``nextval('name'[::regclass])`` DEFAULT (None: another default)."""
        if c.default is None:
            return None
        name = _sequence_default(c.default)
        if name is None:
            return None
        return self._sequence_named(name, info)

    def _sequence_named(self, text: str, info: SessionInfo) -> TableDef:
        return sequence_named(self.catalog, text, info.search_path)

    def _next_values(self, seq: TableDef, n: int, info: SessionInfo) -> list[int]:
        return self.engine.catalog.sequences.next_values(seq, n, info.backend_pid)

    def sequence_call(self, fn: str, args: list[Any], info: SessionInfo) -> Any:
        """nextval / currval / setval / lastval (catalog.store.Sequences.call)."""
        return self.engine.catalog.sequences.call(self.catalog, fn, args, info.search_path, info.backend_pid)

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
        if _sequence_default(c.default) is not None:
            self._default_sequence(c, info or SessionInfo())  # 42P01 / 42809 now, as 'name'::regclass does
            return
        try:
            value = self._eval_default_text(c.default, {})
        except NotConstant:
            # evaluated by Spark at INSERT: only functions clients may call (42883 now, not then)
            from engine.translate import check_functions, parse_postgres

            for tree in parse_postgres(f"SELECT {c.default}"):
                check_functions(tree)
            return
        python_value(value, c.type, c.name)

    @staticmethod
    def _check_temp_table(ct: ddl.CreateTable) -> None:
        """What a temporary table cannot have: connector / refreshable tables read other storage."""
        if ct.options.get("connector") or ct.options.get("refresh_mode"):
            raise SqlError("0A000", "a temporary table cannot be a connector or refreshable table",
                           hint="Create it as an ordinary table, or leave TEMP out.")

    def _create_table_as(self, ct: ddl.CreateTable, schema: str, params: list[Any], info: SessionInfo) -> CommandResult:
        if self.catalog.get_schema(schema) is None:
            raise SqlError("3F000", f'schema "{schema}" does not exist')
        if not ct.temp:
            self.catalog.roles.check_schema(info, schema, "CREATE")
        if self.catalog.get_table(schema, ct.name) is not None:
            if ct.if_not_exists:
                return CommandResult("CREATE TABLE AS", notices=[f'relation "{ct.name}" already exists, skipping'])
            raise SqlError("42P07", f'relation "{ct.name}" already exists')
        tree = self._parse_one(ct.as_query_sql or "")
        self.engine.runtime.wait()

        def work() -> tuple[list[str], list[ColumnType], pa.Table]:
            tq, _ = self._translate(tree, params, info)
            df = self.spark.sql(tq.spark_sql)
            table = sparkmod.collect_arrow(df)
            names = list(tq.output_names) if tq.output_names else table.column_names
            types = [t if t is not None else pg_type_for_arrow(f.type)
                     for t, f in zip(tq.output_types or [None] * len(names), table.schema)]
            return names, types, table

        names, types, data = self._run(work, ct.as_query_sql)
        seen: set[str] = set()
        for n in names:
            if n in seen:
                raise SqlError("42701", f'column "{n}" specified more than once')
            seen.add(n)
        columns = [ColumnDef(n, _storable_type(t)) for n, t in zip(names, types)]
        table = self.new_table(TableDef(schema, ct.name, columns, options=ct.options, comment=ct.comment), info)
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

    def _create(self, tree: exp.Create, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        kind = (tree.args.get("kind") or "").upper()
        if kind == "SCHEMA":
            node = tree.this
            name = _ident(node.args.get("db") or node.this)
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
            columns_alias = [_ident(e) for e in target.expressions]
            target = target.this
        schema, name = self._table_name(target)
        explicit_schema = schema
        props = tree.args.get("properties")
        temp = props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions)
        if temp or schema == "pg_temp" or (schema is not None and schema == info.temp_schema):
            schema = self._temp_schema_for(schema, info)  # CREATE TEMP VIEW: the session's own
        else:
            schema = schema or self._current_schema(info)
            _refuse_other_temp_schema(schema)
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
                name = _ident(node.args.get("db") or node.this)
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
            if _sequence_default(col.default) is not None:
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
                name = _ident(node.this if isinstance(node, exp.Column) else node)
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
            old = _ident(action.this.this if isinstance(action.this, exp.Column) else action.this)
            to = _ident(action.args["to"].this if isinstance(action.args["to"], exp.Column) else action.args["to"])
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
            new_name = _ident(action.this.this)
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
        name = _ident(action.this)
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

    # -- defaults and constants ---------------------------------------------------------------

    def _eval_default_text(self, text: str, ctx: dict[str, Any]) -> Any:
        tree = _parse_default(text)
        return const_eval(tree, [], ctx)

    def _default_value(self, c: ColumnDef, ctx: dict[str, Any], info: SessionInfo) -> Any:
        if c.default is None:
            return None
        try:
            return self._eval_default_text(c.default, ctx)
        except NotConstant:
            pass
        self.engine.runtime.wait()

        def work() -> Any:
            tree = self._parse_one(f"SELECT {c.default}")
            tq, _ = self._translate(tree, [], info)
            table = sparkmod.collect_arrow(self.spark.sql(tq.spark_sql))
            return table.column(0)[0].as_py()

        return self._run(work, c.default)

    # -- INSERT ------------------------------------------------------------------------------

    def _insert_fast(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult | None:
        """INSERT INTO t [(cols)] VALUES (constants), ... without sqlglot or Spark."""
        ins = _read_fast_insert(sql, params)
        if ins is None:
            return None
        rows = ins.rows
        t, target_cols = self._fast_insert_target(ins, info)
        width = len(target_cols)
        for r in rows:
            if len(r) > width:
                raise SqlError("42601", "INSERT has more expressions than target columns")
            if len(r) < width and ins.columns is not None:
                raise SqlError("42601", "INSERT has more target columns than expressions")
        ctx = self._eval_context(info)
        columns_values: dict[str, list[Any]] = {c.name: [] for c in target_cols}
        for r in rows:
            for k, c in enumerate(target_cols):
                v = r[k] if k < len(r) else _DEFAULT
                if isinstance(v, _TypedLiteral):
                    if not v.fits(c.type):
                        return None
                    v = v.value
                columns_values[c.name].append(v)
        data = self._build_rows(t, columns_values, len(rows), ctx, info)
        op = self._plan_insert(t, data, None, info)
        self._write(op)
        return CommandResult(f"INSERT 0 {data.num_rows}")

    def _describe_insert_fast(self, sql: str, param_types: Sequence[ColumnType | None],
                              info: SessionInfo) -> list[ColumnType] | None:
        """Parameter types of an INSERT that :meth:`_insert_fast` can run, without sqlglot.

        Drivers Parse and Describe every INSERT they send (psycopg, JDBC), so a large VALUES
        list would otherwise be parsed by sqlglot once per statement just to learn "no rows".
        A parameter takes the type of the column it is inserted into, as in PostgreSQL.
        """
        highest = sqllex.max_param_index(sql)
        markers = [_ParamMarker(k) for k in range(1, highest + 1)]
        try:
            ins = _read_fast_insert(sql, markers)
            if ins is None:
                return None
            _, target_cols = self._fast_insert_target(ins, info)
        except SqlError:
            return None  # the slow path reports it with PostgreSQL's wording
        rows = ins.rows
        inferred: dict[int, ColumnType] = {}
        for row in rows:
            for c, v in zip(target_cols, row):
                if isinstance(v, _ParamMarker):
                    inferred.setdefault(v.number, c.type)
            if any(isinstance(v, _ParamMarker) for v in row[len(target_cols):]):
                return None
        used = max(inferred, default=0)
        if set(inferred) != set(range(1, used + 1)):
            return None  # gaps in the numbering: leave the details to the full analysis
        return _fill_params(param_types, inferred, used)

    def _fast_insert_target(self, ins: _FastInsert, info: SessionInfo) -> tuple[TableDef, list[ColumnDef]]:
        """The table and target columns of a fast INSERT."""
        name, schema, cols = ins.name, ins.schema, ins.columns
        t = self.catalog.resolve_table(name, schema, info.search_path)
        if t.kind == "view":
            raise SqlError("42809", f'cannot insert into view "{t.name}"')
        if t.kind == "sequence":
            raise SqlError("42809", f'cannot change sequence "{t.name}"')
        self.catalog.roles.check_table(info, t, "INSERT")
        return t, self._target_columns(t, cols)

    def _target_columns(self, t: TableDef, cols: list[str] | None) -> list[ColumnDef]:
        if cols is None:
            return list(t.columns)
        out = []
        seen = set()
        for name in cols:
            c = t.column(name)
            if c is None:
                raise SqlError("42703", f'column "{name}" of relation "{t.name}" does not exist')
            if name in seen:
                raise SqlError("42701", f'column "{name}" specified more than once')
            seen.add(name)
            out.append(c)
        return out

    def _build_rows(self, t: TableDef, values: dict[str, list[Any] | pa.Array], n: int, ctx: dict[str, Any],
                    info: SessionInfo) -> pa.Table:
        """Full storage-form rows of ``t`` from given column values, defaults for the rest."""
        arrays = []
        overriding = self._overriding
        for c in t.columns:
            given = values.get(c.name)
            if given is not None and c.name == t.time_index:
                given = _epoch_values(given, c)
            if c.identity is not None and given is not None:
                explicit = (not isinstance(given, list)) or any(v is not _DEFAULT for v in given)
                if explicit and overriding == "user":
                    given = None if not isinstance(given, list) else [_DEFAULT] * len(given)
                elif explicit and c.identity == "a" and overriding != "system":
                    raise SqlError("428C9", f'cannot insert a non-DEFAULT value into column "{c.name}"',
                                   detail=f'Column "{c.name}" is an identity column defined as GENERATED ALWAYS.',
                                   hint="Use OVERRIDING SYSTEM VALUE to override.")
            seq = self._default_sequence(c, info) if c.default is not None and (
                given is None or (isinstance(given, list) and any(v is _DEFAULT for v in given))) else None
            if seq is not None:  # nextval() per row: the rows' values reserved in one transaction
                if given is None:
                    arr = _fast_array(self._next_values(seq, n, info), c)
                else:
                    fresh = iter(self._next_values(seq, sum(1 for v in given if v is _DEFAULT), info))
                    arr = _fast_array([next(fresh) if v is _DEFAULT else v for v in given], c)
                arrays.append(arr)
                continue
            if given is None:
                dv = python_value(self._default_value(c, ctx, info), c.type, c.name) if c.default is not None else None
                arr = pa.array([dv] * n, type=storage_type(c.type)) if dv is not None else pa.nulls(n, storage_type(c.type))
            elif isinstance(given, list):
                if any(v is _DEFAULT for v in given):
                    dv = self._default_value(c, ctx, info) if c.default is not None else None
                    given = [dv if v is _DEFAULT else v for v in given]
                arr = _fast_array(given, c)
            else:
                arr = coerce_array(given, c.type, c.name)
            arrays.append(round_to_precision(arr, c.type))  # literals and defaults too, as PostgreSQL
        table = pa.Table.from_arrays(arrays, schema=storage_schema(t.columns))
        self._check_not_null(t, table)
        return table

    def _not_null_error(self, t: TableDef, c: ColumnDef, columns: Sequence[pa.Array | pa.ChunkedArray]) -> SqlError:
        """23502 with PostgreSQL's detail: the first failing row, all of its columns."""
        idx = pc.index(pc.is_null(columns[t.columns.index(c)]), True).as_py()
        values = [columns[i][idx].as_py() for i in range(len(columns))]
        shown = ", ".join("null" if v is None else _text_of_value(v, col.type) for v, col in zip(values, t.columns))
        return SqlError("23502", f'null value in column "{c.name}" of relation "{t.name}" violates not-null constraint',
                        detail=f"Failing row contains ({shown}).")

    def _check_not_null(self, t: TableDef, data: pa.Table | pa.RecordBatch) -> None:
        for i, c in enumerate(t.columns):
            if c.not_null and data.column(i).null_count:
                raise self._not_null_error(t, c, data.columns)

    def _keys(self, t: TableDef) -> list[str]:
        if t.time_index:
            return list(dict.fromkeys(t.primary_key + [t.time_index]))
        return list(t.primary_key)

    def _append_mode(self, t: TableDef) -> bool:
        return t.options.get("append_mode", "false").lower() == "true"

    def _plan_insert(self, t: TableDef, data: pa.Table, on_conflict: exp.OnConflict | None,
                     info: SessionInfo | None = None) -> WriteOp:
        """The write for inserting ``data`` under ``t``'s key semantics and ON CONFLICT."""
        keys = self._keys(t)
        uniques = t.unique_sets()
        info = info or SessionInfo()
        if uniques or any(c["type"] == "f" for c in t.constraints):
            if on_conflict is not None:
                self._refuse_conflict_with_constraints(t, on_conflict, keys)
            constraints.check_unique(self, t, data, info)
            constraints.check_references(self, t, data, info)
        if not keys or (t.time_index and self._append_mode(t)):
            if on_conflict is not None and not keys:
                raise SqlError("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
            return WriteOp(t, "append", data, unique_sets=uniques)
        if t.time_index and on_conflict is None:
            return WriteOp(t, "upsert", dedupe_last(data, keys), keys=keys)
        # Unique keys (PostgreSQL semantics).
        if on_conflict is None:
            dups = duplicate_keys(data, keys)
            if dups.num_rows:
                raise self._unique_error(t, dups.slice(0, 1).to_pylist()[0])
            existing = self.store.existing_keys(t.location, keys, data)
            taken = self._keys_in_transaction(t, keys, existing, data)
            if taken:
                raise self._unique_error(t, dict(zip(keys, taken[0])))
            # checked again when it commits, against what others committed meanwhile
            return WriteOp(t, "append", data, keys=keys, unique=True, unique_sets=uniques)
        conflict_cols = [_ident(e.this.this if isinstance(e, exp.Ordered) else e.this if isinstance(e, exp.Column) else e)
                         for e in (on_conflict.args.get("conflict_keys") or [])]
        if conflict_cols and sorted(conflict_cols) != sorted(keys):
            raise SqlError("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
        if on_conflict.args.get("constraint") is not None:
            cname = _ident(on_conflict.args["constraint"])
            if cname != f"{t.name}_pkey":
                raise SqlError("42704", f'constraint "{cname}" for table "{t.name}" does not exist')
        action = on_conflict.args.get("action")
        do_nothing = bool(on_conflict.args.get("nothing")) or (action is not None and "NOTHING" in action.name.upper())
        if do_nothing:
            # Keep the first of in-batch duplicates, then drop rows whose key exists.
            positions = pa.array(range(data.num_rows), pa.int64())
            firsts = data.select(keys).append_column("__tg_i", positions).group_by(keys, use_threads=False).aggregate(
                [("__tg_i", "min")]).column("__tg_i_min").combine_chunks()
            data = data.take(firsts.sort())
            existing = self.store.existing_keys(t.location, keys, data)
            if existing.num_rows:
                hits = existing.append_column("__tg_hit", pa.repeat(True, existing.num_rows))
                joined = data.select(keys).append_column("__tg_i", pa.array(range(data.num_rows), pa.int64())).join(
                    hits, keys=keys, join_type="left outer")
                keep = pc.filter(joined.column("__tg_i"), pc.is_null(joined.column("__tg_hit"))).combine_chunks()
                data = data.take(keep.sort())
            if uniques:  # the rows left after skipping PRIMARY KEY conflicts must not break a UNIQUE
                constraints.check_unique(self, t, data, info)
            return WriteOp(t, "append", data, keys=keys, skip_existing=True, unique_sets=uniques)
        dups = duplicate_keys(data, keys)
        if dups.num_rows:
            raise SqlError("21000", "ON CONFLICT DO UPDATE command cannot affect row a second time",
                           hint="Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
        updates = {}
        for assignment in on_conflict.expressions or []:
            target = _ident(assignment.this.this if isinstance(assignment.this, exp.Column) else assignment.this)
            if t.column(target) is None:
                raise SqlError("42703", f'column "{target}" of relation "{t.name}" does not exist')
            updates[target] = _datafusion_expr(assignment.expression, t)
        if on_conflict.args.get("where") is not None:
            raise SqlError("0A000", "ON CONFLICT DO UPDATE ... WHERE is not supported")
        return WriteOp(t, "merge", data, keys=keys, updates=updates)

    def _refuse_conflict_with_constraints(self, t: TableDef, on_conflict: exp.OnConflict, keys: list[str]) -> None:
        """ON CONFLICT on a table with UNIQUE constraints: only ``ON CONFLICT (primary key) DO NOTHING``."""
        cols = [_ident(e.this.this if isinstance(e, exp.Ordered) else e.this if isinstance(e, exp.Column) else e)
                for e in (on_conflict.args.get("conflict_keys") or [])]
        action = on_conflict.args.get("action")
        nothing = bool(on_conflict.args.get("nothing")) or (action is not None and "NOTHING" in action.name.upper())
        cname = _ident(on_conflict.args["constraint"]) if on_conflict.args.get("constraint") is not None else None
        for name, ucols in t.unique_sets():
            if (cols and sorted(cols) == sorted(ucols)) or cname == name:
                raise SqlError("0A000", f'ON CONFLICT on unique constraint "{name}" is not supported',
                               hint="ON CONFLICT works on the PRIMARY KEY; make the unique columns the primary key, "
                                    "or check for the row before inserting.")
        if not (keys and nothing and (sorted(cols) == sorted(keys) or cname == f"{t.name}_pkey")):
            raise SqlError("0A000", f'ON CONFLICT on table "{t.name}", which has UNIQUE constraints, supports only '
                                    "ON CONFLICT (primary key columns) DO NOTHING",
                           hint="Name the primary key columns as the conflict target and use DO NOTHING, or drop "
                                "the UNIQUE constraints.")

    def _keys_in_transaction(self, t: TableDef, keys: list[str], committed: pa.Table,
                             candidates: pa.Table) -> list[tuple]:
        """Which key tuples of ``candidates`` the table holds as this transaction sees it: the
        ``committed`` ones it has not deleted or updated away, and those its own writes added."""
        ops = self._pending_ops(t)
        present = {tuple(r.values()) for r in committed.select(keys).to_pylist()}
        wanted = {tuple(r.values()) for r in candidates.select(keys).to_pylist()}
        if ops:
            for op in ops:
                data = op.data if isinstance(op.data, pa.Table) else None
                if data is None:
                    continue
                if op.kind == "overwrite":
                    present = set()
                if op.kind in ("delete", "update") and op.keys == keys:
                    prefix = "__tg_old_" if op.kind == "update" else ""
                    present -= {tuple(r.values()) for r in data.select([prefix + k for k in keys]).to_pylist()}
                if op.kind in ("append", "upsert", "update", "merge", "overwrite"):
                    added = {tuple(r.values()) for r in data.select(keys).to_pylist()}
                    present |= added & wanted
        return sorted(present & wanted, key=lambda k: [str(v) for v in k])

    def _unique_error(self, t: TableDef, row: dict[str, Any]) -> SqlError:
        return SqlError("23505", f'duplicate key value violates unique constraint "{t.name}_pkey"',
                        detail=f"{key_text(row)} already exists.")

    def _insert(self, tree: exp.Insert, params: list[Any], info: SessionInfo) -> CommandResult:
        target = tree.this
        cols: list[str] | None = None
        if isinstance(target, exp.Schema):
            cols = [_ident(e) for e in target.expressions]
            target = target.this
        t = self._resolve_target(target, info)
        conflict = tree.args.get("conflict")
        self.catalog.roles.check_table(info, t, "INSERT", *(
            ["UPDATE"] if conflict is not None and "UPDATE" in str(conflict.args.get("action") or "").upper() else []),
            *(["SELECT"] if tree.args.get("returning") is not None else []))
        target_cols = self._target_columns(t, cols)
        source = tree.expression
        ctx = self._eval_context(info)
        data: pa.Table | None = None
        if isinstance(source, exp.Values):
            rows = []
            try:
                for tup in source.expressions:
                    items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
                    rows.append([_DEFAULT if _is_default(e) else const_eval(e, params, ctx) for e in items])
                values: dict[str, Any] = {c.name: [] for c in target_cols}
                for r in rows:
                    if len(r) > len(target_cols):
                        raise SqlError("42601", "INSERT has more expressions than target columns")
                    if len(r) < len(target_cols) and cols is not None:
                        raise SqlError("42601", "INSERT has more target columns than expressions")
                    for k, c in enumerate(target_cols):
                        values[c.name].append(r[k] if k < len(r) else _DEFAULT)
                data = self._build_rows(t, values, len(rows), ctx, info)
            except NotConstant:
                data = None
        if data is None:
            if source is None:
                data = self._build_rows(t, {}, 1, ctx, info)
            else:
                data = self._insert_source_via_spark(t, target_cols, source, params, info, ctx)
        conflict = tree.args.get("conflict")
        # ON CONFLICT decides from what is stored: it holds the table's write lock as UPDATE does, so
        # a racing upsert of the same key waits and then sees this one (the right count, no lost update).
        with self._rewriting(t) if conflict is not None else nullcontext():
            op = self._plan_insert(t, data, conflict, info)
            rows_written = op.data.num_rows if isinstance(op.data, pa.Table) else 0
            stored = self._write(op)
        if stored is not None and op.skip_existing:
            rows_written = stored
        returning = tree.args.get("returning")
        result_rows = None
        if returning is not None:
            affected = op.data
            if op.kind == "merge" and self._pending is None and isinstance(op.data, pa.Table) and op.data.num_rows:
                affected = self.store.rows_with_keys(t.location, op.keys, op.data)
            elif op.kind == "merge" and self._pending:
                # the rows the upsert leaves: computed now (reading the table does it)
                position = len(self._pending) - 1
                self.engine.runtime.wait()
                self._run(lambda: self.table_view(t, StatementResolver(self, info)))
                affected = self._pending[position].data
            result_rows = self._returning(t, affected, returning, params, info)
        return CommandResult(f"INSERT 0 {rows_written}", rows=result_rows)

    def _insert_source_via_spark(self, t: TableDef, target_cols: list[ColumnDef], source: exp.Expression,
                                 params: list[Any], info: SessionInfo, ctx: dict[str, Any]) -> pa.Table:
        _refuse_sequence_functions(source)
        if isinstance(source, exp.Values) and any(_is_default(e) for tup in source.expressions for e in tup.expressions):
            raise SqlError("0A000", "DEFAULT mixed with non-constant expressions in VALUES is not supported")
        self.engine.runtime.wait()

        def work() -> tuple[pa.Table, list[ColumnType | None]]:
            tq, _ = self._translate(source, params, info)
            table = sparkmod.collect_arrow(self.spark.sql(tq.spark_sql))
            return table, list(tq.output_types or [None] * table.num_columns)

        result, types = self._run(work)
        if result.num_columns > len(target_cols):
            raise SqlError("42601", "INSERT has more expressions than target columns")
        values: dict[str, Any] = {}
        for i, c in enumerate(target_cols[:result.num_columns]):
            src_type = types[i] if i < len(types) else None
            if not (c.name == t.time_index and src_type is not None and _epoch_scale(c) is not None
                    and src_type.pg.name in ("int2", "int4", "int8")):  # epoch integers: _build_rows
                _check_assignable(c, src_type)
            col = result.column(i)
            if src_type is not None:
                col = storage_to_result(col, src_type)
            values[c.name] = col
        return self._build_rows(t, values, result.num_rows, ctx, info)

    def _returning(self, t: TableDef, data: pa.Table | None, returning: exp.Returning, params: list[Any],
                   info: SessionInfo) -> RowStream:
        """Evaluate RETURNING over the affected rows (storage form ``data``)."""
        data = data if isinstance(data, pa.Table) else storage_schema(t.columns).empty_table()
        exprs = returning.expressions
        simple: list[tuple[str, int]] = []
        for e in exprs:
            if isinstance(e, exp.Star):
                simple.extend((c.name, i) for i, c in enumerate(t.columns))
                continue
            node = e.this if isinstance(e, exp.Alias) else e
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                name = _ident(node.this)
                idx = next((i for i, c in enumerate(t.columns) if c.name == name), None)
                if idx is None:
                    raise SqlError("42703", f'column "{name}" does not exist')
                simple.append((e.alias_or_name if isinstance(e, exp.Alias) else name, idx))
                continue
            if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
                simple.extend((c.name, i) for i, c in enumerate(t.columns))
                continue
            simple = []
            break
        else:
            fields = [ResultField(n, t.columns[i].type) for n, i in simple]
            arrays = [storage_to_result(data.column(i), t.columns[i].type) for _, i in simple]
            table = pa.Table.from_arrays(arrays, names=[f"c{k}" for k in range(len(arrays))]) if arrays else pa.table({})
            return RowStream(fields, _convert_batches(iter(table.to_batches()), fields))
        # General expressions: evaluate on Spark over the affected rows registered as the table.
        from engine.translate import ResolvedRelation

        self.engine.runtime.wait()

        def work() -> RowStream:
            view = f"tg_returning_{self.id}_{next(_view_ids)}"
            schema = sparkmod.spark_schema_ddl([(c.name, c.type) for c in t.columns])
            from pyspark.sql.types import _parse_datatype_string

            sdf = (self.spark.createDataFrame(data, schema=_parse_datatype_string(schema)) if data.num_rows
                   else self._empty_frame(t))
            sdf.createOrReplaceTempView(view)
            rel = ResolvedRelation(t.schema, t.name, view, [(c.name, c.type) for c in t.columns], None)
            resolver = StatementResolver(self, info, overrides={t.name: rel, f"{t.schema}.{t.name}": rel})
            select = exp.Select(expressions=[e.copy() for e in exprs]).from_(exp.Table(this=exp.to_identifier(t.name)))
            tq, _ = self._translate(select, params, info, resolver)
            df = self.spark.sql(tq.spark_sql)
            stream = self._rowstream(df, tq.output_names, tq.output_types, tq.spark_sql)
            batches = list(stream.batches)  # materialised: the temp view is dropped next
            self.spark.catalog.dropTempView(view)
            return RowStream(stream.fields, iter(batches))

        return self._run(work)

    # -- UPDATE / DELETE ---------------------------------------------------------------------

    def _scan_with_flag(self, t: TableDef, alias: str, where: exp.Expression | None, extra: list[exp.Expression],
                        params: list[Any], info: SessionInfo, matched_only: bool,
                        joined: list[exp.Expression] | None = None) -> tuple[pa.Table, int]:
        """Rows of ``t`` (storage form) + ``__tg_m`` (the WHERE holds) + ``extra`` values, from one
        snapshot; with ``matched_only`` just the rows the WHERE selects. Returns (rows, version).

        ``joined``: the FROM items of UPDATE ... FROM / USING items of DELETE ... USING. The WHERE
        then joins them with the target; each target row comes back once, with the values of its
        first join partner (PostgreSQL uses one partner, which one unspecified)."""
        if joined:
            outer = _joined_scan(t, alias, where, extra, joined)
        else:
            flag = exp.func("COALESCE", exp.paren(where.copy()), exp.false()) if where is not None else exp.true()
            inner = exp.Select(expressions=[exp.Star(), exp.alias_(flag, "__tg_m")]).from_(
                exp.Table(this=exp.to_identifier(t.name), db=exp.to_identifier(t.schema),
                          alias=exp.TableAlias(this=exp.to_identifier(alias))))
            outer_exprs: list[exp.Expression] = [exp.column(c.name, quoted=True) for c in t.columns]
            outer_exprs.append(exp.column("__tg_m"))
            for k, e in enumerate(extra):
                value = e.copy() if matched_only else exp.Case(ifs=[exp.If(this=exp.column("__tg_m"), true=e.copy())])
                outer_exprs.append(exp.alias_(value, f"__tg_new_{k}"))
            outer = exp.Select(expressions=outer_exprs).from_(
                exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias))))
            if matched_only:
                outer = outer.where(exp.column("__tg_m"))
        self.engine.runtime.wait()

        def work() -> tuple[pa.Table, int]:
            tq, resolver = self._translate(outer, params, info)
            table = sparkmod.collect_arrow(self.spark.sql(tq.spark_sql))
            snap = resolver.snapshots.get(t.location)
            version = snap.version if snap else self.store.version(t.location)
            n = len(t.columns)
            cols = [table.column(i) for i in range(table.num_columns)]
            for i, c in enumerate(t.columns):
                if cols[i].type != storage_type(c.type):
                    cols[i] = coerce_array(cols[i], c.type, c.name)
            if tq.output_types:
                for i in range(n + 1, table.num_columns):
                    ty = tq.output_types[i] if i < len(tq.output_types) else None
                    if ty is not None:
                        cols[i] = storage_to_result(cols[i], ty)
            out = pa.Table.from_arrays(cols, names=table.column_names)
            if joined:  # one row per target row (its row id is the last column)
                out = _first_per_key(out, out.column_names[-1]).drop_columns([out.column_names[-1]])
            return out, version

        return self._run(work)

    def _match_columns(self, t: TableDef) -> list[str] | None:
        """Columns identifying a row for a merge: the key, else every column (None: not hashable)."""
        keys = self._keys(t)
        if keys:
            return keys
        if any(c.type.is_array for c in t.columns):
            return None
        return [c.name for c in t.columns]

    def _update(self, tree: exp.Update, params: list[Any], info: SessionInfo) -> CommandResult:
        """UPDATE: Spark evaluates WHERE and SET over one snapshot; the changed rows are merged back
        (delta-rs merge matched on the key, or on all old values for key-less tables), so only the
        files holding them are rewritten and the change feed records update pre/post images."""
        t = self._resolve_target(tree.this, info)
        tree = name_target_columns(tree, t)
        reads = tree.args.get("where") is not None or tree.args.get("returning") is not None or any(
            eq.expression.find(exp.Column) is not None for eq in tree.expressions)
        self.catalog.roles.check_table(info, t, "UPDATE", *(["SELECT"] if reads else []))
        with self._rewriting(t):
            return self._retrying(self._update_rows, tree, t, params, info)

    def _update_rows(self, tree: exp.Update, t: TableDef, params: list[Any], info: SessionInfo) -> CommandResult:
        target = tree.this
        alias = target.alias or t.name
        sets = set_targets(t, tree.expressions)
        where = tree.args.get("where")
        match_cols = self._match_columns(t)
        matched_only = match_cols is not None
        joined = _from_items(tree.args.get("from_") or tree.args.get("from"))
        if joined and tree.args.get("returning") is not None:
            raise _returning_with_join("UPDATE ... FROM")
        if joined and not matched_only:
            raise SqlError("0A000", f'UPDATE ... FROM on "{t.name}" is not supported: it has no primary key and '
                           "array columns, so its rows cannot be told apart",
                           hint="Add a PRIMARY KEY, or update with a WHERE ... IN (subquery) instead of FROM.")
        table, version = self._scan_with_flag(t, alias, where.this if where is not None else None,
                                              [exp.null() if _is_default(e) else e for _, e in sets],
                                              params, info, matched_only, joined)
        n = len(t.columns)
        mask = (pc.fill_null(table.column(n).combine_chunks(), False) if table.num_rows
                else pa.array([], pa.bool_()))
        old = table.select(list(range(n))).combine_chunks()
        if not matched_only:
            old_matched = old.filter(mask)
        else:
            old_matched = old
        count = old_matched.num_rows
        ctx = {"now": datetime.now(timezone.utc)}
        new_cols = [old_matched.column(i) for i in range(n)]
        for k, (c, e) in enumerate(sets):
            idx = t.columns.index(c)
            seq = self._default_sequence(c, info) if _is_default(e) else None
            if seq is not None:  # SET col = DEFAULT of a sequence: a value per row
                new_cols[idx] = _fast_array(self._next_values(seq, count, info), c)
            elif _is_default(e):
                dv = python_value(self._default_value(c, ctx, info), c.type, c.name)
                new_cols[idx] = pa.array([dv] * count, type=storage_type(c.type))
            else:
                raw = table.column(n + 1 + k)
                raw = raw.filter(mask) if not matched_only else raw
                new_cols[idx] = coerce_array(raw, c.type, c.name)
        new = pa.Table.from_arrays(new_cols, schema=storage_schema(t.columns))
        if count:
            self._check_not_null(t, new)
            changed = {c.name for c, _ in sets}
            constraints.check_unique(self, t, new, info, moving=old_matched, changed=changed)
            constraints.check_references(self, t, new, info, changed=changed)
            constraints.check_referenced(self, t, old_matched, info, remaining=new)
            keys = self._keys(t)
            if keys and any(c.name in keys for c, _ in sets):
                dups = duplicate_keys(new, keys)
                if dups.num_rows:
                    raise self._unique_error(t, dups.slice(0, 1).to_pylist()[0])
                clash = self.store.existing_keys(t.location, keys, new)
                if clash.num_rows:
                    moved = old_matched.select(keys).append_column("__tg_moved", pa.repeat(True, count))
                    clash = clash.join(moved, keys=keys, join_type="left outer")
                    clash = clash.filter(pc.is_null(clash.column("__tg_moved")))
                    if clash.num_rows:
                        raise self._unique_error(t, clash.select(keys).slice(0, 1).to_pylist()[0])
            if match_cols is None:
                full = [pc.if_else(mask, _scatter(new.column(i).combine_chunks(), mask, storage_type(c.type)),
                                   old.column(i)) for i, c in enumerate(t.columns)]
                data = pa.Table.from_arrays(full, schema=storage_schema(t.columns))
                self._write(WriteOp(t, "overwrite", data, base_version=version))
            else:
                source = new
                for m in match_cols:
                    source = source.append_column(f"__tg_old_{m}", old_matched.column(m))
                if not self._keys(t):
                    source = dedupe_last(source, [f"__tg_old_{m}" for m in match_cols])
                # null-safe: key-less tables, and a time-series table's tags (NULL is a tag value)
                self._write(WriteOp(t, "update", source, keys=match_cols, null_safe=not self._keys(t) or bool(t.time_index),
                                    base_version=version,
                                    unique_sets=[u for u in t.unique_sets() if changed & set(u[1])]))
        result_rows = None
        if tree.args.get("returning") is not None:
            result_rows = self._returning(t, new, tree.args["returning"], params, info)
        return CommandResult(f"UPDATE {count}", rows=result_rows)

    def _delete(self, tree: exp.Delete, params: list[Any], info: SessionInfo) -> CommandResult:
        """DELETE: Spark finds the rows over one snapshot; they are removed by a delta-rs merge
        matched on the key (or on all values for key-less tables): only their files change."""
        t = self._resolve_target(tree.this, info)
        tree = name_target_columns(tree, t)
        reads = tree.args.get("where") is not None or tree.args.get("returning") is not None
        self.catalog.roles.check_table(info, t, "DELETE", *(["SELECT"] if reads else []))
        with self._rewriting(t):
            return self._retrying(self._delete_rows, tree, t, params, info)

    def _delete_rows(self, tree: exp.Delete, t: TableDef, params: list[Any], info: SessionInfo) -> CommandResult:
        target = tree.this
        alias = target.alias or t.name
        where = tree.args.get("where")
        returning = tree.args.get("returning")
        joined = list(tree.args.get("using") or [])
        if where is None and returning is None and not joined and not self._pending_ops(t) \
                and not constraints.referencing(self, t) and ttl.of(t).forever:
            base = self.store.version(t.location)
            count = self._row_count(t)
            if count:
                self._write(WriteOp(t, "overwrite", storage_schema(t.columns).empty_table(), base_version=base))
            return CommandResult(f"DELETE {count}")
        match_cols = self._match_columns(t)
        matched_only = match_cols is not None
        if joined and returning is not None:
            raise _returning_with_join("DELETE ... USING")
        if joined and not matched_only:
            raise SqlError("0A000", f'DELETE ... USING on "{t.name}" is not supported: it has no primary key and '
                           "array columns, so its rows cannot be told apart",
                           hint="Add a PRIMARY KEY, or delete with a WHERE ... IN (subquery) instead of USING.")
        table, version = self._scan_with_flag(t, alias, where.this if where is not None else None, [], params, info,
                                              matched_only, joined)
        n = len(t.columns)
        rows_all = table.select(list(range(n))).combine_chunks()
        mask = (pc.fill_null(table.column(n).combine_chunks(), False) if table.num_rows
                else pa.array([], pa.bool_()))
        deleted = rows_all if matched_only else rows_all.filter(mask)
        count = deleted.num_rows
        if count:
            constraints.check_referenced(self, t, deleted, info)
            if match_cols is None:
                self._write(WriteOp(t, "overwrite", rows_all.filter(pc.invert(mask)), base_version=version))
            else:
                source = deleted.select(match_cols)
                source = dedupe_last(source, match_cols)
                # null-safe: key-less tables, and a time-series table's tags (NULL is a tag value)
                self._write(WriteOp(t, "delete", source, keys=match_cols, null_safe=not self._keys(t) or bool(t.time_index),
                                    base_version=version))
        result_rows = None
        if returning is not None:
            result_rows = self._returning(t, deleted, returning, params, info)
        return CommandResult(f"DELETE {count}", rows=result_rows)

    # -- COPY --------------------------------------------------------------------------------

    def copy_target(self, sql: str, info: SessionInfo | None = None) -> CopyTarget:
        info = info or SessionInfo()
        self._interrupt.clear()  # a cancel sent before this began is not for it
        toks = sqllex.scan(sql)
        parts, i = sqllex.split_ident_chain(toks, 1) if toks and toks[0].is_word("copy") else ([], 0)
        cols: list[str] | None = None
        if i < len(toks) and toks[i].text == "(":
            listed = sqllex.name_list(toks, i)
            parts, cols, i = (parts, [t.ident or "" for t in listed[0]], listed[1]) if listed else ([], None, i)
        if not 1 <= len(parts) <= 2 or i + 1 >= len(toks) or not (toks[i].is_word("from") and toks[i + 1].is_word("stdin")):
            raise SqlError("0A000", "only COPY table [(columns)] FROM STDIN is supported here")
        schema, name = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
        t = self.catalog.resolve_table(name, schema, info.search_path)
        if t.kind == "view":
            raise SqlError("42809", f'cannot copy to view "{t.name}"')
        if t.kind == "sequence":
            raise SqlError("42809", f'cannot copy to sequence "{t.name}"')
        self.catalog.roles.check_table(info, t, "INSERT")
        target_cols = self._target_columns(t, cols)
        return CopyTarget(t.schema, t.name, [ResultField(c.name, c.type, t.oid, t.columns.index(c) + 1) for c in target_cols])

    def copy_from(self, target: CopyTarget, batches: Iterator[pa.RecordBatch], info: SessionInfo | None = None) -> int:
        """Write the client's rows in ONE commit; if ``batches`` raises, nothing is committed."""
        info = info or SessionInfo()
        self._interrupt.clear()  # a cancel sent before this began is not for it
        t = self.catalog.get_table(target.schema, target.table)
        if t is None:
            raise SqlError("42P01", f'relation "{target.table}" does not exist')
        ctx = self._eval_context(info)
        given = [f.name for f in target.fields]
        for name in given:
            if t.column(name) is None:
                raise SqlError("42703", f'column "{name}" of relation "{t.name}" does not exist')
        # Constant defaults for the columns the client does not send, computed once.
        fills: dict[str, Any] = {}
        sequences: dict[str, TableDef] = {}
        with pgvalues.use_session_zone(info.timezone):
            for c in t.columns:
                if c.name not in given:
                    seq = self._default_sequence(c, info)
                    if seq is not None:
                        sequences[c.name] = seq
                        continue
                    fills[c.name] = python_value(self._default_value(c, ctx, info), c.type, c.name) if c.default is not None else None
        schema = storage_schema(t.columns)
        counter = [0]

        def convert() -> Iterator[pa.RecordBatch]:
            for batch in batches:
                n = batch.num_rows
                if n == 0:
                    continue
                arrays = []
                with pgvalues.use_session_zone(info.timezone):  # may run on the writer's thread
                    for c in t.columns:
                        if c.name in given:
                            arr = coerce_array(batch.column(given.index(c.name)), c.type, c.name)
                        elif c.name in sequences:  # a block of values per batch, one SQLite transaction
                            arr = _fast_array(self._next_values(sequences[c.name], n, info), c)
                        else:
                            v = fills[c.name]
                            arr = pa.nulls(n, storage_type(c.type)) if v is None else pa.array([v] * n, type=storage_type(c.type))
                        arrays.append(arr)
                out = pa.RecordBatch.from_arrays(arrays, schema=schema)
                self._check_not_null(t, out)
                counter[0] += n
                yield out

        keys = self._keys(t)
        needs_whole = (bool(keys) and not (t.time_index and self._append_mode(t))) or bool(t.constraints) \
            or any(i["unique"] for i in t.indexes)
        if needs_whole or self._pending is not None:
            data = pa.Table.from_batches(list(convert()), schema=schema)
            if data.num_rows == 0:
                return 0
            op = self._plan_insert(t, data, None, info)
            self._write(op)
            return data.num_rows
        failure: list[BaseException] = []

        def guarded() -> Iterator[pa.RecordBatch]:
            try:
                yield from convert()
            except BaseException as exc:
                failure.append(exc)
                raise

        reader = pa.RecordBatchReader.from_batches(schema, guarded())
        try:
            self.store.apply(WriteOp(t, "append", reader))
        except Exception:
            if failure:  # the client's data or our validation failed: report that, not the writer's wrapper
                raise failure[0] from None
            raise
        return counter[0]

    # -- describe ----------------------------------------------------------------------------

    def describe(self, sql: str, param_types: Sequence[ColumnType | None], info: SessionInfo | None = None,
                 ) -> tuple[list[ColumnType], list[ResultField] | None]:
        info = info or SessionInfo()
        self._interrupt.clear()  # a cancel sent before this began is not for it
        toks = sqllex.leading(sql)
        first = toks[0].upper if toks else ""
        if flow_statements.is_flow_statement(sql):
            return list(_fill_params(param_types, {})), flow_statements.describe(sql)
        if self.engine.jobs.handles([t.upper for t in toks[:4]] + ["", "", "", ""]):
            return list(_fill_params(param_types, {})), self.engine.jobs.describe(sql, info)
        if first == "SHOW":
            stream = self._show(sql, sqllex.scan(sql), info)
            return list(_fill_params(param_types, {})), stream.fields
        if first in ("CREATE", "DROP", "ALTER", "TRUNCATE", "COMMENT", "EXPLAIN", "COPY"):
            if first == "EXPLAIN":
                return list(_fill_params(param_types, {})), [ResultField("QUERY PLAN", ColumnType(TEXT))]
            return list(_fill_params(param_types, {})), None
        fast = self._describe_insert_fast(sql, param_types, info)
        if fast is not None:
            return fast, None
        tree = self._parse_one(sql)
        inferred = self._infer_params(tree, info)
        types = _fill_params(param_types, inferred, _max_param(tree))
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
                elif isinstance(node, exp.Column) and t.column(_ident(node.this)) is not None:
                    fields.append(ResultField(e.alias_or_name, t.column(_ident(node.this)).type))
                else:
                    return types, self._describe_returning(t, target, returning, len(types), info)
            return types, fields
        if isinstance(tree, (exp.Query, exp.Values)):
            self.engine.runtime.wait()

            def work() -> list[ResultField]:
                self._analyzed = None
                tq, resolver = self._translate(tree, [None] * len(types), info, client=True)
                df = self.spark.sql(tq.spark_sql)
                arrow = sparkmod.arrow_schema_of(df)
                if not types:  # no parameters: the Execute that follows runs this very plan
                    self._analyzed = _Analyzed(sql, self._analysis_context(info),
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
            cols = [_ident(e) for e in target.expressions] if isinstance(target, exp.Schema) else None
            tnode = target.this if isinstance(target, exp.Schema) else target
            try:
                schema, name = self._table_name(tnode)
                t = self.catalog.resolve_table(name, schema, info.search_path)
                tcols = self._target_columns(t, cols)
            except SqlError:
                tcols = []
            for tup in tree.expression.expressions:
                for k, e in enumerate(tup.expressions if isinstance(tup, exp.Tuple) else [tup]):
                    n = _param_index(e)
                    if n is not None and k < len(tcols):
                        out.setdefault(n, tcols[k].type)
        if isinstance(tree, exp.Update):
            for eq in tree.expressions:
                n = _param_index(eq.expression)
                name = _ident(eq.this.this if isinstance(eq.this, exp.Column) else eq.this)
                if n is not None and name in columns:
                    out.setdefault(n, columns[name])
        for node in tree.find_all(exp.Binary):
            if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Add, exp.Sub, exp.Like, exp.ILike)):
                left, right = node.this, node.expression
                for a, b in ((left, right), (right, left)):
                    n = _param_index(b)
                    if n is not None and isinstance(a, exp.Column) and _ident(a.this) in columns:
                        out.setdefault(n, columns[_ident(a.this)])
        for node in tree.find_all(exp.In):
            if isinstance(node.this, exp.Column) and _ident(node.this.this) in columns:
                for e in node.expressions:
                    n = _param_index(e)
                    if n is not None:
                        out.setdefault(n, columns[_ident(node.this.this)])
        for node in tree.find_all(exp.Cast):
            n = _param_index(node.this)
            if n is not None:
                try:
                    out.setdefault(n, ddl.type_from_sqlglot(node.to))
                except SqlError:
                    pass
        return out


# -- helpers ------------------------------------------------------------------------------------

def _reads_rows(action: exp.Expression) -> bool:
    """Whether an ALTER TABLE action reads or rewrites the table's rows (fills a DEFAULT,
    checks NOT NULL, drops or renames a column)."""
    if isinstance(action, exp.ColumnDef):
        return any(isinstance(c.kind, (exp.DefaultColumnConstraint, exp.NotNullColumnConstraint))
                   for c in action.args.get("constraints") or [])
    if isinstance(action, exp.AlterColumn):
        return action.args.get("allow_null") is False
    return not isinstance(action, exp.AlterRename)


def _ident(node: Any) -> str:
    if node is None:
        return ""
    if isinstance(node, str):
        return node
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    if isinstance(node, (exp.Column, exp.Table)):
        return _ident(node.this)
    if isinstance(node, exp.Expression) and isinstance(node.this, (exp.Identifier, str)):
        return _ident(node.this)
    return node.name.lower()


def _reconcile(declared: ColumnType | None, actual: pa.DataType) -> ColumnType:
    """The result type of a column: the translator's, else the one Spark's Arrow type implies.

    A float32 column is real (float4) whatever was declared: its values have no more precision.
    """
    if declared is None:
        return pg_type_for_arrow(actual)
    if declared.pg.name == "float8" and pa.types.is_float32(actual):
        return pg_type_for_arrow(actual)
    return declared


def _relation_position(sql: str, message: str) -> int | None:
    """1-based position of the relation a 42P01 message names (PostgreSQL reports where it is)."""
    m = re.search(r'relation "([^"]+)"', message)
    if not m:
        return None
    name = m.group(1).split(".")[-1]
    toks = sqllex.scan(sql)
    for i, tok in enumerate(toks):
        if tok.kind in ("word", "qid") and ddl.ident_value(tok) == name:
            if i >= 2 and toks[i - 1].text == "." and toks[i - 2].kind in ("word", "qid"):
                return toks[i - 2].start + 1  # a qualified name is reported from its first part
            return tok.start + 1
    return None


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


def _drop_targets(tree: exp.Drop) -> list[exp.Expression]:
    return list(tree.args.get("tables") or []) or list(tree.expressions)


def _first_per_key(data: pa.Table, key: str) -> pa.Table:
    """The first row of each value of column ``key``, in their original order."""
    if data.num_rows <= 1:
        return data
    positions = pa.array(range(data.num_rows), pa.int64())
    firsts = pa.table({key: data.column(key), "__tg_i": positions}).group_by(key, use_threads=False).aggregate(
        [("__tg_i", "min")]).column("__tg_i_min").combine_chunks()
    return data.take(firsts.sort()) if len(firsts) != data.num_rows else data


def set_targets(t: TableDef, assignments: list[exp.Expression]) -> list[tuple[ColumnDef, exp.Expression]]:
    """The ``SET col = expr, ...`` of UPDATE and MERGE's UPDATE, checked as PostgreSQL checks it."""
    sets: list[tuple[ColumnDef, exp.Expression]] = []
    for eq in assignments:
        col_node = eq.this
        name = _ident(col_node.this if isinstance(col_node, exp.Column) else col_node)
        c = t.column(name)
        if c is None:
            raise SqlError("42703", f'column "{name}" of relation "{t.name}" does not exist')
        if any(c is prev for prev, _ in sets):
            raise SqlError("42601", f'multiple assignments to same column "{name}"')
        if c.identity == "a" and not _is_default(eq.expression):
            raise SqlError("428C9", f'column "{name}" can only be updated to DEFAULT',
                           detail=f'Column "{name}" is an identity column defined as GENERATED ALWAYS.')
        sets.append((c, eq.expression))
    return sets


def _returning_with_join(statement: str) -> SqlError:
    return SqlError("0A000", f"RETURNING in {statement} is not supported",
                    hint="Run the statement without RETURNING, then SELECT the rows it changed.")


def _from_items(from_: exp.Expression | None) -> list[exp.Expression]:
    """The items of UPDATE's FROM clause (a From node: the first item carries the rest as joins)."""
    if from_ is None:
        return []
    first = from_.this.copy()
    joins = first.args.get("joins") or []
    first.set("joins", None)
    return [first, *joins]


def row_id_column() -> exp.Expression:
    """A per-row id Spark assigns while it scans (unique within one query): tells rows apart."""
    from engine.pgfunctions import INTERNAL

    node = exp.Anonymous(this="monotonically_increasing_id", expressions=[])
    node.meta[INTERNAL] = True
    return node


def name_target_columns(tree: exp.Expression, t: TableDef) -> exp.Expression:
    """Prepare an UPDATE / DELETE / MERGE tree for the rewrites that build its scans: unquoted
    names folded to lower case as PostgreSQL folds them (an alias written ``DBT_INTERNAL_DEST``
    is ``dbt_internal_dest``), and target columns written with the table's qualified name
    (``s.t.col``, ``"db"."s"."t".col``) referred to by the table's own name, the one the scans
    give it. Without an alias PostgreSQL lets either form name the target."""
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
    from engine.translate import TidegatePostgres

    tree = normalize_identifiers(tree, dialect=TidegatePostgres)
    target = tree.this
    if isinstance(target, exp.Table) and not target.alias:
        for col in tree.find_all(exp.Column):
            if col.args.get("db") is not None and col.table == t.name and col.text("db") == t.schema:
                col.set("db", None)
                col.set("catalog", None)
    return tree


def _joined_scan(t: TableDef, alias: str, where: exp.Expression | None, extra: list[exp.Expression],
                 joined: list[exp.Expression]) -> exp.Select:
    """SELECT target columns, TRUE, extra values, row id FROM (target + row id) AS alias, joined...
    WHERE where: the target rows UPDATE ... FROM / DELETE ... USING act on, once per join partner."""
    target = exp.Subquery(
        this=exp.Select(expressions=[exp.Star(), exp.alias_(row_id_column(), "__tg_rid")]).from_(
            exp.Table(this=exp.to_identifier(t.name), db=exp.to_identifier(t.schema))),
        alias=exp.TableAlias(this=exp.to_identifier(alias)))
    exprs: list[exp.Expression] = [exp.column(c.name, table=alias, quoted=True) for c in t.columns]
    exprs.append(exp.alias_(exp.true(), "__tg_m"))
    exprs.extend(exp.alias_(e.copy(), f"__tg_new_{k}") for k, e in enumerate(extra))
    exprs.append(exp.alias_(exp.column("__tg_rid", table=alias), "__tg_rid"))
    select = exp.Select(expressions=exprs).from_(target)
    joins = []
    for item in joined:
        joins.append(item.copy() if isinstance(item, exp.Join) else exp.Join(this=item.copy()))
    select.set("joins", joins)
    if where is not None:
        select = select.where(where.copy())
    return select


def _is_default(e: exp.Expression) -> bool:
    return (isinstance(e, exp.Var) and e.name.upper() == "DEFAULT") or (
        isinstance(e, exp.Column) and not e.table and isinstance(e.this, exp.Identifier)
        and not e.this.quoted and e.this.this.upper() == "DEFAULT")


def _param_index(e: exp.Expression) -> int | None:
    if isinstance(e, exp.Parameter):
        inner = e.this
        try:
            return int(inner.name if isinstance(inner, exp.Expression) else inner)
        except (TypeError, ValueError):
            return None
    if isinstance(e, exp.Placeholder):
        try:
            return int(e.name)
        except (TypeError, ValueError):
            return None
    if isinstance(e, exp.Cast):
        return None
    return None


def _max_param(tree: exp.Expression) -> int:
    n = 0
    for node in tree.find_all(exp.Parameter, exp.Placeholder):
        k = _param_index(node)
        if k:
            n = max(n, k)
    return n


def _fill_params(given: Sequence[ColumnType | None], inferred: dict[int, ColumnType], count: int = 0) -> list[ColumnType]:
    size = max(len(given), count)
    out = []
    for i in range(size):
        t = given[i] if i < len(given) else None
        out.append(t if t is not None else inferred.get(i + 1, ColumnType(TEXT)))
    return out


def _storable_type(t: ColumnType) -> ColumnType:
    """A result column type a CREATE TABLE AS column can have."""
    base = t.element if t.is_array else t
    if base.pg.name in ("unknown", "record", "void", "name", "char"):
        return ColumnType(TEXT).array_of() if t.is_array else ColumnType(TEXT)
    return t


def _epoch_scale(c: ColumnDef) -> tuple[int, int] | None:
    """GreptimeDB's unit for an integer written to a timestamp TIME INDEX column, as (multiplier,
    divisor) to microseconds: TIMESTAMP(0) seconds, TIMESTAMP / TIMESTAMP(1..3) milliseconds (its
    default precision), (4..6) microseconds, (7..9) nanoseconds. None: not a timestamp column."""
    if c.type.is_array or c.type.pg.name not in ("timestamp", "timestamptz"):
        return None
    p = c.type.precision
    if p == 0:
        return 1_000_000, 1
    if p is None or p <= 3:
        return 1_000, 1
    if p <= 6:
        return 1, 1
    return 1, 1_000


def _epoch_values(given: list[Any] | pa.Array | pa.ChunkedArray, c: ColumnDef) -> list[Any] | pa.Array:
    """A time-series table's time index takes integers as epoch values in its unit
    (:func:`_epoch_scale`); everything else is left to PostgreSQL's input rules. Nanoseconds are
    rounded (half up) to the microseconds Delta stores."""
    scale = _epoch_scale(c)
    if scale is None:
        return given
    mul, div = scale
    tz = timezone.utc if c.type.pg.name == "timestamptz" else None

    def micros(v: int) -> int:
        return v * mul if div == 1 else (v + div // 2) // div

    if isinstance(given, list):
        if not any(type(v) is int for v in given):
            return given
        out = []
        for v in given:
            if type(v) is int:  # not bool
                try:
                    v = datetime(1970, 1, 1, tzinfo=tz) + timedelta(microseconds=micros(v))
                except OverflowError:
                    raise SqlError("22008", "timestamp out of range",
                                   detail=f'{v} is not an epoch value column "{c.name}" can hold.') from None
            out.append(v)
        return out
    if not pa.types.is_integer(given.type):
        return given
    us = [None if v is None else micros(v) for v in given.to_pylist()]
    try:
        arr = pa.array(us, pa.int64())
        return arr.cast(pa.timestamp("us", tz="UTC" if tz else None))
    except (OverflowError, pa.ArrowInvalid):
        raise SqlError("22008", "timestamp out of range") from None


def _placed(t: TableDef, col: ColumnDef, position: exp.ColumnPosition | None) -> list[ColumnDef]:
    """``t``'s columns with ``col`` added at GreptimeDB's ``FIRST`` / ``AFTER c`` (default: last).
    Only the catalog's order changes: storage is read and written by column name."""
    if position is None:
        return t.columns + [col]
    if position.args.get("position") == "FIRST":
        return [col] + t.columns
    after = _ident(position.this.this if isinstance(position.this, exp.Column) else position.this)
    at = next((i for i, c in enumerate(t.columns) if c.name == after), None)
    if at is None:
        raise SqlError("42703", f'column "{after}" of relation "{t.name}" does not exist')
    return t.columns[:at + 1] + [col] + t.columns[at + 1:]


def _check_assignable(c: ColumnDef, src: ColumnType | None) -> None:
    """PostgreSQL refuses assigning a typed text expression to a non-text column (42804)."""
    if src is None:
        return
    target = c.type.pg.name
    text_like = ("text", "varchar", "bpchar", "name")
    if src.pg.name in text_like and target not in text_like + ("json", "jsonb", "uuid", "interval", "unknown"):
        raise SqlError("42804", f'column "{c.name}" is of type {c.type.sql()} but expression is of type {src.sql()}',
                       hint="You will need to rewrite or cast the expression.")
    numeric = ("int2", "int4", "int8", "float4", "float8", "numeric")
    if src.pg.name in numeric and target in ("bool", "date", "timestamp", "timestamptz", "time", "bytea"):
        raise SqlError("42804", f'column "{c.name}" is of type {c.type.sql()} but expression is of type {src.sql()}',
                       hint="You will need to rewrite or cast the expression.")


def _scatter(values: pa.Array, mask: pa.Array, typ: pa.DataType) -> pa.Array:
    """Place ``values`` (one per true in ``mask``) at the true positions; nulls elsewhere."""
    if not len(values):
        return pa.nulls(len(mask), typ)
    ordinal = pc.subtract(pc.cumulative_sum(pc.cast(mask, pa.int64())), 1)
    return pc.take(values, pc.if_else(mask, ordinal, pa.scalar(None, pa.int64())))


def _convert_batches(batches: Iterator[pa.RecordBatch], fields: list[ResultField],
                     operands: dict[int, tuple[int, ...]] | None = None) -> Iterator[pa.RecordBatch]:
    """Spark/storage Arrow -> the pgtypes Arrow form, with the result's column names; a column with
    exact operands (ColumnType.exact_op) becomes the struct of its value and operands."""
    names = [f.name for f in fields]
    for batch in batches:
        arrays = []
        for i, (arr, f) in enumerate(zip(batch.columns, fields)):
            if operands and i in operands:
                parts = [arr] + [batch.column(k) for k in operands[i]]
                arrays.append(pa.StructArray.from_arrays(parts, names=["q", "a", "b"][:len(parts)]))
                continue
            arr = storage_to_result(arr, f.type)
            want = f.type.arrow() if f.type.pg.name not in ("unknown", "record", "void") else None
            if (want is not None and arr.type != want and not pa.types.is_null(arr.type)
                    and not (pa.types.is_decimal(arr.type) and pa.types.is_decimal(want))):
                try:
                    if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(want):
                        arr = arr.cast(pa.timestamp("us", tz=arr.type.tz)).cast(want) if (arr.type.tz is None) == (want.tz is None) else arr
                    elif not (pa.types.is_interval(want) and pa.types.is_duration(arr.type)):
                        arr = pc.cast(arr, want)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                    pass
            arrays.append(arr)
        yield pa.RecordBatch.from_arrays(arrays, names=names)


def _fast_array(values: list[Any], c: ColumnDef) -> pa.Array:
    """Literal texts/Python values -> the storage array of ``c`` (vectorised for the common types)."""
    t = c.type
    name = t.pg.name
    if not t.is_array and name in ("int2", "int4", "int8", "float4", "float8") and all(type(v) is str or v is None for v in values):
        arr = pgvalues.cast_number_texts(pa.array(values, pa.string()),
                                         pa.int64() if name.startswith("int") else pa.float64())
        if arr is not None:
            return coerce_array(arr, t, c.name)
    if not t.is_array and name in ("int2", "int4", "int8") and all(type(v) is int or v is None for v in values):
        try:
            return coerce_array(pa.array(values, pa.int64()), t, c.name)
        except OverflowError:
            pass
    if not t.is_array and name == "text" and all(type(v) is str or v is None for v in values):
        return pa.array(values, pa.string())
    if not t.is_array and name in ("timestamp", "timestamptz") and all(type(v) is str or v is None for v in values):
        try:
            arr = pc.cast(pa.array(values, pa.string()), pa.timestamp("us"))
            return coerce_array(arr, t, c.name)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    return pa.array([python_value(v, t, c.name) for v in values], type=storage_type(t))


def _overriding_clause(sql: str) -> tuple[str, int, int] | None:
    """("system" | "user", start, end) of ``OVERRIDING {SYSTEM|USER} VALUE`` in
    ``INSERT INTO t [(cols)] OVERRIDING ...``, or None."""
    toks = sqllex.iter_tokens(sql, significant=True)
    head = [next(toks, None) for _ in range(3)]
    if None in head or not (head[0].is_word("insert") and head[1].is_word("into")) or head[2].ident is None:
        return None
    t = next(toks, None)
    while t is not None and t.text == ".":  # schema.table
        t = next(toks, None)
        t = next(toks, None) if t is not None and t.ident is not None else None
    if t is not None and t.text == "(":
        while t is not None and t.text != ")":
            t = next(toks, None)
        t = next(toks, None)
    if t is None or not t.is_word("overriding"):
        return None
    which, value = next(toks, None), next(toks, None)
    if which is None or value is None or not which.is_word("system", "user") or not value.is_word("value"):
        return None
    return which.lower, t.start, value.end


# A DEFAULT that draws from a sequence: nextval('name') / nextval('name'::regclass)
def _sequence_default(default: str | None) -> str | None:
    """The sequence a DEFAULT draws from: ``nextval('name')`` / ``nextval('name'::regclass)``."""
    if not default or "nextval" not in default.lower():
        return None
    try:
        toks = sqllex.scan(default)
    except SqlError:
        return None
    shape = [t.upper if t.kind != "str" else "'" for t in toks]
    if shape in (["NEXTVAL", "(", "'", ")"], ["NEXTVAL", "(", "'", "::", "REGCLASS", ")"]) and toks[2].value:
        return toks[2].value
    return None


# CAST('s' AS REGCLASS) as sqlglot renders a DEFAULT's regclass literal
_SEQ_FUNCTIONS = frozenset({"nextval", "currval", "setval", "lastval"})


def _refuse_sequence_functions(tree: exp.Expression) -> None:
    """Sequence functions run in constant queries, INSERT ... VALUES and column defaults; not
    inside queries Spark evaluates (they would need a round trip per row)."""
    for node in tree.find_all(exp.Anonymous):
        if node.name.lower() in _SEQ_FUNCTIONS:
            raise SqlError("0A000", f"{node.name.lower()}() in a query that reads tables (or computes with it) is not supported",
                           hint=f"Call it alone (SELECT {node.name.lower()}(...)), in INSERT ... VALUES, or as a column DEFAULT.")


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


@dataclass
class _FastInsert:
    """``INSERT INTO [schema.]name [(columns)] VALUES (literals), ...`` as read from its tokens."""

    schema: str | None
    name: str
    columns: list[str] | None
    rows: list[list[Any]]


def _read_fast_insert(sql: str, params: list[Any]) -> _FastInsert | None:
    """The literal rows of a plain ``INSERT ... VALUES``; None if anything else appears (the full
    path then reads the statement). Literals: numbers (signed), strings (E'', U&'', N'' too),
    ``TYPE 'text'``, ``literal::type``, NULL / TRUE / FALSE / DEFAULT, and ``$n``."""
    take = functools.partial(next, sqllex.iter_tokens(sql, significant=True), None)
    first, second = take(), take()
    if first is None or second is None or not first.is_word("insert") or not second.is_word("into"):
        return None
    names = []
    t = take()
    while t is not None and t.ident is not None and len(names) < 2:
        names.append(t.ident)
        t = take()
        if t is None or t.text != ".":
            break
        t = take()
    if not names or t is None:
        return None
    columns = None
    if t.text == "(":
        columns = []
        while (t := take()) is not None and t.ident is not None:
            columns.append(t.ident)
            t = take()
            if t is None or t.text != ",":
                break
        if t is None or t.text != ")":
            return None
        t = take()
    if t is None or not t.is_word("values"):
        return None
    rows = _scan_values(sql, t.end, params)
    if rows is None:
        return None
    return _FastInsert(names[0] if len(names) == 2 else None, names[-1], columns, rows)


def _scan_values(sql: str, pos: int, params: list[Any]) -> list[list[Any]] | None:
    """Rows of literal VALUES starting at ``pos`` (a value per match of the lexer's
    :data:`tidegate.sqllex.LITERAL`); None if anything else appears."""
    rows: list[list[Any]] = []
    n = len(sql)
    match = sqllex.LITERAL.match
    while True:
        while pos < n and sql[pos].isspace():
            pos += 1
        if pos >= n or sql[pos] != "(":
            return None
        pos += 1
        row: list[Any] = []
        while True:
            m = match(sql, pos)
            if not m:
                return None
            pos = m.end()
            value: Any
            text = m.group("s") or m.group("ts")
            if text is not None:
                value = sqllex.string_value(text)
            elif m.group("n") is not None:
                value = _number(m.group("n"))
            elif m.group("w") is not None:
                w = m.group("w").lower()
                value = None if w == "null" else True if w == "true" else False if w == "false" else _DEFAULT
            else:
                if m.group("c") is not None:
                    return None  # a cast parameter: its type comes from the cast, the full analysis knows it
                k = int(m.group("p"))
                if not 1 <= k <= len(params):
                    raise SqlError("42P02", f"there is no parameter ${k}")
                value = params[k - 1]
            spelled = [name for name in (m.group("t"), m.group("c")) if name is not None]
            if spelled:
                if value is _DEFAULT:
                    return None
                value = _TypedLiteral(spelled, value)
                if value.pg is None:
                    return None
            row.append(value)
            if pos < n and sql[pos] == ",":
                pos += 1
                continue
            if pos < n and sql[pos] == ")":
                pos += 1
                break
            return None
        rows.append(row)
        while pos < n and sql[pos].isspace():
            pos += 1
        if pos < n and sql[pos] == ",":
            pos += 1
            continue
        rest = sql[pos:].strip()
        if rest in ("", ";"):
            return rows
        return None


class _TypedLiteral:
    """``TYPE 'text'`` or ``literal::type`` in a fast INSERT: stored as is when the column has that type."""

    __slots__ = ("pg", "value")

    def __init__(self, spelled: list[str], value: Any) -> None:
        types = {lookup_type_name(name) for name in spelled}
        self.pg = types.pop() if len(types) == 1 else None  # TYPE 'x'::other: leave it to the full path
        self.value = value

    def fits(self, column: ColumnType) -> bool:
        """Whether storing the literal's text in ``column`` means what PostgreSQL's cast would."""
        if column.is_array or self.pg is None:
            return False
        names = {self.pg.name, column.pg.name}
        return len(names) == 1 or names == {"timestamp", "timestamptz"}


class _ParamMarker:
    """Stands in for parameter $number while an INSERT is described (its value is not known yet)."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number


def _number(text: str) -> int | Decimal:
    """A numeric literal as PostgreSQL types it: integer when it has no point/exponent, else numeric."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return Decimal(text)


def _text_of_value(v: Any, t: ColumnType) -> str:
    if isinstance(v, datetime):
        return v.isoformat(sep=" ").replace("+00:00", "+00")
    if isinstance(v, bool):
        return "t" if v else "f"
    if t.pg.name == "time" and isinstance(v, int):
        return _micros_to_time(v).isoformat()
    return str(v)


_DEFAULT_CACHE: dict[str, exp.Expression] = {}


def _parse_default(text: str) -> exp.Expression:
    tree = _DEFAULT_CACHE.get(text)
    if tree is None:
        tree = sqlglot.parse_one(f"SELECT {text}", read="postgres").expressions[0]
        _DEFAULT_CACHE[text] = tree
    return tree


_NOW_FUNCS = {"NOW", "CURRENT_TIMESTAMP", "TRANSACTION_TIMESTAMP", "STATEMENT_TIMESTAMP", "CLOCK_TIMESTAMP", "LOCALTIMESTAMP"}


def const_eval(e: exp.Expression, params: Sequence[Any], ctx: dict[str, Any]) -> Any:
    """Fold a constant expression in Python; NotConstant when it needs Spark."""
    if isinstance(e, exp.Paren):
        return const_eval(e.this, params, ctx)
    if isinstance(e, exp.Literal):
        return e.this if e.is_string else _number(e.this)
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Boolean):
        return bool(e.this)
    if isinstance(e, exp.Neg):
        v = const_eval(e.this, params, ctx)
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            return -v
        raise NotConstant()
    if isinstance(e, (exp.Parameter, exp.Placeholder)):
        k = _param_index(e)
        if k is None or not 1 <= k <= len(params):
            raise SqlError("42P02", f"there is no parameter ${k}")
        return params[k - 1]
    if isinstance(e, (exp.CurrentTimestamp,)) or (isinstance(e, exp.Anonymous) and e.name.upper() in _NOW_FUNCS and not e.expressions):
        return ctx.setdefault("now", datetime.now(timezone.utc))
    if isinstance(e, exp.CurrentDate):
        return ctx.setdefault("now", datetime.now(timezone.utc)).date()
    if isinstance(e, (exp.Cast, exp.TryCast)):
        inner = const_eval(e.this, params, ctx)
        to = ddl.type_from_sqlglot(e.to)
        value = python_value(inner, to, "?")
        if to.pg.name == "time" and value is not None:
            return _micros_to_time(value)
        return value
    if isinstance(e, exp.Array):
        return [const_eval(x, params, ctx) for x in e.expressions]
    if isinstance(e, exp.Anonymous) and e.name.lower() in _SEQ_FUNCTIONS and "sequences" in ctx:
        args = []
        for a in e.expressions:
            if isinstance(a, exp.Cast) and a.to.sql("postgres").lower() in ("regclass", "text", "varchar"):
                a = a.this  # 'name'::regclass: the name (resolved by the call)
            args.append(const_eval(a, params, ctx))
        return ctx["sequences"](e.name, args)
    raise NotConstant()


def _micros_to_time(us: int) -> Any:
    from datetime import time as dtime

    if us >= 86_400_000_000:
        us = 86_400_000_000 - 1
    s, frac = divmod(us, 1_000_000)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return dtime(h, m, sec, frac)


def _datafusion_expr(e: exp.Expression, t: TableDef) -> str:
    """ON CONFLICT DO UPDATE SET expression -> DataFusion SQL over target ``t`` and source ``s``."""
    tree = exp.Paren(this=e.copy())
    for col in list(tree.find_all(exp.Column)):
        qualifier = col.table.lower() if col.table else ""
        name = _ident(col.this)
        if t.column(name) is None:
            raise SqlError("42703", f'column "{name}" does not exist')
        alias = "s" if qualifier == "excluded" else "t"
        col.replace(exp.column(name, table=alias, quoted=True))
    if any(isinstance(n, (exp.Subquery, exp.Select)) for n in tree.walk()):
        raise SqlError("0A000", "subqueries in ON CONFLICT DO UPDATE are not supported")
    return tree.sql("postgres")


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

