"""Roles and privileges through real clients, with PostgreSQL 15 as the oracle.

One scenario of (role, statement) steps runs on both servers: superuser set-up, ordinary roles
reading and writing with and without grants, group roles, schema USAGE/CREATE, views read with
their owner's privileges, ownership changes and DROP ROLE's dependency rule. Every step must end
the same way on both (the same SQLSTATE, or the same rows). Then what PostgreSQL's oracle cannot
show: password roles over SCRAM with configured users, superuser-only connector tables, flows.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from tests.targets import Target, target_for

ADMIN = "admin"


def _scenario(p: str) -> list[tuple[str, str]]:
    alice, bob, readers = f"{p}_alice", f"{p}_bob", f"{p}_readers"
    t, s, v = f"{p}_t", f"{p}_s", f"{p}_v"
    return [
        (ADMIN, f"CREATE ROLE {alice} LOGIN"),
        (ADMIN, f"CREATE ROLE {bob} LOGIN"),
        (ADMIN, f"CREATE ROLE {readers}"),
        (ADMIN, f"CREATE TABLE {t} (id int PRIMARY KEY, v text)"),
        (ADMIN, f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')"),
        # nothing granted: every access is refused
        (alice, f"SELECT * FROM {t}"),
        (alice, f"INSERT INTO {t} VALUES (9, 'z')"),
        (alice, f"UPDATE {t} SET v = 'x' WHERE id = 1"),
        (alice, f"DELETE FROM {t}"),
        (alice, f"TRUNCATE {t}"),
        (alice, f"DROP TABLE {t}"),
        (alice, f"ALTER TABLE {t} ADD COLUMN c int"),
        (alice, f"COMMENT ON TABLE {t} IS 'mine'"),
        (alice, f"CREATE TABLE {p}_a (x int)"),  # PostgreSQL 15: no CREATE on public for PUBLIC
        (alice, f"CREATE SCHEMA {p}_mine"),
        (alice, f"GRANT SELECT ON {t} TO {alice}"),
        (alice, f"CREATE ROLE {p}_eve"),
        # table privileges one by one
        (ADMIN, f"GRANT SELECT ON {t} TO {alice}"),
        (alice, f"SELECT id, v FROM {t} ORDER BY id"),
        # the privilege inquiry functions answer from the same grants
        (ADMIN, f"SELECT has_table_privilege('{alice}', '{t}', 'SELECT'), has_table_privilege('{alice}', '{t}', "
                f"'INSERT'), has_schema_privilege('{alice}', 'public', 'CREATE'), "
                f"has_schema_privilege('{alice}', 'public', 'USAGE')"),
        (alice, f"SELECT has_table_privilege('{t}', 'SELECT'), has_table_privilege('{t}', 'INSERT, UPDATE'), "
                f"has_table_privilege('{t}', 'SELECT WITH GRANT OPTION')"),
        (alice, f"SELECT has_table_privilege('{t}', 'FLY')"),
        (alice, f"SELECT has_table_privilege('{p}_none', 'SELECT')"),
        (alice, f"INSERT INTO {t} VALUES (3, 'c')"),
        (ADMIN, f"GRANT INSERT, UPDATE ON TABLE {t} TO {alice}"),
        (alice, f"INSERT INTO {t} VALUES (3, 'c')"),
        (alice, f"UPDATE {t} SET v = 'cc' WHERE id = 3"),
        (alice, f"DELETE FROM {t} WHERE id = 3"),
        (ADMIN, f"REVOKE SELECT ON {t} FROM {alice}"),
        (alice, f"UPDATE {t} SET v = 'q' WHERE id = 3"),  # reading a column needs SELECT
        (alice, f"SELECT * FROM {t}"),
        (ADMIN, f"SELECT id, v FROM {t} ORDER BY id"),
        # group roles
        (ADMIN, f"GRANT {readers} TO {bob}"),
        (bob, f"SELECT * FROM {t}"),
        (ADMIN, f"GRANT SELECT ON {t} TO {readers}"),
        (bob, f"SELECT id FROM {t} ORDER BY id"),
        (bob, f"SELECT pg_has_role('{readers}', 'MEMBER'), pg_has_role('{bob}', '{readers}', 'USAGE'), "
              f"has_table_privilege('{t}', 'SELECT'), has_database_privilege('{bob}', current_database(), 'CREATE')"),
        (ADMIN, f"REVOKE {readers} FROM {bob}"),
        (bob, f"SELECT id FROM {t} ORDER BY id"),
        (ADMIN, f"GRANT SELECT ON {t} TO PUBLIC"),
        (bob, f"SELECT id FROM {t} ORDER BY id"),
        (ADMIN, f"REVOKE SELECT ON {t} FROM PUBLIC"),
        (bob, f"SELECT id FROM {t} ORDER BY id"),
        # schemas: USAGE to reach objects, CREATE to make them; owners grant on their own
        (ADMIN, f"CREATE SCHEMA {s}"),
        (ADMIN, f"CREATE TABLE {s}.t2 (x int)"),
        (ADMIN, f"INSERT INTO {s}.t2 VALUES (7)"),
        (ADMIN, f"GRANT SELECT ON {s}.t2 TO {bob}"),
        (bob, f"SELECT x FROM {s}.t2"),
        (ADMIN, f"GRANT USAGE ON SCHEMA {s} TO {bob}"),
        (bob, f"SELECT x FROM {s}.t2"),
        (alice, f"CREATE TABLE {s}.a (x int)"),
        (ADMIN, f"GRANT CREATE, USAGE ON SCHEMA {s} TO {alice}"),
        (alice, f"CREATE TABLE {s}.a (x int)"),
        (alice, f"INSERT INTO {s}.a VALUES (1)"),
        (alice, f"SELECT x FROM {s}.a"),
        (bob, f"SELECT x FROM {s}.a"),
        (bob, f"GRANT SELECT ON {s}.a TO {bob}"),
        (alice, f"GRANT SELECT ON {s}.a TO {bob}"),
        (bob, f"SELECT x FROM {s}.a"),
        (bob, f"DROP TABLE {s}.a"),
        (alice, f"ALTER TABLE {s}.a OWNER TO {bob}"),
        # views: the view's own reads use its owner's privileges
        (alice, f"CREATE VIEW {s}.av AS SELECT id FROM public.{t}"),
        (ADMIN, f"CREATE VIEW {v} AS SELECT id FROM {t}"),
        (alice, f"SELECT id FROM {v}"),
        (ADMIN, f"GRANT SELECT ON {v} TO {alice}"),
        (alice, f"SELECT id FROM {v} ORDER BY id"),
        (alice, f"SELECT id FROM {t}"),
        # ownership and dropping roles
        (ADMIN, f"ALTER TABLE {s}.a OWNER TO {bob}"),
        (bob, f"INSERT INTO {s}.a VALUES (2)"),
        (alice, f"SELECT x FROM {s}.a"),
        (ADMIN, f"DROP ROLE {alice}"),
        (ADMIN, f"DROP ROLE {bob}"),
        (bob, f"DROP TABLE {s}.a"),
        (ADMIN, f"REVOKE SELECT ON {s}.t2 FROM {bob}"),
        (ADMIN, f"REVOKE USAGE ON SCHEMA {s} FROM {bob}"),
        (ADMIN, f"DROP ROLE {bob}"),
        (ADMIN, f"DROP ROLE IF EXISTS {bob}"),
        (ADMIN, f"DROP ROLE {readers}"),
    ]


def _as(server, role: str) -> psycopg.Connection:
    """An autocommit connection to the shared (trust-mode) gateway as ``role``."""
    return psycopg.connect(server.dsn.replace("user=tidegate", f"user={role}"), autocommit=True)


def _run(conn: psycopg.Connection, sql: str) -> tuple[str, object]:
    try:
        cur = conn.execute(sql)
    except psycopg.Error as e:
        return "error", e.sqlstate
    if cur.description is None:
        return "ok", None
    return "rows", cur.fetchall()


def _play(target: Target, steps: list[tuple[str, str]]) -> list[tuple[str, object]]:
    conns: dict[str, psycopg.Connection] = {}

    def conn(role: str) -> psycopg.Connection:
        if role not in conns:
            user = target.user if role == ADMIN else role
            conns[role] = psycopg.connect(f"host={target.host} port={target.port} user={user} dbname={target.dbname}",
                                          autocommit=True)
        return conns[role]

    try:
        return [_run(conn(role), sql) for role, sql in steps]
    finally:
        for c in conns.values():
            c.close()


def _cleanup_postgres(target: Target, p: str) -> None:
    with psycopg.connect(target.dsn, autocommit=True) as c:
        for role in ("alice", "bob", "readers"):
            if c.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (f"{p}_{role}",)).fetchone():
                c.execute(f"DROP OWNED BY {p}_{role}")
                c.execute(f"DROP ROLE {p}_{role}")
        c.execute(f"DROP SCHEMA IF EXISTS {p}_s CASCADE")
        c.execute(f"DROP VIEW IF EXISTS {p}_v")
        c.execute(f"DROP TABLE IF EXISTS {p}_t")


def test_privileges_match_postgres(request: pytest.FixtureRequest) -> None:
    p = "r" + uuid.uuid4().hex[:6]
    steps = _scenario(p)
    pg = target_for(request, "postgres")
    try:
        expected = _play(pg, steps)
    finally:
        _cleanup_postgres(pg, p)
    got = _play(target_for(request, "tidegate"), steps)
    mismatches = [(role, sql, e, g) for (role, sql), e, g in zip(steps, expected, got) if e != g]
    assert not mismatches, "\n".join(f"{r}: {s}\n  postgres {e}\n  tidegate {g}" for r, s, e, g in mismatches)
    # the scenario exercised refusals and successes alike
    assert ("error", "42501") in expected and ("rows", [(1,), (2,), (3,)]) in expected


def test_catalog_shows_owners_and_acls(tidegate) -> None:
    p = "c" + uuid.uuid4().hex[:6]
    with psycopg.connect(tidegate.dsn, autocommit=True) as su:
        su.execute(f"CREATE ROLE {p}_ann LOGIN")
        su.execute(f"CREATE TABLE {p}_t (x int)")
        su.execute(f"GRANT SELECT, INSERT ON {p}_t TO {p}_ann")
        su.execute(f"GRANT SELECT ON {p}_t TO PUBLIC")
        su.execute(f"ALTER TABLE {p}_t OWNER TO {p}_ann")
        row = su.execute("SELECT pg_get_userbyid(relowner), relacl FROM pg_class WHERE relname = %s",
                         (f"{p}_t",)).fetchone()
        assert row[0] == f"{p}_ann"
        assert f"{p}_ann=arwdDxt/{p}_ann" in row[1] and "=r/tidegate" in row[1]
        roles = dict(su.execute("SELECT rolname, rolcanlogin FROM pg_roles").fetchall())
        assert roles[f"{p}_ann"] is True
        assert su.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (f"{p}_ann",)).fetchone() == (None,)
        privs = su.execute("SELECT grantee, privilege_type FROM information_schema.table_privileges "
                           "WHERE table_name = %s AND grantee <> %s ORDER BY 1, 2", (f"{p}_t", f"{p}_ann")).fetchall()
        assert privs == [("PUBLIC", "SELECT")]
        assert su.execute("SELECT tableowner FROM pg_tables WHERE tablename = %s", (f"{p}_t",)).fetchone() == (f"{p}_ann",)
    with _as(tidegate, f"{p}_ann") as ann:
        # the new owner may now do what owners do
        ann.execute(f"ALTER TABLE {p}_t ADD COLUMN y int")
        ann.execute(f"DROP TABLE {p}_t")


def test_role_statements_refuse_what_they_do_not_model(tidegate) -> None:
    p = "m" + uuid.uuid4().hex[:6]
    with psycopg.connect(tidegate.dsn, autocommit=True) as su:
        su.execute(f"CREATE ROLE {p} LOGIN")
        su.execute(f"CREATE TABLE {p}_t (x int)")
        for sql, state in [
            (f"GRANT SELECT ON {p}_t TO {p} WITH GRANT OPTION", "0A000"),
            (f"GRANT SELECT (x) ON {p}_t TO {p}", "0A000"),
            (f"CREATE ROLE {p}_2 CONNECTION LIMIT 3", "0A000"),
            (f"ALTER ROLE {p} RENAME TO {p}_3", "0A000"),
            (f"GRANT EXECUTE ON {p}_t TO {p}", "0LP01"),
            (f"CREATE ROLE {p}", "42710"),
            ("CREATE ROLE pg_mine", "42939"),
            ("CREATE ROLE public", "42939"),
            (f"GRANT SELECT ON {p}_t TO nobody_{p}", "42704"),
            (f"DROP ROLE nobody_{p}", "42704"),
            ("DROP ROLE tidegate", "55006"),  # the session's own role
            (f"SET ROLE {p}", "0A000"),
        ]:
            with pytest.raises(psycopg.Error) as err:
                su.execute(sql)
            assert err.value.sqlstate == state, (sql, err.value.sqlstate, str(err.value))
        su.execute("SET ROLE NONE")
        su.execute("RESET ROLE")


def test_flow_needs_read_access_and_is_owned(tidegate) -> None:
    p = "f" + uuid.uuid4().hex[:6]
    with psycopg.connect(tidegate.dsn, autocommit=True) as su:
        su.execute(f"CREATE ROLE {p} LOGIN")
        su.execute(f"CREATE TABLE {p}_src (k int, v int)")
        su.execute(f"GRANT CREATE ON SCHEMA public TO {p}")
        with _as(tidegate, p) as u:
            with pytest.raises(psycopg.Error) as err:
                u.execute(f"CREATE FLOW {p}_f SINK TO {p}_sink AS SELECT k, count(*) AS n FROM {p}_src GROUP BY k")
            assert err.value.sqlstate == "42501"
            su.execute(f"GRANT SELECT ON {p}_src TO {p}")
            u.execute(f"CREATE FLOW {p}_f SINK TO {p}_sink AS SELECT k, count(*) AS n FROM {p}_src GROUP BY k")
            su.execute(f"INSERT INTO {p}_src VALUES (1, 1), (1, 2), (2, 3)")
            u.execute(f"ADMIN FLUSH_FLOW('{p}_f')")
            # the sink belongs to the flow's owner
            assert u.execute(f"SELECT k, n FROM {p}_sink ORDER BY k").fetchall() == [(1, 2), (2, 1)]
            owner = su.execute("SELECT tableowner FROM pg_tables WHERE tablename = %s", (f"{p}_sink",)).fetchone()
            assert owner == (p,)
        su.execute(f"CREATE ROLE {p}_other LOGIN")
        with _as(tidegate, f"{p}_other") as o:
            for sql in (f"DROP FLOW {p}_f", f"ADMIN FLUSH_FLOW('{p}_f')", f"SELECT * FROM {p}_sink"):
                with pytest.raises(psycopg.Error) as err:
                    o.execute(sql)
                assert err.value.sqlstate == "42501", sql
        su.execute(f"DROP FLOW {p}_f")


# ------------------------------------------------------------------ configured users, passwords

@pytest.fixture(scope="module")
def users_gateway(tmp_path_factory):
    """A gateway with users in its config file (SCRAM); only catalog statements run on it."""
    from tests.tidegate_server import start_tidegate

    base = tmp_path_factory.mktemp("roles-gw")
    config = base / "tidegate.toml"
    config.write_text('[[users]]\nname = "boss"\npassword = "b0ss"\nsuperuser = true\n\n'
                      '[[users]]\nname = "analyst"\npassword = "an4lyst"\n')
    server = start_tidegate(base / "data", extra_args=["--config", str(config)], file_roots=[base])
    yield server
    server.stop()


def _dsn(server, user: str, password: str) -> str:
    return psycopg.conninfo.make_conninfo(host="127.0.0.1", port=server.port, dbname="tidegate", user=user,
                                          password=password)


def test_configured_users_are_roles(users_gateway) -> None:
    with psycopg.connect(_dsn(users_gateway, "boss", "b0ss"), autocommit=True) as boss:
        rows = dict(boss.execute("SELECT rolname, rolsuper FROM pg_roles WHERE rolname IN ('boss', 'analyst')").fetchall())
        assert rows == {"boss": True, "analyst": False}
        boss.execute("CREATE TABLE boss_t (x int)")
        with pytest.raises(psycopg.Error) as err:
            boss.execute("DROP ROLE analyst")
        assert err.value.sqlstate == "55006"
        with pytest.raises(psycopg.Error) as err:
            boss.execute("ALTER ROLE analyst SUPERUSER")
        assert err.value.sqlstate == "55006"
    with psycopg.connect(_dsn(users_gateway, "analyst", "an4lyst"), autocommit=True) as analyst:
        for sql in ("CREATE TABLE a_t (x int)", "DROP TABLE boss_t", "CREATE ROLE x LOGIN",
                    "INSERT INTO boss_t VALUES (1)"):
            with pytest.raises(psycopg.Error) as err:
                analyst.execute(sql)
            assert err.value.sqlstate == "42501", sql
        # VACUUM of another's table: PostgreSQL 15's WARNING, nothing done, the statement succeeds
        warned = []
        analyst.add_notice_handler(lambda d: warned.append((d.severity, d.sqlstate, d.message_primary)))
        assert analyst.execute("VACUUM boss_t").statusmessage == "VACUUM"
        assert warned == [("WARNING", "01000", 'skipping "boss_t" --- only table or database owner can vacuum it')]


def test_password_roles_log_in_with_scram(users_gateway) -> None:
    with psycopg.connect(_dsn(users_gateway, "boss", "b0ss"), autocommit=True) as boss:
        boss.execute("CREATE ROLE carol LOGIN PASSWORD 'c4rol pass'")
        boss.execute("CREATE ROLE dave PASSWORD 'd4ve'")  # NOLOGIN by default
        verifier = boss.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'carol'").fetchone()[0]
        assert verifier is None  # never shown
    with psycopg.connect(_dsn(users_gateway, "carol", "c4rol pass"), autocommit=True) as carol:
        assert carol.execute("SELECT current_user").fetchone() == ("carol",)
        carol.execute("ALTER ROLE carol PASSWORD 'n3w'")  # anyone may change their own password
        with pytest.raises(psycopg.Error) as err:
            carol.execute("ALTER ROLE carol SUPERUSER")
        assert err.value.sqlstate == "42501"
    with pytest.raises(psycopg.OperationalError) as err:
        psycopg.connect(_dsn(users_gateway, "carol", "c4rol pass"))
    assert "password authentication failed" in str(err.value)
    psycopg.connect(_dsn(users_gateway, "carol", "n3w")).close()
    with pytest.raises(psycopg.OperationalError) as err:
        psycopg.connect(_dsn(users_gateway, "dave", "d4ve"))
    assert "not permitted to log in" in str(err.value)
    with pytest.raises(psycopg.OperationalError) as err:
        psycopg.connect(_dsn(users_gateway, "nobody", "x"))
    assert "password authentication failed" in str(err.value)


def test_connector_tables_need_a_superuser(users_gateway, tmp_path_factory) -> None:
    folder: Path = users_gateway.data_dir.parent / "src"
    folder.mkdir(exist_ok=True)
    (folder / "a.csv").write_text("id\n1\n")
    ddl = (f"CREATE TABLE conn_t (id int PRIMARY KEY) WITH (connector = 'file', path = '{folder}', "
           "match_pattern = '*.csv', refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV")
    with psycopg.connect(_dsn(users_gateway, "boss", "b0ss"), autocommit=True) as boss:
        boss.execute("GRANT CREATE ON SCHEMA public TO analyst")
    with psycopg.connect(_dsn(users_gateway, "analyst", "an4lyst"), autocommit=True) as analyst:
        analyst.execute("CREATE TABLE plain_t (x int)")  # ordinary tables are fine now
        with pytest.raises(psycopg.Error) as err:
            analyst.execute(ddl)
        assert err.value.sqlstate == "42501" and "superuser" in str(err.value)
    with psycopg.connect(_dsn(users_gateway, "boss", "b0ss"), autocommit=True) as boss:
        boss.execute(ddl)


def test_source_passwords_are_never_shown(tidegate) -> None:
    name = "pw_" + uuid.uuid4().hex[:6]
    with psycopg.connect(tidegate.dsn, autocommit=True) as su:
        su.execute(f"CREATE TABLE {name} (id int PRIMARY KEY) WITH (connector = 'postgres', "
                   "url = 'postgresql://reader:hunter2@127.0.0.1:1/db?sslmode=disable&password=hunter3', "
                   "source_table = 't', password = 'hunter4', refresh_mode = 'FULL_RELOAD')")
        shown = su.execute(f"SHOW CREATE TABLE {name}").fetchone()[1]
        assert "hunter" not in shown and "reader:********@127.0.0.1" in shown
        su.execute(f"DROP TABLE {name}")


def test_current_user_is_the_role_on_every_path(tidegate) -> None:
    p = "u" + uuid.uuid4().hex[:6]
    with psycopg.connect(tidegate.dsn, autocommit=True) as su:
        su.execute(f"CREATE ROLE {p} LOGIN")
        su.execute(f"CREATE TABLE {p}_t (x int)")
        su.execute(f"INSERT INTO {p}_t VALUES (1)")
        su.execute(f"GRANT SELECT ON {p}_t TO {p}")
    with _as(tidegate, p) as u:
        assert u.execute("SELECT current_user, session_user").fetchone() == (p, p)
        # a table query is evaluated by Spark: still the role, never the server's OS user
        assert u.execute(f"SELECT current_user, session_user, x FROM {p}_t").fetchone() == (p, p, 1)
        assert u.execute(f"SELECT count(*) FROM {p}_t WHERE current_user = %s", (p,)).fetchone() == (1,)
