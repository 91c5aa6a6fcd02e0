"""REFRESH TABLE of 1M rows with 1% changed vs a plain Spark overwrite of the same data.

A refreshable table over a folder of CSV files (1M rows) is refreshed once (initial load), then
1% of the rows change (half updated, a quarter deleted, a quarter new) and ``REFRESH TABLE t
WAIT`` is timed through the wire. The baseline is what a plain Spark job does with the same
files: read them with the table's schema and overwrite a Parquet table (``df.write.mode
("overwrite")``), in its own local[2] Spark session. Also printed: the rows of the refresh
commit's change data feed (it must hold only the changed rows, not 1M).

    python bench/refresh.py [--rows 1000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import psycopg  # noqa: E402
from deltalake import DeltaTable  # noqa: E402

from tests.tidegate_server import start_tidegate  # noqa: E402

import _common as C  # noqa: E402,N812  (run as a script from bench/)

FILES = 4
SCHEMA = "id BIGINT, name STRING, v DOUBLE, cat INT"


def write_source(folder: Path, rows: dict[int, tuple[str, float, int]]) -> None:
    """The rows as FILES headerless CSV files (ids spread round-robin)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    handles = [open(folder / f"part-{i}.csv", "w") for i in range(FILES)]
    try:
        for n, (k, (name, v, cat)) in enumerate(sorted(rows.items())):
            handles[n % FILES].write(f"{k},{name},{v},{cat}\n")
    finally:
        for h in handles:
            h.close()


def spark_overwrite_seconds(folder: Path, out: Path, repeat: int) -> float:
    """Best of ``repeat`` plain Spark overwrites (read the CSV files, overwrite a Parquet table)."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench-refresh-baseline")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        best = float("inf")
        for _ in range(repeat + 1):  # the first run warms the JVM
            started = time.perf_counter()
            spark.read.schema(SCHEMA).csv(str(folder)).write.mode("overwrite").parquet(str(out))
            best = min(best, time.perf_counter() - started)
        return best
    finally:
        spark.stop()


def cdf_rows(location: Path) -> dict[str, int]:
    dt = DeltaTable(str(location))
    v = dt.version()
    reader = dt.load_cdf(starting_version=v, ending_version=v)
    table = reader.read_all()
    counts: dict[str, int] = {}
    for kind in table.column("_change_type").to_pylist():
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2, help="timed refreshes / overwrites (best is reported)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-refresh-"))
    rnd = random.Random(7)
    rows = {i: (f"name{i}", i * 0.5, i % 100) for i in range(1, args.rows + 1)}
    src = work / "src"
    write_source(src, rows)
    gw = start_tidegate(work / "data")
    try:
        gw.wait_for_spark()
        with psycopg.connect(gw.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE big (id bigint PRIMARY KEY, name text, v double precision, cat int) WITH ("
                         f"connector = 'file', path = '{src}', match_pattern = '*.csv', refresh_mode = 'FULL_RELOAD') "
                         "FORMAT PLAIN ENCODE CSV (without_header = 'true')")
            started = time.perf_counter()
            conn.execute("REFRESH TABLE big WAIT")
            initial = time.perf_counter() - started
            print(f"initial load of {args.rows:,} rows: {initial:.2f} s", flush=True)
            timings = []
            next_id = args.rows + 1
            for _ in range(args.repeat):
                changed = max(1, args.rows // 100)
                keys = rnd.sample(sorted(rows), changed * 3 // 4)
                for k in keys[: changed // 2]:
                    rows[k] = (rows[k][0] + "x", rows[k][1] + 1, rows[k][2])
                for k in keys[changed // 2:]:
                    del rows[k]
                for _ in range(changed - len(keys)):
                    rows[next_id] = (f"new{next_id}", 1.0, 1)
                    next_id += 1
                write_source(src, rows)
                started = time.perf_counter()
                conn.execute("REFRESH TABLE big WAIT")
                timings.append(time.perf_counter() - started)
                st = conn.execute("SELECT rows_loaded, rows_inserted, rows_updated, rows_deleted "
                                  "FROM information_schema.refresh_tables WHERE table_name = 'big'").fetchone()
                print(f"refresh with 1% changed: {timings[-1]:.2f} s (loaded {st[0]:,}, inserted {st[1]:,}, "
                      f"updated {st[2]:,}, deleted {st[3]:,})", flush=True)
            count = conn.execute("SELECT count(*) FROM big").fetchone()[0]
            assert count == len(rows), (count, len(rows))
        feed = cdf_rows(C.table_path(gw, "big"))
    finally:
        gw.stop()
    baseline = spark_overwrite_seconds(src, work / "overwrite", args.repeat)
    refresh = min(timings)
    print()
    print(f"REFRESH TABLE (1% changed, {args.rows:,} rows): {refresh:.2f} s")
    print(f"plain Spark overwrite of the same data:        {baseline:.2f} s")
    print(f"ratio: {refresh / baseline:.2f}x (target <= 1.5x)")
    print(f"change feed rows of the last refresh commit: {sum(feed.values()):,} {dict(sorted(feed.items()))} "
          f"(vs {len(rows):,} rows in the table)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main()
