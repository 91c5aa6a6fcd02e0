"""The interactive path (engine/interactive.py) against the Spark path: generated reads of one table
run both ways (``SET tidegate.interactive = on | off``) must give the same columns, types, rows
(NULL order, time zones, numeric scale included) and errors; and the rules of when it runs."""

from __future__ import annotations

import random

import asyncpg
import psycopg
import pytest

from tests.tidegate_server import TidegateServer
from tests.wire import error_of, rows

COLUMNS = {  # name -> (type, values the generator compares it with, as SQL literals)
    "id": ("bigint", ["0", "1", "7", "150", "299", "300", "9223372036854775807", "-1"]),
    "i2": ("smallint", ["0", "-32768", "32767", "5", "-5", "40000"]),
    "i4": ("integer", ["0", "1", "-2147483648", "2147483647", "13", "3000000000"]),
    "t": ("text", ["''", "'a'", "'abc'", "'Zoë'", "'été'", "'b '", "'ab%'", "'5'"]),
    "vc": ("varchar(5)", ["'a'", "'abcde'", "'abcdef'", "''", "'Z'"]),
    "b": ("boolean", ["true", "false", "'yes'", "'off'"]),
    "d": ("date", ["'2024-01-01'", "'2024-02-29'", "'2023-12-31'", "'20240115'", "'2024-03-10'"]),
    "ts": ("timestamp", ["'2024-01-01 00:00:00'", "'2024-03-10 02:30:00'", "'2024-06-30 23:59:59.999999'",
                         "'2024-01-01 12:00'"]),
    "tz": ("timestamptz", ["'2024-01-01 00:00:00+00'", "'2024-03-10 07:30:00+00'", "'2024-03-10 03:30:00'",
                           "'2024-11-03 01:30:00-04'", "'2024-06-30 12:00:00 Europe/Paris'"]),
    "n": ("numeric(10,2)", []), "nn": ("numeric", []), "f": ("double precision", []), "r": ("real", []),
    "by": ("bytea", []), "iv": ("interval", []), "tm": ("time", []), "arr": ("integer[]", []), "j": ("jsonb", []),
}
FILTERABLE = [c for c, (_, values) in COLUMNS.items() if values]
# CI runs two zones; the third with the other long suites (./tidegate.sh test -m long)
ZONES = ["UTC", "America/New_York", pytest.param("Asia/Kolkata", marks=pytest.mark.long)]


def _row(k: int, rnd: random.Random) -> str:
    def maybe(v: str) -> str:
        return "NULL" if rnd.random() < 0.15 else v

    texts = ["''", "'a'", "'abc'", "'Zoë'", "'été'", "'b '", "'ab%'", "'5'", "'日本'"]
    return "(" + ", ".join([
        str(k),
        maybe(str(rnd.choice([0, -32768, 32767, 5, -5, rnd.randint(-100, 100)]))),
        maybe(str(rnd.choice([0, 1, -2147483648, 2147483647, 13, rnd.randint(-10**6, 10**6)]))),
        maybe(rnd.choice(texts)),
        maybe(rnd.choice(["'a'", "'abcde'", "''", "'Z'", "'zz'"])),
        maybe(rnd.choice(["true", "false"])),
        maybe(f"date '2024-01-01' + {rnd.randint(-40, 200)}"),
        maybe(rnd.choice(["'2024-01-01 00:00:00'", "'2024-03-10 02:30:00'", "'2024-06-30 23:59:59.999999'",
                          f"timestamp '2024-01-01' + interval '{rnd.randint(0, 10**6)} seconds'"])),
        maybe(rnd.choice(["'2024-01-01 00:00:00+00'", "'2024-03-10 07:30:00+00'", "'2024-11-03 05:30:00+00'",
                          f"timestamptz '2024-01-01 00:00+00' + interval '{rnd.randint(0, 10**7)} seconds'"])),
        maybe(f"{rnd.randint(-10**6, 10**6) / 100:.2f}"),
        maybe(rnd.choice(["1.50", "0.000", "-12345678901234567890.123456789", "7"])),
        maybe(rnd.choice(["0.1", "-0.0", "1e300", "'NaN'", "'Infinity'", str(rnd.random())])),
        maybe(rnd.choice(["0.1", "3.4e38", "'-Infinity'", "1.5"])),
        maybe(rnd.choice(["'\\x00ff'", "''", "'\\x41'"])),
        maybe(rnd.choice(["'1 day 02:03:04'", "'-1 mon'", "'00:00:00.5'"])),
        maybe(rnd.choice(["'00:00'", "'23:59:59.999999'", "'12:34:56'"])),
        maybe(rnd.choice(["'{1,2,NULL}'", "'{}'", "'{7}'"])),
        maybe(rnd.choice(["'{\"a\": 1}'", "'[1, \"x\"]'", "'null'"])),
    ]) + ")"


@pytest.fixture(scope="module")
def gw(tidegate: TidegateServer) -> TidegateServer:
    """The shared gateway (its tables here are it_*): a gateway of its own cost a start."""
    return tidegate


@pytest.fixture(scope="module")
def table(gw: TidegateServer) -> str:
    rnd = random.Random(23)
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        cols = ", ".join(f"{name} {typ}" + (" PRIMARY KEY" if name == "id" else "")
                         for name, (typ, _) in COLUMNS.items())
        c.execute(f"CREATE TABLE it_all ({cols})")
        for start in range(0, 300, 60):  # five commits: five files, with their own statistics
            c.execute("INSERT INTO it_all VALUES " + ", ".join(_row(k, rnd) for k in range(start, start + 60)))
    return "it_all"


def _connect(gw: TidegateServer, interactive: str, zone: str) -> psycopg.Connection:
    c = psycopg.connect(gw.dsn, autocommit=True)
    c.execute(f"SET tidegate.interactive = {interactive}")
    c.execute(f"SET TIME ZONE '{zone}'")
    return c


def _query(rnd: random.Random) -> tuple[str, tuple, bool]:
    """A generated read of it_all: (sql, params, ordered by a unique key)."""
    if rnd.random() < 0.25:
        items = "*"
    else:
        picked = rnd.sample(list(COLUMNS), rnd.randint(1, 5))
        items = ", ".join(f"{c} AS x{k}" if rnd.random() < 0.2 else (f"it_all.{c}" if rnd.random() < 0.2 else c)
                          for k, c in enumerate(picked))
    terms, params = [], []
    for _ in range(rnd.choice([0, 1, 1, 2, 3])):
        col = rnd.choice(FILTERABLE)
        values = COLUMNS[col][1]
        shape = rnd.random()
        if shape < 0.45:
            op = rnd.choice(["=", "<>", "<", "<=", ">", ">="])
            v = rnd.choice(values)
            if rnd.random() < 0.2 and col in ("id", "i4", "i2") and not v.startswith("-"):
                params.append(int(v))
                v = "%s"
            terms.append(f"{v} {op} {col}" if rnd.random() < 0.2 else f"{col} {op} {v}")
        elif shape < 0.6:
            a, b = rnd.choice(values), rnd.choice(values)
            terms.append(f"{col} BETWEEN {a} AND {b}")
        elif shape < 0.75:
            terms.append(f"{col} IN ({', '.join(rnd.sample(values, min(len(values), rnd.randint(1, 3))))})")
        elif shape < 0.9:
            terms.append(f"{col} IS {rnd.choice(['', 'NOT '])}NULL")
        else:
            terms.append(f"NOT ({col} IS NULL)")
    sql = f"SELECT {items} FROM it_all"
    if terms:
        sql += " WHERE " + " AND ".join(terms)
    ordered = rnd.random() < 0.6
    if ordered:
        keys = [f"{c}{rnd.choice(['', ' DESC'])}" for c in rnd.sample(["i2", "i4", "t", "d", "tz", "b"], rnd.randint(0, 2))]
        keys.append(f"id{rnd.choice(['', ' DESC'])}")
        sql += " ORDER BY " + ", ".join(keys)
        if rnd.random() < 0.5:
            sql += f" LIMIT {rnd.randint(0, 20)}"
            if rnd.random() < 0.5:
                sql += f" OFFSET {rnd.randint(0, 30)}"
    return sql, tuple(params), ordered


def _outcome(conn: psycopg.Connection, sql: str, params: tuple, ordered: bool) -> tuple:
    try:
        cur = conn.execute(sql, params or None)
        got = cur.fetchall()
        described = [(d.name, d.type_code) for d in cur.description]
    except psycopg.Error as exc:
        return ("error", exc.sqlstate)
    key = [tuple("NaN" if isinstance(v, float) and v != v else repr(v) for v in r) for r in got]
    return ("rows", described, key if ordered else sorted(key))


def _path(conn: psycopg.Connection, sql: str, params: tuple) -> str:
    try:
        plan = conn.execute("EXPLAIN " + sql, params or None).fetchone()[0]
    except psycopg.Error:
        return "error"
    return "interactive" if plan.startswith("Interactive read") else "spark"


@pytest.mark.parametrize("zone", ZONES)
def test_generated_reads_answer_alike_on_both_paths(gw: TidegateServer, table: str, zone: str) -> None:
    rnd = random.Random(f"interactive-{zone}")
    on, off = _connect(gw, "on", zone), _connect(gw, "off", zone)
    paths = {"interactive": 0, "spark": 0, "error": 0}
    different = []
    with on, off:
        for _ in range(80):
            sql, params, ordered = _query(rnd)
            paths[_path(on, sql, params)] += 1
            a, b = _outcome(on, sql, params, ordered), _outcome(off, sql, params, ordered)
            if a != b:
                different.append(f"{sql} {params}\n  interactive: {str(a)[:400]}\n  spark:       {str(b)[:400]}")
    assert not different, f"{len(different)} differ:\n" + "\n".join(different[:5])
    # the generator exercises the path it is here to check, and Spark's fallback too
    assert paths["interactive"] >= 40 and paths["spark"] >= 3, paths


def test_interactive_reads_see_every_commit(gw: TidegateServer) -> None:
    with psycopg.connect(gw.dsn, autocommit=True) as c, psycopg.connect(gw.dsn, autocommit=True) as other:
        c.execute("CREATE TABLE it_fresh (id bigint PRIMARY KEY, v text)")
        c.execute("INSERT INTO it_fresh VALUES (1, 'a')")
        assert _path(c, "SELECT v FROM it_fresh WHERE id = 1", ()) == "interactive"
        assert rows(c, "SELECT v FROM it_fresh WHERE id = 1") == [("a",)]
        other.execute("UPDATE it_fresh SET v = 'b' WHERE id = 1")
        other.execute("INSERT INTO it_fresh VALUES (2, 'c')")
        assert rows(c, "SELECT v FROM it_fresh WHERE id = 1") == [("b",)]
        assert rows(c, "SELECT id, v FROM it_fresh ORDER BY id") == [(1, "b"), (2, "c")]
        other.execute("DELETE FROM it_fresh WHERE id = 1")
        assert rows(c, "SELECT v FROM it_fresh WHERE id = 1") == []


def test_a_transaction_reads_its_own_writes_through_spark(gw: TidegateServer) -> None:
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE it_block (id bigint PRIMARY KEY, v text)")
        c.execute("INSERT INTO it_block VALUES (1, 'a')")
        with c.transaction():
            assert _path(c, "SELECT v FROM it_block WHERE id = 1", ()) == "interactive"
            c.execute("INSERT INTO it_block VALUES (2, 'b')")
            assert _path(c, "SELECT v FROM it_block WHERE id = 2", ()) == "spark"
            assert rows(c, "SELECT v FROM it_block WHERE id = 2") == [("b",)]
        assert _path(c, "SELECT v FROM it_block WHERE id = 2", ()) == "interactive"
        assert rows(c, "SELECT v FROM it_block WHERE id = 2") == [("b",)]
        with c.transaction():  # a block that ran DDL reads as it sees the catalog: through Spark
            c.execute("ALTER TABLE it_block ADD COLUMN w int")
            assert _path(c, "SELECT * FROM it_block WHERE id = 2", ()) == "spark"
            assert rows(c, "SELECT * FROM it_block WHERE id = 2") == [(2, "b", None)]
        assert rows(c, "SELECT * FROM it_block WHERE id = 2") == [(2, "b", None)]


def test_what_the_path_leaves_to_spark(gw: TidegateServer, table: str) -> None:
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE it_ttl (ts timestamp TIME INDEX, v int) WITH (ttl = '7d')")
        c.execute("CREATE VIEW it_view AS SELECT id, t FROM it_all")
        for sql in ["SELECT * FROM it_ttl", "SELECT * FROM it_view WHERE id = 1",
                    "SELECT id + 1 FROM it_all WHERE id = 1", "SELECT * FROM it_all WHERE f = 0.1",
                    "SELECT count(*) FROM it_all", "SELECT DISTINCT t FROM it_all",
                    "SELECT * FROM it_all a JOIN it_all b USING (id) WHERE a.id = 1",
                    "SELECT * FROM it_all WHERE id = (SELECT 1)", "SELECT * FROM it_all WHERE t LIKE 'a%'",
                    "SELECT * FROM it_all WHERE id = 1.5", "SELECT * FROM it_all ORDER BY i4, t DESC",
                    "SELECT * FROM generate_series(1, 3) g"]:
            assert _path(c, sql, ()) == "spark", sql
        c.execute("SET tidegate.interactive = off")
        assert _path(c, "SELECT * FROM it_all WHERE id = 1", ()) == "spark"
        assert rows(c, "SHOW tidegate.interactive") == [("off",)]
        c.execute("RESET tidegate.interactive")
        assert _path(c, "SELECT * FROM it_all WHERE id = 1", ()) == "interactive"
        assert error_of(c, "SET tidegate.interactive = maybe").sqlstate == "22023"


def test_explain_names_the_files(gw: TidegateServer, table: str) -> None:
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        plan = [r[0] for r in rows(c, "EXPLAIN SELECT t FROM it_all WHERE id = 150")]
        assert plan[0].startswith("Interactive read of public.it_all (Delta version ")
        assert plan[1].startswith("  Files: 1 of 5 after statistics, 60 rows")
        assert sum(line.endswith(".parquet") for line in plan) == 1


def test_errors_and_privileges_are_the_same(gw: TidegateServer, table: str) -> None:
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        c.execute("CREATE ROLE it_reader LOGIN PASSWORD 'pw'")
        for setting in ("on", "off"):
            c.execute(f"SET tidegate.interactive = {setting}")
            assert error_of(c, "SELECT * FROM it_nosuch WHERE id = 1").sqlstate == "42P01"
            assert error_of(c, "SELECT nosuch FROM it_all WHERE id = 1").sqlstate == "42703"
            assert error_of(c, "SELECT * FROM it_all WHERE i4 = 'x'").sqlstate == "22P02"
            assert error_of(c, "SELECT * FROM it_all WHERE d = '2024-02-30'").sqlstate == "22008"
    dsn = gw.dsn.replace("user=tidegate", "user=it_reader password=pw")
    with psycopg.connect(dsn, autocommit=True) as r:
        for setting in ("on", "off"):
            r.execute(f"SET tidegate.interactive = {setting}")
            assert error_of(r, "SELECT * FROM it_all WHERE id = 1").sqlstate == "42501"


def test_binary_results_and_parameters_through_asyncpg(gw: TidegateServer, table: str) -> None:
    import asyncio

    async def fetch(setting: str) -> list:
        conn = await asyncpg.connect(host=gw.host, port=gw.port, user="tidegate", database="tidegate")
        try:
            await conn.execute(f"SET tidegate.interactive = {setting}")
            out = []
            for k in (0, 7, 150, 299, 300):
                out.append(await conn.fetch("SELECT * FROM it_all WHERE id = $1", k))
            out.append(await conn.fetch("SELECT id, n, tz FROM it_all WHERE i4 > $1 ORDER BY id LIMIT 5", 0))
            return [[tuple(repr(v) for v in r.values()) for r in rs] for rs in out]  # repr: NaN equals NaN
        finally:
            await conn.close()

    on, off = asyncio.run(fetch("on")), asyncio.run(fetch("off"))
    assert on == off
    assert all(len(rs) == 1 for rs in on[:4]) and on[4] == [] and len(on[5]) == 5
    assert on[5][0][1].startswith("Decimal(") or on[5][0][1] == "None"


# -- the engine alone, its Spark never started: the interactive path must not need it ------------

def _values(result) -> list[tuple]:
    return [tuple(r.values()) for b in result.batches for r in b.to_pylist()]


def test_lookups_run_without_spark_and_see_commits_made_behind_the_store(spark_free_engine) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    engine, s = spark_free_engine
    s.execute("CREATE TABLE kv (id bigint PRIMARY KEY, v text)")
    s.execute("INSERT INTO kv VALUES (1, 'a'), (2, 'b')")
    assert _values(s.execute("SELECT v FROM kv WHERE id = $1", [2])) == [("b",)]
    assert _values(s.execute("SELECT id, v FROM kv WHERE id >= 1 ORDER BY id DESC LIMIT 1")) == [(2, "b")]
    # a commit the store did not make (another writer of the table): the next read has it
    location = engine.catalog.get_table("public", "kv").location
    write_deltalake(location, pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}), mode="append")
    assert _values(s.execute("SELECT v FROM kv WHERE id = $1", [3])) == [("c",)]
    assert not engine.ready()  # Spark was never started: none of these needed it


def test_lookups_across_the_row_groups_of_a_file(spark_free_engine) -> None:
    """A data file of many row groups (another writer's, 1,000 rows a group; keys shuffled within
    runs): lookups by key, IN lists and ranges that cross group boundaries give the rows the
    Spark-free reference computes from the file, answered at once too, and a table pruned by
    statistics over many files keeps only the file that can hold the key."""
    import random

    import pyarrow as pa
    from deltalake import WriterProperties, write_deltalake

    from tidegate.session import SessionInfo

    engine, s = spark_free_engine
    info = SessionInfo()
    s.execute("CREATE TABLE rg (id bigint PRIMARY KEY, v text, d date)", (), info)
    location = engine.catalog.get_table("public", "rg").location
    rnd = random.Random(5)
    ids = list(range(10_000))
    for start in range(0, len(ids), 700):  # runs of keys out of order: takes of scattered rows
        run = ids[start:start + 700]
        rnd.shuffle(run)
        ids[start:start + 700] = run
    rows = {i: f"v{i}" for i in ids}
    write_deltalake(location, pa.table({"id": pa.array(ids, pa.int64()), "v": [rows[i] for i in ids],
                                        "d": pa.array([None] * len(ids), pa.date32())}),
                    mode="append", writer_properties=WriterProperties(max_row_group_size=1_000))
    for k in range(10_000, 10_400, 20):  # small files of their own for the statistics to exclude
        s.execute("INSERT INTO rg VALUES ($1, $2, NULL)", [k, f"v{k}"], info)
        rows[k] = f"v{k}"

    def check(sql: str, params: list, expected: list[tuple]) -> None:
        assert _values(s.execute(sql, params, info)) == expected, sql
        at_once = s.answer_now(sql, params, info)
        assert at_once is not None and _values(at_once) == expected, sql

    point = "SELECT v FROM rg WHERE id = $1"
    for k in (0, 999, 1_000, 4_321, 9_999, 10_000, 10_380, 10_381, 20_000, -1):
        check(point, [k], [(rows[k],)] if k in rows else [])
    in_list = "SELECT id, v FROM rg WHERE id IN ($1, $2, $3) ORDER BY id"
    for keys in ([5, 1_500, 9_998], [999, 1_000, 1_001], [10_020, 3, 10_400]):
        check(in_list, keys, [(k, rows[k]) for k in sorted(keys) if k in rows])
    span = "SELECT id FROM rg WHERE id BETWEEN $1 AND $2 AND v <> $3 ORDER BY id"
    for lo, hi in ((990, 1_010), (0, 2_500), (9_990, 10_045), (5, 4)):
        check(span, [lo, hi, "v1000"], [(k,) for k in sorted(rows) if lo <= k <= hi and k != 1_000])
    plan = "\n".join(r[0] for r in _values(s.execute("EXPLAIN SELECT v FROM rg WHERE id = 10040", (), info)))
    assert "Files: 1 of 21 after statistics" in plan, plan
    # a column the files predate reads as NULLs, in a file read for the first time too
    s.execute("ALTER TABLE rg ADD COLUMN w int", (), info)
    check("SELECT id, w, v FROM rg WHERE id = $1", [4_321], [(4_321, None, "v4321")])
    check("SELECT id, w FROM rg WHERE id IN ($1, $2) ORDER BY id", [7, 10_100], [(7, None), (10_100, None)])


def test_a_kept_lookup_is_answered_at_once_only_when_nothing_waits(spark_free_engine, monkeypatch) -> None:
    """answer_now (what the gateway computes on its event loop) answers a lookup the session ran
    before, with the files it needs in memory; a newer commit, a commit in progress or an open
    transaction send it back to execute, which gives the same answer."""
    import threading

    from tidegate.session import SessionInfo

    engine, s = spark_free_engine
    info = SessionInfo()
    s.execute("CREATE TABLE kv (id bigint PRIMARY KEY, v text)", (), info)
    s.execute("INSERT INTO kv VALUES (1, 'a'), (2, 'b')", (), info)
    sql = "SELECT v FROM kv WHERE id = $1"
    assert s.answer_now(sql, [2], info) is None  # never run: nothing kept
    assert _values(s.execute(sql, [2], info)) == [("b",)]
    assert _values(s.answer_now(sql, [1], info)) == [("a",)]
    assert _values(s.answer_now(sql, [9], info)) == []

    s.execute("INSERT INTO kv VALUES (3, 'c')", (), info)  # a newer version: its statistics unread
    assert s.answer_now(sql, [3], info) is None
    assert _values(s.execute(sql, [3], info)) == [("c",)]
    assert _values(s.answer_now(sql, [3], info)) == [("c",)]

    holding, release = threading.Event(), threading.Event()

    def commit() -> None:
        with engine.store.gate.committing():
            holding.set()
            release.wait(10)

    committer = threading.Thread(target=commit)
    committer.start()
    assert holding.wait(10)
    try:
        assert s.answer_now(sql, [1], info) is None  # another transaction is halfway through its commits
    finally:
        release.set()
        committer.join()
    assert _values(s.answer_now(sql, [1], info)) == [("a",)]

    s.begin()  # a block reads its own writes: executed
    s.execute("UPDATE kv SET v = 'z' WHERE id = 1", (), info)
    assert s.answer_now(sql, [1], info) is None
    s.rollback()
    assert _values(s.answer_now(sql, [1], info)) == [("a",)]

    from engine import interactive, storage

    monkeypatch.setattr(storage, "_CACHE", storage._ColumnCache(storage.CACHE_BYTES))  # files pushed out
    assert s.answer_now(sql, [1], info) is None  # never a file read on the event loop
    assert _values(s.execute(sql, [1], info)) == [("a",)]
    monkeypatch.setattr(storage, "_INDEXES", storage._ColumnCache(storage.INDEX_BYTES))  # index pushed out
    assert s.answer_now(sql, [1], info) is None
    assert _values(s.execute(sql, [1], info)) == [("a",)]
    assert _values(s.answer_now(sql, [1], info)) == [("a",)]

    scan = "SELECT id FROM kv WHERE v = $1"  # no key index: at once only over few rows
    assert _values(s.execute(scan, ["b"], info)) == [(2,)]
    assert _values(s.answer_now(scan, ["b"], info)) == [(2,)]
    monkeypatch.setattr(interactive, "NOW_ROWS", 1)
    assert s.answer_now(scan, ["b"], info) is None
    assert _values(s.answer_now(sql, [2], info)) == [("b",)]  # the key index narrows it: still at once
    monkeypatch.setattr(interactive, "MAX_ROWS", 1)
    assert _values(s.execute("SELECT v FROM kv", (), info)) and s.answer_now("SELECT v FROM kv", (), info) is None
    assert not engine.ready()


def test_timestamp_statistics_exclude_files_but_never_a_row(spark_free_engine) -> None:
    """A time range reads only the files whose statistics (milliseconds) may hold it, and still
    finds rows whose microseconds lie past a file's millisecond bounds."""
    import datetime as dt

    from tidegate.session import SessionInfo

    engine, s = spark_free_engine
    info = SessionInfo()
    s.execute("CREATE TABLE m (ts timestamptz, t timestamp, v int)", (), info)
    for day in (1, 2, 3):  # one file each
        s.execute(f"INSERT INTO m VALUES ('2024-01-0{day} 00:00:00+00', '2024-01-0{day} 00:00:00', {day}),"
                  f" ('2024-01-0{day} 12:00:00.000900+00', '2024-01-0{day} 12:00:00.000900', {day * 10})", (), info)

    def run(sql: str, params=()) -> list[tuple]:
        return _values(s.execute(sql, list(params), info))

    def files(sql: str) -> str:
        return next(line for (line,) in run("EXPLAIN " + sql) if "Files:" in line).strip()

    q = "SELECT v FROM m WHERE ts > '2024-01-02 12:00:00.000500+00' AND ts < '2024-01-02 13:00:00+00'"
    assert run(q) == [(20,)]
    assert files(q).startswith("Files: 1 of 3")
    assert run("SELECT v FROM m WHERE ts = $1", [dt.datetime(2024, 1, 3, 12, 0, 0, 900, tzinfo=dt.timezone.utc)]) == [(30,)]
    assert run("SELECT v FROM m WHERE t >= '2024-01-01 12:00:00.0009' AND t <= '2024-01-01 12:00:00.0009'") == [(10,)]
    assert files("SELECT v FROM m WHERE t BETWEEN '2024-01-03 00:00:00' AND '2024-01-03 23:00:00'").startswith("Files: 1 of 3")
    assert sorted(run("SELECT v FROM m WHERE ts >= '2024-01-01 12:00:00.0009+00' ORDER BY v")) == [(2,), (3,), (10,), (20,), (30,)]
    assert not engine.ready()


def test_a_cold_table_is_read_into_memory_behind_its_first_lookup(spark_free_engine) -> None:
    """Files another writer added are decoded on first use; the first lookup that meets one also
    has the table's other files read in the background (so the next lookups hit memory)."""
    import time

    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from engine import storage

    engine, s = spark_free_engine
    s.execute("CREATE TABLE cold (id bigint PRIMARY KEY, v text)")
    location = engine.catalog.get_table("public", "cold").location
    for start in (0, 100, 200, 300):  # four files no one has read
        write_deltalake(location, pa.table({"id": pa.array(range(start, start + 100), pa.int64()),
                                            "v": [f"v{k}" for k in range(start, start + 100)]}), mode="append")
    paths = [storage.action_path(location, p) for p in DeltaTable(location).get_add_actions(flatten=True).column("path").to_pylist()]
    assert len(paths) == 4 and not any(storage.columns_kept(p, ["v", "id"]) for p in paths)
    assert _values(s.execute("SELECT v FROM cold WHERE id = $1", [150])) == [("v150",)]
    deadline = time.monotonic() + 10
    while not all(storage.columns_kept(p, ["v", "id"]) and storage.key_index_kept(p, "id") for p in paths):
        assert time.monotonic() < deadline, "the other files were not read"
        time.sleep(0.05)
    assert _values(s.execute("SELECT v FROM cold WHERE id = $1", [399])) == [("v399",)]
    while storage._prefetch_queues:  # the background read is done, not queued again by later lookups
        assert time.monotonic() < deadline, "the background read did not end"
        time.sleep(0.05)


def test_a_scan_of_more_rows_than_the_limit_streams_file_by_file(spark_free_engine, monkeypatch) -> None:
    """Past MAX_ROWS, a query with neither WHERE nor ORDER BY streams its rows from the files in
    order (LIMIT / OFFSET across files) without keeping them; a filter or a sort of that many rows
    is left to Spark."""
    from engine import interactive, storage
    from tidegate.session import SessionInfo

    engine, s = spark_free_engine
    info = SessionInfo()
    s.execute("CREATE TABLE big (id bigint, v text)", (), info)
    for start in (0, 4, 8):  # three files of four rows
        s.execute("INSERT INTO big VALUES " + ", ".join(f"({k}, 'v{k}')" for k in range(start, start + 4)), (), info)
    monkeypatch.setattr(interactive, "MAX_ROWS", 5)
    monkeypatch.setattr(interactive, "_STREAM_BATCH_ROWS", 3)
    monkeypatch.setattr(storage, "_CACHE", storage._ColumnCache(storage.CACHE_BYTES))  # nothing kept yet
    everything = _values(s.execute("SELECT * FROM big", (), info))  # in the files' order (no ORDER BY)
    assert sorted(everything) == [(k, f"v{k}") for k in range(12)]
    assert _values(s.execute("SELECT v FROM big LIMIT 5 OFFSET 3", (), info)) == [(v,) for _, v in everything[3:8]]
    assert _values(s.execute("SELECT id AS n FROM big OFFSET 11", (), info)) == [everything[11][:1]]
    assert _values(s.execute("SELECT id FROM big LIMIT 0", (), info)) == []
    assert storage._CACHE.size == 0  # streamed, not kept
    plan = interactive.bind(s, interactive.shape(s, s._parse_one("SELECT * FROM big"), info), [])
    assert plan.streaming and "(streamed file by file)" in "\n".join(interactive.explain(plan))
    for sql in ("SELECT * FROM big WHERE id > 2", "SELECT * FROM big ORDER BY id"):
        assert interactive.bind(s, interactive.shape(s, s._parse_one(sql), info), []) is None
    assert not engine.ready()
