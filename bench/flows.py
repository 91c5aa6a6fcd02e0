"""Batch flows: incremental window runs vs Spark doing the same work, and 20 flows under load.

Measures, through the wire against one gateway:
  1. a batch flow (per name and hour: count, sum) over an N-row source (default 1M rows, time
     ordered, loaded in 20 commits) with ONE dirty window: ADMIN FLUSH_FLOW time vs the time a
     direct PySpark session needs to compute that one window over the same Delta files
     (target <= 2x) and vs the flow's full recompute (its first run; target <= 0.2x);
  2. 20 batching flows on one gateway (the gateway's default cadence, 5 s) while 10k rows/s are
     inserted for --seconds:
     the insert rate achieved, the largest lag seen (rows not yet in every sink, in seconds of
     input) and the catch-up time after the inserts stop (target: lag and catch-up <= 10 s).

Usage: python bench/flows.py [--rows N] [--seconds S] [--rate R]
"""

from __future__ import annotations

import statistics
import threading
import time
from datetime import datetime, timedelta

import _common as C  # noqa: N812  (run as a script from bench/)
import psycopg

SRC = "bench_flow_src"
SINK = "bench_flow_sink"
FLOW = "bench_flow"
BASE = datetime(2024, 1, 1)
STEP_MS = 100  # source rows are 100 ms apart: 1M rows span ~28 hours
WINDOW = "date_bin(INTERVAL '1 hour', ts, '2000-01-01 00:00:00'::timestamp)"
# The same hourly window in Spark SQL (the origin above is hour-aligned).
SPARK_WINDOW = "timestamp_seconds(unix_seconds(CAST(ts AS TIMESTAMP)) DIV 3600 * 3600)"
FLOW_SQL = f"SELECT name, {WINDOW} AS w, count(*) AS n, sum(val) AS total FROM {SRC} GROUP BY name, w"
TARGET_WINDOW_RATIO = 2.0
TARGET_FULL_RATIO = 0.2
TARGET_LAG_S = 10.0
N_FLOWS = 20
# The gateway as a user starts it: flows without EVAL INTERVAL run on the default cadence (5 s).
GATEWAY_ENV: dict[str, str] = {}


def _line(i: int) -> str:
    ts = BASE + timedelta(milliseconds=i * STEP_MS)
    return f"{i}\tname-{i % 1000}\t{i * 0.5}\t{ts:%Y-%m-%d %H:%M:%S.%f}\n"


def load(conn: psycopg.Connection, table: str, lo: int, hi: int) -> None:
    data = "".join(_line(i) for i in range(lo, hi)).encode()
    with conn.cursor() as cur, cur.copy(f"COPY {table} (id, name, val, ts) FROM STDIN") as copy:
        copy.write(data)


def window_bench(tg: C.TidegateServer, rows: int, report: C.Report) -> None:
    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {SRC} (id bigint, name text, val double precision, ts timestamp)")
        chunk = max(1, rows // 20)
        for lo in range(0, rows, chunk):
            load(conn, SRC, lo, min(rows, lo + chunk))
        print(f"  loaded {rows:,} rows", flush=True)
        # Full recompute: the flow's first run (at creation); FLUSH returns once it is done.
        start = time.perf_counter()
        conn.execute(f"CREATE FLOW {FLOW} SINK TO {SINK} EVAL INTERVAL '1 hour' WITH (flow_type = 'batching') AS {FLOW_SQL}")
        conn.execute(f"ADMIN FLUSH_FLOW('{FLOW}')")
        full_s = time.perf_counter() - start
        groups = conn.execute(f"SELECT count(*) FROM {SINK}").fetchone()[0]
        # One dirty window: a row in hour 10, then flush (three times; median).
        hour = BASE + timedelta(hours=10)
        flush_s: list[float] = []
        for k in range(3):
            conn.execute(f"INSERT INTO {SRC} VALUES ({rows + k}, 'name-7', 1.0, '{hour + timedelta(seconds=k)}')")
            t0 = time.perf_counter()
            written = conn.execute(f"ADMIN FLUSH_FLOW('{FLOW}')").fetchone()[0]
            flush_s.append(time.perf_counter() - t0)
        flush_med = statistics.median(flush_s)
        location = C.table_path(tg, SRC)
    # The same window computed directly by Spark over the same Delta files.
    spark = C.spark_session("tidegate-bench-flows")
    try:
        lo, hi = hour, hour + timedelta(hours=1)
        full_sql = f"SELECT name, {SPARK_WINDOW} AS w, count(*) AS n, sum(val) AS total FROM src GROUP BY name, w"
        direct_sql = (f"SELECT name, {SPARK_WINDOW} AS w, count(*) AS n, sum(val) AS total FROM src "
                      f"WHERE ts >= TIMESTAMP_NTZ'{lo}' AND ts < TIMESTAMP_NTZ'{hi}' GROUP BY name, w")

        def run(sql: str) -> float:
            df = C.delta_dataframe(spark, location)
            df.createOrReplaceTempView("src")
            t0 = time.perf_counter()
            spark.sql(sql).toArrow()
            return time.perf_counter() - t0

        run(direct_sql)
        direct = statistics.median([run(direct_sql) for _ in range(3)])
        run(full_sql)
        direct_full = statistics.median([run(full_sql) for _ in range(2)])
    finally:
        spark.stop()
    report.add("one dirty window: FLUSH_FLOW s", {"tidegate": flush_med, "spark direct": direct},
               f"<= {TARGET_WINDOW_RATIO}x spark", flush_med <= TARGET_WINDOW_RATIO * direct,
               note=f"ratio {flush_med / direct:.2f}x; {written} sink rows written per flush; runs {['%.2f' % s for s in flush_s]}")
    report.add("full recompute s", {"tidegate": full_s, "spark direct": direct_full}, "",
               None, note=f"{groups:,} sink rows; the flow's first run incl. CREATE FLOW and the sink merge")
    report.add("dirty window / full recompute", {"tidegate": flush_med / full_s}, f"<= {TARGET_FULL_RATIO}",
               flush_med / full_s <= TARGET_FULL_RATIO)


def load_bench(tg: C.TidegateServer, seconds: float, rate: int, report: C.Report) -> None:
    table = "bench_flow_stream"
    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id bigint, name text, val double precision, ts timestamp)")
        for i in range(N_FLOWS):
            conn.execute(f"CREATE FLOW bench_load_{i} SINK TO bench_load_sink_{i} WITH (flow_type = 'batching') AS "
                         f"SELECT name, date_bin(INTERVAL '1 minute', ts, '2000-01-01 00:00:00'::timestamp) AS w, "
                         f"count(*) AS n, sum(val) AS total FROM {table} WHERE id % {N_FLOWS} = {i} GROUP BY name, w")
        union = " UNION ALL ".join(f"SELECT {i} AS f, coalesce(sum(n), 0) AS n FROM bench_load_sink_{i}"
                                   for i in range(N_FLOWS))
        inserted = 0
        lags: list[float] = []
        stop = threading.Event()

        def insert_loop() -> None:
            nonlocal inserted
            with psycopg.connect(tg.dsn, autocommit=True) as c:
                batch = max(1, rate // 10)
                started = time.perf_counter()
                while not stop.is_set():
                    due = started + inserted / rate
                    now = time.perf_counter()
                    if due > now:
                        time.sleep(due - now)
                    load(c, table, inserted, inserted + batch)
                    inserted += batch

        def reflected() -> int:
            with psycopg.connect(tg.dsn, autocommit=True) as c:
                return int(sum(r[1] for r in c.execute(union).fetchall()))

        writer = threading.Thread(target=insert_loop, daemon=True)
        t_start = time.perf_counter()
        writer.start()
        while time.perf_counter() - t_start < seconds:
            time.sleep(5)
            seen_at = inserted
            got = reflected()
            lags.append(max(0, seen_at - got) / rate)
        stop.set()
        writer.join()
        elapsed = time.perf_counter() - t_start
        total = inserted
        t_stop = time.perf_counter()
        while reflected() < total and time.perf_counter() - t_stop < 120:
            time.sleep(0.5)
        catch_up = time.perf_counter() - t_stop
        stats = conn.execute("SELECT count(*), sum(CASE WHEN last_error IS NULL THEN 0 ELSE 1 END) "
                             "FROM information_schema.flow_statistics WHERE flow_name LIKE 'bench_load_%'").fetchone()
    achieved = total / elapsed
    max_lag = max(lags) if lags else 0.0
    report.add("insert rate rows/s (20 flows)", {"tidegate": achieved}, f">= {rate:,}", achieved >= rate * 0.95)
    report.add("max lag during load s", {"tidegate": max_lag}, f"<= {TARGET_LAG_S}", max_lag <= TARGET_LAG_S,
               note=f"samples every 5 s: {['%.1f' % x for x in lags]}")
    report.add("catch-up after load s", {"tidegate": catch_up}, f"<= {TARGET_LAG_S}", catch_up <= TARGET_LAG_S,
               note=f"{stats[0]} flows, {stats[1]} with an error")


def main() -> None:
    def extra(p) -> None:
        p.add_argument("--seconds", type=float, default=60.0, help="load phase length (default 60 s)")
        p.add_argument("--rate", type=int, default=10_000, help="insert rate of the load phase (rows/s)")

    args = C.parse_args(__doc__.split("\n")[0], 1_000_000, extra)
    report = C.Report("flows (batch)", ["tidegate", "spark direct"])
    with C.servers(only="tidegate", env=GATEWAY_ENV) as started:
        tg = started["tidegate"]
        window_bench(tg, args.rows, report)
        load_bench(tg, args.seconds, args.rate, report)
    report.print()


if __name__ == "__main__":
    main()
