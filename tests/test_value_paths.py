"""One set of PostgreSQL value rules, whichever way a value arrives (issue 17).

The same input text reaches tidegate four ways: as a literal cast in SQL (the translator), as a
bound parameter (the wire codec), as an INSERT ... VALUES literal stored in a column (storage), and
as a COPY FROM STDIN field (the COPY decoder). Each way must read it as PostgreSQL 15 does: the
same value, or PostgreSQL's SQLSTATE; where tidegate refuses a value PostgreSQL has but its tables
cannot store (infinite or BC dates) every way refuses it with the same 0A000. Run under a session
zone with DST so timestamptz input without an offset depends on it.
"""

from __future__ import annotations

from decimal import Decimal

import psycopg
import pytest
from psycopg import sql

from tests.targets import Target, target_for

ZONE = "America/New_York"

INPUTS: dict[str, list[str]] = {
    "int4": ["42", " -7 ", "+3", "2147483647", "2147483648", "1.5", "1e3", "abc", ""],
    "int8": ["9223372036854775807", "-9223372036854775808", "9223372036854775808", "0x1F", "1_000"],
    "numeric": ["1.50", "-0.000", "1e3", "1E-2", " 12 ", ".5", "5.", "abc", "1_000", "NaN"],
    "float8": ["1.5", "-0", "1e308", "1e309", "Infinity", "-inf", "NaN", "nan", "1_0", "0x10", "abc"],
    "bool": ["t", "TRUE", " yes ", "of", "off", "1", "0", "maybe", ""],
    "date": ["2024-02-29", "2023-02-29", "20240315", "2024-03-15 10:00", "epoch", "2024-1-5", "24-01-01",
             "2024-13-01", "infinity", "-infinity", "0044-03-15 BC", "2024-01-01abc"],
    "timestamp": ["2024-03-10 02:30:00", "2024-01-01T12:00:00", "2024-01-01 12:00:00+05",
                  "2024-01-01 24:00:00", "2024-1-1 1:2:3.1234567", "20240101 12:00", "epoch",
                  "2024-01-01 25:00", "infinity", "nonsense"],
    "timestamptz": ["2024-03-10 02:30:00", "2024-11-03 01:30:00", "2024-07-01 12:00:00+02",
                    "2024-01-01 12:00 Asia/Kolkata", "2024-01-01 12:00:00Z", "20240101", "epoch",
                    "2024-02-30 00:00", "-infinity"],
    "text[]": ["{a,b}", '{"a,b",NULL,"NULL"}', "{}", "{a,}", '{a"b}', "{{a},{b}}", "a,b"],
    "int4[]": ["{1,2,3}", "{1,NULL}", "{1,x}", "{1,{2}}"],
}


def _read(conn: psycopg.Connection, query: sql.Composable, params: tuple = ()) -> str:
    """The first value as text, or the SQLSTATE of the error."""
    try:
        row = conn.execute(query, params).fetchone()
    except psycopg.Error as e:
        return f"ERROR {e.sqlstate}"
    return "NULL" if row is None or row[0] is None else str(row[0])


def _literal(conn: psycopg.Connection, typ: str, text: str) -> str:
    return _read(conn, sql.SQL("SELECT {}::{}::text").format(sql.Literal(text), sql.SQL(typ)))


def _parameter(conn: psycopg.Connection, typ: str, text: str) -> str:
    return _read(conn, sql.SQL("SELECT %s::{}::text").format(sql.SQL(typ)), (text,))


def _stored(conn: psycopg.Connection, table: str, text: str) -> str:
    conn.execute(f"TRUNCATE {table}")
    try:
        conn.execute(sql.SQL("INSERT INTO {} VALUES ({})").format(sql.Identifier(table), sql.Literal(text)))
    except psycopg.Error as e:
        return f"ERROR {e.sqlstate}"
    return _read(conn, sql.SQL("SELECT v::text FROM {}").format(sql.Identifier(table)))


def _copied(conn: psycopg.Connection, table: str, text: str) -> str:
    conn.execute(f"TRUNCATE {table}")
    escaped = text.replace("\\", "\\\\")
    try:
        with conn.cursor().copy(sql.SQL("COPY {} (v) FROM STDIN").format(sql.Identifier(table))) as copy:
            copy.write(escaped + "\n")
    except psycopg.Error as e:
        return f"ERROR {e.sqlstate}"
    return _read(conn, sql.SQL("SELECT v::text FROM {}").format(sql.Identifier(table)))


def _same_stored_numeric(typ: str, way: str, got: str, expected: str) -> bool:
    """An unconstrained numeric column keeps the number, not the scale it was written with
    (docs/UNSUPPORTED.md, "Wrong answers": '1.50' reads back 1.5)."""
    if typ != "numeric" or way not in ("stored", "copied") or got.startswith("ERROR") or expected.startswith("ERROR"):
        return False
    return Decimal(got) == Decimal(expected)


@pytest.fixture(scope="module")
def servers(request: pytest.FixtureRequest) -> tuple[Target, Target]:
    return target_for(request, "postgres"), target_for(request, "tidegate")


@pytest.mark.parametrize("typ", list(INPUTS))
def test_every_path_reads_a_value_as_postgres_does(typ: str, servers: tuple[Target, Target]) -> None:
    oracle, gateway = servers
    table = "vp_" + typ.replace("[]", "_array")
    answers: dict[str, dict[str, list[str]]] = {}
    for target in (oracle, gateway):
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f"SET TIME ZONE '{ZONE}'")
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} (v {typ})")
            got = answers.setdefault(target.name, {})
            for text in INPUTS[typ]:
                got[text] = [_literal(conn, typ, text), _parameter(conn, typ, text),
                             _stored(conn, table, text), _copied(conn, table, text)]
            conn.execute(f"DROP TABLE {table}")
    wrong = []
    for text, (literal, parameter, stored, copied) in answers["tidegate"].items():
        ways = {"literal": literal, "parameter": parameter, "stored": stored, "copied": copied}
        expected = answers["postgres"][text][0]
        for way, got in ways.items():
            # PostgreSQL's four ways agree with each other; so must tidegate's, and with PostgreSQL,
            # unless every way refuses the value as a documented gap (0A000)
            refused_everywhere = set(ways.values()) == {"ERROR 0A000"}
            if got != expected and not refused_everywhere and not _same_stored_numeric(typ, way, got, expected):
                wrong.append(f"{typ} {text!r} {way}: tidegate {got}, postgres {expected}")
    assert not wrong, "\n".join(wrong)
    # the PostgreSQL answers themselves agree across the four ways (a check of this test's paths)
    for text, ways in answers["postgres"].items():
        assert len(set(ways)) == 1, (typ, text, ways)


CONSTANT_QUERIES = [
    "SELECT upper('ßàéﬁx'), lower('İΣAΣ'), upper(NULL::text), lower('ABC')",
    "SELECT coalesce(1, 2.5), coalesce(NULL, 1.50), coalesce(NULL::int, NULL)",
    "SELECT quote_literal(E'a\\\\b'), quote_literal('it''s'), quote_ident('Foo Bar')",
    "SELECT array_to_string(ARRAY[1, NULL, 3], ',', '*'), array_length(ARRAY[]::int[], 1), array_length(ARRAY[1, 2], 1)",
    "SELECT 'off'::bool, ' yes '::boolean, 'of'::bool",
    "SELECT '{a,\"b c\",NULL}'::text[]::text, ARRAY[1.5, NULL]::text",
]


@pytest.mark.parametrize("query", CONSTANT_QUERIES)
def test_constant_queries_compute_as_postgres(query: str, servers: tuple[Target, Target]) -> None:
    """A query that reads no table computes what PostgreSQL computes, whichever evaluator answers
    it (the catalog's in-process one only reads session and catalog facts)."""
    answers = []
    for target in servers:
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            try:
                answers.append(conn.execute(query).fetchall())
            except psycopg.Error as e:
                answers.append(f"ERROR {e.sqlstate}")
    assert answers[1] == answers[0], query
