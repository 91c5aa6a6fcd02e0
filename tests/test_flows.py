"""Flows, part 1, through the wire: statements, options, errors, sink rules, batch runs, pending
flows, INFORMATION_SCHEMA views, failures and restart.

One gateway for the module (its own data dir, so it can be restarted at the end). Flows whose
run counts are asserted use ``EVAL INTERVAL '1 hour'``: after the first run at creation they only
run on ADMIN FLUSH_FLOW, which makes the counts exact.
"""

from __future__ import annotations

import json
import time
from datetime import datetime

import psycopg
import pytest

from tests.tidegate_server import TidegateServer, start_tidegate

HOURLY = "EVAL INTERVAL '1 hour'"


@pytest.fixture(scope="module")
def gw(tmp_path_factory) -> TidegateServer:
    server = start_tidegate(tmp_path_factory.mktemp("flows-data"), env={"TIDEGATE_FLOW_DEFAULT_INTERVAL_S": "1"})
    server.wait_for_spark()
    yield server
    server.stop()


@pytest.fixture()
def conn(gw: TidegateServer):
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        yield c


def rows(conn: psycopg.Connection, sql: str) -> list[tuple]:
    return conn.execute(sql).fetchall()


def try_rows(conn: psycopg.Connection, sql: str) -> list[tuple] | None:
    """Rows, or None while the relation does not exist yet (polling a sink being created)."""
    try:
        return rows(conn, sql)
    except psycopg.errors.UndefinedTable:
        return None


def flush(conn: psycopg.Connection, name: str) -> int:
    return rows(conn, f"ADMIN FLUSH_FLOW('{name}')")[0][0]


def error_of(conn: psycopg.Connection, sql: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    return info.value


def wait_until(fn, timeout: float = 60.0, interval: float = 0.3):
    deadline = time.time() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(interval)


BIN = "date_bin(INTERVAL '1 minute', ts, '2000-01-01 00:00:00'::timestamp)"


def make_source(conn: psycopg.Connection, name: str) -> None:
    conn.execute(f"CREATE TABLE {name} (host text, ts timestamp TIME INDEX, v double precision, PRIMARY KEY (host))")


# -- sinks ------------------------------------------------------------------------------------------

def test_auto_sink_and_incremental_windows(conn: psycopg.Connection) -> None:
    make_source(conn, "m_src")
    conn.execute("INSERT INTO m_src VALUES ('a', '2024-01-01 00:00:10', 1), ('b', '2024-01-01 00:00:20', 2), "
                 "('a', '2024-01-01 00:01:10', 3), ('a', '2024-01-01 00:02:10', 4)")
    conn.execute(f"CREATE FLOW m_flow SINK TO m_sink {HOURLY} AS "
                 f"SELECT host, {BIN} AS w, count(*) AS c, sum(v) AS s FROM m_src GROUP BY host, w")
    flush(conn, "m_flow")
    ddl = rows(conn, "SHOW CREATE TABLE m_sink")[0][1]
    assert "w timestamp without time zone NOT NULL" in ddl
    assert "TIME INDEX (w)" in ddl and "PRIMARY KEY (host)" in ddl
    assert "update_at timestamp(3) without time zone" in ddl
    assert "COMMENT 'Auto created table by flow engine'" in ddl
    assert rows(conn, "SELECT host, w, c, s FROM m_sink ORDER BY host, w") == [
        ("a", datetime(2024, 1, 1, 0, 0), 1, 1.0), ("a", datetime(2024, 1, 1, 0, 1), 1, 3.0),
        ("a", datetime(2024, 1, 1, 0, 2), 1, 4.0), ("b", datetime(2024, 1, 1, 0, 0), 1, 2.0)]
    before = dict(((h, w), u) for h, w, u in rows(conn, "SELECT host, w, update_at FROM m_sink"))
    time.sleep(0.01)
    # One window changes: a new group appears in it; the others are not re-evaluated.
    conn.execute("INSERT INTO m_src VALUES ('c', '2024-01-01 00:01:30', 5)")
    assert flush(conn, "m_flow") == 2  # the two rows of window 00:01
    after = dict(((h, w), u) for h, w, u in rows(conn, "SELECT host, w, update_at FROM m_sink"))
    assert after[("a", datetime(2024, 1, 1, 0, 0))] == before[("a", datetime(2024, 1, 1, 0, 0))]
    assert after[("a", datetime(2024, 1, 1, 0, 2))] == before[("a", datetime(2024, 1, 1, 0, 2))]
    assert after[("a", datetime(2024, 1, 1, 0, 1))] > before[("a", datetime(2024, 1, 1, 0, 1))]
    # A group that disappears from a window is deleted from the sink; an updated one replaced.
    conn.execute("DELETE FROM m_src WHERE host = 'b'")
    conn.execute("INSERT INTO m_src VALUES ('a', '2024-01-01 00:02:10', 40)")
    flush(conn, "m_flow")
    expect = rows(conn, f"SELECT host, {BIN} AS w, count(*), sum(v) FROM m_src GROUP BY 1, 2 ORDER BY 1, 2")
    assert rows(conn, "SELECT host, w, c, s FROM m_sink ORDER BY host, w") == expect
    assert ("b", datetime(2024, 1, 1, 0, 0)) not in {(h, w) for h, w, *_ in expect}
    status = rows(conn, "SHOW FLOW STATUS LIKE 'm_flow'")
    assert status[0][0] == "m_flow" and status[0][2] == "active"
    assert status[0][3].startswith("incremental: date_bin windows of 60 s on public.m_src.ts")


def test_full_recompute_and_placeholder_sink(conn: psycopg.Connection) -> None:
    make_source(conn, "p_src")
    conn.execute("INSERT INTO p_src VALUES ('a', '2024-01-01', 1), ('b', '2024-01-02', 2), ('a', '2024-01-03', 3)")
    conn.execute(f"CREATE FLOW p_flow SINK TO p_sink {HOURLY} AS SELECT host, count(*) AS n FROM p_src GROUP BY host")
    flush(conn, "p_flow")
    ddl = rows(conn, "SHOW CREATE TABLE p_sink")[0][1]
    assert "__ts_placeholder timestamp(3) without time zone NOT NULL" in ddl
    assert "TIME INDEX (__ts_placeholder)" in ddl and "PRIMARY KEY (host)" in ddl
    assert rows(conn, "SELECT host, n, __ts_placeholder FROM p_sink ORDER BY host") == [
        ("a", 2, datetime(1970, 1, 1)), ("b", 1, datetime(1970, 1, 1))]
    conn.execute("DELETE FROM p_src WHERE host = 'b'")
    flush(conn, "p_flow")
    assert rows(conn, "SELECT host, n FROM p_sink ORDER BY host") == [("a", 2)]
    status = rows(conn, "SHOW FLOW STATUS LIKE 'p_flow'")[0]
    assert status[3] == "full recompute: no timestamp column among the GROUP BY keys"


def test_non_aggregating_flow_sink(conn: psycopg.Connection) -> None:
    make_source(conn, "n_src")
    conn.execute("INSERT INTO n_src VALUES ('a', '2024-01-01 00:00:01', 1), ('b', '2024-01-01 00:00:02', 5)")
    conn.execute(f"CREATE FLOW n_flow SINK TO n_sink {HOURLY} AS SELECT host, ts, v * 2 AS v2 FROM n_src WHERE v > 2")
    flush(conn, "n_flow")
    ddl = rows(conn, "SHOW CREATE TABLE n_sink")[0][1]
    assert "TIME INDEX (ts)" in ddl and "PRIMARY KEY" not in ddl and "update_at" in ddl
    assert rows(conn, "SELECT host, ts, v2 FROM n_sink") == [("b", datetime(2024, 1, 1, 0, 0, 2), 10.0)]
    conn.execute("INSERT INTO n_src VALUES ('c', '2024-01-01 00:00:03', 7)")
    assert flush(conn, "n_flow") == 1
    conn.execute("DELETE FROM n_src WHERE host = 'b'")
    flush(conn, "n_flow")
    assert rows(conn, "SELECT host, v2 FROM n_sink ORDER BY ts") == [("c", 14.0)]


def test_sinks_written_on_spark_hold_what_collected_sinks_hold(conn: psycopg.Connection, gw: TidegateServer) -> None:
    """WITH (spark_writes = 'on'): each run's sink commit is Delta Lake's MERGE on Spark carrying the
    flow's app transaction (issue 22); windows re-evaluated, groups that vanish deleted, and row for
    row what the same flow with 'off' (collected, merged by delta-rs) keeps, flush counts alike."""
    from deltalake import DeltaTable

    make_source(conn, "sw_src")
    conn.execute("INSERT INTO sw_src SELECT 'h' || (g % 7), TIMESTAMP '2024-01-01' + g * INTERVAL '7 seconds', g "
                 "FROM generate_series(1, 3000) g")
    queries = {"agg": f"SELECT host, {BIN} AS w, count(*) AS c, sum(v) AS s FROM sw_src GROUP BY host, w",
               "all": "SELECT host, count(*) AS n, max(v) AS top FROM sw_src GROUP BY host",
               "rows": "SELECT host, ts, v * 2 AS v2 FROM sw_src WHERE v > 100"}
    for name, query in queries.items():
        for mode in ("on", "off"):
            conn.execute(f"CREATE FLOW sw_{name}_{mode} SINK TO sw_{name}_{mode}_sink {HOURLY} "
                         f"WITH (spark_writes = '{mode}') AS {query}")

    def same_sinks(step: str) -> None:
        for name in queries:
            counts = {mode: flush(conn, f"sw_{name}_{mode}") for mode in ("on", "off")}
            assert counts["on"] == counts["off"], (step, name, counts)
            got = {mode: rows(conn, f"SELECT * FROM sw_{name}_{mode}_sink ORDER BY 1, 2") for mode in ("on", "off")}
            strip = [i for i, c in enumerate(rows(conn, f"SELECT column_name FROM information_schema.columns "
                                                        f"WHERE table_name = 'sw_{name}_on_sink' ORDER BY ordinal_position"))
                     if c[0] == "update_at"]
            on, off = ([tuple(v for i, v in enumerate(r) if i not in strip) for r in got[m]] for m in ("on", "off"))
            assert on == off and on, (step, name)
            (path,) = conn.execute("SELECT pg_relation_filepath(%s)", (f"sw_{name}_on_sink",)).fetchone()
            last = DeltaTable(str(gw.data_dir / path)).history(1)[0]
            assert last["operation"] == "MERGE" and str(last.get("engineInfo", "")).startswith("Apache-Spark"), last
            log = sorted((gw.data_dir / path / "_delta_log").glob("*.json"))[-1].read_text()
            assert '"txn"' in log and "tidegate-flow-" in log, (step, name)

    same_sinks("first run")
    conn.execute("INSERT INTO sw_src VALUES ('new', '2024-01-01 00:03:30', 5000), ('h1', '2024-01-01 00:00:07', -1)")
    conn.execute("DELETE FROM sw_src WHERE host = 'h3' AND ts < '2024-01-01 01:00'")
    conn.execute("UPDATE sw_src SET v = v + 1000 WHERE ts BETWEEN '2024-01-01 02:00' AND '2024-01-01 02:10'")
    same_sinks("after inserts, deletes and updates")
    agg = rows(conn, "SELECT host, w, c, s FROM sw_agg_on_sink ORDER BY host, w")
    assert agg == rows(conn, f"SELECT host, {BIN} AS w, count(*), sum(v) FROM sw_src GROUP BY 1, 2 ORDER BY 1, 2")
    assert not any(h == "h3" and w < datetime(2024, 1, 1, 1) for h, w, *_ in agg)
    for mode in ("on", "off"):  # a NULL for a NOT NULL sink column: 23502 either way, nothing written
        conn.execute(f"CREATE TABLE sw_nn_{mode} (host text, w timestamp TIME INDEX, s double precision NOT NULL, "
                     "PRIMARY KEY (host))")
        conn.execute(f"CREATE FLOW sw_nn_{mode}_flow SINK TO sw_nn_{mode} {HOURLY} WITH (spark_writes = '{mode}') AS "
                     f"SELECT host, {BIN} AS w, sum(v) FILTER (WHERE v > 1e9) AS s FROM sw_src GROUP BY host, w")
        assert error_of(conn, f"ADMIN FLUSH_FLOW('sw_nn_{mode}_flow')").sqlstate == "23502", mode
        assert rows(conn, f"SELECT count(*) FROM sw_nn_{mode}") == [(0,)]
        conn.execute(f"DROP FLOW sw_nn_{mode}_flow")
        conn.execute(f"DROP TABLE sw_nn_{mode}")
    err = error_of(conn, f"CREATE FLOW sw_bad SINK TO sw_bad_sink WITH (spark_writes = 'sometimes') AS {queries['all']}")
    assert err.sqlstate == "22023"
    for name in queries:
        for mode in ("on", "off"):
            conn.execute(f"DROP FLOW sw_{name}_{mode}")
            conn.execute(f"DROP TABLE sw_{name}_{mode}_sink")


def test_null_group_key_updates_its_sink_row(conn: psycopg.Connection) -> None:
    """A NULL group key is one key (as in GROUP BY): a later run replaces its row, never adds one."""
    conn.execute("CREATE TABLE nk_src (host text, ts timestamp NOT NULL, v double precision)")
    conn.execute("INSERT INTO nk_src VALUES (NULL, '2024-01-01 00:00:10', 1), ('a', '2024-01-01 00:00:20', 2)")
    conn.execute(f"CREATE FLOW nk_flow SINK TO nk_sink {HOURLY} AS "
                 f"SELECT host, {BIN} AS w, count(*) AS c FROM nk_src GROUP BY host, w")
    flush(conn, "nk_flow")
    conn.execute("INSERT INTO nk_src VALUES (NULL, '2024-01-01 00:00:30', 3)")
    assert flush(conn, "nk_flow") == 2
    assert rows(conn, "SELECT host, w, c FROM nk_sink ORDER BY host NULLS FIRST") == [
        (None, datetime(2024, 1, 1), 2), ("a", datetime(2024, 1, 1), 1)]


def test_existing_sink_schema_check(conn: psycopg.Connection) -> None:
    make_source(conn, "k_src")
    conn.execute("CREATE TABLE k_ok (host text, w timestamp TIME INDEX, c bigint, update_at timestamp(3), "
                 "PRIMARY KEY (host))")
    conn.execute(f"CREATE FLOW k_flow SINK TO k_ok {HOURLY} AS SELECT host, {BIN} AS w, count(*) AS c "
                 "FROM k_src GROUP BY host, w")
    conn.execute("INSERT INTO k_src VALUES ('a', '2024-01-01 00:00:10', 1)")
    flush(conn, "k_flow")
    assert rows(conn, "SELECT host, c FROM k_ok") == [("a", 1)]
    conn.execute("CREATE TABLE k_bad (host int, w timestamp TIME INDEX, extra text)")
    err = error_of(conn, f"CREATE FLOW k_bad_flow SINK TO k_bad AS SELECT host, {BIN} AS w, count(*) AS c "
                         "FROM k_src GROUP BY host, w")
    assert err.sqlstate == "42P16"
    msg = str(err.diag.message_primary)
    assert 'sink table "public.k_bad" does not match the output of the flow' in msg
    assert "flow output columns: host text, w timestamp without time zone, c bigint" in msg
    assert "sink columns: host integer, w timestamp without time zone, extra text" in msg
    # "c" is not a sink column: matched by position, where host and c do not fit.
    assert "missing in sink: c" not in msg and "matched by position (the names differ)" in msg
    assert ("type clash: position 1: host (flow: text) into host (sink: integer); "
            "position 3: c (flow: bigint) into extra (sink: text)") in msg
    # Every output name is a sink column: matched by name, an extra sink column is refused.
    conn.execute("CREATE TABLE k_extra (host text, w timestamp TIME INDEX, c bigint, extra text)")
    err = error_of(conn, f"CREATE FLOW k_bad_flow SINK TO k_extra AS SELECT host, {BIN} AS w, count(*) AS c "
                         "FROM k_src GROUP BY host, w")
    assert err.sqlstate == "42P16" and "extra in sink: extra" in str(err.diag.message_primary)
    conn.execute("CREATE TABLE k_few (host text, w timestamp TIME INDEX)")
    err = error_of(conn, f"CREATE FLOW k_bad_flow SINK TO k_few AS SELECT host, {BIN} AS w, count(*) AS c "
                         "FROM k_src GROUP BY host, w")
    assert err.sqlstate == "42P16"
    assert ("missing in sink: c; matched by position (the names differ), the sink has 2 column(s) for the "
            "flow's 3 output column(s)") in str(err.diag.message_primary)
    assert rows(conn, "SHOW FLOWS LIKE 'k_bad%'") == []


def test_join_flow_and_dimension_change(conn: psycopg.Connection) -> None:
    make_source(conn, "j_src")
    conn.execute("CREATE TABLE j_dim (host text PRIMARY KEY, region text)")
    conn.execute("INSERT INTO j_dim VALUES ('a', 'eu'), ('b', 'us')")
    conn.execute("INSERT INTO j_src VALUES ('a', '2024-01-01 00:00:10', 1), ('b', '2024-01-01 00:00:20', 2)")
    conn.execute(f"CREATE FLOW j_flow SINK TO j_sink {HOURLY} AS SELECT d.region, {BIN.replace('ts', 's.ts', 1)} AS w, "
                 "sum(s.v) AS total FROM j_src s JOIN j_dim d ON s.host = d.host GROUP BY d.region, w")
    flush(conn, "j_flow")
    assert rows(conn, "SELECT region, total FROM j_sink ORDER BY region") == [("eu", 1.0), ("us", 2.0)]
    conn.execute("UPDATE j_dim SET region = 'eu' WHERE host = 'b'")
    flush(conn, "j_flow")
    assert rows(conn, "SELECT region, total FROM j_sink ORDER BY region") == [("eu", 3.0)]


def test_expire_after_leaves_old_windows(conn: psycopg.Connection) -> None:
    make_source(conn, "e_src")
    conn.execute("INSERT INTO e_src VALUES ('old', '2020-01-01 00:00:00', 1)")
    conn.execute(f"CREATE FLOW e_flow SINK TO e_sink EXPIRE AFTER '1h' {HOURLY} AS "
                 "SELECT date_trunc('hour', ts) AS h, count(*) AS c FROM e_src GROUP BY date_trunc('hour', ts)")
    flush(conn, "e_flow")
    assert rows(conn, "SELECT count(*) FROM e_sink") == [(0,)]
    conn.execute("INSERT INTO e_src VALUES ('new', now()::timestamp, 1), ('old2', '2020-01-01 00:00:01', 1)")
    assert flush(conn, "e_flow") == 1
    assert rows(conn, "SELECT c FROM e_sink") == [(1,)]
    assert rows(conn, "SELECT expire_after FROM information_schema.flows WHERE flow_name = 'e_flow'") == [(3600,)]


def test_eval_interval_and_default_cadence_run_without_flush(conn: psycopg.Connection) -> None:
    make_source(conn, "c_src")
    conn.execute("CREATE FLOW c_flow SINK TO c_sink EVAL INTERVAL '1 s' AS "
                 f"SELECT {BIN} AS w, count(*) AS c FROM c_src GROUP BY w")
    conn.execute("CREATE FLOW c_flow2 SINK TO c_sink2 WITH (flow_type = 'batching') AS "
                 f"SELECT {BIN} AS w, count(*) AS c FROM c_src GROUP BY w")
    conn.execute("INSERT INTO c_src VALUES ('a', '2024-01-01 00:00:10', 1), ('b', '2024-01-01 00:00:20', 1)")
    wait_until(lambda: rows(conn, "SELECT c FROM c_sink") == [(2,)])
    wait_until(lambda: rows(conn, "SELECT c FROM c_sink2") == [(2,)])


# -- statements and errors --------------------------------------------------------------------------

def test_statement_errors(conn: psycopg.Connection) -> None:
    make_source(conn, "x_src")
    good = f"SELECT host, {BIN} AS w, count(*) AS c FROM x_src GROUP BY host, w"
    conn.execute(f"CREATE FLOW x_flow SINK TO x_sink {HOURLY} AS {good}")
    cases = [
        (f"CREATE FLOW x_flow SINK TO x_sink AS {good}", "42710", 'flow "x_flow" already exists'),
        ("DROP FLOW x_nope", "42704", 'flow "x_nope" does not exist'),
        ("SHOW CREATE FLOW x_nope", "42704", 'flow "x_nope" does not exist'),
        ("ADMIN FLUSH_FLOW('x_nope')", "42704", 'flow "x_nope" does not exist'),
        ("COMMENT ON FLOW x_nope IS 'c'", "42704", 'flow "x_nope" does not exist'),
        (f"CREATE OR REPLACE FLOW IF NOT EXISTS x_flow SINK TO x_sink AS {good}", "42601",
         "CREATE OR REPLACE FLOW cannot be combined with IF NOT EXISTS"),
        (f"CREATE FLOW x2 SINK TO x2s WITH (colour = 'red') AS {good}", "22023",
         'unrecognized flow option "colour"; supported options: defer_on_missing_source, '
         'experimental_enable_incremental_read, flow_type, spark_writes'),
        (f"CREATE FLOW x2 SINK TO x2s WITH (experimental_enable_incremental_read = 'sometimes') AS {good}", "22023",
         'invalid value for flow option "experimental_enable_incremental_read": "sometimes" (expected true or false)'),
        (f"CREATE FLOW x2 SINK TO x2s WITH (defer_on_missing_source = 'maybe') AS {good}", "22023",
         'invalid value for flow option "defer_on_missing_source": "maybe" (expected true or false)'),
        (f"CREATE FLOW x2 SINK TO x2s WITH (flow_type = 'magic') AS {good}", "22023",
         'invalid value for flow option "flow_type": "magic" (expected \'batching\' or \'streaming\')'),
        (f"CREATE FLOW x2 SINK TO x2s EXPIRE AFTER '1 month' AS {good}", "22023",
         'EXPIRE AFTER cannot use months or years: "1 month"'),
        (f"CREATE FLOW x2 SINK TO x2s EVAL INTERVAL '0 s' AS {good}", "22023", "EVAL INTERVAL must be positive, got '0 s'"),
        (f"CREATE FLOW x2 SINK TO x2s EXPIRE AFTER 'soon' AS {good}", "22007", 'invalid EXPIRE AFTER interval: "soon"'),
        (f"CREATE FLOW x2 SINK TO x2s COMMENT 'c' EVAL INTERVAL '1 s' AS {good}", "42601", 'syntax error at or near "EVAL"'),
        ("CREATE FLOW x2 SINK TO x_src AS SELECT host, ts, v FROM x_src", "42P16",
         'flow "x2" cannot sink into its own source table "public.x_src"'),
        ("CREATE FLOW x2 SINK TO x2s AS SELECT * FROM x_missing1 JOIN x_missing2 ON true", "42P01",
         'source table(s) of flow "x2" do not exist: public.x_missing1, public.x_missing2'),
        ("CREATE FLOW x2 SINK TO x2s AS SELECT nope FROM x_src", "42703", None),
    ]
    for sql, state, message in cases:
        err = error_of(conn, sql)
        assert err.sqlstate == state, (sql, err.sqlstate, str(err))
        if message is not None:
            assert err.diag.message_primary == message, sql
    err = error_of(conn, "CREATE FLOW x2 SINK TO x2s AS SELECT * FROM x_missing1")
    assert "WITH (defer_on_missing_source = true)" in (err.diag.message_hint or "")
    assert rows(conn, "SHOW FLOWS LIKE 'x2%'") == []
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute(f"CREATE FLOW IF NOT EXISTS x_flow SINK TO x_sink {HOURLY} AS {good}")
    conn.execute("DROP FLOW IF EXISTS x_nope")
    assert notices == ['flow "x_flow" already exists, skipping', 'flow "x_nope" does not exist, skipping']
    assert conn.execute("DROP FLOW x_flow").statusmessage == "DROP FLOW"
    assert rows(conn, "SELECT count(*) FROM x_sink") == [(0,)]  # the sink stays


def test_intervals_show_create_flow_roundtrip(conn: psycopg.Connection) -> None:
    make_source(conn, "r_src")
    for text, seconds in [("INTERVAL '5 minutes'", 300), ("'5 minutes'", 300), ("'300 s'", 300), ("'1m'", 60),
                          ("'2 days 1h 2 min'", 176520)]:
        conn.execute(f"CREATE OR REPLACE FLOW r_iv SINK TO r_iv_sink EXPIRE AFTER {text} EVAL INTERVAL {text} AS "
                     "SELECT host, count(*) AS c FROM r_src GROUP BY host")
        assert rows(conn, "SELECT expire_after FROM information_schema.flows WHERE flow_name = 'r_iv'") == [(seconds,)]
        text_out = rows(conn, "SHOW CREATE FLOW r_iv")[0][1]
        assert f"EXPIRE AFTER '{seconds} s'\nEVAL INTERVAL '{seconds} s'" in text_out
    conn.execute("CREATE FLOW r_flow SINK TO r_sink EXPIRE AFTER '1 hour' EVAL INTERVAL '10 s' COMMENT 'it''s hourly' "
                 "WITH (defer_on_missing_source = true) AS select host,   count(*) as c\n from r_src  where v > 0 group by host")
    flow, text = rows(conn, "SHOW CREATE FLOW r_flow")[0]
    assert flow == "r_flow"
    assert text == ("CREATE FLOW IF NOT EXISTS r_flow\nSINK TO public.r_sink\nEXPIRE AFTER '3600 s'\n"
                    "EVAL INTERVAL '10 s'\nCOMMENT 'it''s hourly'\nWITH (defer_on_missing_source = 'true')\n"
                    "AS SELECT host, count(*) AS c FROM r_src WHERE v > 0 GROUP BY host")
    definition = rows(conn, "SELECT flow_definition FROM information_schema.flows WHERE flow_name = 'r_flow'")[0][0]
    assert definition == text
    conn.execute("DROP FLOW r_flow")
    conn.execute(text)
    assert rows(conn, "SHOW CREATE FLOW r_flow")[0][1] == text
    conn.execute("CREATE OR REPLACE FLOW r_flow SINK TO r_sink WITH (flow_type = 'batching') AS "
                 "SELECT host, count(*) AS c FROM r_src GROUP BY host")
    assert "WITH (flow_type = 'batching')" in rows(conn, "SHOW CREATE FLOW r_flow")[0][1]
    conn.execute("COMMENT ON FLOW r_flow IS 'described'")
    assert rows(conn, "SELECT comment FROM information_schema.flows WHERE flow_name = 'r_flow'") == [("described",)]
    conn.execute("COMMENT ON FLOW r_flow IS NULL")
    assert rows(conn, "SELECT comment FROM information_schema.flows WHERE flow_name = 'r_flow'") == [("",)]


def test_show_flows_and_information_schema(conn: psycopg.Connection) -> None:
    make_source(conn, "s_src")
    conn.execute("CREATE SCHEMA s_other")
    conn.execute("CREATE FLOW s_alpha SINK TO s_alpha_out AS SELECT host, count(*) AS c FROM s_src GROUP BY host")
    conn.execute("CREATE FLOW s_beta SINK TO s_beta_out AS SELECT host, count(*) AS c FROM s_src GROUP BY host")
    conn.execute("SET search_path = s_other, public")
    conn.execute("CREATE FLOW s_gamma SINK TO public.s_gamma_out AS SELECT host, count(*) AS c FROM public.s_src GROUP BY host")
    conn.execute("RESET search_path")
    cur = conn.execute("SHOW FLOWS LIKE 's\\_%'")
    assert [d.name for d in cur.description] == ["Flows"]
    assert cur.fetchall() == [("s_alpha",), ("s_beta",)]
    assert rows(conn, "SHOW FLOWS FROM s_other") == [("s_gamma",)]
    assert rows(conn, "SHOW FLOWS IN public WHERE \"Flows\" = 's_beta'") == [("s_beta",)]
    cur = conn.execute("SELECT * FROM INFORMATION_SCHEMA.FLOWS WHERE flow_name LIKE 's%' ORDER BY flow_name DESC")
    assert [d.name for d in cur.description] == [
        "flow_name", "flow_id", "state_size", "table_catalog", "flow_definition", "comment", "expire_after",
        "source_table_ids", "sink_table_name", "flownode_ids", "options", "created_time", "updated_time",
        "last_execution_time", "source_table_names", "flownode_addrs"]
    got = cur.fetchall()
    assert [r[0] for r in got] == ["s_gamma", "s_beta", "s_alpha"]
    alpha = dict(zip([d.name for d in cur.description], got[2]))
    src_oid = rows(conn, "SELECT oid FROM pg_class WHERE relname = 's_src'")[0][0]
    assert json.loads(alpha["source_table_ids"]) == [src_oid]
    assert alpha["source_table_names"] == "tidegate.public.s_src"
    assert alpha["sink_table_name"] == "tidegate.public.s_alpha_out"
    assert alpha["table_catalog"] == "tidegate"
    assert json.loads(alpha["options"]) == {"flow_type": "batching"}
    assert json.loads(alpha["flownode_ids"]) == {"0": 0}
    assert alpha["created_time"] is not None and alpha["flow_id"] >= 1024
    joined = rows(conn, "SELECT f.flow_name, s.status, s.uptime_seconds >= 0 FROM information_schema.flows f "
                        "JOIN information_schema.flow_statistics s ON f.flow_id = s.flow_id "
                        "WHERE f.flow_name IN ('s_alpha', 's_beta') ORDER BY 1")
    assert joined == [("s_alpha", "active", True), ("s_beta", "active", True)]
    cur = conn.execute("SELECT * FROM information_schema.flow_statistics LIMIT 0")
    assert [d.name for d in cur.description][:8] == ["flow_id", "flow_name", "start_time", "last_execution_time",
                                                     "uptime_seconds", "state_size", "status", "last_error"]


# -- pending flows ---------------------------------------------------------------------------------

def test_pending_flow_lifecycle(conn: psycopg.Connection) -> None:
    conn.execute("CREATE FLOW q_flow SINK TO q_sink WITH (defer_on_missing_source = true, flow_type = 'batching') AS "
                 f"SELECT host, {BIN} AS w, count(*) AS c FROM q_src GROUP BY host, w")
    assert rows(conn, "SHOW FLOWS LIKE 'q_flow'") == [("q_flow",)]
    info = rows(conn, "SELECT source_table_ids, source_table_names, options FROM information_schema.flows "
                      "WHERE flow_name = 'q_flow'")[0]
    assert info[0] == "[]" and info[1] == ""
    assert json.loads(info[2]) == {"defer_on_missing_source": "true", "flow_type": "batching"}
    assert rows(conn, "SELECT status FROM information_schema.flow_statistics WHERE flow_name = 'q_flow'") == [("pending",)]
    status = rows(conn, "SHOW FLOW STATUS LIKE 'q_flow'")[0]
    assert status[2] == "pending: waiting for public.q_src"
    assert "WITH (defer_on_missing_source = 'true', flow_type = 'batching')" in rows(conn, "SHOW CREATE FLOW q_flow")[0][1]
    err = error_of(conn, "ADMIN FLUSH_FLOW('q_flow')")
    assert err.sqlstate == "55000"
    # OR REPLACE keeps it pending; the source's creation activates it, existing rows processed.
    conn.execute("CREATE OR REPLACE FLOW q_flow SINK TO q_sink WITH (defer_on_missing_source = true, flow_type = 'batching') AS "
                 f"SELECT host, {BIN} AS w, count(*) AS c FROM q_src GROUP BY host, w")
    make_source(conn, "q_src")
    conn.execute("INSERT INTO q_src VALUES ('a', '2024-01-01 00:00:10', 1), ('a', '2024-01-01 00:00:50', 1)")
    wait_until(lambda: try_rows(conn, "SELECT host, c FROM q_sink") == [("a", 2)])
    info = rows(conn, "SELECT source_table_names FROM information_schema.flows WHERE flow_name = 'q_flow'")[0]
    assert info[0] == "tidegate.public.q_src"
    assert rows(conn, "SELECT status FROM information_schema.flow_statistics WHERE flow_name = 'q_flow'") == [("active",)]
    # Back to pending with OR REPLACE, then dropped while pending.
    conn.execute("CREATE OR REPLACE FLOW q_flow SINK TO q_sink WITH (defer_on_missing_source = true) AS "
                 "SELECT host, w, c FROM q_not_yet")
    assert rows(conn, "SHOW FLOW STATUS LIKE 'q_flow'")[0][2] == "pending: waiting for public.q_not_yet"
    conn.execute("DROP FLOW q_flow")
    assert rows(conn, "SHOW FLOWS LIKE 'q_flow'") == []


# -- dependencies and failures ----------------------------------------------------------------------

def test_drop_source_cascade_drops_flow(conn: psycopg.Connection) -> None:
    make_source(conn, "d_src")
    conn.execute("CREATE FLOW d_flow SINK TO d_sink AS SELECT host, count(*) AS c FROM d_src GROUP BY host")
    conn.execute("DROP TABLE d_src CASCADE")
    assert rows(conn, "SHOW FLOWS LIKE 'd_flow'") == []
    assert rows(conn, "SELECT count(*) FROM d_sink") == [(0,)]


def test_failing_flow_records_error_and_recovers(conn: psycopg.Connection) -> None:
    make_source(conn, "f_src")
    conn.execute("ALTER TABLE f_src ADD COLUMN extra int")
    conn.execute("INSERT INTO f_src VALUES ('a', '2024-01-01 00:00:10', 1, 5)")
    conn.execute(f"CREATE FLOW f_flow SINK TO f_sink {HOURLY} AS SELECT host, sum(extra) AS s FROM f_src GROUP BY host")
    conn.execute(f"CREATE FLOW f_ok SINK TO f_ok_sink {HOURLY} AS SELECT host, count(*) AS c FROM f_src GROUP BY host")
    flush(conn, "f_flow")
    conn.execute("ALTER TABLE f_src DROP COLUMN extra")
    err = error_of(conn, "ADMIN FLUSH_FLOW('f_flow')")
    assert err.sqlstate == "42703"
    stats = rows(conn, "SELECT status, last_error FROM information_schema.flow_statistics WHERE flow_name = 'f_flow'")
    assert stats[0][0] == "error" and "extra" in stats[0][1]
    conn.execute("INSERT INTO f_src VALUES ('b', '2024-01-01 00:00:11')")
    flush(conn, "f_ok")  # other flows are not disturbed
    assert rows(conn, "SELECT host, c FROM f_ok_sink ORDER BY host") == [("a", 1), ("b", 1)]
    conn.execute("ALTER TABLE f_src ADD COLUMN extra int")
    flush(conn, "f_flow")
    assert rows(conn, "SELECT status, last_error FROM information_schema.flow_statistics WHERE flow_name = 'f_flow'") == [
        ("active", None)]
    assert rows(conn, "SELECT host, s FROM f_sink ORDER BY host") == [("a", None), ("b", None)]


# -- restart (last: it restarts the module's gateway) -----------------------------------------------

def test_restart_resumes_without_loss_or_duplicates(gw: TidegateServer) -> None:
    with psycopg.connect(gw.dsn, autocommit=True) as conn:
        make_source(conn, "z_src")
        conn.execute(f"CREATE FLOW z_flow SINK TO z_sink {HOURLY} AS SELECT host, {BIN} AS w, count(*) AS c "
                     "FROM z_src GROUP BY host, w")
        conn.execute("CREATE FLOW z_pending SINK TO z_psink WITH (defer_on_missing_source = true) AS "
                     "SELECT host, count(*) AS c FROM z_later GROUP BY host")
        conn.execute("INSERT INTO z_src VALUES ('a', '2024-01-01 00:00:10', 1)")
        flush(conn, "z_flow")
        conn.execute("INSERT INTO z_src VALUES ('a', '2024-01-01 00:00:20', 1), ('b', '2024-01-01 00:05:00', 1)")
    gw.stop()
    restarted = start_tidegate(gw.data_dir, port=gw.port, env={"TIDEGATE_FLOW_DEFAULT_INTERVAL_S": "1"})
    gw.proc = restarted.proc
    gw.log = restarted.log
    restarted.wait_for_spark()
    with psycopg.connect(gw.dsn, autocommit=True) as conn:
        assert rows(conn, "SHOW FLOWS LIKE 'z%'") == [("z_flow",), ("z_pending",)]
        flush(conn, "z_flow")
        assert rows(conn, "SELECT host, w, c FROM z_sink ORDER BY host, w") == [
            ("a", datetime(2024, 1, 1, 0, 0), 2), ("b", datetime(2024, 1, 1, 0, 5), 1)]
        assert flush(conn, "z_flow") == 0
        conn.execute("CREATE TABLE z_later (host text, ts timestamp TIME INDEX)")
        conn.execute("INSERT INTO z_later VALUES ('x', '2024-01-01')")
        wait_until(lambda: try_rows(conn, "SELECT host, c FROM z_psink") == [("x", 1)])
