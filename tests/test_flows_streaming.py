"""Flows, part 2, through the wire: streaming flows on Spark Structured Streaming.

One gateway for the module (its own data dir: the last test kills it with SIGKILL and restarts it).
Streaming flows keep their sink current without ADMIN FLUSH_FLOW, so most checks poll the sink
until it shows the expected rows; the expected rows are always the flow's query run directly
over the source (what a batch recomputation returns).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.tidegate_server import TidegateServer, start_tidegate

BIN = "date_bin(INTERVAL '10 seconds', ts, '2000-01-01 00:00:00'::timestamp)"


@pytest.fixture(scope="module")
def gw(tmp_path_factory) -> TidegateServer:
    # A space in the data dir: the streaming source reads the files the Delta log names.
    server = start_tidegate(tmp_path_factory.mktemp("flows-streaming-data") / "data dir")
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
    try:
        return rows(conn, sql)
    except psycopg.errors.UndefinedTable:
        return None


def wait_equal(conn: psycopg.Connection, got_sql: str, want_sql: str, timeout: float = 60.0) -> list[tuple]:
    """Poll until ``got_sql`` returns what ``want_sql`` returns (both re-run each time)."""
    deadline = time.time() + timeout
    while True:
        want = rows(conn, want_sql)
        got = try_rows(conn, got_sql)
        if got == want:
            return got
        if time.time() > deadline:
            raise AssertionError(f"sink never matched:\n got  {got}\n want {want}")
        time.sleep(0.2)


def wait_rows(conn: psycopg.Connection, sql: str, want: list[tuple], timeout: float = 60.0) -> float:
    started = time.time()
    while True:
        got = try_rows(conn, sql)
        if got == want:
            return time.time() - started
        if time.time() - started > timeout:
            raise AssertionError(f"{sql}: {got} != {want}")
        time.sleep(0.1)


def make_source(conn: psycopg.Connection, name: str) -> None:
    conn.execute(f"CREATE TABLE {name} (host text, ts timestamp TIME INDEX, v double precision, PRIMARY KEY (host))")


def options(conn: psycopg.Connection, flow: str) -> dict:
    return json.loads(rows(conn, f"SELECT options FROM information_schema.flows WHERE flow_name = '{flow}'")[0][0])


def statistics(conn: psycopg.Connection, flow: str) -> dict:
    cur = conn.execute(f"SELECT * FROM information_schema.flow_statistics WHERE flow_name = '{flow}'")
    return dict(zip([d.name for d in cur.description], cur.fetchone()))


def flow_id(conn: psycopg.Connection, flow: str) -> int:
    return rows(conn, f"SELECT flow_id FROM information_schema.flows WHERE flow_name = '{flow}'")[0][0]


# -- the mode rule ----------------------------------------------------------------------------------

def test_default_mode_rule_and_refusal(conn: psycopg.Connection) -> None:
    make_source(conn, "m_src")
    conn.execute("CREATE FLOW m_proj SINK TO m_proj_out AS SELECT host, ts, v * 2 AS v2 FROM m_src WHERE v > 0")
    conn.execute(f"CREATE FLOW m_win SINK TO m_win_out AS SELECT {BIN} AS w, count(*) AS c FROM m_src GROUP BY w")
    conn.execute(f"CREATE FLOW m_eval SINK TO m_eval_out EVAL INTERVAL '1 hour' AS "
                 f"SELECT {BIN} AS w, count(*) AS c FROM m_src GROUP BY w")
    conn.execute("CREATE FLOW m_total SINK TO m_total_out AS SELECT host, count(*) AS c FROM m_src GROUP BY host")
    assert options(conn, "m_proj") == {"flow_type": "streaming"}
    assert options(conn, "m_win") == {"flow_type": "streaming"}
    assert options(conn, "m_eval") == {"flow_type": "batching"}
    assert options(conn, "m_total") == {"flow_type": "batching"}
    # SHOW CREATE FLOW leaves out a flow_type the user did not set.
    assert "flow_type" not in rows(conn, "SHOW CREATE FLOW m_proj")[0][1]
    for query in ("SELECT DISTINCT host FROM m_src",
                  "SELECT host, count(*) AS c FROM m_src GROUP BY host",
                  "SELECT a.host, a.ts FROM m_src a JOIN m_src b ON a.host = b.host"):
        with pytest.raises(psycopg.Error) as info:
            conn.execute(f"CREATE FLOW m_bad SINK TO m_bad_out WITH (flow_type = 'streaming') AS {query}")
        err = info.value
        assert err.sqlstate == "0A000"
        assert "cannot run as a streaming flow" in err.diag.message_primary
        assert "flow_type = 'batching'" in (err.diag.message_hint or "")
    assert rows(conn, "SHOW FLOWS LIKE 'm_bad'") == []
    for name in ("m_proj", "m_win", "m_eval", "m_total"):
        conn.execute(f"DROP FLOW {name}")


# -- freshness, windows, deletes -------------------------------------------------------------------------

def test_fresh_without_flush(conn: psycopg.Connection) -> None:
    make_source(conn, "f_src")
    conn.execute("INSERT INTO f_src VALUES ('old', '2024-01-01 00:00:00', 1)")  # before the flow: backfilled
    conn.execute("CREATE FLOW f_flow SINK TO f_out WITH (flow_type = 'streaming') AS "
                 "SELECT host, ts, v * 2 AS v2 FROM f_src WHERE v > 0")
    wait_rows(conn, "SELECT host, v2 FROM f_out", [("old", 2.0)])
    conn.execute("INSERT INTO f_src VALUES ('neg', '2024-01-01 00:00:01', -1)")
    conn.execute("INSERT INTO f_src VALUES ('new', '2024-01-01 00:00:02', 5)")
    took = wait_rows(conn, "SELECT host, v2 FROM f_out ORDER BY ts", [("old", 2.0), ("new", 10.0)], timeout=30)
    assert took < 30
    (update_at,) = rows(conn, "SELECT update_at FROM f_out WHERE host = 'new'")[0]
    assert update_at is not None
    # A deleted source row leaves the sink.
    conn.execute("DELETE FROM f_src WHERE host = 'old'")
    wait_rows(conn, "SELECT host FROM f_out", [("new",)])


def test_windowed_aggregation_equals_batch_and_follows_deletes(conn: psycopg.Connection) -> None:
    make_source(conn, "w_src")
    query = f"SELECT {BIN} AS w, count(*) AS c, sum(v) AS s, max(v) AS m FROM w_src GROUP BY w"
    conn.execute("INSERT INTO w_src VALUES ('a', '2024-01-01 00:00:01', 1), ('b', '2024-01-01 00:00:12', 2)")
    conn.execute(f"CREATE FLOW w_flow SINK TO w_out AS {query}")
    assert options(conn, "w_flow") == {"flow_type": "streaming"}
    want = f"{query} ORDER BY w"
    got = "SELECT w, c, s, m FROM w_out ORDER BY w"
    wait_equal(conn, got, want)
    for i in range(5):
        conn.execute(f"INSERT INTO w_src VALUES ('h{i}', '2024-01-01 00:00:{5 + i * 7:02d}', {10 + i})")
    wait_equal(conn, got, want)
    # Deletes and updates retract and re-aggregate their windows (max included).
    conn.execute("DELETE FROM w_src WHERE host = 'h4'")
    conn.execute("UPDATE w_src SET v = 100 WHERE host = 'a'")
    result = wait_equal(conn, got, want)
    assert (datetime(2024, 1, 1, 0, 0), 2, 110.0, 100.0) in result
    # A window whose last row is deleted disappears from the sink.
    conn.execute("DELETE FROM w_src WHERE ts >= '2024-01-01 00:00:30'")
    wait_equal(conn, got, want)
    assert rows(conn, "SELECT count(*) FROM w_out WHERE update_at IS NULL") == [(0,)]
    assert rows(conn, "SELECT count(*) FROM w_out WHERE w >= '2024-01-01 00:00:30'") == [(0,)]


def test_expire_after_drops_late_rows(conn: psycopg.Connection) -> None:
    make_source(conn, "e_src")
    conn.execute(f"CREATE FLOW e_flow SINK TO e_out EXPIRE AFTER '1 minute' AS "
                 f"SELECT {BIN} AS w, count(*) AS c FROM e_src GROUP BY w")
    conn.execute("INSERT INTO e_src VALUES ('a', '2024-01-01 00:00:01', 1)")
    assert rows(conn, "ADMIN FLUSH_FLOW('e_flow')")[0][0] >= 0
    conn.execute("INSERT INTO e_src VALUES ('b', '2024-01-01 00:10:01', 1)")  # the watermark moves to 00:09:01
    rows(conn, "ADMIN FLUSH_FLOW('e_flow')")
    conn.execute("INSERT INTO e_src VALUES ('late', '2024-01-01 00:00:02', 1)")  # late: its window expired
    conn.execute("INSERT INTO e_src VALUES ('c', '2024-01-01 00:10:05', 1)")
    rows(conn, "ADMIN FLUSH_FLOW('e_flow')")
    assert rows(conn, "SELECT w, c FROM e_out ORDER BY w") == [
        (datetime(2024, 1, 1, 0, 0), 1), (datetime(2024, 1, 1, 0, 10), 2)]
    st = statistics(conn, "e_flow")
    assert st["late_rows"] >= 1
    assert st["input_rows"] >= 4
    assert st["batches"] >= 3
    assert st["state_size"] > 0
    assert st["status"] == "active" and st["last_error"] is None
    assert st["last_batch_time"] is not None and st["lag_seconds"] is not None


# -- micro-batches written on Spark (issue 22) ------------------------------------------------------

def last_commit(gw: TidegateServer, conn: psycopg.Connection, table: str) -> dict:
    """The table's last Delta commit: its commitInfo and app transactions."""
    (path,) = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()
    entry = sorted((gw.data_dir / path / "_delta_log").glob("*.json"))[-1]
    actions = [json.loads(line) for line in entry.read_text().splitlines() if line.strip()]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    return {"operation": info.get("operation"), "spark": str(info.get("engineInfo", "")).startswith("Apache-Spark"),
            "txn": [a["txn"]["appId"] for a in actions if "txn" in a]}


def test_micro_batches_written_on_spark_equal_collected_ones(conn: psycopg.Connection, gw: TidegateServer) -> None:
    """WITH (spark_writes = 'on'): a projection flow's micro-batches are upserted by Delta Lake's
    MERGE on Spark under the batch's app transaction; inserts, late rows (EXPIRE AFTER), deletes
    and updates leave the sink row for row what the collected twin ('off') keeps. 'auto' collects
    a small batch and writes one of more than 100,000 rows on Spark."""
    make_source(conn, "sp_src")
    conn.execute("INSERT INTO sp_src VALUES ('before', '2024-01-01 10:00:00', 1)")
    query = "SELECT host, ts, v * 2 AS v2 FROM sp_src WHERE v > 0"
    for mode in ("on", "off", "auto"):
        conn.execute(f"CREATE FLOW sp_{mode} SINK TO sp_{mode}_out EXPIRE AFTER '1 hour' "
                     f"WITH (flow_type = 'streaming', spark_writes = '{mode}') AS {query}")
    assert options(conn, "sp_on") == {"flow_type": "streaming", "spark_writes": "on"}

    def same(step: str) -> list[tuple]:
        counts = {mode: rows(conn, f"ADMIN FLUSH_FLOW('sp_{mode}')")[0][0] for mode in ("on", "off")}
        assert counts["on"] == counts["off"], (step, counts)
        got = {mode: rows(conn, f"SELECT host, ts, v2 FROM sp_{mode}_out ORDER BY host, ts") for mode in ("on", "off")}
        assert got["on"] == got["off"], step
        return got["on"]

    assert same("backfill") == [("before", datetime(2024, 1, 1, 10), 2.0)]
    conn.execute("INSERT INTO sp_src SELECT 'h' || (g % 5), TIMESTAMP '2024-01-01 10:00:00' + g * INTERVAL '1 second', "
                 "g - 100 FROM generate_series(1, 3000) g")
    sunk = same("inserts")
    assert len(sunk) == 1 + 2900
    commit = last_commit(gw, conn, "sp_on_out")
    assert commit["operation"] == "MERGE" and commit["spark"], commit
    assert [a for a in commit["txn"] if a.startswith("tidegate-stream-")], commit
    assert not last_commit(gw, conn, "sp_off_out")["spark"]
    # The watermark is now 09:50 past the newest row (10:50): rows before it are late.
    conn.execute("INSERT INTO sp_src VALUES ('late', '2024-01-01 09:00:00', 7), ('fresh', '2024-01-01 10:45:00', 8)")
    sunk = same("late rows")
    assert ("fresh", datetime(2024, 1, 1, 10, 45), 16.0) in sunk
    assert not [r for r in sunk if r[0] == "late"]
    assert statistics(conn, "sp_on")["late_rows"] == statistics(conn, "sp_off")["late_rows"] >= 1
    conn.execute("DELETE FROM sp_src WHERE host = 'h3' AND ts < '2024-01-01 10:20:00'")
    conn.execute("UPDATE sp_src SET v = -v WHERE host = 'h1' AND ts BETWEEN '2024-01-01 10:30:00' AND '2024-01-01 10:31:00'")
    sunk = same("deletes and updates")
    assert sunk == rows(conn, f"SELECT host, ts, v2 FROM ({query}) q WHERE host <> 'late' ORDER BY host, ts")

    rows(conn, "ADMIN FLUSH_FLOW('sp_auto')")
    conn.execute("INSERT INTO sp_src VALUES ('small', '2024-01-01 10:46:00', 3)")
    rows(conn, "ADMIN FLUSH_FLOW('sp_auto')")
    assert not last_commit(gw, conn, "sp_auto_out")["spark"]
    conn.execute("INSERT INTO sp_src SELECT 'big' || (g % 3), TIMESTAMP '2024-01-01 11:00:00' + g * INTERVAL '1 millisecond', "
                 "g FROM generate_series(1, 100001) g")
    rows(conn, "ADMIN FLUSH_FLOW('sp_auto')")
    commit = last_commit(gw, conn, "sp_auto_out")
    assert commit["operation"] == "MERGE" and commit["spark"], commit
    assert rows(conn, "SELECT count(*), sum(v2) FROM sp_auto_out WHERE host LIKE 'big%'") == [(100001, 100001 * 100002.0)]
    for mode in ("on", "off", "auto"):
        conn.execute(f"DROP FLOW sp_{mode}")


# -- failure and recovery ---------------------------------------------------------------------------

def test_failed_flow_restarts_from_checkpoint_others_unaffected(conn: psycopg.Connection) -> None:
    """A sink the flow can no longer write fails its query: the error is recorded with its cause,
    the other flow on the same source goes on, and once the sink fits again the flow restarts from
    its checkpoint and delivers what it missed."""
    conn.execute("CREATE TABLE x_src (host text, ts timestamp TIME INDEX, v double precision, extra int, "
                 "PRIMARY KEY (host))")
    conn.execute("INSERT INTO x_src VALUES ('a', '2024-01-01 00:00:01', 1, 5)")
    conn.execute("CREATE FLOW x_bad SINK TO x_bad_sink WITH (flow_type = 'streaming') AS "
                 "SELECT host, ts, extra FROM x_src WHERE v > 0")
    conn.execute("CREATE FLOW x_ok SINK TO x_ok_sink WITH (flow_type = 'streaming') AS "
                 "SELECT host, ts, v FROM x_src WHERE v > 0")
    wait_rows(conn, "SELECT host, extra FROM x_bad_sink", [("a", 5)])
    conn.execute("ALTER TABLE x_bad_sink DROP COLUMN extra")
    conn.execute("INSERT INTO x_src VALUES ('b', '2024-01-01 00:00:02', 2, 6)")
    wait_rows(conn, "SELECT host FROM x_ok_sink ORDER BY host", [("a",), ("b",)])
    deadline = time.time() + 60
    while statistics(conn, "x_bad")["status"] != "error":
        assert time.time() < deadline, statistics(conn, "x_bad")
        time.sleep(0.2)
    # The sink lost a column the flow writes: the flow's sink check names it.
    assert "missing in sink: extra" in statistics(conn, "x_bad")["last_error"]
    conn.execute("ALTER TABLE x_bad_sink ADD COLUMN extra int")
    conn.execute("INSERT INTO x_src VALUES ('c', '2024-01-01 00:00:03', 3, 7)")
    # 'a' was written before the column was dropped: its value went with the column.
    wait_rows(conn, "SELECT host, extra FROM x_bad_sink ORDER BY host", [("a", None), ("b", 6), ("c", 7)])
    stats = statistics(conn, "x_bad")
    assert (stats["status"], stats["last_error"]) == ("active", None)


# -- the source's columns change ---------------------------------------------------------------------

def flow_events(conn: psycopg.Connection, flow: str, type_: str, n: int, timeout: float = 60.0) -> list[dict]:
    """The payloads of ``flow``'s events of ``type_``, once at least ``n`` are recorded."""
    deadline = time.time() + timeout
    while True:
        found = [json.loads(p) if isinstance(p, str) else p for (p,) in conn.execute(
            "SELECT payload FROM tidegate_private.events WHERE type = %s AND object LIKE %s ORDER BY event_id",
            (type_, f"%{flow}")).fetchall()]
        if len(found) >= n:
            return found
        assert time.time() < deadline, f"{n} {type_} event(s) of {flow} never recorded: {found}"
        time.sleep(0.2)


def test_source_schema_changes_keep_the_flow_exact(conn: psycopg.Connection) -> None:
    """The source's columns change under two running flows, a projection and a windowed
    aggregation: a column added, a column they do not read dropped, a column they read renamed
    (they fail with 42703) and a new column of its name added. The flows start over a source
    whose files differ in their columns. Each change starts the flows over (a new checkpoint
    and epoch, a flow.rebuilt event), rebuilding their sinks from the query: the change feed they
    read keeps the columns the query started with, and after a rename its rows, and the sink's
    earlier ones, would no longer mean what the query says. Both equal their query at every step."""
    conn.execute("CREATE TABLE sc_src (host text, ts timestamp TIME INDEX, v double precision, PRIMARY KEY (host))")
    conn.execute("INSERT INTO sc_src VALUES ('a', '2024-01-01 00:00:01', 1)")
    # The backfill reads files written before and after a column was added.
    conn.execute("ALTER TABLE sc_src ADD COLUMN extra int")
    conn.execute("INSERT INTO sc_src VALUES ('b', '2024-01-01 00:00:12', 2, 6)")
    projection = "SELECT host, ts, v FROM sc_src WHERE v > 0"
    windows = f"SELECT {BIN} AS w, count(*) AS c, sum(v) AS s FROM sc_src GROUP BY w"
    conn.execute(f"CREATE FLOW sc_proj SINK TO sc_proj_out WITH (flow_type = 'streaming') AS {projection}")
    conn.execute(f"CREATE FLOW sc_win SINK TO sc_win_out WITH (flow_type = 'streaming') AS {windows}")

    def in_step() -> None:
        wait_equal(conn, "SELECT host, ts, v FROM sc_proj_out ORDER BY host", f"{projection} ORDER BY host")
        wait_equal(conn, "SELECT w, c, s FROM sc_win_out ORDER BY w", f"{windows} ORDER BY w")

    in_step()
    conn.execute("ALTER TABLE sc_src ADD COLUMN more int")
    conn.execute("INSERT INTO sc_src VALUES ('c', '2024-01-01 00:00:13', 3, 7, 1)")
    in_step()
    conn.execute("ALTER TABLE sc_src DROP COLUMN extra")
    conn.execute("INSERT INTO sc_src VALUES ('d', '2024-01-01 00:00:24', 4, 2)")
    conn.execute("DELETE FROM sc_src WHERE host = 'a'")
    in_step()
    conn.execute("ALTER TABLE sc_src RENAME COLUMN v TO v2")
    deadline = time.time() + 60
    while not all(statistics(conn, f)["status"] == "error" for f in ("sc_proj", "sc_win")):
        assert time.time() < deadline, [statistics(conn, f) for f in ("sc_proj", "sc_win")]
        time.sleep(0.2)
    assert 'column "v" does not exist' in statistics(conn, "sc_proj")["last_error"]
    # A new column takes the old name: every earlier row has NULL there, so the query now keeps
    # none of them (a flow reading its old feed would keep them all).
    conn.execute("ALTER TABLE sc_src ADD COLUMN v double precision")
    conn.execute("INSERT INTO sc_src (host, ts, v) VALUES ('e', '2024-01-01 00:00:35', 5)")
    conn.execute("UPDATE sc_src SET v = 20 WHERE host = 'b'")
    in_step()
    assert rows(conn, "SELECT host FROM sc_proj_out ORDER BY host") == [("b",), ("e",)]
    for flow in ("sc_proj", "sc_win"):
        rebuilt = flow_events(conn, flow, "flow.rebuilt", 3)
        assert "columns changed" in rebuilt[-1]["reason"] and rebuilt[-1]["epoch"] >= 3
        wait_rows(conn, f"SELECT status FROM information_schema.flow_statistics WHERE flow_name = '{flow}'",
                  [("active",)])
    conn.execute("INSERT INTO sc_src (host, ts, v) VALUES ('f', '2024-01-01 00:00:46', 6)")
    in_step()


# -- flush, status, drop, replace ------------------------------------------------------------------------

def test_flush_drop_and_replace(conn: psycopg.Connection, gw: TidegateServer) -> None:
    make_source(conn, "r_src")
    conn.execute("INSERT INTO r_src VALUES ('a', '2024-01-01 00:00:01', 1), ('b', '2024-01-01 00:00:02', 7)")
    conn.execute("CREATE FLOW r_flow SINK TO r_out WITH (flow_type = 'streaming') AS "
                 "SELECT host, ts, v FROM r_src WHERE v > 0")
    fid = flow_id(conn, "r_flow")
    checkpoints = Path(gw.data_dir) / "flows" / str(fid)
    conn.execute("INSERT INTO r_src VALUES ('c', '2024-01-01 00:00:03', 3)")
    written = rows(conn, "ADMIN FLUSH_FLOW('r_flow')")[0][0]
    # Everything committed before the flush is in the sink when it returns.
    assert rows(conn, "SELECT host FROM r_out ORDER BY host") == [("a",), ("b",), ("c",)]
    assert written >= 1
    assert rows(conn, "ADMIN FLUSH_FLOW('r_flow')") == [(0,)]
    assert checkpoints.is_dir() and (checkpoints / "offsets").is_dir()
    assert options(conn, "r_flow") == {"flow_type": "streaming"}
    assert statistics(conn, "r_flow")["status"] == "active"
    # OR REPLACE restarts from a clean state and rebuilds the sink.
    conn.execute("CREATE OR REPLACE FLOW r_flow SINK TO r_out WITH (flow_type = 'streaming') AS "
                 "SELECT host, ts, v FROM r_src WHERE v > 5")
    rows(conn, "ADMIN FLUSH_FLOW('r_flow')")
    assert rows(conn, "SELECT host FROM r_out ORDER BY host") == [("b",)]
    assert not checkpoints.exists()
    new_checkpoints = Path(gw.data_dir) / "flows" / str(flow_id(conn, "r_flow"))
    assert new_checkpoints.is_dir()
    conn.execute("DROP FLOW r_flow")
    assert not new_checkpoints.exists()
    # The sink stays, and stops following the source.
    conn.execute("INSERT INTO r_src VALUES ('d', '2024-01-01 00:00:04', 9)")
    time.sleep(1.5)
    assert rows(conn, "SELECT host FROM r_out ORDER BY host") == [("b",)]


# -- crash and restart (last: it kills the module's gateway) -----------------------------------------------

@pytest.mark.long  # CI time: ./tidegate.sh test -m long runs it
def test_kill9_during_inserts_then_restart_is_exact(gw: TidegateServer) -> None:
    query = f"SELECT {BIN} AS w, count(*) AS c, sum(v) AS s FROM k_src GROUP BY w"
    with psycopg.connect(gw.dsn, autocommit=True) as conn:
        make_source(conn, "k_src")
        conn.execute(f"CREATE FLOW k_flow SINK TO k_out AS {query}")
        conn.execute("CREATE FLOW k_proj SINK TO k_proj_out AS SELECT host, ts, v FROM k_src")
        rows(conn, "ADMIN FLUSH_FLOW('k_flow')")
    stop = threading.Event()
    inserted: list[int] = []
    base = datetime(2024, 1, 1)

    def writer() -> None:
        i = 0
        try:
            with psycopg.connect(gw.dsn, autocommit=True) as wconn:
                while not stop.is_set():
                    ts = base + timedelta(seconds=i)
                    wconn.execute(f"INSERT INTO k_src VALUES ('h{i}', '{ts.isoformat(sep=' ')}', {i % 7})")
                    inserted.append(i)
                    i += 1
                    time.sleep(0.01)
        except psycopg.Error:
            pass  # the gateway was killed mid-stream

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    deadline = time.time() + 60
    while len(inserted) < 60 and time.time() < deadline:
        time.sleep(0.1)
    gw.kill9()
    stop.set()
    t.join(10)
    assert len(inserted) >= 20
    restarted = start_tidegate(gw.data_dir, port=gw.port)
    gw.proc, gw.log = restarted.proc, restarted.log
    restarted.wait_for_spark()
    with psycopg.connect(gw.dsn, autocommit=True) as conn:
        # Catch-up on changes made while the gateway was down, then keep streaming.
        conn.execute("INSERT INTO k_src VALUES ('after', '2024-01-02 00:00:00', 1)")
        rows(conn, "ADMIN FLUSH_FLOW('k_flow')")
        rows(conn, "ADMIN FLUSH_FLOW('k_proj')")
        assert rows(conn, "SELECT w, c, s FROM k_out ORDER BY w") == rows(conn, f"{query} ORDER BY w")
        assert rows(conn, "SELECT host, ts, v FROM k_proj_out ORDER BY ts") == rows(
            conn, "SELECT host, ts, v FROM k_src ORDER BY ts")
        total = rows(conn, "SELECT sum(c) FROM k_out")[0][0]
        assert total == rows(conn, "SELECT count(*) FROM k_src")[0][0]
