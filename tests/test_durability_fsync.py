"""Commits survive a power loss (engine/durability.py): before a statement returns, every file its
Delta commit names, the log entry and their directories have been fsync'd, and tidegate's own
commits (UPDATE / DELETE by key) fsync their data files before the log entry exists.

A power loss cannot be staged here; what is observed is the system calls: ``os.fsync`` and
``os.link`` are wrapped to record the path each one acts on (through /proc/self/fd) and then do
their real work.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from deltalake import DeltaTable

from engine import deltalog, durability
from engine.storage import REWRITE_FILE_ROWS


@pytest.fixture()
def calls(monkeypatch):
    """("fsync" | "link", real path) in the order they happened."""
    seen: list[tuple[str, str]] = []
    real_fsync, real_link = os.fsync, os.link

    def fsync(fd):
        seen.append(("fsync", os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))))
        return real_fsync(fd)

    def link(src, dst, *args, **kwargs):
        result = real_link(src, dst, *args, **kwargs)
        seen.append(("link", os.path.realpath(dst)))
        return result

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "link", link)
    return seen


def _entry(location: str, version: int) -> str:
    return os.path.realpath(os.path.join(location, "_delta_log", f"{version:020d}.json"))


def _files(location: str, version: int) -> list[str]:
    out = []
    with open(_entry(location, version), encoding="utf-8") as fh:
        for line in fh:
            action = json.loads(line)
            file = action.get("add") or action.get("cdc")
            if file:
                out.append(os.path.realpath(os.path.join(location, file["path"])))
    return out


def _assert_durable(calls: list[tuple[str, str]], location: str, version: int, *, own: bool = False) -> None:
    """``own``: tidegate wrote the entry, fsync'd under a temporary name and then linked in."""
    synced = {path for kind, path in calls if kind == "fsync"}
    entry = _entry(location, version)
    names = _files(location, version)
    missing = [p for p in ([] if own else [entry]) + names if p not in synced]
    assert not missing, f"version {version}: not fsync'd: {missing}"
    for d in {os.path.dirname(p) for p in [entry, *names]}:
        assert d in synced, f"version {version}: directory {d} not fsync'd"


def test_every_commit_is_on_disk_before_the_statement_returns(spark_free_engine, calls):
    engine, s = spark_free_engine
    s.execute("CREATE TABLE kv (id bigint PRIMARY KEY, v text)")
    location = engine.catalog.get_table("public", "kv").location
    _assert_durable(calls, location, 0)
    assert os.path.realpath(os.path.dirname(location)) in {p for k, p in calls if k == "fsync"}

    calls.clear()
    s.execute("INSERT INTO kv VALUES (1, 'a'), (2, 'b'), (3, 'c')")  # a small insert: tidegate's writer
    _assert_durable(calls, location, 1, own=True)
    assert _files(location, 1)

    for version, sql in ((2, "UPDATE kv SET v = 'x' WHERE id = 2"), (3, "DELETE FROM kv WHERE id = 3")):
        calls.clear()
        s.execute(sql)  # tidegate's own commit (rewrite by key)
        _assert_durable(calls, location, version, own=True)
        # ordered: the data files, their directory and the entry's content before the entry is
        # linked in, the log directory after
        entry = _entry(location, version)
        linked = calls.index(("link", entry))
        assert any(k == "fsync" and os.path.dirname(p) == os.path.dirname(entry) and p.endswith(".json.tmp")
                   for k, p in calls[:linked])
        for path in _files(location, version):
            assert calls.index(("fsync", path)) < linked
        assert ("fsync", os.path.realpath(location)) in calls[:linked]
        assert ("fsync", os.path.dirname(entry)) in calls[linked:]

    n = REWRITE_FILE_ROWS + 1  # more than a small insert
    rows = pa.record_batch([pa.array(range(10, 10 + n), pa.int64()), pa.array(["x"] * n)], names=["id", "v"])
    calls.clear()
    s.copy_from(s.copy_target("COPY kv FROM STDIN"), iter([rows]))  # a PRIMARY KEY table: tidegate's writer
    assert DeltaTable(location).history(1)[0]["engineInfo"] == "tidegate"
    _assert_durable(calls, location, 4, own=True)
    assert len(_files(location, 4)) == 2  # files a rewrite by key writes again

    s.execute("CREATE TABLE bulk (id bigint, v text)")
    other = engine.catalog.get_table("public", "bulk").location
    calls.clear()
    s.copy_from(s.copy_target("COPY bulk FROM STDIN"), iter([rows]))  # key-less: written by delta-rs
    assert DeltaTable(other).history(1)[0]["engineInfo"] != "tidegate"
    _assert_durable(calls, other, 1)

    calls.clear()
    s.execute("INSERT INTO kv VALUES (4, 'd')")
    s.execute("INSERT INTO kv VALUES (5, 'e')")
    removed = engine.maintenance.compact(location, 1 << 30)  # through TableStore.writing
    assert removed >= 2
    _assert_durable(calls, location, durability.latest_version(location))
    got = pa.Table.from_batches(list(s.execute("SELECT count(*) AS n FROM kv WHERE id < 10").batches))
    assert got.column("n").to_pylist() == [4]


def test_sync_versions_covers_checkpoints_and_skips_object_stores(tmp_path, calls):
    from deltalake import write_deltalake

    location = str(tmp_path / "t")
    write_deltalake(location, pa.table({"a": [1]}))
    DeltaTable(location).create_checkpoint()
    calls.clear()
    durability.sync_versions(location, 0, 0)
    synced = {p for k, p in calls if k == "fsync"}
    log = Path(os.path.realpath(location)) / "_delta_log"
    assert {str(log / f"{0:020d}.checkpoint.parquet"), str(log / "_last_checkpoint"), str(log)} <= synced
    calls.clear()
    durability.sync_versions("s3a://bucket/t", 0, 5)
    assert calls == [] and durability.local_path("file:///x/y%20z") == "/x/y z"
    assert deltalog.CDC_DIR == "_change_data"
