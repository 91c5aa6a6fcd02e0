"""SCROLL cursors (DECLARE ... SCROLL CURSOR [WITH HOLD]) against PostgreSQL 15.

A matrix of FETCH / MOVE directions (NEXT, PRIOR, FIRST, LAST, ABSOLUTE n, RELATIVE n, FORWARD
and BACKWARD n / ALL, bare counts) from every cursor position (before the first row, on each row,
after the last) runs on both servers; every returned row, command tag and the position it leaves
(read back with FETCH RELATIVE 0) must be PostgreSQL's. Then psycopg's scrollable server-side
cursors (text and binary), WITH HOLD across COMMIT, and an empty result.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest
from tests.targets import Target, target_for

DIRECTIONS = ["NEXT", "PRIOR", "FIRST", "LAST", "ABSOLUTE 2", "ABSOLUTE -2", "ABSOLUTE 0", "ABSOLUTE 9",
              "ABSOLUTE -9", "RELATIVE 2", "RELATIVE -2", "RELATIVE 0", "RELATIVE 9", "RELATIVE -9",
              "FORWARD", "BACKWARD", "FORWARD 2", "FORWARD 0", "FORWARD -2", "BACKWARD 2", "BACKWARD 0",
              "BACKWARD -1", "FORWARD ALL", "BACKWARD ALL", "ALL", "3", "-3", "0", ""]
ROWS = 5


def _statements(cursor: str) -> list[str]:
    out = []
    for verb in ("FETCH", "MOVE"):
        for d in DIRECTIONS:
            for start in range(ROWS + 2):  # 0: before the first row .. ROWS + 1: after the last
                out.append(f"MOVE ABSOLUTE {start} IN {cursor}" if start <= ROWS else f"MOVE FORWARD ALL IN {cursor}")
                out.append(f"{verb} {d} FROM {cursor}" if d else f"{verb} {cursor}")
                out.append(f"FETCH RELATIVE 0 FROM {cursor}")
    return out


def _play(target: Target, table: str, statements: list[str], declare: str) -> list[object]:
    out: list[object] = []
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id int, v text)")
        conn.execute(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, 'v{i}')" for i in range(1, ROWS + 1)))
    with psycopg.connect(target.dsn) as conn:
        conn.execute(declare)
        for s in statements:
            try:
                cur = conn.execute(s)
                out.append((s, cur.fetchall() if cur.description else None, cur.statusmessage))
            except psycopg.Error as e:
                out.append((s, "error", e.sqlstate))
                conn.rollback()
                conn.execute(declare)
        conn.rollback()
    return out


def test_fetch_direction_matrix(request: pytest.FixtureRequest) -> None:
    table = "sc_" + uuid.uuid4().hex[:6]
    statements = _statements("c")
    declare = f"DECLARE c SCROLL CURSOR FOR SELECT id, v FROM {table} ORDER BY id"
    expected = _play(target_for(request, "postgres"), table, statements, declare)
    got = _play(target_for(request, "tidegate"), table, statements, declare)
    diffs = [(e, g) for e, g in zip(expected, got) if e != g]
    assert not diffs and len(expected) == len(got), "\n".join(f"postgres {e}\ntidegate {g}" for e, g in diffs[:10])
    assert any(r[2] == "FETCH 3" for r in expected)  # the matrix did move and fetch rows


def test_non_scroll_cursor_still_refuses_backward(request: pytest.FixtureRequest) -> None:
    table = "sn_" + uuid.uuid4().hex[:6]
    out = _play(target_for(request, "tidegate"), table, ["FETCH NEXT FROM c", "FETCH PRIOR FROM c"],
                f"DECLARE c NO SCROLL CURSOR FOR SELECT id FROM {table} ORDER BY id")
    assert out == [("FETCH NEXT FROM c", [(1,)], "FETCH 1"), ("FETCH PRIOR FROM c", "error", "55000")]


def _psycopg_scroll(target: Target, table: str, binary: bool) -> list[object]:
    seen: list[object] = []
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id int, v text, ts timestamp)")
        conn.execute(f"INSERT INTO {table} SELECT g, 'v' || g, timestamp '2024-01-01' + g * interval '1 hour' "
                     f"FROM generate_series(1, 20) g" if target.name == "postgres" else
                     f"INSERT INTO {table} VALUES " + ", ".join(
                         f"({g}, 'v{g}', timestamp '2024-01-01 00:00:00' + interval '{g} hour')" for g in range(1, 21)))
    with psycopg.connect(target.dsn) as conn:
        with conn.cursor("sc", scrollable=True, binary=binary) as cur:
            cur.execute(f"SELECT id, v, ts FROM {table} WHERE id > %s ORDER BY id", (3,))
            seen.append(cur.fetchmany(4))
            cur.scroll(-2)
            seen.append(cur.fetchone())
            cur.scroll(0, mode="absolute")
            seen.append(cur.fetchmany(2))
            cur.scroll(15, mode="absolute")
            seen.append(cur.fetchall())
            cur.scroll(-3)
            seen.append(cur.fetchall())
    with psycopg.connect(target.dsn) as conn:  # WITH HOLD: readable after COMMIT
        with conn.cursor("held", scrollable=True, withhold=True) as cur:
            cur.execute(f"SELECT id FROM {table} WHERE id <= 3 ORDER BY id DESC")
            conn.commit()
            seen.append(cur.fetchall())
            cur.scroll(0, mode="absolute")
            seen.append(cur.fetchone())
        conn.commit()
    with psycopg.connect(target.dsn) as conn:  # an empty result
        conn.execute(f"DECLARE e SCROLL CURSOR FOR SELECT id FROM {table} WHERE id < 0")
        for d in ("LAST", "PRIOR", "ABSOLUTE 1", "BACKWARD ALL", "FORWARD ALL"):
            cur = conn.execute(f"FETCH {d} FROM e")
            seen.append((d, cur.fetchall(), cur.statusmessage))
    return seen


@pytest.mark.parametrize("binary", [False, True])
def test_psycopg_scrollable_cursors(request: pytest.FixtureRequest, binary: bool) -> None:
    table = "sp_" + uuid.uuid4().hex[:6]
    expected = _psycopg_scroll(target_for(request, "postgres"), table, binary)
    got = _psycopg_scroll(target_for(request, "tidegate"), table, binary)
    assert got == expected
    assert expected[0] == [(i, f"v{i}", expected[0][0][2].replace(hour=i)) for i in range(4, 8)]
