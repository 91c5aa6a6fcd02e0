"""Spark lifecycle, per-statement tagging and Arrow result streaming.

Spark takes 10-15 s to start, so :class:`SparkRuntime` starts it in a background thread and
statements that need it wait (:meth:`SparkRuntime.session` raises 57P03 with the reason if the
start failed). Every engine session gets its own ``SparkSession.newSession()`` (own temp views
and SQL conf, shared SparkContext). Statements are tagged with ``SparkSession.addTag`` in the
executing thread (tags are thread-local in classic PySpark) and cancelled with
``interruptTag``, which interrupts exactly the jobs of that statement.

Results (see :func:`result_strategy`): aggregates and LIMITs are collected as Arrow in one job
(``collectAsArrowToPython``); other small results run as one job too but are handed on partition
by partition as tasks finish, so encoding and sending overlap the job; results whose optimizer
size estimate is large are streamed one partition per job (``toArrowBatchRdd`` served by
``PythonRDD.toLocalIteratorAndServe``) so the driver and the gateway hold one partition at a time.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from tidegate.config import Settings
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

# Results whose optimizer estimate exceeds this many bytes are streamed partition by partition.
STREAM_THRESHOLD_BYTES = 16 * 1024 * 1024
# A streamed result is fetched a few partitions per job (the next job computing meanwhile), and
# the first job is partition 0 alone: what the client waits for before its first row. Scans split
# files at 16 MB (``spark.sql.files.maxPartitionBytes``), which for a 1M-row table made the first
# row wait for half the table (0.31-0.46 s); streamed plans split at 4 MB (one or two 128Ki-row
# groups of a narrow table). Scans that are not streamed keep 16 MB: fewer tasks for the same
# cores. Measured over 1M rows (median of 8): first batch after 99 ms and all rows after 350 ms,
# against 144 ms and 365 ms with one partition per job (``toLocalIterator``, which starts the
# second partition's job alongside the first); 2 MB and 3 MB splits gave no earlier first batch.
STREAM_PARTITION_BYTES = "4m"
_MAX_PARTITION_BYTES = "spark.sql.files.maxPartitionBytes"

PG_JDBC_JAR = "/usr/share/java/postgresql.jar"  # Debian's libpostgresql-jdbc-java

# The JVM jars Spark needs (Delta Lake's connector): listed in jars/maven.txt, fetched into .jars/
# by ./tidegate.sh with Maven; TIDEGATE_JARS_DIR names another directory holding them.
_REPO_ROOT = Path(__file__).resolve().parent.parent
MAVEN_JARS_LIST = _REPO_ROOT / "jars" / "maven.txt"


def jar_conf() -> dict[str, str]:
    """The Spark confs that put the JVM jars on a session's classpath: Delta Lake's connector
    (:func:`required_jars`) and, when installed, the PostgreSQL JDBC driver (the Spark JDBC source
    of REFRESH TABLE's postgres connector). They take effect when the JVM starts."""
    conf = {}
    jars = [str(p) for p in required_jars()]
    if os.path.exists(PG_JDBC_JAR):
        jars.append(PG_JDBC_JAR)
        conf["spark.driver.extraClassPath"] = PG_JDBC_JAR
    conf["spark.jars"] = ",".join(jars)
    return conf


def driver_conf(master: str, *, archive: bool = True) -> dict[str, str]:
    """The gateway's Spark confs before its own settings: the defaults, the master's kind, the
    jars and, when the set-up commands built one, the driver JVM's class archive."""
    conf = dict(DEFAULT_CONF)
    conf.update(LOCAL_CONF if master.startswith("local") else CLUSTER_CONF)
    conf.update(jar_conf())
    path = driver_archive_path()
    if archive and path.is_file():
        conf["spark.driver.extraJavaOptions"] += f" -XX:SharedArchiveFile={path} {_QUIET_CDS}"
    return conf


# The driver JVM's class data sharing archive (JDK AppCDS): the classes Spark's start loads,
# parsed and verified once by the set-up commands (ensure_driver_archive) and mapped at every
# start: Spark ready in 4.5-4.9 s instead of 8.8-9.0 on 2 cores. The JVM checks that the archive
# matches its own build and class path and runs without it otherwise (-Xshare:auto, the
# default); its warnings are silenced, a stale archive is only a slower start.
_QUIET_CDS = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def driver_archive_path() -> Path:
    return Path(os.environ.get("TIDEGATE_JARS_DIR") or _REPO_ROOT / ".jars") / "tidegate-driver.jsa"


def _archive_key() -> str:
    """What the archive depends on: the java the launcher runs, PySpark's jars, Spark's jars and
    the driver's options. A change makes the set-up commands build it again."""
    import hashlib
    import subprocess

    import pyspark

    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    version = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    spark_jars = Path(pyspark.__file__).parent / "jars"
    listing = sorted(f"{p.name}:{p.stat().st_size}" for p in spark_jars.glob("*.jar"))
    conf = driver_conf("local[*]", archive=False)
    parts = [version, pyspark.__version__, *listing, conf["spark.jars"], conf.get("spark.driver.extraClassPath", ""),
             conf["spark.driver.extraJavaOptions"]]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def ensure_driver_archive() -> None:
    """Build the driver JVM's class archive unless the one there matches (:func:`_archive_key`):
    a Spark session started as the gateway starts its own, one Delta write and read, and the JVM
    dumps the classes it loaded when it exits. Run by ./tidegate.sh, never by the gateway."""
    import subprocess
    import sys

    path = driver_archive_path()
    key_file = path.with_name(path.name + ".key")
    key = _archive_key()
    if path.is_file() and key_file.is_file() and key_file.read_text() == key:
        return
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", f"from engine.spark import _train_archive; _train_archive({str(partial)!r})"],
                          cwd=_REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0 or not partial.is_file():
        # only a faster start: the gateway runs without it
        print(f"tidegate: the driver JVM's class archive was not built:\n{done.stderr[-2000:]}", file=sys.stderr)
        return
    partial.replace(path)
    key_file.write_text(key)
    print(f"tidegate: built the driver JVM's class archive in {time.monotonic() - started:.0f} s", file=sys.stderr)


def _train_archive(target: str) -> None:
    """In a process of its own: start Spark with the gateway's confs, run what a start runs, and
    stop the JVM so that it writes the archive (``-XX:ArchiveClassesAtExit``) before returning."""
    import shutil
    import tempfile

    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
    conf = driver_conf("local[*]", archive=False)
    conf["spark.driver.extraJavaOptions"] += f" -XX:ArchiveClassesAtExit={target} {_QUIET_CDS}"
    builder = SparkSession.builder.master("local[*]").appName("tidegate-archive")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    folder = tempfile.mkdtemp(prefix="tidegate-archive-")
    try:
        spark.sql("SELECT 1").collect()
        _delta_round_trip(spark, folder)
    finally:
        gateway = SparkContext._gateway
        spark.stop()
        proc = getattr(gateway, "proc", None)
        gateway.shutdown()
        if proc is not None:  # the JVM exits when its stdin closes, writing the archive first
            proc.stdin.close()
            proc.wait(timeout=300)
        shutil.rmtree(folder, ignore_errors=True)


def _delta_round_trip(spark: SparkSession, folder: str) -> None:
    """One small Delta write and read in ``folder``: what loads the connector's classes (the
    start's warm-up, and the class archive's training run)."""
    spark.range(1).write.format("delta").mode("append").save(f"{folder}/t")
    spark.read.format("delta").load(f"{folder}/t").collect()


def required_jars(jars_dir: Path | str | None = None) -> list[Path]:
    """The jar files of jars/maven.txt, in order; SqlError 58P01 naming the missing ones and the
    command that fetches them."""
    folder = Path(jars_dir or os.environ.get("TIDEGATE_JARS_DIR") or _REPO_ROOT / ".jars")
    jars, missing = [], []
    for line in MAVEN_JARS_LIST.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        _group, artifact, version = line.split(":")
        path = folder / f"{artifact}-{version}.jar"
        (jars if path.is_file() else missing).append(path if path.is_file() else line)
    if missing:
        raise SqlError("58P01", f"Spark's jars are missing from {folder}: {', '.join(missing)}",
                       hint="./tidegate.sh serve (or test) fetches them with Maven; "
                            "TIDEGATE_JARS_DIR names a directory that already holds them")
    return jars

DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.ansi.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
    # Streaming fetches one partition per job and the driver holds its whole serialized result
    # (twice while prefetching the next); at the 128 MB default one Parquet file of 10M rows was
    # one or two partitions of several hundred MB of Arrow and the driver ran out of heap.
    # 16 MB of Parquet splits at row-group boundaries (delta-rs writes 1M-row groups).
    "spark.sql.files.maxPartitionBytes": "16m",
    # A partition result too big anyway fails the job with a clean error before the driver
    # fetches it, instead of an OutOfMemoryError in task-result-getter that leaves the job hanging.
    "spark.driver.maxResultSize": "512m",
    "spark.driver.memory": "2g",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    "spark.sql.parquet.enableVectorizedReader": "true",
    # Local files: opening one costs what reading ~512 KB does (the 4 MB default assumes remote
    # storage and spread a flow run's few hundred KB of small files over a dozen tasks), and
    # there are no block locations worth asking for.
    "spark.sql.files.openCostInBytes": "524288",
    "spark.sql.sources.ignoreDataLocality": "true",
    "spark.sql.legacy.timeParserPolicy": "CORRECTED",
    # Delta Lake's connector (jars/maven.txt): its SQL extensions and catalog. A table's state is
    # rebuilt from its log in this many partitions (Delta's default, 50, is for logs of millions
    # of files: here it was 50 tasks per first write of a table).
    "spark.databricks.delta.snapshotPartitions": "4",
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Parquet timestamps as INT64 microseconds (Spark's default is INT96, which delta-rs, DuckDB
    # and the interactive reader would see as nanoseconds).
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # SQL never reads files by path (no SELECT * FROM csv.`/etc/passwd`): tidegate registers its
    # tables as DataFrame temp views and reads sources through the DataFrame reader.
    "spark.sql.runSQLOnFiles": "false",
    # ParallelGC: on 2 cores G1's concurrent marking cost 0.1-0.3 s of CPU per flow run.
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -XX:+UseParallelGC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
}

# With a local master the tasks run in the gateway's own JVM. A task thread stopped by
# engine.reaper ends with a ThreadDeath, which Spark would take for a JVM-wide fault and exit the
# process over (with it, the gateway); at depth 0 it is a task failure like any other.
LOCAL_CONF: dict[str, str] = {"spark.executor.killOnFatalError.depth": "0"}

# A cluster's executor whose killed task does not stop within the timeout exits (its worker
# starts another): Spark's task reaper, for the tasks engine.reaper stops locally.
CLUSTER_CONF: dict[str, str] = {"spark.task.reaper.enabled": "true", "spark.task.reaper.killTimeout": "30s"}


# Fair scheduling between interactive statements (the default pool) and background work (flows):
# a free task slot goes to a statement first, so ten busy flows do not queue a small SELECT
# behind their micro-batches. minShare 1 keeps one slot's turn for statements at all times.
BACKGROUND_POOL = "background"
_POOL_PROPERTY = "spark.scheduler.pool"
FAIR_SCHEDULER_XML = f"""<?xml version="1.0"?>
<allocations>
  <pool name="default"><schedulingMode>FAIR</schedulingMode><weight>8</weight><minShare>1</minShare></pool>
  <pool name="{BACKGROUND_POOL}"><schedulingMode>FAIR</schedulingMode><weight>1</weight><minShare>0</minShare></pool>
</allocations>
"""


@contextmanager
def background_jobs(spark: SparkSession) -> Iterator[None]:
    """Spark jobs this thread starts inside the block (and streaming queries it starts, whose
    threads inherit the setting) run in the low-weight background pool."""
    sc = spark.sparkContext
    previous = sc.getLocalProperty(_POOL_PROPERTY)
    sc.setLocalProperty(_POOL_PROPERTY, BACKGROUND_POOL)
    try:
        yield
    finally:
        sc.setLocalProperty(_POOL_PROPERTY, previous)  # type: ignore[arg-type]  # None clears it


def unregister_dangerous_functions(spark: SparkSession) -> None:
    """Drop the builtins that reach the JVM or the file system (``reflect``, ``java_method``,
    ``from_protobuf``, ...: engine.pgfunctions.SPARK_UNREGISTER) from Spark's function registry.

    Defence in depth behind the translator's allow-list and its check of the generated SQL.
    Sessions copy the builtin registry when created (``newSession``), so the names are dropped
    from ``FunctionRegistry.builtin`` itself and from the root session's copy. Best effort: a
    Spark whose internals differ keeps its registry (logged), the translator still refuses them.
    """
    from engine.pgfunctions import SPARK_UNREGISTER, SPARK_UNREGISTER_TABLE_FUNCTIONS

    try:
        jvm = spark._jvm  # type: ignore[attr-defined]
        analysis = jvm.org.apache.spark.sql.catalyst.analysis
        state = spark._jsparkSession.sessionState()  # type: ignore[attr-defined]
        some = jvm.scala.Some

        def ident(name: str) -> Any:
            return jvm.org.apache.spark.sql.catalyst.FunctionIdentifier(name, some("builtin"), some("system"))

        for registry, names in ((analysis.FunctionRegistry.builtin(), SPARK_UNREGISTER),
                                (state.functionRegistry(), SPARK_UNREGISTER),
                                (analysis.TableFunctionRegistry.builtin(), SPARK_UNREGISTER_TABLE_FUNCTIONS),
                                (state.tableFunctionRegistry(), SPARK_UNREGISTER_TABLE_FUNCTIONS)):
            for name in names:
                registry.dropFunction(ident(name))
    except Exception:  # noqa: BLE001 - optional hardening
        log.warning("could not drop dangerous builtins from Spark's function registry", exc_info=True)


class SparkRuntime:
    """The process's one SparkContext, started in the background."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._spark: SparkSession | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="tidegate-spark-start", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
            from pyspark.sql import SparkSession

            started = time.monotonic()
            builder = SparkSession.builder.master(self._settings.spark_master).appName("tidegate")
            conf = driver_conf(self._settings.spark_master)
            pools = Path(self._settings.data_dir) / "spark" / "fairscheduler.xml"
            pools.parent.mkdir(parents=True, exist_ok=True)
            pools.write_text(FAIR_SCHEDULER_XML)
            conf.update({"spark.scheduler.mode": "FAIR", "spark.scheduler.allocation.file": str(pools)})
            conf.update(self._settings.spark_conf)
            for key, value in conf.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
            unregister_dangerous_functions(spark)
            # PySpark logs every failed query as JSON on stderr; the error reaches the client anyway.
            from pyspark.logger import PySparkLogger

            for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
                PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)
            # Warm the JVM paths every first statement would otherwise pay for.
            spark.sql("SELECT 1").collect()
            self._spark = spark
            log.info("Spark ready in %.1f s (master %s)", time.monotonic() - started, self._settings.spark_master)
        except BaseException as exc:  # noqa: BLE001 - reported to every waiting statement
            log.exception("Spark failed to start")
            self._error = exc
        finally:
            self._ready.set()
        # After the statements waiting for Spark are let go: with the warm-up inside the start,
        # every Spark statement waited for it too (10-30 s at every start).
        if self._spark is not None:
            self._warm_delta(self._spark)

    def _warm_delta(self, spark: SparkSession) -> None:
        """One small Delta write and read, after Spark is ready (statements run meanwhile): the
        connector's first write loads and compiles its classes, 10-30 s on 2 cores, which the
        first INSERT ... SELECT written by Spark would otherwise wait for."""
        import shutil
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="delta-warmup-", dir=Path(self._settings.data_dir) / "spark"))
        try:
            started = time.monotonic()
            with background_jobs(spark):
                _delta_round_trip(spark, str(folder))
            log.info("Delta Lake's Spark connector warmed in %.1f s", time.monotonic() - started)
        except Exception:  # noqa: BLE001 - only a warm-up: the first real write reports any problem
            log.warning("warming Delta Lake's Spark connector failed", exc_info=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def ready(self) -> bool:
        return self._ready.is_set() and self._spark is not None

    def wait(self, timeout: float | None = None) -> SparkSession:
        """The root SparkSession, waiting for start; 57P03 if Spark is not (or cannot be) up."""
        if self._thread is None:
            self.start()
        if not self._ready.wait(timeout):
            raise SqlError("57P03", "the database system is starting up",
                           detail="Spark is still starting; retry shortly.")
        if self._spark is None:
            raise SqlError("57P03", f"Spark failed to start: {self._error}")
        return self._spark

    def new_session(self) -> SparkSession:
        return self.wait().newSession()

    def stop(self) -> None:
        if self._spark is not None:
            try:
                self._spark.stop()
            except Exception:  # noqa: BLE001 - shutting down anyway
                log.exception("error stopping Spark")
            self._spark = None


# -- types ---------------------------------------------------------------------------------------

def spark_type_sql(t: ColumnType) -> str:
    """The Spark SQL type a column of type ``t`` has in its storage form (see engine.storage)."""
    if t.is_array:
        return f"array<{spark_type_sql(t.element)}>"
    name = t.pg.name
    if name == "numeric":
        arrow = t.arrow()
        return f"decimal({arrow.precision},{arrow.scale})"
    return _SPARK_BY_NAME.get(name, "string")


_SPARK_BY_NAME = {
    "bool": "boolean", "int2": "smallint", "int4": "int", "int8": "bigint", "oid": "bigint",
    "float4": "float", "float8": "double", "bytea": "binary", "date": "date",
    "time": "bigint", "timestamp": "timestamp_ntz", "timestamptz": "timestamp",
    "interval": "string",
}


def spark_schema_ddl(columns: list[tuple[str, ColumnType]]) -> str:
    return ", ".join(f"`{name.replace('`', '``')}` {spark_type_sql(t)}" for name, t in columns)


# -- execution -----------------------------------------------------------------------------------

COLLECT = "collect"
COLLECT_STREAMED = "collect-streamed"
PARTITIONS = "partitions"
_PARTITION_COLUMN = "__tidegate_partition"


def _size_in_bytes(plan: Any) -> int:
    return int(str(plan.stats().sizeInBytes()))


def estimated_bytes(df: DataFrame) -> int | None:
    """The optimizer's size estimate of ``df``'s result (file sizes for scans), or None."""
    try:
        return _size_in_bytes(df._jdf.queryExecution().optimizedPlan())
    except Exception:  # noqa: BLE001 - an estimate only
        return None


def result_strategy(df: DataFrame) -> str:
    """How to fetch ``df``'s result: COLLECT, COLLECT_STREAMED or PARTITIONS.

    Aggregates and LIMITs are collected whole (one job; their plans must stay as Spark shapes
    them, e.g. ``CollectLimit``). Other plans whose optimizer size estimate (file sizes for
    scans) is small are collected in one job but handed on as partitions finish
    (:func:`collect_arrow_streamed`); large ones are fetched one partition per job
    (:func:`stream_arrow`) so the driver never holds more than a partition or two.
    """
    try:
        plan = df._jdf.queryExecution().optimizedPlan()
        size = _size_in_bytes(plan)
        node = plan
        while True:
            name = node.nodeName()
            if name in ("Aggregate", "GlobalLimit", "LocalLimit", "Tail", "LocalRelation", "OneRowRelation"):
                return COLLECT if size <= 16 * STREAM_THRESHOLD_BYTES else PARTITIONS
            if name not in ("Sort", "Project", "Filter", "SubqueryAlias", "Window") or node.children().size() != 1:
                break
            node = node.children().apply(0)
        return COLLECT_STREAMED if size <= STREAM_THRESHOLD_BYTES else PARTITIONS
    except Exception:  # noqa: BLE001 - an estimate only: stream when unsure
        return PARTITIONS


def collect_arrow_streamed(df: DataFrame) -> Iterator[pa.RecordBatch]:
    """Run ``df`` as one job and yield its batches in partition order as early as that order allows.

    ``collectAsArrowToPython`` writes each partition's batches to the socket when its task ends,
    in completion order, and the permutation restoring partition order only at the very end; a
    ``spark_partition_id()`` column tells each batch's partition as it arrives instead, so the
    next partition in order is passed on at once (while later ones are still computing) and
    only partitions that finish early wait, in memory. The order is exactly ``collect``'s.
    """
    from pyspark.serializers import read_int
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.util import _create_local_socket

    schema = arrow_schema_of(df)
    width = len(schema)
    tagged = df.select(F.col("*"), F.spark_partition_id().alias(_PARTITION_COLUMN))
    port, auth_secret, server = tagged._jdf.collectAsArrowToPython()
    sockfile, sock = _create_local_socket((port, auth_secret))
    finished = False
    try:
        waiting: dict[int, list[pa.RecordBatch]] = {}
        complete: set[int] = set()
        next_part, current = 0, -1

        def release() -> Iterator[pa.RecordBatch]:
            # Hand on every buffered partition that is now next in order.
            nonlocal next_part
            while True:
                yield from waiting.pop(next_part, ())
                if next_part not in complete:
                    return
                next_part += 1

        for batch in pa.ipc.open_stream(sockfile):
            if batch.num_rows == 0:
                continue
            part = batch.column(width)[0].as_py()
            rows = pa.RecordBatch.from_arrays(batch.columns[:width], schema=schema)
            if part != current:
                complete.add(current)
                current = part
                yield from release()
            if part == next_part:
                yield rows
            else:
                waiting.setdefault(part, []).append(rows)
        complete.add(current)
        yield from release()
        for part in sorted(waiting):  # after an empty partition the order had to wait for the end
            yield from waiting.pop(part)
        if read_int(sockfile) == -1:
            server.getResult()  # raises the JVM's error
            raise RuntimeError("collecting the result failed")
        finished = True
    finally:
        sockfile.close()
        sock.close()
        if finished:
            server.getResult()


def collect_arrow(df: DataFrame) -> pa.Table:
    """Run ``df`` as one job and return its rows as one Arrow table (schema kept when empty)."""
    batches = df._collect_as_arrow(empty_list_if_zero_records=False)
    return pa.Table.from_batches(batches, schema=batches[0].schema)


def arrow_schema_of(df: DataFrame) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema, timezone="UTC")


def stream_arrow(df: DataFrame) -> Iterator[pa.RecordBatch]:
    """Yield ``df``'s rows in partition order, a few partitions per job, the next job running ahead.

    The first job computes partition 0 alone, so the first rows come after one small split;
    later jobs take as many partitions as there are cores. Each job's result (Arrow batches from
    ``Dataset.toArrowBatchRdd``, nothing pickled) is served to Python on a local socket while
    the next job runs, so the driver holds two jobs' partitions at most.
    """
    from pyspark.serializers import read_int

    sc = df.sparkSession.sparkContext
    schema = arrow_schema_of(df)
    # The scan's partitions are fixed when the RDD is made: smaller ones for this plan only.
    conf = df.sparkSession.conf
    previous = conf.get(_MAX_PARTITION_BYTES, None)
    conf.set(_MAX_PARTITION_BYTES, STREAM_PARTITION_BYTES)
    try:
        jrdd = df._jdf.toArrowBatchRdd().toJavaRDD()
    finally:
        if previous is None:
            conf.unset(_MAX_PARTITION_BYTES)
        else:
            conf.set(_MAX_PARTITION_BYTES, previous)
    groups = _job_groups(jrdd.getNumPartitions(), max(sc.defaultParallelism, 1))
    ahead: _PartitionsJob | None = _PartitionsJob(sc, jrdd, groups[0]) if groups else None
    try:
        for k in range(len(groups)):
            job, ahead = ahead, None
            assert job is not None
            served = job.result()
            if k + 1 < len(groups):
                ahead = _PartitionsJob(sc, jrdd, groups[k + 1])
            sockfile = served[0]
            try:
                while True:
                    try:
                        length = read_int(sockfile)
                    except EOFError:
                        break
                    batch = pa.ipc.read_record_batch(pa.py_buffer(sockfile.read(length)), schema)
                    if batch.num_rows:
                        yield batch
            finally:
                _close_served(served)
    finally:
        if ahead is not None:
            ahead.abandon()


def _job_groups(partitions: int, cores: int) -> list[list[int]]:
    """Partition 0 alone, then ``cores`` partitions per job."""
    if partitions == 0:
        return []
    return [[0]] + [list(range(i, min(i + cores, partitions))) for i in range(1, partitions, cores)]


class _PartitionsJob:
    """One Spark job over some partitions of an RDD of Arrow batches, run in a thread of its own.

    The thread inherits the caller's job properties (tags, scheduler pool), so cancelling the
    statement's tag cancels this job too. The result is a connected socket serving the batches.
    """

    def __init__(self, sc: Any, jrdd: Any, partitions: list[int]) -> None:
        from pyspark.util import InheritableThread

        self._lock = threading.Lock()
        self._served: Any = None
        self._error: BaseException | None = None
        self._abandoned = False
        self._thread = InheritableThread(target=self._run, args=(sc, jrdd, partitions), daemon=True)
        self._thread.start()

    def _run(self, sc: Any, jrdd: Any, partitions: list[int]) -> None:
        from pyspark.util import _create_local_socket

        try:
            served = _create_local_socket(sc._jvm.PythonRDD.runJob(sc._jsc.sc(), jrdd, partitions))
        except BaseException as exc:  # noqa: BLE001 - handed to the reader
            self._error = exc
            return
        with self._lock:
            if not self._abandoned:
                self._served = served
                return
        _close_served(served)

    def result(self) -> Any:
        """(sockfile, socket) serving the job's batches; the job's error if it failed."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._served

    def abandon(self) -> None:
        """The rows are not wanted (the stream was closed early): free the JVM's served result."""
        with self._lock:
            self._abandoned = True
            served, self._served = self._served, None
        if served is not None:
            _close_served(served)


def _close_served(served: Any) -> None:
    sockfile, sock = served
    try:
        sockfile.close()
    finally:
        sock.close()


def run_with_tag(spark: SparkSession, tag: str, fn: Any) -> Any:
    spark.addTag(tag)
    try:
        return fn()
    finally:
        spark.removeTag(tag)
