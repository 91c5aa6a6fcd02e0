"""The events table ``tidegate_private.events`` and its recorder (docs/DESIGN.md, "Events").

What happened to the server, queryable with ordinary SQL: flows created, replaced, dropped,
activated, failing and recovering; refreshes; DDL; failed logins; the gateway starting and
stopping. Every layer reports through one call::

    engine.events.record("flow.failed", object="public.f", user=None,
                         payload={"error": "...", "sqlstate": "42P01", "failures": 3})

``record`` never blocks and never raises: it puts the event on a bounded queue and returns. One
writer thread commits the queue in batches (every ``events_flush_interval_s`` or every
``events_batch_size`` events, and at shutdown) as ONE Delta append each, through the same
:class:`engine.storage.TableStore` path as any INSERT into a table. A failed commit is retried
with exponential backoff; when the queue is full, or a batch's retries are exhausted, events are
dropped and counted: a WARNING log line when dropping starts, and an ``events.dropped`` event
(payload ``dropped``: how many since the last such event, ``total``: since start) in the next
batch that commits.

Idempotence: event ids are consecutive integers; a batch carries ids ``first..last`` and commits
under the Delta application transaction ``tidegate-events`` with version ``last``. A commit whose
outcome is unknown (an error after the log entry was written) is looked up by that version
before it is retried, so no batch is written twice; at start the next id is the last committed
one plus one, so ids never repeat across restarts. A kill -9 loses only the events still queued.

Several gateways of one PostgreSQL catalog record into the one table, each through its slot
(catalog/slots.py): slot ``n`` commits under ``tidegate-events-<n>`` (slot 0: ``tidegate-events``)
and numbers its events from ``n * SLOT_IDS + 1`` (:func:`slot_ids`), so the ids of two gateways
never meet and each finds its own last id after a restart.

Event types are dotted names (:data:`EVENT_TYPES`). Jobs (:mod:`engine.jobs`) report as
``job.submitted`` / ``job.started`` / ``job.finished`` / ``job.failed`` / ``job.cancelled``,
``object`` the job's name (or id), ``user`` who submitted it, the payload its id, what it runs and,
when it ended, its duration, rows and error.

This module never imports Spark: the gateway (which may not) reaches :meth:`EventRecorder.record`
through ``RoutedBackend.record_event``.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from catalog.roles import PRIVATE_SCHEMA, PUBLIC
from catalog.store import Catalog, ColumnDef, TableDef
from tidegate.config import Settings
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType, TYPES_BY_NAME
from tidegate.sqllex import scan
from engine.ddl import ident_value

if TYPE_CHECKING:
    from engine.storage import TableStore

log = logging.getLogger(__name__)

EVENTS_TABLE = "events"
EVENTS_QUALIFIED = f"{PRIVATE_SCHEMA}.{EVENTS_TABLE}"
APP_ID = "tidegate-events"  # the Delta application transaction of the recorder's batches (slot 0)
SLOT_IDS = 10**12  # event ids per gateway slot


def slot_ids(slot: int) -> tuple[str, int]:
    """A slot's Delta application id and the id its events count up from (exclusive)."""
    return (APP_ID if slot == 0 else f"{APP_ID}-{slot}"), slot * SLOT_IDS

# Every event type the server records (dotted: subject.verb). ``ddl`` carries the statement.
FLOW_CREATED = "flow.created"
FLOW_REPLACED = "flow.replaced"
FLOW_DROPPED = "flow.dropped"
FLOW_ACTIVATED = "flow.activated"
FLOW_SUSPENDED = "flow.suspended"  # a source table was dropped: pending until it exists again
FLOW_FAILED = "flow.failed"
FLOW_RECOVERED = "flow.recovered"
FLOW_REBUILT = "flow.rebuilt"  # a streaming flow started over (new checkpoint and epoch), its sink rebuilt
REFRESH_STARTED = "refresh.started"
REFRESH_FINISHED = "refresh.finished"
REFRESH_FAILED = "refresh.failed"
JOB_SUBMITTED = "job.submitted"
JOB_STARTED = "job.started"
JOB_FINISHED = "job.finished"
JOB_FAILED = "job.failed"
JOB_CANCELLED = "job.cancelled"
DDL = "ddl"
AUTH_FAILED = "auth.failed"
GATEWAY_STARTED = "gateway.started"
GATEWAY_STOPPED = "gateway.stopped"
GATEWAY_LEADING = "gateway.leading"  # a follower took the lead of a shared catalog's background work
EVENTS_DROPPED = "events.dropped"
EVENT_TYPES = frozenset({
    FLOW_CREATED, FLOW_REPLACED, FLOW_DROPPED, FLOW_ACTIVATED, FLOW_SUSPENDED, FLOW_FAILED, FLOW_RECOVERED,
    FLOW_REBUILT,
    REFRESH_STARTED, REFRESH_FINISHED, REFRESH_FAILED,
    JOB_SUBMITTED, JOB_STARTED, JOB_FINISHED, JOB_FAILED, JOB_CANCELLED,
    DDL, AUTH_FAILED, GATEWAY_STARTED, GATEWAY_STOPPED, GATEWAY_LEADING, EVENTS_DROPPED,
})


def _col(name: str, type_name: str, not_null: bool = False, comment: str | None = None) -> ColumnDef:
    return ColumnDef(name, ColumnType(TYPES_BY_NAME[type_name]), not_null=not_null, comment=comment)


# The table's shape. ``timestamp`` is the TIME INDEX; ``event_id`` (unique, increasing in commit
# order) is the PRIMARY KEY's tag, so two events of one microsecond are two rows; ``append_mode``
# makes the table an append-only time series (no last-write-wins merge on the key).
COLUMNS = [
    _col("timestamp", "timestamptz", True, "when the event was recorded"),
    _col("event_id", "int8", True, "unique, increasing in commit order"),
    _col("type", "text", True, "what happened: flow.created, refresh.finished, ddl, auth.failed, ..."),
    _col("object", "text", comment="the object it happened to (schema.name), if any"),
    _col("username", "text", comment="who did it, if anyone"),
    _col("gateway", "text", comment="the gateway that recorded it (host:port)"),
    _col("payload", "jsonb", comment="the details: what, which, by whom, how much, why"),
]
TABLE_COMMENT = "What happened to this server (written by the server only)"


def events_table_def(settings: Settings) -> TableDef:
    """The definition the events table should have (its ttl from ``events_ttl``, checked as the
    table option is: a bad value stops the start with the option's 22023 message)."""
    from engine import ttl

    options = {"ttl": str(settings.events_ttl), "append_mode": "true"}
    try:
        ttl.validate(options, "timestamp", EVENTS_QUALIFIED)
    except SqlError as exc:
        raise ValueError(f"setting events_ttl: {exc.message}") from None
    return TableDef(PRIVATE_SCHEMA, EVENTS_TABLE, [replace(c) for c in COLUMNS], primary_key=["event_id"],
                    time_index="timestamp", options=options, comment=TABLE_COMMENT)


def ensure_events_table(catalog: Catalog, store: TableStore, settings: Settings) -> TableDef:
    """Create the private schema and the events table at first start (readable by PUBLIC); keep
    its ttl option in step with the setting; recreate its storage if it is gone."""
    schema = catalog.get_schema(PRIVATE_SCHEMA)
    if schema is None:
        catalog.create_schema(PRIVATE_SCHEMA, if_not_exists=True)
        schema = catalog.get_schema(PRIVATE_SCHEMA)
        assert schema is not None
        catalog.set_schema_comment(PRIVATE_SCHEMA, "tidegate's own tables (read-only)")
        catalog.roles.grant("n", schema.oid, [PUBLIC], ["USAGE"], "tidegate")
    wanted = events_table_def(settings)
    t = catalog.get_table(PRIVATE_SCHEMA, EVENTS_TABLE)
    if t is None:
        oid = catalog.next_oid()
        t = replace(wanted, oid=oid, location=store.location_for(schema.oid, oid))
        store.create(t)
        try:
            t = catalog.create_table(t) or t
        except BaseException:
            store.drop(t.location)
            raise
        catalog.roles.grant("r", t.oid, [PUBLIC], ["SELECT"], "tidegate")
        log.info("created the events table %s", EVENTS_QUALIFIED)
        return t
    if t.options.get("ttl") != wanted.options["ttl"]:
        t = catalog.replace_table(replace(t, options={**t.options, "ttl": wanted.options["ttl"]}))
    if t.location and not os.path.isdir(os.path.join(t.location, "_delta_log")):
        log.warning("the events table's storage is missing: created empty at %s", t.location)
        store.create(t)
    return t


@dataclass(frozen=True)
class Event:
    """One recorded event, as queued (its payload already JSON text)."""

    timestamp: datetime
    type: str
    object: str | None
    user: str | None
    payload: str


def _json(payload: Mapping[str, Any] | None) -> str:
    """jsonb text as the store writes it (engine.storage.python_value: ", " and ": ")."""
    return json.dumps(dict(payload or {}), separators=(", ", ": "), ensure_ascii=False, default=str)


class _InjectedFailure(Exception):
    """TIDEGATE_EVENTS_TEST_FAIL_COMMITS: a commit made to fail (operator-only test hook)."""


class EventRecorder:
    """Queues events and commits them in batches from one writer thread (module docstring)."""

    def __init__(self, catalog: Catalog, store: TableStore, settings: Settings, gateway: str = "",
                 slot: int = 0) -> None:
        self.catalog = catalog
        self.app_id, self._base = slot_ids(slot)
        self.store = store
        self.enabled = bool(settings.events_enabled)
        self.gateway = gateway or f"{settings.host}:{settings.port}"
        self.interval = max(0.01, float(settings.events_flush_interval_s))
        self.batch_size = max(1, int(settings.events_batch_size))
        self.retries = max(0, int(settings.events_commit_retries))
        self._queue: queue.Queue[Event] = queue.Queue(maxsize=max(1, int(settings.events_queue_size)))
        self._lock = threading.Lock()
        self._dropped = 0  # events lost since start (queue full, or retries exhausted)
        self._reported = 0  # of which an events.dropped event already committed
        self._dropping = False  # within a run of drops (one log line per run)
        self.committed = 0  # events committed since start
        self._stop = threading.Event()
        # Wakes the writer before its interval ends: a full batch is waiting, or close(). The
        # writer never blocks on the queue itself, which would wake it (and hand it the GIL) for
        # every event: at 1,000 events/s that slowed the event loop recording them by ~20%.
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_id = self._base + 1
        # Operator-only fault injection (environment, never SQL): the first N commits fail, before
        # the commit ("N") or after it landed ("N:after", an ambiguous failure).
        hook = os.environ.get("TIDEGATE_EVENTS_TEST_FAIL_COMMITS", "").strip()
        count, _, when = hook.partition(":")
        self._fail_commits = int(count) if count.isdigit() else 0
        self._fail_after = when.strip().lower() == "after"

    # -- the producers' side ---------------------------------------------------------------------

    def record(self, type: str, *, object: str | None = None, user: str | None = None,
               payload: Mapping[str, Any] | None = None) -> None:
        """Queue one event; returns at once. Never raises: a full queue drops the event (counted)."""
        if not self.enabled or self._stop.is_set():
            return
        try:
            event = Event(datetime.now(timezone.utc), type, object, user, _json(payload))
            self._queue.put_nowait(event)
            if self._queue.qsize() >= self.batch_size:
                self._wake.set()
        except queue.Full:
            self._count_dropped(1, "the queue is full")
        except Exception:  # noqa: BLE001 - recording never fails a statement
            log.exception("recording event %s failed", type)

    @property
    def dropped(self) -> int:
        with self._lock:
            return self._dropped

    def _count_dropped(self, n: int, why: str) -> None:
        with self._lock:
            self._dropped += n
            first = not self._dropping
            self._dropping = True
            total = self._dropped
        if first:
            log.warning("events: dropping events because %s (%d dropped since start); see the events.dropped "
                        "events of %s", why, total, EVENTS_QUALIFIED)

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer (events recorded before are kept in the queue)."""
        if self._thread is not None or not self.enabled:
            return
        t = self.catalog.get_table(PRIVATE_SCHEMA, EVENTS_TABLE)
        if t is not None and t.location:
            try:
                self._next_id = max(self._base, self.store.app_version(t.location, self.app_id) or 0) + 1
            except Exception:  # noqa: BLE001 - unreadable now: the first commit reads it again
                log.exception("events: cannot read the last committed event id")
        self._thread = threading.Thread(target=self._run, name="tidegate-events", daemon=True)
        self._thread.start()

    def close(self, timeout: float = 15.0) -> None:
        """Stop accepting events, commit what is queued, stop the writer."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("events: the writer did not finish within %.0f s; %d event(s) not committed",
                            timeout, self._queue.qsize())
            self._thread = None

    # -- the writer --------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            batch = self._take_batch()
            if batch or self._unreported():
                try:
                    self._commit(batch)
                except Exception:  # noqa: BLE001 - the writer survives anything
                    log.exception("events: batch commit failed")
                    self._count_dropped(len(batch), "a batch could not be committed")
            if self._stop.is_set() and self._queue.empty():
                return

    def _take_batch(self) -> list[Event]:
        """Up to batch_size events, once the interval has passed or a full batch is waiting (at
        once while stopping: the queue is drained)."""
        if self._queue.qsize() < self.batch_size and not self._stop.is_set():
            self._wake.wait(self.interval)
        self._wake.clear()
        batch: list[Event] = []
        while len(batch) < self.batch_size:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _unreported(self) -> int:
        with self._lock:
            return self._dropped - self._reported

    def _commit(self, batch: list[Event]) -> None:
        """Commit ``batch`` (with an events.dropped event first when events were lost) as one
        append, retried with backoff; after the last retry its events are dropped and counted."""
        with self._lock:
            total, lost = self._dropped, self._dropped - self._reported
        events = list(batch)
        if lost:
            events.insert(0, Event(datetime.now(timezone.utc), EVENTS_DROPPED, EVENTS_QUALIFIED, None,
                                   _json({"dropped": lost, "total": total,
                                          "reason": "the queue was full or a batch could not be committed",
                                          "queue_capacity": self._queue.maxsize})))
        first = self._next_id
        last = first + len(events) - 1
        delay = 0.5
        for attempt in range(self.retries + 1):
            try:
                self._write(events, first, last)
                break
            except Exception as exc:  # noqa: BLE001 - retried, then counted
                if self._landed(last):
                    break  # the commit landed before the error: not written again
                if attempt == self.retries:
                    self._next_id = self._landed_next(first)
                    log.warning("events: a batch of %d event(s) could not be committed after %d attempts: %s",
                                len(events), attempt + 1, exc)
                    self._count_dropped(len(events), "batches could not be committed")
                    return
                log.info("events: commit failed (attempt %d, retry in %.1f s): %s", attempt + 1, delay, exc)
                time.sleep(delay)
                delay = min(delay * 2, 8.0)
        self._next_id = last + 1
        with self._lock:
            self.committed += len(events)
            if lost:
                self._reported = total
            if self._dropped == self._reported:
                self._dropping = False

    def _table(self) -> TableDef:
        t = self.catalog.get_table(PRIVATE_SCHEMA, EVENTS_TABLE)
        if t is None or not t.location:
            raise RuntimeError(f"{EVENTS_QUALIFIED} does not exist")
        return t

    def _landed(self, last: int) -> bool:
        """Whether the batch ending at ``last`` is in the table (its app transaction version)."""
        try:
            t = self._table()
            self.store.forget(t.location or "")
            return (self.store.app_version(t.location or "", self.app_id) or 0) >= last
        except Exception:  # noqa: BLE001 - cannot tell: treated as not landed
            return False

    def _landed_next(self, first: int) -> int:
        """The next id after a batch given up on: past anything committed (ids never repeat)."""
        try:
            t = self._table()
            return max(first, (self.store.app_version(t.location or "", self.app_id) or 0) + 1)
        except Exception:  # noqa: BLE001
            return first

    def _write(self, events: list[Event], first: int, last: int) -> None:
        from engine.storage import WriteOp, storage_schema

        t = self._table()
        fail = self._fail_commits > 0
        if fail and not self._fail_after:
            self._fail_commits -= 1
            raise _InjectedFailure("injected commit failure (TIDEGATE_EVENTS_TEST_FAIL_COMMITS)")
        data = pa.Table.from_pydict({
            "timestamp": [e.timestamp for e in events],
            "event_id": list(range(first, last + 1)),
            "type": [e.type for e in events],
            "object": [e.object for e in events],
            "username": [e.user for e in events],
            "gateway": [self.gateway] * len(events),
            "payload": [e.payload for e in events],
        }, schema=storage_schema(t.columns))
        self.store.apply(WriteOp(t, "append", data, app_id=self.app_id, app_version=last))
        if fail:
            self._fail_commits -= 1
            raise _InjectedFailure("injected failure after the commit (TIDEGATE_EVENTS_TEST_FAIL_COMMITS)")



# -- DDL events ------------------------------------------------------------------------------------

_DDL_VERBS = ("CREATE", "ALTER", "DROP", "COMMENT")
_DDL_KINDS = ("TABLE", "VIEW", "SCHEMA", "INDEX", "SEQUENCE", "DATABASE", "COLUMN")
_UNQUALIFIED_KINDS = ("SCHEMA", "DATABASE")
_SKIP_WORDS = {"OR", "REPLACE", "TEMP", "TEMPORARY", "UNLOGGED", "UNIQUE", "MATERIALIZED", "ON", "IF", "NOT",
               "EXISTS", "ONLY", "CONCURRENTLY"}
# A connector table's password, alone or in its url, never reaches the events table.
_SECRET_OPTION = re.compile(r"(\bpassword\s*=\s*)'(?:[^']|'')*'", re.I)
_URL_SECRET = re.compile(r"(://[^:/@'\s]*:)[^'\s]*@")
_URL_QUERY_SECRET = re.compile(r"([?&]password=)[^&'\s]*", re.I)


def masked_statement(sql: str) -> str:
    """A statement's text as events keep it: passwords replaced by ********."""
    sql = _SECRET_OPTION.sub(r"\1'********'", sql)
    sql = _URL_SECRET.sub(r"\1********@", sql)
    return _URL_QUERY_SECRET.sub(r"\1********", sql)


def ddl_event(sql: str, tag: str, current_schema: Callable[[], str]) -> tuple[str | None, dict[str, Any]] | None:
    """(object, payload) of a DDL statement on tables, views, schemas, indexes or sequences that
    succeeded with ``tag``, or None for anything else (flows and roles have events of their own
    or none; role statements may carry passwords). ``object`` is the first name the statement
    names, qualified with ``current_schema()`` when written without a schema."""
    toks = [t for t in scan(sql) if t.text != ";"]
    words = [t.upper for t in toks[:3]]
    if not words or words[0] not in _DDL_VERBS or (len(words) > 1 and words[1] in ("ROLE", "USER", "GROUP", "FLOW")):
        return None
    kind = ""
    i = 1
    while i < len(toks) and toks[i].kind == "word" and (toks[i].upper in _SKIP_WORDS or toks[i].upper in _DDL_KINDS):
        if toks[i].upper in _DDL_KINDS and not kind:
            kind = toks[i].upper
        i += 1
    if not kind:
        return None
    parts: list[str] = []
    while i < len(toks) and toks[i].kind in ("word", "qid"):
        parts.append(ident_value(toks[i]))
        if i + 1 < len(toks) and toks[i + 1].text == ".":
            i += 2
            continue
        break
    obj: str | None = None
    if parts:
        if kind == "COLUMN" and len(parts) >= 2:
            parts = parts[:-1]  # COMMENT ON COLUMN [schema.]table.column: the table
        if kind in _UNQUALIFIED_KINDS or len(parts) > 1:
            obj = ".".join(parts[-2:])
        else:
            obj = f"{current_schema()}.{parts[0]}"
    command = tag if not tag.startswith("SELECT") else "CREATE TABLE AS"
    return obj, {"command": command, "statement": masked_statement(sql.strip())}
