"""VACUUM (engine/vacuum.py): a table's upkeep on demand, through a real client.

What PostgreSQL 15 answers (tags, errors, the transaction-block rule) is compared with it; what
VACUUM does to a Delta table is read from the table's log and files: small files compacted by
delta-rs, or by Delta Lake's own OPTIMIZE on Spark for a large table, the rows unchanged and
readable by delta-rs and DuckDB, files no version needs removed.
"""

from __future__ import annotations

import duckdb
import psycopg
import pytest
from deltalake import DeltaTable

from tests.targets import target_for

SPARK = "Apache-Spark"


@pytest.fixture(scope="module")
def gw(tidegate):
    return tidegate


def connect(request: pytest.FixtureRequest, name: str) -> psycopg.Connection:
    return psycopg.connect(target_for(request, name).dsn, autocommit=True)


def location(conn: psycopg.Connection, table: str, gw) -> str:
    (path,) = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()
    return str(gw.data_dir / path)


def outcome(conn: psycopg.Connection, sql: str) -> tuple[str, str | None, str | None]:
    try:
        cur = conn.execute(sql)
        return ("ok", cur.statusmessage, None)
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary)


def test_statements_answer_as_postgres(request: pytest.FixtureRequest) -> None:
    """Tags, syntax, options PostgreSQL's heap needs (0A000 here), missing tables, blocks."""
    pg, tg = connect(request, "postgres"), connect(request, "tidegate")
    try:
        for c in (pg, tg):
            c.execute("DROP TABLE IF EXISTS vac_a")
            c.execute("DROP VIEW IF EXISTS vac_v")
            c.execute("CREATE TABLE vac_a (id int, v text)")
            c.execute("INSERT INTO vac_a VALUES (1, 'a')")
            c.execute("CREATE VIEW vac_v AS SELECT * FROM vac_a")
        same = ["VACUUM vac_a", "vacuum (verbose) vac_a", "VACUUM FULL vac_a", "VACUUM (FULL true, VERBOSE false) public.vac_a",
                "VACUUM (SKIP_LOCKED) vac_a, vac_a", "VACUUM (FREEZE false) vac_a",
                "VACUUM vac_nosuch", "VACUUM nosuch.vac_a", "VACUUM (BOGUS) vac_a", "VACUUM (FULL maybe) vac_a",
                "VACUUM vac_a,", "VACUUM vac_a vac_a", "VACUUM vac_v", "VACUUM other_db.public.vac_a",
                "VACUUM a.b.c.vac_a"]
        for sql in same:
            assert outcome(tg, sql) == outcome(pg, sql), sql
        # the database's own name may qualify a table (tidegate's database is "tidegate")
        (pg_db,) = pg.execute("SELECT current_database()").fetchone()
        assert outcome(tg, "VACUUM tidegate.public.vac_a") == outcome(pg, f"VACUUM {pg_db}.public.vac_a") \
            == ("ok", "VACUUM", None)
        for sql in ("VACUUM FREEZE vac_a", "VACUUM (ANALYZE) vac_a", "VACUUM (INDEX_CLEANUP on) vac_a",
                    "VACUUM (PARALLEL 2) vac_a"):
            kind, state, message = outcome(tg, sql)
            assert (kind, state) == ("error", "0A000") and "does not apply" in message, (sql, message)
        assert outcome(pg, "VACUUM FREEZE vac_a")[0] == "ok"
        for c in (pg, tg):
            with c.transaction():
                with pytest.raises(psycopg.errors.ActiveSqlTransaction) as info:
                    c.execute("VACUUM vac_a")
                assert info.value.diag.message_primary == "VACUUM cannot run inside a transaction block"
                raise psycopg.Rollback()
        # the view: PostgreSQL's WARNING, and the statement succeeds
        got = []
        tg.add_notice_handler(lambda d: got.append((d.severity, d.sqlstate, d.message_primary)))
        assert tg.execute("VACUUM vac_v").statusmessage == "VACUUM"
        assert got == [("WARNING", "01000", 'skipping "vac_v" --- cannot vacuum non-tables or special system tables')]
    finally:
        pg.close()
        tg.close()


def data_files(path: str) -> list[int]:
    return sorted(DeltaTable(path).get_add_actions(flatten=True).column("num_records").to_pylist())


def test_vacuum_compacts_small_files_and_keeps_the_rows(request: pytest.FixtureRequest, gw) -> None:
    with connect(request, "tidegate") as c:
        c.execute("DROP TABLE IF EXISTS vac_small")
        c.execute("CREATE TABLE vac_small (id bigint, v text)")
        for k in range(12):
            c.execute("INSERT INTO vac_small VALUES (%s, %s)", (k, f"row {k}"))
        path = location(c, "vac_small", gw)
        assert data_files(path) == [1] * 12
        before = c.execute("SELECT * FROM vac_small ORDER BY id").fetchall()
        notices = []
        c.add_notice_handler(lambda d: notices.append((d.severity, d.message_primary)))
        assert c.execute("VACUUM (VERBOSE) vac_small").statusmessage == "VACUUM"
        assert data_files(path) == [12]
        assert notices[0] == ("INFO", 'vacuuming "tidegate.public.vac_small"')
        assert notices[1][0] == "INFO" and "12 data files compacted" in notices[1][1], notices
        assert c.execute("SELECT * FROM vac_small ORDER BY id").fetchall() == before
        history = DeltaTable(path).history(1)[0]
        assert history["operation"] == "OPTIMIZE"
        # nothing to compact: nothing committed
        version = DeltaTable(path).version()
        assert c.execute("VACUUM vac_small").statusmessage == "VACUUM"
        assert DeltaTable(path).version() == version


def test_large_tables_are_vacuumed_by_delta_lake_on_spark(request: pytest.FixtureRequest, gw) -> None:
    """``tidegate.spark_writes = on`` (as a table over 8 MB does under ``auto``): Delta Lake's
    OPTIMIZE commits the compaction from Spark; the table reads the same, through tidegate,
    delta-rs and DuckDB, and its later writes work."""
    with connect(request, "tidegate") as c:
        c.execute("DROP TABLE IF EXISTS vac_big")
        c.execute("CREATE TABLE vac_big (id bigint PRIMARY KEY, v text, at timestamptz)")
        for k in range(6):
            c.execute("INSERT INTO vac_big SELECT g, 'v' || g, TIMESTAMPTZ '2024-01-01 00:00+00' + g * INTERVAL '1 s' "
                      "FROM generate_series(%s, %s) g", (k * 100, k * 100 + 99))
        path = location(c, "vac_big", gw)
        assert data_files(path) == [100] * 6
        before = c.execute("SELECT * FROM vac_big ORDER BY id").fetchall()
        c.execute("SET tidegate.spark_writes = on")
        notices = []
        c.add_notice_handler(lambda d: notices.append(d.message_primary))
        assert c.execute("VACUUM VERBOSE vac_big").statusmessage == "VACUUM"
        assert any("6 data files compacted into 1" in n and "Spark" in n for n in notices), notices
        assert data_files(path) == [600]
        entries = sorted(DeltaTable(path).history(), key=lambda e: e["version"])
        optimize = [e for e in entries if e["operation"] == "OPTIMIZE"]
        assert len(optimize) == 1 and str(optimize[0].get("engineInfo", "")).startswith(SPARK)
        assert c.execute("SELECT * FROM vac_big ORDER BY id").fetchall() == before
        assert DeltaTable(path).to_pyarrow_table().num_rows == 600
        files = DeltaTable(path).file_uris()
        assert duckdb.sql(f"SELECT count(*), sum(id) FROM read_parquet({files!r})").fetchall() == [(600, sum(range(600)))]
        c.execute("SET tidegate.spark_writes = auto")
        assert c.execute("UPDATE vac_big SET v = 'changed' WHERE id = 5").statusmessage == "UPDATE 1"
        with pytest.raises(psycopg.errors.UniqueViolation):
            c.execute("INSERT INTO vac_big VALUES (7, 'dup', now())")
        assert c.execute("SELECT v FROM vac_big WHERE id = 5").fetchall() == [("changed",)]


def test_vacuum_without_tables_does_every_table_and_removes_unneeded_files(spark_free_engine) -> None:
    """No table named: every table the user may vacuum; with a retention of 0 hours, the files
    compaction replaced are deleted from disk and the table reads the same."""
    import os

    engine, s = spark_free_engine
    engine.settings.vacuum_retention_hours = 0
    for name in ("vac_e1", "vac_e2"):
        s.execute(f"CREATE TABLE {name} (id bigint)")
        for k in range(3):
            s.execute(f"INSERT INTO {name} VALUES ({k})")
    paths = {name: engine.catalog.get_table("public", name).location for name in ("vac_e1", "vac_e2")}
    on_disk = {name: [f for f in os.listdir(p) if f.endswith(".parquet")] for name, p in paths.items()}
    assert all(len(files) == 3 for files in on_disk.values())
    assert s.execute("VACUUM").tag == "VACUUM"
    for name, p in paths.items():
        files = [f for f in os.listdir(p) if f.endswith(".parquet")]
        assert len(files) == 1 and files[0] not in on_disk[name], files
        assert sorted(DeltaTable(p).to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2]
