"""Table write/read costs: tidegate vs PostgreSQL 15 vs the same work done directly in PySpark.

Measures:
  - COPY FROM STDIN of N rows (rows/s);
  - one GROUP BY aggregate over the N-row table through tidegate vs the same Spark SQL run
    directly in PySpark over the same Delta files (gateway overhead ratio, target <= 1.10);
  - latency of one INSERT ... VALUES statement carrying 1000 rows (target <= 50 ms);
  - a full scan after 10,000 single-row INSERTs vs after one bulk insert of the same rows, once
    background compaction has run (target <= 2x).

Usage: python bench/tables.py [--rows N] [--only postgres|tidegate|all] [--single-inserts K]
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import _common as C  # noqa: N812  (run as a script from bench/)
import psycopg

TABLE = "bench_tables"
AGG_SQL = (f"SELECT name, count(*) AS n, sum(val) AS total, avg(val) AS mean, max(ts) AS latest"
           f" FROM {TABLE} GROUP BY name ORDER BY name")
TARGET_COPY_RATIO = 1.0  # COPY FROM STDIN rows/s vs PostgreSQL 15's on the same machine
TARGET_AGG_RATIO = 1.10
TARGET_INSERT_MS = 50.0
TARGET_SCAN_RATIO = 2.0
# The gateway compacts tables with many small files in the background; the bench asks it to look
# every few seconds so that "after compaction" does not mean waiting for the default 30 s cadence.
GATEWAY_ENV = {"TIDEGATE_MAINTENANCE_INTERVAL_S": "3"}


def copy_rate(conn: C.Conn, rows: int) -> float:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        c.execute(f"DROP TABLE IF EXISTS {TABLE}")
        c.execute(f"CREATE TABLE {TABLE} (id bigint, name text, val double precision, ts timestamp)")
        seconds = C.copy_rows_text(c, TABLE, rows)
        count = c.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
        assert count == rows, f"{conn.name}: COPY loaded {count} rows, expected {rows}"
    return rows / seconds


def median_seconds(fn, repeat: int = 5, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def aggregate_seconds(conn: C.Conn) -> tuple[float, int]:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        groups = len(c.execute(AGG_SQL).fetchall())
        return median_seconds(lambda: c.execute(AGG_SQL).fetchall(), repeat=5), groups


def direct_spark_aggregate_seconds(tg: C.TidegateServer) -> tuple[float, int]:
    path = C.table_path(tg, TABLE)
    spark = C.spark_session("bench-tables")
    try:
        C.delta_dataframe(spark, path).createOrReplaceTempView(TABLE)
        groups = spark.sql(AGG_SQL).toArrow().num_rows
        return median_seconds(lambda: spark.sql(AGG_SQL).toArrow(), repeat=5), groups
    finally:
        spark.stop()


def values_sql(table: str, lo: int, hi: int) -> str:
    rows = ", ".join(f"({i}, 'name-{i % 1000}', {i * 0.5}, TIMESTAMP '2024-01-01 00:00:00' )" for i in range(lo, hi))
    return f"INSERT INTO {table} (id, name, val, ts) VALUES {rows}"


def insert_1000_ms(conn: C.Conn) -> float:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS bench_ins1000")
        c.execute("CREATE TABLE bench_ins1000 (id bigint, name text, val double precision, ts timestamp)")
        batches = [values_sql("bench_ins1000", k * 1000, (k + 1) * 1000) for k in range(8)]
        it = iter(batches)
        seconds = median_seconds(lambda: c.execute(next(it)), repeat=7, warmup=1)
        assert c.execute("SELECT count(*) FROM bench_ins1000").fetchone() == (8000,)
    return seconds * 1000


def small_vs_bulk_scan(conn: C.Conn, single: int, tg: C.TidegateServer | None) -> dict[str, float]:
    """Scan time after ``single`` one-row INSERTs vs after one bulk INSERT of the same rows."""
    out: dict[str, float] = {}
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        for t in ("bench_small", "bench_bulk"):
            c.execute(f"DROP TABLE IF EXISTS {t}")
            c.execute(f"CREATE TABLE {t} (id bigint, name text, val double precision, ts timestamp)")
        start = time.perf_counter()
        for i in range(single):
            c.execute("INSERT INTO bench_small VALUES (%s, %s, %s, %s)",
                      (i, f"name-{i % 1000}", i * 0.5, "2024-01-01 00:00:00"))
        out["single_insert_ms"] = (time.perf_counter() - start) * 1000 / single
        for lo in range(0, single, 5000):
            c.execute(values_sql("bench_bulk", lo, min(single, lo + 5000)))
        if tg is not None:
            small = C.table_path(tg, "bench_small")
            out["files_before"] = float(delta_files(small))
            out["compaction_wait_s"] = wait_for_compaction(small, timeout=180)
            out["files_after"] = float(delta_files(small))
        scan = "SELECT * FROM {}"
        assert len(c.execute(scan.format("bench_small")).fetchall()) == single
        out["scan_small_ms"] = median_seconds(lambda: c.execute(scan.format("bench_small")).fetchall()) * 1000
        out["scan_bulk_ms"] = median_seconds(lambda: c.execute(scan.format("bench_bulk")).fetchall()) * 1000
    return out


def delta_files(path: Path) -> int:
    from deltalake import DeltaTable

    return len(DeltaTable(str(path)).file_uris())


def wait_for_compaction(path: Path, timeout: float, few: int = 16) -> float:
    """Wait until the table has at most ``few`` data files (background compaction); returns seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if delta_files(path) <= few:
            break
        time.sleep(1)
    return time.perf_counter() - start


def main() -> None:
    args = C.parse_args(__doc__.splitlines()[0], default_rows=1_000_000, extra=lambda p: p.add_argument(
        "--single-inserts", type=int, default=None,
        help="one-row INSERTs for the small-files scan (default 10,000; scaled down with --rows)"))
    single = args.single_inserts or max(500, 10_000 * min(args.rows, 1_000_000) // 1_000_000)
    rows = args.rows
    report = C.Report(f"bench/tables.py — {rows:,} rows; {single:,} single-row INSERTs",
                      ["tidegate", "PostgreSQL 15", "direct Spark"])
    with C.servers(args.only, env=GATEWAY_ENV) as started:
        conns: dict[str, C.Conn] = {}
        if "tidegate" in started:
            conns["tidegate"] = C.tidegate_conn(started["tidegate"])
        if "postgres" in started:
            conns["PostgreSQL 15"] = C.postgres_conn(started["postgres"])

        vals = {label: copy_rate(conn, rows) for label, conn in conns.items()}
        pg_copy = next((v for k, v in vals.items() if k != "tidegate"), None)
        report.add("COPY FROM STDIN rows/s", vals, f">= {TARGET_COPY_RATIO} x PostgreSQL",
                   None if "tidegate" not in vals or pg_copy is None else vals["tidegate"] >= TARGET_COPY_RATIO * pg_copy)

        agg = {label: aggregate_seconds(conn) for label, conn in conns.items()}
        agg_vals: dict[str, float | str | None] = {label: v[0] * 1000 for label, v in agg.items()}
        ratio_ok = None
        note = ""
        if "tidegate" in started:
            direct, groups = direct_spark_aggregate_seconds(started["tidegate"])
            agg_vals["direct Spark"] = direct * 1000
            ratio = agg["tidegate"][0] / direct
            ratio_ok = ratio <= TARGET_AGG_RATIO
            note = f"tidegate / direct Spark = {ratio:.2f} ({groups} groups)"
        report.add("GROUP BY aggregate ms (median of 5)", agg_vals, f"tidegate/Spark <= {TARGET_AGG_RATIO}",
                   ratio_ok, note)

        vals = {label: insert_1000_ms(conn) for label, conn in conns.items()}
        report.add("INSERT VALUES 1000 rows ms (median)", vals, f"<= {TARGET_INSERT_MS:.0f}",
                   None if "tidegate" not in vals else vals["tidegate"] <= TARGET_INSERT_MS)

        scans = {}
        for label, conn in conns.items():
            print(f"{label}: {single:,} single-row INSERTs ...", flush=True)
            scans[label] = small_vs_bulk_scan(conn, single, started["tidegate"] if label == "tidegate" else None)
        report.add("single-row INSERT ms (each, autocommit)", {k: v["single_insert_ms"] for k, v in scans.items()},
                   "", None)
        report.add(f"scan after {single:,} small INSERTs ms", {k: v["scan_small_ms"] for k, v in scans.items()},
                   "", None)
        report.add("scan after one bulk insert ms", {k: v["scan_bulk_ms"] for k, v in scans.items()}, "", None)
        ratios = {k: v["scan_small_ms"] / v["scan_bulk_ms"] for k, v in scans.items()}
        tg_scan = scans.get("tidegate")
        report.add("small-insert scan / bulk scan", ratios, f"<= {TARGET_SCAN_RATIO}",
                   None if "tidegate" not in ratios else ratios["tidegate"] <= TARGET_SCAN_RATIO,
                   note="" if tg_scan is None else
                   (f"tidegate Delta files {tg_scan['files_before']:.0f} -> {tg_scan['files_after']:.0f}"
                    f" after waiting {tg_scan['compaction_wait_s']:.0f}s for compaction"))
    report.print()


if __name__ == "__main__":
    main()
