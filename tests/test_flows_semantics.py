"""Flows keep every sink row (issue 18, part 1), through the wire: DISTINCT flows, flow queries
with CTEs / ORDER BY subqueries / date_bin origins, GreptimeDB's flow options, the catalog's forms,
positional sinks and flows whose source table is dropped and created again.

One gateway for the module. Batching flows use ``EVAL INTERVAL '1 hour'`` so they run only at
creation and on ADMIN FLUSH_FLOW.
"""

from __future__ import annotations

import json
import time

import psycopg
import pytest

from tests.pgoracle import PostgresServer
from tests.tidegate_server import TidegateServer, start_tidegate

HOURLY = "EVAL INTERVAL '1 hour'"


@pytest.fixture(scope="module")
def gw(tmp_path_factory) -> TidegateServer:
    server = start_tidegate(tmp_path_factory.mktemp("flowsem-data"), env={"TIDEGATE_FLOW_DEFAULT_INTERVAL_S": "1"})
    server.wait_for_spark()
    yield server
    server.stop()


@pytest.fixture()
def conn(gw: TidegateServer):
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        yield c


def rows(conn: psycopg.Connection, sql: str) -> list[tuple]:
    return conn.execute(sql).fetchall()


def flush(conn: psycopg.Connection, name: str) -> int:
    return rows(conn, f"ADMIN FLUSH_FLOW('{name}')")[0][0]


def error_of(conn: psycopg.Connection, sql: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    return info.value


def status(conn: psycopg.Connection, flow: str) -> str:
    return rows(conn, f"SHOW FLOW STATUS LIKE '{flow}'")[0][2]


def wait_active(conn: psycopg.Connection, flow: str, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while status(conn, flow).startswith("pending"):
        if time.time() > deadline:
            raise AssertionError(f"flow {flow} still {status(conn, flow)}")
        time.sleep(0.3)


# -- 1. DISTINCT is a grouping --------------------------------------------------------------------------

def test_distinct_flow_keeps_every_value(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE ds_src (a int, b text, ts timestamp TIME INDEX)")
    conn.execute(f"CREATE FLOW ds_one SINK TO ds_one_sink {HOURLY} AS SELECT DISTINCT a FROM ds_src")
    conn.execute(f"CREATE FLOW ds_two SINK TO ds_two_sink {HOURLY} AS SELECT DISTINCT a, b FROM ds_src")
    conn.execute("INSERT INTO ds_src VALUES (20, 'x', '2021-07-01 00:00:00'), (20, 'y', '2021-07-01 00:00:01'), "
                 "(22, 'x', '2021-07-01 00:00:02')")
    flush(conn, "ds_one")
    flush(conn, "ds_two")
    assert rows(conn, "SELECT a FROM ds_one_sink ORDER BY a") == [(20,), (22,)]
    assert rows(conn, "SELECT a, b FROM ds_two_sink ORDER BY a, b") == [(20, "x"), (20, "y"), (22, "x")]
    conn.execute("INSERT INTO ds_src VALUES (23, 'x', '2021-07-01 00:00:03'), (20, 'x', '2021-07-01 00:00:04')")
    flush(conn, "ds_one")
    flush(conn, "ds_two")
    assert rows(conn, "SELECT a FROM ds_one_sink ORDER BY a") == [(20,), (22,), (23,)]
    assert rows(conn, "SELECT a, b FROM ds_two_sink ORDER BY a, b") == [(20, "x"), (20, "y"), (22, "x"), (23, "x")]
    # The distinct columns are the sink's keys, as GROUP BY keys would be.
    ddl = rows(conn, "SHOW CREATE TABLE ds_two_sink")[0][1]
    assert "PRIMARY KEY (a, b)" in ddl
    # A value whose rows are all deleted leaves the sink at the next run.
    conn.execute("DELETE FROM ds_src WHERE a = 22")
    flush(conn, "ds_one")
    assert rows(conn, "SELECT a FROM ds_one_sink ORDER BY a") == [(20,), (23,)]


def test_distinct_flow_with_time_window(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE dw_src (a int, ts timestamp TIME INDEX)")
    conn.execute(f"CREATE FLOW dw_flow SINK TO dw_sink {HOURLY} AS "
                 "SELECT DISTINCT a, date_trunc('minute', ts) AS m FROM dw_src")
    conn.execute("INSERT INTO dw_src VALUES (1, '2021-07-01 00:00:10'), (1, '2021-07-01 00:00:20'), "
                 "(2, '2021-07-01 00:00:30'), (1, '2021-07-01 00:01:00')")
    flush(conn, "dw_flow")
    assert status(conn, "dw_flow") == "active"
    assert rows(conn, "SHOW FLOW STATUS LIKE 'dw_flow'")[0][3].startswith("incremental: date_trunc")
    got = rows(conn, "SELECT a, m::text FROM dw_sink ORDER BY m, a")
    assert got == [(1, "2021-07-01 00:00:00"), (2, "2021-07-01 00:00:00"), (1, "2021-07-01 00:01:00")]
    conn.execute("INSERT INTO dw_src VALUES (3, '2021-07-01 00:00:40')")
    flush(conn, "dw_flow")
    got = rows(conn, "SELECT a, m::text FROM dw_sink ORDER BY m, a")
    assert got == [(1, "2021-07-01 00:00:00"), (2, "2021-07-01 00:00:00"), (3, "2021-07-01 00:00:00"),
                   (1, "2021-07-01 00:01:00")]


# -- 2. queries that failed to parse ---------------------------------------------------------------------

def test_cte_and_ordered_subquery_flows(conn: psycopg.Connection, pg_oracle: PostgresServer) -> None:
    conn.execute("CREATE TABLE cq_src (a int, ts timestamp TIME INDEX)")
    values = "(5, '2021-07-01 00:00:00'), (3, '2021-07-01 00:00:01'), (5, '2021-07-01 00:00:02'), (9, '2021-07-01 00:00:03')"
    conn.execute(f"INSERT INTO cq_src VALUES {values}")
    cte = "WITH w AS (SELECT a, count(*) AS n FROM cq_src GROUP BY a) SELECT a, n FROM w WHERE n >= 1"
    sub = "SELECT a, ts FROM (SELECT a, ts FROM cq_src ORDER BY a DESC) AS s WHERE a > 3"
    conn.execute(f"CREATE FLOW cq_cte SINK TO cq_cte_sink {HOURLY} AS {cte}")
    conn.execute(f"CREATE FLOW cq_sub SINK TO cq_sub_sink {HOURLY} AS {sub}")
    flush(conn, "cq_cte")
    flush(conn, "cq_sub")
    with psycopg.connect(pg_oracle.dsn, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS cq_src")
        pg.execute("CREATE TABLE cq_src (a int, ts timestamp)")
        pg.execute(f"INSERT INTO cq_src VALUES {values}")
        want_cte = sorted(pg.execute(cte).fetchall())
        want_sub = sorted(pg.execute(sub).fetchall())
    assert sorted(rows(conn, "SELECT a, n FROM cq_cte_sink")) == want_cte
    assert sorted(rows(conn, "SELECT a, ts FROM cq_sub_sink")) == want_sub


def test_date_bin_with_origin(conn: psycopg.Connection, pg_oracle: PostgresServer) -> None:
    conn.execute("CREATE TABLE db_src (v int, ts timestamp TIME INDEX)")
    values = ("(1, '2021-07-01 00:00:00'), (2, '2021-07-01 00:00:00.4'), (3, '2021-07-01 00:00:00.6'), "
              "(4, '2021-07-01 00:00:01.7'), (5, '2021-06-30 23:59:59.2')")
    conn.execute(f"INSERT INTO db_src VALUES {values}")
    queries = {
        "db_lit": "SELECT date_bin(INTERVAL '1 second', ts, '2021-07-01 00:00:00.5') AS w, count(*) AS c, sum(v) AS s "
                  "FROM db_src GROUP BY w",
        "db_plain": "SELECT date_bin(INTERVAL '1 second', ts, '2021-07-01 00:00:00') AS w, count(*) AS c, sum(v) AS s "
                    "FROM db_src GROUP BY w",
        "db_expr": "SELECT date_bin(INTERVAL '2 seconds', ts, '2021-07-01 00:00:00'::timestamp + INTERVAL '300 ms') "
                   "AS w, count(*) AS c, sum(v) AS s FROM db_src GROUP BY w",
    }
    for name, q in queries.items():
        conn.execute(f"CREATE FLOW {name} SINK TO {name}_sink {HOURLY} AS {q}")
    conn.execute("INSERT INTO db_src VALUES (6, '2021-07-01 00:00:02.55')")
    with psycopg.connect(pg_oracle.dsn, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS db_src")
        pg.execute("CREATE TABLE db_src (v int, ts timestamp)")
        pg.execute(f"INSERT INTO db_src VALUES {values}, (6, '2021-07-01 00:00:02.55')")
        for name, q in queries.items():
            flush(conn, name)
            want = sorted(pg.execute(q).fetchall())
            got = sorted(rows(conn, f"SELECT w, c, s FROM {name}_sink"))
            assert got == want, name
    # A literal origin keeps the flow incremental (windows keyed on the origin).
    assert rows(conn, "SHOW FLOW STATUS LIKE 'db_lit'")[0][3] == \
        "incremental: date_bin windows of 1 s on public.db_src.ts"


# -- 3. GreptimeDB's flow options ----------------------------------------------------------------------

def test_greptime_flow_options(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE op_src (host text, ts timestamp TIME INDEX, PRIMARY KEY (host))")
    conn.execute("INSERT INTO op_src VALUES ('a', '2021-07-01 00:00:00'), ('b', '2021-07-01 00:00:01')")
    conn.execute(f"CREATE FLOW op_flow SINK TO op_sink {HOURLY} WITH (experimental_enable_incremental_read = 'true') "
                 "AS SELECT host, count(*) AS c FROM op_src GROUP BY host")
    flush(conn, "op_flow")
    assert rows(conn, "SELECT host, c FROM op_sink ORDER BY host") == [("a", 1), ("b", 1)]
    ddl = rows(conn, "SHOW CREATE FLOW op_flow")[0][1]
    assert "WITH (experimental_enable_incremental_read = 'true')" in ddl
    opts = rows(conn, "SELECT options FROM information_schema.flows WHERE flow_name = 'op_flow'")[0][0]
    assert opts == '{"experimental_enable_incremental_read":"true","flow_type":"batching"}'
    conn.execute(f"CREATE FLOW op_off SINK TO op_off_sink {HOURLY} WITH (EXPERIMENTAL_ENABLE_INCREMENTAL_READ = off) "
                 "AS SELECT host, count(*) AS c FROM op_src GROUP BY host")
    opts = rows(conn, "SELECT options FROM information_schema.flows WHERE flow_name = 'op_off'")[0][0]
    assert json.loads(opts) == {"experimental_enable_incremental_read": "false", "flow_type": "batching"}


# -- 4. catalog forms ---------------------------------------------------------------------------------------

def test_information_schema_flows_forms(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE cf_src (host text, ts timestamp TIME INDEX, PRIMARY KEY (host))")
    conn.execute(f"CREATE FLOW cf_flow SINK TO cf_sink {HOURLY} AS SELECT host, count(*) AS c FROM cf_src GROUP BY host")
    conn.execute(f"CREATE FLOW cf_noted SINK TO cf_noted_sink {HOURLY} COMMENT 'noted' AS "
                 "SELECT host, count(*) AS c FROM cf_src GROUP BY host")
    got = rows(conn, "SELECT flow_name, options, comment, state_size, source_table_ids, flownode_ids "
                     "FROM information_schema.flows WHERE flow_name LIKE 'cf%' ORDER BY flow_name")
    oid = rows(conn, "SELECT 'cf_src'::regclass::oid")[0][0]
    assert [g[:4] for g in got] == [("cf_flow", '{"flow_type":"batching"}', "", None),
                                    ("cf_noted", '{"flow_type":"batching"}', "noted", None)]
    assert got[0][4] == f"[{oid}]"
    assert " " not in got[0][5]


def test_instant_ttl_source_streams(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE it_src (host text, v int, ts timestamp TIME INDEX) WITH ('ttl' = 'instant')")
    conn.execute("CREATE FLOW it_flow SINK TO it_sink AS SELECT host, v, ts FROM it_src WHERE v > 0")
    opts = rows(conn, "SELECT options FROM information_schema.flows WHERE flow_name = 'it_flow'")[0][0]
    assert opts == '{"flow_type":"streaming"}'
    # EVAL INTERVAL alone would pick batching for an ordinary source; not for an instant one.
    conn.execute(f"CREATE FLOW it_eval SINK TO it_eval_sink {HOURLY} AS SELECT host, v, ts FROM it_src")
    assert rows(conn, "SELECT options FROM information_schema.flows WHERE flow_name = 'it_eval'")[0][0] == \
        '{"flow_type":"streaming"}'
    err = error_of(conn, "CREATE FLOW it_batch SINK TO it_batch_sink WITH (flow_type = 'batching') AS "
                         "SELECT host, v, ts FROM it_src")
    assert err.sqlstate == "0A000"
    assert "has ttl = 'instant', so its flows must run in streaming mode" in err.diag.message_primary
    err = error_of(conn, "CREATE FLOW it_total SINK TO it_total_sink AS SELECT count(*) AS n FROM it_src")
    assert err.sqlstate == "0A000" and "cannot run as a streaming flow" in err.diag.message_primary
    assert rows(conn, "SHOW FLOWS LIKE 'it_%'") == [("it_eval",), ("it_flow",)]


# -- 5. sinks matched by position -------------------------------------------------------------------------

def test_existing_sink_matched_by_position(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE ps_src (host text, v int, ts timestamp TIME INDEX, PRIMARY KEY (host))")
    conn.execute("INSERT INTO ps_src VALUES ('a', 1, '2021-07-01 00:00:10'), ('a', 2, '2021-07-01 00:00:20'), "
                 "('b', 5, '2021-07-01 00:01:10')")
    conn.execute("CREATE TABLE ps_sink (h text, total bigint, win timestamp TIME INDEX, update_at timestamp(3), "
                 "PRIMARY KEY (h))")
    # Output names omitted (sum, date_bin) or different from the sink's: matched in order.
    conn.execute(f"CREATE FLOW ps_flow SINK TO ps_sink {HOURLY} AS SELECT host, sum(v), "
                 "date_bin(INTERVAL '1 minute', ts) FROM ps_src GROUP BY host, 3")
    flush(conn, "ps_flow")
    assert rows(conn, "SELECT h, total, win::text, update_at IS NOT NULL FROM ps_sink ORDER BY h") == [
        ("a", 3, "2021-07-01 00:00:00", True), ("b", 5, "2021-07-01 00:01:00", True)]
    assert rows(conn, "SHOW FLOW STATUS LIKE 'ps_flow'")[0][3].startswith("incremental: date_bin windows of 60 s")
    conn.execute("INSERT INTO ps_src VALUES ('a', 10, '2021-07-01 00:00:30')")
    flush(conn, "ps_flow")
    assert rows(conn, "SELECT h, total FROM ps_sink ORDER BY h") == [("a", 13), ("b", 5)]
    # Widening fits (int -> bigint); a narrower or other type does not.
    conn.execute("CREATE TABLE ps_bad (h int, total bigint, win timestamp TIME INDEX)")
    err = error_of(conn, f"CREATE FLOW ps_bad_flow SINK TO ps_bad AS SELECT host, sum(v), "
                         "date_bin(INTERVAL '1 minute', ts) FROM ps_src GROUP BY host, 3")
    assert err.sqlstate == "42P16"
    assert "type clash: position 1: host (flow: text) into h (sink: integer)" in err.diag.message_primary
    conn.execute("CREATE TABLE ps_more (h text, total bigint, extra int, win timestamp TIME INDEX)")
    err = error_of(conn, f"CREATE FLOW ps_bad_flow SINK TO ps_more AS SELECT host, sum(v), "
                         "date_bin(INTERVAL '1 minute', ts) FROM ps_src GROUP BY host, 3")
    assert err.sqlstate == "42P16"
    assert "the sink has 4 column(s) for the flow's 3 output column(s)" in err.diag.message_primary


# -- 6. dropping a source keeps its flows -----------------------------------------------------------------

def test_drop_source_keeps_flow_pending(conn: psycopg.Connection) -> None:
    create = "CREATE TABLE dp_src (a int, ts timestamp TIME INDEX)"
    conn.execute(create)
    conn.execute(f"CREATE FLOW dp_flow SINK TO dp_sink {HOURLY} AS SELECT DISTINCT a FROM dp_src")
    conn.execute(f"CREATE FLOW dp_win SINK TO dp_win_sink {HOURLY} AS SELECT date_bin(INTERVAL '1 minute', ts) AS w, "
                 "count(*) AS c FROM dp_src GROUP BY w")
    conn.execute("INSERT INTO dp_src VALUES (1, '2021-07-01 00:00:00'), (2, '2021-07-01 00:01:00')")
    flush(conn, "dp_flow")
    flush(conn, "dp_win")
    assert rows(conn, "SELECT a FROM dp_sink ORDER BY a") == [(1,), (2,)]
    with conn.transaction():
        err = error_of(conn, "DROP TABLE dp_src")
    assert err.sqlstate == "25001"
    conn.execute("DROP TABLE dp_src")
    assert status(conn, "dp_flow") == "pending: waiting for public.dp_src"
    assert status(conn, "dp_win") == "pending: waiting for public.dp_src"
    assert rows(conn, "SELECT source_table_names FROM information_schema.flows WHERE flow_name = 'dp_flow'") == [("",)]
    err = error_of(conn, "ADMIN FLUSH_FLOW('dp_flow')")
    assert err.sqlstate == "55000"
    # The sink keeps its rows while the flow waits.
    assert rows(conn, "SELECT a FROM dp_sink ORDER BY a") == [(1,), (2,)]
    conn.execute(create)
    conn.execute("INSERT INTO dp_src VALUES (7, '2021-07-01 00:05:00'), (8, '2021-07-01 00:05:30'), "
                 "(7, '2021-07-01 00:06:00')")
    wait_active(conn, "dp_flow")
    wait_active(conn, "dp_win")
    flush(conn, "dp_flow")
    flush(conn, "dp_win")
    # Rebuilt from the new table's rows.
    assert rows(conn, "SELECT a FROM dp_sink ORDER BY a") == [(7,), (8,)]
    assert rows(conn, "SELECT w::text, c FROM dp_win_sink ORDER BY w") == [
        ("2021-07-01 00:05:00", 2), ("2021-07-01 00:06:00", 1)]
    conn.execute("INSERT INTO dp_src VALUES (9, '2021-07-01 00:06:10')")
    flush(conn, "dp_flow")
    flush(conn, "dp_win")
    assert rows(conn, "SELECT a FROM dp_sink ORDER BY a") == [(7,), (8,), (9,)]
    assert rows(conn, "SELECT w::text, c FROM dp_win_sink ORDER BY w") == [
        ("2021-07-01 00:05:00", 2), ("2021-07-01 00:06:00", 2)]
    # CASCADE still drops the flows.
    conn.execute("DROP TABLE dp_src CASCADE")
    assert rows(conn, "SHOW FLOWS LIKE 'dp_%'") == []


def test_drop_source_notice(gw: TidegateServer) -> None:
    notices: list[str] = []
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        c.add_notice_handler(lambda d: notices.append(d.message_primary))
        c.execute("CREATE TABLE dn_src (a int, ts timestamp TIME INDEX)")
        c.execute(f"CREATE FLOW dn_flow SINK TO dn_sink {HOURLY} AS SELECT DISTINCT a FROM dn_src")
        c.execute("DROP TABLE dn_src")
        assert notices == ["flow dn_flow is pending until table public.dn_src exists again"]
        c.execute("DROP FLOW dn_flow")


def test_source_columns_change_rebuilds_batching_sink(gw: TidegateServer) -> None:
    """A source column renamed and one of its old name added: the flow's query now reads the new
    column, so every window's sink rows are its recomputation, the windows no row touched since
    included (they were built from the renamed column's values)."""
    with psycopg.connect(gw.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE sc_src (host text, v int, ts timestamp TIME INDEX, PRIMARY KEY (host))")
        query = ("SELECT date_bin(INTERVAL '1 minute', ts) AS w, count(v) AS n, sum(v) AS s "
                 "FROM sc_src GROUP BY w")
        conn.execute(f"CREATE FLOW sc_flow SINK TO sc_sink {HOURLY} AS {query}")
        conn.execute("INSERT INTO sc_src VALUES ('a', 1, '2021-07-01 00:00:10'), ('b', 2, '2021-07-01 00:01:10')")
        flush(conn, "sc_flow")
        assert rows(conn, "SELECT w::text, n, s FROM sc_sink ORDER BY w") == [
            ("2021-07-01 00:00:00", 1, 1), ("2021-07-01 00:01:00", 1, 2)]
        conn.execute("ALTER TABLE sc_src RENAME COLUMN v TO v_old")
        conn.execute("ALTER TABLE sc_src ADD COLUMN v int")
        conn.execute("INSERT INTO sc_src (host, ts, v) VALUES ('c', '2021-07-01 00:02:10', 30)")
        flush(conn, "sc_flow")
        expected = rows(conn, f"SELECT w::text, n, s FROM ({query}) q ORDER BY w")
        assert expected == [("2021-07-01 00:00:00", 0, None), ("2021-07-01 00:01:00", 0, None),
                            ("2021-07-01 00:02:00", 1, 30)]
        assert rows(conn, "SELECT w::text, n, s FROM sc_sink ORDER BY w") == expected
        # A DROP and ADD of one name (same type: the values are new), then one window touched: still exact.
        conn.execute("ALTER TABLE sc_src DROP COLUMN v")
        conn.execute("ALTER TABLE sc_src ADD COLUMN v int")
        conn.execute("UPDATE sc_src SET v = 5 WHERE host = 'a'")
        flush(conn, "sc_flow")
        assert rows(conn, "SELECT w::text, n, s FROM sc_sink ORDER BY w") == \
            rows(conn, f"SELECT w::text, n, s FROM ({query}) q ORDER BY w") == [
                ("2021-07-01 00:00:00", 1, 5), ("2021-07-01 00:01:00", 0, None), ("2021-07-01 00:02:00", 0, None)]
        conn.execute("DROP FLOW sc_flow")
