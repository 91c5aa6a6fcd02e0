"""INSERT / UPDATE / DELETE ... RETURNING against PostgreSQL 15: the rows, and what a failing
RETURNING leaves behind.

PostgreSQL computes RETURNING inside the statement: when it fails (a division by zero, a failed
cast, an unknown column) the statement's writes are undone and the client sees only the error.
tidegate wrote the rows first and computed RETURNING after, so an error reached the client while
the rows stayed written. Each script runs on both servers; the outcome of every statement (rows
as text, or the SQLSTATE) and the table afterwards must be PostgreSQL's.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.targets import target_for
from tests.test_sql_vs_postgres import run_raw

SETUP = ["DROP TABLE IF EXISTS rt", "CREATE TABLE rt (id int PRIMARY KEY, c int, t text)",
         "INSERT INTO rt VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 0, '7')"]

# Statements whose RETURNING fails after the rows are computed: nothing may be written.
FAILING = [
    "UPDATE rt SET c = c + 1 WHERE id = 1 RETURNING c / 0",
    "UPDATE rt SET c = c + 10 RETURNING id, t::int",
    "INSERT INTO rt VALUES (4, 4, 'd') RETURNING c / (c - 4)",
    "INSERT INTO rt VALUES (5, 5, 'e'), (6, 6, 'f') RETURNING t::int",
    "INSERT INTO rt VALUES (7, 7, 'g') RETURNING nosuch",
    "DELETE FROM rt WHERE id = 2 RETURNING 1 / (c - c)",
    "DELETE FROM rt RETURNING t::numeric",
    "INSERT INTO rt VALUES (1, 9, 'x'), (8, 8, 'h') ON CONFLICT (id) DO UPDATE SET c = excluded.c RETURNING 1 / (c - 9)",
    "UPDATE rt SET c = -1 WHERE id = 3 RETURNING sqrt(c)",
]
# Statements that succeed: their rows (in key order) and the table afterwards.
SUCCEEDING = [
    "INSERT INTO rt VALUES (1, 9, 'x'), (9, 9, 'i') ON CONFLICT DO NOTHING RETURNING id, c",
    "INSERT INTO rt VALUES (2, 20, 'y'), (10, 10, 'j') ON CONFLICT (id) DO UPDATE SET c = excluded.c + rt.c RETURNING *",
    "UPDATE rt SET c = c * 2 WHERE id > 2 RETURNING id, c + 1 AS next, upper(t)",
    "INSERT INTO rt (id, t) VALUES (11, 'k') RETURNING id, c IS NULL, length(t)",
    "DELETE FROM rt WHERE c > 15 RETURNING id, c::text || t",
]


@pytest.fixture(scope="module")
def connections(request: pytest.FixtureRequest):
    oracle, server = target_for(request, "postgres"), target_for(request, "tidegate")
    with psycopg.connect(oracle.dsn, autocommit=True) as oconn, psycopg.connect(server.dsn, autocommit=True) as sconn:
        yield oconn, sconn


def _setup(*conns: psycopg.Connection) -> None:
    for conn in conns:
        for stmt in SETUP:
            conn.execute(stmt)


def _table(conn: psycopg.Connection) -> tuple:
    return run_raw(conn, "SELECT * FROM rt ORDER BY id")


def _sorted(outcome: tuple) -> tuple:
    return outcome if outcome[0] == "ERROR" else (outcome[0], outcome[1], sorted(outcome[2], key=str))


def test_failing_returning_writes_nothing(connections) -> None:
    oconn, sconn = connections
    for sql in FAILING:
        _setup(oconn, sconn)
        expected, got = run_raw(oconn, sql), run_raw(sconn, sql)
        assert expected[0] == "ERROR", (sql, expected)
        assert got[:2] == expected[:2], (sql, expected, got)
        assert _table(sconn) == _table(oconn), sql  # the table as it was


def test_failing_returning_inside_a_block_rolls_back(connections) -> None:
    oconn, sconn = connections
    _setup(oconn, sconn)
    for conn in (oconn, sconn):
        conn.execute("BEGIN")
        conn.execute("UPDATE rt SET c = 100 WHERE id = 2")
        assert run_raw(conn, FAILING[0])[0] == "ERROR"
        conn.execute("ROLLBACK")
    assert _table(sconn) == _table(oconn)


def test_returning_rows_match_postgres(connections) -> None:
    oconn, sconn = connections
    _setup(oconn, sconn)
    for sql in SUCCEEDING:
        expected, got = run_raw(oconn, sql), run_raw(sconn, sql)
        assert expected[0] != "ERROR", (sql, expected)
        assert _sorted(got) == _sorted(expected), sql
        assert _table(sconn) == _table(oconn), sql


def test_subquery_reading_the_target_is_refused_before_writing(connections) -> None:
    """PostgreSQL's subquery in RETURNING reads the table as it was before the statement; tidegate
    refuses it (0A000, with a hint) rather than answer from the affected rows, and writes nothing."""
    oconn, sconn = connections
    _setup(oconn, sconn)
    got = run_raw(sconn, "UPDATE rt SET c = c + 1 WHERE id = 1 RETURNING c, (SELECT count(*) FROM rt)")
    assert got[:2] == ("ERROR", "0A000")
    assert _table(sconn) == _table(oconn)
    sql = "UPDATE rt SET c = c + 1 WHERE id = 1 RETURNING c, (SELECT 5)"  # another relation-free subquery: answered
    assert run_raw(sconn, sql) == run_raw(oconn, sql)
