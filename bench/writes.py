"""Writes on Spark (issue 22): tidegate's writes on Spark vs its collected delta-rs path vs Spark
doing the same work itself, in one run.

1. ``INSERT INTO t2 SELECT * FROM t1`` of N rows (bigint, text, double precision, timestamp;
   default 20M, loaded by one INSERT ... SELECT generate_series):
   - ``tidegate.spark_writes = auto`` (the default: this result goes to Spark): seconds, and the
     growth of the gateway process's resident memory (sampled every 0.1 s);
   - ``tidegate.spark_writes = off`` (collected into the gateway, written by delta-rs);
   - reference: a separate local PySpark session (same cores) writing t1's rows as plain Parquet.
   Targets: RSS growth <= 200 MB, time <= 1.2x the reference.
2. UPDATE of 1% of an M-row table (default 10M; ``UPDATE u SET x = x + 1 WHERE id % 100 = k``)
   and a MERGE changing 1% of it (``MERGE INTO u USING chg ON u.id = chg.id WHEN MATCHED THEN
   UPDATE ...``), each on Spark (Delta's own command) and on the collected delta-rs path; reference:
   the same Delta command in the separate PySpark session on a copy of the table (Spark rewriting
   the touched files). Target: <= 1.5x the reference.
   The same rows into a PRIMARY KEY table (keys checked by one job, then appended) and into a
   time-series table (an upsert: one Delta MERGE), both ways: seconds and RSS growth, reported.
3. The INSERT ... SELECT of 1. by a gateway on a Spark standalone cluster (one worker, started with
   PySpark's own launcher as tests/spark_cluster.py does) vs local[*]: both reported.

Usage: python bench/writes.py [--rows N] [--update-rows M] [--no-cluster]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import _common as C  # noqa: N812  (run as a script from bench/)
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.spark_cluster import CLUSTER_CONF, start_cluster  # noqa: E402
from tests.tidegate_server import start_tidegate  # noqa: E402

TARGET_RSS_MB = 200
TARGET_RATIO = 1.2
TARGET_REWRITE_RATIO = 1.5
SPARK, COLLECTED, REFERENCE = "tidegate (Spark writes)", "tidegate (collected, delta-rs)", "Spark itself"


KEYED = {  # the same rows into a table with keys: what the insert checks or replaces
    "PRIMARY KEY": "(id bigint PRIMARY KEY, s text, x double precision, ts timestamp)",
    "time-series upsert": "(id bigint, s text, x double precision, ts timestamp TIME INDEX, PRIMARY KEY (id))",
}


def insert_select(tg, mode: str, target: str = "t2",
                  columns: str = "(id bigint, s text, x double precision, ts timestamp)") -> tuple[float | None, float, str]:
    """(seconds or None on error, gateway RSS growth in MB, status or error) of one INSERT ... SELECT."""
    with psycopg.connect(tg.dsn, autocommit=True) as c:
        c.execute(f"DROP TABLE IF EXISTS {target}")
        c.execute(f"CREATE TABLE {target} {columns}")
        c.execute(f"SET tidegate.spark_writes = {mode}")
        return timed_statement(c, tg, f"INSERT INTO {target} SELECT * FROM t1")


def timed_statement(c, tg, sql: str) -> tuple[float | None, float, str]:
    with C.RssSampler(tg.proc.pid) as rss:
        start = time.perf_counter()
        try:
            status = c.execute(sql).statusmessage or ""
            seconds: float | None = time.perf_counter() - start
        except psycopg.Error as exc:
            status, seconds = f"{exc.sqlstate}: {str(exc).splitlines()[0][:80]}", None
    return seconds, (rss.peak_kb - rss.baseline_kb) / 1024, status


def load(c, table: str, rows: int) -> float:
    start = time.perf_counter()
    c.execute("SET tidegate.spark_writes = on")
    c.execute(f"CREATE TABLE {table} AS SELECT g::bigint AS id, 'row ' || g AS s, (g * 0.5)::float8 AS x, "
              f"TIMESTAMP '2024-01-01' + g * INTERVAL '1 second' AS ts FROM generate_series(1, {rows}) g")
    return time.perf_counter() - start


def rewrites(tg, rows: int) -> dict[str, tuple[float | None, float, str]]:
    """UPDATE and MERGE of 1% of table u, on Spark and collected (different rows each time)."""
    out = {}
    with psycopg.connect(tg.dsn, autocommit=True) as c:
        print(f"  loaded u ({rows:,} rows) in {load(c, 'u', rows):.1f} s", flush=True)
        c.execute("CREATE TABLE chg AS SELECT id, x + 2 AS x FROM u WHERE id % 100 IN (11, 12)")
        for mode, k in (("on", 7), ("off", 8)):
            c.execute(f"SET tidegate.spark_writes = {mode}")
            out[f"update {mode}"] = timed_statement(c, tg, f"UPDATE u SET x = x + 1 WHERE id % 100 = {k}")
            print(f"  UPDATE 1% (spark_writes={mode}): {out[f'update {mode}']}", flush=True)
        for mode, k in (("on", 11), ("off", 12)):
            c.execute(f"SET tidegate.spark_writes = {mode}")
            out[f"merge {mode}"] = timed_statement(
                c, tg, f"MERGE INTO u USING (SELECT * FROM chg WHERE id % 100 = {k}) AS d ON u.id = d.id "
                       "WHEN MATCHED THEN UPDATE SET x = d.x")
            print(f"  MERGE 1% (spark_writes={mode}): {out[f'merge {mode}']}", flush=True)
    return out


def spark_references(t1_path: Path, u_path: Path, chg_path: Path) -> dict[str, float]:
    """The same work done by a separate local PySpark session with Delta's connector."""
    spark = C.spark_session("tidegate-bench-writes", delta=True)
    out = Path(tempfile.mkdtemp(prefix="bench-writes-"))
    try:
        df = C.delta_dataframe(spark, t1_path)
        df.limit(1000).write.mode("overwrite").parquet(str(out / "warm"))  # the JVM's first write
        start = time.perf_counter()
        df.write.parquet(str(out / "t"))
        refs = {"parquet": time.perf_counter() - start}
        shutil.copytree(u_path, out / "u")
        spark.read.format("delta").load(str(out / "u")).createOrReplaceTempView("u")
        spark.read.format("delta").load(str(chg_path)).createOrReplaceTempView("chg")
        spark.sql("SELECT count(*) FROM u").collect()  # the log read once, as the gateway has it cached
        start = time.perf_counter()
        spark.sql("UPDATE u SET x = x + 1 WHERE id % 100 = 9").collect()
        refs["update"] = time.perf_counter() - start
        start = time.perf_counter()
        spark.sql("MERGE INTO u USING (SELECT * FROM chg WHERE id % 100 = 11) AS d ON u.id = d.id "
                  "WHEN MATCHED THEN UPDATE SET x = d.x").collect()
        refs["merge"] = time.perf_counter() - start
        return refs
    finally:
        spark.stop()
        shutil.rmtree(out, ignore_errors=True)


def on_cluster(data_dir: Path) -> tuple[float | None, float, str]:
    """INSERT ... SELECT * FROM t1 by a gateway on a one-worker standalone cluster (same data dir)."""
    cluster = start_cluster()
    tg = None
    try:
        tg = start_tidegate(data_dir, extra_args=["--spark-master", cluster.url, *CLUSTER_CONF], timeout=60)
        tg.wait_for_spark(timeout=300)
        insert_select(tg, "auto", "t_warm")  # the executors' JVM and Delta classes warmed once
        return insert_select(tg, "auto", "t3")
    finally:
        if tg is not None:
            tg.stop()
        cluster.stop()


def main() -> None:
    def extra(parser) -> None:
        parser.add_argument("--update-rows", type=int, default=10_000_000, help="rows of the UPDATE/MERGE table")
        parser.add_argument("--no-cluster", action="store_true", help="skip the standalone cluster figure")

    args = C.parse_args(__doc__.splitlines()[0], 20_000_000, extra)
    rows = args.rows
    report = C.Report(f"Writes on Spark: INSERT ... SELECT of {rows:,} rows; UPDATE / MERGE of 1% of "
                      f"{args.update_rows:,} rows (bigint, text, double, timestamp)", [SPARK, COLLECTED, REFERENCE])
    with C.servers("tidegate") as started:
        tg = started["tidegate"]
        with psycopg.connect(tg.dsn, autocommit=True) as c:
            print(f"  loaded t1 ({rows:,} rows) in {load(c, 't1', rows):.1f} s", flush=True)
        spark_s, spark_mb, spark_status = insert_select(tg, "auto")
        print(f"  Spark writes: {spark_status} in {spark_s} s, RSS +{spark_mb:.0f} MB", flush=True)
        rows_s, rows_mb, rows_status = insert_select(tg, "off")
        print(f"  collected: {rows_status} in {rows_s} s, RSS +{rows_mb:.0f} MB", flush=True)
        keyed = {}
        for what, columns in KEYED.items():
            keyed[what] = {mode: insert_select(tg, mode, "t3", columns) for mode in ("auto", "off")}
            print(f"  {what}: {keyed[what]}", flush=True)
        rewritten = rewrites(tg, args.update_rows)
        paths = {name: C.table_path(tg, name) for name in ("t1", "u", "chg")}
        data_dir = tg.data_dir
        cluster = None
        if not args.no_cluster:
            tg.stop()
            cluster = on_cluster(data_dir)
            print(f"  on the cluster: {cluster}", flush=True)
        refs = spark_references(paths["t1"], paths["u"], paths["chg"])
    print(f"  Spark itself: {refs}", flush=True)
    reference = refs["parquet"]
    report.add("INSERT ... SELECT seconds", {SPARK: spark_s, COLLECTED: rows_s, REFERENCE: reference},
               f"<= {TARGET_RATIO}x Spark -> Parquet",
               ok=spark_s is not None and spark_s <= TARGET_RATIO * reference,
               note=f"Spark writes {spark_s / reference:.2f}x the reference" if spark_s else spark_status)
    report.add("INSERT ... SELECT gateway RSS growth (MB)", {SPARK: spark_mb, COLLECTED: rows_mb},
               f"<= {TARGET_RSS_MB} MB", ok=spark_s is not None and spark_mb <= TARGET_RSS_MB,
               note="" if rows_s is not None else f"the collected path ended in {rows_status}")
    for what, runs in keyed.items():
        (on_s, on_mb, on_status), (off_s, off_mb, off_status) = runs["auto"], runs["off"]
        report.add(f"INSERT ... SELECT into a {what} table, seconds", {SPARK: on_s, COLLECTED: off_s, REFERENCE: reference},
                   "reported (the append's targets apply to plain tables)",
                   note=f"RSS +{on_mb:.0f} / +{off_mb:.0f} MB; {on_status} / {off_status}")
    for name, what in (("update", "UPDATE 1%"), ("merge", "MERGE 1%")):
        on, off, ref = rewritten[f"{name} on"], rewritten[f"{name} off"], refs[name]
        report.add(f"{what} seconds", {SPARK: on[0], COLLECTED: off[0], REFERENCE: ref},
                   f"<= {TARGET_REWRITE_RATIO}x Delta's {name.upper()} on Spark",
                   ok=on[0] is not None and on[0] <= TARGET_REWRITE_RATIO * ref,
                   note=f"{on[2]} / {off[2]}; RSS +{on[1]:.0f} / +{off[1]:.0f} MB")
    if cluster is not None:
        report.add("INSERT ... SELECT on a 1-worker cluster (s)", {SPARK: cluster[0]}, "reported",
                   note=f"local[*]: {spark_s:.1f} s; {cluster[2]}" if spark_s else cluster[2])
    report.print()


if __name__ == "__main__":
    main()
