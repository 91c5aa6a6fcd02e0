"""Wire-level throughput and latency: tidegate vs PostgreSQL 15 vs direct Spark, side by side.

Measures, over one table of N rows (bigint, text, double precision, timestamp):
  - psycopg text and binary rows/s, asyncpg (binary) rows/s for ``SELECT *``, and the rate a raw
    socket drains the same result without decoding it (what the server itself delivers);
  - ``SELECT 1`` and an information_schema.columns query median latency (ms);
  - direct PySpark ``DataFrame.toArrow()`` rows/s over tidegate's own Delta files (the ceiling);
  - the gateway process's RSS growth while a client streams a 10×N-row result;
  - errors with 200 idle connections open and 20 connections running queries at once.

Usage: python bench/wire.py [--rows N] [--only postgres|tidegate|all]
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable

import _common as C  # noqa: N812  (run as a script from bench/)
import asyncpg
import psycopg

TABLE = "bench_wire"
# Targets are this project's own goals for a single 2-core machine (see bench/README.md).
# The targets of the gateway issue: large results through the gateway at >= 0.9x the rate Spark
# alone hands the same rows to Python as Arrow (text and binary), binary >= 0.9x PostgreSQL's
# asyncpg rate, SELECT 1 p50 <= 0.5 ms, catalog queries p50 <= 3 ms, 10M rows in < 500 MB.
TARGET_SPARK_RATIO = 0.9
TARGET_PG_BINARY_RATIO = 0.9
TARGET_SELECT1_MS = 0.5
TARGET_INFOSCHEMA_MS = 3.0
TARGET_RSS_MB = 500.0


def load_table(conn: C.Conn, rows: int) -> float:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        c.execute(f"DROP TABLE IF EXISTS {TABLE}")
        c.execute(f"CREATE TABLE {TABLE} (id bigint, name text, val double precision, ts timestamp)")
        seconds = C.copy_rows_text(c, TABLE, rows)
        count = c.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
        assert count == rows, f"{conn.name}: loaded {count} rows, expected {rows}"
    return seconds


RUNS = 3


def best_of(measure: Callable[[], float], runs: int = RUNS) -> float:
    """The best rate of ``runs`` timed runs after one untimed one."""
    measure()
    return max(measure() for _ in range(runs))


def psycopg_rows_per_s(conn: C.Conn, rows: int, binary: bool = False) -> float:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        cur = c.cursor(binary=binary)
        cur.execute(f"SELECT * FROM {TABLE} LIMIT 10").fetchall()  # warm plan/caches
        start = time.perf_counter()
        got = cur.execute(f"SELECT * FROM {TABLE}").fetchall()
        elapsed = time.perf_counter() - start
    assert len(got) == rows
    return rows / elapsed


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", 4 + len(body)) + body


def wire_drain_rows_per_s(conn: C.Conn, rows: int, binary: bool = False) -> float:
    """``SELECT *`` over a raw socket, read without looking at the rows.

    What the server delivers when the client costs nothing: psycopg and asyncpg spend as much
    CPU turning rows into Python objects as the server spends producing them, on the same 2 cores.
    Text results come from a simple Query; binary ones from Parse/Bind (every column binary)/
    Execute/Sync. The row count is the one CommandComplete reports.
    """
    sock = socket.create_connection((conn.host, conn.port))
    try:
        body = b"user\0" + conn.user.encode() + b"\0database\0" + conn.dbname.encode() + b"\0\0"
        sock.sendall(struct.pack("!ii", 8 + len(body), 196608) + body)
        reader = _MessageCounter(sock)
        reader.until_ready()  # trust authentication on loopback: straight to ReadyForQuery
        query = f"SELECT * FROM {TABLE}".encode() + b"\0"
        # The result ends with CommandComplete "SELECT <rows>" and ReadyForQuery: watching for
        # those bytes at the end of what arrived costs the client nothing per row (walking a
        # million DataRow headers in Python would cost it about 0.8 s of CPU).
        tag = f"SELECT {rows}".encode() + b"\0"
        end = b"C" + struct.pack("!i", 4 + len(tag)) + tag + b"Z\0\0\0\x05I"
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        tail = b""
        if binary:
            request = (_message(b"P", b"\0" + query + struct.pack("!h", 0))
                       + _message(b"B", b"\0\0" + struct.pack("!hhhh", 0, 0, 1, 1))
                       + _message(b"E", b"\0" + struct.pack("!i", 0)) + _message(b"S", b""))
        else:
            request = _message(b"Q", query)
        start = time.perf_counter()
        sock.sendall(request)
        while True:
            n = sock.recv_into(view)
            if not n:
                raise ConnectionError(f"{conn.name}: server closed the connection")
            tail = (tail + bytes(view[max(0, n - len(end)):n]))[-len(end):]
            if tail == end:
                break
            if tail.endswith(b"Z\0\0\0\x05I") and b"E" in bytes(view[max(0, n - 400):n]):
                raise RuntimeError(f"{conn.name}: {bytes(view[max(0, n - 400):n]).decode(errors='replace')}")
        elapsed = time.perf_counter() - start
    finally:
        sock.close()
    return rows / elapsed


class _MessageCounter:
    """Reads backend messages off a socket, counting DataRows, until ReadyForQuery."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def until_ready(self) -> int:
        rows = pos = 0
        while True:
            while len(self.buf) - pos < 5 or len(self.buf) - pos < 1 + int.from_bytes(self.buf[pos + 1:pos + 5], "big"):
                del self.buf[:pos]
                pos = 0
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    raise ConnectionError("server closed the connection")
                self.buf += chunk
            kind = self.buf[pos]
            if kind == ord("E"):
                raise RuntimeError(bytes(self.buf[pos:pos + 200]).decode(errors="replace"))
            rows += kind == ord("D")
            pos += 1 + int.from_bytes(self.buf[pos + 1:pos + 5], "big")
            if kind == ord("Z"):
                del self.buf[:pos]
                return rows


def asyncpg_rows_per_s(conn: C.Conn, rows: int) -> float:
    async def run() -> float:
        c = await asyncpg.connect(host=conn.host, port=conn.port, user=conn.user, database=conn.dbname)
        try:
            await c.fetch(f"SELECT * FROM {TABLE} LIMIT 10")
            start = time.perf_counter()
            got = await c.fetch(f"SELECT * FROM {TABLE}")
            elapsed = time.perf_counter() - start
        finally:
            await c.close()
        assert len(got) == rows
        return rows / elapsed
    return asyncio.run(run())


def latencies(conn: C.Conn) -> tuple[float, float]:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        select1 = C.p50_ms(lambda: c.execute("SELECT 1").fetchall(), n=300)
        info = C.p50_ms(lambda: c.execute(
            "SELECT column_name, data_type, is_nullable FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name = %s ORDER BY ordinal_position", (TABLE,)).fetchall(),
            n=100)
    return select1, info


def direct_spark_rows_per_s(tg: C.TidegateServer, rows: int) -> float:
    spark = C.spark_session("bench-wire")
    try:
        df = C.delta_dataframe(spark, C.table_path(tg, TABLE))
        def measure() -> float:
            start = time.perf_counter()
            table = df.toArrow()
            elapsed = time.perf_counter() - start
            assert table.num_rows == rows
            return rows / elapsed

        return best_of(measure)  # as every client rate: the best of RUNS after an untimed (warming) run
    finally:
        spark.stop()


def rss_growth_mb(tg: C.TidegateServer, rows: int, factor: int = 10,
                  stall_s: float = 60.0) -> tuple[float, int, str]:
    """Stream factor×rows rows through one connection; returns (peak RSS growth MB, rows seen, problem).

    A watchdog cancels the statement when no row arrives for ``stall_s`` seconds, so a stalled
    gateway shows up as a finding in the table instead of hanging the bench.
    """
    sql = f"SELECT w.id, w.name, w.val, w.ts, k FROM {TABLE} w CROSS JOIN generate_series(1, {factor}) AS k"
    seen = 0
    problem = ""
    last_progress = time.monotonic()
    done = threading.Event()
    with psycopg.connect(tg_conn_dsn(tg), autocommit=True) as c:
        c.execute("SELECT 1")

        def watchdog() -> None:
            nonlocal problem
            while not done.wait(1.0):
                if time.monotonic() - last_progress > stall_s:
                    problem = f"stalled: no row for {stall_s:.0f}s after {seen:,} rows; cancelled"
                    c.cancel_safe()
                    return

        guard = threading.Thread(target=watchdog, daemon=True)
        with C.RssSampler(tg.proc.pid) as sampler:
            guard.start()
            try:
                for _ in c.cursor().stream(sql, size=10_000):
                    seen += 1
                    if seen % 10_000 == 0:
                        last_progress = time.monotonic()
            except psycopg.Error as exc:
                problem = problem or f"{type(exc).__name__} after {seen:,} rows: {exc}"
            finally:
                done.set()
                guard.join()
    if problem:
        print(f"    streaming problem: {problem}")
        print("    gateway log tail:\n      " + "\n      ".join(tg.log[-25:]))
    return (sampler.peak_kb - sampler.baseline_kb) / 1024, seen, problem


def tg_conn_dsn(tg: C.TidegateServer) -> str:
    return C.tidegate_conn(tg).dsn


def connection_storm(conn: C.Conn, idle: int = 200, active: int = 20, queries: int = 25) -> tuple[int, float]:
    """Hold ``idle`` idle connections while ``active`` threads run queries; returns (errors, seconds)."""
    errors: list[str] = []
    lock = threading.Lock()
    held: list[psycopg.Connection] = []
    try:
        for _ in range(idle):
            try:
                held.append(psycopg.connect(conn.dsn, autocommit=True, connect_timeout=20))
            except psycopg.Error as exc:
                with lock:
                    errors.append(f"idle connect: {exc}")

        def worker(k: int) -> None:
            try:
                with psycopg.connect(conn.dsn, autocommit=True, connect_timeout=20) as c:
                    for i in range(queries):
                        if i % 5 == 0:
                            got = c.execute(f"SELECT count(*) FROM {TABLE} WHERE id %% 97 = %s", (k,)).fetchone()
                            assert got is not None
                        else:
                            assert c.execute("SELECT %s::int + 1", (i,)).fetchone() == (i + 1,)
            except Exception as exc:  # noqa: BLE001  (every failure is counted, whatever it is)
                with lock:
                    errors.append(f"worker {k}: {exc!r}")

        start = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(active)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        elapsed = time.perf_counter() - start
        for c in held:
            try:
                c.execute("SELECT 1")
            except psycopg.Error as exc:
                errors.append(f"idle reuse: {exc}")
    finally:
        for c in held:
            c.close()
    for e in errors[:5]:
        print(f"    {conn.name} error: {e}")
    return len(errors), elapsed


def main() -> None:
    args = C.parse_args(__doc__.splitlines()[0], default_rows=1_000_000)
    rows = args.rows
    report = C.Report(f"bench/wire.py — {rows:,} rows (bigint, text, double, timestamp)",
                      ["tidegate", "PostgreSQL 15", "direct Spark"])
    with C.servers(args.only) as started:
        conns = {}
        if "tidegate" in started:
            conns["tidegate"] = C.tidegate_conn(started["tidegate"])
        if "postgres" in started:
            conns["PostgreSQL 15"] = C.postgres_conn(started["postgres"])
        for label, conn in conns.items():
            print(f"loading {rows:,} rows into {label} ...", flush=True)
            load_table(conn, rows)

        # Every client figure is the best of RUNS after one untimed full run, on both servers, as
        # the direct-Spark figure is (a first full scan in a fresh JVM also pays for JIT compiling).
        vals = {label: best_of(lambda: psycopg_rows_per_s(conn, rows)) for label, conn in conns.items()}
        text = dict(vals)
        report.add("psycopg text rows/s", vals, f">= {TARGET_SPARK_RATIO} x direct Spark (below)", None)
        vals = {label: best_of(lambda: psycopg_rows_per_s(conn, rows, binary=True)) for label, conn in conns.items()}
        binary = dict(vals)
        report.add("psycopg binary rows/s", vals, f">= {TARGET_SPARK_RATIO} x direct Spark (below)", None)
        vals = {label: best_of(lambda: wire_drain_rows_per_s(conn, rows)) for label, conn in conns.items()}
        drained = dict(vals)
        report.add("raw socket drain rows/s (text, not decoded)", vals, "(what the server delivers)", None)
        vals = {label: best_of(lambda: wire_drain_rows_per_s(conn, rows, binary=True))
                for label, conn in conns.items()}
        drained_binary = dict(vals)
        report.add("raw socket drain rows/s (binary, not decoded)", vals, "(what the server delivers)", None)

        vals = {label: best_of(lambda: asyncpg_rows_per_s(conn, rows)) for label, conn in conns.items()}
        asyncpg_tg = vals.get("tidegate")
        asyncpg_pg = vals.get("PostgreSQL 15")
        asyncpg = dict(vals)
        report.add("asyncpg binary rows/s", vals, f">= {TARGET_PG_BINARY_RATIO} x PostgreSQL",
                   None if asyncpg_tg is None or asyncpg_pg is None
                   else asyncpg_tg >= TARGET_PG_BINARY_RATIO * asyncpg_pg)

        lat = {label: latencies(conn) for label, conn in conns.items()}
        s1 = {label: v[0] for label, v in lat.items()}
        report.add("SELECT 1 p50 ms", s1, f"<= {TARGET_SELECT1_MS}",
                   None if "tidegate" not in s1 else s1["tidegate"] <= TARGET_SELECT1_MS)
        info = {label: v[1] for label, v in lat.items()}
        report.add("information_schema.columns p50 ms", info, f"<= {TARGET_INFOSCHEMA_MS}",
                   None if "tidegate" not in info else info["tidegate"] <= TARGET_INFOSCHEMA_MS)

        if "tidegate" in started:
            tg = started["tidegate"]
            spark_rate = direct_spark_rows_per_s(tg, rows)

            def ratios(label: str) -> str:
                return ", ".join(f"{name} {figures[label] / spark_rate:.2f}"
                                 for name, figures in (("psycopg text", text), ("psycopg binary", binary),
                                                       ("asyncpg binary", asyncpg), ("raw drain text", drained),
                                                       ("raw drain binary", drained_binary))
                                 if label in figures)

            met = min(text["tidegate"], binary["tidegate"]) / spark_rate >= TARGET_SPARK_RATIO
            report.add("Spark toArrow rows/s (same Delta files)", {"direct Spark": spark_rate},
                       f"text and binary >= {TARGET_SPARK_RATIO} x this", met,
                       note=f"/ direct Spark: tidegate {ratios('tidegate')}"
                            + (f"; PostgreSQL 15 {ratios('PostgreSQL 15')}" if "PostgreSQL 15" in text else ""))
            growth, seen, problem = rss_growth_mb(tg, rows)
            report.add(f"gateway RSS growth MB, streaming {10 * rows:,} rows", {"tidegate": growth},
                       f"<= {TARGET_RSS_MB:.0f}", growth <= TARGET_RSS_MB and seen == 10 * rows,
                       note=(f"VmRSS of pid {tg.proc.pid} (the gateway process; Spark's JVM is a child);"
                             f" rows received {seen:,}" + (f"; {problem}" if problem else "")))
            if tg.proc.poll() is not None:
                raise SystemExit("the gateway exited during the streaming measurement:\n" + "\n".join(tg.log[-40:]))

        storm = {label: connection_storm(conn) for label, conn in conns.items()}
        report.add("200 idle + 20 active: errors", {k: v[0] for k, v in storm.items()}, "0",
                   None if "tidegate" not in storm else storm["tidegate"][0] == 0,
                   note="; ".join(f"{k} active phase {v[1]:.1f}s" for k, v in storm.items()))
    report.print()


if __name__ == "__main__":
    main()
