"""A real Spark standalone cluster on this machine, started with PySpark's own launcher.

``spark-class org.apache.spark.deploy.master.Master`` and one ``...deploy.worker.Worker`` (2 cores,
small memory), both bound to 127.0.0.1 with the master's REST submission server off. A gateway
started with ``--spark-master <url>`` then runs its Spark work on the worker's executor: a
separate JVM and separate Python workers, reading and writing the warehouse at the same path.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.pgoracle import free_port


# A gateway's flags for the cluster. An application takes every core of the worker while it runs
# (Spark's default), so the suites on the cluster run one gateway at a time.
CLUSTER_CONF = ["--spark-conf", "spark.executor.memory=1g", "--spark-conf", "spark.sql.shuffle.partitions=2"]


@dataclass
class SparkCluster:
    url: str
    folder: Path
    procs: list[subprocess.Popen]

    def log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def start_cluster(cores: int = 2, memory: str = "2g", timeout: float = 90.0) -> SparkCluster:
    folder = Path(tempfile.mkdtemp(prefix="tidegate-spark-cluster-"))
    home = spark_home()
    port = free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(folder), "SPARK_WORKER_DIR": str(folder / "work"),
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "SPARK_NO_DAEMONIZE": "1"}
    launcher = str(home / "bin" / "spark-class")
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    cluster = SparkCluster(url, folder, procs)

    def launch(name: str, *args: str) -> None:
        with open(folder / f"{name}.log", "wb") as out:
            procs.append(subprocess.Popen([launcher, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True, cwd=folder))

    def wait_for(name: str, text: str) -> None:
        deadline = time.time() + timeout
        while text not in cluster.log(name):
            if any(p.poll() is not None for p in procs) or time.time() > deadline:
                cluster.stop()
                raise RuntimeError(f"Spark {name} did not start:\n{cluster.log(name)[-3000:]}")
            time.sleep(0.2)

    launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
           "--webui-port", str(free_port()))
    wait_for("master", "I have been elected leader")
    launch("worker", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(cores),
           "--memory", memory, "--webui-port", str(free_port()), url)
    wait_for("worker", "Successfully registered with master")
    return cluster
