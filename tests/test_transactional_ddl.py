"""DDL inside a transaction block is transactional, with PostgreSQL 15 as the oracle.

Each script runs on both servers: setup in autocommit, then a block that creates, alters,
renames and drops tables, views and schemas and reads them, ended by COMMIT or ROLLBACK, then
reads from a fresh connection. Every answer (rows, command tags, SQLSTATEs) must be PostgreSQL's.
Then what the oracle cannot show: other sessions do not see a block's DDL before COMMIT, ROLLBACK
leaves no storage behind, two blocks creating one name have one winner, and kill -9 during the
COMMIT of a block with DDL leaves all of it or none of it.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from tests.targets import Target, target_for
from tests.tidegate_server import TidegateServer, start_tidegate


def _play(target: Target, setup: list[str], block: list[str], end: str, after: list[str]) -> list[object]:
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for s in setup:
            conn.execute(s)
    out: list[object] = []
    with psycopg.connect(target.dsn) as conn:  # psycopg opens the block at the first statement
        for s in block:
            try:
                cur = conn.execute(s)
                out.append((s, cur.fetchall() if cur.description else cur.statusmessage))
            except psycopg.Error as e:
                out.append((s, "error", e.sqlstate))
                break
        conn.commit() if end == "COMMIT" else conn.rollback()
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for s in after:
            try:
                cur = conn.execute(s)
                out.append((s, cur.fetchall() if cur.description else cur.statusmessage))
            except psycopg.Error as e:
                out.append((s, "error", e.sqlstate))
    return out


def _same_as_postgres(request: pytest.FixtureRequest, setup: list[str], block: list[str], end: str,
                      after: list[str]) -> list[object]:
    expected = _play(target_for(request, "postgres"), setup, block, end, after)
    got = _play(target_for(request, "tidegate"), setup, block, end, after)
    diffs = [(e, g) for e, g in zip(expected, got) if e != g]
    assert not diffs and len(expected) == len(got), "\n".join(f"postgres {e}\ntidegate {g}" for e, g in diffs)
    return expected


def _p(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:6]


@pytest.mark.parametrize("end", ["COMMIT", "ROLLBACK"])
def test_create_insert_view_rename_drop(request: pytest.FixtureRequest, end: str) -> None:
    p = _p("tdd_")
    setup = [f"CREATE TABLE {p} (id int PRIMARY KEY, v text)", f"INSERT INTO {p} VALUES (1, 'a'), (2, 'b')"]
    block = [f"CREATE TABLE {p}_new (id int, v text)",
             f"INSERT INTO {p}_new VALUES (10, 'x'), (11, 'y')",
             f"CREATE VIEW {p}_v AS SELECT id FROM {p}_new WHERE id > 10",
             f"SELECT * FROM {p}_v ORDER BY id",
             f"ALTER TABLE {p} RENAME TO {p}_old",
             f"SELECT id, v FROM {p}_old ORDER BY id",
             f"SELECT count(*) FROM {p}_new n JOIN {p}_old o ON o.id + 9 = n.id",
             f"DROP TABLE {p}_old",
             f"CREATE TABLE {p}_new (id int)",  # 42P07: the block's own table is there
             ]
    after = [f"SELECT id, v FROM {p} ORDER BY id", f"SELECT id, v FROM {p}_new ORDER BY id",
             f"SELECT * FROM {p}_v", f"SELECT * FROM {p}_old"]
    out = _same_as_postgres(request, setup, block, end, after)
    assert out[len(block) - 1][1:] == ("error", "42P07")


@pytest.mark.parametrize("end", ["COMMIT", "ROLLBACK"])
def test_create_load_swap_like_dbt(request: pytest.FixtureRequest, end: str) -> None:
    """dbt's table and view materializations: build, rename the old one away, rename the new one in."""
    p = _p("tds_")
    setup = [f"CREATE TABLE {p} (id int, v text)", f"INSERT INTO {p} VALUES (9, 'old')",
             f"CREATE VIEW {p}_vm AS SELECT 1 AS one"]
    block = [f"CREATE TABLE {p}__tmp AS SELECT g AS id, 'n' || g AS v FROM generate_series(1, 5) g",
             f"ALTER TABLE {p} RENAME TO {p}__backup",
             f"ALTER TABLE {p}__tmp RENAME TO {p}",
             f"SELECT count(*), sum(id) FROM {p}",
             f"CREATE VIEW {p}_vm__tmp AS SELECT 2 AS two",
             f"ALTER TABLE {p}_vm RENAME TO {p}_vm__backup",
             f"ALTER VIEW {p}_vm__tmp RENAME TO {p}_vm",
             f"SELECT * FROM {p}_vm",
             f"DROP TABLE {p}__backup",
             f"DROP VIEW {p}_vm__backup"]
    after = [f"SELECT id, v FROM {p} ORDER BY id", f"SELECT * FROM {p}_vm", f"SELECT * FROM {p}__backup",
             f"SELECT * FROM {p}__tmp"]
    _same_as_postgres(request, setup, block, end, after)


@pytest.mark.parametrize("end", ["COMMIT", "ROLLBACK"])
def test_alter_columns_in_a_block(request: pytest.FixtureRequest, end: str) -> None:
    p = _p("tda_")
    setup = [f"CREATE TABLE {p} (id int PRIMARY KEY, v text)", f"INSERT INTO {p} VALUES (1, 'a'), (2, 'b')",
             f"CREATE TABLE {p}_b (id int PRIMARY KEY, v text)", f"INSERT INTO {p}_b VALUES (1, 'a')",
             f"CREATE TABLE {p}_c (id int PRIMARY KEY, v text, w int)", f"INSERT INTO {p}_c VALUES (1, 'a', 5)"]
    block = [f"ALTER TABLE {p} ADD COLUMN n int",
             f"SELECT * FROM {p} ORDER BY id",
             f"INSERT INTO {p} VALUES (3, 'c', 30)",
             f"UPDATE {p} SET n = 0 WHERE n IS NULL",
             f"SELECT * FROM {p} ORDER BY id",
             f"ALTER TABLE {p}_b ADD COLUMN m int DEFAULT 7",
             f"SELECT * FROM {p}_b ORDER BY id",
             f"ALTER TABLE {p}_c RENAME COLUMN v TO vv",
             f"SELECT id, vv, w FROM {p}_c",
             f"ALTER TABLE {p}_b ALTER COLUMN v SET DEFAULT 'dflt'",
             f"COMMENT ON TABLE {p}_b IS 'changed'",
             f"SELECT obj_description('{p}_b'::regclass, 'pg_class')"]
    after = [f"SELECT * FROM {p} ORDER BY id", f"SELECT * FROM {p}_b ORDER BY id", f"SELECT * FROM {p}_c",
             f"INSERT INTO {p}_b (id) VALUES (5)", f"SELECT id, v FROM {p}_b ORDER BY id",
             f"SELECT obj_description('{p}_b'::regclass, 'pg_class')"]
    _same_as_postgres(request, setup, block, end, after)


@pytest.mark.parametrize("end", ["COMMIT", "ROLLBACK"])
def test_schema_in_a_block(request: pytest.FixtureRequest, end: str) -> None:
    s = _p("tdsch_")
    setup = [f"DROP SCHEMA IF EXISTS {s} CASCADE"]
    block = [f"CREATE SCHEMA {s}",
             f"CREATE TABLE {s}.t (id int PRIMARY KEY)",
             f"INSERT INTO {s}.t VALUES (1), (2)",
             f"SELECT count(*) FROM {s}.t",
             f"CREATE SCHEMA {s}"]  # 42P06 in the block itself
    after = [f"SELECT id FROM {s}.t ORDER BY id", f"CREATE SCHEMA IF NOT EXISTS {s}"]
    _same_as_postgres(request, setup, block, end, after)


@pytest.mark.parametrize("end", ["COMMIT", "ROLLBACK"])
def test_drop_schema_cascade_in_a_block(request: pytest.FixtureRequest, end: str) -> None:
    s = _p("tdds_")
    setup = [f"CREATE SCHEMA {s}", f"CREATE TABLE {s}.t (id int)", f"INSERT INTO {s}.t VALUES (1)"]
    block = [f"DROP SCHEMA {s} CASCADE", f"SELECT * FROM {s}.t"]
    after = [f"SELECT id FROM {s}.t"]
    _same_as_postgres(request, setup, block, end, after)


# -- what the oracle cannot show ------------------------------------------------------------------


def _table_dir(conn: psycopg.Connection, server: TidegateServer, table: str) -> Path:
    rel = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()[0]
    return Path(server.data_dir) / rel


def test_other_sessions_see_ddl_only_after_commit(tidegate: TidegateServer) -> None:
    p = _p("tdvis_")
    with psycopg.connect(tidegate.dsn, autocommit=True) as other, psycopg.connect(tidegate.dsn) as tx:
        other.execute(f"CREATE TABLE {p}_old (id int)")
        other.execute(f"INSERT INTO {p}_old VALUES (1)")
        tx.execute(f"CREATE TABLE {p} (id int)")
        tx.execute(f"INSERT INTO {p} VALUES (7)")
        tx.execute(f"DROP TABLE {p}_old")
        with pytest.raises(psycopg.errors.UndefinedTable):
            other.execute(f"SELECT * FROM {p}")
        assert other.execute(f"SELECT id FROM {p}_old").fetchall() == [(1,)]
        tx.commit()
        assert other.execute(f"SELECT id FROM {p}").fetchall() == [(7,)]
        with pytest.raises(psycopg.errors.UndefinedTable):
            other.execute(f"SELECT * FROM {p}_old")


def test_rollback_leaves_no_storage(tidegate: TidegateServer) -> None:
    p = _p("tdrb_")
    with psycopg.connect(tidegate.dsn) as tx:
        tx.execute(f"CREATE TABLE {p} (id int)")
        tx.execute(f"INSERT INTO {p} VALUES (1)")
        where = _table_dir(tx, tidegate, p)
        assert where.is_dir()
        tx.rollback()
    assert not where.exists()


def test_drop_keeps_storage_until_commit(tidegate: TidegateServer) -> None:
    p = _p("tddk_")
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {p} (id int)")
        conn.execute(f"INSERT INTO {p} VALUES (1)")
        where = _table_dir(conn, tidegate, p)
    with psycopg.connect(tidegate.dsn) as tx:
        tx.execute(f"DROP TABLE {p}")
        tx.rollback()
        assert where.is_dir()
        assert tx.execute(f"SELECT id FROM {p}").fetchall() == [(1,)]
        tx.execute(f"DROP TABLE {p}")
        assert where.is_dir()
        tx.commit()
    assert not where.exists()


def test_two_blocks_creating_one_name_have_one_winner(tidegate: TidegateServer) -> None:
    p = _p("tdw_")
    with psycopg.connect(tidegate.dsn) as a, psycopg.connect(tidegate.dsn) as b:
        a.execute(f"CREATE TABLE {p} (id int)")
        a.execute(f"INSERT INTO {p} VALUES (1)")
        b.execute(f"CREATE TABLE {p} (id int)")
        b.execute(f"INSERT INTO {p} VALUES (2)")
        a.commit()
        with pytest.raises(psycopg.errors.DuplicateTable):
            b.commit()
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        assert conn.execute(f"SELECT id FROM {p}").fetchall() == [(1,)]


def test_flow_ddl_inside_a_block_is_refused(tidegate: TidegateServer) -> None:
    p = _p("tdf_")
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {p} (host text, ts timestamp NOT NULL, v double precision, TIME INDEX (ts))")
    with psycopg.connect(tidegate.dsn) as tx:
        with pytest.raises(psycopg.errors.ActiveSqlTransaction):
            tx.execute(f"CREATE FLOW {p}_f SINK TO {p}_s AS SELECT host, count(*) AS n FROM {p} GROUP BY host")
        tx.rollback()


@pytest.mark.parametrize("delays", [
    pytest.param((2.7,), id="inside-commit"),
    pytest.param((0.2, 2.7, 12.0), id="every-moment", marks=pytest.mark.long),
])
def test_kill_during_ddl_commit_leaves_all_or_nothing(tmp_path: Path, delays: tuple[float, ...]) -> None:
    """kill -9 at moments of a create-load-swap block and its COMMIT, in rounds: after each
    restart the block is all there (new rows swapped in, the other table written, a new table
    created) or not there at all, and no table storage is left that no table owns. CI kills
    inside the journaled COMMIT; the long run also before it and after it."""
    data = tmp_path / "data"
    env = {"TIDEGATE_TXN_TEST_PAUSE": "0.7"}  # pauses between the steps of a journaled COMMIT
    outcomes = []
    server = start_tidegate(data, env=env, file_roots=[])
    try:
        server.wait_for_spark()
        for rnd, delay in enumerate(delays):  # before COMMIT, inside its journaled steps, after
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                conn.execute(f"CREATE TABLE t{rnd} (id int)")
                conn.execute(f"INSERT INTO t{rnd} VALUES (-1)")
                conn.execute(f"CREATE TABLE u{rnd} (id int)")
                conn.execute("SELECT count(*) FROM generate_series(1, 3)").fetchone()  # Spark warm
            script = (f"BEGIN; CREATE TABLE t{rnd}_new (id int); "
                      f"INSERT INTO t{rnd}_new SELECT g FROM generate_series(1, 10) g; "
                      f"INSERT INTO u{rnd} VALUES (1); "
                      f"DROP TABLE t{rnd}; ALTER TABLE t{rnd}_new RENAME TO t{rnd}; "
                      f"CREATE TABLE extra{rnd} (id int); COMMIT;")
            psql = subprocess.Popen(["psql", server.url, "-v", "ON_ERROR_STOP=1", "-c", script],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            server.kill9()
            psql.wait(timeout=30)
            server = start_tidegate(data, env=env, file_roots=[])
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                tables = conn.execute("SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n"
                                      " ON n.oid = c.relnamespace WHERE c.relkind = 'r'").fetchall()
                names = {rel for nsp, rel in tables if nsp == "public"}
                if f"t{rnd}_new" in names or f"extra{rnd}" not in names:
                    assert f"t{rnd}_new" not in names and f"extra{rnd}" not in names, f"round {rnd}: DDL in part"
                    assert _ids(conn, data, f"t{rnd}") == [-1] and _ids(conn, data, f"u{rnd}") == []
                    outcomes.append("none")
                else:
                    assert _ids(conn, data, f"t{rnd}") == list(range(1, 11)), f"round {rnd}: swap in part"
                    assert _ids(conn, data, f"u{rnd}") == [1]
                    outcomes.append("all")
                live = {conn.execute("SELECT pg_relation_filepath(%s)", (f'"{nsp}"."{rel}"',)).fetchone()[0]
                        for nsp, rel in tables}  # the system's own tables (tidegate_private.events) too
            on_disk = {str(p.relative_to(data)) for p in (data / "warehouse").glob("*/*") if p.is_dir()}
            assert on_disk <= live, f"round {rnd}: storage no table owns: {sorted(on_disk - live)}"
    finally:
        server.stop()
    if len(delays) > 1:
        assert outcomes[0] == "none" and outcomes[-1] == "all", outcomes
    assert not list((data / "txn").glob("*.json"))


def _ids(conn: psycopg.Connection, data: Path, table: str) -> list[int]:
    """A table's ids from its Delta files (right after a restart, without waiting for Spark)."""
    from deltalake import DeltaTable

    rel = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()[0]
    return sorted(DeltaTable(str(data / rel)).to_pyarrow_table().column("id").to_pylist())
