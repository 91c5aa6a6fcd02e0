"""REFRESH TABLE loaded on Spark (``WITH (spark_writes = 'on')``), through the wire.

The snapshot is staged by the executors, checked there and applied with one Delta MERGE of the
difference. Each test keeps a twin table refreshed through the gateway (``spark_writes = 'off'``)
from the same source: both must hold the same rows and report the same counts, and the Spark
path's change feed must hold exactly the difference, as the collected path's does.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import psycopg
import pytest
from deltalake import DeltaTable

from tests.test_refresh import booted, error_of, rows, status, table_location, wait_until, write
from tests.tidegate_server import TidegateServer

COLUMNS = ("id bigint PRIMARY KEY, name text, v double precision, n int, ts timestamp, ok boolean, "
           "amt numeric(10,2), day date")
HEADER = "id,name,v,n,ts,ok,amt,day\n"


@pytest.fixture()
def conn(tidegate: TidegateServer):
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        yield c


def line(i: int, name: str | None = None) -> str:
    return (f"{i},{name or f'n{i}'},{i * 1.5},{i % 7},2024-01-0{1 + i % 9} 10:00:0{i % 10},"
            f"{'true' if i % 2 else 'false'},{i}.25,2024-02-0{1 + i % 9}\n")


def twin_tables(conn: psycopg.Connection, name: str, folder: Path, columns: str = COLUMNS, extra: str = "") -> None:
    for suffix, writer in (("", "on"), ("_twin", "off")):
        conn.execute(f"CREATE TABLE {name}{suffix} ({columns}) WITH (connector = 'file', path = '{folder}', "
                     f"match_pattern = '*.csv', refresh_mode = 'FULL_RELOAD', spark_writes = '{writer}'{extra}) "
                     "FORMAT PLAIN ENCODE CSV")


def refresh_both(conn: psycopg.Connection, name: str) -> list[str]:
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute(f"REFRESH TABLE {name} WAIT")
    conn.execute(f"REFRESH TABLE {name}_twin WAIT")
    return notices


def counts(conn: psycopg.Connection, name: str) -> tuple:
    st = status(conn, name)
    return st["rows_loaded"], st["rows_inserted"], st["rows_updated"], st["rows_deleted"]


def same_rows(conn: psycopg.Connection, name: str) -> list[tuple]:
    """The table's rows, checked equal to its twin's (values and types, as the client reads them)."""
    mine = rows(conn, f"SELECT * FROM {name} ORDER BY id")
    assert mine == rows(conn, f"SELECT * FROM {name}_twin ORDER BY id")
    return mine


def last_commit(location: Path) -> dict:
    """The newest commit of the table: its operation, app transactions, and change feed by kind."""
    dt = DeltaTable(str(location))
    version = dt.version()
    info, txns = {}, []
    for entry in (location / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        action = json.loads(entry)
        if "commitInfo" in action:
            info = action["commitInfo"]
        if "txn" in action:
            txns.append((action["txn"]["appId"], action["txn"]["version"]))
    feed = dt.load_cdf(starting_version=version, ending_version=version).read_all()
    changes = sorted(zip(feed.column("id").to_pylist(), feed.column("_change_type").to_pylist()))
    return {"operation": info.get("operation"), "txn": txns, "feed": changes}


def test_refresh_on_spark_applies_the_difference_the_collected_path_applies(conn, tidegate: TidegateServer,
                                                                             tmp_path: Path) -> None:
    src = tmp_path / "spark_src"
    write(src / "a.csv", HEADER + "".join(line(i) for i in range(1, 301)))
    write(src / "b.csv", HEADER + "".join(line(i) for i in range(301, 401)))
    twin_tables(conn, "rs_t", src)
    location = table_location(conn, tidegate.data_dir, "rs_t")
    oid = int(location.name)

    notices = refresh_both(conn, "rs_t")
    assert "refresh 1 of table 'public.rs_t': loading the source on Spark" in notices
    assert not any("loading the source on Spark" in n for n in notices if "rs_t_twin" in n)
    assert len(same_rows(conn, "rs_t")) == 400
    assert counts(conn, "rs_t") == counts(conn, "rs_t_twin") == (400, 400, 0, 0)
    commit = last_commit(location)  # into the empty table: an append
    assert commit["operation"] == "WRITE" and commit["txn"] == [(f"tidegate-refresh-{oid}", 1)]
    assert collections.Counter(kind for _, kind in commit["feed"]) == {"insert": 400}

    # One row changed, one gone, one new key (with NULLs in nullable columns), one file removed.
    text = (src / "a.csv").read_text().replace("\n7,n7,", "\n7,seven,").replace(line(9), "")
    write(src / "a.csv", text + "5000,,,,,,,\n")
    (src / "b.csv").unlink()
    refresh_both(conn, "rs_t")
    table = same_rows(conn, "rs_t")
    assert len(table) == 300 and table[-1] == (5000, None, None, None, None, None, None, None)
    assert counts(conn, "rs_t") == counts(conn, "rs_t_twin") == (300, 1, 1, 101)
    commit = last_commit(location)
    assert commit["operation"] == "MERGE" and commit["txn"] == [(f"tidegate-refresh-{oid}", 2)]
    assert commit["feed"] == sorted([(7, "update_postimage"), (7, "update_preimage"), (9, "delete"), (5000, "insert")]
                                    + [(i, "delete") for i in range(301, 401)])

    # Nothing changed: a commit of the refresh id alone, an empty feed; delta-rs reads what Spark wrote.
    refresh_both(conn, "rs_t")
    assert counts(conn, "rs_t") == (300, 0, 0, 0)
    commit = last_commit(location)
    assert commit["txn"] == [(f"tidegate-refresh-{oid}", 3)] and commit["feed"] == []
    assert DeltaTable(str(location)).to_pyarrow_table().num_rows == 300
    assert rows(conn, "SELECT name FROM rs_t WHERE id = 7") == [("seven",)]  # a key lookup (interactive path)


def test_bad_rows_and_duplicate_keys_fail_on_spark_and_change_nothing(conn, tmp_path: Path) -> None:
    src = tmp_path / "spark_bad"
    write(src / "a.csv", HEADER + "".join(line(i) for i in range(1, 6)))
    twin_tables(conn, "rs_bad", src)
    refresh_both(conn, "rs_bad")
    before = same_rows(conn, "rs_bad")

    write(src / "a.csv", HEADER + line(1) + "2,b,not-a-number,1,2024-01-01 00:00:00,true,1.00,2024-01-01\n" + line(3))
    err = error_of(conn, "REFRESH TABLE rs_bad WAIT")
    assert err.sqlstate == "22P02"
    assert err.diag.message_primary.startswith(
        "refresh of table 'public.rs_bad' failed: 1 source row does not fit the table's schema; first: "
        f"{src / 'a.csv'} line 3: ")

    write(src / "a.csv", HEADER + line(1) + ",nokey,1,1,2024-01-01 00:00:00,true,1.00,2024-01-01\n")
    err = error_of(conn, "REFRESH TABLE rs_bad WAIT")
    assert err.sqlstate == "22P02"
    assert err.diag.message_primary == ("refresh of table 'public.rs_bad' failed: 1 source row does not fit the "
                                        f"table's schema; first: file {src / 'a.csv'}: 1 row with NULL in key column id")

    write(src / "a.csv", HEADER + line(1) + line(2) + line(2, "again") + line(3) + line(3))
    err = error_of(conn, "REFRESH TABLE rs_bad WAIT")
    assert err.sqlstate == "23505"
    assert err.diag.message_primary.startswith("refresh of table 'public.rs_bad' failed: 2 duplicate keys in the source; "
                                               "first: Key (id)=(")
    assert rows(conn, "SELECT * FROM rs_bad ORDER BY id") == before
    st = status(conn, "rs_bad")
    assert st["current_status"] == "IDLE" and "duplicate keys" in st["last_error"]


def test_tables_spark_cannot_load_as_stored_keep_the_gateway_path(conn, tidegate: TidegateServer, tmp_path: Path) -> None:
    """A varchar(n) column needs PostgreSQL's length check (22001): the collected path loads it, with
    spark_writes = 'on' too; so does a table that tolerates bad rows."""
    src = tmp_path / "spark_fallback"
    write(src / "a.csv", "id,name\n1,abc\n2,abcd\n")
    conn.execute(f"CREATE TABLE rs_len (id int PRIMARY KEY, name varchar(3)) WITH (connector = 'file', path = '{src}', "
                 "refresh_mode = 'FULL_RELOAD', spark_writes = 'on') FORMAT PLAIN ENCODE CSV")
    err = error_of(conn, "REFRESH TABLE rs_len WAIT")
    assert err.sqlstate == "22001"
    conn.execute(f"CREATE TABLE rs_tol (id int PRIMARY KEY, name text) WITH (connector = 'file', path = '{src}', "
                 "refresh_mode = 'FULL_RELOAD', spark_writes = 'on', on_source_error = 'ignore') FORMAT PLAIN ENCODE CSV")
    conn.execute("REFRESH TABLE rs_tol WAIT")
    assert rows(conn, "SELECT * FROM rs_tol ORDER BY id") == [(1, "abc"), (2, "abcd")]
    assert last_commit(table_location(conn, tidegate.data_dir, "rs_tol"))["operation"] == "REFRESH"
    err = error_of(conn, f"CREATE TABLE rs_opt (id int PRIMARY KEY) WITH (connector = 'file', path = '{src}', "
                         "refresh_mode = 'FULL_RELOAD', spark_writes = 'always') FORMAT PLAIN ENCODE CSV")
    assert err.sqlstate == "22023" and "accepted values are 'auto', 'on' and 'off'" in err.diag.message_primary
    err = error_of(conn, "CREATE TABLE rs_plain (id int PRIMARY KEY) WITH (spark_writes = 'on')")
    assert err.sqlstate == "22023" and err.diag.message_hint == "For statements, use SET tidegate.spark_writes."


def test_postgres_source_on_spark(conn, pg_oracle) -> None:
    with psycopg.connect(pg_oracle.dsn, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS public.pg_spark_users")
        pg.execute("CREATE TABLE public.pg_spark_users (id bigint PRIMARY KEY, name text, score numeric(10,2))")
        pg.execute("INSERT INTO pg_spark_users SELECT g, 'u' || g, g * 1.5 FROM generate_series(1, 500) g")
        for suffix, writer in (("", "on"), ("_twin", "off")):
            conn.execute(f"CREATE TABLE rs_pg{suffix} (id bigint PRIMARY KEY, name text, score numeric(10,2)) WITH ("
                         f"connector = 'postgres', url = '{pg_oracle.url}', source_table = 'public.pg_spark_users', "
                         f"refresh_mode = 'FULL_RELOAD', chunk_rows = '200', spark_writes = '{writer}')")
        refresh_both(conn, "rs_pg")
        assert len(same_rows(conn, "rs_pg")) == 500
        pg.execute("UPDATE pg_spark_users SET name = NULL WHERE id = 5")
        pg.execute("DELETE FROM pg_spark_users WHERE id IN (6, 7)")
        pg.execute("INSERT INTO pg_spark_users VALUES (1000, 'new', 1)")
        refresh_both(conn, "rs_pg")
        assert len(same_rows(conn, "rs_pg")) == 499
        assert counts(conn, "rs_pg") == counts(conn, "rs_pg_twin") == (499, 1, 1, 2)
        conn.execute("CREATE TABLE rs_pg_nn (id bigint PRIMARY KEY, name text NOT NULL) WITH (connector = 'postgres', "
                     f"url = '{pg_oracle.url}', source_table = 'public.pg_spark_users', refresh_mode = 'FULL_RELOAD', "
                     "spark_writes = 'on')")
        err = error_of(conn, "REFRESH TABLE rs_pg_nn WAIT")
        assert err.sqlstate == "22P02" and "1 row with NULL in NOT NULL column name" in err.diag.message_primary
        assert rows(conn, "SELECT count(*) FROM rs_pg_nn") == [(0,)]


def _refresh_commits(location: Path) -> int:
    return sum(1 for h in DeltaTable(str(location)).history() if str(h.get("userMetadata")).startswith("tidegate-refresh-"))


@pytest.mark.long  # CI time: ./tidegate.sh test -m long runs it
def test_kill9_before_and_after_the_merge_commits_once(tmp_path: Path) -> None:
    data, src = tmp_path / "data", tmp_path / "src"
    write(src / "a.csv", HEADER + "".join(line(i) for i in range(1, 201)))
    # boot 1: the load is staged and checked (FINISHING), the MERGE waits 60 s: kill -9.
    with booted(data, "commit:60") as gw:
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            twin_tables(c, "rk", src)
            location = table_location(c, data, "rk")
            c.execute("REFRESH TABLE rk")
            wait_until(lambda: status(c, "rk")["current_status"] == "FINISHING", timeout=120)
        gw.kill9()
    # boot 2: the staged snapshot is merged (not loaded again); kill -9 right after the commit.
    with booted(data, "committed:60") as gw:
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            wait_until(lambda: rows(c, "SELECT count(*) FROM rk") == [(200,)], timeout=120)
            assert status(c, "rk")["current_status"] == "FINISHING"
            assert not any("loading the source on Spark" in ln for ln in gw.log)
        gw.kill9()
    assert _refresh_commits(location) == 1
    # boot 3: the commit is found by its app transaction and not repeated; its counts are reported.
    with booted(data) as gw:
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            wait_until(lambda: status(c, "rk")["current_status"] == "IDLE", timeout=120)
            assert counts(c, "rk") == (200, 200, 0, 0)
            c.execute("REFRESH TABLE rk_twin WAIT")
            assert len(same_rows(c, "rk")) == 200
            assert _refresh_commits(location) == 1
