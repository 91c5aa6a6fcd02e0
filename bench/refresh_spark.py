"""Refresh loads on Spark (issue 22): ``REFRESH TABLE`` of a CSV folder loaded on Spark
(``spark_writes = 'on'``: staged and checked by the executors, one Delta MERGE of the difference)
vs through the gateway (``spark_writes = 'off'``: chunks collected, the difference computed in
memory, tidegate's own commit), with Spark itself reading the same files into Parquet as the
floor, in one run.

The source: N rows (default 4M) of (bigint key, text, double, timestamp) in four CSV files with a
header. Three refreshes of each table: the first load into an empty table; one after 1% of the rows
changed, 0.1% were removed and 0.1% added; one with nothing changed. Reported: seconds and the
growth of the gateway process's resident memory (sampled every 0.1 s) of each, and whether both
tables hold the same rows afterwards. ``spark_writes = 'auto'`` (the default) loads on Spark when
the files exceed engine.refresh.SPARK_RELOAD_BYTES; these figures are what that threshold weighs.

Usage: python bench/refresh_spark.py [--rows N]  (bench/refresh.py: the first wave's refresh vs a Spark overwrite)
"""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _common as C  # noqa: N812  (run as a script from bench/)
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.refresh import SPARK_RELOAD_BYTES  # noqa: E402

SPARK, COLLECTED, REFERENCE = "on Spark (MERGE)", "through the gateway", "Spark itself (CSV -> Parquet)"
FILES = 4


def write_source(folder: Path, rows: int, changed: bool) -> None:
    """The CSV files: every row, or (``changed``) 1% of values changed, 0.1% of keys gone, 0.1% new."""
    rng = random.Random(7)
    per_file = -(-rows // FILES)
    for f in range(FILES):
        lines = ["id,name,v,ts\n"]
        for i in range(f * per_file, min(rows, (f + 1) * per_file)):
            v = (i * 7919) % 100_000 / 100
            if changed:
                roll = rng.random()
                if roll < 0.001:
                    continue
                if roll < 0.011:
                    v += 1
            lines.append(f"{i},name-{i % 100_000},{v},2024-0{1 + i % 9}-1{i % 10} 1{i % 10}:00:00\n")
        if changed:
            base = rows + f * per_file
            lines += [f"{base + j},new-{j},{j},2024-01-01 00:00:00\n" for j in range(per_file // 1000)]
        (folder / f"part-{f}.csv").write_text("".join(lines))


def refresh(tg, c, table: str) -> tuple[float | None, float, str]:
    with C.RssSampler(tg.proc.pid) as rss:
        start = time.perf_counter()
        try:
            c.execute(f"REFRESH TABLE {table} WAIT")
            seconds: float | None = time.perf_counter() - start
            row = c.execute("SELECT rows_inserted, rows_updated, rows_deleted FROM information_schema.refresh_tables "
                            "WHERE table_name = %s", (table,)).fetchone()
            status = f"{row[0]} inserted, {row[1]} updated, {row[2]} deleted"
        except psycopg.Error as exc:
            seconds, status = None, f"{exc.sqlstate}: {str(exc).splitlines()[0][:80]}"
    return seconds, (rss.peak_kb - rss.baseline_kb) / 1024, status


def spark_reference(folder: Path) -> float:
    spark = C.spark_session("tidegate-bench-refresh")
    out = Path(tempfile.mkdtemp(prefix="bench-refresh-"))
    try:
        frame = spark.read.option("header", "true").schema("id bigint, name string, v double, ts timestamp_ntz")
        frame.csv(str(folder)).limit(1000).write.parquet(str(out / "warm"))
        start = time.perf_counter()
        frame.csv(str(folder)).write.parquet(str(out / "t"))
        return time.perf_counter() - start
    finally:
        spark.stop()
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    args = C.parse_args(__doc__.splitlines()[0], 4_000_000)
    rows = args.rows
    folder = Path(tempfile.mkdtemp(prefix="bench-refresh-src-"))
    report = C.Report(f"REFRESH TABLE of {rows:,} rows in {FILES} CSV files (bigint, text, double, timestamp)",
                      [SPARK, COLLECTED, REFERENCE])
    try:
        write_source(folder, rows, changed=False)
        size = sum(p.stat().st_size for p in folder.iterdir())
        print(f"  source: {size / 2**20:.0f} MiB (auto loads on Spark above {SPARK_RELOAD_BYTES / 2**20:.0f} MiB)")
        results: dict[str, dict[str, tuple[float | None, float, str]]] = {}
        with C.servers("tidegate", env={"TIDEGATE_FILE_CONNECTOR_ROOTS": str(folder)}) as started:
            tg = started["tidegate"]
            with psycopg.connect(tg.dsn, autocommit=True) as c:
                for writer in ("on", "off"):
                    c.execute(f"CREATE TABLE r_{writer} (id bigint PRIMARY KEY, name text, v double precision, "
                              f"ts timestamp) WITH (connector = 'file', path = '{folder}', refresh_mode = "
                              f"'FULL_RELOAD', spark_writes = '{writer}') FORMAT PLAIN ENCODE CSV")
                for step in ("first load", "1% changed", "nothing changed"):
                    if step == "1% changed":
                        write_source(folder, rows, changed=True)
                    results[step] = {writer: refresh(tg, c, f"r_{writer}") for writer in ("on", "off")}
                    print(f"  {step}: {results[step]}", flush=True)
                same = c.execute("SELECT (SELECT count(*) FROM (SELECT * FROM r_on EXCEPT SELECT * FROM r_off) d) "
                                 "+ (SELECT count(*) FROM (SELECT * FROM r_off EXCEPT SELECT * FROM r_on) d)"
                                 ).fetchone()[0] == 0
        reference = spark_reference(folder)
        print(f"  Spark itself: {reference:.1f} s", flush=True)
        for step, runs in results.items():
            on, off = runs["on"], runs["off"]
            report.add(f"{step}: seconds", {SPARK: on[0], COLLECTED: off[0], REFERENCE: reference}, "reported",
                       note=f"{on[2]} / {off[2]}")
            report.add(f"{step}: gateway RSS growth (MB)", {SPARK: on[1], COLLECTED: off[1]}, "reported")
        report.add("both tables hold the same rows", {SPARK: "yes" if same else "NO"}, "yes", ok=same)
        report.print()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
