"""Background upkeep of Delta tables: compaction of small files and vacuum of old ones.

Many small INSERTs leave one small Parquet file per commit; queries then pay per file (Spark
opens and plans every one: a flow run over a table taking ten commits a second read ~300 files
between 30 s passes and cost twice the CPU it does with 5 s passes). A timer thread compacts a
table (delta-rs ``optimize.compact``, itself one Delta commit that rewrites rows unchanged, so
readers of any version see the same rows) once it has more than ``Settings.compact_min_files``
files of fewer than half :data:`TARGET_FILE_ROWS` rows; the check reads the store's cached log,
so a pass over idle tables costs next to nothing. Every ``Settings.vacuum_interval_s`` a pass
also vacuums files no version newer than ``Settings.vacuum_retention_hours`` needs (that lists
directories: not every pass).
It takes each table's write lock only for the commit it makes, so statements never wait for a
whole pass. When the small files of a table hold more than ``Settings.spark_compact_bytes`` (bulk
loads of mid-sized appends), Delta Lake's own OPTIMIZE compacts them on Spark instead
(engine.sparkwrite.optimize): the executors read and write the rows, not the gateway's process
(issue 22), under the table's lock as VACUUM's does.

Tables with a ttl (engine/ttl.py) also lose their expired rows here: files wholly expired are
dropped on every pass (a log-only commit); files that straddle the horizon are rewritten at most
every ``Settings.ttl_rewrite_interval_s`` per table (the first one interval after the table's first
pass), since with steady ingestion the oldest file
straddles it on every pass (its expired rows are invisible to queries meanwhile).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catalog.store import Catalog
from engine import sparkwrite, ttl
from engine.spark import background_jobs
from engine.storage import REWRITE_FILE_ROWS, WRITER_PROPERTIES, TableStore
from tidegate.config import Settings

log = logging.getLogger(__name__)

# Compaction makes files of about TARGET_FILE_ROWS rows from files of fewer than half that: the
# size a rewrite by key cuts the files it writes to (engine.storage.REWRITE_FILE_ROWS), so the pieces
# of a split file are not merged back. Rows, not bytes: an UPDATE / DELETE by key rewrites the files
# holding its keys and the interactive path reads (and keeps) whole files, so both cost what a file
# holds (bench/interactive.py: a one-row UPDATE in a 100k-row file ~25 ms; compacted to 128 MB
# files, 2.9M rows each, it took the merge path and lookups went to Spark).
TARGET_FILE_ROWS = REWRITE_FILE_ROWS
_NO_STATS_TARGET_BYTES = 32 * 1024 * 1024  # files whose log has no row counts (written elsewhere)


@dataclass
class PassResult:
    compacted: int = 0  # tables compacted
    files_removed: int = 0
    vacuumed_files: int = 0
    expired_files: int = 0  # data files removed or rewritten by ttl clean-up


class Maintenance:
    """Runs :meth:`run_once` every ``Settings.maintenance_interval_s`` seconds in a daemon thread."""

    def __init__(self, store: TableStore, catalog: Catalog, settings: Settings,
                 spark: Callable[[], Any | None] | None = None) -> None:
        """``spark``: a SparkSession of maintenance's own, or None while Spark is not ready
        (compaction then stays on delta-rs)."""
        self.store = store
        self.catalog = catalog
        self.settings = settings
        self._spark = spark
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_rewrite: dict[str, float] = {}  # location -> monotonic time of its last ttl rewrite

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
                result.expired_files += self.expire(table)
                removed = self.compact_if_needed(table.location)
                if removed:
                    result.compacted += 1
                    result.files_removed += removed
                if vacuum:
                    result.vacuumed_files += self.vacuum(table.location)
            except Exception:  # noqa: BLE001 - a dropped or busy table: try again next pass
                log.warning("maintenance of %s failed", table.qualified_name, exc_info=True)
        return result

    def expire(self, table, *, now_us: int | None = None, rewrite: bool | None = None) -> int:
        """ttl clean-up of ``table`` (see engine/ttl.py); returns the files it removed or rewrote."""
        if ttl.of(table).forever or not table.time_index:
            return 0
        location = table.location
        if rewrite is None:  # the first rewrite of a table too waits one interval from its first pass
            last = self._last_rewrite.setdefault(location, time.monotonic())
            rewrite = time.monotonic() - last >= self.settings.ttl_rewrite_interval_s
        done = ttl.expire(self.store, table, now_us, rewrite=rewrite,
                          instant_retention_us=int(self.settings.instant_retention_s * 1_000_000))
        if done.files_rewritten:
            self._last_rewrite[location] = time.monotonic()
        return done.files_removed + done.files_rewritten

    def small_files(self, location: str) -> tuple[int, int]:
        """(files of fewer than half TARGET_FILE_ROWS rows, the bytes TARGET_FILE_ROWS rows take in
        the table's files: delta-rs' compaction target, which is in bytes)."""
        small, _, target = self._small_files(location)
        return small, target

    def _small_files(self, location: str) -> tuple[int, int, int]:
        """:meth:`small_files`, with the bytes the small files hold in the middle."""
        actions = self.store.file_actions(location)
        sizes = actions.column("size_bytes").to_pylist()
        counts = actions.column("num_records").to_pylist()
        # bytes per row of the file with most rows (a tiny file is mostly its footer)
        rows, size = max(((n, b) for n, b in zip(counts, sizes) if n), default=(0, 0))
        target = int(size / rows * TARGET_FILE_ROWS) if rows else _NO_STATS_TARGET_BYTES
        small = [b for n, b in zip(counts, sizes) if (n < TARGET_FILE_ROWS // 2 if n is not None else b < target // 2)]
        return len(small), sum(small), target

    def compact_if_needed(self, location: str) -> int:
        """Compact when there are more than compact_min_files small files; returns files removed.
        Small files holding more than ``spark_compact_bytes`` are compacted on Spark when it is up."""
        small, small_bytes, target = self._small_files(location)
        if small <= self.settings.compact_min_files:
            return 0
        spark = self._spark() if self._spark is not None and small_bytes > self.settings.spark_compact_bytes else None
        if spark is not None:
            return self.compact_on_spark(spark, location, target)
        return self.compact(location, target)

    def compact_on_spark(self, spark: Any, location: str, target: int) -> int:
        """Delta Lake's OPTIMIZE of the table's files under half ``target`` bytes into files of
        about ``target`` (engine.sparkwrite.optimize), in Spark's background pool, under the
        table's lock (this gateway's rewrites by key would otherwise lose the race to it and run
        again); returns the files removed."""
        with self.store.write_lock(location), background_jobs(spark):
            try:
                metrics = sparkwrite.optimize(spark, location, target, full=False)
            finally:
                self.store.forget(location)  # Spark committed (or may have): the cached log is behind
        log.info("compacted %s on Spark: %s", location, metrics)
        return int(metrics.get("numFilesRemoved", 0))

    def compact(self, location: str, target: int | None = None) -> int:
        """Compact the table's files under ``target`` bytes (by default: :data:`TARGET_FILE_ROWS`
        rows' worth, see :meth:`small_files`) into files of about that size, one commit; returns
        the files removed."""
        if target is None:
            target = self.small_files(location)[1]
        with self.store.writing(location) as dt:
            metrics = dt.optimize.compact(target_size=target, writer_properties=WRITER_PROPERTIES)
        log.info("compacted %s: %s", location, metrics)
        return int(metrics.get("numFilesRemoved", 0))

    def vacuum(self, location: str) -> int:
        hours = self.settings.vacuum_retention_hours
        with self.store.writing(location) as dt:  # a vacuum that deletes files commits
            deleted = dt.vacuum(retention_hours=int(hours), enforce_retention_duration=False, dry_run=False)
        return len(deleted)
