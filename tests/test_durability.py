"""Durability and Delta interoperability of tidegate's storage (tidegate only: PostgreSQL is not the subject).

The module starts its own gateway on a temporary data directory, writes through the wire,
kills the gateway with SIGKILL (no shutdown hook runs) and restarts it on the same directory:
every acknowledged write must be there. The tables must also be ordinary Delta tables that
delta-rs reads directly, with the change data feed enabled.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import psycopg
import pytest
from deltalake import DeltaTable

from tests.tidegate_server import TidegateServer, start_tidegate


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("durability")


@pytest.fixture(scope="module")
def written(data_dir: Path) -> dict[str, list[tuple]]:
    """Write the tables through a first gateway, then kill it with SIGKILL; returns what was acknowledged."""
    server = start_tidegate(data_dir)
    uncommitted: psycopg.Connection | None = None
    try:
        server.wait_for_spark()
        expected: dict[str, list[tuple]] = {}
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE dur_items (id bigint, name text, price double precision, at timestamp)")
            rows = [(i, f"item-{i}", i * 1.25, dt.datetime(2024, 1, 1) + dt.timedelta(hours=i)) for i in range(1, 51)]
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO dur_items VALUES (%s, %s, %s, %s)", rows[:10])
                with cur.copy("COPY dur_items FROM STDIN") as copy:
                    for row in rows[10:]:
                        copy.write_row(row)
                cur.execute("UPDATE dur_items SET name = 'renamed' WHERE id = 3")
                cur.execute("DELETE FROM dur_items WHERE id = 4")
            rows[2] = (3, "renamed", rows[2][2], rows[2][3])
            del rows[3]
            expected["dur_items"] = rows

            conn.execute("CREATE TABLE dur_metrics (host text, ts timestamp TIME INDEX, cpu double precision,"
                         " PRIMARY KEY (host))")
            conn.execute("INSERT INTO dur_metrics VALUES ('a', '2024-01-01 00:00:00', 1.0),"
                         " ('b', '2024-01-01 00:00:00', 2.0), ('a', '2024-01-01 00:01:00', 3.0)")
            conn.execute("INSERT INTO dur_metrics VALUES ('a', '2024-01-01 00:00:00', 10.0)")
            conn.execute("INSERT INTO dur_metrics VALUES ('b', '2024-01-01 00:00:00', 20.0),"
                         " ('c', '2024-01-01 00:00:00', 30.0)")
            expected["dur_metrics"] = [("a", dt.datetime(2024, 1, 1, 0, 0), 10.0),
                                       ("a", dt.datetime(2024, 1, 1, 0, 1), 3.0),
                                       ("b", dt.datetime(2024, 1, 1, 0, 0), 20.0),
                                       ("c", dt.datetime(2024, 1, 1, 0, 0), 30.0)]
            # Flow sinks keep every row (DISTINCT is a grouping) across a kill -9.
            conn.execute("CREATE TABLE dur_flow_src (a int, b text, ts timestamp TIME INDEX)")
            conn.execute("CREATE FLOW dur_distinct SINK TO dur_distinct_sink EVAL INTERVAL '1 hour' AS "
                         "SELECT DISTINCT a FROM dur_flow_src")
            conn.execute("CREATE FLOW dur_distinct2 SINK TO dur_distinct2_sink EVAL INTERVAL '1 hour' AS "
                         "SELECT DISTINCT a, b FROM dur_flow_src")
            conn.execute("INSERT INTO dur_flow_src VALUES (20, 'x', '2021-07-01 00:00:00'), "
                         "(20, 'y', '2021-07-01 00:00:01'), (22, 'x', '2021-07-01 00:00:02')")
            for flow in ("dur_distinct", "dur_distinct2"):
                conn.execute(f"ADMIN FLUSH_FLOW('{flow}')")
            conn.execute("INSERT INTO dur_flow_src VALUES (23, 'x', '2021-07-01 00:00:03')")
            for flow in ("dur_distinct", "dur_distinct2"):
                conn.execute(f"ADMIN FLUSH_FLOW('{flow}')")
            expected["dur_distinct_sink"] = [(20,), (22,), (23,)]
            expected["dur_distinct2_sink"] = [(20, "x"), (20, "y"), (22, "x"), (23, "x")]
            # A copying flow into an existing time-series sink keeps NULL tags (one series) across a kill -9.
            conn.execute("CREATE TABLE dur_tag_src (a text, b int, ts timestamp TIME INDEX, PRIMARY KEY (a))")
            conn.execute("CREATE TABLE dur_tag_sink (a text, b int, ts timestamp TIME INDEX, PRIMARY KEY (a))")
            conn.execute("CREATE FLOW dur_tags SINK TO dur_tag_sink EVAL INTERVAL '1 hour' AS "
                         "SELECT a, b, ts FROM dur_tag_src")
            conn.execute("INSERT INTO dur_tag_src VALUES (NULL, 1, '2024-01-01 00:00:00'), "
                         "('x', 2, '2024-01-01 00:00:00'), (NULL, 3, '2024-01-01 00:00:01')")
            conn.execute("ADMIN FLUSH_FLOW('dur_tags')")
            expected["dur_tag_sink"] = [(None, 1, dt.datetime(2024, 1, 1)), (None, 3, dt.datetime(2024, 1, 1, 0, 0, 1)),
                                        ("x", 2, dt.datetime(2024, 1, 1))]
            # A transaction committed just before the crash is durable; one still open is not.
            conn.execute("CREATE TABLE dur_tx (id int)")
            conn.execute("BEGIN")
            conn.execute("INSERT INTO dur_tx VALUES (1)")
            conn.execute("COMMIT")
            expected["dur_tx"] = [(1,)]
        uncommitted = psycopg.connect(server.dsn)
        uncommitted.execute("INSERT INTO dur_tx VALUES (2)")
    finally:
        server.kill9()
        if uncommitted is not None:
            uncommitted.close()
    return expected


@pytest.fixture(scope="module")
def restarted(data_dir: Path, written: dict[str, list[tuple]]) -> TidegateServer:
    server = start_tidegate(data_dir)
    server.wait_for_spark()
    yield server
    server.stop()


QUERIES = {
    "dur_items": "SELECT id, name, price, at FROM dur_items ORDER BY id",
    "dur_metrics": "SELECT host, ts, cpu FROM dur_metrics ORDER BY host, ts",
    "dur_tx": "SELECT id FROM dur_tx ORDER BY id",
    "dur_distinct_sink": "SELECT a FROM dur_distinct_sink ORDER BY a",
    "dur_distinct2_sink": "SELECT a, b FROM dur_distinct2_sink ORDER BY a, b",
    "dur_tag_sink": "SELECT a, b, ts FROM dur_tag_sink ORDER BY a NULLS FIRST, ts",
}


@pytest.mark.parametrize("table", list(QUERIES))
def test_rows_survive_kill9(restarted: TidegateServer, written: dict[str, list[tuple]], table: str) -> None:
    with psycopg.connect(restarted.dsn, autocommit=True) as conn:
        assert conn.execute(QUERIES[table]).fetchall() == written[table]


def test_time_index_last_write_wins_after_restart(restarted: TidegateServer) -> None:
    with psycopg.connect(restarted.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO dur_metrics VALUES ('c', '2024-01-01 00:00:00', 31.5), ('d', '2024-01-01 00:00:00', 4.0)")
        rows = conn.execute("SELECT host, cpu FROM dur_metrics WHERE ts = '2024-01-01 00:00:00' ORDER BY host").fetchall()
        assert rows == [("a", 10.0), ("b", 20.0), ("c", 31.5), ("d", 4.0)]
        assert conn.execute("SELECT count(*) FROM dur_metrics").fetchone() == (5,)


def test_distinct_flows_keep_rows_after_kill9(restarted: TidegateServer) -> None:
    """The flows run on after the restart and still keep one sink row per distinct value."""
    with psycopg.connect(restarted.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO dur_flow_src VALUES (24, 'z', '2021-07-01 00:00:04'), (20, 'x', '2021-07-01 00:00:05')")
        for flow in ("dur_distinct", "dur_distinct2"):
            conn.execute(f"ADMIN FLUSH_FLOW('{flow}')")
        assert conn.execute(QUERIES["dur_distinct_sink"]).fetchall() == [(20,), (22,), (23,), (24,)]
        assert conn.execute(QUERIES["dur_distinct2_sink"]).fetchall() == [
            (20, "x"), (20, "y"), (22, "x"), (23, "x"), (24, "z")]


def test_null_tag_flow_keeps_rows_after_kill9(restarted: TidegateServer) -> None:
    """After the restart the copying flow still upserts the NULL series rather than failing on it."""
    with psycopg.connect(restarted.dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO dur_tag_src VALUES (NULL, 9, '2024-01-01 00:00:00')")
        conn.execute("ADMIN FLUSH_FLOW('dur_tags')")
        assert conn.execute(QUERIES["dur_tag_sink"]).fetchall() == [
            (None, 9, dt.datetime(2024, 1, 1)), (None, 3, dt.datetime(2024, 1, 1, 0, 0, 1)),
            ("x", 2, dt.datetime(2024, 1, 1))]


def test_catalog_survives_kill9(restarted: TidegateServer) -> None:
    with psycopg.connect(restarted.dsn, autocommit=True) as conn:
        cols = conn.execute("SELECT column_name, data_type FROM information_schema.columns"
                            " WHERE table_name = 'dur_items' ORDER BY ordinal_position").fetchall()
        assert cols == [("id", "bigint"), ("name", "text"), ("price", "double precision"),
                        ("at", "timestamp without time zone")]
        with pytest.raises(psycopg.errors.DuplicateTable):
            conn.execute("CREATE TABLE dur_items (x int)")


def delta_path(server: TidegateServer, data_dir: Path, table: str) -> Path:
    """Where the gateway keeps ``table``'s Delta files (``warehouse/<schema oid>/<table oid>``)."""
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        return data_dir / conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()[0]


def test_delta_table_readable_directly(restarted: TidegateServer, data_dir: Path,
                                       written: dict[str, list[tuple]]) -> None:
    path = delta_path(restarted, data_dir, "dur_items")
    table = DeltaTable(str(path)).to_pyarrow_table()
    assert table.column_names == ["id", "name", "price", "at"]
    rows = sorted(zip(*(table.column(c).to_pylist() for c in table.column_names)))
    assert rows == written["dur_items"]


def test_delta_time_index_table_readable_directly(restarted: TidegateServer, data_dir: Path) -> None:
    table = DeltaTable(str(delta_path(restarted, data_dir, "dur_metrics"))).to_pyarrow_table()
    rows = sorted(zip(table.column("host").to_pylist(), table.column("ts").to_pylist(), table.column("cpu").to_pylist()))
    # Last write wins in storage too, not only in query results.
    assert ("a", dt.datetime(2024, 1, 1, 0, 0), 10.0) in rows
    assert ("a", dt.datetime(2024, 1, 1, 0, 0), 1.0) not in rows
    assert len(rows) == len(set((h, t) for h, t, _ in rows))


def test_change_data_feed_enabled(restarted: TidegateServer, data_dir: Path) -> None:
    dt_items = DeltaTable(str(delta_path(restarted, data_dir, "dur_items")))
    assert dt_items.metadata().configuration.get("delta.enableChangeDataFeed") == "true"
    changes = dt_items.load_cdf(starting_version=0).read_all()
    kinds = set(changes.column("_change_type").to_pylist())
    assert "insert" in kinds
    assert "delete" in kinds
    assert {"update_preimage", "update_postimage"} & kinds


def test_writes_after_restart_are_visible_to_delta(restarted: TidegateServer, data_dir: Path) -> None:
    with psycopg.connect(restarted.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE dur_after (id int, v text)")
        conn.execute("INSERT INTO dur_after VALUES (1, 'x'), (2, NULL)")
    table = DeltaTable(str(delta_path(restarted, data_dir, "dur_after"))).to_pyarrow_table()
    assert sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist()),
                  key=lambda r: r[0]) == [(1, "x"), (2, None)]
