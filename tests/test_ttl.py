"""Table ttl (issue 19, part 1), through the wire: the option's values, rows invisible from the
moment they expire, clean-up in the background that the change feed and flows do not read as
deletes, 'instant' tables that feed flows and stay empty.

One gateway for the module, with a maintenance pass every second, 'instant' rows kept 30 s for
streaming flows, and ttl rewrites of straddling files held back (an hour), so a file holding both
expired and live rows stays as written while the tests run: what they see of it is the query-time
filter alone. Time index values are placed
relative to now (never sleeps of minutes).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from tests.tidegate_server import TidegateServer
from tests.wire import error_of, rows, running_gateway, wait_until

HOURLY = "EVAL INTERVAL '1 hour'"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ttl-data")


@pytest.fixture(scope="module")
def gw(data_dir: Path) -> Iterator[TidegateServer]:
    yield from running_gateway(data_dir, env={"TIDEGATE_MAINTENANCE_INTERVAL_S": "1",
                                             "TIDEGATE_TTL_REWRITE_INTERVAL_S": "3600",
                                             "TIDEGATE_INSTANT_RETENTION_S": "30"})


@pytest.fixture()
def conn(gw: TidegateServer):
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        yield c


def delta(gw: TidegateServer, data_dir: Path, table: str) -> DeltaTable:
    """The table's Delta files, read with delta-rs (not through the gateway)."""
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        return DeltaTable(str(data_dir / c.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()[0]))


def stored(gw: TidegateServer, data_dir: Path, table: str) -> pa.Table:
    return delta(gw, data_dir, table).to_pyarrow_table()


def changes(gw: TidegateServer, data_dir: Path, table: str) -> list[str]:
    feed = pa.table(delta(gw, data_dir, table).load_cdf(starting_version=0).read_all())
    return feed.column("_change_type").to_pylist()


def ago(**kw: float) -> datetime:
    """A naive UTC timestamp ``kw`` before now (a TIMESTAMP time index holds UTC wall time)."""
    return datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(**kw)


# -- the option --------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["7d", "90 days", "1h 30m", "1h30m", "1month", "1M", "2 weeks", "1y",
                                   "1 day 12:00:00", "P1DT2H", "forever", "instant", "36000s"])
def test_ttl_values_are_accepted_and_shown(conn: psycopg.Connection, value: str) -> None:
    name = "tv_" + "".join(ch for ch in value.lower() if ch.isalnum())
    conn.execute(f"CREATE TABLE {name} (host text, ts timestamp TIME INDEX) WITH (ttl = '{value}')")
    create = rows(conn, f"SHOW CREATE TABLE {name}")[0][1]
    assert f"ttl = '{value}'" in create
    conn.execute(f"DROP TABLE {name}")


@pytest.mark.parametrize("value", ["bogus", "-1d", "0s", "", "7 parsecs", "1d and more"])
def test_bad_ttl_values_name_option_and_value(conn: psycopg.Connection, value: str) -> None:
    err = error_of(conn, f"CREATE TABLE tb_bad (host text, ts timestamp TIME INDEX) WITH (ttl = '{value}')")
    assert err.sqlstate == "22023"
    assert "ttl" in err.diag.message_primary and repr(value) in err.diag.message_primary
    conn.execute("CREATE TABLE tb_bad (host text, ts timestamp TIME INDEX)")
    err = error_of(conn, f"ALTER TABLE tb_bad SET (ttl = '{value}')")
    assert err.sqlstate == "22023" and repr(value) in err.diag.message_primary
    conn.execute("DROP TABLE tb_bad")


def test_ttl_needs_a_time_index(conn: psycopg.Connection) -> None:
    err = error_of(conn, "CREATE TABLE tn_plain (a int) WITH (ttl = '7d')")
    assert err.sqlstate == "22023" and "TIME INDEX" in err.diag.message_primary
    conn.execute("CREATE TABLE tn_plain (a int)")
    err = error_of(conn, "ALTER TABLE tn_plain SET (ttl = 'instant')")
    assert err.sqlstate == "22023" and "TIME INDEX" in err.diag.message_primary
    conn.execute("ALTER TABLE tn_plain SET (ttl = 'forever')")  # forever is every table's ttl
    conn.execute("DROP TABLE tn_plain")


def test_alter_table_set_and_reset(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE ta (host text, ts timestamp TIME INDEX)")
    conn.execute("ALTER TABLE ta SET (ttl = '7d')")
    assert "ttl = '7d'" in rows(conn, "SHOW CREATE TABLE ta")[0][1]
    conn.execute("ALTER TABLE ta SET 'ttl' = '1h'")  # GreptimeDB's form
    assert "ttl = '1h'" in rows(conn, "SHOW CREATE TABLE ta")[0][1]
    conn.execute("ALTER TABLE ta RESET (ttl)")
    assert "ttl" not in rows(conn, "SHOW CREATE TABLE ta")[0][1]
    conn.execute("ALTER TABLE ta SET (ttl = '2d')")
    conn.execute("ALTER TABLE ta UNSET 'ttl'")
    assert "ttl" not in rows(conn, "SHOW CREATE TABLE ta")[0][1]
    err = error_of(conn, "ALTER TABLE ta SET (fillfactor = 70)")
    assert err.sqlstate == "0A000"
    err = error_of(conn, "ALTER TABLE ta SET (colour = 'red')")
    assert err.sqlstate == "22023" and err.diag.message_primary == 'unrecognized parameter "colour"'
    err = error_of(conn, "ALTER TABLE ta_missing SET (ttl = '1d')")
    assert err.sqlstate == "42P01"
    conn.execute("ALTER TABLE IF EXISTS ta_missing SET (ttl = '1d')")
    conn.execute("DROP TABLE ta")


# -- visibility --------------------------------------------------------------------------------------

def test_expired_rows_are_invisible_before_any_clean_up(gw: TidegateServer, data_dir: Path,
                                                        conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE tvis (host text, v int, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1h')")
    # one INSERT, one file holding expired and live rows: clean-up leaves it for an hour
    conn.execute("INSERT INTO tvis VALUES ('old', 1, %s), ('recent', 2, %s), ('now', 3, %s)",
                 (ago(hours=2), ago(minutes=30), ago(seconds=1)))
    assert rows(conn, "SELECT host FROM tvis ORDER BY host") == [("now",), ("recent",)]
    assert stored(gw, data_dir, "tvis").num_rows == 3
    assert rows(conn, "SELECT count(*), sum(v) FROM tvis") == [(2, 5)]
    assert rows(conn, "SELECT host FROM tvis WHERE v < 10 ORDER BY 1") == [("now",), ("recent",)]
    assert rows(conn, "SELECT t.host FROM tvis t JOIN tvis u USING (host) ORDER BY 1") == [("now",), ("recent",)]
    conn.execute("CREATE VIEW tvis_v AS SELECT host FROM tvis")
    assert rows(conn, "SELECT * FROM tvis_v ORDER BY 1") == [("now",), ("recent",)]
    with conn.cursor() as cur:
        with cur.copy("COPY tvis (host) TO STDOUT") as copy:
            assert sorted(bytes(b).decode() for b in copy) == ["now\n", "recent\n"]
    # A longer ttl shows the stored row again (it was hidden, not yet removed); RESET: forever.
    conn.execute("ALTER TABLE tvis SET (ttl = '3h')")
    assert rows(conn, "SELECT host FROM tvis ORDER BY host") == [("now",), ("old",), ("recent",)]
    conn.execute("ALTER TABLE tvis SET (ttl = '1h')")
    # UPDATE and DELETE see (and count) the live rows only
    assert conn.execute("UPDATE tvis SET v = v + 10").rowcount == 2
    assert rows(conn, "SELECT host, v FROM tvis ORDER BY host") == [("now", 13), ("recent", 12)]
    assert conn.execute("DELETE FROM tvis").rowcount == 2
    assert rows(conn, "SELECT count(*) FROM tvis") == [(0,)]
    conn.execute("DROP VIEW tvis_v")
    conn.execute("DROP TABLE tvis")


def test_rows_expire_as_time_passes(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE tpass (host text, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1h')")
    conn.execute("INSERT INTO tpass VALUES ('soon', %s), ('later', %s)", (ago(minutes=60, seconds=-15), ago(minutes=1)))
    assert rows(conn, "SELECT host FROM tpass ORDER BY host") == [("later",), ("soon",)]
    wait_until(lambda: rows(conn, "SELECT host FROM tpass ORDER BY host") == [("later",)], 60, "'soon' expired")
    conn.execute("DROP TABLE tpass")


def test_timestamptz_and_session_time_zone(conn: psycopg.Connection) -> None:
    conn.execute("SET TIME ZONE 'America/New_York'")
    conn.execute("CREATE TABLE ttz (host text, ts timestamptz TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1h 30m')")
    conn.execute("INSERT INTO ttz VALUES ('old', now() - interval '2 hours'), ('new', now() - interval '80 minutes')")
    assert rows(conn, "SELECT host FROM ttz") == [("new",)]
    conn.execute("SET TIME ZONE 'Asia/Kolkata'")
    assert rows(conn, "SELECT host FROM ttz") == [("new",)]
    conn.execute("DROP TABLE ttz")


def test_naive_time_index_is_utc_whatever_the_session_zone(conn: psycopg.Connection) -> None:
    conn.execute("SET TIME ZONE 'Pacific/Auckland'")
    conn.execute("CREATE TABLE tntz (host text, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '2h')")
    conn.execute("INSERT INTO tntz VALUES ('in', %s), ('out', %s)", (ago(minutes=90), ago(minutes=150)))
    assert rows(conn, "SELECT host FROM tntz") == [("in",)]
    conn.execute("DROP TABLE tntz")


def test_transaction_block_reads_its_own_writes_through_the_ttl(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE ttx (host text, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1d')")
    with conn.transaction():
        conn.execute("INSERT INTO ttx VALUES ('old', %s), ('new', %s)", (ago(days=2), ago(hours=1)))
        assert rows(conn, "SELECT host FROM ttx") == [("new",)]
    assert rows(conn, "SELECT host FROM ttx") == [("new",)]
    conn.execute("DROP TABLE ttx")


# -- clean-up ----------------------------------------------------------------------------------------

def test_clean_up_removes_expired_files_without_a_change_feed_delete(gw: TidegateServer, data_dir: Path,
                                                                    conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE tclean (host text, v int, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1h')")
    conn.execute("INSERT INTO tclean VALUES ('a', 1, %s), ('b', 2, %s)", (ago(hours=3), ago(hours=2)))
    conn.execute("INSERT INTO tclean VALUES ('c', 3, %s)", (ago(minutes=5),))
    wait_until(lambda: stored(gw, data_dir, "tclean").num_rows == 1, 60, "expired file removed")
    assert stored(gw, data_dir, "tclean").column("host").to_pylist() == ["c"]
    assert sorted(changes(gw, data_dir, "tclean")) == ["insert", "insert", "insert"]
    # writers carry on
    conn.execute("INSERT INTO tclean VALUES ('d', 4, %s)", (ago(seconds=1),))
    assert rows(conn, "SELECT host FROM tclean ORDER BY host") == [("c",), ("d",)]
    conn.execute("DROP TABLE tclean")


# -- 'instant' ---------------------------------------------------------------------------------------

def test_instant_table_counts_inserts_feeds_a_flow_and_stays_empty(gw: TidegateServer, data_dir: Path,
                                                                  conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE tin (host text, v int, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = 'instant')")
    conn.execute("CREATE FLOW tin_flow SINK TO tin_sink AS SELECT host, v, ts FROM tin WHERE v > 0")
    assert rows(conn, "SELECT options FROM information_schema.flows WHERE flow_name = 'tin_flow'") == [
        ('{"flow_type":"streaming"}',)]
    now = ago(seconds=1)
    assert conn.execute("INSERT INTO tin VALUES ('a', 1, %s), ('b', 2, %s), ('c', -1, %s)", (now, now, now)).rowcount == 3
    assert rows(conn, "SELECT * FROM tin") == []
    assert rows(conn, "SELECT count(*) FROM tin") == [(0,)]
    assert stored(gw, data_dir, "tin").num_rows == 3  # kept (invisible) for the flows for a while
    wait_until(lambda: rows(conn, "SELECT host, v FROM tin_sink ORDER BY host") == [("a", 1), ("b", 2)], 60,
               "streaming flow delivered the instant table's rows")
    wait_until(lambda: stored(gw, data_dir, "tin").num_rows == 0, 120, "instant rows cleaned up")
    assert "delete" not in changes(gw, data_dir, "tin")
    assert rows(conn, "SELECT host, v FROM tin_sink ORDER BY host") == [("a", 1), ("b", 2)]
    conn.execute("DROP FLOW tin_flow")
    conn.execute("DROP TABLE tin_sink")
    conn.execute("DROP TABLE tin")


# -- flows keep their sinks --------------------------------------------------------------------------

def test_windowed_flow_keeps_sink_rows_of_expired_source_rows(gw: TidegateServer, data_dir: Path,
                                                              conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE tfs (host text, v int, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1d')")
    conn.execute(f"CREATE FLOW tfs_flow SINK TO tfs_sink {HOURLY} AS "
                 "SELECT host, sum(v) AS total, date_bin(INTERVAL '1 hour', ts) AS w FROM tfs GROUP BY host, w")
    base = ago(hours=3).replace(minute=0, second=0, microsecond=0)
    conn.execute("INSERT INTO tfs VALUES ('a', 1, %s), ('b', 2, %s)", (base + timedelta(minutes=10), base + timedelta(minutes=20)))
    conn.execute("ADMIN FLUSH_FLOW('tfs_flow')")
    assert rows(conn, "SELECT host, total FROM tfs_sink ORDER BY host") == [("a", 1), ("b", 2)]
    # the source's ttl now expires those rows, and clean-up removes their file
    conn.execute("ALTER TABLE tfs SET (ttl = '1h')")
    wait_until(lambda: stored(gw, data_dir, "tfs").num_rows == 0, 60, "expired source file removed")
    conn.execute("INSERT INTO tfs VALUES ('c', 3, %s)", (ago(minutes=1),))
    conn.execute("ADMIN FLUSH_FLOW('tfs_flow')")
    assert rows(conn, "SELECT host, total FROM tfs_sink ORDER BY host") == [("a", 1), ("b", 2), ("c", 3)]
    conn.execute("DROP FLOW tfs_flow")
    conn.execute("DROP TABLE tfs_sink")
    conn.execute("DROP TABLE tfs")


def test_windowless_flow_keeps_sink_rows_of_expired_source_rows(gw: TidegateServer, data_dir: Path,
                                                                conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE tfw (host text, v int, ts timestamp TIME INDEX, PRIMARY KEY (host)) WITH (ttl = '1d')")
    conn.execute(f"CREATE FLOW tfw_flow SINK TO tfw_sink {HOURLY} AS SELECT host, max(v) AS top FROM tfw GROUP BY host")
    conn.execute("INSERT INTO tfw VALUES ('a', 1, %s)", (ago(hours=3),))
    conn.execute("ADMIN FLUSH_FLOW('tfw_flow')")
    assert rows(conn, "SELECT host, top FROM tfw_sink") == [("a", 1)]
    conn.execute("ALTER TABLE tfw SET (ttl = '1h')")
    wait_until(lambda: stored(gw, data_dir, "tfw").num_rows == 0, 60, "expired source file removed")
    conn.execute("INSERT INTO tfw VALUES ('b', 2, %s)", (ago(minutes=1),))
    conn.execute("ADMIN FLUSH_FLOW('tfw_flow')")
    assert rows(conn, "SELECT host, top FROM tfw_sink ORDER BY host") == [("a", 1), ("b", 2)]
    conn.execute("DROP FLOW tfw_flow")
    conn.execute("DROP TABLE tfw_sink")
    conn.execute("DROP TABLE tfw")
