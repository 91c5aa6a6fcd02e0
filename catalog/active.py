"""Which gateway leads a PostgreSQL catalog's background work: one at a time, the others follow.

Every gateway of a PostgreSQL catalog serves statements: reads, writes, DDL and jobs, from any of
them, on one warehouse (the catalog's version, the tables' commit locks and the visibility gate
are shared through the catalog database: catalog/store.py, catalog/shared_locks.py). The work that
is not yet split into per-item leases -- flows, refresh schedules and the recovery of refreshes,
compaction, TTL clean-up -- is led by one gateway: the holder of a session-level advisory lock of
the catalog database, taken on a connection of its own for the leader's whole life. The database
releases the lock when that connection ends, kill -9 of the gateway included.

A gateway started while another leads follows: it listens and serves at once, and waits for the
lock in the background (trying every :data:`POLL_S`). When the leader dies a follower takes the
lock and starts the led work (recovering what the dead leader left: refreshes in flight, flows
from their stored versions). Statements that need the led work's owner (CREATE / ALTER / DROP
FLOW, ADMIN FLUSH_FLOW, REFRESH TABLE) are refused on a follower with 0A000 naming the leader.
bench/ha.py measures the take-over.

Fencing. A leader must stop before another starts, also when it is cut off from the catalog
database rather than dead, for the database then ends its connection (and releases the lock) on
its own. The lock's connection asks the database to drop it after :data:`SERVER_DROP_S` seconds of
silence (TCP keepalives and user timeout, both sides), and a watcher confirms the lock every
:data:`WATCH_S` seconds; a gateway that has not confirmed it for :data:`FENCE_S` seconds, or finds
another gateway holding it, exits at once (``on_lost``), well before the database lets a follower
have it. While the connection is only interrupted (the database restarted, a terminated backend)
the watcher takes the lock again on a new one.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

from catalog import live
from catalog.db import redact
from catalog.lock import DataDirLockError
from tidegate import sqllex

log = logging.getLogger(__name__)

# pg_try_advisory_lock's key held by the leading gateway of a PostgreSQL catalog.
GATEWAY_LOCK = int.from_bytes(b"tdgate-1", "big")
WATCH_S = 2.0  # how often the leader confirms its lock
CHECK_TIMEOUT_S = 4  # connecting, or TCP data left unacknowledged, fails after this long
FENCE_S = 8.0  # unconfirmed for this long: the gateway exits (within another 0.5 s)
SERVER_DROP_S = 20  # the database drops the lock's silent connection after about this long
POLL_S = 0.25  # how often a follower tries to take the lock
FOLLOWER_PREFIX = "tidegate follower"
LEADER_PREFIX = "tidegate leader"


class CatalogInUse(DataDirLockError):
    """Another gateway leads the PostgreSQL catalog; ``holder`` describes it."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


def _process() -> str:
    """This process among the gateways of every host: ``pid 1234@host``."""
    return f"pid {os.getpid()}@{socket.gethostname()[:24]}"


def _connection_options() -> dict[str, Any]:
    """libpq keepalives and user timeout: a confirmation on a dead link fails within CHECK_TIMEOUT_S."""
    return {"keepalives": 1, "keepalives_idle": 2, "keepalives_interval": 1, "keepalives_count": 2,
            "tcp_user_timeout": CHECK_TIMEOUT_S * 1000}


def fenced_connection(url: str, name: str) -> Any:
    """A connection to hold a lock on: a confirmation over a dead link fails within CHECK_TIMEOUT_S,
    and the database drops the connection (and what it holds) after about SERVER_DROP_S of silence.
    DataDirLockError when the database cannot be reached."""
    import psycopg

    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=CHECK_TIMEOUT_S,
                               application_name=name, **_connection_options())
    except psycopg.Error as exc:
        raise DataDirLockError(f"could not connect to the catalog database {redact(url)}: "
                               f"{str(exc).strip()}") from None
    try:  # the database's side: drop this connection (and the lock) once it falls silent
        conn.execute(f"SET tcp_keepalives_idle = {SERVER_DROP_S - 6}; SET tcp_keepalives_interval = 2; "
                     f"SET tcp_keepalives_count = 3; SET tcp_user_timeout = {SERVER_DROP_S * 1000}")
    except psycopg.Error:  # a Unix socket has no TCP settings
        pass
    return conn


class TakenElsewhere(Exception):
    """Another gateway holds the lock a :class:`ConfirmedLock` tried to take again."""


class ConfirmedLock(ABC):
    """A session-level advisory lock held on a connection of its own (``_conn``), confirmed every
    WATCH_S by :meth:`_watch` (a connection the database ended is replaced and the lock taken again
    by :meth:`_retake`) and fenced by :meth:`_fence`: unconfirmed for FENCE_S, or taken elsewhere,
    :meth:`_lost` stops the gateway before the database can let another gateway have it."""

    what = "the lock"  # how the log names it

    def __init__(self) -> None:
        self._conn: Any = None
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._confirmed = 0.0
        self._on_lost: Callable[[str], None] | None = None

    @abstractmethod
    def _retake(self) -> None:
        """Open a new connection and take the lock again on it; TakenElsewhere when another
        gateway holds it, DataDirLockError or psycopg.Error when it cannot tell now."""

    def _watch(self) -> None:
        import psycopg

        threading.Thread(target=self._fence, name="tidegate-lock-fence", daemon=True).start()
        while not self._stop.wait(WATCH_S):
            with self._guard:
                if self._stop.is_set():
                    return
                try:
                    self._conn.execute("SELECT 1")
                    self._confirmed = time.monotonic()
                    continue
                except psycopg.Error:
                    pass
                try:
                    self._conn.close()
                except psycopg.Error:
                    pass
                try:
                    self._retake()
                    self._confirmed = time.monotonic()
                    log.warning("the catalog database ended the connection holding %s; taken again", self.what)
                    continue
                except TakenElsewhere as exc:
                    why = f"lost {self.what} to another gateway: {exc}"
                except (psycopg.Error, DataDirLockError) as exc:
                    log.warning("%s is not confirmed (retrying): %s", self.what, exc)
                    continue
            self._lost(why)
            return

    def _fence(self) -> None:
        while not self._stop.wait(0.5):
            unconfirmed = time.monotonic() - self._confirmed
            if unconfirmed >= FENCE_S:
                self._lost(f"could not confirm {self.what} for {unconfirmed:.0f} s: stopping before "
                           "another gateway may take over")
                return

    def _lost(self, why: str) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        log.critical("%s", why)
        if self._on_lost is not None:
            self._on_lost(why)


class CatalogLock(ConfirmedLock):
    """The leading gateway's lock on a PostgreSQL catalog (see the module docstring)."""

    what = "the catalog's lead"

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url
        self._listen = ""
        self._role = LEADER_PREFIX
        self._watcher: threading.Thread | None = None

    def acquire(self, listen: str = "", on_lost: Callable[[str], None] | None = None,
                follow: Callable[[str], None] | None = None) -> CatalogLock:
        """Take the lock and watch it. Held by another gateway: CatalogInUse naming it, or with
        ``follow``, call it once with the holder's description and wait for the lock (a
        follower's wait, in a thread of its own; returns unheld if released meanwhile)."""
        self._listen, self._on_lost = listen, on_lost
        try:
            self._conn = self._take()
        except CatalogInUse as exc:
            if follow is None:
                raise
            self._role = FOLLOWER_PREFIX
            follow(exc.holder)
            if not self._wait():
                return self  # released while following
            with self._guard:
                self._role = LEADER_PREFIX
                self._rename()
        self._confirmed = time.monotonic()
        self._watcher = threading.Thread(target=self._watch, name="catalog-lock", daemon=True)
        self._watcher.start()
        return self

    def _name(self) -> str:
        """The connection's application_name: how the other gateways name this one."""
        return (f"{self._role} {_process()}" + (f" listening on {self._listen}" if self._listen else ""))[:63]

    def update(self, listen: str) -> None:
        """The address actually bound (``--port 0``), shown to the other gateways from now on."""
        with self._guard:
            self._listen = listen
            self._rename()

    @property
    def leading(self) -> bool:
        return self._role == LEADER_PREFIX and self._conn is not None and not self._stop.is_set()

    def _rename(self) -> None:
        import psycopg

        if self._conn is None or self._conn.closed:
            return  # named when connected
        try:
            self._conn.execute("SELECT set_config('application_name', %s, false)", (self._name(),))
        except psycopg.Error:
            pass  # the watcher takes the lock again, under the new name

    def _connect(self) -> Any:
        return fenced_connection(self._url, self._name())

    def _take(self, conn: Any = None) -> Any:
        conn = conn or self._connect()
        if conn.execute("SELECT pg_try_advisory_lock(%s)", (GATEWAY_LOCK,)).fetchone()[0]:
            return conn
        holder = conn.execute(
            "SELECT a.pid, a.application_name, a.client_addr, a.backend_start FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
            "AND l.classid = %s AND l.objid = %s AND l.objsubid = 1",
            (GATEWAY_LOCK >> 32, GATEWAY_LOCK & 0xFFFFFFFF)).fetchone()
        mine = f"{LEADER_PREFIX} {_process()}"
        if holder is not None and (holder[1] == mine or str(holder[1]).startswith(mine + " ")):
            # Our own earlier connection, not yet ended by the database: end it and take the lock.
            conn.execute("SELECT pg_terminate_backend(%s)", (holder[0],))
            time.sleep(0.1)
            if conn.execute("SELECT pg_try_advisory_lock(%s)", (GATEWAY_LOCK,)).fetchone()[0]:
                return conn
        who = f"{holder[1]} (connected from {holder[2] or 'a local socket'} at {holder[3]})" if holder else "unknown"
        conn.close()
        raise CatalogInUse(f"the catalog {redact(self._url)} is led by another gateway: {who}", who)

    def _wait(self) -> bool:
        """A follower's wait: try every POLL_S on one connection (a new one if it breaks), kept as
        ``_conn`` so the other gateways see this one (:func:`gateway_rows`). False once released."""
        import psycopg

        while not self._stop.is_set():
            try:
                with self._guard:
                    if self._stop.is_set():
                        return False
                    if self._conn is None or self._conn.closed:
                        self._conn = self._connect()
                    if self._conn.execute("SELECT pg_try_advisory_lock(%s)", (GATEWAY_LOCK,)).fetchone()[0]:
                        return True
            except (psycopg.Error, DataDirLockError) as exc:
                log.warning("following: the catalog database is not reachable (retrying): %s", exc)
                with self._guard:
                    if self._conn is not None:
                        self._conn.close()
                    self._conn = None
                self._stop.wait(1.0)
            self._stop.wait(POLL_S)
        return False

    def _retake(self) -> None:
        try:
            self._conn = self._take()
        except CatalogInUse as exc:
            raise TakenElsewhere(str(exc)) from None

    def release(self) -> None:
        self._stop.set()
        with self._guard:
            if self._conn is not None and not self._conn.closed:
                self._conn.close()  # ends the session: the lock goes with it
            self._conn = None


# -- INFORMATION_SCHEMA.GATEWAYS ------------------------------------------------------------------

GATEWAYS_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("gateway_id", pa.string()), ("address", pa.string()), ("role", pa.string()),
    ("started", pa.timestamp("us", tz="UTC")), ("last_heartbeat", pa.timestamp("us", tz="UTC")),
    ("owns", pa.string()),
]
# What the leader runs, and what every gateway does.
LEADER_OWNS = "statements, jobs, flows, refresh schedules, compaction, TTL clean-up"
FOLLOWER_OWNS = "statements, jobs"
_NAME = re.compile(rf"^({re.escape(LEADER_PREFIX)}|{re.escape(FOLLOWER_PREFIX)}) (pid \S+)(?: listening on (\S+))?$")
_this_gateway: dict[str, Any] = {}


def this_gateway(listen: str) -> None:
    """Record this process's gateway (its row on an embedded catalog, which has no other)."""
    _this_gateway.update(gateway_id=_process(), address=listen, started=datetime.now(timezone.utc))


def _lock_connections(catalog: Any) -> list[tuple[Any, ...]]:
    """(application_name, backend_start, query_start, holds the lead) of every gateway's lead
    connection: the leader's, and each follower's waiting one."""
    return catalog.read(
        "SELECT a.application_name, a.backend_start, a.query_start, EXISTS (SELECT 1 FROM pg_locks l "
        "WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted AND l.classid = ? AND l.objid = ? "
        "AND l.objsubid = 1) FROM pg_stat_activity a WHERE a.datname = current_database() "
        f"AND (a.application_name LIKE '{LEADER_PREFIX} pid %' OR a.application_name LIKE '{FOLLOWER_PREFIX} pid %') "
        "ORDER BY a.backend_start", (GATEWAY_LOCK >> 32, GATEWAY_LOCK & 0xFFFFFFFF))


def gateway_rows(catalog: Any) -> pa.Table:
    """One row per gateway of ``catalog``: on PostgreSQL every gateway's lead connection (its last
    heartbeat: the leader's last confirmation, or the follower's last try); on the embedded
    catalog this gateway, the leader."""
    cols: dict[str, list[Any]] = {n: [] for n, _ in GATEWAYS_COLUMNS}
    rows: list[tuple[Any, ...]] = []
    if catalog.backend == "postgresql":
        for name, started, heartbeat, holds in _lock_connections(catalog):
            m = _NAME.match(str(name))
            if m is None:
                continue
            rows.append((m.group(2), m.group(3), "leader" if holds else "follower", started, heartbeat,
                         LEADER_OWNS if holds else FOLLOWER_OWNS))
        rows.sort(key=lambda r: r[2] != "leader")
    elif _this_gateway:
        now = datetime.now(timezone.utc)
        g = _this_gateway
        rows.append((g["gateway_id"], g["address"], "leader", g["started"], now, LEADER_OWNS))
    for row in rows:
        for (n, _), v in zip(GATEWAYS_COLUMNS, row):
            cols[n].append(v)
    return pa.table({n: pa.array(cols[n], t) for n, t in GATEWAYS_COLUMNS})


def _leader(catalog: Any) -> tuple[str, str | None] | None:
    """(gateway id, listen address) of the gateway leading a PostgreSQL ``catalog``, or None."""
    for name, _, _, holds in _lock_connections(catalog):
        m = _NAME.match(str(name))
        if holds and m is not None:
            return m.group(2), m.group(3)
    return None


def leader_address(catalog: Any) -> str | None:
    """Where the gateway leading ``catalog``'s flows and refreshes listens (None: none now)."""
    if catalog.backend != "postgresql":
        return _this_gateway.get("address")
    leader = _leader(catalog)
    return leader[1] if leader is not None else None


def leader_of(catalog: Any) -> str:
    """How a follower names the leading gateway in a refusal: ``pid 12@host listening on h:p``."""
    leader = _leader(catalog)
    if leader is None:
        return "none at the moment (a gateway takes over within seconds)"
    return leader[0] + (f" listening on {leader[1]}" if leader[1] else "")


def mentions_gateway_relations(sql: str) -> bool:
    """Whether a catalog query may read INFORMATION_SCHEMA.GATEWAYS (reloaded per query)."""
    return "gateways" in sqllex.identifiers(sql)


def load_into_duckdb(con: Any, catalog: Any, *, create: bool = False) -> None:
    """Create (``create=True``) or refresh ``isx.gateways`` in the evaluator's DuckDB."""
    if create:
        live.create_tables(con, {"gateways": pa.table({n: pa.array([], t) for n, t in GATEWAYS_COLUMNS})})
    else:
        live.replace_rows(con, {"gateways": gateway_rows(catalog)})
