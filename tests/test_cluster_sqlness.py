"""Every sqlness golden file through a gateway on the Spark standalone cluster (issue 22): each env's
server is started with ``--spark-master`` the session's ``spark_cluster`` (tests/spark_cluster.py).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from tests.spark_cluster import CLUSTER_CONF, SparkCluster
from tests.tidegate_server import REPO_ROOT


@pytest.mark.timeout(1500)
def test_sqlness_cases_through_the_cluster(spark_cluster: SparkCluster) -> None:
    """Every golden file, each env on its own gateway started with --spark-master."""
    cmd = [sys.executable, "-m", "tidegate", "serve", "--host", "127.0.0.1", "--port", "{port}",
           "--data-dir", "{data_dir}", "--spark-master", spark_cluster.url, *CLUSTER_CONF]
    done = subprocess.run([sys.executable, "-m", "sqlness", "--server-cmd", shlex.join(cmd), "--start-timeout", "300"],
                          cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "0 failed" in done.stdout
