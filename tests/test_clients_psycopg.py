"""psycopg 3 against tidegate, with PostgreSQL 15 as the oracle.

Covers the type round trip in text and binary result formats, parameters, pipelined
executemany, server-side cursors, COPY in every format, transactions, SQLSTATEs and multiple
statements per Query. Each test runs against both servers; PostgreSQL must pass every one.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from psycopg import errors as pgerr
from psycopg.types.json import Json, Jsonb
from tests.targets import Target, target_for as _target


@pytest.fixture(scope="module", params=["postgres", "tidegate"])
def server(request: pytest.FixtureRequest) -> Target:
    return _target(request, request.param)


@pytest.fixture
def conn(server: Target):
    with psycopg.connect(server.dsn, autocommit=True) as c:
        yield c


def fresh(conn: psycopg.Connection, name: str, columns: str) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(f"CREATE TABLE {name} ({columns})")


# --------------------------------------------------------------------------------------- types

UTC = dt.timezone.utc
SCALARS: list[tuple[str, str, Any]] = [
    ("c_bool", "boolean", True),
    ("c_int2", "smallint", -32768),
    ("c_int4", "integer", 2147483647),
    ("c_int8", "bigint", -9223372036854775808),
    ("c_float4", "real", 1.5),
    ("c_float8", "double precision", 3.141592653589793),
    ("c_numeric", "numeric(20,6)", Decimal("-12345678901234.567891")),
    ("c_numeric_free", "numeric", Decimal("0.000123")),
    ("c_text", "text", "héllo\twörld 'q' \"d\" \\"),
    ("c_varchar", "varchar(20)", "short"),
    ("c_char", "char(5)", "ab"),
    ("c_bytea", "bytea", b"\x00\x01\xfe\xff'\\"),
    ("c_date", "date", dt.date(2024, 2, 29)),
    ("c_time", "time", dt.time(13, 45, 6, 789012)),
    ("c_ts", "timestamp", dt.datetime(2024, 3, 10, 2, 30, 0, 123456)),
    ("c_tstz", "timestamptz", dt.datetime(2024, 3, 10, 2, 30, 0, 654321, tzinfo=UTC)),
    ("c_interval", "interval", dt.timedelta(days=3, hours=4, minutes=5, seconds=6, microseconds=7)),
    ("c_json", "json", {"a": [1, 2, {"b": None}], "s": "x"}),
    ("c_jsonb", "jsonb", {"k": True, "n": 1.5}),
    ("c_uuid", "uuid", uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")),
]
ARRAYS: list[tuple[str, str, Any]] = [
    ("a_bool", "boolean[]", [True, False, None]),
    ("a_int2", "smallint[]", [1, -2, None]),
    ("a_int4", "integer[]", [1, 2, 3]),
    ("a_int8", "bigint[]", [9223372036854775807, None, 0]),
    ("a_float4", "real[]", [0.5, -1.25]),
    ("a_float8", "double precision[]", [1e100, -2.5, None]),
    ("a_numeric", "numeric(10,2)[]", [Decimal("1.50"), Decimal("-2.25")]),
    ("a_text", "text[]", ["a", "b c", "", None, "q\"uote"]),
    ("a_varchar", "varchar(10)[]", ["x", "yz"]),
    ("a_bytea", "bytea[]", [b"\x00\x01", b"xyz"]),
    ("a_date", "date[]", [dt.date(2020, 1, 1), dt.date(1999, 12, 31)]),
    ("a_time", "time[]", [dt.time(0, 0, 1), dt.time(23, 59, 59, 999999)]),
    ("a_ts", "timestamp[]", [dt.datetime(2021, 5, 6, 7, 8, 9)]),
    ("a_tstz", "timestamptz[]", [dt.datetime(2021, 5, 6, 7, 8, 9, tzinfo=UTC)]),
    ("a_interval", "interval[]", [dt.timedelta(hours=1), dt.timedelta(days=-2, seconds=30)]),
    ("a_uuid", "uuid[]", [uuid.UUID("00000000-0000-0000-0000-000000000001")]),
]


def _param(decl: str, value: Any) -> Any:
    if decl == "json":
        return Json(value)
    if decl == "jsonb":
        return Jsonb(value)
    return value


def _expected(decl: str, value: Any) -> Any:
    if decl.startswith("char("):
        return value.ljust(int(decl[5:-1]))
    return value


def _roundtrip(conn: psycopg.Connection, table: str, cols: list[tuple[str, str, Any]]) -> None:
    fresh(conn, table, "id int, " + ", ".join(f"{n} {d}" for n, d, _ in cols))
    placeholders = ", ".join(["%s"] * (len(cols) + 1))
    conn.execute(f"INSERT INTO {table} VALUES ({placeholders})", [1] + [_param(d, v) for _, d, v in cols])
    conn.execute(f"INSERT INTO {table} (id) VALUES (2)")
    select = f"SELECT {', '.join(n for n, _, _ in cols)} FROM {table} ORDER BY id"
    problems = []
    for binary in (False, True):
        rows = conn.cursor(binary=binary).execute(select).fetchall()
        assert len(rows) == 2
        for (name, decl, value), got, null in zip(cols, rows[0], rows[1]):
            if got != _expected(decl, value):
                problems.append(f"{'binary' if binary else 'text'} {name} {decl}: expected {value!r}, got {got!r}")
            if null is not None:
                problems.append(f"{'binary' if binary else 'text'} {name} {decl}: expected NULL, got {null!r}")
    assert not problems, "\n".join(problems)


def test_scalar_types_round_trip(conn: psycopg.Connection) -> None:
    _roundtrip(conn, "psy_scalars", SCALARS)


def test_array_types_round_trip(conn: psycopg.Connection) -> None:
    _roundtrip(conn, "psy_arrays", ARRAYS)


def test_text_forms_match_oracle(conn: psycopg.Connection) -> None:
    """The exact text PostgreSQL prints for each type (what psql and text-mode drivers see)."""
    fresh(conn, "psy_textform", "id int, " + ", ".join(f"{n} {d}" for n, d, _ in SCALARS + ARRAYS))
    conn.execute(f"INSERT INTO psy_textform VALUES ({', '.join(['%s'] * (len(SCALARS) + len(ARRAYS) + 1))})",
                 [1] + [_param(d, v) for _, d, v in SCALARS + ARRAYS])
    res = conn.pgconn.exec_(f"SELECT {', '.join(n for n, _, _ in SCALARS + ARRAYS)} FROM psy_textform".encode())
    assert res.status == psycopg.pq.ExecStatus.TUPLES_OK, res.error_message
    got = {res.fname(i).decode(): res.get_value(0, i).decode() for i in range(res.nfields)}
    expected = {
        "c_bool": "t", "c_int2": "-32768", "c_int4": "2147483647", "c_int8": "-9223372036854775808",
        "c_float4": "1.5", "c_float8": "3.141592653589793", "c_numeric": "-12345678901234.567891",
        "c_numeric_free": "0.000123", "c_text": "héllo\twörld 'q' \"d\" \\", "c_varchar": "short",
        "c_char": "ab   ", "c_bytea": "\\x0001feff275c", "c_date": "2024-02-29", "c_time": "13:45:06.789012",
        "c_ts": "2024-03-10 02:30:00.123456", "c_tstz": "2024-03-10 02:30:00.654321+00",
        "c_interval": "3 days 04:05:06.000007", "c_json": '{"a": [1, 2, {"b": null}], "s": "x"}',
        "c_jsonb": '{"k": true, "n": 1.5}', "c_uuid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "a_bool": "{t,f,NULL}", "a_int2": "{1,-2,NULL}", "a_int4": "{1,2,3}",
        "a_int8": "{9223372036854775807,NULL,0}", "a_float4": "{0.5,-1.25}", "a_float8": "{1e+100,-2.5,NULL}",
        "a_numeric": "{1.50,-2.25}", "a_text": '{a,"b c","",NULL,"q\\"uote"}', "a_varchar": "{x,yz}",
        "a_bytea": '{"\\\\x0001","\\\\x78797a"}', "a_date": "{2020-01-01,1999-12-31}",
        "a_time": "{00:00:01,23:59:59.999999}", "a_ts": '{"2021-05-06 07:08:09"}',
        "a_tstz": '{"2021-05-06 07:08:09+00"}', "a_interval": '{01:00:00,"-2 days +00:00:30"}',
        "a_uuid": "{00000000-0000-0000-0000-000000000001}",
    }
    problems = [f"{k}: expected {v!r}, got {got.get(k)!r}" for k, v in expected.items() if got.get(k) != v]
    assert not problems, "\n".join(problems)


def test_result_column_types(conn: psycopg.Connection) -> None:
    """RowDescription carries PostgreSQL's type OIDs, so drivers pick the right loaders."""
    fresh(conn, "psy_oids", "b boolean, i2 smallint, i4 int, i8 bigint, f4 real, f8 float8, n numeric(5,1),"
                            " t text, v varchar(3), by bytea, d date, tm time, ts timestamp, tz timestamptz,"
                            " iv interval, j json, jb jsonb, u uuid, ai int[], at text[]")
    cur = conn.execute("SELECT * FROM psy_oids")
    assert [(c.name, c.type_code) for c in cur.description] == [
        ("b", 16), ("i2", 21), ("i4", 23), ("i8", 20), ("f4", 700), ("f8", 701), ("n", 1700), ("t", 25),
        ("v", 1043), ("by", 17), ("d", 1082), ("tm", 1083), ("ts", 1114), ("tz", 1184), ("iv", 1186),
        ("j", 114), ("jb", 3802), ("u", 2950), ("ai", 1007), ("at", 1009)]
    assert cur.fetchall() == []


# ---------------------------------------------------------------------------------- parameters

def test_parameters_typed_and_null(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_params", "id int, name text, score float8, born date")
    conn.execute("INSERT INTO psy_params VALUES (%s, %s, %s, %s)", (1, "ann", 9.5, dt.date(1990, 1, 2)))
    conn.execute("INSERT INTO psy_params VALUES (%s, %s, %s, %s)", (2, None, None, None))
    conn.execute("INSERT INTO psy_params VALUES (%(i)s, %(n)s, %(s)s, %(b)s)",
                 {"i": 3, "n": "o'neil", "s": -1.0, "b": dt.date(2000, 2, 29)})
    rows = conn.execute("SELECT id, name FROM psy_params WHERE score > %s OR name = %s ORDER BY id",
                        (0.0, "o'neil")).fetchall()
    assert rows == [(1, "ann"), (3, "o'neil")]
    assert conn.execute("SELECT count(*) FROM psy_params WHERE name IS NULL").fetchone() == (1,)
    assert conn.execute("SELECT %s::int + %s::int, %s::text || 'x'", (2, 3, "a")).fetchone() == (5, "ax")
    assert conn.execute("SELECT id FROM psy_params WHERE born = %s", (dt.date(2000, 2, 29),)).fetchall() == [(3,)]
    # Binary parameters and binary results together.
    cur = conn.cursor(binary=True)
    assert cur.execute("SELECT name, born FROM psy_params WHERE id = %b", (1,)).fetchone() == (
        "ann", dt.date(1990, 1, 2))


def test_prepared_statement_reuse(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_prep", "k int, v text")
    conn.execute("INSERT INTO psy_prep VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    for k, v in [(1, "a"), (2, "b"), (3, "c"), (1, "a"), (2, "b"), (3, "c")]:
        assert conn.execute("SELECT v FROM psy_prep WHERE k = %s", (k,), prepare=True).fetchone() == (v,)


def test_executemany_pipeline(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_many", "id int, label text")
    rows = [(i, f"label-{i}") for i in range(50)]
    with conn.pipeline():
        conn.cursor().executemany("INSERT INTO psy_many VALUES (%s, %s)", rows)
    assert conn.execute("SELECT id, label FROM psy_many ORDER BY id").fetchall() == rows
    cur = conn.cursor()
    cur.executemany("INSERT INTO psy_many VALUES (%s, %s) RETURNING id * 2", [(100, "x"), (101, "y")],
                    returning=True)
    got = [cur.fetchone()]
    while cur.nextset():
        got.append(cur.fetchone())
    assert got == [(200,), (202,)]


def test_pipeline_mixed_statements(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_pipe", "id int")
    with conn.pipeline() as p:
        conn.execute("INSERT INTO psy_pipe VALUES (1)")
        conn.execute("INSERT INTO psy_pipe VALUES (2)")
        cur = conn.execute("SELECT count(*) FROM psy_pipe")
        p.sync()
        assert cur.fetchone() == (2,)


# ------------------------------------------------------------------------------ server cursors

def test_named_cursor_fetchmany(server: Target) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as setup:
        fresh(setup, "psy_named", "id int, v text")
        setup.execute("INSERT INTO psy_named SELECT g, 'v' || g FROM generate_series(1, 25) g")
    with psycopg.connect(server.dsn) as conn:
        with conn.cursor(name="psy_named_cur") as cur:
            cur.itersize = 7
            cur.execute("SELECT id, v FROM psy_named ORDER BY id")
            assert cur.fetchmany(3) == [(1, "v1"), (2, "v2"), (3, "v3")]
            assert cur.fetchone() == (4, "v4")
            rest = cur.fetchall()
            assert [r[0] for r in rest] == list(range(5, 26))
            assert cur.fetchmany(5) == []
        with conn.cursor(name="psy_named_iter") as cur:
            cur.itersize = 4
            cur.execute("SELECT id FROM psy_named WHERE id % 2 = 0 ORDER BY id")
            assert [r[0] for r in cur] == list(range(2, 26, 2))


# --------------------------------------------------------------------------------------- COPY

def test_copy_text_in_out(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_copy_text", "id int, name text, amount numeric(8,2), at date")
    cur = conn.cursor()
    with cur.copy("COPY psy_copy_text (id, name, amount, at) FROM STDIN") as copy:
        copy.write_row((1, "tab\there", Decimal("1.50"), dt.date(2024, 1, 1)))
        copy.write_row((2, None, Decimal("-7.00"), None))
        copy.write(b"3\tback\\\\slash\t0.01\t2024-12-31\n")
    assert cur.rowcount == 3
    assert cur.statusmessage == "COPY 3"
    data = b""
    with cur.copy("COPY (SELECT * FROM psy_copy_text ORDER BY id) TO STDOUT") as copy:
        for chunk in copy:
            data += bytes(chunk)
    assert data == (b"1\ttab\\there\t1.50\t2024-01-01\n2\t\\N\t-7.00\t\\N\n"
                    b"3\tback\\\\slash\t0.01\t2024-12-31\n")
    with cur.copy("COPY psy_copy_text TO STDOUT") as copy:
        copy.set_types(["int4", "text", "numeric", "date"])
        rows = sorted(copy.rows(), key=lambda r: r[0])
    assert rows == [(1, "tab\there", Decimal("1.50"), dt.date(2024, 1, 1)), (2, None, Decimal("-7.00"), None),
                    (3, "back\\slash", Decimal("0.01"), dt.date(2024, 12, 31))]


def test_copy_csv_header_in_out(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_copy_csv", "id int, name text, ok boolean")
    cur = conn.cursor()
    with cur.copy("COPY psy_copy_csv FROM STDIN (FORMAT csv, HEADER true)") as copy:
        copy.write(b'id,name,ok\n1,"a, b",true\n2,,false\n3,"say ""hi""",\n')
    assert cur.rowcount == 3
    data = b""
    with cur.copy("COPY (SELECT * FROM psy_copy_csv ORDER BY id) TO STDOUT (FORMAT csv, HEADER true)") as copy:
        for chunk in copy:
            data += bytes(chunk)
    assert data == b'id,name,ok\n1,"a, b",t\n2,,f\n3,"say ""hi""",\n'


def test_copy_binary_in_out(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_copy_bin", "id bigint, name text, score float8, at timestamp, tags text[]")
    rows = [(1, "x", 0.5, dt.datetime(2024, 1, 1, 12, 0), ["a", "b"]),
            (2, None, None, None, None),
            (3, "żółw", -1e10, dt.datetime(1999, 12, 31, 23, 59, 59, 999999), [])]
    cur = conn.cursor()
    with cur.copy("COPY psy_copy_bin FROM STDIN (FORMAT binary)") as copy:
        copy.set_types(["int8", "text", "float8", "timestamp", "text[]"])
        for row in rows:
            copy.write_row(row)
    assert cur.rowcount == 3
    with cur.copy("COPY (SELECT * FROM psy_copy_bin ORDER BY id) TO STDOUT (FORMAT binary)") as copy:
        copy.set_types(["int8", "text", "float8", "timestamp", "text[]"])
        got = list(copy.rows())
    assert got == rows


# ------------------------------------------------------------------------------- transactions

def test_commit_and_rollback_visibility(server: Target) -> None:
    with psycopg.connect(server.dsn, autocommit=True) as other:
        fresh(other, "psy_tx", "id int")
        with psycopg.connect(server.dsn) as conn:
            conn.execute("INSERT INTO psy_tx VALUES (1)")
            assert conn.execute("SELECT count(*) FROM psy_tx").fetchone() == (1,)
            assert other.execute("SELECT count(*) FROM psy_tx").fetchone() == (0,)
            conn.commit()
            assert other.execute("SELECT count(*) FROM psy_tx").fetchone() == (1,)
            conn.execute("INSERT INTO psy_tx VALUES (2)")
            conn.rollback()
            assert conn.execute("SELECT id FROM psy_tx").fetchall() == [(1,)]
            conn.commit()
        assert other.execute("SELECT id FROM psy_tx").fetchall() == [(1,)]


def test_transaction_block_context(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_txblock", "id int")
    with conn.transaction():
        conn.execute("INSERT INTO psy_txblock VALUES (1)")
    with pytest.raises(RuntimeError):
        with conn.transaction():
            conn.execute("INSERT INTO psy_txblock VALUES (2)")
            raise RuntimeError("abort")
    assert conn.execute("SELECT id FROM psy_txblock").fetchall() == [(1,)]


def test_failed_transaction_25p02(server: Target) -> None:
    with psycopg.connect(server.dsn) as conn:
        with pytest.raises(pgerr.UndefinedTable):
            conn.execute("SELECT * FROM psy_no_such_table")
        with pytest.raises(pgerr.InFailedSqlTransaction) as info:
            conn.execute("SELECT 1")
        assert info.value.sqlstate == "25P02"
        conn.rollback()
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_transaction_status(server: Target) -> None:
    with psycopg.connect(server.dsn) as conn:
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        conn.execute("SELECT 1")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        with pytest.raises(pgerr.UndefinedTable):
            conn.execute("SELECT * FROM psy_status_missing")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        conn.rollback()
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


# ------------------------------------------------------------------------------------- errors

@pytest.fixture
def err_table(conn: psycopg.Connection) -> str:
    fresh(conn, "psy_err", "id int PRIMARY KEY, name text NOT NULL")
    conn.execute("INSERT INTO psy_err VALUES (1, 'one')")
    return "psy_err"


@pytest.mark.parametrize("sql, sqlstate, message", [
    ("SELECT * FROM psy_nope", "42P01", 'relation "psy_nope" does not exist'),
    ("SELECT nocol FROM psy_err", "42703", 'column "nocol" does not exist'),
    ("SELECT 1/0", "22012", "division by zero"),
    ("SELECT 'abc'::int", "22P02", 'invalid input syntax for type integer: "abc"'),
    ("INSERT INTO psy_err VALUES (1, 'dup')", "23505",
     'duplicate key value violates unique constraint "psy_err_pkey"'),
    ("INSERT INTO psy_err VALUES (2, NULL)", "23502",
     'null value in column "name" of relation "psy_err" violates not-null constraint'),
    ("CREATE TABLE psy_err (x int)", "42P07", 'relation "psy_err" already exists'),
])
def test_error_sqlstates(conn: psycopg.Connection, err_table: str, sql: str, sqlstate: str, message: str) -> None:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    assert (info.value.sqlstate, info.value.diag.message_primary) == (sqlstate, message)
    assert info.value.diag.severity == "ERROR"
    # The connection stays usable after the error.
    assert conn.execute("SELECT count(*) FROM psy_err").fetchone() == (1,)


@pytest.mark.parametrize("sql, position", [
    ("SELEC 1", "1"),
    ("SELECT * FROM psy_err WHERE", "28"),
    ("SELECT id FROM psy_err ORDER id", "30"),
])
def test_syntax_error_position(conn: psycopg.Connection, err_table: str, sql: str, position: str) -> None:
    with pytest.raises(pgerr.SyntaxError) as info:
        conn.execute(sql)
    assert info.value.sqlstate == "42601"
    assert info.value.diag.statement_position == position
    assert info.value.diag.message_primary.startswith("syntax error at ")


def test_undefined_table_position(conn: psycopg.Connection) -> None:
    with pytest.raises(pgerr.UndefinedTable) as info:
        conn.execute("SELECT 1 FROM psy_missing_rel")
    assert info.value.diag.statement_position == "15"


# ---------------------------------------------------------------------------- multi statement

def test_multiple_statements_one_execute(conn: psycopg.Connection) -> None:
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS psy_multi; CREATE TABLE psy_multi (a int); "
                "INSERT INTO psy_multi VALUES (1), (2), (3); SELECT sum(a) FROM psy_multi; SELECT 'x' AS y")
    tags = [cur.statusmessage]
    results = [cur.fetchall() if cur.description else None]
    while cur.nextset():
        tags.append(cur.statusmessage)
        results.append(cur.fetchall() if cur.description else None)
    assert tags == ["DROP TABLE", "CREATE TABLE", "INSERT 0 3", "SELECT 1", "SELECT 1"]
    assert results[3:] == [[(6,)], [("x",)]]


def test_multiple_statements_error_stops_rest(conn: psycopg.Connection) -> None:
    fresh(conn, "psy_multi_err", "a int")
    with pytest.raises(pgerr.UndefinedTable):
        conn.execute("INSERT INTO psy_multi_err VALUES (1); SELECT * FROM psy_multi_missing;"
                     " INSERT INTO psy_multi_err VALUES (2)")
    # A multi-statement Query is one implicit transaction: the first INSERT is rolled back too.
    assert conn.execute("SELECT count(*) FROM psy_multi_err").fetchone() == (0,)


# --------------------------------------------------------------------------------- command tags

def test_command_tags_and_rowcount(conn: psycopg.Connection) -> None:
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS psy_tags")
    cur.execute("CREATE TABLE psy_tags (id int, v text)")
    assert cur.statusmessage == "CREATE TABLE"
    cur.execute("INSERT INTO psy_tags VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert (cur.statusmessage, cur.rowcount) == ("INSERT 0 3", 3)
    cur.execute("UPDATE psy_tags SET v = 'z' WHERE id >= 2")
    assert (cur.statusmessage, cur.rowcount) == ("UPDATE 2", 2)
    cur.execute("DELETE FROM psy_tags WHERE id = 1")
    assert (cur.statusmessage, cur.rowcount) == ("DELETE 1", 1)
    cur.execute("SELECT * FROM psy_tags")
    assert (cur.statusmessage, cur.rowcount) == ("SELECT 2", 2)


# ------------------------------------------------------------------------------------- cancel

@pytest.mark.parametrize("protocol", ["simple", "extended"])
def test_cancel_running_query(server: Target, protocol: str) -> None:
    """conn.cancel() (a CancelRequest) stops the running statement with 57014; the connection stays usable.

    psycopg sends a statement without parameters as a simple Query and one with parameters
    through Parse/Bind/Execute, so both protocol paths are covered.
    """
    table = f"psy_big_{protocol}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        fresh(conn, table, "x int")
        conn.execute(f"INSERT INTO {table} SELECT g FROM generate_series(1, 1000) g")
        # 10^12 rows: hours of work, so the cancel always finds it running; its tasks loop
        # without checking Spark's kill flag (engine.reaper stops them).
        slow = f"SELECT count(*) FROM {table} a CROSS JOIN {table} b CROSS JOIN {table} c CROSS JOIN {table} d"
        params = None if protocol == "simple" else (0,)
        if params:
            slow += " WHERE a.x > %s"
        timer = threading.Timer(1.0, conn.cancel_safe)
        timer.start()
        started = time.monotonic()
        try:
            with pytest.raises(pgerr.QueryCanceled) as info:
                conn.execute(slow, params)
        finally:
            timer.cancel()
        assert info.value.sqlstate == "57014"
        assert time.monotonic() - started < 60  # the statement takes hours: it was cancelled (not a timing target)
        assert conn.execute("SELECT 42").fetchone() == (42,)
