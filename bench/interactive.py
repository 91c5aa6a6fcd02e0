"""Interactive reads (issue 23): tidegate's interactive path vs its Spark path vs PostgreSQL 15.

Measures, side by side in one run, on one N-row table ``kv (id bigint PRIMARY KEY, v text,
ts timestamptz, n numeric(12,2))`` loaded with COPY in commits of 100,000 rows:
  - primary-key point lookup ``SELECT v, ts, n FROM kv WHERE id = $1`` (random keys), p50 and p99,
    through psycopg (text) and asyncpg (binary);
  - ``SELECT * FROM kv WHERE id BETWEEN $1 AND $1 + 999 ORDER BY id`` (1,000 rows) p50;
  - ``SELECT * FROM series WHERE ts BETWEEN $1 AND $2`` (1,000 rows) p50, on an N-row time-series
    table ``series (host, ts TIME INDEX, cpu)`` of one row a second (PostgreSQL: an index on ts);
  - a read the statistics cannot narrow, ``SELECT id FROM kv WHERE v = 'none'`` over every row: the
    interactive path's cost at its size limit (engine.interactive.MAX_ROWS) against Spark's;
  - ``SELECT $1::bigint + 1`` p50 through psycopg and asyncpg (computed in the gateway, engine/scalar.py);
  - ``SELECT * FROM kv`` of every row, rows per second through psycopg and asyncpg (best of 3);
  - primary-key lookups per second by 50 asyncpg clients at once (5 s), and again while one more
    client runs a query only Spark answers over and over (10 s: how many it finished);
  - a prepared aggregate only Spark answers, p50 with its plan kept (engine/plans.py) and with
    ``plan_cache_mode = force_custom_plan`` (translated at every run);
  - one-row ``UPDATE kv SET v = $1 WHERE id = $2`` and ``DELETE FROM kv WHERE id = $1`` p50 (random
    keys; the rows found by the interactive path, the files holding them rewritten), and one-row
    ``INSERT`` of new keys p50 (the key checked, one small file committed).
"tidegate" is ``SET tidegate.interactive = on`` (the default), "tidegate Spark" the same
statements with it off.

Usage: python bench/interactive.py [--rows N] [--only postgres|tidegate|all] [--lookups K]
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import itertools
import random
import statistics
import time

import _common as C  # noqa: N812  (run as a script from bench/)
import asyncpg
import psycopg

from engine.interactive import MAX_ROWS

TARGET_LOOKUP_P50_MS = 2.0
TARGET_LOOKUP_P99_MS = 10.0
TARGET_RANGE_P50_MS = 10.0
TARGET_PARAM_P50_MS = 0.5
TARGET_WRITE_P50_MS = 20.0
TARGET_CLIENTS_QPS = 2_000
CLIENTS = 50
CHUNK = 100_000


def load(conn: C.Conn, rows: int) -> None:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS kv")
        c.execute("CREATE TABLE kv (id bigint PRIMARY KEY, v text, ts timestamptz, n numeric(12,2))")
        copy_rows(c, conn, "kv", rows, lambda k: f"{k}\tvalue {k}\t2024-01-01 00:00:00+00\t{k % 100000 / 100:.2f}\n")


def copy_rows(c: psycopg.Connection, conn: C.Conn, table: str, rows: int, line) -> None:
    """``rows`` lines ``line(k)`` into ``table`` with COPY, in commits of CHUNK rows (then VACUUM
    (ANALYZE) and a checkpoint on PostgreSQL)."""
    for start in range(0, rows, CHUNK):
        buf = io.StringIO()
        for k in range(start, min(rows, start + CHUNK)):
            buf.write(line(k))
        with c.cursor().copy(f"COPY {table} FROM STDIN") as copy:
            copy.write(buf.getvalue())
    if conn.name == "postgres":
        # settled as tidegate's table is after its load: vacuumed and analysed now, so autovacuum
        # does not take the cores during the first figures measured after the load
        c.execute(f"VACUUM (ANALYZE) {table}")
        c.execute("CHECKPOINT")


SERIES_START = dt.datetime(2024, 1, 1)


def load_series(conn: C.Conn, rows: int) -> None:
    """A time-series table, one row a second over ten hosts (PostgreSQL: with an index on ts, as
    a user of it would make)."""
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS series")
        if conn.name == "postgres":
            c.execute("CREATE TABLE series (host text, ts timestamp NOT NULL, cpu double precision, PRIMARY KEY (host, ts))")
            c.execute("CREATE INDEX ON series (ts)")
        else:
            c.execute("CREATE TABLE series (host text, ts timestamp NOT NULL, cpu double precision, TIME INDEX (ts),"
                      " PRIMARY KEY (host))")
        copy_rows(c, conn, "series", rows, lambda k: f"h{k % 10}\t{SERIES_START + dt.timedelta(seconds=k)}\t{k % 1000 / 10}\n")


COLD_STRIDE = 8_192  # a key per this many rows: one in every data file (files hold 32Ki rows and more)
LOOKUP = "SELECT v, ts, n FROM kv WHERE id = %s"
WINDOW = "SELECT * FROM series WHERE ts BETWEEN %s AND %s"


def cold_lookups_s(conn: C.Conn, rows: int) -> float:
    """Seconds to look up every COLD_STRIDE-th key of ``kv`` and read a second of ``series`` every
    COLD_STRIDE seconds, tables no lookup has read yet: every data file of both read once, so the
    figures after it are the steady state (and no background read of a table's other files shares
    the cores with them)."""
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        start = time.perf_counter()
        for k in range(0, rows, COLD_STRIDE):
            _drain(c.execute(LOOKUP, (k,)))
        for k in range(0, rows, COLD_STRIDE):
            second = SERIES_START + dt.timedelta(seconds=k)
            _drain(c.execute(WINDOW, (second, second)))
        return time.perf_counter() - start


def percentiles(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def _drain(cur: psycopg.Cursor) -> None:
    if cur.description is not None:  # a query (UPDATE / DELETE return no rows)
        cur.fetchall()


def psycopg_ms(conn: C.Conn, sql: str, make_params, n: int, setting: str | None) -> tuple[float, float]:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        if setting is not None:
            c.execute(f"SET tidegate.interactive = {setting}")
        for _ in range(min(20, n)):
            _drain(c.execute(sql, make_params()))
        samples = []
        for _ in range(n):
            params = make_params()
            start = time.perf_counter()
            _drain(c.execute(sql, params))
            samples.append((time.perf_counter() - start) * 1000)
    return percentiles(samples)


def kept_vs_translated_ms(conn: C.Conn, sql: str, make_params, n: int) -> tuple[float, float]:
    """p50 of ``sql`` prepared on two connections, one keeping its plan (plan_cache_mode auto) and
    one translating at every run (force_custom_plan), their runs alternating so that both see the
    same JVM warmth and load."""
    with psycopg.connect(conn.dsn, autocommit=True) as kept, psycopg.connect(conn.dsn, autocommit=True) as custom:
        custom.execute("SET plan_cache_mode = force_custom_plan")
        samples: dict[int, list[float]] = {0: [], 1: []}
        for k in range(n + 10):
            params = make_params()
            order = ((0, kept), (1, custom))  # which runs first alternates too
            for side, c in order if k % 2 else order[::-1]:
                start = time.perf_counter()
                _drain(c.execute(sql, params, prepare=True))
                if k >= 10:
                    samples[side].append((time.perf_counter() - start) * 1000)
    return statistics.median(samples[0]), statistics.median(samples[1])


def asyncpg_ms(conn: C.Conn, sql: str, rows: int, n: int, setting: str | None) -> tuple[float, float]:
    async def run() -> list[float]:
        c = await asyncpg.connect(host=conn.host, port=conn.port, user=conn.user, database=conn.dbname)
        try:
            if setting is not None:
                await c.execute(f"SET tidegate.interactive = {setting}")
            rnd = random.Random(7)
            for _ in range(min(20, n)):
                await c.fetch(sql, rnd.randrange(rows))
            samples = []
            for _ in range(n):
                key = rnd.randrange(rows)
                start = time.perf_counter()
                await c.fetch(sql, key)
                samples.append((time.perf_counter() - start) * 1000)
            return samples
        finally:
            await c.close()

    return percentiles(asyncio.run(run()))


def _ratio_ok(vals: dict[str, float], at_least: float) -> bool | None:
    if "tidegate" not in vals or "PostgreSQL 15" not in vals:
        return None
    return vals["tidegate"] >= at_least * vals["PostgreSQL 15"]


def _ratio_note(vals: dict[str, float]) -> str:
    if "tidegate" not in vals or "PostgreSQL 15" not in vals:
        return ""
    return f"tidegate / PostgreSQL = {vals['tidegate'] / vals['PostgreSQL 15']:.2f}"


def full_scan_rows_per_s(conn: C.Conn, setting: str | None) -> float:
    with psycopg.connect(conn.dsn, autocommit=True) as c:
        if setting is not None:
            c.execute(f"SET tidegate.interactive = {setting}")
        best = 0.0
        for _ in range(3):
            start = time.perf_counter()
            n = sum(1 for _ in c.execute("SELECT * FROM kv"))
            best = max(best, n / (time.perf_counter() - start))
    return best


def full_scan_rows_per_s_asyncpg(conn: C.Conn, setting: str | None) -> float:
    async def run() -> float:
        c = await asyncpg.connect(host=conn.host, port=conn.port, user=conn.user, database=conn.dbname)
        try:
            if setting is not None:
                await c.execute(f"SET tidegate.interactive = {setting}")
            best = 0.0
            for _ in range(3):
                start = time.perf_counter()
                n = len(await c.fetch("SELECT * FROM kv"))
                best = max(best, n / (time.perf_counter() - start))
            return best
        finally:
            await c.close()

    return asyncio.run(run())


ALONGSIDE = "SELECT count(*), max(v) FROM kv WHERE v LIKE '%77%'"  # not an interactive read: Spark's


def lookups_per_s(conn: C.Conn, setting: str | None, rows: int, clients: int, seconds: float,
                  alongside: str | None = None) -> tuple[float, int]:
    """Primary-key lookups per second by ``clients`` asyncpg connections (all connected first),
    each looking up random keys one after another for ``seconds``; with ``alongside``, one more
    connection runs that statement over and over meanwhile (returned: how many it finished)."""
    sql = "SELECT v FROM kv WHERE id = $1"

    async def run() -> tuple[float, int]:
        conns = [await asyncpg.connect(host=conn.host, port=conn.port, user=conn.user, database=conn.dbname)
                 for _ in range(clients + 1)]
        try:
            for c in conns:
                if setting is not None:
                    await c.execute(f"SET tidegate.interactive = {setting}")
                await c.fetch(sql, 0)
            stop = time.perf_counter() + seconds

            async def client(c: asyncpg.Connection, rnd: random.Random) -> int:
                done = 0
                while time.perf_counter() < stop:
                    await c.fetch(sql, rnd.randrange(rows))
                    done += 1
                return done

            async def other(c: asyncpg.Connection) -> int:
                done = 0
                while alongside is not None and time.perf_counter() < stop:
                    await c.fetch(alongside)
                    done += 1
                return done

            start = time.perf_counter()
            counts = await asyncio.gather(*[client(c, random.Random(k)) for k, c in enumerate(conns[:clients])],
                                          other(conns[clients]))
            return sum(counts[:-1]) / (time.perf_counter() - start), counts[-1]
        finally:
            for c in conns:
                await c.close()

    return asyncio.run(run())


def main() -> None:
    args = C.parse_args(__doc__.splitlines()[0], default_rows=1_000_000, extra=lambda p: p.add_argument(
        "--lookups", type=int, default=300, help="statements timed per figure on the fast paths (default 300)"))
    rows, n = args.rows, args.lookups
    slow_n = max(10, n // 10)  # the Spark path is timed on fewer statements
    report = C.Report(f"bench/interactive.py — {rows:,} rows, {n} lookups per figure",
                      ["tidegate", "tidegate Spark", "PostgreSQL 15"])
    with C.servers(args.only) as started:
        sides: list[tuple[str, C.Conn, str | None, int]] = []
        if "tidegate" in started:
            tg = C.tidegate_conn(started["tidegate"])
            print("loading tidegate ...", flush=True)
            load(tg, rows)
            load_series(tg, rows)
            sides += [("tidegate", tg, "on", n), ("tidegate Spark", tg, "off", slow_n)]
        if "postgres" in started:
            pg = C.postgres_conn(started["postgres"])
            print("loading PostgreSQL ...", flush=True)
            load(pg, rows)
            load_series(pg, rows)
            sides.append(("PostgreSQL 15", pg, None, n))

        rnd = random.Random(11)
        # A table just loaded is cold in tidegate's memory (its files not decoded yet): the first
        # lookups read files. Shown apart: a key every COLD_STRIDE rows, one after another, which
        # reads every file (a key every 50,000 rows left most of a 32Ki-row-file table to the
        # background reads, which the psycopg lookups then shared the cores with).
        vals = {label: cold_lookups_s(conn, rows) for label, conn, setting, _ in sides if setting != "off"}
        report.add(f"first reads of the cold tables: a key (a second) per {COLD_STRIDE:,} rows, s", vals, "", None,
                   "the lookups after it are the steady state measured below")
        p50, p99 = {}, {}
        for label, conn, setting, count in sides:
            p50[label], p99[label] = psycopg_ms(conn, LOOKUP, lambda: (rnd.randrange(rows),), count, setting)
        report.add("PK lookup p50 ms (psycopg)", p50, f"<= {TARGET_LOOKUP_P50_MS}",
                   None if "tidegate" not in p50 else p50["tidegate"] <= TARGET_LOOKUP_P50_MS)
        report.add("PK lookup p99 ms (psycopg)", p99, f"<= {TARGET_LOOKUP_P99_MS}",
                   None if "tidegate" not in p99 else p99["tidegate"] <= TARGET_LOOKUP_P99_MS)

        p50, p99 = {}, {}
        for label, conn, setting, count in sides:
            p50[label], p99[label] = asyncpg_ms(conn, "SELECT v, ts, n FROM kv WHERE id = $1", rows, count, setting)
        report.add("PK lookup p50 ms (asyncpg)", p50, f"<= {TARGET_LOOKUP_P50_MS}",
                   None if "tidegate" not in p50 else p50["tidegate"] <= TARGET_LOOKUP_P50_MS)
        report.add("PK lookup p99 ms (asyncpg)", p99, f"<= {TARGET_LOOKUP_P99_MS}",
                   None if "tidegate" not in p99 else p99["tidegate"] <= TARGET_LOOKUP_P99_MS)

        span = "SELECT * FROM kv WHERE id BETWEEN %s AND %s ORDER BY id"

        def span_params() -> tuple[int, int]:
            start = rnd.randrange(max(1, rows - 1000))
            return start, start + 999

        vals = {label: psycopg_ms(conn, span, span_params, max(10, count // 3), setting)[0]
                for label, conn, setting, count in sides}
        report.add("1,000-row key range p50 ms", vals, f"<= {TARGET_RANGE_P50_MS}",
                   None if "tidegate" not in vals else vals["tidegate"] <= TARGET_RANGE_P50_MS)

        def window_params() -> tuple[dt.datetime, dt.datetime]:
            start = SERIES_START + dt.timedelta(seconds=rnd.randrange(max(1, rows - 1000)))
            return start, start + dt.timedelta(seconds=999)

        vals = {label: psycopg_ms(conn, WINDOW, window_params, max(10, count // 3), setting)[0]
                for label, conn, setting, count in sides}
        report.add("1,000-row time range p50 ms (time-series table)", vals, f"<= {TARGET_RANGE_P50_MS}",
                   None if "tidegate" not in vals else vals["tidegate"] <= TARGET_RANGE_P50_MS)

        full = "SELECT id FROM kv WHERE v = 'none'"
        vals = {label: psycopg_ms(conn, full, lambda: None, 10, setting)[0] for label, conn, setting, _ in sides}
        note = ""
        if "tidegate" in vals and "tidegate Spark" in vals:
            note = (f"every row read: interactive / Spark = {vals['tidegate'] / vals['tidegate Spark']:.2f} "
                    f"(the interactive path takes reads up to {MAX_ROWS:,} candidate rows)")
        report.add(f"filter of all {rows:,} rows p50 ms", vals, "", None, note)

        vals = {label: psycopg_ms(conn, "SELECT %s::bigint + 1", lambda: (rnd.randrange(rows),), count, setting)[0]
                for label, conn, setting, count in sides}
        report.add("SELECT $1::bigint + 1 p50 ms (psycopg)", vals, f"<= {TARGET_PARAM_P50_MS}",
                   None if "tidegate" not in vals else vals["tidegate"] <= TARGET_PARAM_P50_MS)
        vals = {label: asyncpg_ms(conn, "SELECT $1::bigint + 1", rows, count, setting)[0]
                for label, conn, setting, count in sides}
        report.add("SELECT $1::bigint + 1 p50 ms (asyncpg)", vals, f"<= {TARGET_PARAM_P50_MS}",
                   None if "tidegate" not in vals else vals["tidegate"] <= TARGET_PARAM_P50_MS)

        # A statement only Spark answers, prepared and run again and again (psycopg prepares from the
        # sixth run): its kept plan is bound, not translated (engine/plans.py); "tidegate Spark" is
        # the same with plan_cache_mode = force_custom_plan (translated at every run).
        aggregate = "SELECT count(*), sum(n), min(v) FROM kv WHERE id BETWEEN %s AND %s AND v <> %s"

        def aggregate_params() -> tuple[int, int, str]:
            start = rnd.randrange(max(1, rows - 1000))
            return start, start + 999, f"value {start}"

        vals = {}
        for label, conn, setting, _ in sides:
            if setting == "off":
                continue
            if setting is None:
                vals[label] = psycopg_ms(conn, aggregate, aggregate_params, 60, setting)[0]
            else:
                vals[label], vals["tidegate Spark"] = kept_vs_translated_ms(conn, aggregate, aggregate_params, 60)
        note = ""
        if "tidegate" in vals and "tidegate Spark" in vals:
            note = (f"translation saved per run: {vals['tidegate Spark'] - vals['tidegate']:.1f} ms "
                    "(runs of both alternate; the Spark job is the rest)")
        report.add("prepared Spark aggregate p50 ms: plan kept / translated per run", vals, "", None, note)

        fast_sides = [(label, conn, setting) for label, conn, setting, _ in sides if setting != "off"]
        vals = {}
        for label, conn, setting in fast_sides:
            vals[label] = full_scan_rows_per_s(conn, setting)
        report.add("SELECT * of all rows, psycopg (text) rows/s", vals, ">= 0.9x PostgreSQL",
                   _ratio_ok(vals, 0.9), _ratio_note(vals))
        vals = {label: full_scan_rows_per_s_asyncpg(conn, setting) for label, conn, setting in fast_sides}
        report.add("SELECT * of all rows, asyncpg (binary) rows/s", vals, ">= 0.9x PostgreSQL",
                   _ratio_ok(vals, 0.9), _ratio_note(vals))
        vals = {label: lookups_per_s(conn, setting, rows, CLIENTS, seconds=5.0)[0] for label, conn, setting in fast_sides}
        report.add(f"PK lookups/s, {CLIENTS} asyncpg clients", vals, f">= {TARGET_CLIENTS_QPS:,}",
                   None if "tidegate" not in vals else vals["tidegate"] >= TARGET_CLIENTS_QPS)
        both = {label: lookups_per_s(conn, setting, rows, CLIENTS, seconds=10.0, alongside=ALONGSIDE)
                for label, conn, setting in fast_sides}
        report.add(f"PK lookups/s, {CLIENTS} clients + 1 running a Spark query", {k: v[0] for k, v in both.items()},
                   "", None,
                   "the other query (" + ALONGSIDE + ") finished in 10 s: "
                   + ", ".join(f"{k} {v[1]}" for k, v in both.items()) + "; it takes the cores the lookups share")

        # writes last: they change the rows the reads above looked up
        writes = max(10, n // 10)
        fresh_keys = itertools.count()
        for label_sql, sql, make in (
                ("one-row UPDATE by key p50 ms", "UPDATE kv SET v = %s WHERE id = %s",
                 lambda: ("updated", rnd.randrange(rows))),
                ("one-row DELETE by key p50 ms", "DELETE FROM kv WHERE id = %s", lambda: (rnd.randrange(rows),)),
                # new keys past the load's (each side's own count, so no key repeats on a side)
                ("one-row INSERT of a new key p50 ms", "INSERT INTO kv (id, v) VALUES (%s, 'new')",
                 lambda: (rows + next(fresh_keys),))):
            vals = {label: psycopg_ms(conn, sql, make, writes if setting != "off" else max(5, writes // 4), setting)[0]
                    for label, conn, setting, _ in sides}
            report.add(label_sql, vals, f"<= {TARGET_WRITE_P50_MS}",
                       None if "tidegate" not in vals else vals["tidegate"] <= TARGET_WRITE_P50_MS)
    report.print()


if __name__ == "__main__":
    main()
