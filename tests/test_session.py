"""Session statements (SET/SHOW/RESET/DISCARD/DEALLOCATE, transactions, set_config) through real drivers.

These statements are answered by the gateway itself, so the in-test protocol backend of
test_protocol.py is enough; psycopg and asyncpg exercise the simple and extended protocols.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import asyncpg
import psycopg
import pytest

from gateway import gucs
from gateway.server import ServerThread
from tests.test_protocol import ProtoBackend, Raw, datarow_values, fields_of, kinds, row_desc
from tidegate.config import Settings
from tidegate.errors import SqlError


@pytest.fixture(scope="module")
def backend() -> ProtoBackend:
    return ProtoBackend()


@pytest.fixture(scope="module")
def port(backend: ProtoBackend) -> Iterator[int]:
    st = ServerThread(Settings(port=0), backend)
    _, p = st.start()
    yield p
    st.stop()


def connect(port: int, **kw: object) -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=port, user="tidegate", dbname="tidegate", autocommit=True, **kw)


def test_set_show_reset_with_psycopg(port: int) -> None:
    with connect(port) as conn:
        cur = conn.cursor()
        cur.execute("SHOW search_path")
        assert cur.description[0].name == "search_path"
        assert cur.fetchone() == ('"$user", public',)
        cur.execute("SET search_path TO MySchema, \"X\", public")
        cur.execute("SHOW search_path")
        assert cur.fetchone() == ('myschema, "X", public',)
        cur.execute("SET statement_timeout = 5000")
        cur.execute("SHOW statement_timeout")
        assert cur.fetchone() == ("5s",)
        cur.execute("SET SESSION datestyle = 'iso, dmy'")
        cur.execute("SHOW DateStyle")
        assert cur.description[0].name == "DateStyle"
        assert cur.fetchone() == ("ISO, DMY",)
        assert conn.info.parameter_status("DateStyle") == "ISO, DMY"
        cur.execute("RESET datestyle")
        assert conn.info.parameter_status("DateStyle") == "ISO, MDY"
        cur.execute("SET TIME ZONE 'Europe/Paris'")
        assert conn.info.parameter_status("TimeZone") == "Europe/Paris"
        cur.execute("SET TIME ZONE -7")
        cur.execute("SHOW time zone")
        assert cur.fetchone() == ("<-07>+07",)
        cur.execute("SET TIME ZONE DEFAULT")
        cur.execute("SHOW timezone")
        assert cur.description[0].name == "TimeZone" and cur.fetchone() == ("UTC",)
        cur.execute("SET TIME ZONE 'Asia/Tokyo'")
        cur.execute("RESET TIME ZONE")  # PostgreSQL's special form
        assert conn.info.parameter_status("TimeZone") == "UTC"
        cur.execute("RESET SESSION AUTHORIZATION")
        cur.execute("SET application_name = 'reporter'")
        assert conn.info.parameter_status("application_name") == "reporter"
        cur.execute("SET myapp.tenant = 'acme'")
        cur.execute("SHOW myapp.tenant")
        assert cur.fetchone() == ("acme",)
        cur.execute("SHOW max_identifier_length")
        assert cur.fetchone() == ("63",)
        cur.execute("SHOW server_version_num")
        assert cur.fetchone() == ("160004",)
        cur.execute("SHOW ALL")
        assert [d.name for d in cur.description] == ["name", "setting", "description"]
        rows = {r[0]: r[1] for r in cur.fetchall()}
        assert rows["bytea_output"] == "hex" and rows["TimeZone"] == "UTC" and rows["myapp.tenant"] == "acme"
        cur.execute("RESET ALL")
        cur.execute("SHOW search_path")
        assert cur.fetchone() == ('"$user", public',)


@pytest.mark.parametrize("stmt, code, message", [
    ("SET no_such_thing = 1", "42704", 'unrecognized configuration parameter "no_such_thing"'),
    ("SHOW no_such_thing", "42704", 'unrecognized configuration parameter "no_such_thing"'),
    ("SET extra_float_digits = 5", "22023",
     '5 is outside the valid range for parameter "extra_float_digits" (-15 .. 3)'),
    ("SET timezone = 'Nowhere/X'", "22023", 'invalid value for parameter "TimeZone": "Nowhere/X"'),
    ("SET server_version = '1'", "55P02", 'parameter "server_version" cannot be changed'),
    ("SET standard_conforming_strings = maybe", "22023",
     'parameter "standard_conforming_strings" requires a Boolean value'),
    ("SET client_min_messages = chatty", "22023", 'invalid value for parameter "client_min_messages": "chatty"'),
])
def test_bad_settings_are_refused_like_postgres(port: int, stmt: str, code: str, message: str) -> None:
    with connect(port) as conn:
        with pytest.raises(psycopg.Error) as exc:
            conn.execute(stmt)
        assert exc.value.sqlstate == code
        assert exc.value.diag.message_primary == message


def test_set_is_transactional_and_set_local_ends_with_block(port: int) -> None:
    with connect(port) as conn:
        conn.execute("BEGIN")
        conn.execute("SET search_path = a")
        conn.execute("SET LOCAL work_mem = '64MB'")
        assert conn.execute("SHOW work_mem").fetchone() == ("64MB",)
        conn.execute("ROLLBACK")
        assert conn.execute("SHOW search_path").fetchone() == ('"$user", public',)
        conn.execute("BEGIN")
        conn.execute("SET search_path = b")
        conn.execute("SET LOCAL work_mem = '64MB'")
        conn.execute("COMMIT")
        assert conn.execute("SHOW search_path").fetchone() == ("b",)
        assert conn.execute("SHOW work_mem").fetchone() == ("4MB",)
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(f"{d.severity} {d.sqlstate} {d.message_primary}"))
        conn.execute("SET LOCAL work_mem = '1MB'")
        assert notices == ["WARNING 25P01 SET LOCAL can only be used in transaction blocks"]
        assert conn.execute("SHOW work_mem").fetchone() == ("4MB",)


def test_transaction_isolation_settings(port: int) -> None:
    with connect(port) as conn:
        assert conn.execute("SHOW TRANSACTION ISOLATION LEVEL").fetchone() == ("read committed",)
        # snapshot isolation levels are refused, never run as a weaker level
        for stmt in ("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ",
                     "SET default_transaction_isolation = 'serializable'",
                     "BEGIN ISOLATION LEVEL SERIALIZABLE"):
            with pytest.raises(psycopg.errors.FeatureNotSupported):
                conn.execute(stmt)
        conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
        conn.execute("BEGIN")
        assert conn.execute("SHOW transaction_isolation").fetchone() == ("read uncommitted",)
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        conn.execute("ROLLBACK")
        conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        assert conn.execute("SHOW transaction_isolation").fetchone() == ("read committed",)
        conn.execute("COMMIT")
        assert conn.execute("SHOW default_transaction_isolation").fetchone() == ("read uncommitted",)


def test_psycopg_non_autocommit_transactions_and_status(port: int, backend: ProtoBackend) -> None:
    with psycopg.connect(host="127.0.0.1", port=port, user="tidegate", dbname="x") as conn:
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        conn.execute("SELECT 1")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT 1/0")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            conn.execute("SELECT 1")
        conn.rollback()
        before = len(backend.table)
        conn.execute("INSERT INTO t VALUES (%s, %s)", (5, "five"))
        assert len(backend.table) == before
        conn.commit()
        assert backend.table[-1] == (5, "five")


def test_psycopg_parameters_and_pipeline(port: int, backend: ProtoBackend) -> None:
    with connect(port) as conn:
        assert conn.execute("SELECT %s, %s", ("a", 7)).fetchone() == ("a", "7")
        assert conn.execute("SELECT %s", (None,)).fetchone() == (None,)
        before = len(backend.table)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO t VALUES (%s, %s)", [(i, f"n{i}") for i in range(20)])
        assert backend.table[before:] == [(i, f"n{i}") for i in range(20)]
        with conn.pipeline():
            cur1 = conn.execute("SELECT %s", ("x",))
            cur2 = conn.execute("SELECT 42")
            conn.execute("SET application_name = 'piped'")
        assert cur1.fetchone() == ("x",) and cur2.fetchone() == (42,)
        assert conn.info.parameter_status("application_name") == "piped"
        with conn.cursor(name="srv") as cur:  # server-side cursor: DECLARE reaches the backend
            with pytest.raises(psycopg.Error):
                cur.execute("SELECT n FROM series(10)")


def test_psycopg_prepared_statements_and_deallocate(port: int) -> None:
    with connect(port, prepare_threshold=0) as conn:
        for i in range(3):
            assert conn.execute("SELECT %s", (str(i),)).fetchone() == (str(i),)
        conn.execute("DEALLOCATE ALL")
        assert conn.execute("SELECT %s", ("again",)).fetchone() == ("again",)


def test_psycopg_copy_in_and_out(port: int, backend: ProtoBackend) -> None:
    with connect(port) as conn:
        before = len(backend.table)
        with conn.cursor().copy("COPY t (id, name) FROM STDIN") as cp:
            for i in range(1000):
                cp.write_row((i, f"row {i}"))
        assert len(backend.table) == before + 1000
        assert backend.table[-1] == (999, "row 999")
        with conn.cursor().copy("COPY t FROM STDIN WITH (FORMAT csv, HEADER true)") as cp:
            cp.write(b"id,name\n1,\"a,b\"\n2,\n")
        assert backend.table[-2:] == [(1, "a,b"), (2, None)]
        with pytest.raises(RuntimeError):  # psycopg sends CopyFail, swallows the 57014 and re-raises
            with conn.cursor().copy("COPY t FROM STDIN") as cp:
                cp.write_row((1, "never"))
                raise RuntimeError("client gave up")
        assert (1, "never") not in backend.table
        assert conn.execute("SELECT 1").fetchone() == (1,)
        out = []
        with conn.cursor().copy("COPY t TO STDOUT") as cp:
            for row in cp.rows():
                out.append(row)
        assert len(out) == len(backend.table)
        assert out[-1] == (str(backend.table[-1][0]), None)
        with conn.cursor().copy("COPY (SELECT * FROM t) TO STDOUT (FORMAT binary)") as cp:
            cp.set_types(["int4", "text"])
            rows = list(cp.rows())
        assert rows[-1] == backend.table[-1]
        with conn.cursor().copy("COPY t TO STDOUT WITH CSV HEADER") as cp:
            data = b"".join(bytes(d) for d in cp)
        assert data.startswith(b"id,name\n")


def test_copy_statement_errors(port: int) -> None:
    with connect(port) as conn:
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("COPY t FROM '/etc/passwd'")
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute("COPY t FROM STDIN WITH (FORMAT binary, DELIMITER ',')")
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_set_config_and_discard_all(port: int) -> None:
    with connect(port) as conn:
        assert conn.execute("SELECT set_config('search_path', 'x, public', false)").fetchone() == ("x, public",)
        assert conn.execute("SHOW search_path").fetchone() == ("x, public",)
        conn.execute("DISCARD ALL")
        assert conn.execute("SHOW search_path").fetchone() == ('"$user", public',)
        with pytest.raises(psycopg.errors.ActiveSqlTransaction):
            conn.execute("BEGIN")
            conn.execute("DISCARD ALL")
        conn.execute("ROLLBACK")


def test_asyncpg_session_and_extended_protocol(port: int, backend: ProtoBackend) -> None:
    async def main() -> None:
        conn = await asyncpg.connect(host="127.0.0.1", port=port, user="tidegate", database="tidegate")
        try:
            assert await conn.fetchval("SELECT 1") == 1
            assert await conn.fetchval("SHOW TimeZone") == "UTC"
            await conn.execute("SET TIME ZONE 'Asia/Tokyo'")
            assert await conn.fetchval("SHOW timezone") == "Asia/Tokyo"
            stmt = await conn.prepare("SELECT $1")
            assert [a.name for a in stmt.get_attributes()] == ["?column?"]
            before = len(backend.table)
            await conn.executemany("INSERT INTO t VALUES ($1, $2)", [(i, f"a{i}") for i in range(10)])
            assert backend.table[before:] == [(i, f"a{i}") for i in range(10)]
            async with conn.transaction():
                await conn.execute("INSERT INTO t VALUES (77, 'tx')")
                assert (77, "tx") not in backend.table
            assert (77, "tx") in backend.table
            with pytest.raises(asyncpg.UndefinedObjectError):
                await conn.execute("SET bogus = 1")
            async with conn.transaction():
                cur = await conn.cursor("SELECT n FROM series(250)")
                got = await cur.fetch(220)
                assert len(got) == 220 and got[-1]["n"] == 219
            rows = []
            async with conn.transaction():
                async for r in conn.cursor("SELECT n FROM series(1234)", prefetch=500):
                    rows.append(r["n"])
            assert rows == list(range(1234))
        finally:
            await conn.close()

    asyncio.run(main())


def test_asyncpg_pool_reset_runs_session_statements(port: int) -> None:
    async def main() -> None:
        pool = await asyncpg.create_pool(host="127.0.0.1", port=port, user="tidegate", database="tidegate",
                                         min_size=2, max_size=4)
        try:
            for _ in range(5):
                async with pool.acquire() as conn:
                    await conn.execute("SET search_path = pooled")
                    assert await conn.fetchval("SELECT 3") == 3
            async with pool.acquire() as conn:
                assert await conn.fetchval("SHOW search_path") == '"$user", public'
        finally:
            await pool.close()

    asyncio.run(main())


def test_set_and_show_in_extended_protocol_describe(port: int) -> None:
    c = Raw(port)
    c.parse("SHOW DateStyle", name="sh")
    c.describe("S", "sh")
    c.bind(stmt="sh")
    c.execute()
    c.parse("SET work_mem = '8MB'")
    c.describe("S")
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "1tT2DC1tnZ"
    assert row_desc(msgs[2][1])[0][0] == "DateStyle" and row_desc(msgs[2][1])[0][3] == 25
    assert datarow_values(msgs[4][1]) == [b"ISO, MDY"]
    c.close()


def test_client_min_messages_filters_warnings(port: int) -> None:
    c = Raw(port)
    c.query("SET client_min_messages = error")
    assert kinds(c.query("COMMIT")) == "CZ"
    c.query("RESET client_min_messages")
    msgs = c.query("COMMIT")
    assert kinds(msgs) == "NCZ" and fields_of(msgs[0][1])["S"] == "WARNING"
    c.close()


def test_guc_unit_parsing_and_formatting() -> None:
    s = gucs.SessionSettings()
    s.set("statement_timeout", "1500ms")
    assert s.get("statement_timeout") == "1500ms"
    s.set("statement_timeout", "2min")
    assert s.get("statement_timeout") == "2min" and gucs.parse_ms("2min") == 120000
    s.set("statement_timeout", "3600000")
    assert s.get("statement_timeout") == "1h"
    with pytest.raises(SqlError) as exc:
        s.set("statement_timeout", "soon")
    assert exc.value.sqlstate == "22023"
    s.set("DateStyle", "iso, dmy")
    assert s.get("datestyle") == "ISO, DMY"
    # output settings tidegate does not print in are refused, never ignored
    for name, value in [("DateStyle", "German"), ("DateStyle", "sql, dmy"), ("IntervalStyle", "iso_8601"),
                        ("bytea_output", "escape"), ("extra_float_digits", "0")]:
        with pytest.raises(SqlError) as exc:
            s.set(name, value)
        assert exc.value.sqlstate == "0A000" and exc.value.hint, (name, value)
    assert s.get("datestyle") == "ISO, DMY" and s.get("intervalstyle") == "postgres"


def test_savepoints_recover_from_errors_without_data_changes(port: int) -> None:
    with psycopg.connect(host="127.0.0.1", port=port, user="tidegate", dbname="x") as conn:
        conn.execute("SET search_path = before_sp")
        with pytest.raises(psycopg.errors.DivisionByZero):
            with conn.transaction():  # a savepoint inside the open transaction
                conn.execute("SET search_path = inside_sp")
                conn.execute("SELECT 1/0")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert conn.execute("SHOW search_path").fetchone() == ("before_sp",)
        with conn.transaction():
            assert conn.execute("SELECT 4").fetchone() == (4,)
        conn.execute("SAVEPOINT sp")
        conn.execute("INSERT INTO t VALUES (800, 'after savepoint')")
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            conn.execute("ROLLBACK TO SAVEPOINT sp")
        conn.rollback()
        with pytest.raises(psycopg.errors.InvalidSavepointSpecification):
            conn.execute("SELECT 1")
            conn.execute("RELEASE SAVEPOINT nope")
        conn.rollback()
    with connect(port) as conn:
        with pytest.raises(psycopg.errors.NoActiveSqlTransaction):
            conn.execute("SAVEPOINT x")


def test_server_side_cursors_declare_fetch_move_close(port: int) -> None:
    with psycopg.connect(host="127.0.0.1", port=port, user="tidegate", dbname="x") as conn:
        with conn.cursor(name="big") as cur:
            cur.itersize = 100
            cur.execute("SELECT n FROM series(1050)")
            assert cur.description[0].name == "n"
            assert cur.fetchmany(5) == [(0,), (1,), (2,), (3,), (4,)]
            assert sum(1 for _ in cur) == 1045
        conn.execute("DECLARE c1 CURSOR FOR SELECT n FROM series(30)")
        assert conn.execute("FETCH 3 FROM c1").fetchall() == [(0,), (1,), (2,)]
        cur = conn.execute("MOVE FORWARD 10 IN c1")
        assert cur.statusmessage == "MOVE 10"
        assert conn.execute("FETCH NEXT FROM c1").fetchall() == [(13,)]
        cur = conn.execute("FETCH ALL FROM c1")
        assert len(cur.fetchall()) == 16 and cur.statusmessage == "FETCH 16"
        assert conn.execute("FETCH c1").fetchall() == []
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState):
            conn.execute("FETCH BACKWARD 1 FROM c1")
        conn.rollback()
        with pytest.raises(psycopg.errors.InvalidCursorName):
            conn.execute("FETCH c1")  # cursors without HOLD end with their transaction
        conn.rollback()
    with connect(port) as conn:
        with pytest.raises(psycopg.errors.NoActiveSqlTransaction):
            conn.execute("DECLARE c2 CURSOR FOR SELECT 1")
        conn.execute("DECLARE c3 CURSOR WITH HOLD FOR SELECT n FROM series(5)")
        assert conn.execute("FETCH 2 FROM c3").fetchall() == [(0,), (1,)]
        assert conn.execute("CLOSE c3").statusmessage == "CLOSE CURSOR"
        with pytest.raises(psycopg.errors.InvalidCursorName):
            conn.execute("CLOSE c3")
        assert conn.execute("CLOSE ALL").statusmessage == "CLOSE CURSOR ALL"
        with conn.cursor(name="held", withhold=True) as cur:
            cur.execute("SELECT n FROM series(7)")
            assert [r[0] for r in cur.fetchall()] == list(range(7))


ORACLE_SCRIPTS = [
    ["SHOW search_path"], ["SHOW DateStyle"], ["SHOW TimeZone"], ["SHOW IntervalStyle"],
    ["SHOW standard_conforming_strings"], ["SHOW integer_datetimes"], ["SHOW client_encoding"],
    ["SHOW server_encoding"], ["SHOW max_identifier_length"], ["SHOW bytea_output"], ["SHOW extra_float_digits"],
    ["SHOW transaction_isolation"], ["SHOW TRANSACTION ISOLATION LEVEL"], ["SHOW client_min_messages"],
    ["SHOW statement_timeout"], ["SHOW default_transaction_read_only"], ["SHOW lc_messages"],
    ["SET search_path TO MySchema, \"X\", public", "SHOW search_path"],
    ["SET search_path = ''", "SHOW search_path"],
    ["SET statement_timeout = 5000", "SHOW statement_timeout"],
    ["SET statement_timeout = '90s'", "SHOW statement_timeout"],
    ["SET TIME ZONE -7", "SHOW timezone"],
    ["SET TIME ZONE INTERVAL '+02:30' HOUR TO MINUTE", "SHOW time zone"],
    ["SET TIME ZONE 'America/New_York'", "SHOW TimeZone"],
    ["SET datestyle = 'iso, european'", "SHOW datestyle"],
    ["SET datestyle TO ymd, iso", "SHOW DateStyle"],
    ["SET client_min_messages = info", "SHOW client_min_messages"],
    ["SET extra_float_digits = 3", "SHOW extra_float_digits"],
    ["SET my.custom = 'v1'", "SHOW my.custom"],
    ["SET SESSION work_mem = '64MB'", "RESET work_mem", "SHOW work_mem"],
    ["BEGIN", "SET LOCAL search_path = x", "SHOW search_path", "COMMIT", "SHOW search_path"],
    ["BEGIN", "SET search_path = y", "ROLLBACK", "SHOW search_path"],
    ["BEGIN ISOLATION LEVEL READ COMMITTED", "SHOW transaction_isolation", "COMMIT"],
    ["SET no_such_param = 1"], ["SHOW no_such_param"], ["SET extra_float_digits = 9"],
    ["SET TimeZone = 'Mars/Olympus'"], ["SET server_version_num = 1"], ["SET bytea_output = 'base64'"],
    ["RESET ALL", "DISCARD ALL", "SHOW search_path"],
    ["SAVEPOINT s"], ["ROLLBACK TO SAVEPOINT s"],
    ["BEGIN", "SAVEPOINT a", "SELECT 1/0", "ROLLBACK TO a", "SELECT 1", "RELEASE SAVEPOINT a", "COMMIT"],
    ["BEGIN", "RELEASE nope", "ROLLBACK"],
    ["DEALLOCATE nope"], ["DEALLOCATE ALL"], ["CLOSE ALL"], ["CLOSE nope"], ["UNLISTEN *"],
]


def _outcome(conn: psycopg.Connection, stmt: str) -> tuple[object, ...]:
    try:
        cur = conn.execute(stmt)
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary)
    rows = cur.fetchall() if cur.description else None
    return (cur.statusmessage, [d.name for d in cur.description or []], rows, conn.info.transaction_status.name)


@pytest.mark.parametrize("script", ORACLE_SCRIPTS, ids=lambda s: " | ".join(s)[:60])
def test_session_statements_match_postgres(port: int, pg_oracle: object, script: list[str]) -> None:
    results = []
    for dsn_kw in ({"host": "127.0.0.1", "port": port, "user": "tidegate", "dbname": "tidegate"},
                   {"conninfo": pg_oracle.dsn}):  # type: ignore[attr-defined]
        with psycopg.connect(autocommit=True, **dsn_kw) as conn:
            results.append([_outcome(conn, stmt) for stmt in script])
    assert results[0] == results[1]
