"""INSERT ... SELECT and CREATE TABLE AS written by Delta Lake's Spark connector (engine.sparkwrite).

Through a real client on the shared gateway. ``SET tidegate.spark_writes = on`` sends every
eligible write to Spark whatever its size (``auto``, the default, only large ones), ``off`` keeps
the collected delta-rs path: each test compares what a user reads after the Spark write with what
the collected path stores, and checks the log to know which writer committed.
"""

from __future__ import annotations

import threading
import time

import duckdb
import psycopg
import pytest
from deltalake import DeltaTable

SPARK = "Apache-Spark"


@pytest.fixture(scope="module")
def gw(tidegate):
    return tidegate


@pytest.fixture()
def conn(gw):
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        yield c


def location(conn: psycopg.Connection, table: str, gw) -> str:
    (path,) = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()
    return str(gw.data_dir / path)


def writers(path: str) -> list[str]:
    """The engine of each commit after the table's creation, oldest first."""
    history = sorted(DeltaTable(path).history(), key=lambda e: e.get("version", 0))
    return [str(e.get("engineInfo") or e.get("clientVersion") or "") for e in history if e.get("version", 0) > 0]


TYPES = [
    ("b", "boolean"), ("i2", "smallint"), ("i4", "integer"), ("i8", "bigint"), ("f4", "real"),
    ("f8", "double precision"), ("n", "numeric(12,3)"), ("nu", "numeric"), ("t", "text"),
    ("vc", "varchar(5)"), ("ch", "char(3)"), ("by", "bytea"), ("d", "date"), ("tm", "time"),
    ("ts", "timestamp"), ("tz", "timestamptz"), ("iv", "interval"), ("u", "uuid"), ("j", "jsonb"),
    ("ai", "integer[]"), ("at", "text[]"),
]
ROWS = [
    "(1, true, 1, 2, 3, 1.5, 2.25, 123456789.125, 1.000000001, 'héllo', 'ab', 'x', '\\x00ff', "
    "'2024-02-29', '23:59:59.999999', '2024-01-01 12:34:56.789012', '2040-07-01 12:00:00+02', "
    "'1 year 2 mons -3 days 04:05:06.5', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1, 2]}', "
    "'{1,NULL,3}', '{\"a b\",NULL}')",
    "(2, false, -32768, -2147483648, -9223372036854775808, 'NaN', '-Infinity', -0.001, -123, '', "
    "'', ' ', '\\x', '0001-01-01', '00:00', '1900-01-01 00:00', '1970-01-01 00:00:00+00', '0', "
    "'00000000-0000-0000-0000-000000000000', 'null', '{}', '{}')",
    "(3" + ", NULL" * len(TYPES) + ")",
]


def test_insert_select_on_spark_stores_what_the_collected_path_stores(conn, gw) -> None:
    columns = ", ".join(f"{n} {t}" for n, t in TYPES)
    for name in ("sw_src", "sw_spark", "sw_rows"):
        conn.execute(f"DROP TABLE IF EXISTS {name}")
        conn.execute(f"CREATE TABLE {name} (id int, {columns})")
    conn.execute(f"INSERT INTO sw_src VALUES {', '.join(ROWS)}")
    conn.execute("SET tidegate.spark_writes = off")
    assert conn.execute("INSERT INTO sw_rows SELECT * FROM sw_src").statusmessage == "INSERT 0 3"
    conn.execute("SET tidegate.spark_writes = on")
    assert conn.execute("INSERT INTO sw_spark SELECT * FROM sw_src").statusmessage == "INSERT 0 3"
    spark_path, rows_path = location(conn, "sw_spark", gw), location(conn, "sw_rows", gw)
    assert writers(spark_path)[-1].startswith(SPARK)
    assert not writers(rows_path)[-1].startswith(SPARK)
    expected = repr(conn.execute("SELECT * FROM sw_rows ORDER BY id").fetchall())  # repr: NaN is not NaN
    assert repr(conn.execute("SELECT * FROM sw_spark ORDER BY id").fetchall()) == expected
    # the same through the text protocol and in a query Spark answers (a join, never interactive)
    as_text = "SELECT {cols} FROM {t} ORDER BY id"
    cols = ", ".join(f"{n}::text" for n, _ in TYPES)
    assert conn.execute(as_text.format(cols=cols, t="sw_spark")).fetchall() == \
        conn.execute(as_text.format(cols=cols, t="sw_rows")).fetchall()
    assert conn.execute("SELECT count(*) FROM sw_spark s JOIN sw_rows r ON s.id = r.id "
                        "AND s.tz = r.tz AND s.ts = r.ts AND s.n = r.n AND s.tm = r.tm").fetchone() == (2,)
    # other readers of the table: delta-rs, and DuckDB over the files delta-rs lists
    dt = DeltaTable(spark_path)
    assert dt.to_pyarrow_table().num_rows == 3
    files = ", ".join(f"'{u}'" for u in dt.file_uris())
    assert duckdb.sql(f"SELECT count(*), sum(i8) FROM read_parquet([{files}])").fetchall() == \
        [(3, -9223372036854775805)]


def test_widening_and_conversions(conn, gw) -> None:
    conn.execute("DROP TABLE IF EXISTS sw_wide")
    conn.execute("DROP TABLE IF EXISTS sw_narrow")
    conn.execute("CREATE TABLE sw_narrow (a smallint, b int, c real, s text)")
    conn.execute("INSERT INTO sw_narrow VALUES (1, 2, 0.1, '7'), (NULL, -5, 3.5, '8')")
    conn.execute("CREATE TABLE sw_wide (a bigint, b bigint, c double precision, s int)")
    conn.execute("SET tidegate.spark_writes = on")
    conn.execute("INSERT INTO sw_wide (a, b, c) SELECT a, b, c FROM sw_narrow")
    path = location(conn, "sw_wide", gw)
    assert writers(path)[-1].startswith(SPARK)
    assert conn.execute("SELECT a, b, c, s FROM sw_wide ORDER BY b").fetchall() == [
        (None, -5, 3.5, None), (1, 2, 0.10000000149011612, None)]
    # text into int is PostgreSQL's assignment error, from the collected path; nothing written
    with pytest.raises(psycopg.errors.DatatypeMismatch):
        conn.execute("INSERT INTO sw_wide (s) SELECT s FROM sw_narrow")
    assert conn.execute("SELECT count(*) FROM sw_wide").fetchone() == (2,)
    # a column converted by PostgreSQL's rules (int -> text) is written by the collected path
    conn.execute("DROP TABLE IF EXISTS sw_text")
    conn.execute("CREATE TABLE sw_text (v text, d int DEFAULT 42, n numeric(4,1))")
    before = len(writers(location(conn, "sw_text", gw)))
    conn.execute("INSERT INTO sw_text (v, n) SELECT b, c FROM sw_narrow")
    assert conn.execute("SELECT v, d, n FROM sw_text ORDER BY v").fetchall() == [
        ("-5", 42, __import__("decimal").Decimal("3.5")), ("2", 42, __import__("decimal").Decimal("0.1"))]
    assert not writers(location(conn, "sw_text", gw))[before].startswith(SPARK)
    # a constant default filled on Spark
    conn.execute("INSERT INTO sw_text (v) SELECT s FROM sw_narrow")
    assert writers(location(conn, "sw_text", gw))[-1].startswith(SPARK)
    assert conn.execute("SELECT v, d, n FROM sw_text WHERE v IN ('7', '8') ORDER BY v").fetchall() == [
        ("7", 42, None), ("8", 42, None)]


def test_not_null_violation_writes_nothing(conn, gw) -> None:
    conn.execute("DROP TABLE IF EXISTS sw_nn")
    conn.execute("DROP TABLE IF EXISTS sw_nn_src")
    conn.execute("CREATE TABLE sw_nn_src (id bigint, v text)")
    conn.execute("INSERT INTO sw_nn_src SELECT g, CASE WHEN g = 777 THEN NULL ELSE 'v' END FROM generate_series(1, 1000) g")
    conn.execute("CREATE TABLE sw_nn (id bigint NOT NULL, v text NOT NULL)")
    path = location(conn, "sw_nn", gw)
    versions = len(writers(path))
    conn.execute("SET tidegate.spark_writes = on")
    with pytest.raises(psycopg.errors.NotNullViolation) as err:
        conn.execute("INSERT INTO sw_nn SELECT * FROM sw_nn_src")
    assert err.value.diag.message_primary == \
        'null value in column "v" of relation "sw_nn" violates not-null constraint'
    with pytest.raises(psycopg.errors.NotNullViolation):
        conn.execute("INSERT INTO sw_nn (v) SELECT v FROM sw_nn_src WHERE v IS NOT NULL")
    assert conn.execute("SELECT count(*) FROM sw_nn").fetchone() == (0,)
    assert len(writers(path)) == versions
    conn.execute("INSERT INTO sw_nn SELECT * FROM sw_nn_src WHERE v IS NOT NULL")
    assert conn.execute("SELECT count(*), count(DISTINCT id) FROM sw_nn").fetchone() == (999, 999)


def test_keyed_tables_keep_their_checks(conn, gw) -> None:
    """INSERT ... SELECT into a PRIMARY KEY table on Spark: a key already stored or repeated in the
    statement is PostgreSQL's 23505 with the key, a NULL key 23502 (without the failing row's text:
    see docs/UNSUPPORTED.md), and nothing is written; rows
    with new keys are appended by Spark. A UNIQUE or FOREIGN KEY table keeps the collected path."""
    for name in ("sw_pk", "sw_pk_rows"):
        conn.execute(f"DROP TABLE IF EXISTS {name}")
        conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, k int, v text)")
        conn.execute(f"INSERT INTO {name} VALUES (5, 5, 'old')")
    path = location(conn, "sw_pk", gw)
    failing = ["INSERT INTO {t} SELECT g, g, 'new' FROM generate_series(1, 10) g",
               "INSERT INTO {t} SELECT g % 3 + 20, g, 'new' FROM generate_series(1, 10) g",
               "INSERT INTO {t} SELECT CASE WHEN g = 7 THEN NULL ELSE g + 100 END, g, 'new' FROM generate_series(1, 10) g"]
    for statement in failing:
        errors = []
        for table, mode in (("sw_pk_rows", "off"), ("sw_pk", "on")):
            conn.execute(f"SET tidegate.spark_writes = {mode}")
            with pytest.raises(psycopg.Error) as info:
                conn.execute(statement.format(t=table))
            detail = info.value.diag.message_detail if info.value.sqlstate == "23505" else None
            errors.append((info.value.sqlstate, info.value.diag.message_primary.replace(table, "t"), detail))
        assert errors[0] == errors[1] and errors[0][0] in ("23505", "23502"), errors
    assert conn.execute("SELECT * FROM sw_pk").fetchall() == [(5, 5, "old")]
    versions = len(writers(path))
    conn.execute("SET tidegate.spark_writes = on")
    assert conn.execute("INSERT INTO sw_pk SELECT g, g, 'new' FROM generate_series(6, 1000) g").statusmessage \
        == "INSERT 0 995"
    assert conn.execute("SELECT count(*), count(DISTINCT id), sum(id) FROM sw_pk").fetchone() == (996, 996, 500490)
    assert [w.startswith(SPARK) for w in writers(path)[versions:]] == [True]
    # a table with more to check than its key keeps the collected path
    conn.execute("DROP TABLE IF EXISTS sw_pk_u")
    conn.execute("CREATE TABLE sw_pk_u (id bigint PRIMARY KEY, k int UNIQUE)")
    conn.execute("INSERT INTO sw_pk_u SELECT g, g FROM generate_series(1, 10) g")
    assert not writers(location(conn, "sw_pk_u", gw))[-1].startswith(SPARK)


def test_time_series_inserts_on_spark_replace_rows_as_the_collected_path_does(conn, gw) -> None:
    """INSERT ... SELECT into a time-series table is an upsert on Spark too (one Delta MERGE): a
    row replaces the stored row of its tags and time, NULL tags make one series, and of the rows
    one key has in the statement the last wins; the count is the rows written, as collected."""
    columns = "host text, dc text, ts timestamp TIME INDEX, v double precision, PRIMARY KEY (host, dc)"
    twin_tables(conn, "swts", columns,
                "SELECT 'h' || (g % 4), CASE WHEN g % 3 = 0 THEN NULL ELSE 'dc' || (g % 2) END, "
                "TIMESTAMP '2024-01-01' + (g % 50) * INTERVAL '1 minute', g FROM generate_series(1, 400) g")
    before = conn.execute("SELECT count(*) FROM swts_rows").fetchone()[0]
    assert before < 400  # the fill's own repeated keys kept their last row
    # rows over stored keys (some with NULL tags), new keys, and keys repeated inside the statement
    status = on_both(conn, gw, "swts", "INSERT INTO {t} SELECT 'h' || (g % 5), CASE WHEN g % 2 = 0 THEN NULL "
                     "ELSE 'dc1' END, TIMESTAMP '2024-01-01' + (g % 70) * INTERVAL '1 minute', -g "
                     "FROM generate_series(1, 600) g")
    assert status.startswith("INSERT 0 ") and int(status.split()[-1]) < 600
    ordered = "SELECT host, dc, ts, v FROM {} ORDER BY host, dc NULLS FIRST, ts"
    expected = conn.execute(ordered.format("swts_rows")).fetchall()
    assert conn.execute(ordered.format("swts_spark")).fetchall() == expected
    assert len(expected) > before and any(v < 0 for *_, v in expected) and any(v > 0 for *_, v in expected)
    # the last row of a repeated key: 'h1', 'dc1', minute 1 comes from g = 1, 71, 141, ..., 561
    assert conn.execute("SELECT v FROM swts_spark WHERE host = 'h1' AND dc = 'dc1' AND ts = '2024-01-01 00:01'"
                        ).fetchall() == [(-561.0,)]


def test_on_conflict_do_nothing_on_spark_keeps_what_the_collected_path_keeps(conn, gw) -> None:
    """``INSERT ... SELECT ... ON CONFLICT [(key)] DO NOTHING`` on Spark: stored keys are skipped,
    of the rows one key has in the statement the first is inserted, the count is the rows
    inserted; other ON CONFLICT forms keep the collected path and its errors."""
    twin_tables(conn, "swcn", "id bigint PRIMARY KEY, v text NOT NULL",
                "SELECT g * 3, 'old ' || g FROM generate_series(1, 100) g")
    for statement in ("INSERT INTO {t} SELECT g % 250, 'new ' || g FROM generate_series(1, 600) g ON CONFLICT DO NOTHING",
                      "INSERT INTO {t} SELECT g, 'again ' || g FROM generate_series(200, 400) g ON CONFLICT (id) DO NOTHING"):
        status = on_both(conn, gw, "swcn", statement)
        assert status.startswith("INSERT 0 ") and int(status.split()[-1]) > 0
    ordered = "SELECT id, v FROM {} ORDER BY id"
    expected = conn.execute(ordered.format("swcn_rows")).fetchall()
    assert conn.execute(ordered.format("swcn_spark")).fetchall() == expected
    assert dict(expected)[1] == "new 1" and dict(expected)[3] == "old 1" and dict(expected)[300] == "old 100"
    conn.execute("SET tidegate.spark_writes = on")
    with pytest.raises(psycopg.errors.InvalidColumnReference):  # 42P10: not the key
        conn.execute("INSERT INTO swcn_spark SELECT g, 'x' FROM generate_series(1, 5) g ON CONFLICT (v) DO NOTHING")
    with pytest.raises(psycopg.errors.NotNullViolation):
        conn.execute("INSERT INTO swcn_spark SELECT g + 1000, NULL FROM generate_series(1, 5) g ON CONFLICT DO NOTHING")
    assert conn.execute(ordered.format("swcn_spark")).fetchall() == expected


def test_on_conflict_do_update_on_spark_upserts_as_the_collected_path_does(conn, gw) -> None:
    """``INSERT ... SELECT ... ON CONFLICT (key) DO UPDATE`` on Spark is Delta's MERGE: a stored key
    gets the SET values (which read the stored row and EXCLUDED), a new key is inserted, the count
    is both, as PostgreSQL counts; a key proposed twice is 21000, a NULL into NOT NULL 23502, and
    neither changes anything; RETURNING keeps the collected path."""
    twin_tables(conn, "swcu", "id bigint PRIMARY KEY, v text NOT NULL, n integer, ts timestamp",
                "SELECT g * 3, 'old ' || g, g, TIMESTAMP '2024-01-01' + g * INTERVAL '1 hour' "
                "FROM generate_series(1, 1000) g")
    assert on_both(conn, gw, "swcu", "INSERT INTO {t} SELECT g, 'new ' || g, g * 2, NULL FROM generate_series(500, 3500) g "
                   "ON CONFLICT (id) DO UPDATE SET v = excluded.v || ' was ' || {t}.v, n = {t}.n + excluded.n"
                   ) == "INSERT 0 3001"
    assert on_both(conn, gw, "swcu", "INSERT INTO {t} AS a (n, id, v) SELECT -g, g * 7, 'seven' FROM generate_series(1, 600) g "
                   "ON CONFLICT (id) DO UPDATE SET ts = a.ts + INTERVAL '1 day', n = EXCLUDED.n") == "INSERT 0 600"
    assert on_both(conn, gw, "swcu", "INSERT INTO {t} SELECT id + 1, v, n, ts FROM {t} WHERE id % 10 = 0 "
                   "ON CONFLICT (id) DO UPDATE SET v = 'next of ' || excluded.v RETURNING id", spark=False
                   ).startswith("INSERT 0 ")
    ordered = "SELECT * FROM {} ORDER BY id"
    expected = conn.execute(ordered.format("swcu_rows")).fetchall()
    assert conn.execute(ordered.format("swcu_spark")).fetchall() == expected
    rows = {r[0]: r[1:] for r in expected}
    assert rows[510][:2] == ("new 510 was old 170", 170 + 1020)  # stored, then updated by the first
    assert rows[4200][:2] == ("seven", -600) and rows[7][1:] == (-1, None)  # inserted by the second
    assert rows[21][1:] == (-3, rows[21][2]) and str(rows[21][2]).startswith("2024-01-02 07:00")
    conn.execute("SET tidegate.spark_writes = on")
    path = location(conn, "swcu_spark", gw)
    commits = len(writers(path))
    with pytest.raises(psycopg.errors.CardinalityViolation) as e:  # 21000: key 10 proposed twice
        conn.execute("INSERT INTO swcu_spark SELECT g % 10 + 10, 'twice' , g, NULL FROM generate_series(1, 11) g "
                     "ON CONFLICT (id) DO UPDATE SET v = excluded.v")
    assert "cannot affect row a second time" in str(e.value)
    with pytest.raises(psycopg.errors.NotNullViolation):  # a stored key set to NULL
        conn.execute("INSERT INTO swcu_spark SELECT g, 'x', g, NULL FROM generate_series(1, 20) g "
                     "ON CONFLICT (id) DO UPDATE SET v = NULLIF(excluded.v, 'x')")
    with pytest.raises(psycopg.errors.NotNullViolation):  # a new key inserted with NULL
        conn.execute("INSERT INTO swcu_spark SELECT g + 100000, NULL, g, NULL FROM generate_series(1, 20) g "
                     "ON CONFLICT (id) DO UPDATE SET v = 'y'")
    assert len(writers(path)) == commits
    assert conn.execute(ordered.format("swcu_spark")).fetchall() == expected


def test_create_table_as_on_spark(conn, gw) -> None:
    conn.execute("DROP TABLE IF EXISTS sw_ctas")
    conn.execute("DROP TABLE IF EXISTS sw_ctas_bad")
    conn.execute("SET tidegate.spark_writes = on")
    status = conn.execute("CREATE TABLE sw_ctas AS SELECT g::bigint AS id, 'r' || g AS s, (g * 0.25)::numeric(10,2) AS q, "
                          "TIMESTAMP '2024-01-01' + g * INTERVAL '1 minute' AS ts FROM generate_series(1, 5000) g")
    assert status.statusmessage == "SELECT 5000"
    assert writers(location(conn, "sw_ctas", gw))[-1].startswith(SPARK)
    assert conn.execute("SELECT count(*), sum(id), min(s), max(ts) FROM sw_ctas").fetchone()[:3] == (5000, 12502500, "r1")
    assert conn.execute("SELECT q::text FROM sw_ctas WHERE id = 3").fetchone() == ("0.75",)
    columns = conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                           "WHERE table_name = 'sw_ctas' ORDER BY ordinal_position").fetchall()
    assert [c for c, _ in columns] == ["id", "s", "q", "ts"]
    # an error in the middle of the job: no table is left behind
    with pytest.raises(psycopg.errors.DivisionByZero):
        conn.execute("CREATE TABLE sw_ctas_bad AS SELECT id, 10 / (id - 2500) AS x FROM sw_ctas")
    with pytest.raises(psycopg.errors.UndefinedTable):
        conn.execute("SELECT * FROM sw_ctas_bad")


def test_small_inserts_commit_beside_a_spark_append(conn, gw) -> None:
    conn.execute("DROP TABLE IF EXISTS sw_busy")
    conn.execute("CREATE TABLE sw_busy (id bigint, who text)")
    conn.execute("SET tidegate.spark_writes = on")
    errors: list[BaseException] = []

    def small() -> None:
        try:
            with psycopg.connect(gw.dsn, autocommit=True) as other:
                for i in range(40):
                    other.execute("INSERT INTO sw_busy VALUES (%s, 'small')", (-1 - i,))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=small) for _ in range(2)]
    for th in threads:
        th.start()
    for _ in range(3):
        conn.execute("INSERT INTO sw_busy SELECT g, 'spark' FROM generate_series(1, 20000) g")
    for th in threads:
        th.join()
    assert not errors
    assert conn.execute("SELECT who, count(*) FROM sw_busy GROUP BY who ORDER BY who").fetchall() == [
        ("small", 80), ("spark", 60000)]
    assert sum(w.startswith(SPARK) for w in writers(location(conn, "sw_busy", gw))) == 3


def test_cancelled_spark_append_leaves_nothing(conn, gw) -> None:
    conn.execute("DROP TABLE IF EXISTS sw_cancel")
    conn.execute("DROP TABLE IF EXISTS sw_cancel_src")
    conn.execute("CREATE TABLE sw_cancel (a bigint, b bigint)")
    conn.execute("CREATE TABLE sw_cancel_src (a bigint)")
    conn.execute("INSERT INTO sw_cancel_src SELECT g FROM generate_series(1, 20000) g")
    conn.execute("SET tidegate.spark_writes = on")
    conn.execute("SET statement_timeout = '1500ms'")
    started = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):  # 400M pairs: minutes of work
        conn.execute("INSERT INTO sw_cancel SELECT x.a, y.a FROM sw_cancel_src x, sw_cancel_src y "
                     "WHERE (x.a * y.a) % 7 = 3")
    assert time.monotonic() - started < 30
    conn.execute("SET statement_timeout = 0")
    assert conn.execute("SELECT count(*) FROM sw_cancel").fetchone() == (0,)
    assert writers(location(conn, "sw_cancel", gw)) == []


def test_flow_reads_what_spark_appended(conn, gw) -> None:
    conn.execute("DROP FLOW IF EXISTS sw_flow")
    conn.execute("DROP TABLE IF EXISTS sw_sink")
    conn.execute("DROP TABLE IF EXISTS sw_metrics")
    conn.execute("CREATE TABLE sw_metrics (host text, ts timestamp TIME INDEX, v double precision) "
                 "WITH ('append_mode' = 'true')")
    conn.execute("CREATE FLOW sw_flow SINK TO sw_sink EVAL INTERVAL '1 hour' AS SELECT host, "
                 "date_bin(INTERVAL '1 hour', ts, '2000-01-01 00:00:00'::timestamp) AS w, count(*) AS n, "
                 "sum(v) AS total FROM sw_metrics GROUP BY host, w")
    conn.execute("SET tidegate.spark_writes = on")
    conn.execute("INSERT INTO sw_metrics SELECT 'h' || (g % 3), TIMESTAMP '2024-01-01' + g * INTERVAL '1 minute', "
                 "g FROM generate_series(0, 299) g")
    assert writers(location(conn, "sw_metrics", gw))[-1].startswith(SPARK)
    conn.execute("ADMIN FLUSH_FLOW('sw_flow')")
    got = conn.execute("SELECT host, sum(n)::int, sum(total) FROM sw_sink GROUP BY host ORDER BY host").fetchall()
    assert got == [("h0", 100, 14850.0), ("h1", 100, 14950.0), ("h2", 100, 15050.0)]
    # appended again: only the windows it touched change
    conn.execute("INSERT INTO sw_metrics SELECT 'h0', TIMESTAMP '2024-01-01 04:00' + g * INTERVAL '1 second', 1 "
                 "FROM generate_series(1, 10) g")
    conn.execute("ADMIN FLUSH_FLOW('sw_flow')")
    assert conn.execute("SELECT n::int FROM sw_sink WHERE host = 'h0' AND w = '2024-01-01 04:00'").fetchone() == (30,)
    conn.execute("DROP FLOW sw_flow")


# ------------------------------------------------------------------ UPDATE and DELETE on Spark

def twin_tables(conn, name: str, columns: str, fill: str) -> None:
    """``<name>_spark`` and ``<name>_rows``: the same rows, one changed on Spark, one collected."""
    for suffix in ("spark", "rows"):
        conn.execute(f"DROP TABLE IF EXISTS {name}_{suffix}")
        conn.execute(f"CREATE TABLE {name}_{suffix} ({columns})")
        conn.execute(f"INSERT INTO {name}_{suffix} {fill}")


def on_both(conn, gw, name: str, statement: str, spark: bool = True) -> str:
    """Run ``statement`` (``{t}`` stands for the table) on the Spark twin and on the collected
    one; both must report the same. ``spark``: the Spark twin's change is committed by Spark
    (False: the statement needs what only the collected path does). Returns the status."""
    path = location(conn, f"{name}_spark", gw)
    before = len(writers(path))
    conn.execute("SET tidegate.spark_writes = on")
    on_spark = conn.execute(statement.format(t=f"{name}_spark")).statusmessage
    conn.execute("SET tidegate.spark_writes = off")
    collected = conn.execute(statement.format(t=f"{name}_rows")).statusmessage
    assert on_spark == collected
    added = writers(path)[before:]
    if spark and not on_spark.endswith(" 0"):
        assert len(added) == 1 and added[0].startswith(SPARK), added
    elif not spark:
        assert not any(w.startswith(SPARK) for w in added), added
    return on_spark


def test_update_and_delete_on_spark_change_what_the_collected_path_changes(conn, gw) -> None:
    columns = ", ".join(f"{n} {t}" for n, t in TYPES)
    twin_tables(conn, "swu_types", f"id int, {columns}", f"VALUES {', '.join(ROWS)}")
    twin_tables(conn, "swu_many", "id bigint NOT NULL, s text, x double precision, ts timestamp, q numeric(10,2)",
                "SELECT g, 's' || g, g * 0.5, TIMESTAMP '2024-01-01' + g * INTERVAL '1 hour', g / 4.0 "
                "FROM generate_series(1, 3000) g")
    assert on_both(conn, gw, "swu_types", "UPDATE {t} SET i8 = i8 / 2, t = t || '!', ts = ts + INTERVAL '1 day', "
                   "f8 = f8 * 2, by = by || '\\x01'::bytea, ai = ai || 7, d = d + 1, b = NOT b WHERE id >= 2") == "UPDATE 2"
    assert on_both(conn, gw, "swu_types", "UPDATE {t} AS x SET tz = x.tz - INTERVAL '3 hours', iv = NULL, "
                   "u = NULL WHERE x.id <> 2 OR x.i4 IS NULL") == "UPDATE 2"
    # PostgreSQL's assignment rules (a scale, a length, json input) are the collected path's
    assert on_both(conn, gw, "swu_types", "UPDATE {t} SET n = n + 0.0005, vc = upper(t), j = '{{\"z\": 1}}' "
                   "WHERE id = 1",
                   spark=False) == "UPDATE 1"
    assert on_both(conn, gw, "swu_many", "UPDATE {t} SET x = x + id, s = NULL, q = q * 2 WHERE id % 7 = 3",
                   spark=False) == "UPDATE 429"
    assert on_both(conn, gw, "swu_many", "UPDATE {t} SET x = x + id, s = NULL WHERE id % 7 = 4") == "UPDATE 429"
    assert on_both(conn, gw, "swu_many", "UPDATE {t} SET ts = ts - INTERVAL '1 minute' WHERE s IS NULL AND id > 1000") \
        == "UPDATE 572"
    assert on_both(conn, gw, "swu_many", "DELETE FROM {t} WHERE id % 5 = 0 OR q > 700") == "DELETE 920"
    assert on_both(conn, gw, "swu_many", "UPDATE {t} SET x = -1 WHERE id < 0") == "UPDATE 0"
    for name in ("swu_types", "swu_many"):
        spark_path, rows_path = location(conn, f"{name}_spark", gw), location(conn, f"{name}_rows", gw)
        assert not any(w.startswith(SPARK) for w in writers(rows_path))
        expected = repr(conn.execute(f"SELECT * FROM {name}_rows ORDER BY id").fetchall())
        assert repr(conn.execute(f"SELECT * FROM {name}_spark ORDER BY id").fetchall()) == expected
        # other readers of the table: the protocol has no feature they lack (no deletion vectors)
        assert DeltaTable(spark_path).to_pyarrow_table().num_rows == DeltaTable(rows_path).to_pyarrow_table().num_rows
        files = ", ".join(f"'{u}'" for u in DeltaTable(spark_path).file_uris())
        assert duckdb.sql(f"SELECT count(*) FROM read_parquet([{files}])").fetchall() == \
            conn.execute(f"SELECT count(*) FROM {name}_rows").fetchall()
    conn.execute("DELETE FROM swu_many_spark")
    assert conn.execute("SELECT count(*) FROM swu_many_spark").fetchone() == (0,)


def test_a_failed_update_on_spark_changes_nothing(conn, gw) -> None:
    conn.execute("DROP TABLE IF EXISTS swu_fail")
    conn.execute("CREATE TABLE swu_fail (id bigint, v text NOT NULL, n int)")
    conn.execute("INSERT INTO swu_fail SELECT g, 'v' || g, g FROM generate_series(1, 2000) g")
    path = location(conn, "swu_fail", gw)
    commits = len(writers(path))
    conn.execute("SET tidegate.spark_writes = on")
    with pytest.raises(psycopg.errors.NotNullViolation) as err:
        conn.execute("UPDATE swu_fail SET v = CASE WHEN id = 1500 THEN NULL ELSE v || '!' END WHERE id > 10")
    assert err.value.diag.message_primary == \
        'null value in column "v" of relation "swu_fail" violates not-null constraint'
    with pytest.raises(psycopg.errors.DivisionByZero):
        conn.execute("UPDATE swu_fail SET n = 10 / (id - 1900) WHERE id > 100")
    with pytest.raises(psycopg.errors.NumericValueOutOfRange) as err:
        conn.execute("UPDATE swu_fail SET n = n * 2000000000000 WHERE id > 1000")
    assert err.value.diag.message_primary == "integer out of range"
    with pytest.raises(psycopg.errors.NumericValueOutOfRange):
        conn.execute("UPDATE swu_fail SET id = id * 10000000000000000 WHERE id > 1000")
    with pytest.raises(psycopg.errors.DivisionByZero):
        conn.execute("DELETE FROM swu_fail WHERE 1 / (id - 1999) > 0")
    assert len(writers(path)) == commits
    assert conn.execute("SELECT count(*), sum(n), count(*) FILTER (WHERE v LIKE '%!') FROM swu_fail").fetchone() == \
        (2000, 2001000, 0)


def test_updates_spark_cannot_check_keep_the_collected_path(conn, gw) -> None:
    conn.execute("DROP TABLE IF EXISTS swu_child")
    conn.execute("DROP TABLE IF EXISTS swu_pk")
    conn.execute("CREATE TABLE swu_pk (id bigint PRIMARY KEY, v text, u int UNIQUE)")
    conn.execute("CREATE TABLE swu_child (id bigint REFERENCES swu_pk (id), w text)")
    conn.execute("INSERT INTO swu_pk SELECT g, 'v', g FROM generate_series(1, 100) g")
    conn.execute("INSERT INTO swu_child SELECT g, 'w' FROM generate_series(1, 50) g")
    conn.execute("SET tidegate.spark_writes = on")
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("UPDATE swu_pk SET id = 1 WHERE id > 90")
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("UPDATE swu_pk SET u = 5 WHERE id > 90")
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute("DELETE FROM swu_pk WHERE id = 7")
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute("UPDATE swu_child SET id = 1000 WHERE id = 3")
    # a value column of a keyed table, random() per row: still done (by one path or the other)
    assert conn.execute("UPDATE swu_pk SET v = 'r' || random()::text WHERE id > 90").statusmessage == "UPDATE 10"
    assert conn.execute("SELECT count(DISTINCT v) FROM swu_pk WHERE id > 90").fetchone() == (10,)
    assert conn.execute("UPDATE swu_pk SET v = upper(v) WHERE id <= 90").statusmessage == "UPDATE 90"
    assert conn.execute("SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE v = 'V') FROM swu_pk").fetchone() \
        == (100, 100, 90)


def test_spark_updates_lose_nothing_beside_other_writers(conn, gw) -> None:
    """Two sessions UPDATE the same rows on Spark while two others insert: every increment and
    every insert is there (READ COMMITTED: each UPDATE changes the rows committed before it)."""
    conn.execute("DROP TABLE IF EXISTS swu_busy")
    conn.execute("CREATE TABLE swu_busy (id bigint, n int, who text)")
    conn.execute("INSERT INTO swu_busy SELECT g, 0, 'base' FROM generate_series(1, 5000) g")
    errors: list[BaseException] = []

    def client(work) -> None:
        try:
            with psycopg.connect(gw.dsn, autocommit=True) as other:
                other.execute("SET tidegate.spark_writes = on")
                work(other)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def updates(c) -> None:
        for _ in range(3):
            assert c.execute("UPDATE swu_busy SET n = n + 1 WHERE who = 'base'").statusmessage == "UPDATE 5000"

    def inserts(c) -> None:
        for i in range(30):
            c.execute("INSERT INTO swu_busy VALUES (%s, 100, 'small')", (-1 - i,))

    threads = [threading.Thread(target=client, args=(w,)) for w in (updates, updates, inserts, inserts)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert conn.execute("SELECT who, count(*), min(n), max(n) FROM swu_busy GROUP BY who ORDER BY who").fetchall() == [
        ("base", 5000, 6, 6), ("small", 60, 100, 100)]
    assert sum(w.startswith(SPARK) for w in writers(location(conn, "swu_busy", gw))) == 6


def test_flow_sees_spark_updates_and_deletes(conn, gw) -> None:
    conn.execute("DROP FLOW IF EXISTS swu_flow")
    conn.execute("DROP TABLE IF EXISTS swu_sink")
    conn.execute("DROP TABLE IF EXISTS swu_metrics")
    conn.execute("CREATE TABLE swu_metrics (host text, ts timestamp TIME INDEX, v double precision, "
                 "PRIMARY KEY (host))")
    conn.execute("CREATE FLOW swu_flow SINK TO swu_sink EVAL INTERVAL '1 hour' AS SELECT host, "
                 "date_bin(INTERVAL '1 hour', ts, '2000-01-01 00:00:00'::timestamp) AS w, count(*) AS n, "
                 "sum(v) AS total FROM swu_metrics GROUP BY host, w")
    conn.execute("INSERT INTO swu_metrics SELECT 'h' || (g % 3), TIMESTAMP '2024-01-01' + g * INTERVAL '1 minute', "
                 "g FROM generate_series(0, 299) g")
    conn.execute("ADMIN FLUSH_FLOW('swu_flow')")
    conn.execute("SET tidegate.spark_writes = on")
    conn.execute("SET tidegate.interactive = off")  # the DELETE's rows are not looked up by key
    assert conn.execute("UPDATE swu_metrics SET v = v * 10 WHERE host = 'h1'").statusmessage == "UPDATE 100"
    assert conn.execute("DELETE FROM swu_metrics WHERE host = 'h2' AND ts < '2024-01-01 02:00'").statusmessage \
        == "DELETE 40"
    assert [w.startswith(SPARK) for w in writers(location(conn, "swu_metrics", gw))[-2:]] == [True, True]
    conn.execute("ADMIN FLUSH_FLOW('swu_flow')")
    recomputed = ("SELECT host, date_bin(INTERVAL '1 hour', ts, '2000-01-01 00:00:00'::timestamp) AS w, count(*), "
                  "sum(v) FROM swu_metrics GROUP BY 1, 2 ORDER BY 1, 2")
    assert conn.execute("SELECT host, w, n, total FROM swu_sink ORDER BY host, w").fetchall() == \
        conn.execute(recomputed).fetchall()
    conn.execute("DROP FLOW swu_flow")


def test_auto_sends_large_updates_to_spark_and_small_ones_to_the_collected_path(conn, gw) -> None:
    conn.execute("DROP TABLE IF EXISTS swu_auto")
    conn.execute("SET tidegate.spark_writes = on")
    conn.execute("CREATE TABLE swu_auto AS SELECT g::bigint AS id, md5(g::text) AS s, g * 0.5 AS x "
                 "FROM generate_series(1, 1200000) g")
    conn.execute("SET tidegate.spark_writes = auto")
    path = location(conn, "swu_auto", gw)
    assert conn.execute("UPDATE swu_auto SET x = -x WHERE id % 1000 = 1").statusmessage == "UPDATE 1200"
    assert not writers(path)[-1].startswith(SPARK)  # 1,200 rows: collected
    assert conn.execute("UPDATE swu_auto SET x = x + 1 WHERE id > 150000").statusmessage == "UPDATE 1050000"
    assert writers(path)[-1].startswith(SPARK)  # a million rows or more of a large table: Spark
    assert conn.execute("SELECT count(*) FILTER (WHERE x < 0), count(*) FILTER (WHERE x = id * 0.5 + 1), "
                        "count(*) FROM swu_auto").fetchone() == (1200, 1048950, 1200000)
    conn.execute("DROP TABLE swu_auto")


def test_merge_on_spark_changes_what_the_collected_path_changes(conn, gw) -> None:
    twin_tables(conn, "swm", "id bigint, s text, x double precision, ts timestamp",
                "SELECT g, 's' || g, g * 1.5, TIMESTAMP '2024-01-01' + g * INTERVAL '1 minute' "
                "FROM generate_series(1, 5000) g")
    conn.execute("DROP TABLE IF EXISTS swm_src")
    conn.execute("CREATE TABLE swm_src (id bigint, x double precision, tag text)")
    conn.execute("INSERT INTO swm_src SELECT g, g * 10, CASE WHEN g % 3 = 0 THEN 'drop' ELSE 'keep' END "
                 "FROM generate_series(4001, 6500) g")
    assert on_both(conn, gw, "swm", "MERGE INTO {t} AS t USING swm_src AS s ON t.id = s.id "
                   "WHEN MATCHED AND s.tag = 'drop' THEN DELETE "
                   "WHEN MATCHED AND t.x > 7000 THEN UPDATE SET x = s.x + t.x, s = upper(t.s) || s.tag "
                   "WHEN MATCHED THEN UPDATE SET ts = t.ts + INTERVAL '1 day' "
                   "WHEN NOT MATCHED AND s.id % 2 = 0 THEN INSERT (id, x, s) VALUES (s.id, s.x, s.tag) "
                   "WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'odd', -s.x, NULL)") == "MERGE 2500"
    assert on_both(conn, gw, "swm", "MERGE INTO {t} USING (SELECT g AS id FROM generate_series(1, 100) g) AS d "
                   "ON {t}.id = d.id WHEN MATCHED THEN UPDATE SET s = NULL") == "MERGE 100"
    # what Spark cannot do as PostgreSQL does stays collected (DO NOTHING, a DEFAULT)
    assert on_both(conn, gw, "swm", "MERGE INTO {t} AS t USING swm_src AS s ON t.id = s.id "
                   "WHEN MATCHED AND s.id < 4100 THEN DO NOTHING WHEN MATCHED THEN UPDATE SET s = DEFAULT",
                   spark=False) == "MERGE 2101"
    expected = conn.execute("SELECT * FROM swm_rows ORDER BY id").fetchall()
    assert conn.execute("SELECT * FROM swm_spark ORDER BY id").fetchall() == expected
    conn.execute("SET tidegate.spark_writes = on")
    path = location(conn, "swm_spark", gw)
    commits = len(writers(path))
    with pytest.raises(psycopg.errors.CardinalityViolation):
        conn.execute("MERGE INTO swm_spark AS t USING (SELECT 7::bigint AS id UNION ALL SELECT 7) AS d "
                     "ON t.id = d.id WHEN MATCHED THEN UPDATE SET x = 0")
    assert len(writers(path)) == commits
    assert conn.execute("SELECT * FROM swm_spark ORDER BY id").fetchall() == expected


def test_names_with_backticks_stay_names_on_spark(conn, gw) -> None:
    """A client's alias or column name is quoted into the Spark statements, never spliced."""
    conn.execute('DROP TABLE IF EXISTS "swq`t"')
    conn.execute('CREATE TABLE "swq`t" ("c`1" bigint, v text)')
    conn.execute('INSERT INTO "swq`t" SELECT g, \'v\' FROM generate_series(1, 50) g')
    conn.execute("SET tidegate.spark_writes = on")
    conn.execute('INSERT INTO "swq`t" SELECT "c`1" + 100, v FROM "swq`t"')
    assert conn.execute('UPDATE "swq`t" AS "a`b" SET v = "a`b".v || \'!\' WHERE "a`b"."c`1" < 10').statusmessage \
        == "UPDATE 9"
    assert conn.execute('MERGE INTO "swq`t" AS "x` y" USING (SELECT 3::bigint AS "d`id") AS "s`" '
                        'ON "x` y"."c`1" = "s`"."d`id" WHEN MATCHED THEN UPDATE SET v = \'m\'').statusmessage == "MERGE 1"
    assert conn.execute('DELETE FROM "swq`t" AS "q`" WHERE "q`"."c`1" > 40').statusmessage == "DELETE 60"
    assert conn.execute('SELECT count(*), count(*) FILTER (WHERE v = \'v!\'), count(*) FILTER (WHERE v = \'m\') '
                        'FROM "swq`t"').fetchone() == (40, 8, 1)
    # aliases with backticks on a table Delta's commands take
    conn.execute("DROP TABLE IF EXISTS swq_plain")
    conn.execute("CREATE TABLE swq_plain (id bigint, v text)")
    conn.execute("INSERT INTO swq_plain SELECT g, 'v' FROM generate_series(1, 50) g")
    conn.execute("SET tidegate.interactive = off")  # the DELETE's rows are not looked up in the gateway
    assert conn.execute('UPDATE swq_plain AS "a`b" SET v = "a`b".v || \'!\' WHERE "a`b".id < 10').statusmessage \
        == "UPDATE 9"
    assert conn.execute('MERGE INTO swq_plain AS "x` y" USING (SELECT 3::bigint AS "d`id") AS "s`" '
                        'ON "x` y".id = "s`"."d`id" WHEN MATCHED THEN UPDATE SET v = \'m\'').statusmessage == "MERGE 1"
    assert conn.execute('DELETE FROM swq_plain AS "q`" WHERE "q`".id > 40').statusmessage == "DELETE 10"
    assert all(w.startswith(SPARK) for w in writers(location(conn, "swq_plain", gw))[-3:])
    assert conn.execute("SELECT count(*), count(*) FILTER (WHERE v = 'v!'), count(*) FILTER (WHERE v = 'm') "
                        "FROM swq_plain").fetchone() == (40, 8, 1)


def _stats_columns(path: str) -> set[str]:
    """The columns whose min / max statistics the newest data file carries."""
    import pyarrow as pa

    actions = pa.table(DeltaTable(path).get_add_actions(flatten=True))
    newest = max(range(actions.num_rows), key=lambda i: actions.column("modification_time")[i].as_py())
    return {name[4:] for name in actions.column_names
            if name.startswith("min.") and actions.column(name)[newest].as_py() is not None}


def test_file_statistics_are_kept_for_keys_indexes_and_values_not_for_plain_text(conn, gw) -> None:
    """Text statistics cost Spark's writer most and prune only where text is looked up: a table
    keeps them for its key, UNIQUE, FOREIGN KEY and indexed columns, and for every non-text column;
    both writers follow the table's properties, and queries on text still find every row."""
    conn.execute("DROP TABLE IF EXISTS st_t")
    conn.execute('CREATE TABLE st_t (id bigint PRIMARY KEY, name text, "a`b" text, v double precision, '
                 'd date, note varchar(20))')
    path = location(conn, "st_t", gw)
    config = DeltaTable(path).metadata().configuration
    assert config["delta.dataSkippingStatsColumns"] == "`id`,`v`,`d`"
    conn.execute("SET tidegate.spark_writes = off")
    conn.execute("INSERT INTO st_t VALUES (1, 'x', 'y', 1.5, '2024-01-01', 'n1')")
    assert _stats_columns(path) == {"id", "v", "d"}
    conn.execute("SET tidegate.spark_writes = on")
    conn.execute("INSERT INTO st_t SELECT id + 10, name, \"a`b\" || '1', v, d, note FROM st_t")
    assert writers(path)[-1].startswith(SPARK)
    assert _stats_columns(path) == {"id", "v", "d"}
    # an index, a new column and a UNIQUE constraint change which columns have statistics
    conn.execute('CREATE INDEX ON st_t (name)')
    conn.execute("ALTER TABLE st_t ADD COLUMN k integer")
    assert DeltaTable(path).metadata().configuration["delta.dataSkippingStatsColumns"] == "`id`,`name`,`v`,`d`,`k`"
    conn.execute("INSERT INTO st_t SELECT id + 100, name || '2', \"a`b\" || '2', v, d, note, 7 FROM st_t")
    assert writers(path)[-1].startswith(SPARK)
    assert _stats_columns(path) == {"id", "name", "v", "d", "k"}
    conn.execute('ALTER TABLE st_t ADD CONSTRAINT st_u UNIQUE ("a`b")')
    assert DeltaTable(path).metadata().configuration["delta.dataSkippingStatsColumns"] == \
        "`id`,`name`,`a``b`,`v`,`d`,`k`"
    conn.execute("SET tidegate.spark_writes = off")
    conn.execute("INSERT INTO st_t VALUES (500, 'z', 'zz', 2.5, '2024-01-02', 'n5', 8)")
    assert _stats_columns(path) == {"id", "name", "a`b", "v", "d", "k"}
    for setting in ("on", "off"):  # both paths find rows by columns with and without statistics
        conn.execute(f"SET tidegate.interactive = {setting}")
        assert conn.execute("SELECT id FROM st_t WHERE note = 'n1' ORDER BY id").fetchall() == [(1,), (11,), (101,), (111,)]
        assert conn.execute("SELECT id FROM st_t WHERE name = 'x2' ORDER BY id").fetchall() == [(101,), (111,)]
    conn.execute("RESET tidegate.interactive")
    assert sorted(DeltaTable(path).to_pyarrow_table(filters=[("note", "=", "n1")]).column("id").to_pylist()) == [1, 11, 101, 111]
