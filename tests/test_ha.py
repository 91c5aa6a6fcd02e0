"""Two gateways on one PostgreSQL catalog and one data directory: the active one is killed with
SIGKILL at random moments while clients write, a flow runs, a refresh is scheduled and a job runs;
the standby takes over each time and the killed one comes back as the next standby (issue 21).

Afterwards every acknowledged row is present once, the flow's sink equals a recomputation of its
query, the refreshed table equals its source and the job's rows were written once.
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


def _gateway(data_dir: Path, url: str, port: int | None = None, standby: bool = False) -> TidegateServer:
    return start_tidegate(data_dir, port=port, extra_args=["--catalog", url], standby=standby, timeout=60)


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


def test_kill9_of_the_active_gateway_loses_nothing_and_does_nothing_twice(pg_oracle, tmp_path: Path) -> None:
    url = create_database(pg_oracle.url, f"tg_ha_{int(time.time() * 1000) % 10**9}")
    data_dir = tmp_path / "data"
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.csv").write_text("id,v\n" + "".join(f"{i},{i * 3}\n" for i in range(1, 501)))
    active = _gateway(data_dir, url)
    standby = _gateway(data_dir, url, standby=True)
    gateways = [active, standby]
    dsn = (f"host=127.0.0.1,127.0.0.1 port={active.port},{standby.port} user=tidegate dbname=tidegate")
    stop = threading.Event()
    writers: list[Writer] = []
    try:
        active.wait_for_spark()
        with psycopg.connect(active.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE ha_rows (id bigint PRIMARY KEY, writer int, ts timestamp)")
            conn.execute("CREATE TABLE ha_job_out (id bigint, v text)")
            conn.execute("CREATE FLOW ha_flow SINK TO ha_sink EVAL INTERVAL '1 s' AS SELECT writer, "
                         "date_bin(INTERVAL '1 hour', ts, '2000-01-01 00:00:00'::timestamp) AS w, count(*) AS n, "
                         "min(id) AS lo FROM ha_rows GROUP BY writer, w")
            conn.execute(f"CREATE TABLE ha_ref (id int PRIMARY KEY, v int) WITH (connector = 'file', "
                         f"path = '{source}', match_pattern = '*.csv', refresh_mode = 'FULL_RELOAD', "
                         f"refresh_interval_sec = '1') FORMAT PLAIN ENCODE CSV (without_header = 'false')")
            conn.execute("SUBMIT JOB ha_job AS INSERT INTO ha_job_out "
                         "SELECT g, 'row ' || g FROM generate_series(1, 2000000) g")
        writers = [Writer(dsn, w, stop) for w in range(1, WRITERS + 1)]
        for w in writers:
            w.start()
        takeovers = []
        for round_ in range(ROUNDS):
            time.sleep(random.uniform(1.5, 4.0))
            # the source changes while gateways come and go: the refreshed table must follow it
            (source / "a.csv").write_text("id,v\n" + "".join(f"{i},{i * 3 + round_}\n" for i in range(1, 501 + round_)))
            active.kill9()
            takeovers.append(standby.wait_listening(timeout=60))
            active, standby = standby, _gateway(data_dir, url, port=active.port, standby=True)
            gateways.append(standby)
        time.sleep(2)
        stop.set()
        for w in writers:
            w.join(30)
        assert all(not w.errors for w in writers), [w.errors[:3] for w in writers]
        acked = {k for w in writers for k in w.acked}
        unsure = {k for w in writers for k in w.unsure}
        assert len(acked) > 50 and len(takeovers) == ROUNDS

        with psycopg.connect(active.dsn, autocommit=True) as conn:
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

            # the gateways of the catalog: this one active, the last one killed back as standby
            shown = conn.execute("SHOW GATEWAYS").fetchall()
            listed = conn.execute("SELECT gateway_id, address, role, owns <> '', last_heartbeat >= started "
                                  "FROM information_schema.gateways ORDER BY role").fetchall()
            assert [(r[1], r[2]) for r in shown] == [(r[1], r[2]) for r in listed]
            assert [(r[1], r[2], r[3], r[4]) for r in listed] == [
                (f"127.0.0.1:{active.port}", "active", True, True), (f"127.0.0.1:{standby.port}", "standby", False, True)]
            assert listed[0][0] == f"pid {active.proc.pid}@{socket.gethostname()[:24]}"

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
        for g in gateways:
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


def test_a_gateway_that_cannot_confirm_its_lock_exits_before_the_standby_takes_over(pg_oracle, tmp_path: Path) -> None:
    """The catalog database stops answering the active gateway (its connections stay open): the
    gateway exits within catalog.active.FENCE_S and some, and the standby takes over only once
    the database ends the dead gateway's connections, never while it still runs."""
    from catalog.active import FENCE_S

    url = create_database(pg_oracle.url, f"tg_ha_fence_{int(time.time() * 1000) % 10**9}")
    proxy = FreezableProxy(pg_oracle.port)
    proxied = url.replace(f":{pg_oracle.port}/", f":{proxy.port}/")
    assert proxied != url
    data_dir = tmp_path / "data"
    active = _gateway(data_dir, proxied)
    standby = _gateway(data_dir, url, standby=True)
    try:
        with psycopg.connect(active.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE fence_t (id int)")
            conn.execute("INSERT INTO fence_t VALUES (1)")
        frozen_at = time.monotonic()
        proxy.frozen.set()
        while active.proc.poll() is None:
            assert time.monotonic() - frozen_at < FENCE_S + 10, "the gateway went on without its lock"
            with pytest.raises(OSError):  # the standby waits meanwhile
                socket.create_connection(("127.0.0.1", standby.port), timeout=0.2).close()
            time.sleep(0.2)
        assert active.proc.returncode == 3
        deadline = time.monotonic() + 5
        while not any("could not confirm the catalog's lock" in line for line in active.log):
            assert time.monotonic() < deadline, "\n".join(active.log[-20:])
            time.sleep(0.1)
        proxy.cut()  # the database notices the dead gateway's connections end
        standby.wait_listening(timeout=30)
        with psycopg.connect(standby.dsn, autocommit=True) as conn:
            assert conn.execute("SELECT id FROM fence_t").fetchall() == [(1,)]
    finally:
        proxy.cut()
        active.stop()
        standby.stop()


def test_an_embedded_catalog_has_one_gateway(tidegate: TidegateServer) -> None:
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT gateway_id, address, role FROM information_schema.gateways").fetchall() == [
            (f"pid {tidegate.proc.pid}@{socket.gethostname()[:24]}", f"127.0.0.1:{tidegate.port}", "active")]
        cur = conn.execute("SHOW GATEWAYS")
        assert [d.name for d in cur.description] == ["gateway_id", "address", "role", "started", "last_heartbeat", "owns"]
        assert [(r[1], r[2]) for r in cur.fetchall()] == [(f"127.0.0.1:{tidegate.port}", "active")]
