"""The Spark path's plan cache (engine/plans.py, issue 23): a query a session runs again is not
translated again; its parameters are bound into the kept translation.

Through real clients (psycopg prepared statements, asyncpg), against PostgreSQL 15: generated
parameter values, run many times per statement so that most runs use a kept plan, must give
PostgreSQL's rows; a kept plan never answers from a table version older than the last commit, a
time zone it was not made in, or a privilege since revoked. In-process, with the translator
counted: which statements keep a plan, and which are translated at every run.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import threading
import time
import uuid
from decimal import Decimal

import asyncpg
import psycopg
import pyarrow as pa
import pytest

from tests.targets import target_for

ROWS = 240


def _value_rows(rnd: random.Random) -> list[str]:
    texts = ["'a'", "'b'", "''", "'it''s'", "'back\\slash'", "'50%'", "'a_c'", "'Zoë'", "'日本'", "'pad  '", "'x'"]
    out = []
    for k in range(1, ROWS + 1):
        def maybe(v: str) -> str:
            return "NULL" if rnd.random() < 0.12 else v

        out.append("(" + ", ".join([
            str(k),
            maybe(str(rnd.randint(-50, 50))),
            maybe(rnd.choice(texts)),
            maybe(f"{rnd.randint(-10**5, 10**5) / 100:.2f}"),
            maybe(repr(rnd.uniform(-100, 100))),
            maybe(f"timestamp '2024-03-01' + interval '{rnd.randint(0, 60 * 24 * 40)} minutes'"),
            maybe(f"timestamptz '2024-03-01 00:00+00' + interval '{rnd.randint(0, 60 * 24 * 40)} minutes'"),
            maybe(f"date '2024-03-01' + {rnd.randint(0, 40)}"),
            maybe(rnd.choice(["'\\x00ff'", "'\\x41'", "''", "'\\x5c27'"])),
        ]) + ")")
    return out


DDL = ("CREATE TABLE {t} (id bigint PRIMARY KEY, i4 integer, t text, n numeric(10,2), f double precision, "
       "ts timestamp, tz timestamptz, d date, by bytea)")


@pytest.fixture(scope="module")
def servers(request: pytest.FixtureRequest):
    """The same table on PostgreSQL and on tidegate (the shared gateway; its tables here are pc_*)."""
    pg, tg = target_for(request, "postgres"), target_for(request, "tidegate")
    table = f"pc_{uuid.uuid4().hex[:8]}"
    values = _value_rows(random.Random(31))
    for target in (pg, tg):
        with psycopg.connect(target.dsn, autocommit=True) as c:
            c.execute(DDL.format(t=table))
            for start in range(0, ROWS, 80):
                c.execute(f"INSERT INTO {table} VALUES " + ", ".join(values[start:start + 80]))
    return pg, tg, table


def _connect(target, zone: str = "UTC") -> psycopg.Connection:
    conn = psycopg.connect(target.dsn, autocommit=True, prepare_threshold=0)
    conn.execute(f"SET TIME ZONE '{zone}'")
    if target.name == "tidegate":
        conn.execute("SET tidegate.interactive = off")  # every statement on Spark, where plans are kept
    return conn


TEXTS = ["a", "b", "", "it's", "back\\slash", "50%", "a_c", "Zoë", "日本", "pad  ", "pad", "zz", "'; --"]
PATTERNS = ["a%", "%", "a\\_c", "a_c", "%\\%", "50\\%", "%'%", "Zo_", "%pad  ", "_", "", "%\\\\%", "%本"]


def _statements(table: str, rnd: random.Random) -> list[tuple[str, object]]:
    """(SQL with %s placeholders, a function giving one run's parameters)."""
    def ts() -> dt.datetime:
        return dt.datetime(2024, 3, 1) + dt.timedelta(minutes=rnd.randint(0, 60 * 24 * 40))

    def tz() -> dt.datetime:
        zone = rnd.choice([dt.timezone.utc, dt.timezone(dt.timedelta(hours=-5)), dt.timezone(dt.timedelta(hours=5, minutes=30))])
        return ts().replace(tzinfo=zone)

    def day() -> dt.date:
        return dt.date(2024, 3, 1) + dt.timedelta(days=rnd.randint(-2, 42))

    def num() -> Decimal:
        return Decimal(rnd.choice(["0", "-12.5", "999.99", "0.01", "-1000", "123.456", "7"]))

    def big() -> int:
        return rnd.choice([1, 50, 120, -1, 2**31 + 5, -(2**40), 0])

    return [
        (f"SELECT count(*), sum(n), min(t), max(f) FROM {table} WHERE id BETWEEN %s AND %s",
         lambda: sorted([rnd.randint(-5, ROWS + 5), rnd.randint(-5, ROWS + 5)])),
        (f"SELECT t, count(*), sum(i4) FROM {table} WHERE i4 > %s AND t <> %s GROUP BY t ORDER BY t NULLS FIRST",
         lambda: [rnd.randint(-60, 60), rnd.choice(TEXTS)]),
        (f"SELECT id, ts FROM {table} WHERE ts >= %s AND ts < %s ORDER BY id", lambda: sorted([ts(), ts()])),
        (f"SELECT id, tz FROM {table} WHERE tz > %s ORDER BY id LIMIT 7", lambda: [tz()]),
        (f"SELECT d, count(*) FROM {table} WHERE d IN (%s, %s, %s) GROUP BY d ORDER BY d",
         lambda: [day(), day(), day()]),
        (f"SELECT id, t FROM {table} WHERE t = %s OR t = %s ORDER BY id", lambda: [rnd.choice(TEXTS), rnd.choice(TEXTS)]),
        (f"SELECT id FROM {table} WHERE by = %s ORDER BY id",
         lambda: [rnd.choice([b"\x00\xff", b"A", b"", b"\\'", b"zz"])]),
        (f"SELECT id, n FROM {table} WHERE n BETWEEN %s AND %s ORDER BY id", lambda: sorted([num(), num()])),
        (f"SELECT id, f FROM {table} WHERE f < %s ORDER BY f DESC, id LIMIT %s",
         lambda: [rnd.choice([0.5, -99.25, 1e300, 42.0]), rnd.choice([0, 1, 3])]),
        (f"SELECT a.id, b.id FROM {table} a JOIN {table} b ON a.i4 = b.i4 WHERE a.id = %s ORDER BY b.id",
         lambda: [rnd.randint(0, ROWS)]),
        (f"SELECT id, row_number() OVER (ORDER BY id DESC) FROM {table} WHERE id >= %s ORDER BY id LIMIT 4",
         lambda: [big()]),
        (f"SELECT i4, count(*) FROM {table} WHERE i4 = %s OR id = %s GROUP BY i4 ORDER BY i4 NULLS LAST",
         lambda: [rnd.choice([None, 3, -7, 0]), rnd.choice([None, 4, 9])]),
        (f"SELECT id, t FROM {table} WHERE t LIKE %s ORDER BY id LIMIT %s OFFSET %s",
         lambda: [rnd.choice(PATTERNS), rnd.choice([None, 0, 3, 100]), rnd.choice([0, 2])]),
    ]


def test_prepared_statements_answer_as_postgres_run_after_run(servers) -> None:
    pg, tg, table = servers
    rnd = random.Random(7)
    statements = _statements(table, rnd)
    asked = 0
    with _connect(pg) as p, _connect(tg) as g:
        for sql, params_of in statements:
            for _ in range(7):
                params = params_of()
                want = p.execute(sql, params).fetchall()
                got = g.execute(sql, params).fetchall()
                assert got == want, (sql, params)
                asked += 1
    assert asked == 7 * len(statements)


def test_asyncpg_runs_of_one_prepared_statement(servers) -> None:
    pg, tg, table = servers

    async def run(target) -> list[list[tuple]]:
        conn = await asyncpg.connect(host=target.host, port=target.port, user=target.user, database=target.dbname)
        try:
            if target.name == "tidegate":
                await conn.execute("SET tidegate.interactive = off")
            stmt = await conn.prepare(f"SELECT t, count(*), sum(n) FROM {table} WHERE id > $1 AND t <> $2 "
                                      "GROUP BY t ORDER BY t NULLS FIRST")
            out = []
            for low, text in [(0, "a"), (100, "b"), (-3, "it's"), (239, "50%"), (50, "")]:
                out.append([tuple(r) for r in await stmt.fetch(low, text)])
            return out
        finally:
            await conn.close()

    assert asyncio.run(run(tg)) == asyncio.run(run(pg))


def test_a_kept_plan_reads_the_last_commit(servers) -> None:
    _, tg, table = servers
    sql = f"SELECT count(*), max(id) FROM {table} WHERE id > %s"
    with _connect(tg) as reader, _connect(tg) as writer:
        for _ in range(3):
            assert reader.execute(sql, [0]).fetchone() == (ROWS, ROWS)
        writer.execute(f"INSERT INTO {table} (id, t) VALUES (%s, 'new')", [ROWS + 1])
        try:
            assert reader.execute(sql, [0]).fetchone() == (ROWS + 1, ROWS + 1)
            writer.execute(f"DELETE FROM {table} WHERE id > %s", [ROWS - 1])
            assert reader.execute(sql, [0]).fetchone() == (ROWS - 1, ROWS - 1)
        finally:
            writer.execute(f"DELETE FROM {table} WHERE id > %s", [ROWS])
            writer.execute(f"INSERT INTO {table} SELECT * FROM {table} WHERE false")


def test_readers_with_kept_plans_never_miss_an_acknowledged_commit(servers) -> None:
    """Six clients rerun a prepared Spark statement while a writer commits row after row: each
    answer holds every row whose INSERT was acknowledged before the statement was sent, and no
    reader's count ever goes back."""
    _, tg, _ = servers
    table = f"pc_{uuid.uuid4().hex[:8]}"
    with _connect(tg) as c:
        c.execute(f"CREATE TABLE {table} (id bigint, g int)")
    acknowledged = 0
    lock = threading.Lock()
    readers_done = threading.Event()
    problems: list[str] = []
    seen: list[int] = []

    def write() -> None:
        nonlocal acknowledged
        with _connect(tg) as w:
            k = 0
            while not readers_done.is_set() and k < 400:
                k += 1
                w.execute(f"INSERT INTO {table} VALUES (%s, %s)", [k, k % 3])
                with lock:
                    acknowledged = k
                time.sleep(0.05)

    def read(seed: int) -> None:
        rnd = random.Random(seed)
        last = 0
        with _connect(tg) as r:
            for _ in range(8):
                with lock:
                    floor = acknowledged
                count, top = r.execute(f"SELECT count(*), max(id) FROM {table} WHERE id >= %s AND g IN (%s, %s, %s)",
                                       [rnd.choice([-5, 0, 1]), 0, 1, 2]).fetchone()
                with lock:
                    seen.append(count)
                if count < floor or count < last or (count and top != count):
                    problems.append(f"reader {seed}: {count} rows (max {top}) after {floor} acknowledged, {last} before")
                last = count

    writer = threading.Thread(target=write)
    readers = [threading.Thread(target=read, args=(k,)) for k in range(6)]
    writer.start()
    for t in readers:
        t.start()
    for t in readers:
        t.join(timeout=600)
    readers_done.set()
    writer.join(timeout=60)
    assert not any(t.is_alive() for t in [writer, *readers])
    assert not problems, problems[:5]
    assert len(seen) == 48 and len(set(seen)) > 3  # the reads saw the table grow
    with _connect(tg) as c:
        assert c.execute(f"SELECT count(*) FROM {table} WHERE id >= %s", [0]).fetchone() == (acknowledged,)
        c.execute(f"DROP TABLE {table}")


def test_a_kept_plan_follows_ddl_and_the_time_zone(servers) -> None:
    pg, tg, _ = servers
    table = f"pc_{uuid.uuid4().hex[:8]}"
    with _connect(pg) as p, _connect(tg) as g:
        for c in (p, g):
            c.execute(f"CREATE TABLE {table} (id int, tz timestamptz)")
            c.execute(f"INSERT INTO {table} VALUES (1, '2024-06-01 12:00+00'), (2, '2024-06-01 23:30+00')")
        sql = f"SELECT id, tz::date, extract(hour from tz) FROM {table} WHERE id >= %s ORDER BY id"
        for zone in ("UTC", "Asia/Kolkata", "America/New_York", "UTC"):
            for c in (p, g):
                c.execute(f"SET TIME ZONE '{zone}'")
            for _ in range(3):
                assert g.execute(sql, [1]).fetchall() == p.execute(sql, [1]).fetchall(), zone
        for c in (p, g):
            c.execute(f"ALTER TABLE {table} ADD COLUMN extra text DEFAULT 'x'")
        sql = f"SELECT id, extra FROM {table} WHERE id >= %s ORDER BY id"
        for _ in range(3):
            assert g.execute(sql, [1]).fetchall() == p.execute(sql, [1]).fetchall() == [(1, "x"), (2, "x")]
        for c in (p, g):
            c.execute(f"DROP TABLE {table}")
            c.execute(f"CREATE TABLE {table} (id int, extra int)")
            c.execute(f"INSERT INTO {table} VALUES (5, 6)")
        assert g.execute(sql, [1]).fetchall() == p.execute(sql, [1]).fetchall() == [(5, 6)]


def test_a_kept_plan_checks_privileges_revoked_since(servers) -> None:
    _, tg, table = servers
    role = f"pc_reader_{uuid.uuid4().hex[:6]}"
    with _connect(tg) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT SELECT ON {table} TO {role}")
        with psycopg.connect(f"host={tg.host} port={tg.port} user={role} dbname={tg.dbname}",
                             autocommit=True, prepare_threshold=0) as reader:
            reader.execute("SET tidegate.interactive = off")
            sql = f"SELECT count(*) FROM {table} WHERE id < %s"
            for bound in (10, 20, 30):
                assert reader.execute(sql, [bound]).fetchone() == (bound - 1,)
            admin.execute(f"REVOKE SELECT ON {table} FROM {role}")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                reader.execute(sql, [40])
        admin.execute(f"DROP ROLE {role}")


# -- in-process: which statements keep a plan ---------------------------------------------------


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from catalog.store import Catalog
    from engine import Engine
    from tidegate.config import Settings

    settings = Settings(data_dir=tmp_path_factory.mktemp("plans"), spark_master="local[2]", maintenance_interval_s=0,
                        spark_conf={"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"})
    catalog = Catalog(settings.catalog_path)
    eng = Engine(settings, catalog)
    eng.start()
    eng.runtime.wait(timeout=240)
    yield eng
    eng.shutdown()
    catalog.close()


@pytest.fixture()
def counted(engine, monkeypatch):
    """A session, and a counter of the translations it makes."""
    import engine.queries as queries
    from tidegate.session import SessionInfo

    calls = {"n": 0}
    translate = queries.translate_query
    import engine.translate as translate_module

    def counting(*args, **kwargs):
        calls["n"] += 1
        return translate(*args, **kwargs)

    monkeypatch.setattr(translate_module, "translate_query", counting)
    monkeypatch.setattr(queries, "translate_query", counting)
    session = engine.open_session()
    info = SessionInfo(settings={"tidegate.interactive": "off"})

    def run(sql: str, params=()) -> tuple[list[tuple], int]:
        before = calls["n"]
        result = session.execute(sql, list(params), info)
        batches = list(result.batches) if hasattr(result, "batches") else []
        values = pa.Table.from_batches(batches).to_pylist() if batches else []
        return [tuple(r.values()) for r in values], calls["n"] - before

    yield run, info, session
    session.close()


def _translations(run, sql: str, values: list) -> list[int]:
    return [run(sql, v)[1] for v in values]


def test_parameters_compared_with_columns_are_bound(counted) -> None:
    run = counted[0]
    run("CREATE TABLE kp (id bigint PRIMARY KEY, t text, d date, n numeric(6,2))")
    run("INSERT INTO kp SELECT i, 'g' || (i % 4), date '2024-01-01' + i, i / 4.0 FROM generate_series(1, 40) i")
    sql = "SELECT t, count(*), sum(n) FROM kp WHERE id BETWEEN $1 AND $2 AND t <> $3 AND d > $4 GROUP BY t ORDER BY t"
    values = [[1, k + 10, f"g{k % 4}", dt.date(2024, 1, 1) + dt.timedelta(days=k)] for k in range(8)]
    # translated at the first run, at the second (and twice more, to check the plan), then kept
    assert _translations(run, sql, values) == [1, 3, 0, 0, 0, 0, 0, 0]
    expected = [run(sql.replace("GROUP", "AND 1 = 1 GROUP"), v)[0] for v in values]
    assert [run(sql, v)[0] for v in values] == expected
    # another shape of a value (bigint instead of integer) is another plan
    assert _translations(run, sql, [[1, 2**40, "g1", dt.date(2024, 1, 5)]] * 3) == [1, 3, 0]


def test_parameters_the_translation_reads_are_part_of_the_key(counted) -> None:
    run = counted[0]
    run("CREATE TABLE kv (id int, t text)")
    run("INSERT INTO kv VALUES (1, 'abc'), (2, 'a_c'), (3, NULL)")
    # lpad's length decides the translation (it is clamped): a plan per value
    sql = "SELECT lpad(t, $1) FROM kv ORDER BY id"
    assert _translations(run, sql, [[5]] * 3 + [[-2147483648]] * 3) == [1, 1, 0, 1, 1, 0]
    assert run(sql, [5])[0] == [("  abc",), ("  a_c",), (None,)]
    # NULL is no value of a shape: keyed, and answered as NULL
    assert _translations(run, "SELECT count(*) FROM kv WHERE id = $1", [[None]] * 3) == [1, 1, 0]
    assert run("SELECT count(*) FROM kv WHERE id = $1", [None])[0] == [(0,)]


def test_limits_and_patterns_are_bound(counted) -> None:
    run = counted[0]
    run("CREATE TABLE kl (id int, t text)")
    run("INSERT INTO kl VALUES (1, 'abc'), (2, 'a_c'), (3, NULL), (4, 'it''s'), (5, 'back\\slash')")
    sql = "SELECT id FROM kl WHERE t LIKE $1 ORDER BY id LIMIT $2 OFFSET $3"
    assert _translations(run, sql, [["a%", 5, 0]] * 3) == [1, 3, 0]
    for pattern, limit, offset, want in [("a\\_c", 5, 0, [2]), ("a_c", 5, 0, [1, 2]), ("a_c", 1, 1, [2]),
                                         ("%", 0, 0, []), ("%'%", 9, 0, [4]), ("%\\\\%", 9, 0, [5]),
                                         ("a%", 2, 7, [])]:
        got, translations = run(sql, [pattern, limit, offset])
        assert (got, translations) == ([(k,) for k in want], 0), (pattern, limit, offset)
    # a NULL limit is no limit (keyed: translated for it); a negative one PostgreSQL's error
    assert run(sql, ["%", None, 1])[0] == [(2,), (4,), (5,)]
    with pytest.raises(Exception) as failed:
        run(sql, ["%", -1, 0])
    assert getattr(failed.value, "sqlstate", None) == "2201W"


def test_what_is_never_kept(counted) -> None:
    run, info, _ = counted
    run("CREATE TABLE kn (id int, d date)")
    run("INSERT INTO kn VALUES (1, current_date), (2, current_date - 1)")
    # a value read from the clock at translation ('today') is read again at every run
    assert _translations(run, "SELECT count(*) FROM kn WHERE d = 'today'::date", [[]] * 4) == [1, 1, 1, 1]
    # a sequence's state is read at every run
    run("CREATE SEQUENCE kn_seq")
    seen = []
    for k in range(5, 9):
        run(f"ALTER SEQUENCE kn_seq RESTART WITH {k}")
        seen.append(run("SELECT last_value FROM kn_seq WHERE $1 = 1", [1]))
    assert seen == [([(5,)], 1), ([(6,)], 1), ([(7,)], 1), ([(8,)], 1)]
    # plan_cache_mode = force_custom_plan: translated for each run's values, as PostgreSQL plans it
    info.settings["plan_cache_mode"] = "force_custom_plan"
    try:
        assert _translations(run, "SELECT count(*) FROM kn WHERE id > $1", [[0]] * 4) == [1, 1, 1, 1]
    finally:
        del info.settings["plan_cache_mode"]
    assert _translations(run, "SELECT count(*) FROM kn WHERE id > $1", [[0]] * 4) == [1, 3, 0, 0]
    # DISCARD PLANS (and DISCARD ALL) forget them
    counted[2].discard_plans()
    assert _translations(run, "SELECT count(*) FROM kn WHERE id > $1", [[0]] * 3) == [1, 3, 0]


def test_a_block_reads_its_own_writes(counted) -> None:
    run, _, session = counted
    run("CREATE TABLE kb (id int)")
    run("INSERT INTO kb VALUES (1), (2)")
    sql = "SELECT count(*) FROM kb WHERE id > $1"
    for _ in range(3):
        assert run(sql, [0])[0] == [(2,)]
    session.begin()
    run("INSERT INTO kb VALUES (3)")
    assert run(sql, [0])[0] == [(3,)]
    session.rollback()
    assert run(sql, [0])[0] == [(2,)]
