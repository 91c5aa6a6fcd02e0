"""Temporary tables (CREATE TEMP TABLE, pg_temp) through psycopg against a real gateway, with
PostgreSQL 15 as the oracle wherever it answers.

Each script runs in one session on both servers (BEGIN / COMMIT / ROLLBACK as statements) and
every answer (rows, command tags, SQLSTATEs) must be PostgreSQL's; the session's temporary schema
is named ``pg_temp_N`` on both, so its number is masked. Then what the oracle cannot show the same
way: another session never sees or names a temporary table (tidegate hides it from pg_class too),
its storage goes when the session ends (Terminate, a killed client) and when the gateway restarts
after kill -9.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from tests.targets import Target, target_for
from tests.tidegate_server import TidegateServer, start_tidegate

_TEMP_NS = re.compile(r"pg_temp_\d+")


def _mask(value: object) -> object:
    if isinstance(value, str):
        return _TEMP_NS.sub("pg_temp_N", value)
    if isinstance(value, (list, tuple)):
        return type(value)(_mask(v) for v in value)
    return value


def _run(conn: psycopg.Connection, step: str | tuple[str, tuple], prepare: bool | None = None) -> object:
    sql, params = (step, None) if isinstance(step, str) else step
    try:
        cur = conn.execute(sql, params, prepare=prepare)
        return (sql, _mask(cur.fetchall()) if cur.description else cur.statusmessage)
    except psycopg.Error as e:
        return (sql, "error", e.sqlstate)


def _play(target: Target, steps: list) -> list[object]:
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        return [_run(conn, s) for s in steps]


def _same_as_postgres(request: pytest.FixtureRequest, steps: list) -> list[object]:
    expected = _play(target_for(request, "postgres"), steps)
    got = _play(target_for(request, "tidegate"), steps)
    diffs = [(e, g) for e, g in zip(expected, got) if e != g]
    assert not diffs and len(expected) == len(got), "\n".join(f"postgres {e}\ntidegate {g}" for e, g in diffs)
    return expected


def _p(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:6]


def test_temp_table_shadows_permanent_one(request: pytest.FixtureRequest) -> None:
    t = _p("tt_shadow_")
    out = _same_as_postgres(request, [
        f"CREATE TABLE {t} (a int)", f"INSERT INTO {t} VALUES (1)",
        f"CREATE TEMP TABLE {t} (a int, b text)", f"INSERT INTO {t} VALUES (2, 'temp')",
        f"SELECT * FROM {t}", f"SELECT * FROM public.{t}", f"SELECT * FROM pg_temp.{t}",
        # pg_temp is searched first even when search_path names only public
        "SET search_path = public", f"SELECT * FROM {t}",
        f"UPDATE {t} SET b = 'changed' WHERE a = 2", f"DELETE FROM public.{t}", f"SELECT a, b FROM {t}",
        f"SELECT count(*) FROM public.{t}", f"INSERT INTO public.{t} SELECT a FROM {t}",
        # named explicitly, pg_temp is searched where search_path puts it
        "SET search_path = public, pg_temp", f"SELECT * FROM {t}", "RESET search_path",
        f"CREATE TEMPORARY TABLE {t} (z int)", f"CREATE TEMP TABLE IF NOT EXISTS {t} (z int)",
        f"DROP TABLE {t}", f"SELECT * FROM {t}", f"DROP TABLE {t}", f"SELECT * FROM {t}",
        f"SELECT * FROM pg_temp.{t}",
    ])
    assert out[4][1] == [(2, "temp")] and out[-1][1] == "error"


def test_create_temp_table_as_and_dbt_incremental_sequence(request: pytest.FixtureRequest) -> None:
    """dbt's incremental materialization: the new rows into a temp relation, then merged in."""
    target = _p("tt_target_")
    steps = [
        f"CREATE TABLE {target} (id int, v text)", f"INSERT INTO {target} VALUES (1, 'a'), (2, 'b')",
        "BEGIN",
        f"CREATE TEMPORARY TABLE {target}__dbt_tmp AS SELECT g AS id, 'n' || g AS v FROM generate_series(2, 4) g",
        f"SELECT count(*) FROM {target}__dbt_tmp",
        f"DELETE FROM {target} WHERE id IN (SELECT id FROM {target}__dbt_tmp)",
        f"INSERT INTO {target} (id, v) SELECT id, v FROM {target}__dbt_tmp",
        "COMMIT",
        f"SELECT * FROM {target} ORDER BY id",
        f"SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{target}__dbt_tmp' ORDER BY ordinal_position",
        f"DROP TABLE IF EXISTS {target}__dbt_tmp",
        f"CREATE TEMP TABLE {target}_x AS SELECT 1 AS one, 'x'::text AS two",
        f"SELECT * FROM {target}_x",
        f"CREATE TEMP TABLE {target}_y ON COMMIT DROP AS SELECT 1 AS one",
        f"SELECT * FROM {target}_y",
    ]
    out = _same_as_postgres(request, steps)
    assert out[8][1] == [(1, "a"), (2, "n2"), (3, "n3"), (4, "n4")]


def test_on_commit_actions(request: pytest.FixtureRequest) -> None:
    d, k, x = _p("tt_del_"), _p("tt_keep_"), _p("tt_drop_")
    out = _same_as_postgres(request, [
        f"CREATE TEMP TABLE {d} (a int) ON COMMIT DELETE ROWS",
        f"CREATE TEMP TABLE {k} (a int) ON COMMIT PRESERVE ROWS",
        f"INSERT INTO {d} VALUES (1)", f"SELECT count(*) FROM {d}",  # autocommit: emptied at once
        "BEGIN", f"INSERT INTO {d} VALUES (1), (2)", f"INSERT INTO {k} VALUES (1), (2)",
        f"SELECT count(*) FROM {d}", "COMMIT",
        f"SELECT count(*) FROM {d}", f"SELECT count(*) FROM {k}",
        "BEGIN", f"CREATE TEMP TABLE {x} (a int) ON COMMIT DROP", f"INSERT INTO {x} VALUES (7)",
        f"SELECT * FROM {x}", "COMMIT", f"SELECT * FROM {x}",
        f"CREATE TEMP TABLE {x} (a int) ON COMMIT DROP", f"SELECT * FROM {x}",  # autocommit: dropped at once
        f"CREATE TABLE {x} (a int) ON COMMIT DROP",  # 42P16: only temporary tables
        f"CREATE TEMP TABLE {x} (a int) ON COMMIT DELETE", f"DROP TABLE {d}, {k}",
    ])
    assert out[3][1] == [(0,)] and out[9][1] == [(0,)] and out[10][1] == [(2,)]


def test_rollback_and_blocks(request: pytest.FixtureRequest) -> None:
    t, u = _p("tt_rb_"), _p("tt_rb2_")
    _same_as_postgres(request, [
        "BEGIN", f"CREATE TEMP TABLE {t} (a int)", f"INSERT INTO {t} VALUES (1)", f"SELECT * FROM {t}",
        "ROLLBACK", f"SELECT * FROM {t}",
        f"CREATE TEMP TABLE {u} (a int)", f"INSERT INTO {u} VALUES (1)",
        "BEGIN", f"INSERT INTO {u} VALUES (2)", f"DROP TABLE {u}", "ROLLBACK", f"SELECT * FROM {u} ORDER BY a",
        "BEGIN", f"ALTER TABLE {u} ADD COLUMN b text", f"TRUNCATE {u}", "COMMIT", f"SELECT * FROM {u}",
        f"CREATE TEMP VIEW {u}_v AS SELECT count(*) AS n FROM {u}", f"SELECT * FROM {u}_v",
        f"SELECT table_type FROM information_schema.tables WHERE table_name = '{u}_v'",
        f"DROP VIEW {u}_v", f"DROP TABLE {u}",
    ])


def test_catalog_rows_of_a_temp_table(request: pytest.FixtureRequest) -> None:
    t = _p("tt_cat_")
    out = _same_as_postgres(request, [
        f"CREATE TEMP TABLE {t} (id int PRIMARY KEY, v text)",
        f"SELECT c.relpersistence, c.relkind, n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE c.relname = '{t}'",
        f"SELECT relpersistence FROM pg_class WHERE relname = '{t}_pkey'",
        f"SELECT pg_table_is_visible('{t}'::regclass)",
        f"SELECT '{t}'::regclass::text, 'pg_temp.{t}'::regclass = '{t}'::regclass",
        "SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()",
        "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg_temp%' AND oid = pg_my_temp_schema()",
        f"SELECT table_schema, table_type FROM information_schema.tables WHERE table_name = '{t}'",
        f"SELECT column_name FROM information_schema.columns WHERE table_name = '{t}' ORDER BY ordinal_position",
        "SELECT current_schema()",
        # a view over a temporary table is a temporary view
        f"CREATE VIEW {t}_v AS SELECT id FROM {t}",
        f"SELECT relpersistence FROM pg_class WHERE relname = '{t}_v'",
        f"CREATE VIEW public.{t}_w AS SELECT id FROM {t}",
        f"DROP VIEW {t}_v", f"DROP TABLE {t}",
    ])
    assert out[1][1] == [("t", "r", "pg_temp_N")]


def test_extended_protocol_and_prepared_statements(request: pytest.FixtureRequest) -> None:
    t = _p("tt_ext_")
    results = {}
    for name in ("postgres", "tidegate"):
        with psycopg.connect(target_for(request, name).dsn, autocommit=True) as conn:
            steps = [f"CREATE TEMP TABLE {t} (id int, v text)",
                     (f"INSERT INTO {t} VALUES (%s, %s)", (1, "one")),
                     (f"INSERT INTO {t} VALUES (%s, %s)", (2, "two")),
                     (f"SELECT v FROM {t} WHERE id = %s", (2,)),
                     (f"SELECT v FROM {t} WHERE id = %s", (1,))]
            results[name] = [_run(conn, s, prepare=True) for s in steps]
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(3, "c"), (4, "d")])
            results[name].append(_run(conn, f"SELECT count(*) FROM {t}"))
    assert results["tidegate"] == results["postgres"]
    assert results["tidegate"][-1][1] == [(4,)]


def test_other_sessions_never_see_it(request: pytest.FixtureRequest) -> None:
    t = _p("tt_private_")
    tg = target_for(request, "tidegate")
    pg = target_for(request, "postgres")
    for target in (pg, tg):
        with psycopg.connect(target.dsn, autocommit=True) as a, psycopg.connect(target.dsn, autocommit=True) as b:
            a.execute(f"CREATE TEMP TABLE {t} (a int)")
            a.execute(f"INSERT INTO {t} VALUES (1)")
            ns = a.execute("SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()").fetchone()[0]
            # as in PostgreSQL: not found unqualified, not in information_schema nor visible
            assert _run(b, f"SELECT * FROM {t}")[1:] == ("error", "42P01"), target.name
            assert _run(b, f"SELECT count(*) FROM information_schema.tables WHERE table_name = '{t}'")[1] == [(0,)]
            assert _run(b, f"SELECT count(*) FROM pg_class WHERE relname = '{t}' AND pg_table_is_visible(oid)")[1] == [(0,)]
            assert _run(b, f"SELECT * FROM pg_temp.{t}")[1:] == ("error", "42P01")
            assert _run(b, f"INSERT INTO {t} VALUES (2)")[1:] == ("error", "42P01")
            if target is tg:
                # tidegate goes further than PostgreSQL: no row at all, and the name cannot be used
                assert _run(b, f"SELECT count(*) FROM pg_class WHERE relname = '{t}'")[1] == [(0,)]
                assert _run(b, f"SELECT count(*) FROM pg_namespace WHERE nspname = '{ns}'")[1] == [(0,)]
                assert _run(b, f"SELECT * FROM {ns}.{t}")[1:] == ("error", "42P01")
                assert _run(b, f"CREATE TABLE {ns}.x (a int)")[1:] == ("error", "0A000")
                # b's own temp table of the same name is its own
                b.execute(f"CREATE TEMP TABLE {t} (a int)")
                assert _run(b, f"SELECT count(*) FROM {t}")[1] == [(0,)]
            assert _run(a, f"SELECT * FROM {t}")[1] == [(1,)]


def _storage_of(conn: psycopg.Connection, table: str) -> str:
    return conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()[0]


def _wait_gone(path: Path, timeout: float = 15.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not path.exists():
            return True
        time.sleep(0.1)
    return False


def test_dropped_at_disconnect(request: pytest.FixtureRequest, tidegate: TidegateServer) -> None:
    t = _p("tt_bye_")
    with psycopg.connect(tidegate.dsn, autocommit=True) as a:
        a.execute(f"CREATE TEMP TABLE {t} (a int)")
        a.execute(f"INSERT INTO {t} VALUES (1), (2)")
        a.execute(f"CREATE TEMP TABLE {t}_s (id serial, v text)")
        rel = _storage_of(a, t)
        ns = a.execute("SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()").fetchone()[0]
    path = tidegate.data_dir / rel
    assert rel and _wait_gone(path), f"{path} still there after the session ended"
    assert not path.parent.exists()
    with psycopg.connect(tidegate.dsn, autocommit=True) as b:
        b.execute("SET search_path = public")
        assert b.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (ns,)).fetchone() == (0,)


def test_dropped_when_the_client_is_killed(tidegate: TidegateServer) -> None:
    """A client that dies without Terminate (kill -9): the gateway sees the socket close."""
    t = _p("tt_killed_")
    script = (f"import psycopg, sys, time\n"
              f"c = psycopg.connect({tidegate.dsn!r}, autocommit=True)\n"
              f"c.execute('CREATE TEMP TABLE {t} (a int)')\n"
              f"c.execute('INSERT INTO {t} VALUES (1)')\n"
              f"print(c.execute(\"SELECT pg_relation_filepath('{t}')\").fetchone()[0], flush=True)\n"
              f"time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        rel = proc.stdout.readline().strip()
        path = tidegate.data_dir / rel
        assert rel and path.exists()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert _wait_gone(path), f"{path} still there after the client was killed"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_left_by_a_killed_gateway_removed_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_tidegate(data, file_roots=[])
    try:
        conn = psycopg.connect(server.dsn, autocommit=True)
        conn.execute("CREATE TABLE keep (a int)")
        conn.execute("CREATE TEMP TABLE gone (a int)")
        conn.execute("CREATE TEMP TABLE gone_too (id serial)")
        rel = _storage_of(conn, "gone")
        keep = _storage_of(conn, "keep")
        assert (data / rel).exists()
        server.kill9()
        conn.close()
        server = start_tidegate(data, file_roots=[])
        with psycopg.connect(server.dsn, autocommit=True) as c:
            assert c.execute("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg_temp%'").fetchone() == (0,)
            assert c.execute("SELECT count(*) FROM pg_class WHERE relname IN ('gone', 'gone_too', 'gone_too_id_seq')"
                             ).fetchone() == (0,)
            assert c.execute("SELECT count(*) FROM pg_class WHERE relname = 'keep'").fetchone() == (1,)
        assert not (data / rel).exists() and not (data / rel).parent.exists()
        assert (data / keep).exists()
    finally:
        server.stop()


def test_temporary_privilege(request: pytest.FixtureRequest) -> None:
    role = _p("tt_role_")
    for name in ("postgres", "tidegate"):
        target = target_for(request, name)
        with psycopg.connect(target.dsn, autocommit=True) as su:
            su.execute(f"CREATE ROLE {role} LOGIN")
            su.execute(f"REVOKE TEMPORARY ON DATABASE {target.dbname} FROM PUBLIC")
            try:
                dsn = f"host={target.host} port={target.port} user={role} dbname={target.dbname}"
                with psycopg.connect(dsn, autocommit=True) as c:
                    assert _run(c, "CREATE TEMP TABLE tt_denied (a int)")[1:] == ("error", "42501"), name
                    assert _run(c, "CREATE TEMP VIEW tt_denied_v AS SELECT 1 AS a")[1:] == ("error", "42501"), name
                su.execute(f"GRANT TEMPORARY ON DATABASE {target.dbname} TO {role}")
                with psycopg.connect(dsn, autocommit=True) as c:
                    assert _run(c, "CREATE TEMP TABLE tt_allowed (a int)")[1] == "CREATE TABLE", name
                    assert _run(c, "INSERT INTO tt_allowed VALUES (1)")[1] == "INSERT 0 1", name
                    assert _run(c, "SELECT * FROM tt_allowed")[1] == [(1,)], name
                    # (PostgreSQL drops it when the backend exits, after the client has gone)
                    assert _run(c, "DROP TABLE tt_allowed")[1] == "DROP TABLE", name
            finally:
                su.execute(f"GRANT TEMPORARY ON DATABASE {target.dbname} TO PUBLIC")
                su.execute(f"REVOKE TEMPORARY ON DATABASE {target.dbname} FROM {role}")
                su.execute(f"DROP ROLE {role}")


def test_discard_temp_and_discard_all(request: pytest.FixtureRequest) -> None:
    t = _p("tt_discard_")
    out = _same_as_postgres(request, [
        f"CREATE TEMP TABLE {t} (a int)", f"INSERT INTO {t} VALUES (1)",
        "BEGIN", "DISCARD TEMP", f"SELECT * FROM {t}", "ROLLBACK", f"SELECT * FROM {t}",
        "DISCARD TEMP", f"SELECT * FROM {t}",
        f"CREATE TEMP TABLE {t} (a int)", "DISCARD ALL", f"SELECT * FROM {t}",
        f"CREATE TEMP TABLE {t} (b int)", f"SELECT * FROM {t}",
    ])
    assert out[6][1] == [(1,)] and out[8][1] == "error"


def test_flows_refuse_temporary_tables(tidegate: TidegateServer) -> None:
    """A flow outlives the session that creates it: it may not read or write a temporary table."""
    t = _p("tt_flowsrc_")
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TEMP TABLE {t} (host text, v int)")
        got = _run(conn, f"CREATE FLOW {t}_f SINK TO {t}_sink AS SELECT host, count(*) AS n FROM {t} GROUP BY host")
        assert got[1:] == ("error", "0A000")
        assert _run(conn, f"SELECT count(*) FROM information_schema.flows WHERE flow_name = '{t}_f'")[1] == [(0,)]
