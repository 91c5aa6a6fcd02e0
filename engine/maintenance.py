"""Background upkeep of Delta tables: compaction of small files and vacuum of old ones.

Many small INSERTs leave one small Parquet file per commit; queries then pay per file (Spark
opens and plans every one: a flow run over a table taking ten commits a second read ~300 files
between 30 s passes and cost twice the CPU it does with 5 s passes). A timer thread compacts a
table (delta-rs ``optimize.compact``, itself one Delta commit that rewrites rows unchanged, so
readers of any version see the same rows) once it has more than ``Settings.compact_min_files``
files below the target size; the check reads the store's cached log, so a pass over idle tables
costs next to nothing. Every ``Settings.vacuum_interval_s`` a pass also vacuums files no version
newer than ``Settings.vacuum_retention_hours`` needs (that lists directories: not every pass).
It takes each table's write lock only for the commit it makes, so statements never wait for a
whole pass.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from catalog.store import Catalog
from engine.storage import WRITER_PROPERTIES, TableStore
from tidegate.config import Settings

log = logging.getLogger(__name__)

SMALL_FILE_BYTES = 32 * 1024 * 1024
TARGET_FILE_BYTES = 128 * 1024 * 1024


@dataclass
class PassResult:
    compacted: int = 0  # tables compacted
    files_removed: int = 0
    vacuumed_files: int = 0


class Maintenance:
    """Runs :meth:`run_once` every ``Settings.maintenance_interval_s`` seconds in a daemon thread."""

    def __init__(self, store: TableStore, catalog: Catalog, settings: Settings) -> None:
        self.store = store
        self.catalog = catalog
        self.settings = settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None or self.settings.maintenance_interval_s <= 0:
            return
        self._thread = threading.Thread(target=self._loop, name="tidegate-maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _loop(self) -> None:
        last_vacuum = time.monotonic()
        while not self._stop.wait(self.settings.maintenance_interval_s):
            vacuum = time.monotonic() - last_vacuum >= self.settings.vacuum_interval_s
            try:
                self.run_once(vacuum=vacuum)
            except Exception:  # noqa: BLE001 - maintenance must never kill the server
                log.exception("maintenance pass failed")
            if vacuum:
                last_vacuum = time.monotonic()

    def run_once(self, *, vacuum: bool = True) -> PassResult:
        """One pass over every table: compact where needed, then (``vacuum``) vacuum."""
        result = PassResult()
        for table in self.catalog.list_tables(kind="table"):
            if self._stop.is_set():
                break
            if not table.location:
                continue
            try:
                removed = self.compact_if_needed(table.location)
                if removed:
                    result.compacted += 1
                    result.files_removed += removed
                if vacuum:
                    result.vacuumed_files += self.vacuum(table.location)
            except Exception:  # noqa: BLE001 - a dropped or busy table: try again next pass
                log.warning("maintenance of %s failed", table.qualified_name, exc_info=True)
        return result

    def small_files(self, location: str) -> int:
        sizes = self.store.file_actions(location).column("size_bytes").to_pylist()
        return sum(1 for s in sizes if s < SMALL_FILE_BYTES)

    def compact_if_needed(self, location: str) -> int:
        """Compact when there are more than compact_min_files small files; returns files removed."""
        if self.small_files(location) <= self.settings.compact_min_files:
            return 0
        with self.store.writing(location) as dt:
            metrics = dt.optimize.compact(target_size=TARGET_FILE_BYTES, writer_properties=WRITER_PROPERTIES)
        log.info("compacted %s: %s", location, metrics)
        return int(metrics.get("numFilesRemoved", 0))

    def vacuum(self, location: str) -> int:
        hours = self.settings.vacuum_retention_hours
        with self.store.writing(location) as dt:  # a vacuum that deletes files commits
            deleted = dt.vacuum(retention_hours=int(hours), enforce_retention_duration=False, dry_run=False)
        return len(deleted)
