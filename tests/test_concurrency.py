"""Concurrent writers and COMMIT as PostgreSQL promises them, through many real clients.

No update is lost (N sessions x M increments = N*M), a PRIMARY KEY never holds two rows for one
key whichever way the inserts race (autocommit, transactions, ON CONFLICT DO NOTHING), waits that
would deadlock fail with 40P01, a transaction's writes to several tables are one COMMIT (also
across kill -9 during it), and an executemany batch is one Delta commit.
"""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:6]}"


def _connect(server) -> psycopg.Connection:
    return psycopg.connect(server.dsn, autocommit=True)


def test_concurrent_increments_lose_nothing(tidegate) -> None:
    ctr = _name("ctr")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {ctr} (id int PRIMARY KEY, n int)")
        conn.execute(f"INSERT INTO {ctr} VALUES (1, 0), (2, 0)")
    sessions, increments = 6, 8

    def worker(k: int) -> int:
        with _connect(tidegate) as c:
            for _ in range(increments):
                tag = c.execute(f"UPDATE {ctr} SET n = n + 1 WHERE id = 1").statusmessage
                assert tag == "UPDATE 1"
        return k

    with ThreadPoolExecutor(sessions) as pool:
        list(pool.map(worker, range(sessions)))
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT id, n FROM {ctr} ORDER BY id").fetchall() == [(1, sessions * increments), (2, 0)]


def test_increments_in_transactions_wait_for_each_other(tidegate) -> None:
    ctr = _name("ctrx")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {ctr} (id int PRIMARY KEY, n int)")
        conn.execute(f"INSERT INTO {ctr} VALUES (1, 0)")
    sessions, increments = 4, 4

    def worker(_: int) -> None:
        with psycopg.connect(tidegate.dsn) as c:  # every increment is its own BEGIN ... COMMIT
            for _ in range(increments):
                c.execute(f"UPDATE {ctr} SET n = n + 1 WHERE id = 1")
                c.commit()

    with ThreadPoolExecutor(sessions) as pool:
        list(pool.map(worker, range(sessions)))
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT n FROM {ctr}").fetchone() == (sessions * increments,)


def test_pending_update_is_not_overwritten(tidegate) -> None:
    """A transaction's UPDATE holds the table: another session's UPDATE of the row waits for
    its COMMIT and then applies to the committed row (PostgreSQL's READ COMMITTED)."""
    ctr = _name("ctrp")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {ctr} (id int PRIMARY KEY, n int)")
        conn.execute(f"INSERT INTO {ctr} VALUES (1, 100)")
    with psycopg.connect(tidegate.dsn) as a:
        a.execute(f"UPDATE {ctr} SET n = n + 10 WHERE id = 1")
        done = threading.Event()

        def other() -> None:
            with _connect(tidegate) as b:
                b.execute(f"UPDATE {ctr} SET n = n + 1 WHERE id = 1")
            done.set()

        t = threading.Thread(target=other)
        t.start()
        assert not done.wait(1.5), "the second UPDATE must wait for the first transaction"
        a.commit()
        t.join(60)
        assert done.is_set()
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT n FROM {ctr}").fetchone() == (111,)


@pytest.mark.parametrize("mode", ["autocommit", "transaction", "do_nothing"])
def test_duplicate_key_race_has_one_winner(tidegate, mode: str) -> None:
    t = _name("pk")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, who int)")
    racers = 8
    barrier = threading.Barrier(racers)

    def racer(k: int) -> str:
        with psycopg.connect(tidegate.dsn, autocommit=mode != "transaction") as c:
            barrier.wait()
            try:
                if mode == "do_nothing":
                    tag = c.execute(f"INSERT INTO {t} VALUES (7, %s) ON CONFLICT DO NOTHING", (k,)).statusmessage
                    return tag
                c.execute(f"INSERT INTO {t} VALUES (7, %s)", (k,))
                if mode == "transaction":
                    c.commit()
                return "ok"
            except psycopg.Error as e:
                return e.sqlstate or "?"

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(racer, range(racers)))
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (1,)
    if mode == "do_nothing":
        assert sorted(outcomes) == ["INSERT 0 0"] * (racers - 1) + ["INSERT 0 1"], outcomes
    else:
        assert sorted(outcomes) == ["23505"] * (racers - 1) + ["ok"], outcomes


def test_transaction_and_autocommit_insert_of_one_key(tidegate) -> None:
    t = _name("pkt")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text)")
    with psycopg.connect(tidegate.dsn) as tx, _connect(tidegate) as auto:
        tx.execute(f"INSERT INTO {t} VALUES (1, 'tx')")
        auto.execute(f"INSERT INTO {t} VALUES (1, 'auto')")  # commits first: it wins
        with pytest.raises(psycopg.errors.UniqueViolation):
            tx.commit()
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT id, v FROM {t}").fetchall() == [(1, "auto")]
        # and the key is usable as usual afterwards
        conn.execute(f"UPDATE {t} SET v = 'x' WHERE id = 1")
        conn.execute(f"INSERT INTO {t} VALUES (1, 'y') ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v")
        assert conn.execute(f"SELECT id, v FROM {t}").fetchall() == [(1, "y")]


def test_crossed_updates_deadlock_is_detected(tidegate) -> None:
    t1, t2 = _name("dl1"), _name("dl2")
    with _connect(tidegate) as conn:
        for t in (t1, t2):
            conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, n int)")
            conn.execute(f"INSERT INTO {t} VALUES (1, 0)")
    with psycopg.connect(tidegate.dsn) as a, psycopg.connect(tidegate.dsn) as b:
        a.execute(f"UPDATE {t1} SET n = n + 1 WHERE id = 1")
        b.execute(f"UPDATE {t2} SET n = n + 1 WHERE id = 1")
        result: dict[str, object] = {}

        def a_second() -> None:
            try:
                a.execute(f"UPDATE {t2} SET n = n + 1 WHERE id = 1")
                result["a"] = "ok"
            except psycopg.Error as e:
                result["a"] = e.sqlstate

        th = threading.Thread(target=a_second)
        th.start()
        time.sleep(1.0)  # a now waits for b's lock on t2
        try:
            b.execute(f"UPDATE {t1} SET n = n + 1 WHERE id = 1")
            result["b"] = "ok"
        except psycopg.Error as e:
            result["b"] = e.sqlstate
        if result.get("b") == "40P01":
            b.rollback()
        th.join(60)
        assert sorted(map(str, result.values())) == ["40P01", "ok"], result
        (a if result["a"] == "ok" else b).commit()
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT n FROM {t1}").fetchone() == (1,)
        assert conn.execute(f"SELECT n FROM {t2}").fetchone() == (1,)


def test_cancel_stops_a_lock_wait(tidegate) -> None:
    t = _name("lw")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, n int)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 0)")
    with psycopg.connect(tidegate.dsn) as holder, _connect(tidegate) as waiter:
        holder.execute(f"UPDATE {t} SET n = 5 WHERE id = 1")
        waiter.execute("SET statement_timeout = '1s'")
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            waiter.execute(f"DELETE FROM {t} WHERE id = 1")
        assert time.monotonic() - started < 10
        holder.commit()
        waiter.execute("RESET statement_timeout")
        assert waiter.execute(f"SELECT n FROM {t}").fetchone() == (5,)


def _delta_versions(conn: psycopg.Connection, data_dir: Path, table: str) -> int:
    from deltalake import DeltaTable

    rel = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()[0]
    return DeltaTable(str(data_dir / rel)).version()


def test_executemany_is_one_commit(tidegate) -> None:
    t = _name("em")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text)")
        before = _delta_versions(conn, tidegate.data_dir, t)
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(i, f"v{i}") for i in range(10)])
        assert conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (10,)
        assert _delta_versions(conn, tidegate.data_dir, t) == before + 1
        # a duplicate anywhere in the batch: nothing of it is stored
        with pytest.raises(psycopg.errors.UniqueViolation):
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(20, "a"), (21, "b"), (3, "dup")])
        assert conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (10,)


def test_multi_table_transaction_is_all_or_nothing(tidegate) -> None:
    a, b = _name("mta"), _name("mtb")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {a} (id int PRIMARY KEY)")
        conn.execute(f"CREATE TABLE {b} (id int PRIMARY KEY)")
        conn.execute(f"INSERT INTO {b} VALUES (5)")
    with psycopg.connect(tidegate.dsn) as tx:
        tx.execute(f"INSERT INTO {a} VALUES (1), (2)")
        tx.execute(f"INSERT INTO {b} VALUES (6)")
        with _connect(tidegate) as other:
            other.execute(f"INSERT INTO {b} VALUES (6)")  # takes the key first
        with pytest.raises(psycopg.errors.UniqueViolation):
            tx.commit()
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT count(*) FROM {a}").fetchone() == (0,)  # nothing of the failed COMMIT
        tx2 = psycopg.connect(tidegate.dsn)
        tx2.execute(f"DELETE FROM {b} WHERE id = 5")
        tx2.execute(f"INSERT INTO {a} VALUES (1), (2)")
        tx2.execute(f"INSERT INTO {b} VALUES (7)")
        tx2.commit()
        tx2.close()
        assert conn.execute(f"SELECT id FROM {a} ORDER BY id").fetchall() == [(1,), (2,)]
        assert conn.execute(f"SELECT id FROM {b} ORDER BY id").fetchall() == [(6,), (7,)]


def _rows_on_disk(server, table: str) -> list[int]:
    """A table's ids read from its Delta files (no Spark needed: the check runs right after start)."""
    from deltalake import DeltaTable

    with _connect(server) as conn:
        rel = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()[0]
    return sorted(DeltaTable(str(server.data_dir / rel)).to_pyarrow_table().column("id").to_pylist())


def test_kill_during_commit_leaves_whole_transactions(tmp_path: Path) -> None:
    """kill -9 at random moments while 3-table COMMITs and executemany batches run, in rounds:
    after each restart every transaction is all there or not there at all, never in part, and
    nothing is there twice."""
    import random

    from tests.tidegate_server import start_tidegate

    rng = random.Random(15)
    data = tmp_path / "data"
    tables = ["ka", "kb", "kc"]
    env = {"TIDEGATE_TXN_TEST_PAUSE": "1"}  # a pause between the writes of a journaled COMMIT
    server = start_tidegate(data, env=env, file_roots=[])
    with _connect(server) as conn:
        for t in tables + ["km"]:
            conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY)")
    committed: set[int] = set()  # transactions whose COMMIT the client saw succeed
    batches: set[int] = set()
    try:
        for rnd in range(1, 5):
            tx = psycopg.connect(server.dsn)
            for t in tables:
                tx.execute(f"INSERT INTO {t} VALUES ({rnd})")
            ok: list[str] = []

            def commit(tx=tx, ok=ok) -> None:
                try:
                    tx.commit()
                    ok.append("commit")
                except psycopg.Error:
                    pass

            def batch(rnd=rnd, ok=ok) -> None:
                try:
                    with _connect(server) as c, c.cursor() as cur:
                        cur.executemany("INSERT INTO km VALUES (%s)", [(rnd * 100 + k,) for k in range(15)])
                    ok.append("batch")
                except psycopg.Error:
                    pass

            threads = [threading.Thread(target=commit, daemon=True), threading.Thread(target=batch, daemon=True)]
            for th in threads:
                th.start()
            time.sleep(rng.uniform(0.05, 2.5))
            server.kill9()
            for th in threads:
                th.join(10)
            if "commit" in ok:
                committed.add(rnd)
            if "batch" in ok:
                batches.add(rnd)
            server = start_tidegate(data, env=env, file_roots=[])
            seen = [set(_rows_on_disk(server, t)) for t in tables]
            assert seen[0] == seen[1] == seen[2], f"round {rnd}: a transaction is in part: {seen}"
            assert committed <= seen[0], f"round {rnd}: an acknowledged COMMIT is missing"
            ids = _rows_on_disk(server, "km")
            assert len(ids) == len(set(ids))
            for r in range(1, rnd + 1):
                mine = {i for i in ids if i // 100 == r}
                assert mine in (set(), {r * 100 + k for k in range(15)}), f"batch {r} is in part: {sorted(mine)}"
                if r in batches:
                    assert mine, f"acknowledged batch {r} is missing"
    finally:
        server.stop()
    assert not list((data / "txn").glob("*.json"))


def test_select_for_update_waits_then_reads_the_new_row(tidegate) -> None:
    """Read-modify-write through SELECT ... FOR UPDATE in two blocks: the second waits for the
    first to end and then reads its row (no lost update); NOWAIT fails at once with 55P03."""
    t = _name("sfu")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, n int)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 0)")
    first = psycopg.connect(tidegate.dsn)
    seen: list[int] = []

    def second() -> None:
        with psycopg.connect(tidegate.dsn) as conn:
            n = conn.execute(f"SELECT n FROM {t} WHERE id = 1 FOR UPDATE").fetchone()[0]
            seen.append(n)
            conn.execute(f"UPDATE {t} SET n = %s WHERE id = 1", (n + 1,))
            conn.commit()

    try:
        n = first.execute(f"SELECT n FROM {t} WHERE id = 1 FOR UPDATE").fetchone()[0]
        waiter = threading.Thread(target=second, daemon=True)
        waiter.start()
        time.sleep(1.5)
        assert waiter.is_alive() and not seen, "FOR UPDATE did not wait for the lock holder"
        with psycopg.connect(tidegate.dsn) as other:
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute(f"SELECT n FROM {t} FOR UPDATE NOWAIT")
        first.execute(f"UPDATE {t} SET n = %s WHERE id = 1", (n + 1,))
        first.commit()
        waiter.join(60)
        assert seen == [1]
    finally:
        first.close()
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT n FROM {t}").fetchone() == (2,)


def test_readers_see_a_multi_table_commit_at_once(tidegate) -> None:
    """Transfers between two tables, each one transaction, while other sessions read the total:
    no reader ever sees one table's side of a transfer without the other's."""
    a, b = _name("tra"), _name("trb")
    with _connect(tidegate) as conn:
        conn.execute(f"CREATE TABLE {a} (id int PRIMARY KEY, n int)")
        conn.execute(f"CREATE TABLE {b} (id int PRIMARY KEY, n int)")
        conn.execute(f"INSERT INTO {a} VALUES (1, 100)")
        conn.execute(f"INSERT INTO {b} VALUES (1, 0)")
    done = threading.Event()
    totals: list[int] = []

    def read() -> None:
        with _connect(tidegate) as conn:
            while not done.is_set():
                totals.append(conn.execute(f"SELECT (SELECT sum(n) FROM {a}) + (SELECT sum(n) FROM {b})").fetchone()[0])

    readers = [threading.Thread(target=read, daemon=True) for _ in range(2)]
    for r in readers:
        r.start()
    try:
        for _ in range(8):
            with psycopg.connect(tidegate.dsn) as tx:
                tx.execute(f"UPDATE {a} SET n = n - 1 WHERE id = 1")
                tx.execute(f"UPDATE {b} SET n = n + 1 WHERE id = 1")
                tx.commit()
    finally:
        done.set()
        for r in readers:
            r.join(60)
    assert totals and set(totals) == {100}, sorted(set(totals))
    with _connect(tidegate) as conn:
        assert conn.execute(f"SELECT n FROM {b}").fetchone() == (8,)
