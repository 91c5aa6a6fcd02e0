"""Every sqlness golden file through a gateway on the Spark standalone cluster (issue 22) and on a
PostgreSQL catalog (issue 21): each env's server is started with ``--spark-master`` the session's
``spark_cluster`` (tests/spark_cluster.py) and ``--catalog`` a database of the oracle PostgreSQL
server named after its data dir (tests/catalog_db.py), so a restarted server finds its catalog.
The README's final sqlness run covers the embedded catalog on local Spark.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import psycopg
import pytest

from tests.catalog_db import database_url
from tests.pgoracle import PostgresServer
from tests.spark_cluster import CLUSTER_CONF, SparkCluster
from tests.tidegate_server import REPO_ROOT


@pytest.mark.timeout(1500)
def test_sqlness_cases_through_the_cluster(spark_cluster: SparkCluster, pg_oracle: PostgresServer) -> None:
    """Every golden file, each env on its own gateway started with --spark-master and --catalog."""
    before = _catalog_databases(pg_oracle)
    cmd = [sys.executable, "-m", "tests.catalog_db", pg_oracle.url, "--host", "127.0.0.1", "--port", "{port}",
           "--data-dir", "{data_dir}", "--spark-master", spark_cluster.url, *CLUSTER_CONF]
    done = subprocess.run([sys.executable, "-m", "sqlness", "--server-cmd", shlex.join(cmd), "--start-timeout", "300"],
                          cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "0 failed" in done.stdout
    # The catalog really was in PostgreSQL: a new database holds the env's definitions.
    new = _catalog_databases(pg_oracle) - before
    assert len(new) == 1
    with psycopg.connect(database_url(pg_oracle.url, new.pop())) as conn:
        assert conn.execute("SELECT count(*) FROM schemas").fetchone()[0] >= 1
        assert conn.execute("SELECT count(*) FROM relations").fetchone()[0] >= 1


def _catalog_databases(pg: PostgresServer) -> set[str]:
    with psycopg.connect(pg.url) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'tg\\_%'")}
