"""A transaction block's DDL: what COMMIT publishes and what ROLLBACK undoes.

DDL inside a block changes the session's :class:`catalog.txn.CatalogTxn`, not the catalog. Table
storage is created at once (under the new table's oid, a directory no one else can name), noted in
the commit journal so that a crash before COMMIT does not leave it behind, and removed by
ROLLBACK. Storage of tables the block drops, and grants on them, are removed only after COMMIT has
published the catalog changes (engine/txnlog.py applies both from the journal record).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from catalog.txn import CatalogTxn
from engine.txnlog import DdlRecord, Journal

if TYPE_CHECKING:
    from engine.storage import TableStore

log = logging.getLogger(__name__)


@dataclass
class BlockDdl:
    catalog: CatalogTxn
    created: list[tuple[str, str]] = field(default_factory=list)  # (location, journal note)
    drop_locations: list[str] = field(default_factory=list)
    drop_schema_dirs: list[int] = field(default_factory=list)
    after_commit: list[Callable[[], None]] = field(default_factory=list)
    _record: DdlRecord | None = None

    def created_here(self, location: str | None) -> bool:
        return any(loc == location for loc, _ in self.created)

    def record(self) -> DdlRecord | None:
        """The journal's part for this block's DDL (None when the block ran none)."""
        if not self.catalog.changes and not self.created and not self.drop_locations:
            return None
        self._record = DdlRecord(self.catalog.changes, list(self.drop_locations), list(self.drop_schema_dirs),
                                 [note for _, note in self.created])
        return self._record

    def discard(self, store: TableStore, journal: Journal) -> None:
        """ROLLBACK (or a COMMIT that failed before its commit point): remove the storage the
        block created. After the commit point the record completes the block instead."""
        if self._record is not None and self._record.durable:
            return
        for location, _ in self.created:
            store.drop(location)
        journal.forget_created([note for _, note in self.created])
        self.created.clear()

    def committed(self) -> None:
        for fn in self.after_commit:
            try:
                fn()
            except Exception:  # noqa: BLE001 - the commit stands; a leftover grant names no object
                log.warning("clean-up after COMMIT failed", exc_info=True)


__all__ = ["BlockDdl"]
