"""dbt, released (dbt-core + dbt-postgres, pinned in tests/tools/requirements.txt), builds one project
against tidegate and against PostgreSQL 15, and the two end in the same state.

The project (tests/tools/dbt_project) has a seed, a view model, a table model, incremental models
(the default strategy with and without a unique key, and ``merge``), generic and singular data tests
and a timestamp snapshot. It is built twice: the second build runs after the seed changed (one row
updated, one added), so the incremental models and the snapshot take their incremental paths (a
temporary table, then delete+insert / insert / MERGE). Then ``dbt docs generate`` reads the catalog.
Every model's rows and every column's type must be PostgreSQL's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from tests.targets import Target, target_for
from tests.tools import venv

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "dbt_project"
MODELS = {  # relation -> ORDER BY that makes its rows comparable
    "analytics.raw_orders": "order_id",
    "analytics.stg_orders": "order_id",
    "analytics.customer_totals": "customer",
    "analytics.orders_incremental": "order_id",
    "analytics.orders_appended": "order_id",
    "analytics.orders_merged": "order_id",
    "snapshots.orders_snapshot": "order_id, dbt_valid_from",
}


def _dbt(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DBT_SEND_ANONYMOUS_USAGE_STATS="false", DBT_PROFILES_DIR=str(project),
               DO_NOT_TRACK="1")
    proc = subprocess.run([str(venv.bin_path("dbt")), *args, "--project-dir", str(project)], cwd=project,
                          env=env, capture_output=True, text=True, timeout=600)
    return proc


def _must(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, f"dbt {proc.args[1]} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"


def _rows(target: Target) -> dict[str, tuple[list[str], list[tuple]]]:
    out = {}
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for rel, order in MODELS.items():
            cur = conn.execute(f"SELECT * FROM {rel} ORDER BY {order}")
            rows = [tuple(float(v) if isinstance(v, Decimal) else v for v in r) for r in cur.fetchall()]
            out[rel] = ([d.name for d in cur.description], rows)
    return out


def _build(target: Target, root: Path) -> dict:
    project = root / target.name
    shutil.copytree(PROJECT, project)
    (project / "profiles.yml").write_text(
        "tidegate_tools:\n  target: t\n  outputs:\n    t:\n      type: postgres\n"
        f"      host: {target.host}\n      port: {target.port}\n      user: {target.user}\n"
        f"      password: ''\n      dbname: {target.dbname}\n      schema: analytics\n      threads: 2\n")
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for schema in ("analytics", "snapshots"):
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    first = _dbt(project, "build")
    _must(first)
    state1 = _rows(target)
    shutil.copy(HERE / "raw_orders_v2.csv", project / "seeds" / "raw_orders.csv")
    second = _dbt(project, "build")
    _must(second)
    state2 = _rows(target)
    docs = _dbt(project, "docs", "generate")
    _must(docs)
    catalog = json.loads((project / "target" / "catalog.json").read_text())
    results = json.loads((project / "target" / "run_results.json").read_text())
    return {"state1": state1, "state2": state2, "catalog": catalog, "project": project,
            "second": second, "results": results}


@pytest.fixture(scope="module")
def builds(request, tmp_path_factory) -> dict[str, dict]:
    venv.ensure()
    root = tmp_path_factory.mktemp("dbt")
    return {name: _build(target_for(request, name), root) for name in ("postgres", "tidegate")}


def test_first_build_matches_postgres(builds):
    got, want = builds["tidegate"]["state1"], builds["postgres"]["state1"]
    for rel in MODELS:
        assert got[rel] == want[rel], rel


def test_incremental_build_matches_postgres(builds):
    """The second build: incremental models merge the changed and added rows, the snapshot closes
    the old version of order 2 and opens the new one."""
    got, want = builds["tidegate"]["state2"], builds["postgres"]["state2"]
    for rel in MODELS:
        assert got[rel] == want[rel], rel
    cols, rows = got["snapshots.orders_snapshot"]
    versions = [r for r in rows if r[cols.index("order_id")] == 2]
    assert len(versions) == 2 and sum(r[cols.index("dbt_valid_to")] is None for r in versions) == 1
    cols, rows = got["analytics.orders_incremental"]
    assert [r[cols.index("status")] for r in rows] == ["placed", "returned", "placed", "returned", "placed"]


def test_docs_catalog_matches_postgres(builds):
    """``dbt docs generate``: relation kinds and every column's name, position and type."""
    def shape(catalog: dict) -> dict:
        return {key: (node["metadata"]["type"], node["metadata"]["schema"], node["metadata"]["name"],
                      sorted((c["index"], c["name"], c["type"]) for c in node["columns"].values()))
                for key, node in catalog["nodes"].items()}
    got, want = shape(builds["tidegate"]["catalog"]), shape(builds["postgres"]["catalog"])
    assert set(got) == set(want) and len(got) == len(MODELS)
    for key in want:
        assert got[key] == want[key], key


def test_data_tests_catch_bad_rows(builds):
    """dbt's tests are queries: a duplicate and a NULL make them fail on tidegate as on PostgreSQL,
    with the same failure counts."""
    counts = {}
    for name, build in builds.items():
        project: Path = build["project"]
        prof = (project / "profiles.yml").read_text()
        port = int(prof.split("port: ")[1].split()[0])
        user = prof.split("user: ")[1].split()[0]
        dbname = prof.split("dbname: ")[1].split()[0]
        with psycopg.connect(host="127.0.0.1", port=port, user=user, dbname=dbname, autocommit=True) as conn:
            conn.execute("INSERT INTO analytics.customer_totals VALUES ('ada', 1, 1), (NULL, 1, NULL)")
        proc = _dbt(project, "test", "--select", "customer_totals")
        assert proc.returncode == 1, proc.stdout[-3000:]
        results = json.loads((project / "target" / "run_results.json").read_text())["results"]
        counts[name] = sorted((r["unique_id"].split(".")[2], r["status"], r["failures"]) for r in results)
    assert counts["tidegate"] == counts["postgres"]
    assert ("not_null_customer_totals_customer", "fail", 1) in counts["tidegate"]
    assert ("unique_customer_totals_customer", "fail", 1) in counts["tidegate"]
