"""Gateway slots: what each gateway of one catalog and warehouse keeps apart from the others.

Gateways sharing a PostgreSQL catalog and a data directory must not share a commit journal (each
recovers its own after a crash), must not tag their multi-commit transactions with one Delta
application id (a table keeps one version per application id: two gateways' transaction ids
would overtake each other and recovery would skip writes), and must not hand two sessions one
backend pid (``pg_temp_<pid>`` names a session's temporary schema in the shared catalog).

Each gateway therefore holds a *slot*, a small number, for its life: on a PostgreSQL catalog the
lowest ``n`` whose session-level advisory lock ``(b"tdsl", n)`` it can take, held on a connection of
its own (PostgreSQL releases it when the gateway dies, kill -9 included); on an embedded catalog
always slot 0 (the data-dir lock makes it the only gateway). Slot 0 keeps the names tidegate used
before slots existed (``<data dir>/txn``, application id ``tidegate-txn``, backend pids below
2**24), so data directories from earlier versions recover as they did.

A slot whose lock nobody holds belongs to a gateway that died: whoever takes the slot next
completes what its journal holds and drops its sessions' temporary schemas first, and a running
gateway sweeps free slots it finds journals for (:meth:`GatewaySlot.sweep`), holding each one's lock
while it does, so a dead gateway's interrupted commits land even when no gateway replaces it.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from catalog.active import ConfirmedLock, TakenElsewhere, fenced_connection
from catalog.db import is_postgres, pg_connect, redact
from tidegate.errors import SqlError
from catalog.lock import DataDirLockError

log = logging.getLogger(__name__)

SLOT_NS = int.from_bytes(b"tdsl", "big", signed=True)
MAX_SLOTS = 32  # backend pids are slot << PID_BITS | n, below jobs' pids (10**9 + job number)
PID_BITS = 24
_JOURNAL = re.compile(r"^txn(?:-(\d+))?$")
NAME_PREFIX = "tidegate slot "
_LISTENING = re.compile(r"^tidegate slot \d+ listening on (\S+):(\d+)$")


def journal_dir(data_dir: Path | str, slot: int) -> Path:
    """The commit journal of ``slot``'s gateway."""
    return Path(data_dir) / ("txn" if slot == 0 else f"txn-{slot}")


def app_id(slot: int) -> str:
    """The Delta application id ``slot``'s gateway tags its transactions' commits with."""
    return "tidegate-txn" if slot == 0 else f"tidegate-txn-{slot}"


def pid_range(slot: int) -> range:
    """The backend pids ``slot``'s gateway hands out."""
    return range((slot << PID_BITS) + 1, (slot + 1) << PID_BITS)


def slot_of_pid(pid: int) -> int | None:
    """The slot whose gateway handed out backend ``pid`` (None: a job's session, or no gateway's)."""
    slot = pid >> PID_BITS
    return slot if 0 <= slot < MAX_SLOTS and pid > 0 else None


def journal_slots(data_dir: Path | str) -> list[int]:
    """The slots that have a journal directory under ``data_dir``."""
    root = Path(data_dir)
    if not root.is_dir():
        return []
    found = []
    for p in root.iterdir():
        m = _JOURNAL.match(p.name)
        if m is not None and p.is_dir():
            found.append(int(m.group(1) or 0))
    return sorted(found)


class GatewaySlot(ConfirmedLock):
    """This gateway's slot among the gateways of the catalog at ``target`` (see the module docstring)."""

    def __init__(self, target: str | Path) -> None:
        super().__init__()
        self._url = str(target) if is_postgres(target) else None
        self._listen = ""
        # one sweep at a time in this process: an advisory lock is re-entrant within its session,
        # so two threads of one gateway could otherwise both "take" a dead slot and recover it
        self._sweeping = threading.Lock()
        self._lookup: Any = None  # address_of's connection
        self._lookup_guard = threading.Lock()
        self.number = 0

    @property
    def what(self) -> str:  # type: ignore[override]
        return f"gateway slot {self.number}"

    @property
    def shared(self) -> bool:
        """Whether other gateways may share the catalog (a PostgreSQL one)."""
        return self._url is not None

    def take(self, on_lost: Callable[[str], None] | None = None) -> GatewaySlot:
        """Take the lowest free slot (slot 0 on an embedded catalog). A watcher confirms it every
        WATCH_S; a connection the database ended is replaced and the slot taken again, and when
        another gateway holds it by then, ``on_lost`` is called (the gateway must stop)."""
        if self._url is None:
            return self
        import psycopg

        self._on_lost = on_lost
        try:
            self._conn = self._connect()
            for n in range(MAX_SLOTS):
                if self._conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (SLOT_NS, n)).fetchone()[0]:
                    self.number = n
                    self._conn.execute("SELECT set_config('application_name', %s, false)", (self._name(),))
                    self._confirmed = time.monotonic()
                    threading.Thread(target=self._watch, name="gateway-slot", daemon=True).start()
                    return self
        except psycopg.Error as exc:
            raise DataDirLockError(f"could not take a gateway slot in the catalog database {redact(self._url)}: "
                                   f"{str(exc).strip()}") from None
        self._conn.close()
        raise DataDirLockError(f"all {MAX_SLOTS} gateway slots of the catalog {redact(self._url)} are taken: "
                               "stop a gateway before starting another")

    def _connect(self) -> Any:
        assert self._url is not None
        return fenced_connection(self._url, self._name())

    def _name(self) -> str:
        """The slot connection's application_name: how other gateways find this one's address."""
        return f"{NAME_PREFIX}{self.number}" + (f" listening on {self._listen}" if self._listen else "")

    def update(self, listen: str) -> None:
        """The address this gateway listens on (host:port), for the other gateways to reach it
        (forwarded cancel requests). A wildcard host is replaced by this host's address as the
        catalog database sees it."""
        if self._url is None:
            return
        import psycopg

        host, _, port = listen.rpartition(":")
        with self._guard:
            try:
                if host.strip("[]") in ("", "0.0.0.0", "::", "*"):
                    seen = self._conn.execute("SELECT host(inet_client_addr())").fetchone()[0]
                    host = seen if seen else "127.0.0.1"
                    host = f"[{host}]" if ":" in host else host
                self._listen = f"{host}:{port}"
                self._conn.execute("SELECT set_config('application_name', %s, false)", (self._name(),))
            except psycopg.Error as exc:
                log.warning("could not record this gateway's address in its slot: %s", exc)

    def address_of(self, n: int) -> tuple[str, int] | None:
        """Where the gateway holding slot ``n`` listens (None: no live gateway holds it, or it
        has not said)."""
        if self._url is None:
            return None
        import psycopg

        # A connection of its own: lookups come from clients' cancel requests (any number, from
        # anyone), and must never hold up the watcher that keeps the slot confirmed (_guard).
        with self._lookup_guard:
            try:
                if self._lookup is None or self._lookup.closed:
                    self._lookup = pg_connect(self._url, "tidegate slot lookup")
                row = self._lookup.execute(
                    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s "
                    "AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                    (SLOT_NS & 0xFFFFFFFF, n)).fetchone()
            except (psycopg.Error, SqlError) as exc:
                log.warning("could not look up gateway slot %d: %s", n, exc)
                return None
        m = _LISTENING.match(row[0]) if row else None
        if m is None:
            return None
        return m.group(1).strip("[]"), int(m.group(2))

    def _retake(self) -> None:
        self._conn = self._connect()
        if not self._conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (SLOT_NS, self.number)).fetchone()[0]:
            raise TakenElsewhere("taken while this gateway was cut off from the catalog database")

    def sweep(self, candidates: Iterable[int], recover: Callable[[int], None]) -> list[int]:
        """Call ``recover(slot)`` for each other slot of ``candidates`` (those with something
        left: a journal, temporary schemas) whose lock nobody holds (its gateway died), holding
        that slot's lock meanwhile so no gateway starting now takes it half-recovered. Returns
        the slots recovered."""
        if self._url is None:
            return []
        with self._sweeping:
            return self._sweep(candidates, recover)

    def _sweep(self, candidates: Iterable[int], recover: Callable[[int], None]) -> list[int]:
        import psycopg

        done = []
        for n in sorted(set(candidates)):
            if n == self.number:
                continue
            with self._guard:
                try:
                    free = self._conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (SLOT_NS, n)).fetchone()[0]
                except psycopg.Error as exc:
                    log.warning("could not look at gateway slot %d: %s", n, exc)
                    continue
            if not free:
                continue
            try:
                recover(n)
                done.append(n)
            finally:
                with self._guard:
                    try:
                        self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", (SLOT_NS, n))
                    except psycopg.Error:
                        pass  # the connection's end releases it
        return done

    def release(self) -> None:
        self._stop.set()
        with self._lookup_guard:
            if self._lookup is not None:
                self._lookup.close()
                self._lookup = None
        with self._guard:
            if self._conn is not None and not self._conn.closed:
                self._conn.close()
            self._conn = None
