"""Refreshable tables and REFRESH TABLE, through the wire (psycopg against a real gateway).

File sources (CSV with/without header, Parquet, JSON lines) change between refreshes; a
PostgreSQL 15 source (the ``pg_oracle`` fixture) is read through Spark JDBC; the change feed and
a flow over a refreshable table see only the diff. The crash tests run their own gateway with
``TIDEGATE_REFRESH_TEST_PAUSE`` (fault-injection pauses) and kill it with SIGKILL during the load
and right after the Delta commit.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from tests.tidegate_server import TidegateServer, start_tidegate


@pytest.fixture()
def conn(tidegate: TidegateServer):
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        yield c


def rows(conn: psycopg.Connection, sql: str) -> list[tuple]:
    return conn.execute(sql).fetchall()


def error_of(conn: psycopg.Connection, sql: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    return info.value


def status(conn: psycopg.Connection, name: str) -> dict:
    cur = conn.execute("SELECT * FROM information_schema.refresh_tables WHERE table_name = %s", (name,))
    names = [d.name for d in cur.description]
    row = cur.fetchone()
    return dict(zip(names, row)) if row else {}


def wait_until(fn, timeout: float = 60.0, interval: float = 0.2):
    deadline = time.time() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(interval)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def table_location(conn: psycopg.Connection, data_dir: Path, name: str, schema: str = "public") -> Path:
    """The Delta table of ``schema.name``: ``warehouse/<schema oid>/<table oid>`` (or, in data dirs
    of the older layout, ``warehouse/<schema>/<name>``)."""
    rel, nsp = conn.execute("SELECT c.oid, n.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                            "WHERE c.relname = %s AND n.nspname = %s", (name, schema)).fetchone()
    by_oid = data_dir / "warehouse" / str(nsp) / str(rel)
    return by_oid if by_oid.exists() else data_dir / "warehouse" / schema / name


def cdf_of_last_commit(location: Path) -> list[tuple]:
    dt = DeltaTable(str(location))
    v = dt.version()
    reader = dt.load_cdf(starting_version=v, ending_version=v)
    t = reader.read_all() if hasattr(reader, "read_all") else pa.Table.from_batches(list(reader))
    return sorted(zip(t.column("id").to_pylist(), t.column("_change_type").to_pylist()))


def file_table(conn, name: str, folder: Path, encode: str = "CSV", enc_opts: str = "", extra: str = "",
               cols: str = "id int PRIMARY KEY, name varchar, v int", pattern: str = "*") -> None:
    conn.execute(f"CREATE TABLE {name} ({cols}) WITH (connector = 'file', path = '{folder}', "
                 f"match_pattern = '{pattern}', refresh_mode = 'FULL_RELOAD'{extra}) FORMAT PLAIN ENCODE {encode}"
                 + (f" ({enc_opts})" if enc_opts else ""))


# -- CREATE TABLE validation ---------------------------------------------------------------------------

def test_create_validation(conn, tmp_path: Path) -> None:
    base = f"connector = 'file', path = '{tmp_path}'"
    cases = [
        (f"CREATE TABLE v1 (id int PRIMARY KEY) WITH ({base}, refresh_mode = 'SOMETIMES') FORMAT PLAIN ENCODE CSV",
         "22023", "invalid refresh_mode 'SOMETIMES': accepted values are 'FULL_RELOAD' and 'STREAMING'"),
        (f"CREATE TABLE v2 (id int PRIMARY KEY) WITH ({base}, refresh_interval_sec = '5') FORMAT PLAIN ENCODE CSV",
         "22023", "refresh_interval_sec is only allowed with refresh_mode = 'FULL_RELOAD'"),
        (f"CREATE TABLE v3 (id int PRIMARY KEY) WITH ({base}, refresh_mode = 'FULL_RELOAD', refresh_interval_sec = '0') "
         "FORMAT PLAIN ENCODE CSV", "22023", "invalid refresh_interval_sec '0': must be a positive integer"),
        (f"CREATE TABLE v4 (id int PRIMARY KEY) WITH ({base}, refresh_mode = 'FULL_RELOAD', refresh_interval_sec = 'x') "
         "FORMAT PLAIN ENCODE CSV", "22023", "invalid refresh_interval_sec 'x': must be a positive integer"),
        (f"CREATE TABLE v5 (id int) WITH ({base}, refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV",
         "42P16", "Refreshable tables must have a PRIMARY KEY"),
        ("CREATE TABLE v6 (id int PRIMARY KEY) WITH (connector = 'kafka', refresh_mode = 'FULL_RELOAD')",
         "22023", "unknown connector 'kafka': accepted connectors are 'file' and 'postgres'"),
        ("CREATE TABLE v7 (id int PRIMARY KEY) WITH (connector = 'file', refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV",
         "22023", "connector 'file' needs the option path (a folder or file) and optionally match_pattern"),
        (f"CREATE TABLE v8 (id int PRIMARY KEY) WITH ({base}, refresh_mode = 'FULL_RELOAD')",
         "22023", "connector 'file' needs FORMAT PLAIN ENCODE CSV | PARQUET | JSON"),
        ("CREATE TABLE v9 (id int PRIMARY KEY) WITH (connector = 'postgres', url = 'postgresql://h/db', "
         "refresh_mode = 'FULL_RELOAD')", "22023",
         "connector 'postgres' needs the option source_table (url = 'postgresql://user:password@host:port/db', "
         "source_table = 'schema.table')"),
        (f"CREATE TABLE v10 (id int PRIMARY KEY) WITH ({base}, refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE AVRO",
         "22023", "unknown encode 'AVRO': accepted encodes are CSV, PARQUET and JSON"),
        ("CREATE TABLE v11 (id int PRIMARY KEY) WITH (refresh_mode = 'FULL_RELOAD')", "22023",
         "refresh_mode = 'FULL_RELOAD' needs a connector: accepted connectors are 'file' and 'postgres'"),
    ]
    for sql, state, message in cases:
        err = error_of(conn, sql)
        assert (err.sqlstate, err.diag.message_primary) == (state, message), sql
    # STREAMING (the default) with a connector is accepted but not refreshable.
    conn.execute(f"CREATE TABLE v_stream (id int PRIMARY KEY) WITH ({base}, refresh_mode = 'streaming') "
                 "FORMAT PLAIN ENCODE CSV")
    err = error_of(conn, "REFRESH TABLE v_stream")
    assert err.diag.message_primary == ("Table 'public.v_stream' is not refreshable. Only tables created with "
                                        "refresh_mode = 'FULL_RELOAD' support REFRESH.")


def test_refresh_statement_errors(conn, tmp_path: Path) -> None:
    err = error_of(conn, "REFRESH TABLE no_such_table")
    assert err.sqlstate == "42P01" and err.diag.message_primary == 'relation "no_such_table" does not exist'
    conn.execute("CREATE TABLE plain_t (id int PRIMARY KEY)")
    err = error_of(conn, "REFRESH TABLE plain_t")
    assert err.sqlstate == "55000"
    assert err.diag.message_primary == ("Table 'public.plain_t' is not refreshable. Only tables created with "
                                        "refresh_mode = 'FULL_RELOAD' support REFRESH.")
    conn.execute("CREATE VIEW plain_v AS SELECT id FROM plain_t")
    err = error_of(conn, "REFRESH TABLE plain_v")
    assert err.sqlstate == "42809" and "is a view" in err.diag.message_primary
    err = error_of(conn, "REFRESH TABLE plain_t NOW")
    assert err.sqlstate == "42601"


# -- file sources ----------------------------------------------------------------------------------------

def test_csv_with_header_added_changed_removed(conn, tmp_path: Path) -> None:
    src = tmp_path / "users"
    write(src / "a.csv", "name,id,v\nalice,1,10\nbob,2,20\n")
    write(src / "b.csv", "id,name,v\n3,carol,30\n")
    write(src / "ignored.txt", "not,a,csv\n")
    file_table(conn, "f_users", src, pattern="*.csv")
    assert status(conn, "f_users")["current_status"] == "IDLE"
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute("REFRESH TABLE f_users WAIT")
    assert rows(conn, "SELECT id, name, v FROM f_users ORDER BY id") == [(1, "alice", 10), (2, "bob", 20), (3, "carol", 30)]
    assert any("loaded chunk 2/2, 3 rows" in n for n in notices)
    assert notices[-1].endswith("finished: 3 rows loaded, 3 inserted, 0 updated, 0 deleted")
    st = status(conn, "f_users")
    assert (st["rows_loaded"], st["rows_inserted"], st["rows_updated"], st["rows_deleted"]) == (3, 3, 0, 0)
    assert st["last_success_time"] is not None and st["last_error"] is None
    # change a row, remove a file, add a file
    write(src / "a.csv", "name,id,v\nalice,1,11\nbob,2,20\n")
    (src / "b.csv").unlink()
    write(src / "c.csv", "id,name,v\n4,dan,40\n")
    conn.execute("REFRESH TABLE f_users WAIT")
    assert rows(conn, "SELECT id, name, v FROM f_users ORDER BY id") == [(1, "alice", 11), (2, "bob", 20), (4, "dan", 40)]
    st = status(conn, "f_users")
    assert (st["rows_loaded"], st["rows_inserted"], st["rows_updated"], st["rows_deleted"]) == (3, 1, 1, 1)


def test_change_feed_holds_only_the_diff(conn, tidegate: TidegateServer, tmp_path: Path) -> None:
    src = tmp_path / "cdf"
    write(src / "all.csv", "".join(f"{i},n{i},{i}\n" for i in range(1, 201)))
    file_table(conn, "f_cdf", src, enc_opts="without_header = 'true', delimiter = ','")
    conn.execute("REFRESH TABLE f_cdf WAIT")
    location = table_location(conn, tidegate.data_dir, "f_cdf")
    assert len(cdf_of_last_commit(location)) == 200
    lines = [f"{i},n{i},{i}\n" for i in range(1, 201) if i != 7]
    lines[0] = "1,changed,1\n"
    lines.append("500,new,500\n")
    write(src / "all.csv", "".join(lines))
    conn.execute("REFRESH TABLE f_cdf WAIT")
    assert cdf_of_last_commit(location) == [(1, "update_postimage"), (1, "update_preimage"), (7, "delete"), (500, "insert")]
    assert rows(conn, "SELECT count(*), max(id) FROM f_cdf") == [(200, 500)]
    # Nothing changed: no rows in the feed, the table version only records the refresh id.
    conn.execute("REFRESH TABLE f_cdf WAIT")
    assert cdf_of_last_commit(location) == []
    st = status(conn, "f_cdf")
    assert (st["rows_loaded"], st["rows_inserted"], st["rows_updated"], st["rows_deleted"]) == (200, 0, 0, 0)


def last_commit_actions(location: Path) -> dict[str, int]:
    """How many actions of each kind (add, remove, cdc, txn, ...) the newest Delta commit holds."""
    newest = max((location / "_delta_log").glob("*.json"))
    kinds: dict[str, int] = {}
    for line in newest.read_text().splitlines():
        for kind in json.loads(line):
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def test_commit_rewrites_touched_files_or_adopts_the_load(conn, tidegate: TidegateServer, tmp_path: Path) -> None:
    """A refresh rewrites only the files holding changed rows; when nearly every file changes, the
    staged load becomes the table's files. Either way the feed holds only the diff."""
    src = tmp_path / "files"
    table = {i * 100 + j: (f"n{j}", j) for i in range(4) for j in range(25)}

    def write_files() -> None:
        for f in range(5):
            part = {k: v for k, v in table.items() if k // 100 == f}
            if part:
                write(src / f"{f}.csv", "".join(f"{k},{n},{v}\n" for k, (n, v) in sorted(part.items())))

    write_files()
    file_table(conn, "f_files", src, enc_opts="without_header = 'true'", extra=", chunk_bytes = '1'")
    location = table_location(conn, tidegate.data_dir, "f_files")

    def contents() -> list[tuple]:
        return rows(conn, "SELECT id, name, v FROM f_files ORDER BY id")

    conn.execute("REFRESH TABLE f_files WAIT")
    # The initial load: the four staged chunks are adopted; added files are the inserts.
    actions = last_commit_actions(location)
    assert (actions.get("add"), actions.get("remove"), actions.get("cdc"), actions.get("txn")) == (4, None, None, 1)
    assert [kind for _, kind in cdf_of_last_commit(location)] == ["insert"] * 100
    assert contents() == [(k, n, v) for k, (n, v) in sorted(table.items())]

    table[103] = ("changed", 3)  # one row of one file
    write_files()
    conn.execute("REFRESH TABLE f_files WAIT")
    actions = last_commit_actions(location)
    assert (actions.get("add"), actions.get("remove"), actions.get("cdc")) == (1, 1, 1)
    assert cdf_of_last_commit(location) == [(103, "update_postimage"), (103, "update_preimage")]
    assert contents() == [(k, n, v) for k, (n, v) in sorted(table.items())]

    table.update({400 + j: (f"new{j}", j) for j in range(5)})  # new keys only: appended
    write_files()
    conn.execute("REFRESH TABLE f_files WAIT")
    actions = last_commit_actions(location)
    assert (actions.get("add"), actions.get("remove"), actions.get("cdc")) == (1, None, None)
    assert cdf_of_last_commit(location) == [(400 + j, "insert") for j in range(5)]

    for f in range(5):  # a row of every file changes, one is deleted
        table[f * 100] = ("every", -1)
    del table[1]
    write_files()
    conn.execute("REFRESH TABLE f_files WAIT")
    actions = last_commit_actions(location)
    assert (actions.get("add"), actions.get("remove"), actions.get("cdc")) == (5, 5, 1)
    assert cdf_of_last_commit(location) == sorted([(1, "delete")] + [(f * 100, kind) for f in range(5) for kind in
                                                                      ("update_postimage", "update_preimage")])
    assert contents() == [(k, n, v) for k, (n, v) in sorted(table.items())]
    assert len(DeltaTable(str(location)).file_uris()) == 5
    st = status(conn, "f_files")
    assert (st["rows_loaded"], st["rows_inserted"], st["rows_updated"], st["rows_deleted"]) == (104, 0, 5, 1)


def test_not_null_columns_are_checked(conn, tmp_path: Path) -> None:
    src = tmp_path / "nn"
    write(src / "a.csv", "1,a,1\n2,,2\n3,c,3\n")
    file_table(conn, "f_nn", src, enc_opts="without_header = 'true'", cols="id int PRIMARY KEY, name text NOT NULL, v int")
    err = error_of(conn, "REFRESH TABLE f_nn WAIT")
    assert err.sqlstate == "22P02"
    assert err.diag.message_primary.endswith("1 source row does not fit the table's schema; first: file "
                                             f"{src / 'a.csv'}: 1 row with NULL in NOT NULL column name")
    assert rows(conn, "SELECT count(*) FROM f_nn") == [(0,)]
    file_table(conn, "f_nn_ok", src, enc_opts="without_header = 'true'", cols="id int PRIMARY KEY, name text NOT NULL, v int",
               extra=", on_source_error = 'ignore'")
    conn.execute("REFRESH TABLE f_nn_ok WAIT")
    assert rows(conn, "SELECT * FROM f_nn_ok ORDER BY id") == [(1, "a", 1), (3, "c", 3)]


def test_csv_without_header_custom_delimiter(conn, tmp_path: Path) -> None:
    src = tmp_path / "semi"
    write(src / "x.csv", "1;a;1.5\n2;b;2.5\n")
    file_table(conn, "f_semi", src, cols="id bigint PRIMARY KEY, name text, score double precision",
               enc_opts="without_header = 'true', delimiter = ';'")
    conn.execute("REFRESH TABLE f_semi WAIT")
    assert rows(conn, "SELECT * FROM f_semi ORDER BY id") == [(1, "a", 1.5), (2, "b", 2.5)]


def test_parquet_and_json_sources(conn, tmp_path: Path) -> None:
    psrc = tmp_path / "pq"
    psrc.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "name": ["a", "b"], "v": [10, 20]}), psrc / "p1.parquet")
    file_table(conn, "f_pq", psrc, encode="PARQUET", pattern="*.parquet")
    conn.execute("REFRESH TABLE f_pq WAIT")
    assert rows(conn, "SELECT * FROM f_pq ORDER BY id") == [(1, "a", 10), (2, "b", 20)]
    pq.write_table(pa.table({"id": [2, 3], "name": ["B", "c"], "v": [20, 30]}), psrc / "p1.parquet")
    conn.execute("REFRESH TABLE f_pq WAIT")
    assert rows(conn, "SELECT * FROM f_pq ORDER BY id") == [(2, "B", 20), (3, "c", 30)]
    st = status(conn, "f_pq")
    assert (st["rows_inserted"], st["rows_updated"], st["rows_deleted"]) == (1, 1, 1)

    jsrc = tmp_path / "js"
    write(jsrc / "a.json", json.dumps({"id": 1, "name": "x", "v": 1}) + "\n" + json.dumps({"id": 2, "name": "y"}) + "\n")
    file_table(conn, "f_js", jsrc, encode="JSON")
    conn.execute("REFRESH TABLE f_js WAIT")
    assert rows(conn, "SELECT * FROM f_js ORDER BY id") == [(1, "x", 1), (2, "y", None)]


def test_bad_rows_fail_and_leave_table_unchanged(conn, tmp_path: Path) -> None:
    src = tmp_path / "bad"
    write(src / "a.csv", "1,a,1\n2,b,2\n")
    file_table(conn, "f_bad", src, enc_opts="without_header = 'true'")
    conn.execute("REFRESH TABLE f_bad WAIT")
    write(src / "a.csv", "1,a,100\n2,b,not-a-number\n3,c,3\n")
    err = error_of(conn, "REFRESH TABLE f_bad WAIT")
    assert err.sqlstate == "22P02"
    msg = err.diag.message_primary
    assert msg.startswith("refresh of table 'public.f_bad' failed: 1 source row does not fit the table's schema")
    assert f"{src / 'a.csv'} line 2" in msg
    assert rows(conn, "SELECT * FROM f_bad ORDER BY id") == [(1, "a", 1), (2, "b", 2)]
    st = status(conn, "f_bad")
    assert st["current_status"] == "IDLE" and "line 2" in st["last_error"] and st["rows_loaded"] == 2
    # A missing folder names the path.
    conn.execute(f"CREATE TABLE f_gone (id int PRIMARY KEY) WITH (connector = 'file', path = '{tmp_path}/nope', "
                 "refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV")
    err = error_of(conn, "REFRESH TABLE f_gone WAIT")
    assert err.sqlstate == "58P01" and f"source path '{tmp_path}/nope' does not exist" in err.diag.message_primary
    # Without WAIT the failure lands in last_error and the status returns to IDLE.
    conn.execute("REFRESH TABLE f_gone")
    st = wait_until(lambda: (s := status(conn, "f_gone"))["current_status"] == "IDLE" and s)
    assert "does not exist" in st["last_error"]


def test_duplicate_keys_fail_unless_tolerated(conn, tmp_path: Path) -> None:
    src = tmp_path / "dup"
    write(src / "a.csv", "1,a,1\n2,b,2\n")
    write(src / "b.csv", "2,b2,22\n3,c,3\n")
    file_table(conn, "f_dup", src, enc_opts="without_header = 'true'")
    err = error_of(conn, "REFRESH TABLE f_dup WAIT")
    assert err.sqlstate == "23505"
    assert err.diag.message_primary == ("refresh of table 'public.f_dup' failed: 1 duplicate key in the source; "
                                        "first: Key (id)=(2)")
    assert rows(conn, "SELECT count(*) FROM f_dup") == [(0,)]
    file_table(conn, "f_dup_ok", src, enc_opts="without_header = 'true'", extra=", on_source_error = 'ignore'")
    write(src / "c.csv", "x,broken,row\n")
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute("REFRESH TABLE f_dup_ok WAIT")
    assert rows(conn, "SELECT * FROM f_dup_ok ORDER BY id") == [(1, "a", 1), (2, "b2", 22), (3, "c", 3)]
    assert any("1 duplicate key in the source; the last row" in n for n in notices)
    assert any("1 source row skipped" in n for n in notices)
    assert "1 source row skipped" in status(conn, "f_dup_ok")["last_error"]


def test_concurrent_refresh_rejected_and_show_status(conn, tidegate: TidegateServer, tmp_path: Path) -> None:
    src = tmp_path / "conc"
    for i in range(4):
        write(src / f"{i}.csv", f"{i},n{i},{i}\n")
    file_table(conn, "f_conc", src, enc_opts="without_header = 'true'")
    file_table(conn, "f_conc2", src, enc_opts="without_header = 'true'")
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute("REFRESH TABLE f_conc")
    assert notices and re.fullmatch(r"refresh \d+ of table 'public.f_conc' started as job job-\d{6}", notices[-1])
    err = error_of(conn, "REFRESH TABLE f_conc")
    assert err.sqlstate == "55000"
    assert err.diag.message_primary == "Table 'public.f_conc' is not in idle state. Current state: REFRESHING"
    conn.execute("REFRESH TABLE f_conc2")  # another table may refresh at the same time
    cur = conn.execute("SHOW REFRESH STATUS")
    assert [d.name for d in cur.description] == [
        "table_schema", "table_name", "current_status", "last_trigger_time", "last_success_time",
        "trigger_interval_secs", "rows_loaded", "rows_inserted", "rows_updated", "rows_deleted", "last_error",
        "skipped_ticks", "gateway"]
    busy = {r[1]: r[2] for r in cur.fetchall()}
    assert busy["f_conc"] in ("REFRESHING", "FINISHING", "IDLE")
    for name in ("f_conc", "f_conc2"):
        wait_until(lambda: status(conn, name)["current_status"] == "IDLE" and status(conn, name)["rows_loaded"] == 4)
    assert rows(conn, "SELECT count(*) FROM f_conc") == [(4,)]


# -- PostgreSQL source ----------------------------------------------------------------------------------

def test_postgres_source(conn, pg_oracle, tmp_path: Path) -> None:
    with psycopg.connect(pg_oracle.dsn, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS public.pg_users")
        pg.execute("CREATE TABLE public.pg_users (id int PRIMARY KEY, name text, score numeric(10,2))")
        pg.execute("INSERT INTO pg_users SELECT g, 'u' || g, g * 1.5 FROM generate_series(1, 50) g")
        conn.execute(f"CREATE TABLE r_pg (id int PRIMARY KEY, name varchar, score numeric(10,2)) WITH ("
                     f"connector = 'postgres', url = '{pg_oracle.url}', source_table = 'public.pg_users', "
                     "refresh_mode = 'FULL_RELOAD', chunk_rows = '20')")
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary))
        conn.execute("REFRESH TABLE r_pg WAIT")
        assert any("loaded chunk 3/3, 50 rows" in n for n in notices)  # partitioned reads
        assert rows(conn, "SELECT count(*), sum(score) FROM r_pg") == [(50, pytest.approx(1912.5))]
        pg.execute("UPDATE pg_users SET name = 'changed' WHERE id = 5")
        pg.execute("DELETE FROM pg_users WHERE id IN (6, 7)")
        pg.execute("INSERT INTO pg_users VALUES (100, 'new', 1)")
        conn.execute("REFRESH TABLE r_pg WAIT")
        st = status(conn, "r_pg")
        assert (st["rows_loaded"], st["rows_inserted"], st["rows_updated"], st["rows_deleted"]) == (49, 1, 1, 2)
        assert rows(conn, "SELECT name FROM r_pg WHERE id IN (5, 100) ORDER BY id") == [("changed",), ("new",)]
    conn.execute("CREATE TABLE r_pg_down (id int PRIMARY KEY) WITH (connector = 'postgres', "
                 "url = 'postgresql://nobody@127.0.0.1:1/nodb', source_table = 'public.t', refresh_mode = 'FULL_RELOAD')")
    err = error_of(conn, "REFRESH TABLE r_pg_down WAIT")
    assert err.sqlstate == "08001" and "source query: SELECT" in err.diag.message_primary
    assert status(conn, "r_pg_down")["current_status"] == "IDLE"


# -- flows ----------------------------------------------------------------------------------------------------

def test_flow_over_refreshable_table_sees_only_the_diff(conn, tmp_path: Path) -> None:
    src = tmp_path / "flow"
    write(src / "a.csv", "".join(f"{i},h{i % 3},2024-01-01 00:00:0{i % 10},{i}\n" for i in range(1, 31)))
    file_table(conn, "f_flow_src", src, enc_opts="without_header = 'true'",
               cols="id int PRIMARY KEY, host text, ts timestamp, v int")
    conn.execute("REFRESH TABLE f_flow_src WAIT")
    conn.execute("CREATE FLOW f_flow SINK TO f_flow_sink EVAL INTERVAL '1 hour' AS "
                 "SELECT host, count(*) AS n FROM f_flow_src GROUP BY host")
    conn.execute("ADMIN FLUSH_FLOW('f_flow')")

    def input_rows() -> int:
        return rows(conn, "SELECT input_rows FROM information_schema.flow_statistics WHERE flow_name = 'f_flow'")[0][0] or 0

    before = input_rows()
    text = (src / "a.csv").read_text().splitlines()
    text = [ln for ln in text if not ln.startswith("30,")]  # delete one row (host h0)
    write(src / "a.csv", "\n".join(text) + "\n")
    conn.execute("REFRESH TABLE f_flow_src WAIT")
    conn.execute("ADMIN FLUSH_FLOW('f_flow')")
    assert rows(conn, "SELECT host, n FROM f_flow_sink ORDER BY host") == [("h0", 9), ("h1", 10), ("h2", 10)]
    assert input_rows() - before <= 1


# -- crash recovery and schedule (own gateway) ---------------------------------------------------------------

@contextlib.contextmanager
def booted(data: Path, pauses: str | None = None) -> Iterator[TidegateServer]:
    """A gateway on ``data`` (``TIDEGATE_REFRESH_TEST_PAUSE`` = ``pauses``) with its Spark up;
    stopped at the end (a test kills it with kill -9 first)."""
    gw = start_tidegate(data, env={"TIDEGATE_REFRESH_TEST_PAUSE": pauses} if pauses else None)
    try:
        gw.wait_for_spark()
        yield gw
    finally:
        gw.stop()


def _history_refresh_commits(location: Path) -> int:
    return sum(1 for h in DeltaTable(str(location)).history() if h.get("operation") == "REFRESH")


def _logged(gw: TidegateServer, text: str) -> bool:
    return any(text in ln for ln in gw.log)


@pytest.mark.long  # CI time: ./tidegate.sh test -m long runs it
def test_kill9_during_load_and_commit_then_schedule(tmp_path: Path) -> None:
    data = tmp_path / "data"
    src, src_b = tmp_path / "src", tmp_path / "src_b"
    for i in range(4):
        write(src / f"{i}.csv", "".join(f"{i * 100 + j},n{j},{j}\n" for j in range(25)))
    write(src_b / "b.csv", "".join(f"{j},b{j},{j}\n" for j in range(10)))
    # boot 1: every staged chunk pauses 2 s and every commit waits 60 s before it starts.
    # kill -9 with k_t in its load (chunk 1 of 4 staged) and k_b loaded, its commit not yet made.
    with booted(data, "chunk:2,commit:60") as gw:
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            file_table(c, "k_b", src_b, enc_opts="without_header = 'true'")
            # chunk_bytes = 1: each file is a chunk of its own, so the load has four steps.
            file_table(c, "k_t", src, enc_opts="without_header = 'true'", extra=", chunk_bytes = '1'")
            loc_t, loc_b = table_location(c, data, "k_t"), table_location(c, data, "k_b")
            c.execute("REFRESH TABLE k_b")
            c.execute("REFRESH TABLE k_t")
            wait_until(lambda: _logged(gw, "public.k_t': loaded chunk 1/4")
                       and _logged(gw, "public.k_b': computing the difference"), timeout=90)
            time.sleep(0.5)
            assert status(c, "k_t")["current_status"] == "REFRESHING"
            assert status(c, "k_b")["current_status"] == "FINISHING"
            assert rows(c, "SELECT count(*) FROM k_b") == [(0,)]
        gw.kill9()
    # boot 2: k_t's load resumes after its staged chunk, k_b's commit is redone; kill -9 right
    # after both Delta commits, before the refresh state records them.
    with booted(data, "committed:60") as gw:
        wait_until(lambda: _logged(gw, "public.k_t' resumes after "), timeout=90)
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            wait_until(lambda: rows(c, "SELECT count(*) FROM k_t") == [(100,)]
                       and rows(c, "SELECT count(*) FROM k_b") == [(10,)], timeout=90)
            assert status(c, "k_t")["current_status"] == "FINISHING"
            assert status(c, "k_b")["current_status"] == "FINISHING"
            assert not _logged(gw, "public.k_t': loaded chunk 1/4")  # chunk 1 was not read again
        gw.kill9()
    assert _history_refresh_commits(loc_t) == 1 and _history_refresh_commits(loc_b) == 1
    # boot 3: both commits are found (Delta app transaction) and not repeated; status back to IDLE.
    with booted(data, "chunk:0.6") as gw:
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            for name, n in (("k_t", 100), ("k_b", 10)):
                st = wait_until(lambda: (s := status(c, name))["current_status"] == "IDLE" and s, timeout=60)
                assert (st["rows_loaded"], st["rows_inserted"], st["rows_updated"], st["rows_deleted"]) == (n, n, 0, 0)
                assert rows(c, f"SELECT count(*) FROM {name}") == [(n,)]
            assert _history_refresh_commits(loc_t) == 1 and _history_refresh_commits(loc_b) == 1
            # Scheduled refresh: every second; each takes > 2 s (4 chunks x 0.6 s), so ticks are skipped.
            file_table(c, "s_t", src, enc_opts="without_header = 'true'",
                       extra=", refresh_interval_sec = '1', chunk_bytes = '1'")
            st = wait_until(lambda: (s := status(c, "s_t"))["last_success_time"] and s["skipped_ticks"] >= 1 and s,
                            timeout=60)
            assert st["trigger_interval_secs"] == 1 and st["rows_loaded"] == 100
            assert rows(c, "SELECT count(*) FROM s_t") == [(100,)]


def test_diff_is_the_same_whichever_join_finds_it() -> None:
    """The refresh difference over every storage type: DuckDB's join and Arrow's fallback agree,
    and both name the files holding the rows that change."""
    from datetime import datetime, timezone
    from decimal import Decimal

    from engine.refresh import FILE_COLUMN, _join_arrow, _join_duckdb, compute_diff

    schema = pa.schema([("k1", pa.int64()), ("k2", pa.string()), ("f", pa.float64()), ("d", pa.decimal128(12, 3)),
                        ("ts", pa.timestamp("us", tz="UTC")), ("b", pa.binary()), ("arr", pa.list_(pa.int32())),
                        ("flag", pa.bool_())])
    ts = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)

    def row(k1, k2, f=1.5, d=Decimal("1.250"), t=ts, b=b"\x00\x01", arr=(1, 2), flag=True):
        return {"k1": k1, "k2": k2, "f": f, "d": d, "ts": t, "b": b, "arr": list(arr) if arr is not None else None,
                "flag": flag}

    def keys(t: pa.Table) -> list[tuple]:
        return sorted(zip(t.column("k1").to_pylist(), t.column("k2").to_pylist()))

    cur = pa.Table.from_pylist([row(1, "a"), row(2, "a", f=float("nan")), row(3, "a", d=None), row(4, "a"),
                                row(5, "a", arr=None), row(6, "a")], schema=schema)
    cur = cur.append_column(FILE_COLUMN, pa.array([0, 0, 1, 2, 3, 4], pa.int32()))
    new = pa.Table.from_pylist([row(1, "a"), row(2, "a", f=float("nan")), row(3, "a", d=Decimal("2.000")),
                                row(5, "a", arr=(3,)), row(6, "a", b=b"\x02"), row(7, "a", flag=None),
                                row(1, "b")], schema=schema)
    arrowable = [n for n in schema.names if n != "arr"]  # Arrow's join cannot carry list columns
    for join, names in ((_join_duckdb, schema.names), (_join_arrow, arrowable)):
        diff = compute_diff(new.select(names), cur.select(names + [FILE_COLUMN]), ["k1", "k2"], join)
        assert keys(diff.inserted) == [(1, "b"), (7, "a")], join.__name__
        # NaN is unchanged for DuckDB (PostgreSQL's float equality); Arrow calls it changed
        changed = [k for k in keys(diff.updated) if k != (2, "a")]
        assert changed == ([(3, "a"), (5, "a"), (6, "a")] if "arr" in names else [(3, "a"), (6, "a")]), join.__name__
        assert diff.deleted.to_pylist() == [{k: v for k, v in row(4, "a").items() if k in names}]
        assert diff.updated.schema == diff.preimages.schema == new.select(names).schema
        assert keys(diff.preimages) == keys(diff.updated)
        pre = {r["k1"]: r for r in diff.preimages.to_pylist()}
        assert pre[3]["d"] is None and pre[6]["b"] == b"\x00\x01"  # the current versions
        assert set(diff.touched) - {0} == ({1, 2, 3, 4} if "arr" in names else {1, 2, 4})
        feed = diff.feed()
        assert sorted(set(feed.column("_change_type").to_pylist())) == ["delete", "insert", "update_postimage",
                                                                        "update_preimage"]
        assert feed.num_rows == diff.inserted.num_rows + 2 * diff.updated.num_rows + diff.deleted.num_rows
    diff = compute_diff(new, cur, ["k1", "k2"])
    assert diff.counts == (2, 3, 1) and diff.touched == [1, 2, 3, 4]
    assert sorted(diff.merge_source().column("__tg_op").to_pylist()) == ["D", "I", "I", "U", "U", "U"]


def test_merge_fallback_applies_the_same_diff(tmp_path: Path) -> None:
    """Tables engine.deltalog does not write (e.g. partitioned) get the diff as a delta-rs merge."""
    from deltalake import write_deltalake

    from engine.refresh import FILE_COLUMN, RefreshManager, compute_diff
    from engine.storage import CDF_CONFIG

    location = str(tmp_path / "merged")
    cur = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})
    write_deltalake(location, cur, partition_by=["name"], configuration=dict(CDF_CONFIG))
    new = pa.table({"id": pa.array([1, 2, 4], pa.int64()), "name": ["a", "B", "d"]})
    diff = compute_diff(new, cur.append_column(FILE_COLUMN, pa.array([0, 1, 2], pa.int32())), ["id"])
    RefreshManager._commit_merge(DeltaTable(location), 9, "tidegate-refresh-1", new, ["id"], diff)
    dt = DeltaTable(location)
    assert sorted(dt.to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == new.to_pylist()
    assert dt.transaction_version("tidegate-refresh-1") == 9
    assert cdf_of_last_commit(Path(location)) == [(2, "update_postimage"), (2, "update_preimage"), (3, "delete"),
                                                  (4, "insert")]
