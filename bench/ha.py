"""Several gateways on one PostgreSQL catalog: take-over after SIGKILL, and inserts through two
gateways against one (issue 21), side by side with the targets, in one run.

Take-over. Two gateways on one catalog and one data directory (catalog.active), both serving; the
leader is killed with SIGKILL, then from the kill: a client whose host list names the killed
gateway first is served again (a primary-key lookup, an INSERT), the follower leads (SHOW
GATEWAYS), and a row inserted after the kill reaches a flow's sink (the flows run again). Then a
gateway running a job is killed: the time until the other gateway runs the job. Each killed
gateway comes back as a follower and the round repeats once its Spark is warm. Target: p99 within
15 s of the kill.

Throughput. Clients insert rows (INSERT ... VALUES of ``--batch`` rows, autocommit) into two
tables for ``--seconds``: all through one gateway, then each table's clients through a gateway of
its own. Target: two gateways >= 1.6x one; every acknowledged row is stored once. Measured twice:
the gateways sharing the host's cores, and each gateway (with its JVM) held to a core of its own,
as gateways on separate hosts are (the one-gateway run then has one core); the gateways' CPU use
in the one-gateway run says how much of the host one gateway already takes.

    python bench/ha.py [--rounds 3] [--seconds 20] [--clients 4] [--batch 20]   (--rounds 0: throughput only)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402

from tests.catalog_db import create_database  # noqa: E402
from tests.pgoracle import start_postgres  # noqa: E402
from tests.tidegate_server import TidegateServer, start_tidegate  # noqa: E402

TARGET_S = 15.0
TARGET_SCALE = 1.6


def _gateway(data_dir: Path, url: str, port: int | None = None) -> TidegateServer:
    return start_tidegate(data_dir, port=port, extra_args=["--catalog", url], timeout=120)


def _until(dsn: str, sql: str, started: float, params: tuple = (), expect: object = None) -> float:
    """Seconds from ``started`` until ``sql`` succeeds on a fresh connection (and, with
    ``expect``, its first row equals it)."""
    while True:
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=2) as conn:
                row = conn.execute(sql, params).fetchone() if expect is not None else conn.execute(sql, params)
                if expect is None or row == expect:
                    return time.monotonic() - started
        except psycopg.Error:
            pass
        time.sleep(0.02)


def _warm(server: TidegateServer, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not any("Delta Lake's Spark connector warmed" in line for line in server.log):
        if time.monotonic() > deadline:
            raise RuntimeError("the gateway's Spark did not warm:\n" + "\n".join(server.log[-30:]))
        time.sleep(0.2)


def _leads(server: TidegateServer) -> int:
    return sum(1 for line in list(server.log) if line.startswith("tidegate leader:"))


def takeover(url: str, rounds: int) -> dict[str, list[float]]:
    data_dir = Path(tempfile.mkdtemp(prefix="bench-ha-")) / "data"
    leader = _gateway(data_dir, url)
    follower = _gateway(data_dir, url)
    gateways = [leader, follower]
    rows: dict[str, list[float]] = {"client served (PK lookup)": [], "client served (INSERT)": [],
                                    "follower leads": [], "flow sink has the new row": [],
                                    "job runs on the other gateway": []}
    try:
        leader.wait_for_spark()
        with psycopg.connect(leader.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE kv (id bigint PRIMARY KEY, v text)")
            conn.execute("INSERT INTO kv SELECT g, 'v' || g FROM generate_series(1, 100000) g")
            conn.execute("CREATE TABLE ticks (ts timestamp TIME INDEX, v int)")
            conn.execute("CREATE TABLE job_out (id bigint)")
            conn.execute("CREATE FLOW tick_count SINK TO tick_sink EVAL INTERVAL '1 s' AS "
                         "SELECT count(*) AS n FROM ticks")
        _warm(follower)
        for n in range(rounds):
            both = f"host=127.0.0.1,127.0.0.1 port={leader.port},{follower.port} user=tidegate dbname=tidegate"
            leads = _leads(follower)
            killed = time.monotonic()
            leader.kill9()
            rows["client served (PK lookup)"].append(_until(both, "SELECT v FROM kv WHERE id = 5", killed))
            rows["client served (INSERT)"].append(
                _until(both, "INSERT INTO kv VALUES (%s, 'new')", killed, (200000 + n,)))
            with psycopg.connect(follower.dsn, autocommit=True) as conn:
                conn.execute("INSERT INTO ticks VALUES (now()::timestamp, %s)", (n,))
            while _leads(follower) == leads:
                time.sleep(0.02)
            rows["follower leads"].append(time.monotonic() - killed)
            rows["flow sink has the new row"].append(
                _until(follower.dsn, "SELECT n FROM tick_sink", killed, expect=(n + 1,)))
            leader, follower = follower, _gateway(data_dir, url, port=leader.port)
            gateways.append(follower)
            _warm(follower)
            # a job running on one gateway, which is killed: the other runs it
            with psycopg.connect(leader.dsn, autocommit=True) as conn:
                job = conn.execute("SUBMIT JOB AS INSERT INTO job_out SELECT g FROM generate_series(1, 30000000) g"
                                   ).fetchone()[0]
                while True:
                    row = conn.execute("SELECT status, gateway FROM information_schema.jobs WHERE job_id = %s",
                                       (job,)).fetchone()
                    if row[0] == "RUNNING" and row[1]:
                        break
                    time.sleep(0.05)
            runner, other = (leader, follower) if row[1].endswith(f":{leader.port}") else (follower, leader)
            leads = _leads(other)
            killed = time.monotonic()
            runner.kill9()
            rows["job runs on the other gateway"].append(_until(
                other.dsn, "SELECT status, gateway FROM information_schema.jobs WHERE job_id = %s", killed,
                (job,), expect=("RUNNING", f"127.0.0.1:{other.port}")))
            with psycopg.connect(other.dsn, autocommit=True) as conn:
                conn.execute("CANCEL JOB %s", (job,))
            if runner is leader:  # the other one leads now
                while _leads(other) == leads:
                    time.sleep(0.05)
            back = _gateway(data_dir, url, port=runner.port)  # a follower
            gateways.append(back)
            leader, follower = other, back
            _warm(back)
    finally:
        for g in gateways:
            g.stop()
    return rows


def _insert_load(targets: list[tuple[str, str]], clients: int, seconds: float, batch: int) -> tuple[float, dict]:
    """Clients per (dsn, table) inserting batches for ``seconds``: rows/s and the keys acknowledged."""
    acked: dict[str, list[int]] = {table: [] for _, table in targets}
    stop = threading.Event()

    def run(dsn: str, table: str, number: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            n = 0
            while not stop.is_set():
                first = (number * 10_000_000) + n * batch
                values = ",".join(f"({first + i}, 'r')" for i in range(batch))
                conn.execute(f"INSERT INTO {table} VALUES {values}")
                acked[table].extend(range(first, first + batch))
                n += 1

    threads = [threading.Thread(target=run, args=(dsn, table, c)) for dsn, table in targets for c in range(clients)]
    started = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(120)
    elapsed = time.monotonic() - started
    return sum(len(v) for v in acked.values()) / elapsed, acked


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a gateway and its Spark JVM)."""
    parents: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                parents[int(d)] = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    tree, grew = {pid}, True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    return sorted(tree)


def _pin(server: TidegateServer, cpus: set[int]) -> None:
    """Run every thread of a gateway (and its JVM) on ``cpus`` only."""
    for pid in _tree(server.proc.pid):
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                os.sched_setaffinity(int(tid), cpus)
            except OSError:
                pass  # a thread that ended meanwhile


def _cpu_s(servers: list[TidegateServer]) -> float:
    """CPU seconds the gateways (with their JVMs) used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for server in servers:
        for pid in _tree(server.proc.pid):
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
            except (OSError, IndexError, ValueError):
                pass
    return total


def throughput(url: str, seconds: float, clients: int, batch: int) -> list[tuple[str, float, float, float, bool]]:
    """(layout, rows/s through one gateway, through two, gateways' CPU use in the one-gateway run
    in cores, every acknowledged row stored once) for the gateways sharing the host's cores, and
    for a core each (as two hosts would give them; the one-gateway run then has one core)."""
    data_dir = Path(tempfile.mkdtemp(prefix="bench-ha-tp-")) / "data"
    one = _gateway(data_dir, url)
    two = _gateway(data_dir, url)
    out = []
    try:
        one.wait_for_spark()
        _warm(two)
        cores = sorted(os.sched_getaffinity(0))
        for layout in ("sharing the host's cores", "a core each"):
            if layout == "a core each":
                if len(cores) < 2:
                    break
                _pin(one, {cores[0]})
                _pin(two, {cores[1]})
            lost = False
            rates, used = [], 0.0
            for label, dsns in (("one", (one.dsn, one.dsn)), ("two", (one.dsn, two.dsn))):
                tag = f"{label}_{len(out)}"
                tables = [f"tp_{tag}_a", f"tp_{tag}_b"]
                with psycopg.connect(one.dsn, autocommit=True) as conn:
                    for t in tables:
                        conn.execute(f"CREATE TABLE {t} (id bigint PRIMARY KEY, v text)")
                cpu, started = _cpu_s([one, two]), time.monotonic()
                rate, acked = _insert_load(list(zip(dsns, tables)), clients, seconds, batch)
                if label == "one":
                    used = (_cpu_s([one, two]) - cpu) / (time.monotonic() - started)
                rates.append(rate)
                with psycopg.connect(two.dsn, autocommit=True) as conn:
                    for t in tables:
                        stored = [r[0] for r in conn.execute(f"SELECT id FROM {t}")]
                        lost |= sorted(stored) != sorted(acked[t])
            out.append((layout, rates[0], rates[1], used, not lost))
        return out
    finally:
        two.stop()
        one.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--clients", type=int, default=4, help="clients per table")
    ap.add_argument("--batch", type=int, default=20, help="rows per INSERT")
    args = ap.parse_args()
    pg = start_postgres()
    try:
        stamp = int(time.time())
        rows = takeover(create_database(pg.url, f"tg_bench_ha_{stamp}"), args.rounds) if args.rounds else {}
        layouts = throughput(create_database(pg.url, f"tg_bench_tp_{stamp}"), args.seconds, args.clients,
                             args.batch)
    finally:
        pg.stop()
    if rows:
        print(f"take-over after SIGKILL, {args.rounds} rounds (seconds from the kill)")
        print(f"{'':32} {'p50':>7} {'max':>7} {'target':>7}")
    for label, times in rows.items():
        print(f"{label:32} {statistics.median(times):7.2f} {max(times):7.2f} {TARGET_S:7.1f}")
    print(f"\ninserts, {2 * args.clients} clients, {args.batch} rows per INSERT, a table per gateway "
          f"(host: {os.cpu_count()} cores)")
    print(f"{'gateways':26} {'one':>11} {'two':>11} {'ratio':>6} {'target':>6}  {'1 gw used':>9}  stored once")
    for layout, one, two, used, exact in layouts:
        print(f"{layout:26} {one:7.0f} r/s {two:7.0f} r/s {two / one:5.2f}x {TARGET_SCALE:5.1f}x  "
              f"{used:5.2f} cores  {'yes' if exact else 'NO'}")


if __name__ == "__main__":
    main()
