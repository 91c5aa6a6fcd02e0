"""asyncpg (binary protocol, extended query, COPY, cancel) against tidegate and PostgreSQL 15.

asyncpg always prepares statements and asks for binary results, so it exercises the gateway's
Parse/Describe/Bind/Execute path and binary codecs. Each test runs against both servers.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import struct
import time
import uuid
from decimal import Decimal
from typing import Any

import asyncpg
import pytest
from tests.targets import Target, target_for as _target


@pytest.fixture(scope="module", params=["postgres", "tidegate"])
def server(request: pytest.FixtureRequest) -> Target:
    return _target(request, request.param)


async def connect(target: Target) -> asyncpg.Connection:
    return await asyncpg.connect(host=target.host, port=target.port, user=target.user,
                                 database=target.dbname, timeout=30)


def run(coro) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


async def fresh(conn: asyncpg.Connection, name: str, columns: str) -> None:
    await conn.execute(f"DROP TABLE IF EXISTS {name}")
    await conn.execute(f"CREATE TABLE {name} ({columns})")


def test_fetch_with_params(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_people", "id int, name text, score double precision")
            await conn.execute("INSERT INTO apg_people VALUES ($1, $2, $3), ($4, $5, $6), ($7, $8, $9)",
                               1, "ann", 9.5, 2, "bob", 7.25, 3, None, None)
            rows = await conn.fetch("SELECT id, name, score FROM apg_people WHERE score > $1 ORDER BY id", 7.0)
            assert [tuple(r) for r in rows] == [(1, "ann", 9.5), (2, "bob", 7.25)]
            assert rows[0]["name"] == "ann"
            assert list(rows[0].keys()) == ["id", "name", "score"]
            assert await conn.fetchval("SELECT count(*) FROM apg_people WHERE name IS NULL") == 1
            assert await conn.fetchrow("SELECT $1::int + 1 AS n, $2::text AS t", 41, "x") == (42, "x")
            assert await conn.fetchval("SELECT name FROM apg_people WHERE id = $1", 99) is None
        finally:
            await conn.close()
    run(body())


def test_prepared_statement(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_prep", "k int, v text")
            await conn.execute("INSERT INTO apg_prep VALUES (1, 'a'), (2, 'b'), (3, 'c')")
            stmt = await conn.prepare("SELECT v, k * 10 AS k10 FROM apg_prep WHERE k >= $1 ORDER BY k")
            assert [a.name for a in stmt.get_attributes()] == ["v", "k10"]
            assert [a.type.name for a in stmt.get_attributes()] == ["text", "int4"]
            assert [t.name for t in stmt.get_parameters()] == ["int4"]
            assert [tuple(r) for r in await stmt.fetch(2)] == [("b", 20), ("c", 30)]
            assert await stmt.fetchval(3) == "c"
            assert [tuple(r) for r in await stmt.fetch(1)] == [("a", 10), ("b", 20), ("c", 30)]
        finally:
            await conn.close()
    run(body())


def test_prepared_insert_parameters_take_column_types(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_prep_ins", "id bigint, name text, at timestamp, n numeric(6,2)")
            stmt = await conn.prepare("INSERT INTO apg_prep_ins (name, id, at) VALUES ($1, $2, $3), ('x', $2, NULL)")
            assert [t.name for t in stmt.get_parameters()] == ["text", "int8", "timestamp"]
            assert stmt.get_attributes() == ()
            await stmt.fetch("a", 7, dt.datetime(2024, 5, 1, 12, 30))
            stmt = await conn.prepare("INSERT INTO apg_prep_ins VALUES ($1, 'y', NULL, $2)")
            assert [t.name for t in stmt.get_parameters()] == ["int8", "numeric"]
            await stmt.fetch(8, Decimal("1.25"))
            rows = await conn.fetch("SELECT id, name, at, n FROM apg_prep_ins ORDER BY id, name")
            assert [tuple(r) for r in rows] == [(7, "a", dt.datetime(2024, 5, 1, 12, 30), None), (7, "x", None, None),
                                                (8, "y", None, Decimal("1.25"))]
        finally:
            await conn.close()
    run(body())


def test_cursor_in_transaction(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_cursor", "id int")
            await conn.execute("INSERT INTO apg_cursor SELECT g FROM generate_series(1, 40) g")
            async with conn.transaction():
                cur = await conn.cursor("SELECT id FROM apg_cursor ORDER BY id")
                first = await cur.fetch(5)
                assert [r["id"] for r in first] == [1, 2, 3, 4, 5]
                assert (await cur.fetchrow())["id"] == 6
                await cur.forward(4)
                assert [r["id"] for r in await cur.fetch(3)] == [11, 12, 13]
                seen = [r["id"] async for r in conn.cursor("SELECT id FROM apg_cursor WHERE id > $1 ORDER BY id",
                                                           30, prefetch=4)]
                assert seen == list(range(31, 41))
        finally:
            await conn.close()
    run(body())


UTC = dt.timezone.utc
TYPES: list[tuple[str, str, Any]] = [
    ("c_bool", "boolean", False),
    ("c_int2", "smallint", 32767),
    ("c_int4", "integer", -2147483648),
    ("c_int8", "bigint", 9223372036854775807),
    ("c_float4", "real", -0.25),
    ("c_float8", "double precision", 2.718281828459045),
    ("c_numeric", "numeric(18,4)", Decimal("12345678901234.5678")),
    ("c_text", "text", "unicode ✓ and\nnewline"),
    ("c_varchar", "varchar(8)", "vc"),
    ("c_char", "char(4)", "ab  "),
    ("c_bytea", "bytea", bytes(range(256))),
    ("c_date", "date", dt.date(1970, 1, 1)),
    ("c_time", "time", dt.time(23, 59, 59, 999999)),
    ("c_ts", "timestamp", dt.datetime(2000, 1, 1, 0, 0, 0, 1)),
    ("c_tstz", "timestamptz", dt.datetime(2024, 6, 30, 18, 0, 5, 250000, tzinfo=UTC)),
    ("c_interval", "interval", dt.timedelta(days=-1, seconds=3600, microseconds=5)),
    ("c_json", "json", '{"a": 1}'),
    ("c_jsonb", "jsonb", '{"a": [1, "x"]}'),
    ("c_uuid", "uuid", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    ("a_int4", "integer[]", [1, None, 3]),
    ("a_int8", "bigint[]", [-1, 2**40]),
    ("a_text", "text[]", ["a", "", None, "z z"]),
    ("a_float8", "double precision[]", [0.5, -0.0]),
    ("a_bool", "boolean[]", [True, None]),
    ("a_date", "date[]", [dt.date(2024, 2, 29)]),
    ("a_ts", "timestamp[]", [dt.datetime(2024, 2, 29, 12, 0)]),
    ("a_numeric", "numeric(6,2)[]", [Decimal("1.25"), Decimal("-9999.99")]),
    ("a_uuid", "uuid[]", [uuid.UUID("12345678-1234-5678-1234-567812345678")]),
]


def test_binary_types_round_trip(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_types", "id int, " + ", ".join(f"{n} {d}" for n, d, _ in TYPES))
            args = ", ".join(f"${i + 2}" for i in range(len(TYPES)))
            await conn.execute(f"INSERT INTO apg_types VALUES ($1, {args})", 1, *[v for _, _, v in TYPES])
            await conn.execute("INSERT INTO apg_types (id) VALUES (2)")
            rows = await conn.fetch(f"SELECT {', '.join(n for n, _, _ in TYPES)} FROM apg_types ORDER BY id")
            problems = [f"{name} {decl}: expected {value!r}, got {got!r}"
                        for (name, decl, value), got in zip(TYPES, rows[0]) if got != value]
            problems += [f"{name} {decl}: expected NULL, got {got!r}"
                         for (name, decl, _), got in zip(TYPES, rows[1]) if got is not None]
            assert not problems, "\n".join(problems)
            # The same values sent back as parameters compare equal inside the server.
            comparable = [(n, v) for n, d, v in TYPES
                          if d not in ("json", "real", "double precision[]") and not d.startswith("char")]
            where = " AND ".join(f"{n} = ${i + 1}" for i, (n, _) in enumerate(comparable))
            vals = [v for _, v in comparable]
            assert await conn.fetchval(f"SELECT count(*) FROM apg_types WHERE {where}", *vals) == 1
        finally:
            await conn.close()
    run(body())


def test_executemany(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_many", "id int, label text, at date")
            rows = [(i, f"l{i}", dt.date(2024, 1, 1) + dt.timedelta(days=i)) for i in range(100)]
            await conn.executemany("INSERT INTO apg_many VALUES ($1, $2, $3)", rows)
            got = await conn.fetch("SELECT id, label, at FROM apg_many ORDER BY id")
            assert [tuple(r) for r in got] == rows
        finally:
            await conn.close()
    run(body())


def test_copy_records_to_table(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_copyrec", "id bigint, name text, score double precision, at timestamptz,"
                                             " tags text[]")
            rows = [(i, f"n{i}" if i % 3 else None, i / 4, dt.datetime(2024, 1, 1, tzinfo=UTC)
                     + dt.timedelta(minutes=i), ["t", str(i)]) for i in range(1000)]
            status = await conn.copy_records_to_table("apg_copyrec", records=rows)
            assert status == "COPY 1000"
            got = await conn.fetch("SELECT id, name, score, at, tags FROM apg_copyrec ORDER BY id")
            assert [tuple(r) for r in got] == rows
            status = await conn.copy_records_to_table("apg_copyrec", records=[(5000, "late")],
                                                      columns=["id", "name"])
            assert status == "COPY 1"
            assert await conn.fetchrow("SELECT name, score FROM apg_copyrec WHERE id = 5000") == ("late", None)
        finally:
            await conn.close()
    run(body())


def test_copy_to_and_from_table(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_copyio", "id int, name text, price numeric(8,2)")
            src = io.BytesIO(b"1,apple,1.50\n2,\"b, c\",\n3,,0.10\n")
            status = await conn.copy_to_table("apg_copyio", source=src, format="csv")
            assert status == "COPY 3"
            out = io.BytesIO()
            status = await conn.copy_from_table("apg_copyio", output=out, format="csv")
            assert status == "COPY 3"
            assert sorted(out.getvalue().splitlines()) == [b"1,apple,1.50", b'2,"b, c",', b"3,,0.10"]
            out = io.BytesIO()
            status = await conn.copy_from_query("SELECT name, price FROM apg_copyio WHERE id > $1 ORDER BY id", 1,
                                                output=out, format="text")
            assert status == "COPY 2"
            assert out.getvalue() == b"b, c\t\\N\n\\N\t0.10\n"
        finally:
            await conn.close()
    run(body())


def test_transaction_rollback(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_tx", "id int")
            async with conn.transaction():
                await conn.execute("INSERT INTO apg_tx VALUES (1)")
            with pytest.raises(ZeroDivisionError):
                async with conn.transaction():
                    await conn.execute("INSERT INTO apg_tx VALUES (2)")
                    raise ZeroDivisionError
            assert [r["id"] for r in await conn.fetch("SELECT id FROM apg_tx")] == [1]
        finally:
            await conn.close()
    run(body())


def test_errors(server: Target) -> None:
    async def body() -> None:
        conn = await connect(server)
        try:
            with pytest.raises(asyncpg.UndefinedTableError) as info:
                await conn.fetch("SELECT * FROM apg_nope")
            assert info.value.sqlstate == "42P01"
            with pytest.raises(asyncpg.PostgresSyntaxError):
                await conn.fetch("SELEC 1")
            await fresh(conn, "apg_uniq", "id int PRIMARY KEY")
            await conn.execute("INSERT INTO apg_uniq VALUES (1)")
            with pytest.raises(asyncpg.UniqueViolationError):
                await conn.execute("INSERT INTO apg_uniq VALUES ($1)", 1)
            assert await conn.fetchval("SELECT count(*) FROM apg_uniq") == 1
            with pytest.raises(asyncpg.DivisionByZeroError):
                await conn.fetchval("SELECT 1/0")
        finally:
            await conn.close()
    run(body())


def test_cancel_slow_query(server: Target) -> None:
    """A client-side timeout cancels the server statement and the connection stays usable."""
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_big", "x int")
            await conn.execute("INSERT INTO apg_big SELECT g FROM generate_series(1, 1000) g")
            slow = "SELECT count(*) FROM apg_big a CROSS JOIN apg_big b CROSS JOIN apg_big c CROSS JOIN apg_big d"  # 10^12 rows
            started = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(conn.fetchval(slow), timeout=1.0)
            # asyncpg sent a CancelRequest; the next statement waits until the server has stopped
            # the slow one (hours of work), so an answer within a minute proves the statement was cancelled.
            assert await asyncio.wait_for(conn.fetchval("SELECT 7"), timeout=60) == 7
            assert time.monotonic() - started < 60  # the statement takes hours: it was cancelled (not a timing target)
        finally:
            await conn.close()
    run(body())


def test_query_canceled_error(server: Target) -> None:
    """A CancelRequest for the backend makes the running statement fail with 57014."""
    async def body() -> None:
        conn = await connect(server)
        try:
            await fresh(conn, "apg_big2", "x int")
            await conn.execute("INSERT INTO apg_big2 SELECT g FROM generate_series(1, 1000) g")
            slow = "SELECT count(*) FROM apg_big2 a CROSS JOIN apg_big2 b CROSS JOIN apg_big2 c CROSS JOIN apg_big2 d"  # 10^12 rows
            canceller = asyncio.ensure_future(_cancel_after(server, conn, 1.0))
            started = time.monotonic()
            try:
                with pytest.raises(asyncpg.QueryCanceledError) as info:
                    await conn.fetchval(slow)
            finally:
                canceller.cancel()
            assert info.value.sqlstate == "57014"
            assert time.monotonic() - started < 60  # the statement takes hours: it was cancelled (not a timing target)
            assert await conn.fetchval("SELECT 9") == 9
        finally:
            await conn.close()
    run(body())


async def _cancel_after(server: Target, conn: asyncpg.Connection, after: float) -> None:
    """Send a protocol CancelRequest (code 80877102) for ``conn``'s backend after ``after`` seconds."""
    await asyncio.sleep(after)
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(struct.pack("!iiii", 16, 80877102, conn.get_server_pid(), conn._protocol.backend_secret))
    await writer.drain()
    await reader.read()
    writer.close()
