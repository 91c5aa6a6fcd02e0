"""Cancel-to-idle: how long after a client's cancel the server stops working on the statement.

tidegate: a cross join count over generate_series runs on Spark; after psycopg's cancel the
client's error time is printed, then the time until Spark's status REST API shows no running job,
no active stage and no running task. A 4-way cross join count of a 1,000-row table is the second
query: its tasks never look at their kill flag, and engine.reaper stops them after its grace
(3 s). PostgreSQL: the same queries (and pg_sleep) cancelled the same way, then the time until
pg_stat_activity shows the backend idle. Target: Spark idle within 1 s of the cancel, and within
the reaper's grace plus 1 s for tasks deaf to it.

    python bench/cancel.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402

from tests.pgoracle import free_port, start_postgres  # noqa: E402
from tests.tidegate_server import start_tidegate  # noqa: E402

QUERY = ("SELECT count(*) FROM generate_series(1, 200000) a CROSS JOIN generate_series(1, 200000) b "
         "WHERE a.a + b.b > 3")
DEAF = "SELECT count(*) FROM bc a CROSS JOIN bc b CROSS JOIN bc c CROSS JOIN bc d"


def _rest(ui: int, path: str) -> list[dict]:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui}/api/v1/{path}", timeout=30) as r:
        return json.loads(r.read())


def _cancel_round(dsn: str, query: str, busy, started) -> tuple[float, float]:
    """(seconds from cancel to the client's error, seconds from cancel to server idle)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        done: list[float] = []

        def run() -> None:
            try:
                conn.execute(query)
            except psycopg.errors.QueryCanceled:
                done.append(time.monotonic())

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.time() + 60
        while not started():
            if time.time() > deadline:
                raise RuntimeError("query did not start")
            time.sleep(0.05)
        time.sleep(1.0)
        t0 = time.monotonic()
        conn.cancel()
        while busy():
            time.sleep(0.02)
        idle = time.monotonic() - t0
        worker.join(60)
        if not done:
            raise RuntimeError("the query was not cancelled")
        return done[0] - t0, idle


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    ui = free_port()
    tg = start_tidegate(Path(tempfile.mkdtemp(prefix="bench-cancel-")) / "data",
                        extra_args=["--spark-conf", "spark.ui.enabled=true", "--spark-conf", f"spark.ui.port={ui}"],
                        timeout=120)
    pg = start_postgres()
    try:
        tg.wait_for_spark()
        app = _rest(ui, "applications")[0]["id"]

        def spark_stages() -> int:
            return len(_rest(ui, f"applications/{app}/stages?status=active"))

        def spark_busy() -> bool:
            return bool(spark_stages() or _rest(ui, f"applications/{app}/jobs?status=running")
                        or sum(e["activeTasks"] for e in _rest(ui, f"applications/{app}/executors")))

        def pg_busy(pattern: str):
            def check() -> bool:
                with psycopg.connect(pg.dsn, autocommit=True) as c:
                    return c.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                                     "AND query LIKE %s AND pid <> pg_backend_pid()", (pattern,)).fetchone()[0] > 0
            return check

        for dsn in (tg.dsn, pg.dsn):
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("DROP TABLE IF EXISTS bc")
                c.execute("CREATE TABLE bc (x int)")
                c.execute("INSERT INTO bc SELECT g FROM generate_series(1, 1000) g")
        rows = []
        for label, query in (("tidegate cross join count", QUERY), ("tidegate 4-way table cross join", DEAF)):
            runs = [_cancel_round(tg.dsn, query, spark_busy, lambda: spark_stages() > 0) for _ in range(args.rounds)]
            rows.append((label, runs))
        for label, query, pattern in (("postgres cross join count", QUERY, "%CROSS JOIN%"),
                                      ("postgres 4-way table cross join", DEAF, "%CROSS JOIN%"),
                                      ("postgres pg_sleep(60)", "SELECT pg_sleep(60)", "%pg_sleep%")):
            busy = pg_busy(pattern)
            rows.append((label, [_cancel_round(pg.dsn, query, busy, busy) for _ in range(args.rounds)]))
        print(f"{'':30} {'cancel->error p50':>18} {'cancel->idle p50':>17} {'idle max':>9}")
        for label, runs in rows:
            errs, idles = [r[0] for r in runs], [r[1] for r in runs]
            print(f"{label:30} {statistics.median(errs) * 1000:15.0f} ms {statistics.median(idles) * 1000:14.0f} ms"
                  f" {max(idles) * 1000:6.0f} ms")
    finally:
        tg.stop()
        pg.stop()


if __name__ == "__main__":
    main()
