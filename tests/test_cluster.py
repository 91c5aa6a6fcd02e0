"""tidegate on a Spark standalone cluster (issue 22): a real master and worker started with PySpark's
own launcher (tests/spark_cluster.py), the gateway started with ``--spark-master spark://...``.

The worker's executor is its own JVM with its own Python workers; the warehouse is at the same
path for both (one machine). Each test checks through a real client what a user sees, and that
the executor, not the driver, ran tasks. The sqlness golden files run through the cluster too.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import psycopg
import pytest
from deltalake import DeltaTable

from tests.spark_cluster import SparkCluster, start_cluster
from tests.tidegate_server import REPO_ROOT, start_tidegate

CLUSTER_CONF = ["--spark-conf", "spark.executor.memory=1g", "--spark-conf", "spark.sql.shuffle.partitions=2"]


@pytest.fixture(scope="module")
def cluster() -> SparkCluster:
    c = start_cluster()
    yield c
    c.stop()


@pytest.fixture(scope="module")
def gw(cluster: SparkCluster, tmp_path_factory):
    server = start_tidegate(tmp_path_factory.mktemp("cluster-data") / "data",
                            extra_args=["--spark-master", cluster.url, *CLUSTER_CONF])
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


def test_queries_and_writes_run_on_the_executor(cluster: SparkCluster, conn, gw) -> None:
    before = executor_tasks(cluster)
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
    assert executor_tasks(cluster) > before


def test_batch_flow_and_job_on_the_cluster(cluster: SparkCluster, conn) -> None:
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


@pytest.mark.timeout(1500)
def test_sqlness_cases_through_the_cluster(cluster: SparkCluster, tmp_path: Path) -> None:
    """Every golden file, each env on its own gateway started with --spark-master."""
    cmd = [sys.executable, "-m", "tidegate", "serve", "--host", "127.0.0.1", "--port", "{port}",
           "--data-dir", "{data_dir}", "--spark-master", cluster.url, *CLUSTER_CONF]
    done = subprocess.run([sys.executable, "-m", "sqlness", "--server-cmd", shlex.join(cmd), "--start-timeout", "300"],
                          cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "0 failed" in done.stdout
