"""No name a client chooses can address a path: storage is laid out by object id.

Hostile table and schema names (absolute paths, '..', separators, Unicode, very long) go through
every statement that creates, renames or drops storage; afterwards the filesystem is checked: a
sentinel tree beside the data dir is untouched and the warehouse holds only id-named directories.
Identifiers follow PostgreSQL's lexer rules (zero-length is 42601, longer than 63 bytes is
truncated with a NOTICE). A data dir laid out by names (before this layout) keeps working.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql as psql


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with a digest of its content, and every directory."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = "dir"
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


@pytest.fixture
def sentinel(tidegate):
    """A tree beside the data dir that no statement may touch, and the data dir's siblings."""
    outside = tidegate.data_dir.parent / f"outside-{uuid.uuid4().hex[:6]}"
    (outside / "data" / "deep").mkdir(parents=True)
    (outside / "data" / "keep.txt").write_text("precious")
    (outside / "data" / "deep" / "more.bin").write_bytes(os.urandom(64))
    before_tree = _tree(outside)
    before_siblings = sorted(os.listdir(tidegate.data_dir.parent))
    yield outside
    assert _tree(outside) == before_tree
    assert sorted(os.listdir(tidegate.data_dir.parent)) == before_siblings
    shutil.rmtree(outside)


def _warehouse_is_ids_only(data_dir: Path) -> None:
    warehouse = data_dir / "warehouse"
    for dirpath, dirnames, _ in os.walk(warehouse):
        depth = len(Path(dirpath).relative_to(warehouse).parts)
        if depth < 2:
            bad = [d for d in dirnames if not d.isdigit()]
            assert not bad, f"non-id directories under {dirpath}: {bad}"


def _hostile_names(outside: Path) -> list[str]:
    return [str(outside / "data"), str(outside), "..", ".", "../..", "../" + outside.name,
            f"a/../../{outside.name}/data", "/", "~", "/tmp", "x/y", "\\..\\..", "..%2f..",
            "データ/..", "name with spaces/..", "🙂/../..", "$HOME", "a" * 63, "./" * 31]


def _ident(name: str) -> psql.Identifier:
    return psql.Identifier(name)


def test_hostile_table_names_stay_in_the_warehouse(tidegate, sentinel: Path) -> None:
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        for k, name in enumerate(_hostile_names(sentinel)):
            t = _ident(name)
            conn.execute(psql.SQL("CREATE TABLE {} (x int PRIMARY KEY, v text)").format(t))
            conn.execute(psql.SQL("INSERT INTO {} VALUES ({}, {})").format(t, psql.Literal(k), psql.Literal(name)))
            renamed = _ident(name[:40] + "/../r")
            conn.execute(psql.SQL("ALTER TABLE {} RENAME TO {}").format(t, renamed))
            assert conn.execute(psql.SQL("SELECT v FROM {}").format(renamed)).fetchall() == [(name,)]
            path = conn.execute("SELECT pg_relation_filepath(%s)", (renamed.as_string(conn),)).fetchone()[0]
            assert path.startswith("warehouse/") and all(p.isdigit() for p in path.split("/")[1:]), path
            conn.execute(psql.SQL("DROP TABLE {}").format(renamed))
            # re-created after the drop: starts empty (nothing of the old table left behind)
            conn.execute(psql.SQL("CREATE TABLE {} (x int)").format(t))
            assert conn.execute(psql.SQL("SELECT count(*) FROM {}").format(t)).fetchone() == (0,)
            conn.execute(psql.SQL("DROP TABLE {}").format(t))
    _warehouse_is_ids_only(tidegate.data_dir)


def test_hostile_schema_names_stay_in_the_warehouse(tidegate, sentinel: Path) -> None:
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        for name in _hostile_names(sentinel):
            s = _ident(name)
            conn.execute(psql.SQL("CREATE SCHEMA {}").format(s))
            conn.execute(psql.SQL("CREATE TABLE {}.{} (x int)").format(s, _ident(name)))
            conn.execute(psql.SQL("INSERT INTO {}.{} VALUES (1)").format(s, _ident(name)))
            conn.execute(psql.SQL("CREATE TABLE {}.ctas AS SELECT x + 1 AS y FROM {}.{}").format(s, s, _ident(name)))
            conn.execute(psql.SQL("CREATE VIEW {}.v AS SELECT y FROM {}.ctas").format(s, s))
            assert conn.execute(psql.SQL("SELECT y FROM {}.v").format(s)).fetchall() == [(2,)]
            conn.execute(psql.SQL("DROP SCHEMA {} CASCADE").format(s))
    _warehouse_is_ids_only(tidegate.data_dir)


def test_generated_identifiers_never_touch_the_host(tidegate, sentinel: Path) -> None:
    """Fuzz: names built from path fragments, separators, quotes and Unicode, through
    CREATE/INSERT/SELECT/RENAME/DROP of tables and schemas; fixed seed."""
    rng = random.Random(1414)
    fragments = ["/", "..", ".", "~", "\\", " ", "é", "日本", "🙂", "'", '"', "%2e", "$", "*", "?",
                 "\t", "a", "Z", "0", "-", str(sentinel), sentinel.name, "warehouse", "catalog.sqlite", "_delta_log"]
    seen: set[str] = set()
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        for _ in range(60):
            name = "".join(rng.choice(fragments) for _ in range(rng.randint(1, 6)))
            name = name.encode()[:63].decode(errors="ignore")  # the identifier as the server keeps it
            if not name or name in seen:
                continue
            seen.add(name)
            t = _ident(name)
            if rng.random() < 0.3:
                conn.execute(psql.SQL("CREATE SCHEMA {}").format(t))
                conn.execute(psql.SQL("CREATE TABLE {}.{} (x int)").format(t, t))
                conn.execute(psql.SQL("INSERT INTO {}.{} VALUES (1), (2)").format(t, t))
                assert conn.execute(psql.SQL("SELECT count(*) FROM {}.{}").format(t, t)).fetchone() == (2,)
                conn.execute(psql.SQL("DROP SCHEMA {} CASCADE").format(t))
            else:
                conn.execute(psql.SQL("CREATE TABLE {} (x int)").format(t))
                conn.execute(psql.SQL("INSERT INTO {} VALUES (1)").format(t))
                conn.execute(psql.SQL("TRUNCATE {}").format(t))
                conn.execute(psql.SQL("DROP TABLE {}").format(t))
    _warehouse_is_ids_only(tidegate.data_dir)


def test_identifier_rules(tidegate) -> None:
    notices: list[tuple[str | None, str | None]] = []
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append((d.sqlstate, d.message_primary)))
        for stmt in ('CREATE TABLE "" (x int)', 'CREATE SCHEMA ""', 'SELECT 1 AS ""', 'CREATE TABLE t_zl ("" int)'):
            with pytest.raises(psycopg.Error) as err:
                conn.execute(stmt)
            assert err.value.sqlstate == "42601" and "zero-length delimited identifier" in str(err.value)
        base = "tg_" + uuid.uuid4().hex[:8]
        long_name = base + "x" * 70
        conn.execute(f"CREATE TABLE {long_name} (c int)")
        assert (f'identifier "{long_name}" will be truncated to "{long_name[:63]}"') in [
            text for state, text in notices if state == "42622"]
        conn.execute(f"INSERT INTO {long_name[:63]} VALUES (7)")
        assert conn.execute(f'SELECT c FROM "{long_name[:63]}"').fetchall() == [(7,)]
        assert conn.execute("SELECT relname FROM pg_class WHERE relname LIKE %s", (base + "%",)).fetchall() == [
            (long_name[:63],)]
        conn.execute(f"DROP TABLE {long_name}")
        # multi-byte characters are never cut in half
        uname = base + "a" + "é" * 40  # 12 + 80 bytes: the 63rd byte would split an é
        conn.execute(f'CREATE TABLE "{uname}" (c int)')
        kept = conn.execute("SELECT relname FROM pg_class WHERE relname LIKE %s", (base + "%",)).fetchone()[0]
        assert len(kept.encode()) == 62 and uname.startswith(kept)
        conn.execute(f'DROP TABLE "{kept}"')


def test_data_dir_laid_out_by_name_keeps_working(tmp_path: Path) -> None:
    """Tables of an earlier version live at warehouse/<schema>/<table>: they are found where
    they are, written there, and removed from there."""
    from deltalake import DeltaTable

    from tests.tidegate_server import start_tidegate

    data = tmp_path / "data"
    server = start_tidegate(data, file_roots=[])
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE old_a (x int)")
            conn.execute("INSERT INTO old_a VALUES (1), (2)")
            conn.execute("CREATE TABLE old_b (x int)")
    finally:
        server.stop()
    # Rewrite the catalog as the earlier version kept it: name-based locations, no owners.
    db = sqlite3.connect(data / "catalog.sqlite")
    for name in ("old_a", "old_b"):
        (raw,) = db.execute("SELECT definition FROM relations WHERE name = ?", (name,)).fetchone()
        doc = json.loads(raw)
        old_location = data / "warehouse" / "public" / name
        old_location.parent.mkdir(parents=True, exist_ok=True)
        os.rename(doc["location"], old_location)
        doc["location"] = str(old_location.resolve())
        doc.pop("owner", None)
        db.execute("UPDATE relations SET definition = ? WHERE name = ?", (json.dumps(doc), name))
    db.commit()
    db.close()
    server = start_tidegate(data, file_roots=[])
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO old_a VALUES (3)")
            assert conn.execute("SELECT pg_relation_filepath('old_a')").fetchone() == ("warehouse/public/old_a",)
            conn.execute("DROP TABLE old_b")
    finally:
        server.stop()
    assert not (data / "warehouse" / "public" / "old_b").exists()
    values = DeltaTable(str(data / "warehouse" / "public" / "old_a")).to_pyarrow_table().column("x").to_pylist()
    assert sorted(values) == [1, 2, 3]


def test_nul_in_a_name_is_refused_on_the_wire(tidegate, sentinel: Path) -> None:
    """A NUL inside a Query's text (a NUL-terminated string on the wire) ends the message there:
    the rest is a protocol error, no table is created, and the server keeps serving."""
    from tests.test_protocol import Raw, fields_of

    c = Raw(tidegate.port)
    try:
        c.send(b"Q", f'CREATE TABLE "{sentinel}\0/data" (x int)'.encode() + b"\0")
        msgs = c.until(b"Z")
        errors = [fields_of(b) for k, b in msgs if k == b"E"]
        assert errors and errors[0]["C"] == "08P01"
    finally:
        c.close()
    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE %s",
                            (f"{sentinel}%",)).fetchone() == (0,)
        with pytest.raises(psycopg.Error):
            conn.execute("SELECT %s::text", ("a\0b",))  # psycopg refuses to send it at all
    _warehouse_is_ids_only(tidegate.data_dir)
