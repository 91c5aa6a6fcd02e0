"""ttl without Spark: the option's durations, and clean-up of a table's Delta files at a chosen
moment (engine/ttl.py through the engine's storage; the files are read back with delta-rs)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from engine import Engine, ttl
from engine.maintenance import Maintenance
from tidegate.config import Settings
from tidegate.errors import SqlError

US = 1_000_000
DAY = 86_400 * US


@pytest.mark.parametrize("text, micros", [
    ("7d", 7 * DAY), ("90 days", 90 * DAY), ("1h 30m", 5_400 * US), ("1h30m", 5_400 * US),
    ("2 weeks", 14 * DAY), ("1month", 2_630_016 * US), ("1M", 2_630_016 * US), ("1 mon", 2_630_016 * US),
    ("1y", 31_557_600 * US), ("1 year", 31_557_600 * US), ("500ms", 500_000), ("36000s", 36_000 * US),
    ("1 day 12:00:00", DAY + DAY // 2), ("P1DT2H", DAY + 7_200 * US), ("1.5h", 5_400 * US),
])
def test_durations(text: str, micros: int) -> None:
    parsed = ttl.parse(text)
    assert parsed.micros == micros and parsed.text == text


def test_forever_and_instant() -> None:
    assert ttl.parse(" Forever ").forever and ttl.parse("forever").text == "forever"
    assert ttl.parse("INSTANT").instant and ttl.parse("INSTANT").text == "instant"


@pytest.mark.parametrize("text", ["", "bogus", "-1d", "0s", "0", "7 parsecs", "1d and more", "d7"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(SqlError) as info:
        ttl.parse(text)
    assert info.value.sqlstate == "22023" and repr(text) in info.value.message


@pytest.fixture()
def env(spark_free_engine):
    return spark_free_engine


def _delta(engine: Engine, name: str) -> DeltaTable:
    return DeltaTable(engine.catalog.get_table("public", name).location)


def _hosts(engine: Engine, name: str) -> list[str]:
    return sorted(_delta(engine, name).to_pyarrow_table().column("host").to_pylist())


def _feed(engine: Engine, name: str) -> list[str]:
    return pa.table(_delta(engine, name).load_cdf(starting_version=0).read_all()).column("_change_type").to_pylist()


NOW = datetime(2024, 6, 1, 12, 0, 0)
NOW_US = int((NOW - datetime(1970, 1, 1)).total_seconds()) * US


def test_clean_up_drops_whole_files_and_rewrites_straddling_ones(env) -> None:
    engine, s = env
    s.execute("CREATE TABLE m (host text, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1h')")
    s.execute("INSERT INTO m VALUES ('a', $1), ('b', $2)", (NOW - timedelta(hours=3), NOW - timedelta(hours=2)))
    s.execute("INSERT INTO m VALUES ('c', $1), ('d', $2)", (NOW - timedelta(hours=2), NOW - timedelta(minutes=5)))
    s.execute("INSERT INTO m VALUES ('e', $1)", (NOW - timedelta(minutes=1),))
    t = engine.catalog.get_table("public", "m")
    # without rewrites: only the wholly expired file goes, in a log-only commit
    done = ttl.expire(engine.store, t, NOW_US, rewrite=False)
    assert (done.files_removed, done.files_rewritten) == (1, 0)
    assert _hosts(engine, "m") == ["c", "d", "e"]
    done = ttl.expire(engine.store, t, NOW_US)
    assert (done.files_removed, done.files_rewritten, done.rows_removed) == (0, 1, 1)
    assert _hosts(engine, "m") == ["d", "e"]
    assert ttl.expire(engine.store, t, NOW_US).files_rewritten == 0  # nothing left to do
    # expiry is not a change: the feed holds the five inserts and nothing else
    assert sorted(_feed(engine, "m")) == ["insert"] * 5
    # the table stays an ordinary Delta table that takes writes
    s.execute("INSERT INTO m VALUES ('f', $1)", (NOW,))
    assert _hosts(engine, "m") == ["d", "e", "f"]


def test_timestamptz_and_date_time_indexes(env) -> None:
    engine, s = env
    s.execute("CREATE TABLE z (host text, ts timestamptz TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1d')")
    s.execute("INSERT INTO z VALUES ('old', '2024-05-30 12:00:00+00'), ('new', '2024-06-01 11:00:00+00')")
    ttl.expire(engine.store, engine.catalog.get_table("public", "z"), NOW_US)
    assert _hosts(engine, "z") == ["new"]


def test_forever_tables_are_left_alone(env) -> None:
    engine, s = env
    s.execute("CREATE TABLE f (host text, ts timestamp TIME INDEX)")
    s.execute("INSERT INTO f VALUES ('a', '2000-01-01 00:00:00')")
    assert ttl.expire(engine.store, engine.catalog.get_table("public", "f"), NOW_US) == ttl.Expired()
    assert _hosts(engine, "f") == ["a"]


def test_instant_rows_are_kept_for_the_retention(env) -> None:
    engine, s = env
    s.execute("CREATE TABLE i (host text, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = 'instant')")
    assert s.execute("INSERT INTO i VALUES ('a', '2024-06-01 12:00:00'), ('b', '2024-06-01 12:00:00')").tag == "INSERT 0 2"
    t = engine.catalog.get_table("public", "i")
    real_now = int(datetime.now().timestamp() * US)
    assert ttl.expire(engine.store, t, real_now, instant_retention_us=3600 * US).files_removed == 0
    assert _hosts(engine, "i") == ["a", "b"]
    assert ttl.expire(engine.store, t, real_now + 3601 * US, instant_retention_us=3600 * US).files_removed == 1
    assert _hosts(engine, "i") == []
    assert "delete" not in _feed(engine, "i")


def test_maintenance_holds_straddling_rewrites_back(env, tmp_path: Path) -> None:
    engine, s = env
    s.execute("CREATE TABLE h (host text, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1h')")
    s.execute("INSERT INTO h VALUES ('old', $1), ('new', $2)", (NOW - timedelta(hours=2), NOW))
    t = engine.catalog.get_table("public", "h")
    m = Maintenance(engine.store, engine.catalog, Settings(data_dir=tmp_path, ttl_rewrite_interval_s=3600))
    assert m.expire(t, now_us=NOW_US) == 0  # first pass: the rewrite waits one interval
    assert _hosts(engine, "h") == ["new", "old"]
    assert m.expire(t, now_us=NOW_US, rewrite=True) == 1
    assert _hosts(engine, "h") == ["new"]
