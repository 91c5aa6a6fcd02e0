"""Engine-side failures as clients see them: cancel stops Spark's work, not only the reply.

The gateway runs with Spark's UI on a free port so the test reads Spark's own REST status
(active stages, running jobs) rather than trusting the gateway's word.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import psycopg
import pytest
from tests.pgoracle import free_port
from tests.tidegate_server import start_tidegate

_LONG = ("SELECT count(*) FROM generate_series(1, 200000) a CROSS JOIN generate_series(1, 200000) b "
         "WHERE a.a + b.b > 3")


@pytest.fixture(scope="module")
def gateway_with_ui(tmp_path_factory):
    ui = free_port()
    server = start_tidegate(tmp_path_factory.mktemp("tg-cancel") / "data",
                            extra_args=["--spark-conf", "spark.ui.enabled=true",
                                        "--spark-conf", f"spark.ui.port={ui}"],
                            timeout=120)
    server.wait_for_spark()
    yield server, ui
    server.stop()


def _rest(ui: int, path: str) -> list[dict]:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui}/api/v1/{path}", timeout=30) as r:
        return json.loads(r.read())


def _spark_busy(ui: int) -> tuple[int, int, int]:
    """(running jobs, active stages, running tasks) as Spark's status REST API reports them.

    A killed task that goes on running counts only in the last: its stage has failed already.
    """
    app = _rest(ui, "applications")[0]["id"]
    jobs = _rest(ui, f"applications/{app}/jobs?status=running")
    stages = _rest(ui, f"applications/{app}/stages?status=active")
    tasks = sum(e["activeTasks"] for e in _rest(ui, f"applications/{app}/executors"))
    return len(jobs), len(stages), tasks


# Its generated code loops 10^9 times per row of one Parquet batch without looking at Spark's
# kill flag: the cancel alone left its tasks running for the half hour they need.
_DEAF = "SELECT count(*) FROM tc a CROSS JOIN tc b CROSS JOIN tc c CROSS JOIN tc d"


@pytest.mark.parametrize("query", [_LONG, _DEAF], ids=["range", "parquet-nested-loops"])
def test_cancel_stops_spark_tasks(gateway_with_ui, query: str) -> None:
    """After a cancel, Spark runs nothing of the statement within seconds, whether or not its
    tasks ever check their kill flag (engine.reaper)."""
    server, ui = gateway_with_ui
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS tc")
        conn.execute("CREATE TABLE tc (x int)")
        conn.execute("INSERT INTO tc SELECT g FROM generate_series(1, 1000) g")
        idle_by = time.time() + 120  # the gateway's Delta warm-up job may still be running
        while _spark_busy(ui) != (0, 0, 0):
            assert time.time() < idle_by, f"Spark never went idle: {_spark_busy(ui)}"
            time.sleep(0.2)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                conn.execute(query)
            except BaseException as exc:  # noqa: BLE001 - checked below
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.time() + 60
        while _spark_busy(ui)[1] == 0:  # the query's stage is running
            assert time.time() < deadline, "the long query never started a Spark stage"
            time.sleep(0.2)
        time.sleep(1.0)
        cancelled_at = time.monotonic()
        conn.cancel()
        worker.join(30)
        assert not worker.is_alive()
        assert errors and isinstance(errors[0], psycopg.errors.QueryCanceled), errors
        assert errors[0].sqlstate == "57014"
        while _spark_busy(ui) != (0, 0, 0):
            assert time.monotonic() - cancelled_at < 10, f"Spark still busy after cancel: {_spark_busy(ui)}"
            time.sleep(0.1)
        # the session is usable afterwards
        assert conn.execute("SELECT count(*) FROM generate_series(1, 1000) g").fetchone() == (1000,)


_FAILING = [
    "SELECT 1 / x FROM te", "SELECT x % 0 FROM te", "SELECT 1.5 / (x - x) FROM te", "SELECT sum(1 / x) FROM te",
    "SELECT s::int FROM te", "SELECT s::numeric FROM te", "SELECT s::date FROM te", "SELECT s::boolean FROM te",
    "SELECT s::timestamp FROM te", "SELECT (s || '1')::bigint FROM te",
    "SELECT s ~ '(' FROM te", "SELECT regexp_replace(s, '[', 'x') FROM te",
    "SELECT x + 2147483647 + 1 FROM te", "SELECT (x + 32767)::int2 * 2::int2 FROM te",
    "SELECT (x + 9223372036854775807)::int8 + 1 FROM te",
    "INSERT INTO te (v) VALUES ('abcdef')", "SELECT nosuch FROM te",
    "SELECT to_date('2020-13-01', 'YYYY-MM-DD') FROM te", "SELECT to_timestamp(s, 'YYYY') FROM te",
    "SELECT d::timestamp AT TIME ZONE 'Nowhere/Zone' FROM te", "SELECT * FROM generate_series(1, 10, 0)",
    "SELECT x FROM te LIMIT -1", "SELECT x FROM te OFFSET -1", "SELECT x::date FROM te",
    # outside their domain PostgreSQL raises where Spark answers NaN or NULL
    "SELECT sqrt(x - 1) FROM te", "SELECT ln(x) FROM te", "SELECT log(x) FROM te", "SELECT ln(x - 1.5) FROM te",
    "SELECT power(x, -1) FROM te", "SELECT power(x - 1, 0.5) FROM te", "SELECT log(x + 1, 4) FROM te",
    "SELECT sqrt(-2.0::float8) FROM te", "SELECT (x - 2) ^ 0.5 FROM te",
]


def test_engine_errors_have_postgres_sqlstates(tidegate, pg_oracle) -> None:
    setup = ["CREATE TABLE te (x int, s text, v varchar(3), d date)",
             "INSERT INTO te VALUES (0, 'abc', 'ab', '2020-01-01')"]
    answers = []
    for target in (pg_oracle, tidegate):
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            for s in setup:
                conn.execute(s)
            got = []
            for s in _FAILING:
                try:
                    conn.execute(s)
                    got.append((s, "ok"))
                except psycopg.Error as e:
                    got.append((s, e.sqlstate, "" if e.sqlstate != "XX000" else str(e)))
            conn.execute("DROP TABLE te")
            answers.append(got)
    expected, got = answers
    assert all(e[1] not in ("ok", "XX000") for e in expected)
    diffs = [(e, g) for e, g in zip(expected, got) if e[:2] != g[:2]]
    assert not diffs, "\n".join(f"postgres {e}\ntidegate {g}" for e, g in diffs)


def test_pg_typeof_refuses_what_it_cannot_know(tidegate) -> None:
    """pg_typeof() answers from the statement's types; where those are not PostgreSQL's for sure
    (date/time functions) it refuses with 0A000 instead of naming a wrong type. Operators are
    typed by PostgreSQL's operator table (engine.pgoperators): date - date is an integer."""
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tpt (d date, t timestamptz)")
        try:
            for sql in ("SELECT pg_typeof(now()) FROM tpt", "SELECT pg_typeof(date_trunc('day', t)) FROM tpt"):
                with pytest.raises(psycopg.errors.FeatureNotSupported):
                    conn.execute(sql)
            assert conn.execute("SELECT pg_typeof(d), pg_typeof(t) FROM tpt").fetchall() == []
            conn.execute("INSERT INTO tpt VALUES ('2024-01-01', '2024-01-01 00:00+00')")
            assert conn.execute("SELECT pg_typeof(d)::text, pg_typeof(t)::text, pg_typeof(d - d)::text,"
                                " pg_typeof(t - t)::text, pg_typeof(d + 1)::text FROM tpt").fetchall() == [
                ("date", "timestamp with time zone", "integer", "interval", "date")]
        finally:
            conn.execute("DROP TABLE tpt")


_OVERFLOWS = ["SELECT x + 1 FROM tov", "SELECT x * 2 FROM tov", "SELECT -x - 2 FROM tov", "SELECT abs(-x - 1) FROM tov",
              "SELECT i + 2147483647 FROM tov", "SELECT i * i * i FROM tov", "SELECT s + s FROM tov",
              "SELECT s::smallint * 2::smallint FROM tov", "SELECT x::int FROM tov", "SELECT i::smallint FROM tov",
              "SELECT (i + 0)::int2 FROM tov", "SELECT sum(x + 1) FROM tov GROUP BY i", "SELECT x + i FROM tov",
              "SELECT i + 1, x + 1 FROM tov", "SELECT (x - 1) * 3 / 3 FROM tov"]


def test_integer_overflows_name_the_type_as_postgres_does(tidegate, pg_oracle) -> None:
    """Spark's overflow error says only "overflow": the message names the type of the operation
    that overflowed, from the statement's translation (engine.translate: integer_ops)."""
    answers = []
    for target in (pg_oracle, tidegate):
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE tov (x bigint, i int, s smallint)")
            conn.execute("INSERT INTO tov VALUES (9223372036854775807, 2147483647, 32767)")
            got = []
            for sql in _OVERFLOWS:
                with pytest.raises(psycopg.errors.NumericValueOutOfRange) as info:
                    conn.execute(sql)
                got.append((sql, info.value.diag.message_primary))
            conn.execute("DROP TABLE tov")
            answers.append(got)
    expected, got = answers
    assert got == expected
