"""tidegate on a Spark standalone cluster (issue 22): a real master and worker started with PySpark's
own launcher (tests/spark_cluster.py), the gateway started with ``--spark-master spark://...``.

The worker's executor is its own JVM with its own Python workers; the warehouse is at the same
path for both (one machine). Each test checks through a real client what a user sees, and that
the executor, not the driver, ran tasks. The sqlness golden files run through the same cluster in
tests/test_cluster_sqlness.py (the cluster is the session's ``spark_cluster`` fixture).
"""

from __future__ import annotations

import threading
import time
from datetime import datetime

import psycopg
import pytest
from deltalake import DeltaTable

from tests.spark_cluster import CLUSTER_CONF, SparkCluster
from tests.tidegate_server import start_tidegate



@pytest.fixture(scope="module")
def gw(spark_cluster: SparkCluster, tmp_path_factory):
    # Spark's task reaper (engine.spark.CLUSTER_CONF) with a short timeout: see test_cancel_*
    server = start_tidegate(tmp_path_factory.mktemp("cluster-data") / "data",
                            extra_args=["--spark-master", spark_cluster.url, *CLUSTER_CONF,
                                        "--spark-conf", "spark.task.reaper.killTimeout=5s"])
    server.wait_for_spark(timeout=300)
    yield server
    server.stop()


@pytest.fixture()
def conn(gw):
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        yield c


def executor_tasks(cluster: SparkCluster) -> int:
    """Tasks the worker's executors have run so far (their stderr logs each one)."""
    total = 0
    for log in (cluster.folder / "work").glob("app-*/*/stderr"):
        total += log.read_text(errors="replace").count("Running task")
    return total


def test_queries_and_writes_run_on_the_executor(spark_cluster: SparkCluster, conn, gw) -> None:
    before = executor_tasks(spark_cluster)
    conn.execute("CREATE TABLE cl_src (id bigint, s text, ts timestamp)")
    conn.execute("INSERT INTO cl_src SELECT g, 'v' || g, TIMESTAMP '2024-01-01' + g * INTERVAL '1 minute' "
                 "FROM generate_series(1, 50000) g")
    conn.execute("SET tidegate.spark_writes = on")
    assert conn.execute("CREATE TABLE cl_copy AS SELECT * FROM cl_src WHERE id % 2 = 0").statusmessage == "SELECT 25000"
    assert conn.execute("INSERT INTO cl_copy SELECT id + 1, s, ts FROM cl_src WHERE id % 2 = 0").statusmessage \
        == "INSERT 0 25000"
    history = DeltaTable(str(gw.data_dir / conn.execute(
        "SELECT pg_relation_filepath('cl_copy')").fetchone()[0])).history()
    assert sum(str(e.get("engineInfo", "")).startswith("Apache-Spark") for e in history) == 2
    assert conn.execute("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM cl_copy").fetchone() == \
        (50000, 50000, 2, 50001)
    joined = conn.execute("SELECT count(*), sum(a.id) FROM cl_src a JOIN cl_copy b ON a.id = b.id "
                          "WHERE b.s = 'v' || a.id").fetchone()
    assert joined == (25000, sum(range(2, 50001, 2)))
    conn.execute("UPDATE cl_copy SET s = 'changed' WHERE id BETWEEN 10 AND 19")
    assert conn.execute("SELECT count(*) FILTER (WHERE s = 'changed'), count(*) FROM cl_copy "
                        "WHERE id BETWEEN 1 AND 30").fetchone() == (10, 29)
    assert executor_tasks(spark_cluster) > before


def test_batch_flow_and_job_on_the_cluster(conn) -> None:
    conn.execute("CREATE TABLE cl_metrics (host text, ts timestamp TIME INDEX, v double precision) "
                 "WITH ('append_mode' = 'true')")
    conn.execute("CREATE FLOW cl_flow SINK TO cl_sink EVAL INTERVAL '1 hour' AS SELECT host, "
                 "date_bin(INTERVAL '1 hour', ts, '2000-01-01 00:00:00'::timestamp) AS w, count(*) AS n "
                 "FROM cl_metrics GROUP BY host, w")
    conn.execute("INSERT INTO cl_metrics SELECT 'h' || (g % 2), TIMESTAMP '2024-01-01' + g * INTERVAL '1 minute', g "
                 "FROM generate_series(0, 239) g")
    conn.execute("ADMIN FLUSH_FLOW('cl_flow')")
    assert conn.execute("SELECT host, w, n FROM cl_sink ORDER BY host, w").fetchall() == [
        (h, datetime(2024, 1, 1, hour), 30) for h in ("h0", "h1") for hour in range(4)]
    conn.execute("SUBMIT JOB cl_job AS SELECT host, sum(v) FROM cl_metrics GROUP BY host ORDER BY host")
    waited = conn.execute("WAIT JOB 'cl_job' TIMEOUT '120 s'")
    status = [d.name for d in waited.description].index("status")
    assert waited.fetchone()[status] == "SUCCEEDED"
    assert conn.execute("FETCH JOB 'cl_job'").fetchall() == [("h0", 14280.0), ("h1", 14400.0)]
    conn.execute("DROP FLOW cl_flow")


def test_streaming_flow_on_the_cluster(spark_cluster: SparkCluster, conn, gw) -> None:
    """A streaming flow: the executor reads the source's change feed and computes each micro-batch,
    and Delta's MERGE on Spark (spark_writes 'on') writes it; the sink follows inserts and a delete."""
    conn.execute("CREATE TABLE cl_stream (host text, ts timestamp TIME INDEX, v double precision, PRIMARY KEY (host))")
    conn.execute("CREATE FLOW cl_stream_flow SINK TO cl_stream_out WITH (flow_type = 'streaming', spark_writes = 'on') "
                 "AS SELECT host, ts, v * 2 AS v2 FROM cl_stream WHERE v > 0")
    conn.execute("ADMIN FLUSH_FLOW('cl_stream_flow')")
    before = executor_tasks(spark_cluster)
    conn.execute("INSERT INTO cl_stream SELECT 'h' || (g % 3), TIMESTAMP '2024-01-01' + g * INTERVAL '1 second', g - 10 "
                 "FROM generate_series(1, 500) g")
    conn.execute("ADMIN FLUSH_FLOW('cl_stream_flow')")
    conn.execute("DELETE FROM cl_stream WHERE host = 'h1' AND ts < '2024-01-01 00:02:00'")
    conn.execute("ADMIN FLUSH_FLOW('cl_stream_flow')")
    want = conn.execute("SELECT host, ts, v * 2 FROM cl_stream WHERE v > 0 ORDER BY host, ts").fetchall()
    assert conn.execute("SELECT host, ts, v2 FROM cl_stream_out ORDER BY host, ts").fetchall() == want
    assert len(want) == 490 - len([g for g in range(11, 120) if g % 3 == 1])
    history = DeltaTable(str(gw.data_dir / conn.execute(
        "SELECT pg_relation_filepath('cl_stream_out')").fetchone()[0])).history()
    # the inserts' micro-batch and the delete's re-evaluation (and the first, empty batch), each a
    # MERGE made by Spark
    writes = [e for e in history if e["operation"] in ("WRITE", "MERGE", "UPDATE", "DELETE")]
    assert len(writes) >= 2 and all(e["operation"] == "MERGE" and e["engineInfo"].startswith("Apache-Spark")
                                    for e in writes), writes
    assert executor_tasks(spark_cluster) > before
    conn.execute("DROP FLOW cl_stream_flow")


def test_refresh_loads_on_the_executor(spark_cluster: SparkCluster, conn, gw) -> None:
    """A refresh on Spark: the executor reads the source files, stages and merges the snapshot."""
    src = gw.data_dir.parent / "cl_refresh_src"
    src.mkdir()
    (src / "a.csv").write_text("".join(f"{i},n{i},{i * 0.5}\n" for i in range(1, 2001)))
    conn.execute(f"CREATE TABLE cl_refresh (id bigint PRIMARY KEY, name text, v double precision) WITH ("
                 f"connector = 'file', path = '{src}', refresh_mode = 'FULL_RELOAD', spark_writes = 'on') "
                 "FORMAT PLAIN ENCODE CSV (without_header = 'true')")
    before = executor_tasks(spark_cluster)
    conn.execute("REFRESH TABLE cl_refresh WAIT")
    (src / "a.csv").write_text("".join(f"{i},n{i},{i * (2 if i == 5 else 0.5)}\n" for i in range(2, 2002)))
    conn.execute("REFRESH TABLE cl_refresh WAIT")
    assert conn.execute("SELECT rows_loaded, rows_inserted, rows_updated, rows_deleted FROM "
                        "information_schema.refresh_tables WHERE table_name = 'cl_refresh'").fetchone() == (2000, 1, 1, 1)
    assert conn.execute("SELECT count(*), min(id), max(id), sum(v) FROM cl_refresh").fetchone() == \
        (2000, 2, 2001, sum(i * 0.5 for i in range(2, 2002)) + 7.5)
    history = DeltaTable(str(gw.data_dir / conn.execute(
        "SELECT pg_relation_filepath('cl_refresh')").fetchone()[0])).history()
    # newest first: the difference merged, then the first load appended, both by Spark
    assert [(e["operation"], e["engineInfo"].split("/")[0]) for e in history
            if str(e.get("userMetadata")).startswith("tidegate-refresh-")] == [("MERGE", "Apache-Spark"),
                                                                            ("WRITE", "Apache-Spark")]
    assert executor_tasks(spark_cluster) > before


def test_cancel_frees_the_executor_of_tasks_that_ignore_it(spark_cluster: SparkCluster, conn) -> None:
    """The cancelled statement's tasks loop without looking at their kill flag (engine.reaper):
    the client has its 57014 at once, and the executor that cannot stop them exits after the
    reaper's timeout; the worker starts another and the next statements run."""
    conn.execute("CREATE TABLE cl_deaf (x int)")
    for lo in (1, 501):  # two files: a task on each of the worker's two cores
        conn.execute(f"INSERT INTO cl_deaf SELECT g FROM generate_series({lo}, {lo + 499}) g")
    timer = threading.Timer(3.0, conn.cancel_safe)
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT count(*) FROM cl_deaf a CROSS JOIN cl_deaf b CROSS JOIN cl_deaf c CROSS JOIN cl_deaf d")
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10
    # the tasks of the cancelled statement would hold both cores for hours
    conn.execute("SET statement_timeout = '180s'")
    assert conn.execute("SELECT count(*), sum(a.x) FROM cl_deaf a CROSS JOIN cl_deaf b").fetchone() == \
        (1000000, 1000 * 500500)
    assert conn.execute("SELECT count(*) FROM cl_deaf WHERE x % 2 = 0").fetchone() == (500,)
