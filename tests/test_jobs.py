"""Jobs through real clients: SUBMIT JOB, SHOW JOBS / information_schema.jobs, FETCH, WAIT and
CANCEL JOB, timeouts, permissions, the submitting session's settings, asynchronous REFRESH TABLE as
a job, and (on a gateway of their own) kill -9 mid-job, PENDING jobs across a restart and result
expiry."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import asyncpg
import psycopg
import pytest

from tests.tidegate_server import TidegateServer, start_tidegate
from tests.wire import error_of, rows, wait_until

# A billion concatenations: a minute of Spark work, in a shape whose tasks stop within a second of
# a cancel (each streamed row of job_big is joined with 1,000 rows between two interrupt checks;
# see docs/DESIGN.md, "Jobs", on tasks that do not check).
SLOW = "SELECT count(*) FROM job_big a CROSS JOIN job_src b WHERE a.v || b.v = 'nothing'"


@pytest.fixture()
def conn(tidegate: TidegateServer) -> Iterator[psycopg.Connection]:
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        yield c


@pytest.fixture(scope="module")
def src(tidegate: TidegateServer) -> str:
    """job_src (1,000 rows) and job_big (1,000,000 rows), whose cross join (SLOW) keeps Spark busy."""
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS job_src")
        c.execute("CREATE TABLE job_src (id int PRIMARY KEY, v text)")
        c.execute("INSERT INTO job_src SELECT g, 'v' || g FROM generate_series(1, 1000) g")
        c.execute("DROP TABLE IF EXISTS job_big")
        c.execute("CREATE TABLE job_big (id int, v text)")
        c.execute("INSERT INTO job_big SELECT g, 'w' || g FROM generate_series(1, 1000000) g")
    return "job_src"


def submit(conn: psycopg.Connection, body: str) -> str:
    cur = conn.execute(f"SUBMIT JOB {body}")
    assert [d.name for d in cur.description] == ["job_id", "status"]
    job_id, status = cur.fetchone()
    assert re.fullmatch(r"job-\d{6}", job_id) and status == "PENDING"
    return job_id


def job(conn: psycopg.Connection, job_id: str) -> dict:
    cur = conn.execute("SELECT * FROM information_schema.jobs WHERE job_id = %s", (job_id,))
    names = [d.name for d in cur.description]
    row = cur.fetchone()
    assert row is not None, f"no job {job_id}"
    return dict(zip(names, row))


def finished(conn: psycopg.Connection, job_id: str, timeout: float = 120) -> dict:
    return wait_until(lambda: (j := job(conn, job_id))["status"] in ("SUCCEEDED", "FAILED", "CANCELLED") and j,
                      timeout=timeout, what=f"{job_id} finished")


def running(conn: psycopg.Connection, job_id: str) -> dict:
    return wait_until(lambda: (j := job(conn, job_id))["status"] == "RUNNING" and j, timeout=120,
                      what=f"{job_id} running")


def test_submit_returns_at_once_and_any_connection_polls_and_fetches(tidegate: TidegateServer, conn, src) -> None:
    conn.execute("DROP TABLE IF EXISTS job_typed")
    conn.execute("CREATE TABLE job_typed (id int, amount numeric(10,2), at timestamptz, d date, name varchar(20))")
    conn.execute("INSERT INTO job_typed VALUES (1, 12.50, '2024-01-02 03:04:05+00', '2024-01-02', 'a'), "
                 "(2, NULL, NULL, NULL, 'b')")
    query = "SELECT id AS ident, amount, at, d, name, amount * 2 AS twice FROM job_typed ORDER BY id"
    started = time.monotonic()
    job_id = submit(conn, f"typed_query AS {query}")
    assert time.monotonic() - started < 2  # it never waits for Spark
    direct = conn.execute(query)
    expected_desc = [(d.name, d.type_code) for d in direct.description]
    expected = direct.fetchall()
    with psycopg.connect(tidegate.dsn, autocommit=True) as other:
        done = finished(other, job_id)
        assert done["status"] == "SUCCEEDED" and done["job_name"] == "typed_query"
        assert done["statement"] == query and done["submitted_by"] == "tidegate" and done["rows"] == 2
        assert done["gateway"] == f"127.0.0.1:{tidegate.port}"
        assert done["created_time"] <= done["started_time"] <= done["finished_time"]
        for _ in range(2):  # as often as asked
            cur = other.execute(f"FETCH JOB '{job_id}'")
            assert [(d.name, d.type_code) for d in cur.description] == expected_desc
            assert cur.fetchall() == expected
        assert expected[0][1] == Decimal("12.50")
        shown = {r[0]: r[3] for r in other.execute("SHOW JOBS").fetchall()}
        assert shown[job_id] == "SUCCEEDED"
    # A DML job: FETCH gives its command tag and row count.
    conn.execute("DROP TABLE IF EXISTS job_dst")
    conn.execute("CREATE TABLE job_dst (id int, v text)")
    ins = submit(conn, f"AS INSERT INTO job_dst SELECT id, v FROM {src} WHERE id <= 25")
    assert finished(conn, ins)["rows"] == 25
    cur = conn.execute(f"FETCH JOB '{ins}'")
    assert cur.statusmessage == "INSERT 0 25" and cur.rowcount == 25 and cur.description is None
    assert rows(conn, "SELECT count(*) FROM job_dst") == [(25,)]
    # RETURNING rows come with the tag; CREATE TABLE AS and catalog queries run as jobs too.
    ret = submit(conn, "AS UPDATE job_dst SET v = 'x' WHERE id <= 3 RETURNING id")
    finished(conn, ret)
    cur = conn.execute(f"FETCH JOB '{ret}'")
    assert cur.statusmessage == "UPDATE 3" and sorted(cur.fetchall()) == [(1,), (2,), (3,)]
    ctas = submit(conn, "AS CREATE TABLE job_ctas AS SELECT id, v FROM job_dst WHERE id > 20")
    assert finished(conn, ctas)["status"] == "SUCCEEDED"
    assert conn.execute(f"FETCH JOB '{ctas}'").statusmessage == "SELECT 5"
    assert rows(conn, "SELECT count(*) FROM job_ctas") == [(5,)]
    cat = submit(conn, "AS SELECT relname FROM pg_class WHERE relname = 'job_ctas'")
    finished(conn, cat)
    assert rows(conn, f"FETCH JOB '{cat}'") == [("job_ctas",)]
    conn.execute("DROP TABLE job_ctas")


def test_large_result_fetched_in_pieces(tidegate: TidegateServer, conn) -> None:
    job_id = submit(conn, "AS SELECT g AS n, 'row ' || g AS label FROM generate_series(1, 200000) g")
    assert finished(conn, job_id)["rows"] == 200000

    async def body() -> tuple[int, int, int]:
        c = await asyncpg.connect(host="127.0.0.1", port=tidegate.port, user="tidegate", database="tidegate")
        try:
            pieces = total = count = 0
            async with c.transaction():
                cursor = await c.cursor(f"FETCH JOB '{job_id}'")
                while True:
                    piece = await cursor.fetch(50000)  # one Execute with a row limit per piece
                    if not piece:
                        break
                    pieces += 1
                    count += len(piece)
                    total += sum(r["n"] for r in piece)
                    assert piece[0]["label"] == f"row {piece[0]['n']}"
            return pieces, count, total
        finally:
            await c.close()

    pieces, count, total = asyncio.run(body())
    assert (pieces, count, total) == (4, 200000, 200000 * 200001 // 2)


def test_cancel_stops_the_spark_work_within_a_second_and_writes_nothing(conn, src) -> None:
    conn.execute("DROP TABLE IF EXISTS job_cancelled")
    conn.execute("CREATE TABLE job_cancelled (id bigint, v text)")
    job_id = submit(conn, "AS INSERT INTO job_cancelled SELECT a.id::bigint * 10000 + b.id, a.v "
                          "FROM job_big a CROSS JOIN job_src b WHERE a.v || b.v = 'nothing' OR b.id = 1")
    wait_until(lambda: job(conn, job_id)["progress"].startswith("running: Spark stage"), timeout=120,
               what="Spark progress shown")
    started = time.monotonic()
    cur = conn.execute(f"CANCEL JOB '{job_id}'")
    row = dict(zip([d.name for d in cur.description], cur.fetchone()))
    elapsed = time.monotonic() - started
    assert row["status"] == "CANCELLED" and row["error_code"] == "57014"
    assert elapsed < 1.0, f"CANCEL JOB took {elapsed:.2f} s"
    assert rows(conn, "SELECT count(*) FROM job_cancelled") == [(0,)]
    err = error_of(conn, f"FETCH JOB '{job_id}'")
    assert err.sqlstate == "57014" and "cancelled" in err.diag.message_primary
    # The Spark work is gone: both cores answer an ordinary statement at once.
    started = time.monotonic()
    assert rows(conn, f"SELECT count(*) FROM {src} WHERE v > 'a'") == [(1000,)]
    assert time.monotonic() - started < 2
    # Cancelling a finished job changes nothing.
    again = conn.execute(f"CANCEL JOB '{job_id}'").fetchone()
    assert again[3] == "CANCELLED"


def test_timeout_fails_the_job_with_57014(conn, src) -> None:
    job_id = submit(conn, f"slow WITH (timeout = '1 s') AS {SLOW}")
    done = finished(conn, job_id, timeout=60)
    assert (done["status"], done["error_code"], done["timeout"]) == ("FAILED", "57014", "1 s")
    assert "statement timeout" in done["error_message"]
    assert (done["finished_time"] - done["started_time"]).total_seconds() < 5
    err = error_of(conn, f"FETCH JOB '{job_id}'")
    assert err.sqlstate == "57014" and "statement timeout" in err.diag.message_primary
    # The session's statement_timeout bounds its jobs, unless the job says otherwise (0: no limit).
    conn.execute("SET statement_timeout = '1s'")
    bounded = submit(conn, f"AS {SLOW}")
    unbounded = submit(conn, f"WITH (timeout = 0) AS {SLOW}")
    conn.execute("RESET statement_timeout")
    done = finished(conn, bounded, timeout=60)
    assert (done["status"], done["error_code"], done["timeout"]) == ("FAILED", "57014", "1s (statement_timeout)")
    assert job(conn, unbounded)["status"] == "RUNNING"
    assert conn.execute(f"CANCEL JOB '{unbounded}'").fetchone()[3] == "CANCELLED"


def test_errors_and_refusals(conn) -> None:
    failing = submit(conn, "AS SELECT 1 / 0 FROM (VALUES (1)) v(x)")
    done = finished(conn, failing)
    assert (done["status"], done["error_code"], done["error_message"]) == ("FAILED", "22012", "division by zero")
    err = error_of(conn, f"FETCH JOB '{failing}'")  # the job's own error
    assert err.sqlstate == "22012" and err.diag.message_primary == "division by zero"
    for stmt in ("SET search_path = x", "BEGIN", "COMMIT", "SHOW TimeZone", "COPY job_src TO STDOUT",
                 "SUBMIT JOB AS SELECT 1", "DECLARE c CURSOR FOR SELECT 1"):
        assert error_of(conn, f"SUBMIT JOB AS {stmt}").sqlstate == "0A000", stmt
    assert error_of(conn, "SUBMIT JOB WITH (retries = 3) AS SELECT 1").sqlstate == "22023"
    assert error_of(conn, "SUBMIT JOB WITH (timeout = 'soon') AS SELECT 1").sqlstate == "22023"
    assert error_of(conn, "SUBMIT JOB AS").sqlstate == "42601"
    err = error_of(conn, "FETCH JOB 'job-999999'")
    assert err.sqlstate == "42704" and err.diag.message_primary == 'job "job-999999" does not exist'
    assert error_of(conn, "WAIT JOB 'job-999999'").sqlstate == "42704"
    assert error_of(conn, "CANCEL JOB 'job-999999'").sqlstate == "42704"
    # Drivers bind the job id as a parameter: WAIT and CANCEL take one; FETCH and SUBMIT say what to do.
    assert conn.execute("WAIT JOB %s", (failing,)).fetchone()[3] == "FAILED"
    assert error_of(conn, "FETCH JOB %s", (failing,)).sqlstate == "0A000"
    assert error_of(conn, "SUBMIT JOB AS SELECT %s::int", (1,)).sqlstate == "0A000"
    conn.execute("BEGIN")
    assert error_of(conn, "SUBMIT JOB AS SELECT 1").sqlstate == "25001"
    conn.execute("ROLLBACK")
    assert rows(conn, "SELECT 1") == [(1,)]  # the session survives its errors


def test_wait_reports_progress_times_out_and_is_cancelled_without_the_job(conn, src) -> None:
    job_id = submit(conn, f"AS {SLOW}")
    running(conn, job_id)
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    started = time.monotonic()
    cur = conn.execute(f"WAIT JOB '{job_id}' TIMEOUT '2.5 s'")
    assert 2.0 < time.monotonic() - started < 5
    row = dict(zip([d.name for d in cur.description], cur.fetchone()))
    assert row["status"] == "RUNNING"  # the current status, no error
    assert any(n.startswith(f"job {job_id}: RUNNING") for n in notices)
    err = error_of(conn, f"FETCH JOB '{job_id}'")
    assert err.sqlstate == "55000" and "RUNNING" in err.diag.message_primary
    # A cancel of the waiting session stops the wait, not the job.
    threading.Timer(1.0, conn.cancel).start()
    err = error_of(conn, f"WAIT JOB '{job_id}'")
    assert err.sqlstate == "57014"
    assert job(conn, job_id)["status"] == "RUNNING"
    conn.execute(f"CANCEL JOB '{job_id}'")
    # WAIT on a job that ends returns its final row.
    quick = submit(conn, "AS SELECT 42 AS answer FROM (VALUES (1)) v(x)")
    cur = conn.execute(f"WAIT JOB '{quick}'")
    assert cur.fetchone()[3] == "SUCCEEDED"
    assert rows(conn, f"FETCH JOB '{quick}'") == [(42,)]


def test_pending_jobs_wait_for_a_slot_in_order_and_cancel_at_once(conn, src) -> None:
    ids = [submit(conn, f"AS {SLOW}") for _ in range(4)]
    wait_until(lambda: [job(conn, i)["status"] for i in ids] == ["RUNNING", "RUNNING", "PENDING", "PENDING"],
               timeout=60, what="two running, two pending")
    assert conn.execute(f"CANCEL JOB '{ids[3]}'").fetchone()[3] == "CANCELLED"
    assert job(conn, ids[3])["started_time"] is None
    conn.execute(f"CANCEL JOB '{ids[0]}'")
    wait_until(lambda: job(conn, ids[2])["status"] == "RUNNING", timeout=30, what="the next job takes the slot")
    for i in ids[1:3]:
        conn.execute(f"CANCEL JOB '{i}'")
    assert [job(conn, i)["status"] for i in ids] == ["CANCELLED"] * 4


def test_only_the_submitter_or_a_superuser_sees_fetches_or_cancels(tidegate: TidegateServer, conn) -> None:
    for r in ("job_alice", "job_bob"):
        conn.execute(f"DROP ROLE IF EXISTS {r}")
        conn.execute(f"CREATE ROLE {r} LOGIN")
    conn.execute("DROP TABLE IF EXISTS job_secret")
    conn.execute("CREATE TABLE job_secret (x int)")
    conn.execute("INSERT INTO job_secret VALUES (7)")
    conn.execute("GRANT SELECT ON job_secret TO job_alice")

    def as_(role: str) -> psycopg.Connection:
        return psycopg.connect(tidegate.dsn.replace("user=tidegate", f"user={role}"), autocommit=True)

    with as_("job_alice") as alice, as_("job_bob") as bob:
        mine = submit(alice, "AS SELECT x FROM job_secret")
        finished(alice, mine)
        assert rows(alice, f"FETCH JOB '{mine}'") == [(7,)]
        assert rows(conn, f"FETCH JOB '{mine}'") == [(7,)]  # a superuser
        for stmt in (f"FETCH JOB '{mine}'", f"CANCEL JOB '{mine}'"):
            err = error_of(bob, stmt)
            assert err.sqlstate == "42501", stmt
        assert job(bob, mine)["statement"] is None and job(alice, mine)["statement"] == "SELECT x FROM job_secret"
        shown = {r[0]: r[2] for r in bob.execute("SHOW JOBS").fetchall()}
        assert shown[mine] is None
        # A job runs with its submitter's privileges.
        denied = submit(bob, "AS SELECT x FROM job_secret")
        assert finished(bob, denied)["error_code"] == "42501"
    for r in ("job_alice", "job_bob"):
        conn.execute(f"REVOKE ALL ON job_secret FROM {r}")
    conn.execute("DROP TABLE job_secret")


def test_a_job_runs_with_the_settings_of_its_submission(conn) -> None:
    conn.execute("DROP SCHEMA IF EXISTS job_zone CASCADE")
    conn.execute("CREATE SCHEMA job_zone")
    conn.execute("CREATE TABLE job_zone.stamps (at timestamptz)")
    conn.execute("SET TIME ZONE 'America/New_York'")
    conn.execute("SET search_path = job_zone, public")
    ins = submit(conn, "AS INSERT INTO stamps VALUES ('2024-01-01 00:00:00')")
    shown = submit(conn, "AS SELECT current_setting('TimeZone') AS tz")
    conn.execute("RESET TIME ZONE")
    conn.execute("RESET search_path")
    finished(conn, ins)
    finished(conn, shown)
    assert rows(conn, "SELECT at = '2024-01-01 05:00:00+00' FROM job_zone.stamps") == [(True,)]
    assert rows(conn, f"FETCH JOB '{shown}'") == [("America/New_York",)]
    conn.execute("DROP SCHEMA job_zone CASCADE")


def test_asynchronous_refresh_is_a_job(conn, tmp_path: Path, tidegate: TidegateServer) -> None:
    folder = tidegate.data_dir.parent / "job_refresh_src"
    folder.mkdir(exist_ok=True)
    (folder / "a.csv").write_text("1,one\n2,two\n")
    conn.execute("DROP TABLE IF EXISTS job_refreshed")
    conn.execute(f"CREATE TABLE job_refreshed (id int PRIMARY KEY, name text) WITH (connector = 'file', "
                 f"path = '{folder}', refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV (without_header = 'true')")
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    conn.execute("REFRESH TABLE job_refreshed")
    m = re.fullmatch(r"refresh \d+ of table 'public.job_refreshed' started as job (job-\d{6})", notices[-1])
    assert m, notices
    job_id = m.group(1)
    assert job(conn, job_id)["statement"] == 'REFRESH TABLE "public"."job_refreshed"'
    assert conn.execute(f"WAIT JOB '{job_id}'").fetchone()[3] == "SUCCEEDED"
    assert rows(conn, "SELECT * FROM job_refreshed ORDER BY id") == [(1, "one"), (2, "two")]
    assert conn.execute(f"FETCH JOB '{job_id}'").statusmessage == "REFRESH TABLE"
    # SUBMIT JOB AS REFRESH TABLE runs the refresh and reports its error like any job.
    (folder / "b.csv").write_text("3,three\n3,again\n")
    dup = submit(conn, "AS REFRESH TABLE job_refreshed")
    assert finished(conn, dup)["error_code"] == "23505"
    conn.execute("DROP TABLE job_refreshed")


def test_job_events_are_recorded(conn) -> None:
    job_id = submit(conn, "evented AS SELECT 1 AS one FROM (VALUES (1)) v(x)")
    finished(conn, job_id)
    types = wait_until(lambda: [r[0] for r in conn.execute(
        "SELECT type FROM tidegate_private.events WHERE payload->>'job_id' = %s ORDER BY event_id",
        (job_id,)).fetchall()] == ["job.submitted", "job.started", "job.finished"] or None, timeout=30,
        what="job events")
    assert types is True
    assert rows(conn, "SELECT DISTINCT object, username FROM tidegate_private.events WHERE payload->>'job_id' = %s",
                (job_id,)) == [("evented", "tidegate")]


# -- across restarts (a gateway of their own) -----------------------------------------------------


def _restart(gw: TidegateServer, env: dict[str, str]) -> TidegateServer:
    gw.kill9()
    new = start_tidegate(gw.data_dir, env=env)
    new.wait_for_spark()
    return new


def test_kill9_mid_job_then_restart_runs_it_exactly_once_and_results_expire(tmp_path: Path) -> None:
    env = {"TIDEGATE_MAX_RUNNING_JOBS": "1"}
    gw = start_tidegate(tmp_path / "data", env={**env, "TIDEGATE_JOB_TEST_PAUSE": "start:600"})
    try:
        gw.wait_for_spark()
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE k_src (id int, v text)")
            c.execute("INSERT INTO k_src SELECT g, 'v' || g FROM generate_series(1, 100) g")
            c.execute("CREATE TABLE k_dst (id int, v text)")
            c.execute("CREATE FLOW k_flow SINK TO k_sink AS SELECT count(*) AS n FROM k_src")
            before = submit(c, "AS INSERT INTO k_dst SELECT id, v FROM k_src")
            queued = [submit(c, f"AS INSERT INTO k_dst SELECT id + {k * 1000}, v FROM k_src") for k in (1, 2)]
            running(c, before)
            assert [job(c, q)["status"] for q in queued] == ["PENDING", "PENDING"]
        # boot 2: the interrupted job runs again; it stops after its commit landed, before its row
        # says so (readers wait: the commit is not visible yet), and the gateway dies there.
        gw = _restart(gw, {**env, "TIDEGATE_JOB_TEST_PAUSE": "committed:600"})
        wait_until(lambda: any(f"job {before}: its writes landed" in line for line in gw.log), timeout=120,
                   what="the re-run's commit landed")
        gw = _restart(gw, env)
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            done = [finished(c, j) for j in [before, *queued]]
            assert [d["status"] for d in done] == ["SUCCEEDED"] * 3
            assert done[0]["attempts"] == 2 and done[0]["rows"] == 100
            assert rows(c, "SELECT count(*), count(DISTINCT id) FROM k_dst") == [(300, 300)]
            assert c.execute(f"FETCH JOB '{before}'").statusmessage == "INSERT 0 100"
        # A job that is not transactional is not run again after a crash.
        gw = _restart(gw, {**env, "TIDEGATE_JOB_TEST_PAUSE": "start:600"})
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            once = submit(c, "AS DROP FLOW k_flow")
            running(c, once)
        gw = _restart(gw, {**env, "TIDEGATE_JOB_RESULT_TTL": "4 s"})
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            done = finished(c, once)
            assert done["status"] == "FAILED" and done["error_code"] == "57P02"
            assert "not transactional" in done["error_message"] and "DROP FLOW" in done["error_message"]
            # Results expire job_result_ttl after the job ended.
            job_id = submit(c, "AS SELECT 1 AS one FROM (VALUES (1)) v(x)")
            done = finished(c, job_id)
            assert 3.9 < (done["result_expires"] - done["finished_time"]).total_seconds() < 4.1
            assert rows(c, f"FETCH JOB '{job_id}'") == [(1,)]
            time.sleep(max(0.0, (done["result_expires"] - datetime.now(timezone.utc)).total_seconds()) + 0.5)
            err = error_of(c, f"FETCH JOB '{job_id}'")
            assert err.sqlstate == "55000" and "expired" in err.diag.message_primary
            # the sweep removes the stored rows
            wait_until(lambda: not (gw.data_dir / "jobs" / job_id).exists(), timeout=60, what="result removed")
            assert job(c, job_id)["result_expires"] is None
    finally:
        gw.stop()
