"""Streaming flows: freshness under load, windowed-aggregation throughput, queries next to 10 flows.

Measures, through the wire against one gateway:
  1. freshness: a streaming projection flow while --rate rows/s (default 10k) are inserted for
     --seconds; for every acknowledged INSERT, the time until its last row is visible in the sink
     (polled every 50 ms, no ADMIN FLUSH_FLOW): p50 (target <= 1 s) and p99 (target <= 2 s);
  2. throughput: a streaming windowed aggregation (count/sum per 10 s window) while rows are
     loaded with COPY as fast as the gateway takes them for --seconds; source rows per second
     folded into the sink (from the first load to the sink holding every row; target >= 100k/s)
     and the freshness p99 of each COPY (target <= 5 s);
  3. SELECT p50 on a small table with the gateway idle vs with 10 streaming flows running over a
     source receiving 1k rows/s (target: within 1.5x of idle).

Usage: python bench/flows_streaming.py [--seconds S] [--rate R]
"""

from __future__ import annotations

import io
import statistics
import threading
import time
from datetime import datetime, timedelta

import _common as C  # noqa: N812  (run as a script from bench/)
import psycopg

BASE = datetime(2024, 1, 1)
TARGET_P50_S = 1.0
TARGET_P99_S = 2.0
TARGET_THROUGHPUT = 100_000
TARGET_THROUGHPUT_P99_S = 5.0
TARGET_SELECT_RATIO = 1.5
N_FLOWS = 10


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def wait_flow_ready(conn: psycopg.Connection, flow: str, warm: str | None = None) -> None:
    """Wait for the backfill, then run a few small micro-batches (``warm`` inserts) so the
    measurement sees the steady state, not the first batches' Python worker and JIT start-up."""
    conn.execute(f"ADMIN FLUSH_FLOW('{flow}')")
    for k in range(3 if warm else 0):
        conn.execute(warm.format(k=k, neg=-1 - k))
        conn.execute(f"ADMIN FLUSH_FLOW('{flow}')")


def freshness_bench(tg, seconds: float, rate: int, report: C.Report) -> None:
    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE fresh_src (id bigint, ts timestamp TIME INDEX, v double precision, PRIMARY KEY (id))")
        conn.execute("CREATE FLOW fresh_flow SINK TO fresh_sink WITH (flow_type = 'streaming') AS "
                     "SELECT id, ts, v FROM fresh_src WHERE v >= 0")
        conn.execute("INSERT INTO fresh_src VALUES (0, '2024-01-01', 0)")
        wait_flow_ready(conn, "fresh_flow", "INSERT INTO fresh_src VALUES ({neg}, '2023-12-31', 0)")
    acked: list[tuple[int, float]] = []  # (last id of an INSERT, ack time)
    lock = threading.Lock()
    stop = threading.Event()
    per_stmt = max(1, rate // 10)  # 10 INSERTs a second

    def writer() -> None:
        next_id = 1
        with psycopg.connect(tg.dsn, autocommit=True) as wconn:
            started = time.monotonic()
            k = 0
            while not stop.is_set():
                ids = range(next_id, next_id + per_stmt)
                values = ",".join(f"({i}, '{(BASE + timedelta(milliseconds=i)).isoformat(sep=' ')}', {i % 100})"
                                  for i in ids)
                wconn.execute(f"INSERT INTO fresh_src VALUES {values}")
                with lock:
                    acked.append((ids[-1], time.monotonic()))
                next_id += per_stmt
                k += 1
                delay = started + k * 0.1 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)

    seen: dict[int, float] = {}

    def poller() -> None:
        with psycopg.connect(tg.dsn, autocommit=True) as pconn:
            while not stop.is_set() or len(seen) < len(acked):
                top = pconn.execute("SELECT max(id) FROM fresh_sink").fetchone()[0] or 0
                now = time.monotonic()
                with lock:
                    pending = [(i, t) for i, t in acked if i not in seen]
                for i, _t in pending:
                    if i <= top:
                        seen[i] = now
                if stop.is_set() and time.monotonic() > stop_at[0] + 60:
                    return
                time.sleep(0.05)

    stop_at = [0.0]
    w = threading.Thread(target=writer, daemon=True)
    p = threading.Thread(target=poller, daemon=True)
    w.start()
    p.start()
    time.sleep(seconds)
    stop.set()
    stop_at[0] = time.monotonic()
    w.join(30)
    p.join(90)
    lat = [seen[i] - t for i, t in acked if i in seen]
    achieved = len(acked) * per_stmt / seconds
    p50, p99 = pct(lat, 50), pct(lat, 99)
    report.add("insert rate achieved (rows/s)", {"tidegate": achieved}, f">= {rate:,}", achieved >= rate * 0.9)
    report.add("freshness p50 (s)", {"tidegate": p50}, f"<= {TARGET_P50_S}", p50 is not None and p50 <= TARGET_P50_S)
    report.add("freshness p99 (s)", {"tidegate": p99}, f"<= {TARGET_P99_S}", p99 is not None and p99 <= TARGET_P99_S,
               note=f"{len(lat)} of {len(acked)} INSERTs seen in the sink")
    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        conn.execute("DROP FLOW fresh_flow")


def throughput_bench(tg, seconds: float, report: C.Report) -> None:
    window = "date_bin(INTERVAL '10 seconds', ts, '2000-01-01 00:00:00'::timestamp)"
    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tp_src (host text, ts timestamp, v double precision)")
        conn.execute(f"CREATE FLOW tp_flow SINK TO tp_sink WITH (flow_type = 'streaming') AS "
                     f"SELECT {window} AS w, count(*) AS c, sum(v) AS s FROM tp_src GROUP BY w")
        wait_flow_ready(conn, "tp_flow", "INSERT INTO tp_src VALUES ('warm', '2023-12-31 00:00:0{k}', 0)")
    chunk = 50_000
    loaded = 0
    acked: list[tuple[int, float]] = []
    stop = threading.Event()
    seen: dict[int, float] = {}

    def poller() -> None:
        with psycopg.connect(tg.dsn, autocommit=True) as pconn:
            deadline = None
            while True:
                total = pconn.execute("SELECT coalesce(sum(c), 0) FROM tp_sink WHERE w >= '2024-01-01'").fetchone()[0]
                now = time.monotonic()
                for n, _t in list(acked):
                    if n not in seen and total >= n:
                        seen[n] = now
                if stop.is_set():
                    deadline = deadline or now + 120
                    if len(seen) == len(acked) or now > deadline:
                        return
                time.sleep(0.1)

    p = threading.Thread(target=poller, daemon=True)
    p.start()
    started = time.monotonic()
    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        while time.monotonic() - started < seconds:
            buf = io.StringIO()
            for i in range(loaded, loaded + chunk):
                buf.write(f"h{i % 50}\t{(BASE + timedelta(milliseconds=i)).isoformat(sep=' ')}\t{i % 100}\n")
            with conn.cursor().copy("COPY tp_src FROM STDIN") as cp:
                cp.write(buf.getvalue())
            loaded += chunk
            acked.append((loaded, time.monotonic()))
    load_s = time.monotonic() - started
    stop.set()
    p.join(200)
    done = seen.get(loaded)
    rate = loaded / (done - started) if done else None
    lat = [seen[n] - t for n, t in acked if n in seen]
    p99 = pct(lat, 99)
    report.add("windowed agg throughput (rows/s)", {"tidegate": rate}, f">= {TARGET_THROUGHPUT:,}",
               rate is not None and rate >= TARGET_THROUGHPUT,
               note=f"{loaded:,} rows loaded by COPY in {load_s:.1f} s ({loaded / load_s:,.0f} rows/s offered)")
    report.add("windowed agg freshness p99 (s)", {"tidegate": p99}, f"<= {TARGET_THROUGHPUT_P99_S}",
               p99 is not None and p99 <= TARGET_THROUGHPUT_P99_S)
    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        conn.execute("DROP FLOW tp_flow")


def select_bench(tg, report: C.Report) -> None:
    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE sel_small (id int, name text)")
        conn.execute("INSERT INTO sel_small VALUES " + ",".join(f"({i}, 'n{i}')" for i in range(100)))
        query = "SELECT id, name FROM sel_small WHERE id < 50 ORDER BY id"
        idle = C.p50_ms(lambda: conn.execute(query).fetchall(), n=60, warmup=10)
        conn.execute("CREATE TABLE sel_src (id bigint, ts timestamp TIME INDEX, v double precision, PRIMARY KEY (id))")
        for k in range(N_FLOWS):
            conn.execute(f"CREATE FLOW sel_flow{k} SINK TO sel_sink{k} WITH (flow_type = 'streaming') AS "
                         f"SELECT id, ts, v FROM sel_src WHERE v >= {k}")
        stop = threading.Event()

        def writer() -> None:
            i = 0
            with psycopg.connect(tg.dsn, autocommit=True) as wconn:
                while not stop.is_set():
                    values = ",".join(f"({j}, '{(BASE + timedelta(milliseconds=j)).isoformat(sep=' ')}', {j % 20})"
                                      for j in range(i, i + 100))
                    wconn.execute(f"INSERT INTO sel_src VALUES {values}")
                    i += 100
                    time.sleep(0.1)

        w = threading.Thread(target=writer, daemon=True)
        w.start()
        for k in range(N_FLOWS):
            conn.execute(f"ADMIN FLUSH_FLOW('sel_flow{k}')")
        busy = C.p50_ms(lambda: conn.execute(query).fetchall(), n=60, warmup=10)
        stop.set()
        w.join(10)
        ratio = busy / idle if idle else None
        report.add("SELECT p50 idle (ms)", {"tidegate": idle}, "", None)
        report.add(f"SELECT p50 with {N_FLOWS} streaming flows (ms)", {"tidegate": busy},
                   f"<= {TARGET_SELECT_RATIO}x idle", ratio is not None and ratio <= TARGET_SELECT_RATIO,
                   note=f"ratio {ratio:.2f}" if ratio is not None else "")
        for k in range(N_FLOWS):
            conn.execute(f"DROP FLOW sel_flow{k}")


def main() -> None:
    def extra(p) -> None:
        p.add_argument("--seconds", type=float, default=30.0, help="load phase length (default 30 s)")
        p.add_argument("--rate", type=int, default=10_000, help="insert rate of the freshness phase (rows/s)")
        p.add_argument("--skip", choices=["freshness", "throughput", "select"], action="append", default=[])

    args = C.parse_args(__doc__.split("\n")[0], 0, extra)
    report = C.Report("flows (streaming)", ["tidegate"])
    with C.servers(only="tidegate") as started:
        tg = started["tidegate"]
        if "freshness" not in args.skip:
            freshness_bench(tg, args.seconds, args.rate, report)
        if "throughput" not in args.skip:
            throughput_bench(tg, args.seconds, report)
        if "select" not in args.skip:
            select_bench(tg, report)
    report.print()


if __name__ == "__main__":
    main()
