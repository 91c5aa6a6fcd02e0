"""GreptimeDB DDL details and time-series table rules, through psycopg against a real gateway,
with PostgreSQL 15 as the oracle wherever PostgreSQL can answer (ordinary tables keep its rules).

- a time-series table's PRIMARY KEY columns are tags and may be NULL (one series per NULL tag, the
  last write of a (tag, ts) wins), by INSERT and by a flow into an existing sink; ordinary tables'
  keys stay NOT NULL;
- ALTER TABLE ... ADD COLUMN ... FIRST / AFTER c places the column (SELECT *, positional INSERT,
  COPY, information_schema follow);
- integers written to a TIMESTAMP TIME INDEX are epoch values in the column's unit; elsewhere they
  are refused as PostgreSQL refuses them;
- backtick-quoted identifiers; TIMESTAMP(p) precision and rounding;
- PARTITION ON COLUMNS refused with 0A000; CREATE DATABASE creates a schema, USE sets search_path.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import psycopg
import pytest
from tests.targets import target_for

HOURLY = "EVAL INTERVAL '1 hour'"


def _p(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:6]


@pytest.fixture()
def conn(tidegate):
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        yield c


def rows(conn: psycopg.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    return conn.execute(sql, params).fetchall()


def error_of(conn: psycopg.Connection, sql: str, params: tuple = ()) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql, params)
    return info.value


def _outcomes(dsn: str, statements: list[str]) -> list[tuple]:
    """What a client sees for each statement: rows or command tag, or (SQLSTATE, message)."""
    out: list[tuple] = []
    with psycopg.connect(dsn, autocommit=True) as c:
        for s in statements:
            try:
                cur = c.execute(s)
                out.append((s, cur.fetchall() if cur.description else cur.statusmessage))
            except psycopg.Error as e:
                out.append((s, e.sqlstate, e.diag.message_primary))
    return out


def _same_as_postgres(request: pytest.FixtureRequest, statements: list[str]) -> list[tuple]:
    expected = _outcomes(target_for(request, "postgres").dsn, statements)
    got = _outcomes(target_for(request, "tidegate").dsn, statements)
    diffs = [(e, g) for e, g in zip(expected, got) if e != g]
    assert not diffs and len(expected) == len(got), "\n".join(f"postgres {e}\ntidegate {g}" for e, g in diffs)
    return expected


def _columns(conn: psycopg.Connection, table: str) -> list[tuple]:
    return rows(conn, "SELECT column_name, is_nullable FROM information_schema.columns "
                      "WHERE table_name = %s ORDER BY ordinal_position", (table,))


# -- 1. NULL tags ------------------------------------------------------------------------------------

def test_null_tags_are_one_series_and_last_write_wins(conn: psycopg.Connection) -> None:
    t = _p("tags_")
    conn.execute(f"CREATE TABLE {t} (a STRING, b INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a))")
    assert _columns(conn, t) == [("a", "YES"), ("b", "YES"), ("ts", "NO")]
    conn.execute(f"INSERT INTO {t} VALUES (NULL, 1, '2024-01-01 00:00:00'), ('x', 1, '2024-01-01 00:00:00')")
    conn.execute(f"INSERT INTO {t} VALUES (NULL, 2, '2024-01-01 00:00:00')")  # same series, same ts
    conn.execute(f"INSERT INTO {t} VALUES (NULL, 3, '2024-01-01 00:00:01'), (NULL, 4, '2024-01-01 00:00:01')")
    assert rows(conn, f"SELECT a, b, ts FROM {t} ORDER BY a NULLS FIRST, ts") == [
        (None, 2, datetime(2024, 1, 1)), (None, 4, datetime(2024, 1, 1, 0, 0, 1)), ("x", 1, datetime(2024, 1, 1))]
    # the time index itself stays NOT NULL, with PostgreSQL's message
    err = error_of(conn, f"INSERT INTO {t} (a, b) VALUES ('y', 1)")
    assert err.sqlstate == "23502"
    assert err.diag.message_primary == f'null value in column "ts" of relation "{t}" violates not-null constraint'
    # a tag's NOT NULL can be set and dropped; the time index's cannot be dropped
    conn.execute(f"DELETE FROM {t} WHERE a IS NULL")
    conn.execute(f"ALTER TABLE {t} ALTER COLUMN a SET NOT NULL")
    assert error_of(conn, f"INSERT INTO {t} VALUES (NULL, 1, '2024-01-02')").sqlstate == "23502"
    conn.execute(f"ALTER TABLE {t} ALTER COLUMN a DROP NOT NULL")
    conn.execute(f"INSERT INTO {t} VALUES (NULL, 5, '2024-01-02')")
    assert rows(conn, f"SELECT b FROM {t} WHERE a IS NULL") == [(5,)]
    assert error_of(conn, f"ALTER TABLE {t} ALTER COLUMN ts DROP NOT NULL").sqlstate == "42P16"


def test_null_tags_in_a_transaction_block_read_their_writes(tidegate) -> None:
    t = _p("tagsblk_")
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        c.execute(f"CREATE TABLE {t} (a text, v int, ts timestamp TIME INDEX, PRIMARY KEY (a))")
        c.execute(f"INSERT INTO {t} VALUES (NULL, 1, '2024-01-01')")
    with psycopg.connect(tidegate.dsn) as c:
        c.execute(f"INSERT INTO {t} VALUES (NULL, 2, '2024-01-01')")
        assert c.execute(f"SELECT a, v FROM {t}").fetchall() == [(None, 2)]
        c.commit()
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        assert c.execute(f"SELECT a, v FROM {t}").fetchall() == [(None, 2)]


def test_ordinary_primary_key_stays_not_null_as_in_postgres(request: pytest.FixtureRequest) -> None:
    t = _p("pk_")
    _same_as_postgres(request, [
        f"CREATE TABLE {t} (a text PRIMARY KEY, b int)",
        f"INSERT INTO {t} VALUES (NULL, 1)",
        f"ALTER TABLE {t} ALTER COLUMN a DROP NOT NULL",
        f"SELECT column_name, is_nullable FROM information_schema.columns WHERE table_name = '{t}' "
        "ORDER BY ordinal_position",
        f"DROP TABLE {t}",
    ])


def test_flow_copies_null_tags_into_an_existing_sink(conn: psycopg.Connection) -> None:
    src, sink, flow = _p("fsrc_"), _p("fsink_"), _p("fnull_")
    conn.execute(f"CREATE TABLE {src} (a STRING, b INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a))")
    conn.execute(f"CREATE TABLE {sink} (a STRING, b INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a))")
    conn.execute(f"INSERT INTO {src} VALUES (NULL, 1, '2024-01-01 00:00:00'), ('x', 2, '2024-01-01 00:00:00'), "
                 f"(NULL, 3, '2024-01-01 00:00:01')")
    conn.execute(f"CREATE FLOW {flow} SINK TO {sink} {HOURLY} AS SELECT a, b, ts FROM {src}")
    rows(conn, f"ADMIN FLUSH_FLOW('{flow}')")
    assert rows(conn, f"SELECT a, b, ts FROM {sink} ORDER BY a NULLS FIRST, ts") == [
        (None, 1, datetime(2024, 1, 1)), (None, 3, datetime(2024, 1, 1, 0, 0, 1)), ("x", 2, datetime(2024, 1, 1))]
    conn.execute(f"INSERT INTO {src} VALUES (NULL, 9, '2024-01-01 00:00:00')")
    rows(conn, f"ADMIN FLUSH_FLOW('{flow}')")
    assert rows(conn, f"SELECT a, b FROM {sink} WHERE a IS NULL ORDER BY ts") == [(None, 9), (None, 3)]
    conn.execute(f"DROP FLOW {flow}")


def test_flow_into_a_not_null_column_names_that_column(conn: psycopg.Connection) -> None:
    src, sink, flow = _p("nsrc_"), _p("nsink_"), _p("nnull_")
    conn.execute(f"CREATE TABLE {src} (a STRING, b INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a))")
    conn.execute(f"CREATE TABLE {sink} (a STRING, b INT NOT NULL, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a))")
    conn.execute(f"INSERT INTO {src} VALUES ('x', NULL, '2024-01-01')")
    conn.execute(f"CREATE FLOW {flow} SINK TO {sink} {HOURLY} AS SELECT a, b, ts FROM {src}")
    err = error_of(conn, f"ADMIN FLUSH_FLOW('{flow}')")
    assert err.sqlstate == "23502"
    assert err.diag.message_primary == f'null value in column "b" of relation "{sink}" violates not-null constraint'
    assert err.diag.message_detail == 'The flow produced a row whose NOT NULL column "b" is NULL.'
    conn.execute(f"DROP FLOW {flow}")


# -- 2. ADD COLUMN FIRST / AFTER -----------------------------------------------------------------------

def test_add_column_first_and_after_place_the_column(tidegate) -> None:
    t = _p("place_")
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        c.execute(f"CREATE TABLE {t} (a STRING, b INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a))")
        c.execute(f"INSERT INTO {t} VALUES ('r1', 1, '2024-01-01')")
        c.execute(f"ALTER TABLE {t} ADD COLUMN c INT DEFAULT 200 AFTER b")  # fills the stored row
        c.execute(f"ALTER TABLE {t} ADD COLUMN d INT FIRST")  # catalog-only: the rows get NULL
        c.execute(f"INSERT INTO {t} VALUES (7, 'r2', 2, 300, '2024-01-02')")
        cur = c.execute(f"SELECT * FROM {t} ORDER BY a")
        assert [d.name for d in cur.description] == ["d", "a", "b", "c", "ts"]
        assert cur.fetchall() == [(None, "r1", 1, 200, datetime(2024, 1, 1)), (7, "r2", 2, 300, datetime(2024, 1, 2))]
        assert [r[0] for r in _columns(c, t)] == ["d", "a", "b", "c", "ts"]
        assert "  d integer,\n  a text,\n  b integer,\n  c integer DEFAULT 200,\n  ts timestamp" in \
            rows(c, f"SHOW CREATE TABLE {t}")[0][1]
        with c.cursor().copy(f"COPY {t} FROM STDIN") as cp:
            cp.write_row((8, "r3", 3, 400, datetime(2024, 1, 3)))
        with c.cursor().copy(f"COPY (SELECT * FROM {t} ORDER BY a) TO STDOUT") as cp:
            out = b"".join(bytes(chunk) for chunk in cp)
        assert out.decode().splitlines() == ["\\N\tr1\t1\t200\t2024-01-01 00:00:00",
                                             "7\tr2\t2\t300\t2024-01-02 00:00:00",
                                             "8\tr3\t3\t400\t2024-01-03 00:00:00"]
        err = error_of(c, f"ALTER TABLE {t} ADD COLUMN e INT AFTER nope")
        assert err.sqlstate == "42703" and err.diag.message_primary == f'column "nope" of relation "{t}" does not exist'
    # in a transaction block, and the rows written before it keep their values
    with psycopg.connect(tidegate.dsn) as c:
        c.execute(f"ALTER TABLE {t} ADD COLUMN e TEXT AFTER d")
        c.execute(f"INSERT INTO {t} VALUES (9, 'e4', 'r4', 4, 500, '2024-01-04')")
        assert c.execute(f"SELECT d, e, a, b, c FROM {t} WHERE a = 'r4'").fetchall() == [(9, "e4", "r4", 4, 500)]
        c.commit()
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        assert rows(c, f"SELECT * FROM {t} ORDER BY a") == [
            (None, None, "r1", 1, 200, datetime(2024, 1, 1)), (7, None, "r2", 2, 300, datetime(2024, 1, 2)),
            (8, None, "r3", 3, 400, datetime(2024, 1, 3)), (9, "e4", "r4", 4, 500, datetime(2024, 1, 4))]
        c.execute(f"UPDATE {t} SET e = 'u' WHERE a = 'r1'")
        c.execute(f"ALTER TABLE {t} DROP COLUMN b")
        assert rows(c, f"SELECT * FROM {t} WHERE a = 'r1'") == [(None, "u", "r1", 200, datetime(2024, 1, 1))]


# -- 3. epoch integers into a time index ----------------------------------------------------------------

@pytest.mark.parametrize(("ts_type", "value", "expected"), [
    ("TIMESTAMP", 1700000000123, datetime(2023, 11, 14, 22, 13, 20, 123000)),
    ("TIMESTAMP(3)", 1700000000123, datetime(2023, 11, 14, 22, 13, 20, 123000)),
    ("TIMESTAMP(0)", 1700000000, datetime(2023, 11, 14, 22, 13, 20)),
    ("TIMESTAMP(6)", 1700000000123456, datetime(2023, 11, 14, 22, 13, 20, 123456)),
    ("TIMESTAMP(9)", 1700000000123456789, datetime(2023, 11, 14, 22, 13, 20, 123457)),
    ("TIMESTAMPTZ", 1700000000123, datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=timezone.utc)),
])
def test_integer_into_time_index_is_an_epoch_value(conn: psycopg.Connection, ts_type: str, value: int,
                                                   expected: datetime) -> None:
    t = _p("epoch_")
    conn.execute("SET TIME ZONE 'UTC'")
    conn.execute(f"CREATE TABLE {t} (h STRING, v INT, ts {ts_type} TIME INDEX, PRIMARY KEY(h))")
    conn.execute(f"INSERT INTO {t} VALUES ('lit', 1, {value})")  # literal
    conn.execute(f"INSERT INTO {t} VALUES (%s, %s, %s)", ("param", 2, value))  # parameter
    conn.execute(f"INSERT INTO {t} SELECT 'select', 3, {value}")  # INSERT ... SELECT
    conn.execute(f"INSERT INTO {t} (h, v, ts) VALUES ('zero', 4, 0)")
    epoch = datetime(1970, 1, 1, tzinfo=expected.tzinfo)
    assert rows(conn, f"SELECT h, ts FROM {t} ORDER BY v") == [
        ("lit", expected), ("param", expected), ("select", expected), ("zero", epoch)]


def test_integers_elsewhere_keep_postgres_rules(request: pytest.FixtureRequest, conn: psycopg.Connection) -> None:
    t = _p("noepoch_")
    _same_as_postgres(request, [
        f"CREATE TABLE {t} (a timestamp, b timestamptz, d date, n int)",
        f"INSERT INTO {t} (a) VALUES (0)",
        f"INSERT INTO {t} (b) VALUES (1700000000000)",
        f"INSERT INTO {t} (d) VALUES (5000000000)",
        f"INSERT INTO {t} (a) VALUES (1.5)",
        f"INSERT INTO {t} (a) SELECT 0",
        f"INSERT INTO {t} (a) VALUES ('not a time')",
        f"INSERT INTO {t} (a, n) VALUES ('2024-01-01', 0)",
        f"SELECT a, n FROM {t}",
        f"DROP TABLE {t}",
    ])
    # a time-series table's other timestamp columns are ordinary columns too
    ts = _p("noepoch_ts_")
    conn.execute(f"CREATE TABLE {ts} (h text, at timestamp, ts timestamp TIME INDEX, PRIMARY KEY (h))")
    err = error_of(conn, f"INSERT INTO {ts} VALUES ('a', 0, 0)")
    assert err.sqlstate == "42804"
    assert err.diag.message_primary == 'column "at" is of type timestamp without time zone but expression is of type integer'
    err = error_of(conn, f"INSERT INTO {ts} VALUES ('a', NULL, 'not a time')")  # text keeps its rules
    assert err.sqlstate == "22007"
    assert err.diag.message_primary == 'invalid input syntax for type timestamp: "not a time"'


# -- 4. backticks, TIMESTAMP(p) ---------------------------------------------------------------------

def test_backtick_identifiers(conn: psycopg.Connection) -> None:
    t = _p("Bt_")
    conn.execute(f"CREATE TABLE `{t}` (`log` STRING, `Host` STRING, `we``ird` INT, "
                 "ts TIMESTAMP TIME INDEX, PRIMARY KEY(`Host`))")
    conn.execute(f"INSERT INTO `{t}` (`log`, `Host`, `we``ird`, ts) VALUES ('l1', 'h1', 1, '2024-01-01'), "
                 "('`not an identifier`', 'h2', 2, '2024-01-02')")
    cur = conn.execute(f'SELECT `log`, "Host", "we`ird" FROM "{t}" WHERE `Host` = \'h2\'')
    assert [d.name for d in cur.description] == ["log", "Host", "we`ird"]
    assert cur.fetchall() == [("`not an identifier`", "h2", 2)]
    assert [r[0] for r in _columns(conn, t)] == ["log", "Host", "we`ird", "ts"]
    ddl = rows(conn, f"SHOW CREATE TABLE `{t}`")[0][1]
    assert '"Host" text' in ddl and 'PRIMARY KEY ("Host")' in ddl
    # an unquoted name is folded, so it does not find the quoted upper-case column (as in PostgreSQL)
    assert error_of(conn, f'SELECT host FROM "{t}"').sqlstate == "42703"
    err = error_of(conn, "SELECT `unterminated FROM x")
    assert err.sqlstate == "42601" and "unterminated quoted identifier" in err.diag.message_primary
    assert error_of(conn, "SELECT `` FROM x").sqlstate == "42601"


def test_timestamp_precision_rounds_as_postgres(request: pytest.FixtureRequest) -> None:
    t = _p("prec_")
    _same_as_postgres(request, [
        f"CREATE TABLE {t} (k int, a timestamp(0), b timestamp(9), c timestamptz(0), d timestamp(2))",
        "SET TIME ZONE 'UTC'",
        f"INSERT INTO {t} VALUES (1, '1999-12-31 23:59:59.5', '2024-01-01 00:00:00.1234565', "
        "'2024-01-01 00:00:01.5+00', '1985-06-01 12:00:00.125')",
        f"INSERT INTO {t} VALUES (2, '2024-01-01 00:00:01.5', '2024-01-01 00:00:00.1234575', "
        "'1960-01-01 00:00:02.5+00', '1960-01-01 00:00:00.125')",
        f"INSERT INTO {t} VALUES (3, '1969-12-31 23:59:59.5', NULL, '2000-01-01 00:00:00.5+00', "
        "'2000-01-01 00:00:00.005')",
        f"SELECT a, b, c, d FROM {t} ORDER BY k",
        f"SELECT column_name, datetime_precision FROM information_schema.columns WHERE table_name = '{t}' "
        "ORDER BY ordinal_position",
        f"DROP TABLE {t}",
    ])


def test_time_index_precision_is_kept(conn: psycopg.Connection) -> None:
    t = _p("prec9_")
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.execute(f"CREATE TABLE {t} (h STRING, at TIMESTAMP(9), ts TIMESTAMP(9) TIME INDEX, PRIMARY KEY(h))")
    assert notices == ["TIMESTAMP(9) precision reduced to maximum allowed, 6",
                       'TIMESTAMP(9) time index "ts" keeps its precision, but values are stored with microsecond '
                       "resolution (Delta Lake's): digits below the microsecond are rounded"]
    ddl = rows(conn, f"SHOW CREATE TABLE {t}")[0][1]
    assert "  at timestamp(6) without time zone,\n  ts timestamp(9) without time zone NOT NULL," in ddl
    t0 = _p("prec0_")
    conn.execute(f"CREATE TABLE {t0} (h STRING, ts TIMESTAMP(0) TIME INDEX, PRIMARY KEY(h))")
    assert "ts timestamp(0) without time zone NOT NULL" in rows(conn, f"SHOW CREATE TABLE {t0}")[0][1]
    conn.execute(f"INSERT INTO {t0} VALUES ('a', '2024-01-01 00:00:00.5'), ('b', 1700000000)")
    assert rows(conn, f"SELECT h, ts FROM {t0} ORDER BY h") == [
        ("a", datetime(2024, 1, 1, 0, 0, 1)), ("b", datetime(2023, 11, 14, 22, 13, 20))]


# -- 5. PARTITION ON COLUMNS ------------------------------------------------------------------------

def test_partition_on_columns_is_refused_with_the_way_out(conn: psycopg.Connection) -> None:
    t = _p("part_")
    err = error_of(conn, f"CREATE TABLE {t} (c INT, ts TIMESTAMP TIME INDEX) PARTITION ON COLUMNS (c) (c < 3, c >= 3)")
    assert err.sqlstate == "0A000"
    assert err.diag.message_primary == "PARTITION ON COLUMNS is not supported: a table is stored as one Delta table"
    assert "Remove the PARTITION ON COLUMNS" in (err.diag.message_hint or "")
    assert rows(conn, "SELECT count(*) FROM information_schema.tables WHERE table_name = %s", (t,)) == [(0,)]


# -- 6. CREATE DATABASE / USE ----------------------------------------------------------------------------

def test_create_database_is_a_schema_and_use_sets_the_search_path(tidegate) -> None:
    db = _p("gdb_")
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        notices: list[str] = []
        c.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        assert c.execute(f"CREATE DATABASE {db}").statusmessage == "CREATE DATABASE"
        assert notices == [f'database "{db}" is schema "{db}" of database "tidegate": name its tables {db}.table, '
                           f"or run USE {db} to make it the default"]
        assert rows(c, "SELECT schema_name FROM information_schema.schemata WHERE schema_name = %s", (db,)) == [(db,)]
        assert error_of(c, f"CREATE DATABASE {db}").sqlstate == "42P04"
        assert c.execute(f"CREATE DATABASE IF NOT EXISTS {db}").statusmessage == "CREATE DATABASE"
        c.execute(f"CREATE TABLE {db}.m (host STRING, ts TIMESTAMP TIME INDEX, PRIMARY KEY(host))")
        c.execute(f"INSERT INTO {db}.m VALUES ('a', 0)")
        err = error_of(c, f"CREATE DATABASE {_p('gdbopt_')} WITH (ttl = '7d')")
        assert err.sqlstate == "0A000" and "CREATE TABLE ... WITH" in (err.diag.message_hint or "")
        err = error_of(c, f"DROP DATABASE {db}")
        assert err.sqlstate == "0A000" and err.diag.message_hint == f"Use DROP SCHEMA {db} CASCADE to drop it and its tables."
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        assert c.execute(f"USE {db}").statusmessage == "SET"
        assert rows(c, "SHOW search_path") == [(db,)]
        assert rows(c, "SELECT current_schema()") == [(db,)]
        c.execute("INSERT INTO m VALUES ('b', 1000)")
        c.execute("CREATE TABLE n (x int)")
        assert rows(c, f"SELECT host, ts FROM tidegate.{db}.m ORDER BY host") == [
            ("a", datetime(1970, 1, 1)), ("b", datetime(1970, 1, 1, 0, 0, 1))]
        assert rows(c, "SELECT table_schema FROM information_schema.tables WHERE table_name = 'n' "
                       "AND table_schema = %s", (db,)) == [(db,)]
        assert error_of(c, f"SELECT * FROM other.{db}.m").sqlstate == "0A000"
        assert error_of(c, "USE").sqlstate == "42601"
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:  # USE is per session
        assert rows(c, "SHOW search_path") == [('"$user", public',)]
        assert error_of(c, "SELECT * FROM m").sqlstate == "42P01"


def test_create_database_of_the_current_one_is_refused_as_in_postgres(request: pytest.FixtureRequest) -> None:
    pg = _outcomes(target_for(request, "postgres").dsn, ["CREATE DATABASE postgres", "DROP DATABASE postgres"])
    tg = _outcomes(target_for(request, "tidegate").dsn, ["CREATE DATABASE tidegate", "DROP DATABASE tidegate"])
    assert [o[1] for o in pg] == [o[1] for o in tg] == ["42P04", "55006"]
    assert tg[0][2] == 'database "tidegate" already exists'
