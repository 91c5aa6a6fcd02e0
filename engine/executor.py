"""EngineSession: one client connection's DDL, DML and queries over Spark and Delta.

Statement path: :func:`tidegate.statements.classify` gives the statement's kind and
``EngineSession._HANDLERS`` the module that runs it (the mixins :mod:`engine.queries`,
:mod:`engine.schema`, :mod:`engine.dml`, :mod:`engine.sequences`, and the statement modules of
roles, flows, indexes, jobs and refresh). DDL touches only the catalog and deltalake (no Spark wait). Queries go through ``engine.translate`` (PostgreSQL -> Spark SQL);
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from catalog.roles import DATABASE_OID
from catalog import slots
from catalog.shared_locks import SharedLocks
from catalog.slots import GatewaySlot
from catalog.store import TEMP_SCHEMA_PREFIX, Catalog, TableDef, is_temp_schema
from catalog.txn import CatalogTxn
from engine import constraints, ddl, interactive, plans, privileges, scalar, ttl, txnlog, vacuum
from engine import spark as sparkmod
from engine.blockddl import BlockDdl
from engine.dml import DmlStatements, refuse_sequence_functions, view_ids
from engine.events import DDL as DDL_EVENT, ddl_event
from engine.flows import statements as flow_statements
from engine.locks import TableLocks
from engine.queries import Analyzed, QueryStatements
from engine.reaper import TaskReaper
from engine.resolver import StatementResolver, node_name
from engine.schema import SchemaStatements
from engine.sequences import SequenceStatements
from engine.storage import (Snapshot, TableStore, WriteOp, coerce_array, configure_file_cache, storage_schema,
                            storage_to_result, storage_type)
from tidegate import dialect, pgvalues, sqllex, statements
from tidegate.config import Settings
from tidegate.errors import SqlError
from tidegate.results import CommandResult, RowStream
from tidegate.session import SessionInfo
from tidegate.statements import Kind

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from engine.maintenance import Maintenance

log = logging.getLogger(__name__)

_session_ids = itertools.count(1)
SWEEP_S = 5.0  # how often a gateway of a shared catalog looks for dead gateways' slots
START_NS = int.from_bytes(b"tdst", "big", signed=True)  # the shared lock of gateways' start-up work
# Spark sessions of closed connections kept for the next ones, with their temp views: a new
# connection's first query then skips creating the views of the tables it reads (30-45 ms each).
_IDLE_SPARK_SESSIONS = 8


# -- the engine ---------------------------------------------------------------------------------


class Engine:
    """Owns Spark, the Delta table store and background maintenance for one gateway."""

    def __init__(self, settings: Settings, catalog: Catalog, runtime: sparkmod.SparkRuntime | None = None,
                 slot: GatewaySlot | None = None) -> None:
        """``runtime``: Spark, possibly started already.
        ``slot``: this gateway's slot among the gateways of its catalog (catalog/slots.py; slot 0,
        the only one, on an embedded catalog)."""
        from engine.maintenance import Maintenance

        self.settings = settings
        self.catalog = catalog
        self._own_slot = slot is None  # taken here: let go at shutdown (else the caller's)
        self.slot = slot or GatewaySlot(settings.catalog_target).take()
        self._stopping = threading.Event()
        self.runtime = runtime or sparkmod.SparkRuntime(settings)
        self.reaper = TaskReaper(lambda: self.runtime.wait(0))  # tasks that ignore a cancel
        # Gateways sharing a PostgreSQL catalog share its tables: their commit locks and the
        # visibility gate have a half in the catalog database (catalog/shared_locks.py).
        self.shared_locks = SharedLocks(settings.catalog_target) if self.slot.shared else None
        self.store = TableStore(settings.warehouse_dir, self.shared_locks)
        # Whether this gateway leads the catalog's background work (flows, refresh schedules,
        # compaction, TTL: catalog/active.py); ``leader_name`` names the leader in a refusal.
        self.leading = threading.Event()
        self.leader_name: Callable[[], str] = lambda: "another gateway"
        configure_file_cache(settings.interactive_cache_mb * 1024 * 1024)
        self.locks = TableLocks(self.shared_locks)  # UPDATE/DELETE/upsert write locks, held to transaction end
        # Transactions interrupted during COMMIT are completed before anything else runs: this
        # slot's, then those of slots whose gateway died and was not replaced.
        n = self.slot.number
        self.journal = txnlog.Journal(slots.journal_dir(settings.data_dir, n), slots.app_id(n))
        # Notes of recovered commits (CommitHooks): the jobs whose commits a crash interrupted.
        self.recovered_notes: list[dict] = []
        recovered = txnlog.recover(self.store, self.journal, catalog, self.recovered_notes)
        if recovered:
            log.info("completed %d transaction(s) interrupted during COMMIT", recovered)
        # Temporary tables of sessions of a gateway that died (kill -9) belong to no session now:
        # every one on an embedded catalog (one gateway), this slot's on a shared one (a job's go
        # when the job is taken over: engine/jobs.py).
        self._discard_temp_schemas(lambda pid: not self.slot.shared or slots.slot_of_pid(pid) == n)
        self.sweep_slots()
        # The events table exists from the first start on; its recorder queues events at once
        # and commits them once started (engine.events).
        from engine.events import EventRecorder, ensure_events_table

        with self.starting():
            ensure_events_table(catalog, self.store, settings)
        self.events = EventRecorder(catalog, self.store, settings, slot=n)
        self.maintenance: Maintenance = Maintenance(self.store, catalog, settings, spark=self._maintenance_spark)
        self._maintenance_session: SparkSession | None = None
        from engine.flows import FlowRuntime

        self.flows = FlowRuntime(self)
        from engine.refresh import RefreshManager

        self.refresh = RefreshManager(self)  # REFRESH TABLE, its recovery and schedule
        from engine.jobs import JobManager

        self.jobs = JobManager(self)  # SUBMIT JOB & co., their recovery and slots
        self._idle_sessions: list[tuple[SparkSession, dict[str, _ViewEntry]]] = []
        self._idle_lock = threading.Lock()

    @contextmanager
    def starting(self) -> Iterator[None]:
        """One gateway of a shared catalog at a time creates what every gateway needs (the events
        table, configured roles)."""
        if self.shared_locks is None:
            yield
            return
        with self.shared_locks.hold(START_NS, 0):
            yield

    def start(self, lead: bool = True) -> None:
        """Start this gateway's work; with ``lead`` also the led work (:meth:`lead`), which a
        follower of a shared catalog starts once it takes the lead."""
        if self.slot.shared:
            threading.Thread(target=self._sweep_slots_loop, name="tidegate-slot-sweeper", daemon=True).start()
        self.events.start()
        self.runtime.start()
        self.jobs.start()
        if lead:
            self.lead()

    def lead(self) -> None:
        """Start the work one gateway of a catalog does for all: flows, refresh schedules (and
        the recovery of refreshes a dead leader left), compaction and TTL clean-up."""
        if self.leading.is_set() or self._stopping.is_set():
            return
        self.leading.set()
        self.maintenance.start()
        self.flows.start()
        self.refresh.start()
        self.jobs.wake()

    def require_leader(self, what: str) -> None:
        """0A000 on a follower for a statement only the leading gateway runs (a gateway of an
        embedded catalog is the only one: it never follows)."""
        if self.slot.shared and not self.leading.is_set():
            raise SqlError("0A000", f"{what} runs on the gateway that leads this catalog's flows and refreshes, "
                                    f"and this gateway follows; the leader is {self.leader_name()}",
                           hint="Connect to the leading gateway (SHOW GATEWAYS lists it) and run it there.")

    def ready(self) -> bool:
        return self.runtime.ready()

    def _maintenance_spark(self) -> SparkSession | None:
        """Background maintenance's own SparkSession (the confs its OPTIMIZE sets are no
        statement's), or None while Spark is not up."""
        if not self.runtime.ready():
            return None
        if self._maintenance_session is None:
            self._maintenance_session = self.runtime.new_session()
        return self._maintenance_session

    def open_session(self) -> EngineSession:
        return EngineSession(self)

    def _sweep_slots_loop(self) -> None:
        """A dead gateway's slot may still look held at start (the database has not yet ended the
        connection of a gateway cut off from it): look again every SWEEP_S."""
        while not self._stopping.wait(SWEEP_S):
            try:
                self.sweep_slots()
            except Exception:  # noqa: BLE001 - retried at the next sweep
                log.exception("sweeping the slots of dead gateways failed")

    def sweep_slots(self) -> list[int]:
        """Recover the slots of gateways that died and were not replaced (:meth:`recover_slot`)."""
        left = set(slots.journal_slots(self.settings.data_dir))
        left.update(s for s in (slots.slot_of_pid(int(t.name[len(TEMP_SCHEMA_PREFIX):]))
                                for t in self.catalog.temp_schemas()) if s is not None)
        return self.slot.sweep(left, self.recover_slot)

    def recover_slot(self, n: int) -> None:
        """Complete what the dead gateway of slot ``n`` left: the transactions its journal holds
        and its sessions' temporary schemas (its slot's lock held by the caller)."""
        journal = txnlog.Journal(slots.journal_dir(self.settings.data_dir, n), slots.app_id(n))
        done = txnlog.recover(self.store, journal, self.catalog, self.recovered_notes)
        log.info("gateway slot %d: completed %d transaction(s) its dead gateway left", n, done)
        self._discard_temp_schemas(lambda pid: slots.slot_of_pid(pid) == n)

    def _discard_temp_schemas(self, dead: Callable[[int], bool]) -> None:
        """Drop the temporary schemas (``pg_temp_<backend pid>``) of the sessions ``dead`` names."""
        for s in self.catalog.temp_schemas():
            if dead(int(s.name[len(TEMP_SCHEMA_PREFIX):])):
                log.info("removing temporary schema %s left by a gateway that died", s.name)
                self.discard_temp_schema(s.name)

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
        self._stopping.set()
        self.jobs.shutdown()  # running jobs stop and wait PENDING for the next start
        if self.leading.is_set():
            self.refresh.shutdown()
            self.flows.shutdown()
            self.maintenance.stop()
        self.events.close()  # last of the recorders' sources: what they recorded is committed
        self.runtime.stop()
        if self.shared_locks is not None:
            self.shared_locks.close()
        if self._own_slot:
            self.slot.release()


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


# -- the session --------------------------------------------------------------------------------

class EngineSession(QueryStatements, SchemaStatements, DmlStatements, SequenceStatements):
    """One connection's engine state: its Spark session, temp views and transaction queue.

    The statements themselves are run by one module per kind (mixed in: queries, schema
    statements, row statements, sequences; and engine.privileges, engine.flows.statements,
    engine.constraints, engine.jobs, engine.refresh), chosen in :attr:`_HANDLERS` by the kind
    :func:`tidegate.statements.classify` gives and, for what the dialect parses, by the type of
    the tree (:meth:`_dispatch`).
    """

    _HANDLERS: ClassVar[dict[Kind, Callable[..., RowStream | CommandResult]]]

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
        self._analyzed: Analyzed | None = None
        self._lookups: dict[tuple, Any] = {}  # interactive.shape's lookups per (text, catalog version, ...)
        self._plans = plans.PlanCache()  # the Spark path's kept translations (engine.plans)
        self._tag_seq = itertools.count(1)
        self._lock = threading.Lock()
        self._current_tag: str | None = None
        self._cancelled = False
        self._interrupt = threading.Event()  # set by cancel(): also stops a wait for a table lock
        self._integer_ops: list[Callable[[], dict[str, str]]] = []  # the statement's (TranslatedQuery)
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
        view_name = f"tg_{re.sub(r'[^a-z0-9_]', '_', t.name.lower())[:40]}_{t.oid}_{next(view_ids)}"
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
        target_view = f"tg_upsert_t_{self.id}_{next(view_ids)}"
        source_view = f"tg_upsert_s_{self.id}_{next(view_ids)}"
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

            integer_ops: dict[str, str] = {}
            for source in self._integer_ops:
                integer_ops.update(source())
            raise map_spark_error(exc, sql, integer_ops) from None
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
            return
        self.engine.reaper.watch(tag)

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

    def discard_plans(self) -> None:
        """DISCARD PLANS: forget the kept translations (engine.plans): the next runs translate."""
        self._plans.clear()

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
        self._integer_ops = []
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
        statement = statements.classify(sql)
        self._overriding = None
        return self._HANDLERS[statement.kind](self, sql, params, info)

    def _role(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        return privileges.execute(self, sql, info)

    def _create_table_statement(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        result = self._create_table(sql, params, info)
        self.engine.flows.nudge()  # a pending flow may be waiting for this table
        return result

    def _insert_statement(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        clause = _overriding_clause(sql)
        if clause is not None:  # INSERT INTO t [(cols)] OVERRIDING {SYSTEM|USER} VALUE ...: identity columns
            self._overriding, start, end = clause
            sql = sql[:start] + " " + sql[end:]
        fast = self._insert_fast(sql, params, info)
        if fast is not None:
            return fast
        return self._sql(sql, params, info)

    def _session_statement(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        raise SqlError("0A000", f"{statements.classify(sql).command} must be handled by the session, not the engine")

    def _empty(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult:
        raise SqlError("42601", "syntax error at end of input")

    def _sql(self, sql: str, params: list[Any], info: SessionInfo) -> RowStream | CommandResult:
        """A statement the dialect parses: routed by the type of its tree."""
        const = scalar.cached(sql) if interactive.enabled(info) else None
        if const:  # a relation-free query computed in the gateway (known text: no parse)
            stream = scalar.run(const, params)
            if stream is not None:
                return stream
        lookup = interactive.kept(self, sql, info)
        if lookup is not None:  # a read of one table's files the session ran before (no parse)
            plan = interactive.bind(self, lookup, params)
            if plan is not None:
                return interactive.run(plan)
        tree = self._parse_one(sql)
        return self._dispatch(tree, sql, params, info)

    def _parse_one(self, sql: str) -> exp.Expression:
        """The statement's tree: parsed once per text (drivers repeat their statements: Describe
        then Execute, a prepared lookup per row), a copy each time as the callers rewrite it."""
        return _parsed(sql).copy()

    def _dispatch(self, tree: exp.Expression, sql: str, params: list[Any], info: SessionInfo) -> RowStream | CommandResult:
        if isinstance(tree, dialect.TidegateStatement):
            return self._tidegate_statement(tree, params, info)
        if not isinstance(tree, exp.Insert):
            refuse_sequence_functions(tree)
        if isinstance(tree, (exp.Query, exp.Values)) or (isinstance(tree, exp.Subquery)):
            return self._query(tree, sql, params, info)
        returning = tree.args.get("returning") if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)) else None
        if returning is not None and self._pending is None and not self._plain_returning(tree, returning, info):
            return self._as_own_transaction(lambda: self._dml(tree, params, info))
        return self._dml(tree, params, info) if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)) \
            else self._other_statement(tree, sql, params, info)

    def _plain_returning(self, tree: exp.Expression, returning: exp.Returning, info: SessionInfo) -> bool:
        """Whether RETURNING only names the target's columns (``RETURNING id``, ``*``): rows that
        cannot fail once the write is done, so the write needs no block of its own."""
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        if not isinstance(target, exp.Table):
            return False
        try:
            columns = {c.name for c in self._resolve_target(target, info).columns}
        except SqlError:
            return True  # the statement fails as it starts, before it writes
        for e in returning.expressions:
            node = e.this if isinstance(e, exp.Alias) else e
            if isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star)):
                continue
            if not isinstance(node, exp.Column) or node_name(node.this) not in columns:
                return False
        return True

    def _as_own_transaction(self, run: Callable[[], CommandResult]) -> CommandResult:
        """A write with RETURNING outside a block runs as a block of its own: its rows are computed
        (and kept) before anything commits, so an error in RETURNING (a division by zero, a failed
        cast) leaves the table as it was, as in PostgreSQL; a conflict at the commit likewise."""
        self.begin()
        try:
            result = run()
            if result.rows is not None:
                stream = result.rows
                result = replace(result, rows=RowStream(stream.fields, iter(list(stream.batches))))
            self.commit()
        except BaseException:
            self.rollback()
            raise
        return result

    def _dml(self, tree: exp.Expression, params: list[Any], info: SessionInfo) -> CommandResult:
        if isinstance(tree, exp.Insert):
            if tree.args.get("conflict") is not None:  # a large INSERT ... SELECT ... DO UPDATE: a MERGE on Spark
                from engine.merge import insert_on_conflict

                done = insert_on_conflict(self, tree, params, info)
                if done is not None:
                    return done
            return self._insert(tree, params, info)
        if isinstance(tree, exp.Update):
            return self._update(tree, params, info)
        assert isinstance(tree, exp.Delete)
        return self._delete(tree, params, info)

    def _other_statement(self, tree: exp.Expression, sql: str, params: list[Any],
                         info: SessionInfo) -> RowStream | CommandResult:
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

    _FLOW_STATEMENTS = (dialect.CreateFlow, dialect.DropFlow, dialect.ShowFlows, dialect.ShowCreateFlow,
                        dialect.ShowFlowStatus, dialect.CommentOnFlow, dialect.Admin)
    _JOB_STATEMENTS = (dialect.SubmitJob, dialect.ShowJobs, dialect.FetchJob, dialect.WaitJob, dialect.CancelJob)

    def _tidegate_statement(self, tree: dialect.TidegateStatement, params: list[Any],
                            info: SessionInfo) -> RowStream | CommandResult:
        """Flows (GreptimeDB's), jobs and REFRESH TABLE, by the type of the dialect's tree."""
        if isinstance(tree, self._FLOW_STATEMENTS):
            if self.in_block and isinstance(tree, (dialect.CreateFlow, dialect.DropFlow, dialect.CommentOnFlow)):
                verb = "COMMENT" if isinstance(tree, dialect.CommentOnFlow) else (
                    "CREATE" if isinstance(tree, dialect.CreateFlow) else "DROP")
                raise SqlError("25001", f"{verb} FLOW cannot run inside a transaction block",
                               hint="Flows are not transactional: run it outside BEGIN ... COMMIT (autocommit).")
            return flow_statements.execute(self, tree, info)
        if isinstance(tree, self._JOB_STATEMENTS):
            return self.engine.jobs.execute(tree, info, self, params)
        return self.engine.refresh.execute(tree, info)

    # -- shared by the statements ------------------------------------------------------------

    def _translate(self, tree: exp.Expression, params: Sequence[Any], info: SessionInfo,
                   resolver: StatementResolver | None = None, client: bool = False) -> tuple[Any, StatementResolver]:
        """``client``: the rows go to the client (exact numeric operands ride along: translate_query)."""
        from engine.translate import translate_query

        resolver = resolver or StatementResolver(self, info)
        with self.store.gate.reading():  # the relations and snapshots of one moment
            tq = translate_query(tree, resolver, list(params), exact_numeric=client)
        self._integer_ops.append(tq.integer_ops)  # for an overflow's message (_run)
        return tq, resolver

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
        if catalog_part is not None and node_name(catalog_part) not in ("tidegate", self.catalog.database):
            raise SqlError("0A000", f'cross-database references are not implemented: "{node.sql("postgres")}"')
        db = node.args.get("db")
        return (node_name(db) if db is not None else None), node_name(node.this)

    def _resolve_target(self, node: exp.Table, info: SessionInfo, *, allow_view: bool = False) -> TableDef:
        schema, name = self._table_name(node)
        t = self.catalog.resolve_table(name, schema, info.search_path)
        if (t.kind == "view" and not allow_view) or t.kind == "sequence":
            raise SqlError("42809", f'"{t.name}" is not a table')
        return t

    def _eval_context(self, info: SessionInfo) -> dict[str, Any]:
        """What const_eval needs for one statement: its now(), and nextval/currval/setval/lastval."""
        return {"now": datetime.now(timezone.utc), "sequences": lambda fn, args: self.sequence_call(fn, args, info)}

# Each kind of statement (tidegate.statements.classify) and the one place that runs it.
EngineSession._HANDLERS = {
    Kind.SQL: EngineSession._sql,
    Kind.INSERT: EngineSession._insert_statement,
    Kind.ROLE: EngineSession._role,
    Kind.FLOW: EngineSession._sql,
    Kind.SEQUENCE: lambda s, sql, params, info: s._sequence_statement(sql, info),
    Kind.DATABASE: lambda s, sql, params, info: s._database_statement(sql, info),
    Kind.TABLE_OPTIONS: lambda s, sql, params, info: s._alter_table_options(sql, info),
    Kind.CREATE_TABLE: EngineSession._create_table_statement,
    Kind.INDEX: lambda s, sql, params, info: constraints.index_statement(s, sql, info),
    Kind.JOB: EngineSession._sql,
    Kind.REFRESH: EngineSession._sql,
    Kind.SHOW: lambda s, sql, params, info: s._show(sql, sqllex.scan(sql), info),
    Kind.EXPLAIN: lambda s, sql, params, info: s._explain(sql, params, info),
    Kind.COMMENT: lambda s, sql, params, info: s._comment(sql, info),
    Kind.VACUUM: lambda s, sql, params, info: vacuum.execute(s, sql, info),
    Kind.SESSION: EngineSession._session_statement,
    Kind.EMPTY: EngineSession._empty,
}


# -- helpers ------------------------------------------------------------------------------------

_parsed = functools.lru_cache(maxsize=1024)(dialect.parse_one)


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
