"""Commits that survive a power loss: every file a Delta commit refers to is on disk before the
statement that made it is acknowledged.

A commit is a log entry (``_delta_log/<version>.json``) naming data files (``add``) and change
files (``cdc``). Writing a file leaves it in the page cache; kill -9 of the gateway keeps it (the
kernel still writes it back), but a power loss or an OS crash may lose it, or keep a log entry
whose data file is empty: an acknowledged row gone, or a table no reader can open.

- tidegate's own commits (:func:`engine.deltalog.commit`: UPDATE / DELETE by key, refresh loads, ttl
  clean-up) are ordered: each data file is fsync'd as it is written, the table's directories before
  the log entry is linked in, the log directory after. A crash at any point leaves either the
  commit whole or no commit (only unreferenced files, which VACUUM removes).
- Commits written by delta-rs (INSERT, merges, overwrites, compaction, flow sinks) and by Spark's
  Delta connector cannot be ordered from outside: :func:`sync_versions` fsyncs, after the commit
  and before the statement returns, the files its log entries name, the entries, a checkpoint of
  one of them, and their directories. What is acknowledged is durable; a crash during such a
  commit can leave its log entry without its data (docs/DESIGN.md, "Durability on power loss").

Only local paths are synced: an object store's write is durable when it returns.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from urllib.parse import unquote, urlparse

LOG_DIR = "_delta_log"
_ENTRY = re.compile(r"^(\d{20})\.json$")


def local_path(location: str) -> str | None:
    """The file system path of a table location, or None for an object store URI."""
    if "://" not in location:
        return location
    parsed = urlparse(location)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def fsync_file(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dirs(paths: Iterable[str]) -> None:
    for d in dict.fromkeys(paths):
        fsync_file(d)


def sync_versions(location: str, first: int, last: int) -> None:
    """fsync what versions ``first`` .. ``last`` of the table at ``location`` consist of (see the
    module docstring); a version whose entry is gone (a concurrent cleanup) is skipped."""
    root = local_path(location)
    if root is None or last < first:
        return
    log = os.path.join(root, LOG_DIR)
    dirs = {root, log}
    for version in range(max(first, 0), last + 1):
        entry = os.path.join(log, f"{version:020d}.json")
        try:
            with open(entry, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            if not line:
                continue
            action = json.loads(line)
            file = action.get("add") or action.get("cdc")
            if file is None:
                continue
            path = os.path.join(root, unquote(file["path"]))
            if not os.path.exists(path):
                continue  # removed since by a later commit and a vacuum
            fsync_file(path)
            dirs.add(os.path.dirname(path))
        fsync_file(entry)
        _sync_checkpoint(log, version)
    fsync_dirs(sorted(dirs, key=len, reverse=True))  # the deepest first, the table's own last


def sync_checkpoint(location: str, version: int) -> None:
    """fsync the checkpoint of ``version`` just written, ``_last_checkpoint`` and the log directory."""
    root = local_path(location)
    if root is not None:
        log = os.path.join(root, LOG_DIR)
        _sync_checkpoint(log, version)
        fsync_file(log)


def _sync_checkpoint(log: str, version: int) -> None:
    checkpoint = os.path.join(log, f"{version:020d}.checkpoint.parquet")
    if os.path.exists(checkpoint):
        fsync_file(checkpoint)
        last_checkpoint = os.path.join(log, "_last_checkpoint")
        if os.path.exists(last_checkpoint):
            fsync_file(last_checkpoint)


def latest_version(location: str) -> int:
    """The newest version whose log entry is in the table's log directory (-1: none, or not local)."""
    root = local_path(location)
    if root is None:
        return -1
    try:
        names = os.listdir(os.path.join(root, LOG_DIR))
    except FileNotFoundError:
        return -1
    return max((int(m.group(1)) for m in map(_ENTRY.match, names) if m), default=-1)


@contextmanager
def synced(location: str) -> Iterator[None]:
    """Around a write whose commits another engine makes (Spark's Delta connector): what was
    committed while the block ran is fsync'd when it ends."""
    before = latest_version(location)
    yield
    sync_versions(location, before + 1, latest_version(location))
