"""Jobs (issue 20): what SUBMIT JOB costs, 200 jobs at once, and a job's overhead over the same
statement run directly.

One gateway on a fresh data dir (default settings: ``max_running_jobs = 2``) with a table of
``--rows`` rows. Printed side by side:

* SUBMIT round trip p50 / p99 over 200 submissions from one psycopg connection while both job
  slots hold jobs that wait for a table lock (the machine quiet; the submitted jobs queue and are
  cancelled). Target p50 <= 5 ms (it must not wait for Spark).
* 200 jobs submitted at once from one psycopg connection (each a grouped count over one residue
  class of the table): the SUBMIT round trip p50 / p99 (the time until the job id arrives, while
  the jobs submitted before it run), the time until all are finished, and whether every FETCH JOB
  equals the direct answer. Targets: SUBMIT p50 <= 5 ms here too (Spark then keeps both
  cores busy); all 200 correct.
* Overhead: a Spark query (an aggregate over the table) and an ``INSERT ... SELECT`` of a tenth of
  it, each run directly and as a job (SUBMIT, WAIT JOB, FETCH JOB: the time a client needs to get
  the same answer), median of ``--repeat`` runs after one untimed run of each. Target: job time
  <= 1.1 x direct + 50 ms.

    python bench/jobs.py [--rows 1000000] [--repeat 7]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import psycopg  # noqa: E402

import _common as C  # noqa: E402,N812  (run as a script from bench/)

GROUPS = 200


def submit(conn: psycopg.Connection, statement: str) -> str:
    return conn.execute(f"SUBMIT JOB AS {statement}").fetchone()[0]


def run_as_job(conn: psycopg.Connection, statement: str) -> tuple[list[tuple] | None, str]:
    """SUBMIT, WAIT JOB, FETCH JOB: the answer a client gets, as it gets it directly."""
    job_id = submit(conn, statement)
    status = conn.execute(f"WAIT JOB '{job_id}'").fetchone()[3]
    if status != "SUCCEEDED":
        raise RuntimeError(f"job {job_id} ended {status}")
    cur = conn.execute(f"FETCH JOB '{job_id}'")
    return (cur.fetchall() if cur.description else None), cur.statusmessage or ""


def run_direct(conn: psycopg.Connection, statement: str) -> tuple[list[tuple] | None, str]:
    cur = conn.execute(statement)
    return (cur.fetchall() if cur.description else None), cur.statusmessage or ""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    args = C.parse_args(__doc__.splitlines()[0], 1_000_000,
                        lambda p: p.add_argument("--repeat", type=int, default=7))
    with C.servers(only="tidegate") as started:
        tg = started["tidegate"]
        with psycopg.connect(tg.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
            conn.execute("CREATE TABLE bench_jobs (id bigint PRIMARY KEY, k int, v double precision, s text)")
            conn.execute(f"INSERT INTO bench_jobs SELECT g, g % {GROUPS}, g * 0.5, 'row ' || g "
                         f"FROM generate_series(1, {args.rows}) g")
            conn.execute("CREATE TABLE bench_jobs_copy (id bigint, k int, v double precision, s text)")

            # Warm-up: 20 untimed jobs, then let the load above settle (its compaction, the JIT).
            for i in range(20):
                submit(conn, f"SELECT count(*) FROM bench_jobs WHERE k = {i}")
            wait_idle(conn)
            time.sleep(5)

            # 1. SUBMIT on a quiet machine: both slots hold jobs waiting for a table lock another
            # session holds (no CPU), so the 200 timed submissions queue as PENDING; they are
            # cancelled before the lock is released.
            conn.execute("CREATE TABLE bench_jobs_lock (id int PRIMARY KEY, n int)")
            conn.execute("INSERT INTO bench_jobs_lock VALUES (1, 0)")
            holder = psycopg.connect(tg.dsn)  # type: ignore[attr-defined]
            holder.execute("UPDATE bench_jobs_lock SET n = n + 1")  # its transaction keeps the lock
            blocked = [submit(conn, "UPDATE bench_jobs_lock SET n = n + 1") for _ in range(2)]
            while [conn.execute(f"SELECT status FROM information_schema.jobs WHERE job_id = '{b}'").fetchone()[0]
                   for b in blocked] != ["RUNNING", "RUNNING"]:
                time.sleep(0.1)
            quiet = []
            queued = []
            for i in range(200):
                t1 = time.perf_counter()
                queued.append(submit(conn, f"SELECT k, count(*) FROM bench_jobs WHERE k = {i} GROUP BY k"))
                quiet.append((time.perf_counter() - t1) * 1000)
            for job_id in queued:
                conn.execute(f"CANCEL JOB '{job_id}'")
            holder.commit()
            holder.close()
            wait_idle(conn)

            # 2. 200 jobs submitted at once, each SUBMIT timed (the earlier jobs run meanwhile),
            # each result checked against the direct answer.
            statements = [f"SELECT k, count(*), sum(v) FROM bench_jobs WHERE k = {g} GROUP BY k" for g in range(GROUPS)]
            trips = []
            ids = []
            t0 = time.perf_counter()
            for statement in statements:
                t1 = time.perf_counter()
                ids.append(submit(conn, statement))
                trips.append((time.perf_counter() - t1) * 1000)
            for job_id in ids:
                conn.execute(f"WAIT JOB '{job_id}'")
            burst_s = time.perf_counter() - t0
            expected = {r[0]: r for r in conn.execute(
                "SELECT k, count(*), sum(v) FROM bench_jobs GROUP BY k").fetchall()}
            correct = sum(1 for g, job_id in enumerate(ids)
                          if conn.execute(f"FETCH JOB '{job_id}'").fetchall() == [expected[g]])

            # 3. Overhead of a job over the same statement run directly.
            cases = [
                ("aggregate query", "SELECT k % 10 AS b, count(*), avg(v), max(s) FROM bench_jobs GROUP BY 1 ORDER BY 1",
                 None),
                ("INSERT ... SELECT (a tenth)", "INSERT INTO bench_jobs_copy SELECT * FROM bench_jobs WHERE k < 20",
                 "TRUNCATE bench_jobs_copy"),
            ]
            overhead = []
            for name, statement, reset in cases:
                direct, job = [], []
                for k in range(args.repeat + 1):
                    for which, fn, out in (("direct", run_direct, direct), ("job", run_as_job, job)):
                        if reset:
                            conn.execute(reset)
                        t0 = time.perf_counter()
                        answer = fn(conn, statement)
                        if k:
                            out.append(time.perf_counter() - t0)
                        if which == "direct":
                            want = answer
                        elif answer != want:
                            raise RuntimeError(f"{name}: the job's answer differs: {answer[1]} vs {want[1]}")
                overhead.append((name, statistics.median(direct), statistics.median(job)))

    lines = [("metric", "direct", "job", "ratio", "target", "ok?")]
    for label, values in (("slots busy, machine quiet", quiet), ("while the 200 jobs run", trips)):
        p50, p99 = pct(values, 0.5), pct(values, 0.99)
        lines.append((f"SUBMIT round trip p50 ms, {label}", "", f"{p50:.2f}", "", "<= 5", "yes" if p50 <= 5 else "NO"))
        lines.append((f"SUBMIT round trip p99 ms, {label}", "", f"{p99:.2f}", "", "", ""))
    lines.append((f"{GROUPS} jobs at once: seconds until all ended", "", f"{burst_s:.1f}", "", "", ""))
    lines.append((f"{GROUPS} jobs at once: FETCH equal to the direct answer", "", f"{correct}/{GROUPS}", "",
                  f"{GROUPS}/{GROUPS}", "yes" if correct == GROUPS else "NO"))
    for name, d, j in overhead:
        limit = 1.1 * d + 0.05
        lines.append((f"{name}: median s ({args.rows:,} rows)", f"{d:.3f}", f"{j:.3f}", f"{j / d:.2f}x",
                      f"<= {limit:.3f} (1.1x + 50 ms)", "yes" if j <= limit else "NO"))
    widths = [max(len(str(r[i])) for r in lines) for i in range(6)]
    print()
    for r in lines:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())


def wait_idle(conn: psycopg.Connection) -> None:
    while conn.execute("SELECT count(*) FROM information_schema.jobs "
                       "WHERE status IN ('PENDING', 'RUNNING')").fetchone()[0]:
        time.sleep(0.1)


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main()
