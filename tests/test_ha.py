"""Gateways of one PostgreSQL catalog on one data directory all serve; one leads the flows,
refreshes and maintenance (issue 21).

Two gateways take clients at once: DDL made through one is what the other's next statement sees,
one PRIMARY KEY inserted through both at once is stored once, concurrent UPDATEs through both wait
for each other and lose no increment, a follower refuses what only the leader runs (0A000 naming it). Then gateways are
killed with SIGKILL at random moments, the leader and a follower in turn, while clients write
through both, a flow runs, a refresh is scheduled and a job runs; each killed one comes back as a
follower. Afterwards every acknowledged row is present once, the flow's sink equals a
recomputation of its query, the refreshed table equals its source and the job's rows were written
once.
"""

from __future__ import annotations

import random
import select
import socket
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from tests.catalog_db import create_database
from tests.pgoracle import free_port
from tests.tidegate_server import TidegateServer, start_tidegate

ROUNDS = 3
WRITERS = 4


def _gateway(data_dir: Path, url: str, port: int | None = None) -> TidegateServer:
    return start_tidegate(data_dir, port=port, extra_args=["--catalog", url], timeout=60)


def _leads(g: TidegateServer) -> int:
    """How many times ``g`` took the lead after starting as a follower."""
    return sum(1 for line in list(g.log) if line.startswith("tidegate leader:"))


@pytest.fixture(scope="module")
def pair(pg_oracle, tmp_path_factory):
    """Two gateways of one PostgreSQL catalog on one data directory: the first leads."""
    url = create_database(pg_oracle.url, f"tg_ha_pair_{int(time.time() * 1000) % 10**9}")
    data_dir = tmp_path_factory.mktemp("ha_pair") / "data"
    leader = _gateway(data_dir, url)
    follower = _gateway(data_dir, url)
    try:
        yield leader, follower
    finally:
        follower.stop()
        leader.stop()


def test_every_gateway_serves_and_one_leads(pair) -> None:
    leader, follower = pair
    said = next(line for line in follower.log if line.startswith("tidegate follower:"))
    assert f"tidegate leader pid {leader.proc.pid}@" in said
    with psycopg.connect(leader.dsn, autocommit=True) as a, psycopg.connect(follower.dsn, autocommit=True) as b:
        for conn in (a, b):  # the same list through either gateway
            rows = conn.execute("SELECT gateway_id, address, role, owns FROM information_schema.gateways").fetchall()
            assert [(r[0], r[1], r[2]) for r in rows] == [
                (f"pid {leader.proc.pid}@{socket.gethostname()[:24]}", f"127.0.0.1:{leader.port}", "leader"),
                (f"pid {follower.proc.pid}@{socket.gethostname()[:24]}", f"127.0.0.1:{follower.port}", "follower")]
            assert "flows" in rows[0][3] and "flows" not in rows[1][3] and "jobs" in rows[1][3]
        # DDL through one gateway is what the other's next statement sees, both ways
        for n in range(5):
            one, other = (a, b) if n % 2 else (b, a)
            one.execute(f"CREATE TABLE seen_{n} (id int PRIMARY KEY, v text)")
            other.execute(f"INSERT INTO seen_{n} VALUES ({n}, 'x')")
            assert one.execute(f"SELECT id, v FROM seen_{n}").fetchall() == [(n, "x")]
            one.execute(f"DROP TABLE seen_{n}")
            with pytest.raises(psycopg.errors.UndefinedTable):
                other.execute(f"SELECT * FROM seen_{n}")
        b.execute("CREATE TABLE led_src (ts timestamp TIME INDEX, v int)")
        b.execute("INSERT INTO led_src VALUES ('2024-01-01 00:00:00', 1)")
        # what only the leader runs: refused by the follower, naming the leader
        for statement in ("CREATE FLOW led_f SINK TO led_sink AS SELECT count(*) AS n FROM led_src",
                          "REFRESH TABLE led_src"):
            with pytest.raises(psycopg.errors.FeatureNotSupported) as refused:
                b.execute(statement)
            assert f"the leader is pid {leader.proc.pid}@" in str(refused.value)
            assert f"listening on 127.0.0.1:{leader.port}" in str(refused.value)
        a.execute("CREATE FLOW led_f SINK TO led_sink AS SELECT count(*) AS n FROM led_src")
        # the flows and the refreshes are the leader's, as every gateway shows
        source = leader.data_dir.parent / "led_csv"
        source.mkdir(exist_ok=True)
        (source / "a.csv").write_text("id,v\n1,2\n")
        b.execute(f"CREATE TABLE led_ref (id int PRIMARY KEY, v int) WITH (connector = 'file', path = '{source}', "
                  "refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV (without_header = 'false')")
        for conn in (a, b):
            assert conn.execute("SELECT flownode_addrs FROM information_schema.flows WHERE flow_name = 'led_f'"
                                ).fetchone() == (f'{{"0":"127.0.0.1:{leader.port}"}}',)
            assert conn.execute("SELECT gateway FROM information_schema.refresh_tables WHERE table_name = 'led_ref'"
                                ).fetchone() == (f"127.0.0.1:{leader.port}",)
        b.execute("INSERT INTO led_src VALUES ('2024-01-01 00:00:01', 2)")  # a follower's write reaches the flow
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            b.execute("ADMIN FLUSH_FLOW('led_f')")
        a.execute("ADMIN FLUSH_FLOW('led_f')")
        assert b.execute("SELECT n FROM led_sink").fetchall() == [(2,)]
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            b.execute("DROP FLOW led_f")
        a.execute("DROP FLOW led_f")
        # a job submitted through the follower runs (on either gateway)
        b.execute("CREATE TABLE led_job (id int)")
        job = b.execute("SUBMIT JOB AS INSERT INTO led_job SELECT g FROM generate_series(1, 1000) g").fetchone()[0]
        status = a.execute(f"WAIT JOB '{job}' TIMEOUT '120 s'")
        assert status.fetchone()[[d.name for d in status.description].index("status")] == "SUCCEEDED"
        assert b.execute("SELECT count(*), count(DISTINCT id) FROM led_job").fetchone() == (1000, 1000)
        # each gateway records its own events, under ids no other gateway uses
        deadline = time.monotonic() + 30
        while True:
            rows = a.execute("SELECT event_id, gateway FROM tidegate_private.events WHERE type = 'gateway.started'"
                             ).fetchall()
            if {g for _, g in rows} >= {f"127.0.0.1:{leader.port}", f"127.0.0.1:{follower.port}"}:
                break
            assert time.monotonic() < deadline, rows
            time.sleep(0.5)
        ids = [r[0] for r in a.execute("SELECT event_id FROM tidegate_private.events")]
        assert len(ids) == len(set(ids))


def test_one_primary_key_inserted_through_two_gateways_is_stored_once(pair) -> None:
    leader, follower = pair
    with psycopg.connect(leader.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE both_pk (id int PRIMARY KEY, gateway int)")
    keys = 25
    outcomes: dict[int, list[str]] = {k: [] for k in range(keys)}
    barrier = threading.Barrier(2)

    def insert(number: int, g: TidegateServer) -> None:
        with psycopg.connect(g.dsn, autocommit=True) as conn:
            for k in range(keys):
                barrier.wait(timeout=60)
                try:
                    conn.execute("INSERT INTO both_pk VALUES (%s, %s)", (k, number))
                    outcomes[k].append(f"ok {number}")
                except psycopg.Error as exc:
                    outcomes[k].append(str(exc.sqlstate))

    threads = [threading.Thread(target=insert, args=(n, g)) for n, g in enumerate(pair)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    with psycopg.connect(follower.dsn, autocommit=True) as conn:
        stored = dict(conn.execute("SELECT id, gateway FROM both_pk").fetchall())
        assert conn.execute("SELECT count(*) FROM both_pk").fetchone() == (keys,)
    for k, seen in outcomes.items():
        assert sorted(seen, key=lambda o: o.startswith("ok")) == ["23505", f"ok {stored[k]}"], (k, seen)


def test_concurrent_updates_through_two_gateways_lose_no_increment(pair) -> None:
    """UPDATEs of one row through two gateways at once wait for each other, as PostgreSQL's do
    for the row lock, and each reads what the other committed: every one succeeds and counts."""
    leader, follower = pair
    with psycopg.connect(leader.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE both_ctr (id int PRIMARY KEY, n int)")
        conn.execute("INSERT INTO both_ctr VALUES (1, 0)")
    acked: list[int] = []
    refused: list[str] = []

    def bump(g: TidegateServer) -> None:
        with psycopg.connect(g.dsn, autocommit=True) as conn:
            for _ in range(12):
                try:
                    conn.execute("UPDATE both_ctr SET n = n + 1 WHERE id = 1")
                    acked.append(1)
                except psycopg.Error as exc:
                    refused.append(str(exc.sqlstate))

    threads = [threading.Thread(target=bump, args=(g,)) for g in (leader, follower, leader, follower)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert refused == []
    with psycopg.connect(follower.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT n FROM both_ctr").fetchone() == (48,)
    assert len(acked) == 48


class Writer(threading.Thread):
    """Inserts numbered rows through whichever gateway answers, reconnecting after a failure.

    ``acked``: rows whose INSERT was acknowledged. A row whose INSERT failed without an answer
    (the gateway died meanwhile) may or may not be committed: ``unsure``, never sent again.
    """

    def __init__(self, dsn: str, number: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.dsn, self.number, self.stop = dsn, number, stop
        self.acked: list[int] = []
        self.unsure: list[int] = []
        self.errors: list[str] = []

    def run(self) -> None:
        conn = None
        n = 0
        while not self.stop.is_set():
            key = self.number * 1_000_000 + n
            try:
                if conn is None:
                    conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=2)
                ts = datetime(2024, 1, 1) + timedelta(seconds=key % 86400)
                conn.execute("INSERT INTO ha_rows VALUES (%s, %s, %s)", (key, self.number, ts))
                self.acked.append(key)
            except psycopg.OperationalError:  # the gateway went away (or none listens yet)
                if conn is not None:
                    self.unsure.append(key)
                    conn.close()
                    conn = None
                else:
                    time.sleep(0.1)
                    continue
            except psycopg.Error as exc:
                self.errors.append(f"{key}: {exc.sqlstate} {exc}")
            n += 1
        if conn is not None:
            conn.close()


def test_kill9_of_any_gateway_loses_nothing_and_does_nothing_twice(pg_oracle, tmp_path: Path) -> None:
    url = create_database(pg_oracle.url, f"tg_ha_{int(time.time() * 1000) % 10**9}")
    data_dir = tmp_path / "data"
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.csv").write_text("id,v\n" + "".join(f"{i},{i * 3}\n" for i in range(1, 501)))
    leader = _gateway(data_dir, url)
    follower = _gateway(data_dir, url)
    started = [leader, follower]
    ports = (leader.port, follower.port)
    # half the clients try the first gateway first, half the second
    dsns = [f"host=127.0.0.1,127.0.0.1 port={a},{b} user=tidegate dbname=tidegate" for a, b in (ports, ports[::-1])]
    stop = threading.Event()
    writers: list[Writer] = []
    try:
        leader.wait_for_spark()
        with psycopg.connect(leader.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE ha_rows (id bigint PRIMARY KEY, writer int, ts timestamp)")
            conn.execute("CREATE TABLE ha_job_out (id bigint, v text)")
            conn.execute("CREATE FLOW ha_flow SINK TO ha_sink EVAL INTERVAL '1 s' AS SELECT writer, "
                         "date_bin(INTERVAL '1 hour', ts, '2000-01-01 00:00:00'::timestamp) AS w, count(*) AS n, "
                         "min(id) AS lo FROM ha_rows GROUP BY writer, w")
            conn.execute(f"CREATE TABLE ha_ref (id int PRIMARY KEY, v int) WITH (connector = 'file', "
                         f"path = '{source}', match_pattern = '*.csv', refresh_mode = 'FULL_RELOAD', "
                         f"refresh_interval_sec = '1') FORMAT PLAIN ENCODE CSV (without_header = 'false')")
        with psycopg.connect(follower.dsn, autocommit=True) as conn:
            conn.execute("SUBMIT JOB ha_job AS INSERT INTO ha_job_out "
                         "SELECT g, 'row ' || g FROM generate_series(1, 2000000) g")
        writers = [Writer(dsns[w % 2], w, stop) for w in range(1, WRITERS + 1)]
        for w in writers:
            w.start()
        takeovers = []
        for round_ in range(ROUNDS):
            time.sleep(random.uniform(1.5, 4.0))
            # the source changes while gateways come and go: the refreshed table must follow it
            (source / "a.csv").write_text("id,v\n" + "".join(f"{i},{i * 3 + round_}\n" for i in range(1, 501 + round_)))
            kill_leader = round_ != 1 if round_ < 2 else random.random() < 0.5
            victim, survivor = (leader, follower) if kill_leader else (follower, leader)
            leads_before = _leads(survivor)
            victim.kill9()
            if kill_leader:  # the survivor takes the lead; it served all along
                deadline = time.monotonic() + 60
                while _leads(survivor) == leads_before:
                    assert time.monotonic() < deadline, "\n".join(survivor.log[-30:])
                    time.sleep(0.05)
                takeovers.append(victim)
            back = _gateway(data_dir, url, port=victim.port)  # comes back as a follower
            started.append(back)
            leader, follower = survivor, back
        time.sleep(2)
        stop.set()
        for w in writers:
            w.join(30)
        assert all(not w.errors for w in writers), [w.errors[:3] for w in writers]
        acked = {k for w in writers for k in w.acked}
        unsure = {k for w in writers for k in w.unsure}
        assert len(acked) > 50 and takeovers

        with psycopg.connect(leader.dsn, autocommit=True) as conn:
            conn.execute("SET statement_timeout = '120s'")
            ids = [r[0] for r in conn.execute("SELECT id FROM ha_rows")]
            assert len(ids) == len(set(ids))
            assert acked <= set(ids), f"acknowledged rows lost: {sorted(acked - set(ids))[:10]}"
            assert set(ids) <= acked | unsure, f"rows nobody wrote: {sorted(set(ids) - acked - unsure)[:10]}"

            waited = conn.execute("WAIT JOB 'ha_job' TIMEOUT '120 s'")
            status = [d.name for d in waited.description].index("status")
            assert waited.fetchone()[status] == "SUCCEEDED"
            assert conn.execute("SELECT count(*), count(DISTINCT id), sum(id) FROM ha_job_out").fetchone() == \
                (2000000, 2000000, 2000000 * 2000001 // 2)

            conn.execute("ADMIN FLUSH_FLOW('ha_flow')")
            expected = conn.execute("SELECT writer, date_bin(INTERVAL '1 hour', ts, '2000-01-01 00:00:00'::timestamp) "
                                    "AS w, count(*), min(id) FROM ha_rows GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
            assert conn.execute("SELECT writer, w, n, lo FROM ha_sink ORDER BY 1, 2").fetchall() == expected

            # the gateways of the catalog: the survivor leads, the last one killed is back following
            shown = conn.execute("SHOW GATEWAYS").fetchall()
            listed = conn.execute("SELECT gateway_id, address, role, owns <> '', last_heartbeat >= started "
                                  "FROM information_schema.gateways").fetchall()
            assert [(r[1], r[2]) for r in shown] == [(r[1], r[2]) for r in listed]
            assert [(r[1], r[2], r[3], r[4]) for r in listed] == [
                (f"127.0.0.1:{leader.port}", "leader", True, True), (f"127.0.0.1:{follower.port}", "follower", True, True)]
            assert listed[0][0] == f"pid {leader.proc.pid}@{socket.gethostname()[:24]}"

            deadline = time.monotonic() + 60
            while True:  # a scheduled refresh may be running: the table refreshes once it is idle
                try:
                    conn.execute("REFRESH TABLE ha_ref WAIT")
                    break
                except psycopg.errors.ObjectNotInPrerequisiteState:
                    assert time.monotonic() < deadline, "the refreshable table never became idle"
                    time.sleep(0.2)
            assert conn.execute("SELECT id, v FROM ha_ref ORDER BY id").fetchall() == \
                [(i, i * 3 + ROUNDS - 1) for i in range(1, 501 + ROUNDS - 1)]
    finally:
        stop.set()
        for g in started:
            g.stop()


def test_a_gateway_on_another_data_directory_is_refused(pg_oracle, tmp_path: Path) -> None:
    """The catalog names its tables' files under one data directory: a gateway on another one
    would find none of them, nor the commits its predecessor left to recover."""
    url = create_database(pg_oracle.url, f"tg_ha_dir_{int(time.time() * 1000) % 10**9}")
    first = _gateway(tmp_path / "one", url)
    first.stop()
    with pytest.raises(RuntimeError, match="belongs to the data directory"):
        _gateway(tmp_path / "two", url)


class FreezableProxy:
    """A TCP proxy to PostgreSQL that can stop forwarding while keeping its connections open (a
    database that no longer answers), then cut them (the database ends them)."""

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.target_port = target_port
        self.frozen = threading.Event()
        self.sockets: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        try:
            while True:
                if self.frozen.is_set():
                    time.sleep(0.05)
                    continue
                ready, _, _ = select.select([a, b], [], [], 0.05)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        raise OSError("closed")
                    peers[s].sendall(data)
        except OSError:
            for s in (a, b):
                s.close()

    def cut(self) -> None:
        self.listener.close()
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def test_a_leader_that_cannot_confirm_its_lock_exits_before_a_follower_leads(pg_oracle, tmp_path: Path) -> None:
    """The catalog database stops answering the leading gateway (its connections stay open): the
    gateway exits within catalog.active.FENCE_S and some, and the follower (serving all along)
    takes the lead only once the database ends the dead gateway's connections, never while it
    still runs."""
    from catalog.active import FENCE_S

    url = create_database(pg_oracle.url, f"tg_ha_fence_{int(time.time() * 1000) % 10**9}")
    proxy = FreezableProxy(pg_oracle.port)
    proxied = url.replace(f":{pg_oracle.port}/", f":{proxy.port}/")
    assert proxied != url
    data_dir = tmp_path / "data"
    leader = _gateway(data_dir, proxied)
    follower = _gateway(data_dir, url)
    try:
        with psycopg.connect(leader.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE fence_t (id int)")
            conn.execute("INSERT INTO fence_t VALUES (1)")
        frozen_at = time.monotonic()
        proxy.frozen.set()
        with psycopg.connect(follower.dsn, autocommit=True) as conn:
            while leader.proc.poll() is None:
                assert time.monotonic() - frozen_at < FENCE_S + 10, "the gateway went on without its lock"
                assert _leads(follower) == 0, "the follower led while the leader still ran"
                assert conn.execute("SELECT id FROM fence_t").fetchall() == [(1,)]  # it serves meanwhile
                time.sleep(0.2)
        assert leader.proc.returncode == 3
        deadline = time.monotonic() + 5
        while not any("could not confirm" in line for line in leader.log):
            assert time.monotonic() < deadline, "\n".join(leader.log[-20:])
            time.sleep(0.1)
        assert _leads(follower) == 0
        proxy.cut()  # the database notices the dead gateway's connections end
        follower.wait_for_line("tidegate leader:", timeout=30)
        with psycopg.connect(follower.dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO fence_t VALUES (2)")
            assert conn.execute("SELECT id FROM fence_t ORDER BY id").fetchall() == [(1,), (2,)]
            assert [r[2] for r in conn.execute("SHOW GATEWAYS")] == ["leader"]
    finally:
        proxy.cut()
        leader.stop()
        follower.stop()


def test_an_embedded_catalog_has_one_gateway(tidegate: TidegateServer) -> None:
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT gateway_id, address, role FROM information_schema.gateways").fetchall() == [
            (f"pid {tidegate.proc.pid}@{socket.gethostname()[:24]}", f"127.0.0.1:{tidegate.port}", "leader")]
        cur = conn.execute("SHOW GATEWAYS")
        assert [d.name for d in cur.description] == ["gateway_id", "address", "role", "started", "last_heartbeat", "owns"]
        assert [(r[1], r[2]) for r in cur.fetchall()] == [(f"127.0.0.1:{tidegate.port}", "leader")]
