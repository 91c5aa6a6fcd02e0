"""The events table tidegate_private.events and its recorder (issue 19), through real clients.

One gateway for the module (events committed every 0.2 s) shows the table's shape and rules and
each kind of event after the action that records it. The recorder's failure paths run their own
gateways with configured users (failed logins are the events) and the operator-only hook
``TIDEGATE_EVENTS_TEST_FAIL_COMMITS``: commits that fail a few times lose nothing; kill -9 keeps
every committed batch and a restart writes nothing twice; a full queue drops and counts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.tidegate_server import TidegateServer, start_tidegate
from tests.wire import error_of, rows, running_gateway, wait_until

EVENTS = "tidegate_private.events"
HOURLY = "EVAL INTERVAL '1 hour'"
FAST = {"TIDEGATE_EVENTS_FLUSH_INTERVAL_S": "0.2", "TIDEGATE_FLOW_DEFAULT_INTERVAL_S": "1"}


@pytest.fixture(scope="module")
def gw(tmp_path_factory) -> Iterator[TidegateServer]:
    yield from running_gateway(tmp_path_factory.mktemp("events") / "data", env=FAST)


@pytest.fixture()
def conn(gw: TidegateServer):
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        yield c


def events(conn: psycopg.Connection, where: str, params: tuple = (), n: int = 1,
           timeout: float = 60.0) -> list[dict[str, Any]]:
    """The events matching ``where`` in id order, once at least ``n`` are committed."""
    sql = (f'SELECT event_id, "timestamp", type, object, username, gateway, payload FROM {EVENTS} '
           f"WHERE {where} ORDER BY event_id")
    names = ["event_id", "timestamp", "type", "object", "username", "gateway", "payload"]

    def fetch() -> list[dict[str, Any]] | None:
        found = [dict(zip(names, r)) for r in rows(conn, sql, params)]
        return found if len(found) >= n else None

    return wait_until(fetch, timeout)


# -- the table ----------------------------------------------------------------------------------------

def test_table_shape_and_catalogs(conn: psycopg.Connection) -> None:
    assert rows(conn, "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
                      "WHERE table_schema = 'tidegate_private' AND table_name = 'events' ORDER BY ordinal_position") == [
        ("timestamp", "timestamp with time zone", "NO"), ("event_id", "bigint", "NO"), ("type", "text", "NO"),
        ("object", "text", "YES"), ("username", "text", "YES"), ("gateway", "text", "YES"),
        ("payload", "jsonb", "YES")]
    assert ("tidegate_private",) in rows(conn, "SELECT schema_name FROM information_schema.schemata")
    assert rows(conn, "SELECT table_type FROM information_schema.tables WHERE table_schema = 'tidegate_private'"
                      " AND table_name = 'events'") == [("BASE TABLE",)]
    assert rows(conn, "SELECT c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                      "WHERE n.nspname = 'tidegate_private' AND c.relname = 'events'") == [("r",)]
    create = rows(conn, f"SHOW CREATE TABLE {EVENTS}")[0][1]
    assert 'TIME INDEX ("timestamp")' in create and "PRIMARY KEY (event_id)" in create
    assert "ttl = '90 days'" in create and "append_mode = 'true'" in create


def test_gateway_started_event(conn: psycopg.Connection, gw: TidegateServer) -> None:
    [started] = events(conn, "type = 'gateway.started'")
    assert started["gateway"] == f"127.0.0.1:{gw.port}" and started["username"] is None
    p = started["payload"]
    assert p["version"] and p["listen"] == f"127.0.0.1:{gw.port}" and p["data_dir"] == str(gw.data_dir)
    assert p["settings"]["events_ttl"] == "90 days" and p["settings"]["users"] == 0


def test_writes_and_drops_refused_for_everyone(conn: psycopg.Connection) -> None:
    refused = {
        f"INSERT INTO {EVENTS} (\"timestamp\", event_id, type) VALUES (now(), 1, 'x')": "permission denied for table events",
        f"INSERT INTO {EVENTS} SELECT * FROM {EVENTS}": "permission denied for table events",
        f"UPDATE {EVENTS} SET type = 'x'": "permission denied for table events",
        f"DELETE FROM {EVENTS}": "permission denied for table events",
        f"TRUNCATE {EVENTS}": "permission denied for table events",
        f"MERGE INTO {EVENTS} t USING {EVENTS} s ON t.event_id = s.event_id WHEN MATCHED THEN DELETE":
            "permission denied for table events",
        f"ALTER TABLE {EVENTS} ADD COLUMN extra int": "permission denied for table events",
        f"ALTER TABLE {EVENTS} RENAME TO gone": "permission denied for table events",
        f"COMMENT ON TABLE {EVENTS} IS 'mine'": "permission denied for table events",
        f"CREATE INDEX ev_idx ON {EVENTS} (type)": "permission denied for table events",
        f"DROP TABLE {EVENTS}": "permission denied for table events",
        "DROP SCHEMA tidegate_private CASCADE": "permission denied for schema tidegate_private",
        "CREATE TABLE tidegate_private.mine (x int)": "permission denied for schema tidegate_private",
        "CREATE VIEW tidegate_private.mine AS SELECT 1 AS x": "permission denied for schema tidegate_private",
        f"CREATE FLOW ev_sink_flow SINK TO {EVENTS} AS SELECT * FROM ev_any": "permission denied for table events",
    }
    conn.execute("CREATE TABLE ev_any (x int)")
    for sql, message in refused.items():
        err = error_of(conn, sql)
        assert (err.sqlstate, err.diag.message_primary) == ("42501", message), sql
    with pytest.raises(psycopg.Error) as info:
        with conn.cursor().copy(f"COPY {EVENTS} (type) FROM STDIN") as copy:
            copy.write_row(("x",))
    assert info.value.sqlstate == "42501"
    assert rows(conn, f"SELECT count(*) FROM {EVENTS} WHERE type = 'x'") == [(0,)]
    assert rows(conn, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'tidegate_private'") == [(1,)]


def test_any_role_reads_none_writes(conn: psycopg.Connection, gw: TidegateServer) -> None:
    conn.execute("CREATE ROLE ev_reader LOGIN")
    with psycopg.connect(gw.dsn.replace("user=tidegate", "user=ev_reader"), autocommit=True) as reader:
        assert rows(reader, f"SELECT count(*) > 0 FROM {EVENTS} WHERE type = 'gateway.started'") == [(True,)]
        err = error_of(reader, f"DELETE FROM {EVENTS}")
        assert (err.sqlstate, err.diag.message_primary) == ("42501", "permission denied for table events")


# -- what is recorded ---------------------------------------------------------------------------------

def test_ddl_events(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE ev_ddl (id int PRIMARY KEY, v text)")
    conn.execute("ALTER TABLE ev_ddl ADD COLUMN w int")
    conn.execute("CREATE VIEW ev_ddl_v AS SELECT id FROM ev_ddl")
    conn.execute("DROP VIEW ev_ddl_v")
    error_of(conn, "CREATE TABLE ev_ddl (x int)")  # a failed statement records nothing
    conn.execute("DROP TABLE ev_ddl")
    got = events(conn, "type = 'ddl' AND object IN ('public.ev_ddl', 'public.ev_ddl_v')", n=5)
    assert [(e["payload"]["command"], e["object"], e["username"]) for e in got] == [
        ("CREATE TABLE", "public.ev_ddl", "tidegate"), ("ALTER TABLE", "public.ev_ddl", "tidegate"),
        ("CREATE VIEW", "public.ev_ddl_v", "tidegate"), ("DROP VIEW", "public.ev_ddl_v", "tidegate"),
        ("DROP TABLE", "public.ev_ddl", "tidegate")]
    assert got[0]["payload"]["statement"] == "CREATE TABLE ev_ddl (id int PRIMARY KEY, v text)"
    assert [e["timestamp"] for e in got] == sorted(e["timestamp"] for e in got)


def test_ddl_in_a_block_is_recorded_at_commit_only(conn: psycopg.Connection) -> None:
    with conn.transaction():
        conn.execute("CREATE TABLE ev_block_kept (x int)")
        conn.execute("COMMENT ON TABLE ev_block_kept IS 'kept'")
    try:
        with conn.transaction():
            conn.execute("CREATE TABLE ev_block_gone (x int)")
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    conn.execute("CREATE TABLE ev_block_after (x int)")  # committed after the rolled-back block
    events(conn, "object = 'public.ev_block_after'")
    assert [(e["object"], e["payload"]["command"]) for e in events(conn, "object LIKE 'public.ev_block%'", n=3)] == [
        ("public.ev_block_kept", "CREATE TABLE"), ("public.ev_block_kept", "COMMENT"),
        ("public.ev_block_after", "CREATE TABLE")]


def test_connector_passwords_are_not_recorded(conn: psycopg.Connection, gw: TidegateServer) -> None:
    conn.execute("CREATE TABLE ev_pg_src (id int PRIMARY KEY) WITH (connector = 'postgres', "
                 "url = 'postgresql://ev:s3cret@127.0.0.1:1/db', password = 's3cret', source_table = 't', "
                 "refresh_mode = 'FULL_RELOAD')")
    [e] = events(conn, "object = 'public.ev_pg_src'")
    assert "s3cret" not in json.dumps(e["payload"]) and "********" in e["payload"]["statement"]


def test_flow_events(conn: psycopg.Connection) -> None:
    conn.execute("CREATE TABLE ev_src (host text, ts timestamp TIME INDEX, v int, extra int, PRIMARY KEY (host))")
    conn.execute("INSERT INTO ev_src VALUES ('a', '2024-01-01 00:00:10', 1, 5)")
    conn.execute(f"CREATE FLOW ev_flow SINK TO ev_sink {HOURLY} AS SELECT host, count(*) AS c FROM ev_src GROUP BY host")
    conn.execute(f"CREATE OR REPLACE FLOW ev_flow SINK TO ev_sink {HOURLY} AS "
                 "SELECT host, count(extra) AS c FROM ev_src GROUP BY host")
    rows(conn, "ADMIN FLUSH_FLOW('ev_flow')")
    conn.execute("ALTER TABLE ev_src DROP COLUMN extra")
    assert error_of(conn, "ADMIN FLUSH_FLOW('ev_flow')").sqlstate == "42703"
    conn.execute("ALTER TABLE ev_src ADD COLUMN extra int")
    rows(conn, "ADMIN FLUSH_FLOW('ev_flow')")
    conn.execute("DROP FLOW ev_flow")
    got = events(conn, "type LIKE 'flow.%' AND object = 'public.ev_flow'", n=5)
    types = [e["type"] for e in got]
    # the scheduler may retry the failing flow (backoff 1 s) before it is mended: more flow.failed
    assert types[:3] == ["flow.created", "flow.replaced", "flow.failed"]
    assert types[-2:] == ["flow.recovered", "flow.dropped"] and set(types[2:-2]) == {"flow.failed"}
    created, replaced, failed, recovered, dropped = got[0], got[1], got[2], got[-2], got[-1]
    assert created["username"] == "tidegate" and created["payload"]["sink"] == "public.ev_sink"
    assert created["payload"]["sources"] == ["public.ev_src"] and "count(*)" in created["payload"]["query"]
    assert "count(extra)" in replaced["payload"]["query"] and replaced["username"] == "tidegate"
    assert failed["payload"]["sqlstate"] == "42703" and "extra" in failed["payload"]["error"]
    assert failed["payload"]["failures"] == 1 and failed["payload"]["trigger"] == "ADMIN FLUSH_FLOW"
    assert recovered["payload"]["failures"] == len(types) - 4 and "extra" in recovered["payload"]["last_error"]
    assert dropped["username"] == "tidegate" and dropped["payload"]["reason"] == "DROP FLOW"


def test_pending_flow_activation_event(conn: psycopg.Connection) -> None:
    conn.execute("CREATE FLOW ev_pending SINK TO ev_pending_sink WITH (defer_on_missing_source = true) AS "
                 "SELECT host, count(*) AS c FROM ev_later GROUP BY host")
    conn.execute("CREATE TABLE ev_later (host text, ts timestamp TIME INDEX, PRIMARY KEY (host))")
    got = events(conn, "type LIKE 'flow.%' AND object = 'public.ev_pending'", n=2)
    assert [e["type"] for e in got] == ["flow.created", "flow.activated"]
    assert got[0]["payload"]["pending"] is True and got[0]["payload"]["missing_sources"] == ["public.ev_later"]
    assert got[1]["payload"]["sources"] == ["public.ev_later"] and got[1]["username"] is None
    # its source dropped: suspended (pending again); created again: activated again
    conn.execute("DROP TABLE ev_later")
    conn.execute("CREATE TABLE ev_later (host text, ts timestamp TIME INDEX, PRIMARY KEY (host))")
    got = events(conn, "type LIKE 'flow.%' AND object = 'public.ev_pending'", n=4)
    assert [e["type"] for e in got] == ["flow.created", "flow.activated", "flow.suspended", "flow.activated"]
    assert got[2]["payload"]["waiting_for"] == ["public.ev_later"]
    conn.execute("DROP FLOW ev_pending")


def test_refresh_events(conn: psycopg.Connection, gw: TidegateServer) -> None:
    folder = gw.data_dir.parent / "ev_refresh"
    folder.mkdir(exist_ok=True)
    (folder / "a.csv").write_text("id,name\n1,a\n2,b\n3,c\n")
    conn.execute(f"CREATE TABLE ev_rf (id int PRIMARY KEY, name text) WITH (connector = 'file', path = '{folder}', "
                 "refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV")
    conn.execute("REFRESH TABLE ev_rf WAIT")
    (folder / "a.csv").write_text("id,name\n1,a\n2,B\n4,d\n")
    conn.execute("REFRESH TABLE ev_rf WAIT")
    (folder / "a.csv").write_text("id,name\nnot a number,a\n")
    assert error_of(conn, "REFRESH TABLE ev_rf WAIT").sqlstate == "22P02"
    got = events(conn, "type LIKE 'refresh.%' AND object = 'public.ev_rf'", n=6)
    assert [e["type"] for e in got] == ["refresh.started", "refresh.finished"] * 2 + ["refresh.started", "refresh.failed"]
    first, second, failed = got[1]["payload"], got[3]["payload"], got[5]["payload"]
    assert (first["rows_loaded"], first["rows_inserted"], first["rows_updated"], first["rows_deleted"]) == (3, 3, 0, 0)
    assert (second["rows_loaded"], second["rows_inserted"], second["rows_updated"], second["rows_deleted"]) == (3, 1, 1, 1)
    assert first["duration_s"] >= 0 and first["connector"] == "file" and first["trigger"] == "REFRESH TABLE WAIT"
    assert got[0]["username"] == "tidegate" and got[0]["payload"]["refresh_id"] == first["refresh_id"]
    assert failed["sqlstate"] == "22P02" and "does not fit" in failed["error"]


def test_auth_failure_event(conn: psycopg.Connection, gw: TidegateServer) -> None:
    conn.execute("CREATE ROLE ev_nologin NOLOGIN")
    with pytest.raises(psycopg.OperationalError, match="not permitted to log in"):
        psycopg.connect(gw.dsn.replace("user=tidegate", "user=ev_nologin") + " application_name=evtest")
    [e] = events(conn, "type = 'auth.failed' AND username = 'ev_nologin'")
    assert e["payload"]["client_addr"] == "127.0.0.1" and e["payload"]["sqlstate"] == "28000"
    assert e["payload"]["reason"] == 'role "ev_nologin" is not permitted to log in'
    assert e["payload"]["application_name"] == "evtest" and e["payload"]["client_port"] > 0


# -- the recorder's failures, kill -9, a full queue -----------------------------------------------------

USERS = {"TIDEGATE_USERS": "ev_user:right"}


def _dsn(server: TidegateServer, user: str = "ev_user", password: str = "right") -> str:
    return f"host=127.0.0.1 port={server.port} user={user} password={password} dbname=tidegate connect_timeout=10"


def _ready(server: TidegateServer, timeout: float = 180.0) -> psycopg.Connection:
    """A connection of the configured (ordinary) user once queries of the events table run."""
    deadline = time.time() + timeout
    while True:
        try:
            c = psycopg.connect(_dsn(server), autocommit=True)
            c.execute(f"SELECT count(*) FROM {EVENTS}").fetchone()
            return c
        except psycopg.Error:
            if time.time() > deadline:
                raise
            time.sleep(0.5)


def _fail_logins(server: TidegateServer, n: int, user: str = "ev_user") -> None:
    for _ in range(n):
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(_dsn(server, user, "wrong"))


def _count(conn: psycopg.Connection, where: str, params: tuple = ()) -> int:
    return rows(conn, f"SELECT count(*) FROM {EVENTS} WHERE {where}", params)[0][0]


@pytest.mark.long  # CI time: ./tidegate.sh test -m long runs it
def test_failing_commits_kill9_restart_and_full_queue(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # 1. The first three commits fail: retried with backoff, nothing is lost.
    server = start_tidegate(data, env={**USERS, **FAST, "TIDEGATE_EVENTS_TEST_FAIL_COMMITS": "3"})
    try:
        _fail_logins(server, 4)
        _fail_logins(server, 2, user="ev_nobody")
        conn = _ready(server)
        wait_until(lambda: _count(conn, "type = 'auth.failed'") == 6)
        got = events(conn, "type = 'auth.failed'", n=6)
        assert sorted({e["username"] for e in got}) == ["ev_nobody", "ev_user"]
        assert {e["payload"]["sqlstate"] for e in got} == {"28P01"}
        assert got[0]["payload"]["reason"] == 'password authentication failed for user "ev_user"'
        assert _count(conn, "type = 'events.dropped'") == 0
        first_run = _count(conn, "true")
        conn.close()
    finally:
        server.kill9()
    # 2. kill -9 kept every committed event; after the restart ids go on and commits whose outcome
    #    was unknown (they failed after landing) are not written again.
    server = start_tidegate(data, env={**USERS, **FAST, "TIDEGATE_EVENTS_TEST_FAIL_COMMITS": "2:after"})
    try:
        conn = _ready(server)
        assert _count(conn, "type = 'auth.failed'") == 6
        _fail_logins(server, 3)
        wait_until(lambda: _count(conn, "type = 'auth.failed'") >= 9)
        time.sleep(1.0)  # a duplicate would have landed by now
        assert _count(conn, "type = 'auth.failed'") == 9
        assert _count(conn, "type = 'gateway.started'") == 2
        total, distinct, low, high = rows(conn, f"SELECT count(*), count(DISTINCT event_id), min(event_id), "
                                                f"max(event_id) FROM {EVENTS}")[0]
        assert total == distinct == high - low + 1 > first_run  # consecutive ids, none twice
        conn.close()
    finally:
        server.stop()  # graceful: gateway.stopped is committed at shutdown
    # 3. A full queue drops and counts: the first batch fails past its retries (dropped) while a
    #    burst of failed logins overflows a queue of 5.
    server = start_tidegate(data, env={**USERS, "TIDEGATE_EVENTS_FLUSH_INTERVAL_S": "0.2",
                                       "TIDEGATE_EVENTS_QUEUE_SIZE": "5", "TIDEGATE_EVENTS_BATCH_SIZE": "5",
                                       "TIDEGATE_EVENTS_COMMIT_RETRIES": "4",
                                       "TIDEGATE_EVENTS_TEST_FAIL_COMMITS": "5"})
    try:
        me = f"127.0.0.1:{server.port}"
        time.sleep(0.5)  # the first batch (gateway.started) is in its retries: 0.5 + 1 + 2 + 4 s
        _fail_logins(server, 30)
        conn = _ready(server)
        [stopped] = events(conn, "type = 'gateway.stopped'")
        assert stopped["payload"]["uptime_s"] > 0 and stopped["payload"]["events_dropped"] == 0
        dropped = events(conn, "type = 'events.dropped' AND gateway = %s", (me,))
        assert dropped[0]["payload"]["dropped"] >= 1 and dropped[-1]["payload"]["total"] >= 1
        wait_until(lambda: sum(e["payload"]["dropped"] for e in events(conn, "type = 'events.dropped' AND gateway = %s",
                                                                          (me,)))
                   + _count(conn, "gateway = %s AND type <> 'events.dropped'", (me,)) == 31)
        assert _count(conn, "gateway = %s AND type = 'auth.failed'", (me,)) < 30
        assert any("dropping events" in line for line in server.log)
        conn.close()
    finally:
        server.stop()
