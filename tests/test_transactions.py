"""A transaction block reads its own writes, with PostgreSQL 15 as the oracle.

The same script of statements runs inside BEGIN ... COMMIT / ROLLBACK on both servers; every
SELECT in it, and the table afterwards, must answer the same: inserts, UPDATEs and DELETEs of
rows the block itself inserted, key-less tables with duplicate rows, a key deleted and inserted
again. Time-series upserts (a tidegate feature) are checked on their own.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest
from tests.targets import Target, target_for


def _script(t: str, k: str, end: str) -> tuple[list[str], list[str]]:
    setup = [f"DROP TABLE IF EXISTS {t}", f"DROP TABLE IF EXISTS {k}",
             f"CREATE TABLE {t} (id int PRIMARY KEY, v text, n int)",
             f"INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)",
             f"CREATE TABLE {k} (x int, y text)",
             f"INSERT INTO {k} VALUES (1, 'a'), (1, 'a'), (2, 'b'), (NULL, 'n')"]
    block = [
        f"INSERT INTO {t} VALUES (4, 'd', 4)",
        f"UPDATE {t} SET n = n * 10 WHERE id >= 3",
        f"SELECT id, v, n FROM {t} ORDER BY id",
        f"DELETE FROM {t} WHERE id = 1",
        f"SELECT id, v, n FROM {t} ORDER BY id",
        f"UPDATE {t} SET v = v || '!'",
        f"SELECT id, v, n FROM {t} ORDER BY id",
        f"INSERT INTO {t} VALUES (1, 'again', 0)",
        f"SELECT count(*), sum(n) FROM {t}",
        f"UPDATE {t} SET id = id + 100 WHERE id = 4",
        f"SELECT id FROM {t} ORDER BY id",
        f"INSERT INTO {t} VALUES (4, 'four', 44)",
        f"SELECT id, v FROM {t} WHERE id IN (4, 104) ORDER BY id",
        f"UPDATE {k} SET y = 'z' WHERE x = 1",
        f"SELECT x, y FROM {k} ORDER BY x NULLS LAST, y",
        f"DELETE FROM {k} WHERE x IS NULL",
        f"INSERT INTO {k} VALUES (3, 'c')",
        f"UPDATE {k} SET x = x + 1 WHERE y = 'c'",
        f"SELECT x, y FROM {k} ORDER BY x NULLS LAST, y",
        f"SELECT a.id, b.y FROM {t} a JOIN {k} b ON b.x = a.id ORDER BY 1, 2",
        end,
    ]
    after = [f"SELECT id, v, n FROM {t} ORDER BY id", f"SELECT x, y FROM {k} ORDER BY x NULLS LAST, y"]
    return setup, block + after


def _play(target: Target, setup: list[str], steps: list[str]) -> list[object]:
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for s in setup:
            conn.execute(s)
    out: list[object] = []
    with psycopg.connect(target.dsn) as conn:  # psycopg opens the block at the first statement
        for s in steps:
            if s in ("COMMIT", "ROLLBACK"):
                conn.commit() if s == "COMMIT" else conn.rollback()
                out.append(s)
                continue
            try:
                cur = conn.execute(s)
                out.append(cur.fetchall() if cur.description else cur.statusmessage)
            except psycopg.Error as e:
                out.append(("error", e.sqlstate))
                conn.rollback()
    return out


@pytest.mark.parametrize("end", ["COMMIT", "ROLLBACK"])
def test_block_reads_its_own_writes_like_postgres(request: pytest.FixtureRequest, end: str) -> None:
    t, k = "ryw_" + uuid.uuid4().hex[:6], "rywk_" + uuid.uuid4().hex[:6]
    setup, steps = _script(t, k, end)
    expected = _play(target_for(request, "postgres"), setup, steps)
    got = _play(target_for(request, "tidegate"), setup, steps)
    diffs = [(s, e, g) for s, e, g in zip(steps, expected, got) if e != g]
    assert not diffs, "\n".join(f"{s}\n  postgres {e}\n  tidegate {g}" for s, e, g in diffs)
    assert not any(isinstance(e, tuple) and e and e[0] == "error" for e in expected)


def test_time_series_upserts_in_a_block(tidegate) -> None:
    t = "tsb_" + uuid.uuid4().hex[:6]
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {t} (host text, ts timestamp NOT NULL, v double precision, "
                     "TIME INDEX (ts), PRIMARY KEY (host))")
        conn.execute(f"INSERT INTO {t} VALUES ('a', '2024-01-01 00:00', 1), ('b', '2024-01-01 00:00', 1)")
    with psycopg.connect(tidegate.dsn) as conn:
        conn.execute(f"INSERT INTO {t} VALUES ('a', '2024-01-01 00:00', 2), ('c', '2024-01-01 00:00', 3)")
        assert conn.execute(f"SELECT host, v FROM {t} ORDER BY host").fetchall() == [("a", 2.0), ("b", 1.0), ("c", 3.0)]
        conn.execute(f"DELETE FROM {t} WHERE host = 'b'")
        conn.execute(f"INSERT INTO {t} VALUES ('c', '2024-01-01 00:00', 4)")
        assert conn.execute(f"SELECT host, v FROM {t} ORDER BY host").fetchall() == [("a", 2.0), ("c", 4.0)]
        conn.commit()
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        assert conn.execute(f"SELECT host, v FROM {t} ORDER BY host").fetchall() == [("a", 2.0), ("c", 4.0)]


@pytest.mark.parametrize("end", ["COMMIT", "ROLLBACK"])
def test_upserts_then_reads_in_a_block_like_postgres(request: pytest.FixtureRequest, end: str) -> None:
    """INSERT ... ON CONFLICT DO UPDATE inside a block: later reads, UPDATEs, DELETEs and
    RETURNING see the rows it leaves, and COMMIT stores exactly those."""
    t = "ocb_" + uuid.uuid4().hex[:6]
    setup = [f"DROP TABLE IF EXISTS {t}", f"CREATE TABLE {t} (id int PRIMARY KEY, n int, note text)",
             f"INSERT INTO {t} VALUES (1, 1, 'one'), (2, 2, NULL)"]
    block = [
        f"INSERT INTO {t} VALUES (1, 5, 'x'), (3, 3, 'three') ON CONFLICT (id) DO UPDATE SET n = {t}.n + EXCLUDED.n",
        f"SELECT id, n, note FROM {t} ORDER BY id",
        f"INSERT INTO {t} AS z VALUES (2, 7, 'b') ON CONFLICT (id) DO UPDATE SET note = coalesce(z.note, '') || EXCLUDED.note, "
        f"n = z.n * 10 RETURNING id, n, note",
        f"UPDATE {t} SET n = n + 1 WHERE id >= 2",
        f"INSERT INTO {t} VALUES (3, 0, 'again') ON CONFLICT (id) DO UPDATE SET n = EXCLUDED.n, note = EXCLUDED.note",
        f"INSERT INTO {t} VALUES (4, 4, 'four') ON CONFLICT (id) DO NOTHING",
        f"DELETE FROM {t} WHERE id = 1",
        f"SELECT id, n, note FROM {t} ORDER BY id",
        f"SELECT count(*), sum(n) FROM {t}",
        end,
    ]
    after = [f"SELECT id, n, note FROM {t} ORDER BY id"]
    expected = _play(target_for(request, "postgres"), setup, block + after)
    got = _play(target_for(request, "tidegate"), setup, block + after)
    diffs = [(s, e, g) for s, e, g in zip(block + after, expected, got) if e != g]
    assert not diffs, "\n".join(f"{s}\n  postgres {e}\n  tidegate {g}" for s, e, g in diffs)
    assert not any(isinstance(e, tuple) and e and e[0] == "error" for e in expected)


def test_upsert_in_a_block_conflicts_with_a_concurrent_insert(tidegate) -> None:
    """The rows an upsert in a block computed are not committed over a row another transaction
    stored under one of its keys meanwhile: COMMIT fails with 40001 and stores nothing."""
    t = "occ_" + uuid.uuid4().hex[:6]
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, n int)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 1)")
    with psycopg.connect(tidegate.dsn) as tx, psycopg.connect(tidegate.dsn, autocommit=True) as other:
        tx.execute(f"INSERT INTO {t} VALUES (1, 10), (2, 20) ON CONFLICT (id) DO UPDATE SET n = {t}.n + EXCLUDED.n")
        assert tx.execute(f"SELECT id, n FROM {t} ORDER BY id").fetchall() == [(1, 11), (2, 20)]
        other.execute(f"INSERT INTO {t} VALUES (2, 99)")
        with pytest.raises(psycopg.errors.SerializationFailure):
            tx.commit()
        assert other.execute(f"SELECT id, n FROM {t} ORDER BY id").fetchall() == [(1, 1), (2, 99)]


def test_create_load_swap_keeps_every_row(tidegate) -> None:
    """The sequence dbt and loaders use: build a new table, fill it, swap it in by name."""
    p = "cls_" + uuid.uuid4().hex[:6]
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {p}_src (id int, v text)")
        conn.execute(f"INSERT INTO {p}_src VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        conn.execute(f"CREATE TABLE {p} (id int, v text)")
        conn.execute(f"INSERT INTO {p} VALUES (9, 'old')")
    with psycopg.connect(tidegate.dsn) as tx:
        tx.execute(f"CREATE TABLE {p}_tmp (id int, v text)")
        tx.execute(f"INSERT INTO {p}_tmp SELECT * FROM {p}_src")
        tx.execute(f"DROP TABLE IF EXISTS {p}")
        tx.execute(f"ALTER TABLE {p}_tmp RENAME TO {p}")
        assert tx.execute(f"SELECT count(*) FROM {p}").fetchone() == (3,)
        tx.commit()
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        assert conn.execute(f"SELECT id, v FROM {p} ORDER BY id").fetchall() == [(1, "a"), (2, "b"), (3, "c")]


def test_a_multi_statement_query_is_one_transaction(request: pytest.FixtureRequest) -> None:
    """Statements sent in one simple Query run as one implicit transaction, as in PostgreSQL:
    a failing UPDATE leaves none of the batch's writes, and a batch reads its own writes."""
    t = "msq_" + uuid.uuid4().hex[:6]
    answers = []
    for name in ("postgres", "tidegate"):
        target = target_for(request, name)
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, n int)")
            conn.execute(f"INSERT INTO {t} VALUES (1, 1)")
            with pytest.raises(psycopg.errors.DivisionByZero):
                conn.execute(f"INSERT INTO {t} VALUES (2, 2); UPDATE {t} SET n = n + 10; "
                             f"UPDATE {t} SET n = 1 / (n - 12) WHERE id = 2")
            after_failure = conn.execute(f"SELECT id, n FROM {t} ORDER BY id").fetchall()
            cur = conn.execute(f"INSERT INTO {t} VALUES (3, 3); UPDATE {t} SET n = n * 2 WHERE id >= 3; "
                               f"DELETE FROM {t} WHERE id = 1; SELECT id, n FROM {t} ORDER BY id")
            seen = []
            while True:
                seen.append(cur.fetchall() if cur.description else cur.statusmessage)
                if not cur.nextset():
                    break
            answers.append((after_failure, seen, conn.execute(f"SELECT id, n FROM {t} ORDER BY id").fetchall()))
    assert answers[0] == answers[1], answers
    assert answers[0][0] == [(1, 1)]
