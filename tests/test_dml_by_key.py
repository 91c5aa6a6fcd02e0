"""UPDATE and DELETE of rows found by key without Spark (issue 23): the interactive path finds the
rows (engine/interactive.py), and the write replaces only the data files holding them, with its own
change data feed (engine.storage.rewrite_by_keys).

Generated statements run on PostgreSQL 15 and on a gateway of its own must give the same command
tags and errors, and the same table after them; the table's change data feed, replayed over its
rows before, must give its rows after; the commits must be the file rewrites, not merges."""

from __future__ import annotations

import random
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from tests.targets import target_for
from tests.tidegate_server import TidegateServer
from tests.wire import rows

CREATE = "CREATE TABLE acct (id bigint PRIMARY KEY, name text NOT NULL, n integer, flag boolean)"
LOAD = ["INSERT INTO acct SELECT g, 'n' || g, g % 7, g % 2 = 0 FROM generate_series({}, {}) g".format(lo, lo + 299)
        for lo in (1, 301, 601)]  # three commits: three data files


@pytest.fixture(scope="module")
def gw(tidegate: TidegateServer) -> TidegateServer:
    """The shared gateway (its tables here are acct and dk_*): a gateway of its own cost a start."""
    return tidegate


def location(gw: TidegateServer, conn: psycopg.Connection, table: str) -> str:
    oid = rows(conn, "SELECT oid FROM pg_class WHERE relname = %s", (table,))[0][0]
    found = list((gw.data_dir / "warehouse").glob(f"*/{oid}"))
    assert len(found) == 1, found
    return str(found[0])


def statements(rnd: random.Random, count: int) -> list[tuple[str, tuple]]:
    out: list[tuple[str, tuple]] = []
    key = lambda: rnd.randint(-5, 960)  # noqa: E731 - some keys are absent
    for _ in range(count):
        r = rnd.random()
        if r < 0.3:
            out.append(("UPDATE acct SET n = %s WHERE id = %s", (rnd.choice([0, 7, -1, None, 2**31 - 1]), key())))
        elif r < 0.4:
            out.append((f"UPDATE acct SET name = 'x{rnd.randint(0, 9)}', flag = NULL WHERE id IN ({key()}, {key()})", ()))
        elif r < 0.45:
            out.append(("UPDATE acct SET name = NULL WHERE id = %s", (key(),)))  # 23502 when the row exists
        elif r < 0.55:
            out.append(("UPDATE acct SET id = %s WHERE id = %s", (key(), key())))  # 23505 when the key is taken
        elif r < 0.6:
            out.append((f"UPDATE acct SET n = '{rnd.choice(['12', ' 3 ', 'abc', '99999999999'])}' WHERE id = {key()}", ()))
        elif r < 0.65:
            out.append(("UPDATE acct SET flag = %s, n = -5 WHERE id BETWEEN %s AND %s",
                        (rnd.choice([True, False]), (k := key()), k + rnd.randint(0, 3))))
        elif r < 0.9:
            out.append(("DELETE FROM acct WHERE id = %s", (key(),)))
        else:
            out.append((f"DELETE FROM acct WHERE id >= {(k := key())} AND id < {k + 4}", ()))
    return out


def run(conn: psycopg.Connection, sql: str, params: tuple) -> tuple:
    try:
        cur = conn.execute(sql, params or None)
        return ("ok", cur.statusmessage)
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary)


def table_rows(conn: psycopg.Connection) -> list[tuple]:
    return rows(conn, "SELECT id, name, n, flag FROM acct ORDER BY id")


def test_updates_and_deletes_by_key_answer_as_postgres(gw: TidegateServer, request: pytest.FixtureRequest) -> None:
    pg = target_for(request, "postgres")
    with psycopg.connect(pg.dsn, autocommit=True) as p, psycopg.connect(gw.dsn, autocommit=True) as t:
        p.execute("DROP TABLE IF EXISTS acct")
        for conn in (p, t):
            conn.execute(CREATE)
            for sql in LOAD:
                conn.execute(sql)
        where = location(gw, t, "acct")
        start = DeltaTable(where).version()
        before = {r[0]: r for r in table_rows(t)}
        differ = []
        for k, (sql, params) in enumerate(statements(random.Random(5), 150)):
            expected, got = run(p, sql, params), run(t, sql, params)
            if expected != got:
                differ.append(f"{sql} {params}\n  postgres: {expected}\n  tidegate: {got}")
            if k % 50 == 49:
                assert table_rows(t) == table_rows(p), f"after statement {k}"
        assert not differ, "\n".join(differ[:20])
        after = table_rows(t)
        assert after == table_rows(p)

        dt = DeltaTable(where)
        # every commit was a file rewrite by key, none a merge (which reads every file)
        operations = [h["operation"] for h in dt.history(dt.version() - start)]
        assert operations and set(operations) <= {"UPDATE", "DELETE"}, operations
        # the change feed, replayed over the rows before, gives the rows after
        feed = pa.table(dt.load_cdf(starting_version=start + 1, ending_version=dt.version()).read_all()).to_pylist()
        state = dict(before)
        for change in sorted(feed, key=lambda c: (c["_commit_version"], c["_change_type"] != "update_preimage"
                                                  and c["_change_type"] != "delete")):
            row = (change["id"], change["name"], change["n"], change["flag"])
            if change["_change_type"] in ("delete", "update_preimage"):
                assert state.pop(row[0]) == row
            else:
                assert row[0] not in state
                state[row[0]] = row
        assert sorted(state.values()) == after


def test_reads_see_the_rewrite_and_a_block_keeps_it_until_commit(gw: TidegateServer) -> None:
    with psycopg.connect(gw.dsn, autocommit=True) as t, psycopg.connect(gw.dsn, autocommit=True) as other:
        t.execute("CREATE TABLE dk_kv (id integer PRIMARY KEY, v text)")
        t.execute("INSERT INTO dk_kv SELECT g, 'v' || g FROM generate_series(1, 100) g")
        assert rows(t, "SELECT v FROM dk_kv WHERE id = 7") == [("v7",)]  # kept in the interactive cache
        assert t.execute("UPDATE dk_kv SET v = %s WHERE id = %s", ("seven", 7)).statusmessage == "UPDATE 1"
        assert rows(other, "SELECT v FROM dk_kv WHERE id = 7") == [("seven",)]
        with t.transaction():
            assert t.execute("DELETE FROM dk_kv WHERE id = 7").statusmessage == "DELETE 1"
            assert rows(t, "SELECT count(*) FROM dk_kv WHERE id = 7") == [(0,)]
            assert rows(other, "SELECT v FROM dk_kv WHERE id = 7") == [("seven",)]
        assert rows(other, "SELECT count(*) FROM dk_kv WHERE id = 7") == [(0,)]
        t.execute("BEGIN")
        t.execute("UPDATE dk_kv SET v = 'x' WHERE id = 8")
        t.execute("ROLLBACK")
        assert rows(other, "SELECT v FROM dk_kv WHERE id = 8") == [("v8",)]
        # the table stays readable by another Delta reader
        dt = DeltaTable(location(gw, t, "dk_kv"))
        assert dt.to_pyarrow_table().num_rows == 99


def test_what_stays_on_the_merge(gw: TidegateServer, tmp_path: Path) -> None:
    """Keys matched NULL-safely (a time-series table's tags) and SET expressions keep the former
    path, with the same answers."""
    with psycopg.connect(gw.dsn, autocommit=True) as t:
        t.execute("CREATE TABLE dk_cpu (host text, ts timestamp TIME INDEX, usage double precision, PRIMARY KEY (host))")
        t.execute("INSERT INTO dk_cpu VALUES ('a', '2024-01-01 00:00:00', 1.5), (NULL, '2024-01-01 00:00:00', 2.5)")
        assert t.execute("UPDATE dk_cpu SET usage = 9 WHERE host IS NULL").statusmessage == "UPDATE 1"
        assert rows(t, "SELECT host, usage FROM dk_cpu ORDER BY host NULLS FIRST") == [(None, 9.0), ("a", 1.5)]
        t.execute("CREATE TABLE dk_calc (id integer PRIMARY KEY, n integer)")
        t.execute("INSERT INTO dk_calc VALUES (1, 10), (2, 20)")
        assert t.execute("UPDATE dk_calc SET n = n + 1 WHERE id = 2").statusmessage == "UPDATE 1"
        assert rows(t, "SELECT n FROM dk_calc ORDER BY id") == [(10,), (21,)]
        ops = [h["operation"] for h in DeltaTable(location(gw, t, "dk_cpu")).history(1)]
        assert ops == ["MERGE"]
