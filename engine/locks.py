"""Table write locks held until a transaction ends: PostgreSQL's row locks, per table.

An UPDATE, DELETE, TRUNCATE or INSERT ... ON CONFLICT DO UPDATE computes its new rows from what
it reads, so two of them on one table must not interleave between read and commit (the later
commit would overwrite the earlier: a lost update). Each takes its table's lock before reading and
keeps it until its transaction commits or rolls back (outside a block: until the statement's own
commit). A second writer waits, then reads what the first committed, as PostgreSQL's second
updater waits for the row lock and re-reads the row. Plain INSERTs, reads, flows and compaction
take no lock here.

Waits form a graph; a wait that would close a cycle fails at once with 40P01 "deadlock detected",
as PostgreSQL's detector does (after its deadlock_timeout). A cancelled statement stops waiting
(57014).

The gateways of a PostgreSQL catalog share their tables, so each lock has a second half there
(``TableLocks(shared)``): once a session holds a table's lock in its gateway it takes the
advisory lock ``(b"tdrw", table)`` of the catalog database, on one database session per
transaction (catalog/shared_locks.py ``LockSession``), kept to the transaction's end. A writer on
another gateway waits for it as a second writer in one gateway waits; PostgreSQL finds cycles
among gateways (40P01) and a cancel stops the wait.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from catalog.shared_locks import GATE_NS, ROWS_NS, LockBusy, LockSession, SharedLocks, table_key
from tidegate.errors import SqlError

_POLL_S = 0.1


class TableLocks:
    """Exclusive write locks on tables (by location), owned by engine sessions (by id)."""

    def __init__(self, shared: SharedLocks | None = None) -> None:
        self._cond = threading.Condition()
        self._holders: dict[str, int] = {}
        self._waiting: dict[int, str] = {}  # owner -> the location it waits for
        self._shared = shared
        self._sessions: dict[int, LockSession] = {}  # owner -> its shared halves

    def acquire(self, owner: int, location: str, name: str, cancelled: Callable[[], bool],
                nowait: bool = False) -> None:
        if self._acquire_here(owner, location, name, cancelled, nowait) and self._shared is not None:
            with self._cond:
                session = self._sessions.get(owner)
                if session is None:
                    session = self._sessions[owner] = self._shared.session()
            try:
                session.take(ROWS_NS, table_key(location), cancelled=cancelled, wait=not nowait)
            except BaseException as exc:
                with self._cond:  # not held after all: let this gateway's waiters have it
                    if self._holders.get(location) == owner:
                        del self._holders[location]
                        self._cond.notify_all()
                if isinstance(exc, LockBusy):
                    raise SqlError("55P03", f'could not obtain lock on row in relation "{name}"') from None
                raise

    def _acquire_here(self, owner: int, location: str, name: str, cancelled: Callable[[], bool],
                      nowait: bool) -> bool:
        """This gateway's half; True when newly taken (False: the owner held it already)."""
        with self._cond:
            while True:
                holder = self._holders.get(location)
                if holder == owner:
                    return False
                if holder is None:
                    self._holders[location] = owner
                    self._waiting.pop(owner, None)
                    return True
                if nowait:
                    raise SqlError("55P03", f'could not obtain lock on row in relation "{name}"')
                if self._closes_cycle(owner, holder):
                    self._waiting.pop(owner, None)
                    raise SqlError("40P01", "deadlock detected",
                                   detail=f'Process {owner} waits for a write lock on table "{name}"; blocked '
                                          f"by process {holder}, which waits for a table process {owner} holds.",
                                   hint="Write tables in the same order in every transaction.")
                self._waiting[owner] = location
                self._cond.wait(_POLL_S)
                if cancelled():
                    self._waiting.pop(owner, None)
                    raise SqlError("57014", "canceling statement due to user request")

    def _closes_cycle(self, owner: int, holder: int) -> bool:
        seen = set()
        current: int | None = holder
        while current is not None and current not in seen:
            if current == owner:
                return True
            seen.add(current)
            waits_for = self._waiting.get(current)
            current = self._holders.get(waits_for) if waits_for is not None else None
        return False

    def release_all(self, owner: int) -> None:
        with self._cond:
            session = self._sessions.pop(owner, None)
        if session is not None:  # the other gateways' waiters first: this gateway's may go on at once
            session.release_all()
        with self._cond:
            mine = [loc for loc, h in self._holders.items() if h == owner]
            for loc in mine:
                del self._holders[loc]
            self._waiting.pop(owner, None)
            if mine:
                self._cond.notify_all()


class VisibilityGate:
    """Makes a transaction that spans several commits visible to readers all at once.

    Delta commits one table at a time, so a reader resolving tables t1 and t2 while a transaction
    commits to both could see its t1 write and not its t2 write; the catalog changes of a
    transaction's DDL come after its data commits. A statement takes the gate shared while it
    resolves its relations and pins their snapshots (:meth:`reading`); a commit of several writes
    or with DDL takes it exclusively from its first commit to its last (:meth:`committing`).
    Waiting committers go first (new readers wait), so a stream of readers cannot starve them.
    Reading is re-entrant within a thread (a view's query is resolved inside its statement's).
    """

    def __init__(self, shared: SharedLocks | None = None) -> None:
        """``shared``: the gateways of a PostgreSQL catalog share the gate (its second half there,
        catalog/shared_locks.py), as they share the warehouse."""
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0
        self._local = threading.local()
        self._shared = shared

    def _across_gateways(self, *, reader: bool, wait: bool = True) -> AbstractContextManager[None]:
        if self._shared is None:
            return nullcontext()
        return self._shared.hold(GATE_NS, 0, shared=reader, wait=wait)

    @contextmanager
    def reading(self) -> Iterator[None]:
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                while self._writer or self._waiting_writers:
                    self._cond.wait()
                self._readers += 1
        self._local.depth = depth + 1
        try:
            if depth == 0:
                with self._across_gateways(reader=True):
                    yield
            else:
                yield
        finally:
            self._local.depth = depth
            if depth == 0:
                self._leave()

    @contextmanager
    def reading_now(self) -> Iterator[bool]:
        """:meth:`reading` if it can start without waiting: yields True inside it, or False (not
        entered) while a commit holds the gate or waits for it. Gateways sharing the gate never
        enter here: their half of it is a round trip to the catalog database, which must not
        hold up the event loop that calls this."""
        if getattr(self._local, "depth", 0):
            with self.reading():
                yield True
            return
        if self._shared is not None:
            yield False
            return
        with self._cond:
            entered = not (self._writer or self._waiting_writers)
            if entered:
                self._readers += 1
        if not entered:
            yield False
            return
        self._local.depth = 1
        try:
            yield True
        finally:
            self._local.depth = 0
            self._leave()

    def _leave(self) -> None:
        with self._cond:
            self._readers -= 1
            if not self._readers:
                self._cond.notify_all()

    @contextmanager
    def committing(self) -> Iterator[None]:
        assert not getattr(self._local, "depth", 0), "a commit inside a read of the same thread would wait for itself"
        with self._cond:
            self._waiting_writers += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._waiting_writers -= 1
            self._writer = True
        try:
            with self._across_gateways(reader=False):
                yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()
