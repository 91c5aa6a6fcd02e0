"""Take-over after SIGKILL: how long a standby gateway needs to serve in place of the active one.

Two gateways on one PostgreSQL catalog and one data directory (catalog.active): the active one is
killed with SIGKILL, then the time until the standby accepts connections, answers a primary-key
lookup, an INSERT, and a query that runs on Spark, each measured from the kill. The killed
gateway comes back as the next standby and the round repeats once its Spark is warm. Target
(issue 21): every client served again within 15 s of the kill (p99).

Throughput through two gateways is not measured: one gateway is active at a time, so a second
one adds availability, not throughput (the issue's 1.6x target is not reached; docs/DEPLOYMENT.md).

    python bench/ha.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402

from tests.catalog_db import create_database  # noqa: E402
from tests.pgoracle import start_postgres  # noqa: E402
from tests.tidegate_server import TidegateServer, start_tidegate  # noqa: E402

TARGET_S = 15.0


def _gateway(data_dir: Path, url: str, port: int | None = None, standby: bool = False) -> TidegateServer:
    return start_tidegate(data_dir, port=port, extra_args=["--catalog", url], standby=standby, timeout=120)


def _until(dsn: str, sql: str, started: float, params: tuple = ()) -> float:
    """Seconds from ``started`` until ``sql`` succeeds on a fresh connection."""
    while True:
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=2) as conn:
                conn.execute(sql, params)
                return time.monotonic() - started
        except psycopg.Error:
            time.sleep(0.02)


def _warm(server: TidegateServer, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not any("Delta Lake's Spark connector warmed" in line for line in server.log):
        if time.monotonic() > deadline:
            raise RuntimeError("the standby's Spark did not warm:\n" + "\n".join(server.log[-30:]))
        time.sleep(0.2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    pg = start_postgres()
    url = create_database(pg.url, f"tg_bench_ha_{int(time.time())}")
    data_dir = Path(tempfile.mkdtemp(prefix="bench-ha-")) / "data"
    active = _gateway(data_dir, url)
    standby = _gateway(data_dir, url, standby=True)
    gateways = [active, standby]
    rows: dict[str, list[float]] = {"accepts connections": [], "primary-key lookup": [], "INSERT": [],
                                    "Spark query": []}
    try:
        active.wait_for_spark()
        with psycopg.connect(active.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE kv (id bigint PRIMARY KEY, v text)")
            conn.execute("INSERT INTO kv SELECT g, 'v' || g FROM generate_series(1, 100000) g")
        _warm(standby)
        for n in range(args.rounds):
            killed = time.monotonic()
            active.kill9()
            rows["accepts connections"].append(standby.wait_listening(timeout=120))
            rows["primary-key lookup"].append(_until(standby.dsn, "SELECT v FROM kv WHERE id = 5", killed))
            rows["INSERT"].append(_until(standby.dsn, "INSERT INTO kv VALUES (%s, 'new')", killed, (200000 + n,)))
            rows["Spark query"].append(_until(
                standby.dsn, "SELECT count(*) FROM kv a JOIN kv b ON a.id = b.id WHERE a.v <> b.v", killed))
            active, standby = standby, _gateway(data_dir, url, port=active.port, standby=True)
            gateways.append(standby)
            _warm(standby)
        print(f"take-over after SIGKILL of the active gateway, {args.rounds} rounds (seconds from the kill)")
        print(f"{'served again':24} {'p50':>7} {'max':>7} {'target':>7}")
        for label, times in rows.items():
            print(f"{label:24} {statistics.median(times):7.2f} {max(times):7.2f} {TARGET_S:7.1f}")
        print("throughput through 2 gateways vs 1: not applicable (one active gateway; target 1.6x not reached)")
    finally:
        for g in gateways:
            g.stop()
        pg.stop()


if __name__ == "__main__":
    main()
