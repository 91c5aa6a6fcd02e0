"""ibis, released (postgres backend, pinned in tests/tools/requirements.txt): create a table from a
DataFrame, then filters, aggregates, window functions (ibis always writes an explicit frame),
date and string operations, against tidegate and PostgreSQL 15: the same results."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.targets import Target, target_for
from tests.tools import venv

HERE = Path(__file__).resolve().parent


def _probe(target: Target) -> dict:
    return venv.run_probe(HERE / "ibis_probe.py", target.host, str(target.port), target.user, target.dbname)


@pytest.fixture(scope="module")
def probes(request) -> dict[str, dict]:
    venv.ensure()
    return {name: _probe(target_for(request, name)) for name in ("postgres", "tidegate")}


def test_create_table_from_dataframe(probes):
    got, want = probes["tidegate"], probes["postgres"]
    # create_table(df) loads the frame through a session-private temporary table that list_tables
    # shows too, under a random name: its presence is compared, not its name.
    def shown(names: list[str]) -> list[str]:
        return sorted("ibis_pandas_memtable_*" if n.startswith("ibis_pandas_memtable_") else n for n in names)

    assert shown(got["tables"]) == shown(want["tables"]) == ["ibis_pandas_memtable_*", "ibis_sales"]
    assert got["schema"] == want["schema"]


@pytest.mark.parametrize("name", ["windows", "aggregate", "filter_limit", "distinct_count", "topk",
                                  "date_ops", "string_ops", "distinct"])
def test_expression_matches_postgres(probes, name):
    got = probes["tidegate"]["results"][name]
    want = probes["postgres"]["results"][name]
    assert got == want
    assert want["rows"], name  # every expression returns rows on PostgreSQL
