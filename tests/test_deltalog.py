"""engine.deltalog: file-level Delta commits with their own change data feed, read back by
delta-rs (rows, change feed, statistics, app transactions, checkpoints) on real tables on disk."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from engine import deltalog
from engine.storage import CDF_CONFIG, FileEntry

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("day", pa.date32()),
                    ("at", pa.timestamp("us", tz="UTC")), ("local", pa.timestamp("us"))])


def rows(ids: list[int], name: str = "r") -> pa.Table:
    at = datetime(2024, 1, 1, 0, 0, 0, 1500, tzinfo=timezone.utc)  # 1.5 ms past midnight
    return pa.table({
        "id": pa.array(ids, pa.int64()), "name": [f"{name}{i}" for i in ids],
        "score": pa.array([i / 2 for i in ids], pa.float64()), "day": pa.array([date(2024, 1, 1 + i % 28) for i in ids]),
        "at": pa.array([at] * len(ids), SCHEMA.field("at").type),
        "local": pa.array([at.replace(tzinfo=None)] * len(ids), pa.timestamp("us"))}, schema=SCHEMA)


@pytest.fixture()
def table(tmp_path: Path) -> tuple[str, DeltaTable]:
    location = str(tmp_path / "t")
    DeltaTable.create(location, SCHEMA, configuration=dict(CDF_CONFIG))
    write_deltalake(location, rows([1, 2, 3]), mode="append")
    return location, DeltaTable(location)


def change_feed(dt: DeltaTable, version: int) -> list[tuple[int, str]]:
    feed = pa.table(dt.load_cdf(starting_version=version, ending_version=version).read_all())
    return sorted(zip(feed.column("id").to_pylist(), feed.column("_change_type").to_pylist()))


def test_replace_files_with_an_explicit_change_feed(table: tuple[str, DeltaTable]) -> None:
    location, dt = table
    old = pa.table(dt.get_add_actions(flatten=True))
    removed = [FileEntry(p, s, n) for p, s, n in zip(old.column("path").to_pylist(), old.column("size_bytes").to_pylist(),
                                                   old.column("num_records").to_pylist())]
    new_rows = rows([1, 2, 4], "v2")
    added = deltalog.add_data_file(location, new_rows)
    feed = pa.concat_tables([
        rows([4], "v2").append_column("_change_type", pa.array(["insert"])),
        rows([3]).append_column("_change_type", pa.array(["delete"])),
        rows([1, 2]).append_column("_change_type", pa.array(["update_preimage"] * 2)),
        rows([1, 2], "v2").append_column("_change_type", pa.array(["update_postimage"] * 2))])
    cdc = deltalog.add_cdc_file(location, feed)
    version = deltalog.commit(dt, location, adds=[added], removes=removed, cdc=[cdc],
                              app_transaction=("tidegate-test", 7), operation="REFRESH")
    assert version == 2 and dt.version() == 2  # the handed-in table is brought up to date
    fresh = DeltaTable(location)
    assert sorted(fresh.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == new_rows.to_pylist()
    # The feed is the cdc file, not "every removed row deleted, every added row inserted".
    assert change_feed(fresh, 2) == [(1, "update_postimage"), (1, "update_preimage"), (2, "update_postimage"),
                                     (2, "update_preimage"), (3, "delete"), (4, "insert")]
    assert fresh.transaction_version("tidegate-test") == 7
    history = fresh.history(1)[0]
    assert history["operation"] == "REFRESH" and history["readVersion"] == 1


def test_added_files_alone_are_inserts(table: tuple[str, DeltaTable]) -> None:
    location, dt = table
    deltalog.commit(dt, location, adds=[deltalog.add_data_file(location, rows([10, 11]))])
    assert change_feed(DeltaTable(location), 2) == [(10, "insert"), (11, "insert")]
    assert DeltaTable(location).to_pyarrow_table().num_rows == 5


def test_adopted_file_is_linked_not_rewritten(table: tuple[str, DeltaTable], tmp_path: Path) -> None:
    location, dt = table
    staged = tmp_path / "staged.parquet"
    data = rows([20, 21, 22])
    deltalog.write_parquet(data, str(staged))
    added = deltalog.add_data_file(location, data, source=str(staged))
    assert Path(location, added.path).stat().st_ino == staged.stat().st_ino
    deltalog.commit(dt, location, adds=[added])
    assert sorted(DeltaTable(location).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 20, 21, 22]


def test_statistics_bound_every_value(table: tuple[str, DeltaTable]) -> None:
    location, dt = table
    data = rows([5, 9, 7]).set_column(2, "score", pa.array([1.5, None, -2.0]))
    deltalog.commit(dt, location, adds=[deltalog.add_data_file(location, data)])
    actions = pa.table(DeltaTable(location).get_add_actions(flatten=True)).to_pylist()
    ours = [a for a in actions if a["num_records"] == 3 and a["min.id"] == 5][0]
    assert (ours["min.id"], ours["max.id"]) == (5, 9)
    assert (ours["min.score"], ours["max.score"], ours["null_count.score"]) == (-2.0, 1.5, 1)
    assert (ours["min.day"], ours["max.day"]) == (date(2024, 1, 6), date(2024, 1, 10))
    # Timestamps are kept in milliseconds: the range widens to whole ones around 1.5 ms.
    assert ours["min.at"] == datetime(2024, 1, 1, 0, 0, 0, 1000, tzinfo=timezone.utc)
    assert ours["max.at"] == datetime(2024, 1, 1, 0, 0, 0, 2000, tzinfo=timezone.utc)
    assert ours["min.local"] == datetime(2024, 1, 1, 0, 0, 0, 1000)
    assert (ours["min.name"], ours["max.name"]) == ("r5", "r9")  # exact strings (at most 32 characters)
    long = json.loads(deltalog.file_stats(pa.table({"s": ["a" * 33, "b"], "t": ["x", None]})))
    assert long["minValues"] == {"t": "x"} and long["maxValues"] == {"t": "x"}
    stats = json.loads(deltalog.file_stats(pa.table({"f": pa.array([1.0, float("nan")])})))
    assert stats == {"numRecords": 2, "minValues": {}, "maxValues": {}, "nullCount": {"f": 0}}


def test_a_taken_version_is_a_conflict(table: tuple[str, DeltaTable]) -> None:
    location, dt = table
    stale = DeltaTable(location)
    write_deltalake(location, rows([30]), mode="append")  # another writer takes version 2
    with pytest.raises(deltalog.CommitConflict):
        deltalog.commit(stale, location, adds=[deltalog.add_data_file(location, rows([31]))])
    assert sorted(DeltaTable(location).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 30]
    assert not list(Path(location, "_delta_log").glob("*.tmp"))


def test_checkpoint_on_the_interval_and_unsupported_tables(tmp_path: Path) -> None:
    location = str(tmp_path / "cp")
    DeltaTable.create(location, SCHEMA, configuration={**CDF_CONFIG, "delta.checkpointInterval": "2"})
    dt = DeltaTable(location)
    assert deltalog.supports(dt)
    deltalog.commit(dt, location, adds=[deltalog.add_data_file(location, rows([1]))])
    deltalog.commit(dt, location, adds=[deltalog.add_data_file(location, rows([2]))])
    assert Path(location, "_delta_log", f"{2:020d}.checkpoint.parquet").exists()
    assert DeltaTable(location).to_pyarrow_table().num_rows == 2
    partitioned = str(tmp_path / "part")
    write_deltalake(partitioned, rows([1]), partition_by=["name"])
    assert not deltalog.supports(DeltaTable(partitioned))
