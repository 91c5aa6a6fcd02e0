"""The SQLite plumbing every catalog store shares: one durable connection behind one lock.

The catalog's stores (tables, flows, refresh state) keep their rows in the same SQLite file under
the data directory. Metadata operations are tiny, so each store uses a single connection guarded
by a re-entrant lock, in WAL mode with full fsync so that an acknowledged change survives kill -9.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar


class SqliteStore:
    """Base of the catalog stores: ``_conn``, ``_lock`` and a re-entrant :meth:`transaction`."""

    def __init__(self, path: Path | str, schema_sql: str, *, foreign_keys: bool = False) -> None:
        self._path = str(path)
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        if foreign_keys:
            self._conn.execute("PRAGMA foreign_keys=ON")
        self._lock = threading.RLock()
        self._depth = 0
        with self._lock:
            self._conn.executescript(schema_sql)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group several changes into one atomic SQLite transaction (re-entrant)."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if outer:
                    self._conn.execute("ROLLBACK")
                    self._rolled_back()
                raise
            self._depth -= 1
            if outer:
                self._conn.execute("COMMIT")

    @property
    def path(self) -> str:
        return self._path

    def _rolled_back(self) -> None:
        """Hook: drop in-memory state derived from rows a rolled-back transaction touched."""

    def close(self) -> None:
        with self._lock:
            self._conn.close()


S = TypeVar("S", bound=SqliteStore)
_SHARED: "weakref.WeakKeyDictionary[Any, dict[type, SqliteStore]]" = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def shared_store(catalog: Any, cls: type[S]) -> S:
    """The ``cls`` store of ``catalog``'s SQLite file, one per catalog object, opened on first use;
    a block's or a session's view of the catalog reaches the catalog's own."""
    while getattr(catalog, "base", None) is not None:  # a view of a catalog (CatalogTxn) wraps its base
        catalog = catalog.base
    with _SHARED_LOCK:
        stores = _SHARED.setdefault(catalog, {})
        store = stores.get(cls)
        if store is None:
            store = stores[cls] = cls(getattr(catalog, "_path", ":memory:"))  # type: ignore[call-arg]
        return store  # type: ignore[return-value]
