"""Locks every gateway of one PostgreSQL catalog honours: advisory locks of the catalog database.

Inside one gateway, commits to a table are serialised by a thread lock per table, and a
transaction that commits to several tables becomes visible to readers at once through a
read/write gate (engine/locks.py). Gateways sharing a catalog and a warehouse are separate
processes, possibly on separate hosts, so each of those locks has a second half here: a
session-level advisory lock of the catalog database, held on a connection of its own while the
thread lock is held. PostgreSQL releases it when its connection ends (kill -9 of the gateway, a
gateway cut off from the database), queues a request behind conflicting waiters (a stream of
readers does not starve a committer), and reports a wait cycle among gateways as 40P01.

Keys use the two-int4 form of the advisory-lock functions with a namespace of their own, so they
never meet the single-bigint keys of the catalog's writers (catalog/db.py) and of the active
gateway (catalog/active.py).

The connections are pooled per process: one is taken for each lock held at a time (a committer
holding three tables' locks uses three), and up to :data:`IDLE_KEPT` idle ones are kept.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from catalog.db import pg_connect
from tidegate.errors import SqlError

# Namespaces (the first int4 key): a table's commits, the gate of multi-commit transactions, and
# a table's write lock held to a transaction's end (engine/locks.py TableLocks).
TABLE_NS = int.from_bytes(b"tdtb", "big", signed=True)
GATE_NS = int.from_bytes(b"tdgt", "big", signed=True)
ROWS_NS = int.from_bytes(b"tdrw", "big", signed=True)
_CANCEL_POLL_S = 0.1
IDLE_KEPT = 8


def table_key(location: str) -> int:
    """The second int4 key of a table's commit lock: a digest of its storage location (the same
    path in every gateway of a warehouse). Two tables sharing a digest only share a lock."""
    return int.from_bytes(hashlib.blake2b(location.encode(), digest_size=4).digest(), "big", signed=True)


class SharedLocks:
    """Advisory locks on the catalog database at ``url`` (see the module docstring)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._idle: list[Any] = []
        self._guard = threading.Lock()
        self._closed = False

    def _connection(self) -> Any:
        with self._guard:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
        return pg_connect(self._url, "tidegate locks", hint="The gateways of a catalog lock tables there; check "
                                                            "that the database accepts connections.")

    def _give_back(self, conn: Any) -> None:
        with self._guard:
            if not self._closed and not conn.closed and len(self._idle) < IDLE_KEPT:
                self._idle.append(conn)
                return
        conn.close()

    @contextmanager
    def hold(self, namespace: int, key: int, *, shared: bool = False, wait: bool = True) -> Iterator[None]:
        """The advisory lock ``(namespace, key)``, exclusive or shared, until the block ends.
        Fails with 58030 when the database cannot be reached (nothing is then held), 40P01 when
        PostgreSQL finds the wait closes a cycle, 57014 when the wait is cancelled, and without
        ``wait`` with :class:`LockBusy` when another session holds it."""
        import psycopg

        suffix = "_shared" if shared else ""
        conn = self._connection()
        try:
            if wait:
                conn.execute(f"SELECT pg_advisory_lock{suffix}(%s, %s)", (namespace, key))
            elif not conn.execute(f"SELECT pg_try_advisory_lock{suffix}(%s, %s)", (namespace, key)).fetchone()[0]:
                self._give_back(conn)
                raise LockBusy()
        except psycopg.Error as exc:
            conn.close()
            raise _sql_error(exc) from None
        try:
            yield
        finally:
            try:
                conn.execute(f"SELECT pg_advisory_unlock{suffix}(%s, %s)", (namespace, key))
            except psycopg.Error:
                conn.close()  # the session's end releases what it held
            self._give_back(conn)

    def session(self) -> LockSession:
        """A set of locks held together to an end the caller chooses (:class:`LockSession`)."""
        return LockSession(self)

    def close(self) -> None:
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class LockSession:
    """Exclusive advisory locks held together on one database session until :meth:`release_all`:
    a transaction's table write locks (engine/locks.py). One session for all of them, so a wait
    for another gateway's lock is seen by PostgreSQL's deadlock detector together with the
    locks this one holds (a cycle among gateways fails one of them with 40P01)."""

    def __init__(self, locks: SharedLocks) -> None:
        self._locks = locks
        self._conn: Any = None
        self._cancel_sent = False

    def take(self, namespace: int, key: int, *, cancelled: Callable[[], bool] | None = None,
             wait: bool = True) -> None:
        """Take ``(namespace, key)``. A wait is one blocking request; a ``cancelled()`` that turns
        true meanwhile cancels it (57014). Without ``wait``: :class:`LockBusy` when another
        session holds it. 58030 when the database cannot be reached (what this session held is
        then released: the database ends the session)."""
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = self._locks._connection()
        conn = self._conn
        try:
            if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (namespace, key)).fetchone()[0]:
                return
            if not wait:
                raise LockBusy()
            done = threading.Event()

            def watch() -> None:
                while not done.wait(_CANCEL_POLL_S):
                    if cancelled is not None and cancelled():
                        try:
                            conn.cancel_safe(timeout=2)
                        except Exception:  # noqa: BLE001 - the wait goes on; tried again next poll
                            continue
                        self._cancel_sent = True
                        return

            watcher = threading.Thread(target=watch, name="tidegate-lock-wait", daemon=True)
            watcher.start()
            try:
                conn.execute("SELECT pg_advisory_lock(%s, %s)", (namespace, key))
            finally:
                done.set()
                watcher.join()
        except psycopg.Error as exc:
            if getattr(exc, "sqlstate", None) not in ("57014", "40P01"):
                self._drop()  # a broken session: what it held goes with it
            raise _sql_error(exc) from None

    def release_all(self) -> None:
        """Release every lock this session holds."""
        import psycopg

        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.execute("SELECT pg_advisory_unlock_all()")
        except psycopg.Error:
            conn.close()  # the session's end releases what it held
        if self._cancel_sent:  # a cancel sent just as a wait ended must not reach a later use
            self._cancel_sent = False
            conn.close()
        else:
            self._locks._give_back(conn)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class LockBusy(SqlError):
    """A lock asked for without waiting is held elsewhere."""

    def __init__(self) -> None:
        super().__init__("55P03", "could not obtain lock: another gateway holds it")


def _sql_error(exc: Exception) -> SqlError:
    state = getattr(exc, "sqlstate", None) or ""
    if state == "40P01":
        return SqlError("40P01", "deadlock detected",
                        detail="Gateways of this catalog wait for each other's table locks.",
                        hint="Write tables in the same order in every transaction.")
    if state == "57014":
        return SqlError("57014", "canceling statement due to user request")
    return SqlError("58030", f"the catalog database failed while taking a lock: {str(exc).strip()}")
