"""File-level Delta commits with an explicit change data feed: what delta-rs' Python API lacks.

``DeltaTable.create_write_transaction`` commits add and remove actions but no ``cdc`` actions, so
a reader of the change data feed would see every removed file's rows as deleted and every added
file's rows as inserted. A refresh that replaces most of a table's files (1% of random rows
changed touches every file) needs the opposite: new files that are the table, and a feed of only
the rows that changed. A delta-rs merge gets the feed right but rewrites each touched file, which
for a full reload is a second write of the whole table the load has already written.

:func:`commit` writes one commit of the Delta protocol (``_delta_log/<version>.json``: commitInfo,
an app transaction, remove, add and cdc actions) with put-if-absent semantics (``os.link`` of a
finished temporary file, which fails if another writer took the version). It only writes tables
whose protocol it understands (:func:`supports`); callers fall back to a delta-rs merge otherwise.

File statistics (``stats`` of an add action) are written for integer, floating, date and
timestamp columns (timestamps widened to whole milliseconds, as delta-rs writes them) and for text
whose bounds are at most 32 characters; other columns get null counts only, which every reader
accepts as "unknown range".
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable

from engine import durability


ROW_GROUP_ROWS = 128 * 1024  # rows per Parquet row group of every data file tidegate writes
CHANGE_TYPE = "_change_type"
CDC_DIR = "_change_data"
# Writer features this module honours: timestampNtz needs nothing of a writer beyond the type,
# changeDataFeed is what the cdc actions are for.
_KNOWN_WRITER_FEATURES = {"timestampNtz", "changeDataFeed"}
_EPOCH = datetime(1970, 1, 1)
_STRING_BOUND = 32  # the longest string kept as a file's min / max (delta-rs and Spark cut at 32)
DEFAULT_CHECKPOINT_INTERVAL = 100  # the Delta protocol's default for delta.checkpointInterval


class CommitConflict(Exception):
    """Another writer committed the version this commit was meant to be."""


@dataclass(frozen=True)
class FileEntry:
    """A data file of a table version, as its log lists it."""

    path: str
    size: int
    rows: int


@dataclass(frozen=True)
class DataFile:
    """A Parquet file inside the table directory (``path`` relative to it)."""

    path: str
    size: int
    rows: int
    stats: str | None = None  # the add action's stats JSON (None for cdc files)


def supports(dt: DeltaTable) -> bool:
    """Whether :func:`commit` may write ``dt``: unpartitioned, and no writer feature it ignores."""
    proto = dt.protocol()
    if dt.metadata().partition_columns:
        return False
    if proto.min_writer_version >= 7:
        return set(proto.writer_features or ()) <= _KNOWN_WRITER_FEATURES
    # Legacy versions: 2 (invariants) and 3 (CHECK constraints) only bind tables that declare
    # them in their schema or configuration, which tidegate never does; 4 adds the feed.
    return proto.min_writer_version <= 4 and not any(
        k.startswith("delta.constraints.") for k in dt.metadata().configuration)


def write_parquet(table: pa.Table, path: str) -> None:
    """Write ``table`` as the table's data files are written (Snappy, 128Ki-row groups), with a
    dictionary for the columns whose values repeat (:func:`_repeating`)."""
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    pq.write_table(table, tmp, row_group_size=ROW_GROUP_ROWS, compression="snappy",
                   use_dictionary=_repeating(table))
    os.replace(tmp, path)
    durability.fsync_file(path)  # on disk before any log entry names it (engine/durability.py)


_SAMPLE = 2_048


def _repeating(table: pa.Table) -> list[str]:
    """The columns whose first values are less than half distinct. A dictionary pays for those; for
    the others (keys, free text) Parquet builds one and gives it up at its size limit, which made
    writing 100,000 distinct strings three times slower (16 ms instead of 6) and the file larger."""
    out = []
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_nested(column.type):
            continue
        sample = column.slice(0, _SAMPLE)
        if len(sample) and pc.count_distinct(sample, mode="all").as_py() * 2 < len(sample):
            out.append(name)
    return out


def add_data_file(location: str, table: pa.Table, source: str | None = None) -> DataFile:
    """A new data file of ``table`` in the table directory: ``source`` (an identical Parquet file
    written earlier, e.g. a staged chunk) hard-linked in when given, else written."""
    name = f"part-tg-{uuid.uuid4()}.snappy.parquet"
    target = os.path.join(location, name)
    if source is not None:
        try:
            os.link(source, target)
        except OSError:  # another file system: copy
            shutil.copyfile(source, target)
            durability.fsync_file(target)
    else:
        write_parquet(table, target)
    return DataFile(name, os.path.getsize(target), table.num_rows, file_stats(table))


def add_cdc_file(location: str, changes: pa.Table) -> DataFile:
    """A change data file: the changed rows with their ``_change_type``."""
    os.makedirs(os.path.join(location, CDC_DIR), exist_ok=True)
    name = f"{CDC_DIR}/cdc-tg-{uuid.uuid4()}.snappy.parquet"
    write_parquet(changes, os.path.join(location, name))
    return DataFile(name, os.path.getsize(os.path.join(location, name)), changes.num_rows)


def commit(dt: DeltaTable, location: str, *, adds: Sequence[DataFile] = (),
           removes: Sequence[FileEntry] = (), cdc: Sequence[DataFile] = (),
           app_transaction: tuple[str, int] | None = None, operation: str = "WRITE",
           parameters: dict[str, object] | None = None, metrics: dict[str, int] | None = None,
           data_change: bool = True, read_version: int | None = None, now: int | None = None) -> int:
    """Commit the actions on top of ``dt``'s version (the one they were computed from) as the next
    version; returns it (CommitConflict if another writer took it). ``dt`` is brought up to date
    and writes the checkpoint delta-rs would have written after its own commit.

    ``data_change=False`` marks the adds and removes as not a change of the table's data for
    readers of its changes (as compaction's are): the change data feed and streaming readers skip
    the commit. tidegate uses it for ttl clean-up (engine/ttl.py), which must not read as deletes.

    ``read_version``: the version the actions were computed from when ``dt`` is older (its
    caller kept the log's state since: engine.storage.TableStore._rewrite_current); ``dt`` is then
    left as it is, except when a checkpoint is due. ``now``: the commit's time in ms."""
    stale = read_version is not None
    read_version = dt.version() if read_version is None else read_version
    now = int(time.time() * 1000) if now is None else now
    version = read_version + 1
    info: dict[str, object] = {
        "timestamp": now, "operation": operation, "operationParameters": parameters or {},
        "readVersion": read_version, "isBlindAppend": not removes and not cdc,
        "engineInfo": "tidegate", "clientVersion": "tidegate"}
    if metrics:
        info["operationMetrics"] = metrics
    actions: list[dict[str, object]] = [{"commitInfo": info}]
    if app_transaction is not None:
        actions.append({"txn": {"appId": app_transaction[0], "version": int(app_transaction[1]),
                                "lastUpdated": now}})
    for r in removes:
        actions.append({"remove": {"path": r.path, "dataChange": data_change, "deletionTimestamp": now,
                                   "extendedFileMetadata": True, "partitionValues": {}, "size": r.size}})
    for a in adds:
        actions.append({"add": {"path": a.path, "partitionValues": {}, "size": a.size,
                                "modificationTime": now, "dataChange": data_change, "stats": a.stats}})
    for c in cdc:
        actions.append({"cdc": {"path": c.path, "partitionValues": {}, "size": c.size, "dataChange": False}})
    log_dir = os.path.join(location, "_delta_log")
    final = os.path.join(log_dir, f"{version:020d}.json")
    tmp = os.path.join(log_dir, f".tg-{uuid.uuid4().hex}.json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(a, separators=(",", ":"), allow_nan=False) for a in actions) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    # The data files' names are on disk before the entry naming them, the entry's after it.
    durability.fsync_dirs([os.path.dirname(os.path.join(location, f.path)) for f in (*adds, *cdc)])
    try:
        os.link(tmp, final)  # put-if-absent: fails when the version exists
    except FileExistsError:
        raise CommitConflict(f"version {version} of {location} was committed by another writer") from None
    finally:
        os.unlink(tmp)
    durability.fsync_file(log_dir)
    interval = int(dt.metadata().configuration.get("delta.checkpointInterval", DEFAULT_CHECKPOINT_INTERVAL))
    due = interval > 0 and version % interval == 0
    if not stale or due:
        dt.update_incremental()
    if due:
        dt.create_checkpoint()
        durability.sync_checkpoint(location, version)  # the version's own files are synced above
    return version


# -- statistics ------------------------------------------------------------------------------------

def file_stats(table: pa.Table) -> str:
    """The stats JSON of an add action for a file holding ``table``."""
    mins: dict[str, object] = {}
    maxs: dict[str, object] = {}
    nulls: dict[str, int] = {}
    for name, column in zip(table.column_names, table.columns):
        t = column.type
        if pa.types.is_nested(t):
            continue
        nulls[name] = column.null_count
        if column.null_count == len(column):
            continue
        bounds = _bounds(column)
        if bounds is not None:
            mins[name], maxs[name] = bounds
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs,
                       "nullCount": nulls}, separators=(",", ":"), allow_nan=False)


def _bounds(column: pa.ChunkedArray) -> tuple[object, object] | None:
    t = column.type
    if pa.types.is_timestamp(t):
        # The log keeps milliseconds: the range is widened to whole milliseconds, read from the
        # raw values (as_py of nanoseconds would round).
        raw = pc.min_max(column.cast(pa.int64()))
        per_ms = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        lo_i, hi_i = raw["min"].as_py(), raw["max"].as_py()
        if per_ms is None:
            lo_ms, hi_ms = lo_i * 1000, hi_i * 1000
        else:
            lo_ms, hi_ms = lo_i // per_ms, -((-hi_i) // per_ms)
        return _timestamp_text(lo_ms, t.tz is not None), _timestamp_text(hi_ms, t.tz is not None)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        # Exact values only: readers take a string bound as the value itself, and a longer one
        # would need the truncation rules of each writer (a missing bound reads as "unknown").
        mm = pc.min_max(column)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        return (lo, hi) if len(lo) <= _STRING_BOUND and len(hi) <= _STRING_BOUND else None
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_date(t)):
        return None
    mm = pc.min_max(column)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if pa.types.is_floating(t) and (not (math.isfinite(lo) and math.isfinite(hi))
                                     or pc.any(pc.is_nan(column)).as_py()):
        return None
    if pa.types.is_date(t):
        return lo.isoformat(), hi.isoformat()
    return lo, hi


def _timestamp_text(ms: int, with_tz: bool) -> str:
    dt = _EPOCH + timedelta(milliseconds=ms)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}"
    return text + "Z" if with_tz else text.replace("T", " ")

