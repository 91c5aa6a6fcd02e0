"""INFORMATION_SCHEMA relations whose rows change without a catalog version bump (flows and their
statistics, refresh state, jobs, gateways): the evaluator's DuckDB gets them empty at creation and
their current rows in one transaction per query that mentions them (catalog.pgcatalog)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

_VIEW = "tg_live_load"


def create_tables(con: Any, tables: dict[str, pa.Table]) -> None:
    """``isx.<name>`` for each of ``tables``, empty, with its Arrow schema."""
    for name, table in tables.items():
        con.register(_VIEW, table.slice(0, 0))
        try:
            con.execute(f"CREATE TABLE IF NOT EXISTS isx.{name} AS SELECT * FROM {_VIEW}")
        finally:
            con.unregister(_VIEW)


def replace_rows(con: Any, tables: dict[str, pa.Table]) -> None:
    """Replace the rows of each ``isx.<name>`` by those of its table, all in one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        for name, table in tables.items():
            con.execute(f"DELETE FROM isx.{name}")
            if table.num_rows:
                con.register(_VIEW, table)
                try:
                    con.execute(f"INSERT INTO isx.{name} SELECT * FROM {_VIEW}")
                finally:
                    con.unregister(_VIEW)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
