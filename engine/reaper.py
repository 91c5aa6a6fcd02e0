"""Stopping the Spark tasks a cancel does not stop.

Cancelling a statement cancels its Spark jobs, and Spark kills their running tasks by setting a
flag and interrupting the task threads (``setInterruptOnCancel``). A task notices either only
where its code checks: when it reads its next input batch. Generated code that loops long over
one batch never checks. ``SELECT count(*) FROM t a, t b, t c, t d`` over a 1,000-row table is one
such loop: 10^12 iterations behind one Parquet batch. It kept both cores of a 2-core machine busy
for the half hour it needed, long after its client had been told 57014, and every later statement
queued behind it.

PostgreSQL stops such a statement at its next CHECK_FOR_INTERRUPTS. Here a task that is still
running :data:`GRACE_S` seconds after its job was cancelled has its thread stopped
(``Thread.stop``; Java 17 still has it). The ThreadDeath ends the task like any other task
failure: Spark releases its memory and shuffle files, and the job had already failed. For that to
be all, the local master runs with ``spark.executor.killOnFatalError.depth=0``
(:data:`engine.spark.LOCAL_CONF`). With the default, Spark would take any error it does not
know as harmless for a JVM-wide fault and exit the process, which with a local master is the
gateway.

Only a local master runs its tasks in this process. A cluster's executors use Spark's own task
reaper (:data:`engine.spark.CLUSTER_CONF`): an executor whose killed task does not stop within its
timeout exits, and its worker starts another.

A task thread is recognised by the name Spark gives it while it runs a task, "Executor task
launch worker for task P.A in stage S.T (TID N)", with S one of the cancelled jobs' stages;
Spark renames the thread when the task ends. A stage belongs to one statement's jobs: each
statement plans its own DataFrame, so no two statements share a shuffle.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

GRACE_S = 3.0  # a task that checks its kill flag at all stops within milliseconds
_TASK_THREAD = re.compile(r"^Executor task launch worker for task \S+ in stage (\d+)\.\d+ \(TID (\d+)\)$")


class TaskReaper:
    """Stops the threads of tasks that outlive their cancelled jobs by :data:`GRACE_S` seconds.

    ``spark``: returns the running SparkSession (or raises when there is none).
    """

    def __init__(self, spark: Any, grace_s: float = GRACE_S) -> None:
        self._spark = spark
        self._grace_s = grace_s
        self._lock = threading.Lock()
        self._due: dict[str, float] = {}  # job tag -> when its tasks must have stopped
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    def watch(self, tag: str) -> None:
        """``tag``'s jobs were just cancelled: stop their tasks that are still running after the grace
        (with a local master: a cluster's executors have Spark's own reaper)."""
        try:
            if not self._spark().sparkContext.master.startswith("local"):
                return
        except Exception:  # noqa: BLE001 - no Spark: nothing runs
            return
        with self._lock:
            if tag in self._due:
                return
            self._due[tag] = time.monotonic() + self._grace_s
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="tidegate-task-reaper", daemon=True)
                self._thread.start()
        self._wake.set()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._due:
                    self._thread = None
                    return
                now = time.monotonic()
                ready = [tag for tag, due in self._due.items() if due <= now]
                for tag in ready:
                    del self._due[tag]
                wait = min(self._due.values(), default=now) - now
            for tag in ready:
                try:
                    self.reap(tag)
                except Exception:  # noqa: BLE001 - Spark stopped meanwhile, or a thread ended
                    log.warning("stopping the tasks of cancelled jobs %s failed", tag, exc_info=True)
            if not ready:
                self._wake.wait(max(wait, 0.01))
                self._wake.clear()

    def reap(self, tag: str) -> int:
        """Stop the task threads still running for ``tag``'s jobs now; how many were stopped."""
        spark = self._spark()
        jsc = spark.sparkContext._jsc.sc()
        tracker = jsc.statusTracker()
        stages: set[int] = set()
        for job in tracker.getJobIdsForTag(tag):
            info = tracker.getJobInfo(job)
            if info.isDefined():
                stages.update(int(s) for s in info.get().stageIds())
        if not stages:
            return 0
        stopped = 0
        for thread in spark._jvm.java.lang.Thread.getAllStackTraces().keySet().toArray():
            found = _TASK_THREAD.match(thread.getName())
            if found is None or int(found.group(1)) not in stages or not thread.isAlive():
                continue
            log.warning("Spark task %s of cancelled statement %s ignored its kill for %.0f s: stopping its thread",
                        found.group(2), tag, self._grace_s)
            try:
                thread.stop()
                stopped += 1
            except Exception:  # noqa: BLE001 - a JVM without Thread.stop (Java 20+)
                log.warning("could not stop Spark task %s; it runs until it ends", found.group(2), exc_info=True)
        return stopped
