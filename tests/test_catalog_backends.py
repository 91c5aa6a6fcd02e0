"""The catalog on its two backends (issue 21): the embedded SQLite file and a PostgreSQL database.

The store-level tests run once per backend, on the oracle PostgreSQL server for the second. The
gateway tests start ``tidegate serve --catalog postgresql://...`` and use it through psycopg: what
was created is there after kill -9 of the leading gateway, served by a second gateway that served
beside it and then leads, and a catalog that cannot be reached stops the gateway with a message
(tests/test_ha.py runs the take-over under load).
Every sqlness golden file also runs on a PostgreSQL catalog (tests/test_cluster_sqlness.py).
"""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from catalog.db import is_postgres, redact
from catalog.flows import FIRST_FLOW_ID, FlowDef, FlowStore
from catalog.jobs import JobStore, job_resource
from catalog.refresh import REFRESHING, RefreshStore
from catalog.store import Catalog, ColumnDef, TableDef
from tests.catalog_db import create_database
from tests.tidegate_server import REPO_ROOT, start_tidegate
from tidegate.errors import SqlError
from tidegate.pgtypes import TYPES_BY_NAME, ColumnType

_names = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path) -> str:
    """Where a fresh catalog lives: a SQLite file, or a new database on the oracle server."""
    if request.param == "sqlite":
        return str(tmp_path / "catalog.sqlite")
    pg = request.getfixturevalue("pg_oracle")
    return create_database(pg.url, f"tg_catalog_{next(_names)}_{int(time.time() * 1000) % 10**9}")


def _table(name: str, oid: int) -> TableDef:
    return TableDef("public", name, [ColumnDef("id", ColumnType(TYPES_BY_NAME["int8"]), not_null=True),
                                     ColumnDef("v", ColumnType(TYPES_BY_NAME["text"]))],
                    primary_key=["id"], location=f"/warehouse/2200/{oid}", oid=oid)


def test_definitions_survive_reopening(target: str) -> None:
    cat = Catalog(target)
    assert cat.backend == ("postgresql" if is_postgres(target) else "sqlite")
    cat.create_schema("sales")
    oid = cat.next_oid()
    cat.create_table(_table("orders", oid))
    version = cat.version
    cat.close()

    again = Catalog(target)
    assert [s.name for s in again.list_schemas()] == ["public", "sales"]
    t = again.get_table("public", "orders")
    assert t is not None and t.oid == oid and t.primary_key == ["id"] and [c.name for c in t.columns] == ["id", "v"]
    assert again.version == version
    assert again.next_oid() == oid + 1
    again.close()


def test_a_failed_transaction_leaves_nothing(target: str) -> None:
    cat = Catalog(target)
    before = cat.version
    with pytest.raises(SqlError):
        with cat.transaction():
            cat.create_schema("half")
            cat.create_schema("half")  # 42P06: the whole transaction goes
    assert cat.get_schema("half") is None and cat.version == before
    with pytest.raises(SqlError) as err:
        cat.create_schema("public")
    assert err.value.sqlstate == "42P06"
    cat.close()


def test_names_sort_bytewise(target: str) -> None:
    """Listings come in the same order on both backends (PostgreSQL's default collation would
    put "B" after "a")."""
    cat = Catalog(target)
    for name in ("b", "B", "a", "_x", "Z9"):
        cat.create_schema(name)
    assert [s.name for s in cat.list_schemas()] == sorted(["public", "b", "B", "a", "_x", "Z9"])
    cat.close()


def test_concurrent_writers_never_share_an_oid(target: str) -> None:
    """Two catalog objects on one database (as two stores, or later two gateways, are): writers
    are serialised, so 2 x 100 oids drawn at once are 200 different ones."""
    first, second = Catalog(target), Catalog(target)
    got: list[int] = []
    lock = threading.Lock()

    def draw(cat: Catalog) -> None:
        for _ in range(100):
            oid = cat.next_oid()
            with lock:
                got.append(oid)

    threads = [threading.Thread(target=draw, args=(c,)) for c in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 200 and len(set(got)) == 200
    first.close()
    second.close()


def test_sequences_roles_and_grants(target: str) -> None:
    cat = Catalog(target)
    cat.roles.sync_configured([("alice", False), ("root", True)])
    snap = cat.roles._snapshot()
    assert {"alice", "root"} <= set(snap.roles) and snap.roles["root"].superuser
    cat.close()
    again = Catalog(target)
    assert not again.roles._snapshot().roles["alice"].superuser
    again.close()


def test_flows_jobs_refresh_and_leases(target: str) -> None:
    flows = FlowStore(target)
    assert flows.list() == []
    jobs = JobStore(target)
    a = jobs.submit(name="a", statement="SELECT 1", kind="query", user="u", session={}, timeout_text=None,
                    timeout_s=None)
    b = jobs.submit(name=None, statement="SELECT 2", kind="query", user="u", session={}, timeout_text=None,
                    timeout_s=2.5)
    assert (a.job_id, b.job_id) == ("job-000001", "job-000002")
    assert jobs.get(b.job_id).timeout_s == 2.5
    token = jobs.claim(a.job_id, "gw-1", "127.0.0.1:1", 15.0)
    assert token is not None
    owner, expires, held = jobs.lease(job_resource(a.job_id))
    assert owner == "gw-1" and held == token and expires > time.time()
    refresh = RefreshStore(target)
    rid = refresh.begin(4242, "public.r")
    assert refresh.get(4242).status == REFRESHING and refresh.get(4242).refresh_id == rid
    with pytest.raises(SqlError) as err:
        refresh.begin(4242, "public.r")
    assert err.value.sqlstate == "55000"
    made = flows.create(FlowDef("f1", "public", "public", "f1_sink", "SELECT 1", "public", "batching"))
    assert made.flow_id == FIRST_FLOW_ID and [f.name for f in flows.list()] == ["f1"]
    for store in (flows, jobs, refresh):
        store.close()


def test_postgres_catalog_reconnects_after_losing_its_connection(pg_oracle) -> None:
    url = create_database(pg_oracle.url, f"tg_catalog_reconnect_{int(time.time() * 1000) % 10**9}")
    cat = Catalog(url)
    cat.create_schema("before")
    with psycopg.connect(pg_oracle.url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                      "AND application_name = 'tidegate catalog'", (url.rsplit("/", 1)[1],))
    cat.create_schema("after")  # the lost connection is opened again, once
    assert {"before", "after"} <= {s.name for s in cat.list_schemas()}
    # Lost inside a transaction: the transaction fails (58030) and nothing of it stays.
    with pytest.raises(SqlError) as err:
        with cat.transaction():
            cat.create_schema("inside")
            with psycopg.connect(pg_oracle.url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                              "AND application_name = 'tidegate catalog'", (url.rsplit("/", 1)[1],))
            cat.create_schema("inside too")
    assert err.value.sqlstate == "58030" and "catalog database" in err.value.message
    names = {s.name for s in cat.list_schemas()}
    assert "inside" not in names and "inside too" not in names and "after" in names
    cat.close()


def test_redact_hides_passwords() -> None:
    assert redact("postgresql://tg:s3cret@db:5432/cat") == "postgresql://tg:***@db:5432/cat"
    assert redact("postgresql://tg@db/cat") == "postgresql://tg@db/cat"


# -- a gateway on a PostgreSQL catalog ------------------------------------------------------------


def test_gateway_on_a_postgres_catalog(pg_oracle, tmp_path) -> None:
    url = create_database(pg_oracle.url, f"tg_catalog_gw_{int(time.time() * 1000) % 10**9}")
    data_dir = tmp_path / "data"
    server = start_tidegate(data_dir, extra_args=["--catalog", url])
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA app")
            conn.execute("CREATE TABLE app.kv (id bigint PRIMARY KEY, v text)")
            conn.execute("INSERT INTO app.kv VALUES (1, 'one'), (2, 'two')")
            conn.execute("CREATE VIEW app.kv_two AS SELECT v FROM app.kv WHERE id = 2")
            conn.execute("CREATE SEQUENCE app.s")
            assert conn.execute("SELECT nextval('app.s'), nextval('app.s')").fetchone() == (1, 2)
            conn.execute("COMMENT ON TABLE app.kv IS 'kept in PostgreSQL'")
        # The definitions are rows of the catalog database.
        with psycopg.connect(url) as cat:
            names = {r[0] for r in cat.execute("SELECT name FROM relations WHERE schema = 'app'")}
        assert names == {"kv", "kv_two", "s"}

        # A second gateway on the same catalog serves at once, following the first (it leads the
        # catalog's flows and refreshes); kill -9 of the leader (its catalog lock goes with its
        # connection) makes the follower lead.
        follower = start_tidegate(data_dir, extra_args=["--catalog", url])
        try:
            said = next(line for line in follower.log if line.startswith("tidegate follower:"))
            assert f"tidegate leader pid {server.proc.pid}@" in said and f":{server.port}" in said
            with psycopg.connect(follower.dsn, autocommit=True) as conn:
                assert conn.execute("SELECT v FROM app.kv WHERE id = 1").fetchone() == ("one",)
                with pytest.raises(psycopg.errors.FeatureNotSupported, match=f"the leader is pid {server.proc.pid}@"):
                    conn.execute("REFRESH TABLE app.kv")
            server.kill9()
            follower.wait_for_line("tidegate leader:", timeout=30)
        except BaseException:
            follower.stop()
            raise
        server = follower
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            assert conn.execute("SELECT id, v FROM app.kv ORDER BY id").fetchall() == [(1, "one"), (2, "two")]
            assert conn.execute("SELECT * FROM app.kv_two").fetchall() == [("two",)]
            assert conn.execute("SELECT nextval('app.s')").fetchone() == (3,)
            assert conn.execute("SELECT obj_description('app.kv'::regclass)").fetchone() == ("kept in PostgreSQL",)
            with pytest.raises(psycopg.errors.DuplicateTable):
                conn.execute("CREATE TABLE app.kv (id int)")
    finally:
        server.stop()


def test_gateway_refuses_a_bad_or_unreachable_catalog(tmp_path) -> None:
    bad = subprocess.run([sys.executable, "-m", "tidegate", "serve", "--data-dir", str(tmp_path / "a"),
                          "--catalog", "mysql://x/y"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "catalog must be a postgresql:// URL" in bad.stderr
    gone = subprocess.run([sys.executable, "-m", "tidegate", "serve", "--port", "0", "--data-dir",
                           str(tmp_path / "b"), "--catalog", "postgresql://tg:secret@127.0.0.1:1/none"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert gone.returncode == 1
    assert "could not connect to the catalog database postgresql://tg:***@127.0.0.1:1/none" in gone.stderr
    assert "secret" not in gone.stderr


def test_a_gateway_that_loses_the_catalog_lock_takes_it_again_or_stops(pg_oracle, tmp_path) -> None:
    """The database ends the connection holding the catalog's lock (a restart would): the gateway
    takes the lock again; if another session took it first, the gateway exits at once rather than
    share the catalog (catalog.active: fencing)."""
    url = create_database(pg_oracle.url, f"tg_catalog_lock_{int(time.time() * 1000) % 10**9}")
    server = start_tidegate(tmp_path / "data", extra_args=["--catalog", url])
    key = int.from_bytes(b"tdgate-1", "big")
    mine = f"tidegate leader pid {server.proc.pid}@%"
    held = ("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
            "AND l.granted AND l.objid = %s AND a.application_name LIKE %s")
    terminate = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE %s"
    try:
        with psycopg.connect(url, autocommit=True) as admin:
            assert admin.execute(held, (key & 0xFFFFFFFF, mine)).fetchone()[0] == 1
            admin.execute(terminate, (mine,))
            deadline = time.monotonic() + 15
            while admin.execute(held, (key & 0xFFFFFFFF, mine)).fetchone()[0] != 1:
                assert time.monotonic() < deadline, "the gateway did not take the catalog's lock again"
                time.sleep(0.2)
            with psycopg.connect(server.dsn, autocommit=True) as conn:  # still serving
                assert conn.execute("SELECT 1").fetchone() == (1,)

            for _ in range(20):  # end its connection and take the lock before it does
                admin.execute(terminate, (mine,))
                if admin.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                    break
                time.sleep(0.5)
            else:
                pytest.fail("could not take the catalog's lock from the gateway")
            assert server.proc.wait(timeout=30) == 3  # it exited at once: nothing more is committed
            deadline = time.monotonic() + 5  # the log is read by a thread: its last lines may trail
            while not any("lost the catalog's lead to another gateway" in line for line in server.log):
                assert time.monotonic() < deadline, "\n".join(server.log[-20:])
                time.sleep(0.1)
    finally:
        server.stop()


def test_a_shared_catalog_sees_another_gateways_ddl_at_once(pg_oracle) -> None:
    """Two gateways' catalogs on one PostgreSQL database (shared): a table one creates, alters or
    drops is what the other finds at its next statement's start (Catalog.fresh), and without a
    statement starting, once the change notice arrives; an unshared catalog keeps its version."""
    url = create_database(pg_oracle.url, f"tg_shared_{next(_names)}_{int(time.time() * 1000) % 10**9}")
    one, other, unshared = Catalog(url, shared=True), Catalog(url, shared=True), Catalog(url)
    try:
        assert other.get_table("public", "orders") is None and unshared.get_table("public", "orders") is None
        one.create_table(_table("orders", one.next_oid()))
        other.fresh()
        assert other.get_table("public", "orders") is not None
        unshared.fresh()
        assert unshared.get_table("public", "orders") is None  # one writer process: kept
        one.drop_table("public", "orders")
        deadline = time.monotonic() + 5
        while other.get_table("public", "orders") is not None:  # the notice, no statement start
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for _ in range(200):  # the DDL then a statement at once: never the old definition
            t = _table("orders", one.next_oid())
            one.create_table(t)
            other.fresh()
            assert other.get_table("public", "orders").oid == t.oid
            one.drop_table("public", "orders")
            other.fresh()
            assert other.get_table("public", "orders") is None
    finally:
        for c in (one, other, unshared):
            c.close()
