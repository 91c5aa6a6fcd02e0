"""pgcli, released (pinned in tests/tools/requirements.txt): its meta commands and the metadata its
completer loads at start-up, through pgcli's own executor, against tidegate and PostgreSQL 15.

pgcli's REPL needs a terminal; everything it does with the server goes through
``pgcli.pgexecute.PGExecute`` (meta commands via pgspecial, completion via its loaders), which the
probe script drives directly in the tools environment.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.targets import Target, target_for
from tests.tools import venv

HERE = Path(__file__).resolve().parent
SCHEMA = "pgcli_s"
SETUP = [
    f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE",
    f"CREATE SCHEMA {SCHEMA}",
    f"CREATE TABLE {SCHEMA}.orders (id bigint PRIMARY KEY, customer text NOT NULL,"
    " amount numeric(10,2) DEFAULT 0, placed_at timestamp with time zone, note varchar(40))",
    f"COMMENT ON TABLE {SCHEMA}.orders IS 'one row per order'",
    f"COMMENT ON COLUMN {SCHEMA}.orders.amount IS 'in euros'",
    f"CREATE VIEW {SCHEMA}.open_orders AS SELECT id, customer FROM {SCHEMA}.orders WHERE amount > 0",
    f"CREATE SEQUENCE {SCHEMA}.order_ids",
    f"INSERT INTO {SCHEMA}.orders VALUES (1, 'ada', 3.50, '2024-01-01 10:00:00+00', NULL),"
    " (2, 'bob', 0, NULL, 'free')",
]


def _probe(target: Target) -> dict:
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for stmt in SETUP:
            conn.execute(stmt)
    return venv.run_probe(HERE / "pgcli_probe.py", target.host, str(target.port), target.user, target.dbname, SCHEMA)


@pytest.fixture(scope="module")
def probes(request) -> dict[str, dict]:
    venv.ensure()
    return {name: _probe(target_for(request, name)) for name in ("postgres", "tidegate")}


def _comparable(cmd: str, results: list[dict], target: str) -> list[dict]:
    """The servers' own names (user and database: tidegate/tidegate, postgres/postgres) are the one
    expected difference; replace them before comparing."""
    def norm(v):
        return "<self>" if v == target else v
    out = []
    for r in results:
        r = dict(r)
        if r.get("rows") is not None:
            r["rows"] = [[norm(v) for v in row] for row in r["rows"]]
        if cmd == "\\l":  # one database each: compare our row's name, owner and encoding
            r["rows"] = [row[:3] for row in r["rows"] if row[0] == "<self>"]
            r["status"] = None  # PostgreSQL also lists template0 and template1
        out.append(r)
    return out


@pytest.mark.parametrize("cmd", [
    f"\\dt {SCHEMA}.*", f"\\dv {SCHEMA}.*", f"\\d {SCHEMA}.*", f"\\d {SCHEMA}.orders",
    f"\\d+ {SCHEMA}.orders", f"\\d {SCHEMA}.open_orders", f"\\ds {SCHEMA}.*", f"\\dn {SCHEMA}",
    "\\l", "\\du tidegate_nobody", "\\x", f"SELECT count(*) FROM {SCHEMA}.orders",
])
def test_meta_command_matches_postgres(probes, cmd):
    got = probes["tidegate"]["commands"][cmd]
    want = probes["postgres"]["commands"][cmd]
    assert all("error" not in r for r in got), got
    assert _comparable(cmd, got, "tidegate") == _comparable(cmd, want, "postgres")


def test_completion_metadata_matches_postgres(probes):
    got, want = probes["tidegate"]["completion"], probes["postgres"]["completion"]
    for name in ("tables", "views", "table_columns", "view_columns", "datatypes", "foreignkeys"):
        assert got[name] == want[name], name
    assert SCHEMA in got["schemata"]
    assert got["search_path"] == want["search_path"]
    assert got["databases"] == ["tidegate"]
    for name in ("functions", "casing"):  # pgcli loads these at start-up; an error would break it
        assert isinstance(got[name], int), got[name]
    assert got["functions"] > 500
