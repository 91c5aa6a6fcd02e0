"""Concurrent writers: tidegate vs PostgreSQL 15, 8 clients on one table, side by side.

Measures, with W writer threads (default 8), each its own connection:
  - single-row autocommit INSERTs into one PRIMARY KEY table: commits/s and p50 latency;
  - `UPDATE ctr SET n = n + 1 WHERE id = 1` increments of ONE row (every writer contends):
    commits/s, p50 latency, and whether the final count is exact (no lost update);
  - transactions writing two tables (BEGIN; INSERT a; INSERT b; COMMIT): commits/s;
  - create-load-swap transactions (transactional DDL: CREATE, INSERT, DROP, RENAME, COMMIT), each
    writer swapping its own table: commits/s;
  - the share of commits the client had to retry (40001 / 40P01 answers); tidegate re-runs an
    UPDATE itself when a non-locking commit raced it, which the client does not see.

Usage: python bench/concurrency.py [--writers 8] [--seconds 20] [--only postgres|tidegate|all]
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable

import _common as C  # noqa: N812  (run as a script from bench/)
import psycopg

TARGET_RATIO = 0.1  # commits/s vs PostgreSQL: a floor for a Delta-backed store, not a promise


def _run(conn: C.Conn, writers: int, seconds: float, setup: Callable[[psycopg.Connection], None],
         work: Callable[[psycopg.Connection, int, int], None], autocommit: bool = True) -> dict[str, float]:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        setup(c)
    latencies: list[float] = []
    retries = [0]
    done = [0]
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def writer(w: int) -> None:
        with psycopg.connect(conn.dsn, autocommit=autocommit) as c:
            i = 0
            while time.perf_counter() < stop:
                start = time.perf_counter()
                try:
                    work(c, w, i)
                except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected):
                    if not autocommit:
                        c.rollback()
                    with lock:
                        retries[0] += 1
                    continue
                elapsed = time.perf_counter() - start
                with lock:
                    latencies.append(elapsed)
                    done[0] += 1
                i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    return {"commits_per_s": done[0] / wall, "p50_ms": statistics.median(latencies) * 1000 if latencies else 0.0,
            "retried_share": retries[0] / max(1, retries[0] + done[0]), "commits": float(done[0])}


def main() -> None:
    args = C.parse_args(__doc__.splitlines()[0], default_rows=0, extra=lambda p: (
        p.add_argument("--writers", type=int, default=8), p.add_argument("--seconds", type=float, default=20.0)))
    report = C.Report(f"Concurrent writers ({args.writers} clients, {args.seconds:.0f} s per test)",
                      ["postgres", "tidegate"])
    results: dict[str, dict[str, dict[str, float]]] = {}
    with C.servers(args.only) as started:
        conns = {name: (C.postgres_conn(s) if name == "postgres" else C.tidegate_conn(s))
                 for name, s in started.items()}
        for name, conn in conns.items():
            print(f"{name}: inserts ...", flush=True)
            ins = _run(conn, args.writers, args.seconds,
                       lambda c: (c.execute("DROP TABLE IF EXISTS cc_ins"),
                                  c.execute("CREATE TABLE cc_ins (w int, i int, v text, PRIMARY KEY (w, i))")),
                       lambda c, w, i: c.execute("INSERT INTO cc_ins VALUES (%s, %s, 'x')", (w, i)))
            print(f"{name}: increments ...", flush=True)
            inc = _run(conn, args.writers, args.seconds,
                       lambda c: (c.execute("DROP TABLE IF EXISTS cc_ctr"),
                                  c.execute("CREATE TABLE cc_ctr (id int PRIMARY KEY, n bigint)"),
                                  c.execute("INSERT INTO cc_ctr VALUES (1, 0)")),
                       lambda c, w, i: c.execute("UPDATE cc_ctr SET n = n + 1 WHERE id = 1"))
            with psycopg.connect(conn.dsn, autocommit=True) as c:
                final = c.execute("SELECT n FROM cc_ctr").fetchone()[0]
            inc["exact"] = 1.0 if final == inc["commits"] else 0.0
            print(f"{name}: two-table transactions ...", flush=True)

            def two(c: psycopg.Connection, w: int, i: int) -> None:
                c.execute("INSERT INTO cc_a VALUES (%s, %s)", (w, i))
                c.execute("INSERT INTO cc_b VALUES (%s, %s)", (w, i))
                c.commit()

            txn = _run(conn, args.writers, args.seconds,
                       lambda c: [c.execute(s) for s in (
                           "DROP TABLE IF EXISTS cc_a", "DROP TABLE IF EXISTS cc_b",
                           "CREATE TABLE cc_a (w int, i int, PRIMARY KEY (w, i))",
                           "CREATE TABLE cc_b (w int, i int, PRIMARY KEY (w, i))")],
                       two, autocommit=False)
            print(f"{name}: create-load-swap transactions ...", flush=True)

            def swap(c: psycopg.Connection, w: int, i: int) -> None:
                c.execute(f"CREATE TABLE cc_s{w}_{i} (id int, v text)")
                c.execute(f"INSERT INTO cc_s{w}_{i} VALUES (1, 'a'), (2, 'b')")
                c.execute(f"DROP TABLE IF EXISTS cc_s{w}")
                c.execute(f"ALTER TABLE cc_s{w}_{i} RENAME TO cc_s{w}")
                c.commit()

            ddl = _run(conn, args.writers, args.seconds,
                       lambda c: [c.execute(f"DROP TABLE IF EXISTS cc_s{w}") for w in range(args.writers)],
                       swap, autocommit=False)
            results[name] = {"insert": ins, "increment": inc, "txn": txn, "ddl": ddl}

    def col(kind: str, metric: str) -> dict[str, float | None]:
        return {n: r[kind][metric] for n, r in results.items()}

    def ratio(kind: str) -> tuple[bool | None, str]:
        if len(results) < 2:
            return None, ""
        r = results["tidegate"][kind]["commits_per_s"] / results["postgres"][kind]["commits_per_s"]
        return r >= TARGET_RATIO, f"tidegate / postgres = {r:.3f}"

    for kind, label in (("insert", "single-row INSERT"), ("increment", "UPDATE n = n + 1 of one row"),
                        ("txn", "BEGIN; INSERT a; INSERT b; COMMIT"),
                        ("ddl", "BEGIN; CREATE t_new; INSERT; DROP t; RENAME t_new TO t; COMMIT")):
        ok, note = ratio(kind)
        report.add(f"{label}: commits/s", col(kind, "commits_per_s"), f">= {TARGET_RATIO}x postgres", ok, note)
        report.add(f"{label}: p50 ms", col(kind, "p50_ms"))
        report.add(f"{label}: retried share", col(kind, "retried_share"))
    report.add("increments exact (final n = commits)", {n: "yes" if r["increment"]["exact"] else "NO"
                                                       for n, r in results.items()}, "yes",
               all(r["increment"]["exact"] for r in results.values()))
    report.print()


if __name__ == "__main__":
    main()
