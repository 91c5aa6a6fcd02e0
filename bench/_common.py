"""Shared plumbing for the bench scripts: start the servers, time things, print the figures.

Each bench starts what it needs itself (a throwaway PostgreSQL 15, a tidegate gateway on a
temporary data dir, a direct PySpark session) so that one run prints every figure side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.pgoracle import PostgresServer, start_postgres  # noqa: E402
from tests.tidegate_server import TidegateServer, start_tidegate  # noqa: E402


@dataclass(frozen=True)
class Conn:
    """Where a bench connects: one of the servers it started."""

    name: str
    host: str
    port: int
    user: str
    dbname: str

    @property
    def dsn(self) -> str:
        return f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"


def table_path(tg: TidegateServer, table: str) -> Path:
    """Where the gateway keeps ``table``'s Delta files (``warehouse/<schema oid>/<table oid>``)."""
    import psycopg

    with psycopg.connect(tg.dsn, autocommit=True) as conn:
        return tg.data_dir / conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()[0]


def postgres_conn(pg: PostgresServer) -> Conn:
    return Conn("postgres", "127.0.0.1", pg.port, "postgres", "postgres")


def tidegate_conn(tg: TidegateServer) -> Conn:
    return Conn("tidegate", tg.host, tg.port, "tidegate", "tidegate")


def parse_args(description: str, default_rows: int,
               extra: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=default_rows,
                        help=f"rows in the main table (default {default_rows:,}; smaller for a quick check)")
    parser.add_argument("--only", choices=["postgres", "tidegate", "all"], default="all",
                        help="run against one side only (the other columns print as n/a)")
    if extra is not None:
        extra(parser)
    return parser.parse_args()


@contextlib.contextmanager
def servers(only: str = "all", spark_conf: list[str] | None = None,
            env: dict[str, str] | None = None) -> Iterator[dict[str, object]]:
    """Start PostgreSQL 15 and/or tidegate (waiting for its Spark); stop both on exit."""
    started: dict[str, object] = {}
    data_dir = Path(tempfile.mkdtemp(prefix="tidegate-bench-"))
    try:
        if only in ("all", "postgres"):
            started["postgres"] = start_postgres()
        if only in ("all", "tidegate"):
            extra: list[str] = []
            for kv in spark_conf or []:
                extra += ["--spark-conf", kv]
            tg = start_tidegate(data_dir, extra_args=extra, env=env, timeout=60)
            started["tidegate"] = tg
            tg.wait_for_spark(timeout=300)
        yield started
    finally:
        for server in started.values():
            with contextlib.suppress(Exception):
                server.stop()  # type: ignore[attr-defined]
        shutil.rmtree(data_dir, ignore_errors=True)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def p50_ms(fn: Callable[[], object], n: int = 200, warmup: int = 20) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def vm_rss_kb(pid: int) -> int:
    """Resident set size of a process from /proc (psutil is not a dependency)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


class RssSampler:
    """Samples a process's VmRSS in a thread; ``peak_kb`` is the highest value seen."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid = pid
        self.interval = interval
        self.baseline_kb = vm_rss_kb(pid)
        self.peak_kb = self.baseline_kb
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, RuntimeError):
                self.peak_kb = max(self.peak_kb, vm_rss_kb(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Row:
    metric: str
    values: dict[str, float | str | None]
    target: str
    ok: bool | None
    note: str = ""


@dataclass
class Report:
    title: str
    columns: list[str]
    rows: list[Row] = field(default_factory=list)

    def add(self, metric: str, values: dict[str, float | str | None], target: str = "",
            ok: bool | None = None, note: str = "") -> None:
        self.rows.append(Row(metric, values, target, ok, note))
        print(f"  measured {metric}: {values}", flush=True)

    def print(self) -> None:
        header = ["metric", *self.columns, "target", "ok?"]
        table = [header]
        for row in self.rows:
            ok = "n/a" if row.ok is None else ("yes" if row.ok else "NO")
            table.append([row.metric, *(fmt(row.values.get(c)) for c in self.columns), row.target, ok])
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        print()
        print(self.title)
        for i, line in enumerate(table):
            print(" | ".join(cell.ljust(w) for cell, w in zip(line, widths)))
            if i == 0:
                print("-+-".join("-" * w for w in widths))
        notes = [f"  {r.metric}: {r.note}" for r in self.rows if r.note]
        if notes:
            print("notes:")
            print("\n".join(notes))


def fmt(value: float | int | str | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return f"{value:,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}"


def spark_session(app: str = "tidegate-bench", delta: bool = False):
    """A lean local PySpark session, configured like the gateway's own (local[2], 2 shuffle
    partitions); ``delta``: with Delta Lake's connector (the jars the gateway uses)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if delta:
        from engine.spark import required_jars

        builder = (builder.config("spark.jars", ",".join(str(p) for p in required_jars()))
                   .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
                   .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
                   .config("spark.databricks.delta.snapshotPartitions", "4")
                   .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS"))
    return (builder.master("local[2]").appName(app)
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", "2g")
            .getOrCreate())


def delta_dataframe(spark, table_path: Path):
    """The current snapshot of a Delta table as a Spark DataFrame, read by its file list."""
    from deltalake import DeltaTable

    from engine.storage import local_files

    return spark.read.parquet(*local_files(DeltaTable(str(table_path))))


def copy_rows_text(conn, table: str, rows: int, chunk: int = 100_000) -> float:
    """Load ``rows`` generated rows (id, name, val, ts) with COPY FROM STDIN; returns the COPY's seconds.

    The text is generated before the clock starts, so the figure is the server's, not Python's.
    """
    chunks = ["".join(generated_line(i) for i in range(lo, min(rows, lo + chunk))).encode()
              for lo in range(0, rows, chunk)]
    start = time.perf_counter()
    with conn.cursor() as cur:
        with cur.copy(f"COPY {table} (id, name, val, ts) FROM STDIN") as copy:
            for data in chunks:
                copy.write(data)
    return time.perf_counter() - start


def generated_line(i: int) -> str:
    return f"{i}\tname-{i % 1000}\t{i * 0.5}\t2024-01-01 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}\n"
