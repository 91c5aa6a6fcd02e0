"""Relation-free queries computed in the gateway (engine/scalar.py, issue 23): generated
expressions over integer, boolean and text constants and parameters, each run on PostgreSQL 15 and
on tidegate through psycopg (with its parameters, extended protocol), must give PostgreSQL's
column names, types and values, or its SQLSTATE and message; the same statements with
``SET tidegate.interactive = off`` (Spark) must agree with the gateway's answer."""

from __future__ import annotations

import random
from dataclasses import dataclass

import psycopg
import pytest

from tests.targets import target_for
from tests.wire import rows

SEED = 23
COUNT = 500

INT_TYPES = ["smallint", "integer", "bigint", "int2", "int4", "int8"]
INT_LITERALS = ["0", "1", "-1", "2", "3", "7", "-7", "10", "100", "32767", "-32768", "32768", "65535",
                "2147483647", "-2147483648", "2147483648", "3037000499", "4294967296",
                "9223372036854775807", "-9223372036854775808"]
TEXT_LITERALS = ["'a'", "''", "'abc'", "'Zoë'", "'12'", "' 7 '", "'-0'", "'x'", "'1e3'", "'99999999999'",
                 "'-32768'", "'+5'", "'t'", "'off'", "'YES'", "'2147483648'"]
BOOL_LITERALS = ["true", "false", "NULL::boolean", "'yes'::boolean", "'off'::bool", "'t'::bool", "'maybe'::bool"]
INT_PARAMS: list[object] = [0, 1, -1, 5, True, 32767, -32768, 40000, 2147483647, -2147483648, 2**31, 2**62, "12",
                            " 8 ", "x", "", "99999", None]
TEXT_PARAMS: list[object] = ["a", "", "héllo", "12", None, 42, -7, True]
BOOL_PARAMS: list[object] = [True, False, None, "on", "f", "nope"]


@dataclass
class Question:
    sql: str  # with %s placeholders for psycopg
    params: list[object]


class Generator:
    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.params: list[object] = []

    def _param(self, cast: str, values: list[object]) -> str:
        self.params.append(self.rnd.choice(values))
        return f"%s::{cast}" if self.rnd.random() < 0.7 else f"CAST(%s AS {cast})"

    def integer(self, depth: int) -> str:
        r = self.rnd.random()
        if depth <= 0 or r < 0.25:
            return self.rnd.choice(INT_LITERALS + ["NULL::int", "NULL::bigint"])
        if r < 0.35:
            return self._param(self.rnd.choice(INT_TYPES), INT_PARAMS)
        if r < 0.7:
            op = self.rnd.choice(["+", "-", "*", "/", "%"])
            return f"({self.integer(depth - 1)} {op} {self.integer(depth - 1)})"
        if r < 0.78:
            # (a space: "--" starts a comment)
            return f"- {self.integer(depth - 1)}" if self.rnd.random() < 0.5 else f"-({self.integer(depth - 1)})"
        if r < 0.9:
            return f"({self.integer(depth - 1)})::{self.rnd.choice(INT_TYPES)}"
        return f"{self.rnd.choice(TEXT_LITERALS)}::{self.rnd.choice(INT_TYPES)}" if self.rnd.random() < 0.5 \
            else f"({self.text(depth - 1)})::{self.rnd.choice(INT_TYPES)}"

    def text(self, depth: int) -> str:
        r = self.rnd.random()
        if depth <= 0 or r < 0.3:
            return self.rnd.choice(TEXT_LITERALS[:6] + ["NULL::text"])
        if r < 0.4:
            return self._param(self.rnd.choice(["text", "varchar"]), TEXT_PARAMS)
        if r < 0.75:
            left = self.rnd.choice([self.text, self.integer, self.boolean])(depth - 1)
            return f"({left} || {self.text(depth - 1)})"
        if r < 0.9:
            return f"({self.integer(depth - 1)})::text"
        return f"({self.boolean(depth - 1)})::text"

    def boolean(self, depth: int) -> str:
        r = self.rnd.random()
        if depth <= 0 or r < 0.2:
            return self.rnd.choice(BOOL_LITERALS)
        if r < 0.28:
            return self._param("boolean", BOOL_PARAMS)
        if r < 0.5:
            op = self.rnd.choice(["=", "<>", "<", "<=", ">", ">="])
            return f"({self.integer(depth - 1)} {op} {self.integer(depth - 1)})"
        if r < 0.58:
            return f"({self.text(depth - 1)} {self.rnd.choice(['=', '<>'])} {self.text(depth - 1)})"
        if r < 0.62:
            return f"({self.boolean(depth - 1)} {self.rnd.choice(['=', '<>', '<', '>='])} {self.boolean(depth - 1)})"
        if r < 0.82:
            return f"({self.boolean(depth - 1)} {self.rnd.choice(['AND', 'OR'])} {self.boolean(depth - 1)})"
        # NOT and IS NULL in parentheses: sqlglot binds "NOT (a) || b" and "a IS NULL || b" tighter
        # than PostgreSQL does (docs/UNSUPPORTED.md)
        if r < 0.9:
            return f"(NOT ({self.boolean(depth - 1)}))"
        inner = self.rnd.choice([self.integer, self.text, self.boolean])(depth - 1)
        return f"(({inner}) IS {self.rnd.choice(['', 'NOT '])}NULL)"

    def question(self) -> Question:
        self.params = []
        items = []
        for k in range(self.rnd.randint(1, 3)):
            expr = self.rnd.choice([self.integer, self.text, self.boolean])(self.rnd.randint(0, 3))
            items.append(expr + (f" AS c{k}" if self.rnd.random() < 0.3 else ""))
        return Question("SELECT " + ", ".join(items), self.params)


def questions(seed: int, count: int) -> list[Question]:
    gen = Generator(random.Random(seed))
    return [gen.question() for _ in range(count)]


def answer(conn: psycopg.Connection, q: Question) -> tuple:
    """(names, type oids, rows) or ("error", SQLSTATE, message)."""
    try:
        cur = conn.execute(q.sql, q.params or None)
        return tuple(d.name for d in cur.description), tuple(d.type_code for d in cur.description), cur.fetchall()
    except psycopg.Error as e:
        return "error", e.sqlstate, e.diag.message_primary


@pytest.fixture(scope="module")
def conns(request: pytest.FixtureRequest):
    pg, tg = target_for(request, "postgres"), target_for(request, "tidegate")
    with psycopg.connect(pg.dsn, autocommit=True) as p, psycopg.connect(tg.dsn, autocommit=True) as t, \
            psycopg.connect(tg.dsn, autocommit=True) as s:
        s.execute("SET tidegate.interactive = off")
        yield p, t, s


def _in_gateway(conn: psycopg.Connection, q: Question) -> bool:
    try:
        plan = conn.execute("EXPLAIN " + q.sql, q.params or None).fetchall()
    except psycopg.Error:
        return False
    return plan[0][0].startswith("Result (computed in the gateway")


@pytest.mark.timeout(900)
def test_generated_expressions_answer_as_postgres_and_as_spark(conns) -> None:
    pg, tg, spark = conns
    qs = questions(SEED, COUNT)
    wrong, disagree, in_gateway, errors = [], [], 0, 0
    for q in qs:
        expected, got = answer(pg, q), answer(tg, q)
        if expected != got:
            wrong.append(f"{q.sql} {q.params}\n  postgres: {expected}\n  tidegate: {got}")
            continue
        errors += got[0] == "error"
        if _in_gateway(tg, q):
            in_gateway += 1
            other = answer(spark, q)
            # Spark's path: the same answer, or for an error the same SQLSTATE
            if other != got and not (got[0] == "error" and other[0] == "error" and other[1] == got[1]):
                disagree.append(f"{q.sql} {q.params}\n  gateway: {got}\n  spark:   {other}")
    assert not wrong, f"{len(wrong)} of {len(qs)} differ from PostgreSQL:\n" + "\n".join(wrong[:25])
    assert not disagree, f"{len(disagree)} differ between the paths:\n" + "\n".join(disagree[:25])
    # the gateway's evaluator answers most statements that have an answer (EXPLAIN of one that
    # fails fails too), and the generator reaches PostgreSQL's errors
    assert in_gateway > 0.9 * (len(qs) - errors) and errors > 0.1 * len(qs), (in_gateway, errors)


def test_what_is_computed_in_the_gateway(conns) -> None:
    _, tg, _ = conns
    gateway = ["SELECT 1 + 1", "SELECT %s::bigint + 1", "SELECT 'a' || %s::text", "SELECT NOT %s::boolean",
               "SELECT -2147483648 / 2 IS NULL"]
    spark = ["SELECT 1.5 + 1", "SELECT %s + 1", "SELECT 'a' < 'b'", "SELECT abs(-1)", "SELECT 1::numeric",
             "SELECT true::int", "SELECT 1 + '5'", "SELECT 7 = '7'", "SELECT true AND 't'"]
    for sql in gateway:
        assert _in_gateway(tg, Question(sql, [True if "boolean" in sql else 5] * sql.count("%s"))), sql
    for sql in spark:
        assert not _in_gateway(tg, Question(sql, [5] * sql.count("%s"))), sql
    # one parameter cast to two types: PostgreSQL's inference decides (Spark's path)
    plan = tg.execute("EXPLAIN SELECT %(a)s::bigint, %(a)s::int", {"a": 5}).fetchall()
    assert not plan[0][0].startswith("Result (computed in the gateway")
    # a parameter value of a type the evaluator does not read goes to Spark, with the same answer
    assert rows(tg, "SELECT %s::bigint + 1", (2.5,)) == [(3,)]  # a float8 rounds half to even
    tg.execute("SET tidegate.interactive = off")
    try:
        assert not _in_gateway(tg, Question("SELECT 1 + 1", []))
        assert rows(tg, "SELECT %s::bigint + 1", (5,)) == [(6,)]
    finally:
        tg.execute("RESET tidegate.interactive")


def test_errors_come_in_postgres_order(conns) -> None:
    """A string literal is read when the statement is parsed, a parameter at Bind, then the
    expressions are computed left to right; AND / OR stop at a false / true operand."""
    pg, tg, _ = conns
    cases = [Question("SELECT 1/0, 'x'::int", []), Question("SELECT 1/0, %s::int", ["x"]),
             Question("SELECT 'y'::int, %s::int", ["x"]), Question("SELECT false AND 1/0 = 1", []),
             Question("SELECT 1/0 = 1 AND false", []), Question("SELECT true OR %s::int2 = 1", [70000]),
             Question("SELECT %s::int2", [70000]), Question("SELECT %s::int2", ["70000"]),
             Question("SELECT %s::int, %s::int", ["a", "b"]),
             # a string literal operand takes the other operand's type (here on Spark's path)
             Question("SELECT 1 + '5', 7 = '7', 'x' = 'x'::text, true AND 't'", []),
             Question("SELECT 1 + 'a'", [])]
    for q in cases:
        assert answer(tg, q) == answer(pg, q), q.sql


def test_asyncpg_and_prepared_statements(conns, request: pytest.FixtureRequest) -> None:
    import asyncio

    import asyncpg

    tg = target_for(request, "tidegate")

    async def run() -> list:
        conn = await asyncpg.connect(host="127.0.0.1", port=tg.port, user=tg.user, database=tg.dbname)
        try:
            stmt = await conn.prepare("SELECT $1::bigint + 1 AS n, $2::text || '!' AS t")
            out = [await stmt.fetchrow(k, f"v{k}") for k in (1, 2, 9223372036854775806)]
            assert [a.name for a in stmt.get_attributes()] == ["n", "t"]
            assert [p.name for p in stmt.get_parameters()] == ["int8", "text"]
            try:
                await stmt.fetchrow(9223372036854775807, "x")
            except asyncpg.PostgresError as e:
                out.append((e.sqlstate, e.args[0]))
            return out
        finally:
            await conn.close()

    got = asyncio.run(run())
    assert [tuple(r) for r in got[:3]] == [(2, "v1!"), (3, "v2!"), (9223372036854775807, "v9223372036854775806!")]
    assert got[3] == ("22003", "bigint out of range")


def test_explain_fails_as_postgres_when_planning_fails(conns) -> None:
    """PostgreSQL folds constants while it plans, so EXPLAIN of a query whose constants fail
    fails too; on both paths (Spark printed its failure as the plan)."""
    pg, tg, spark = conns
    for sql, state in (("EXPLAIN SELECT 1/0", "22012"), ("EXPLAIN VERBOSE SELECT 1/0", "22012"),
                       ("EXPLAIN SELECT 32767::int2 + 1::int2", "22003")):
        for conn in (pg, tg, spark):
            got = answer(conn, Question(sql, []))
            assert got[:2] == ("error", state), (sql, got)
    assert rows(spark, "EXPLAIN SELECT 1 + 1")[0][0].startswith("== Physical Plan ==")
