"""Refresh state of refreshable tables, in the catalog's database.

A refreshable table (``refresh_mode = 'FULL_RELOAD'``) reloads its rows from an external source
with ``REFRESH TABLE``. The engine (:mod:`engine.refresh`) records here, durably and before each
step takes effect, what a crash must be able to resume:

* ``refresh_state``: one row per table (keyed by the table's oid, so a dropped and re-created
  table starts afresh): its status (IDLE, REFRESHING, FINISHING), the refresh in flight (id,
  phase, source fingerprint), the statistics of the last refresh and ``last_error``;
* ``refresh_chunks``: the staged chunks of the refresh in flight (chunk number, rows, the file
  under the staging directory), so a refresh interrupted while loading resumes after its last
  recorded chunk.

:func:`information_schema_rows` renders INFORMATION_SCHEMA.REFRESH_TABLES for the pg_catalog
evaluator, which finds the store of its catalog through :func:`store_for` (the catalog package
never imports the engine).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from tidegate.errors import SqlError
from catalog import active, live
from catalog.db import CatalogStore, shared_store
from tidegate import sqllex

IDLE, REFRESHING, FINISHING = "IDLE", "REFRESHING", "FINISHING"

REFRESH_TABLES_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("table_schema", pa.string()), ("table_name", pa.string()), ("current_status", pa.string()),
    ("last_trigger_time", pa.timestamp("us", tz="UTC")), ("last_success_time", pa.timestamp("us", tz="UTC")),
    ("trigger_interval_secs", pa.int64()), ("rows_loaded", pa.int64()), ("rows_inserted", pa.int64()),
    ("rows_updated", pa.int64()), ("rows_deleted", pa.int64()), ("last_error", pa.string()),
    ("skipped_ticks", pa.int64()), ("gateway", pa.string()),
]

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS refresh_state (
    table_oid INTEGER PRIMARY KEY,
    status TEXT NOT NULL DEFAULT 'IDLE',
    refresh_id INTEGER NOT NULL DEFAULT 0,
    phase TEXT,
    fingerprint TEXT,
    last_trigger_time TEXT, last_success_time TEXT,
    rows_loaded INTEGER, rows_inserted INTEGER, rows_updated INTEGER, rows_deleted INTEGER,
    last_error TEXT,
    skipped_ticks INTEGER NOT NULL DEFAULT 0,
    pending TEXT,
    staged_rows INTEGER);
CREATE TABLE IF NOT EXISTS refresh_chunks (
    table_oid INTEGER NOT NULL, refresh_id INTEGER NOT NULL, chunk INTEGER NOT NULL,
    rows INTEGER NOT NULL, file TEXT NOT NULL,
    PRIMARY KEY (table_oid, refresh_id, chunk));
"""


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _dt(v: str | None) -> datetime | None:
    return datetime.fromisoformat(v) if v else None


@dataclass
class RefreshState:
    """One table's refresh status and the statistics of its last refresh."""

    table_oid: int
    status: str = IDLE
    refresh_id: int = 0
    phase: str | None = None
    fingerprint: str | None = None
    last_trigger_time: datetime | None = None
    last_success_time: datetime | None = None
    rows_loaded: int | None = None
    rows_inserted: int | None = None
    rows_updated: int | None = None
    rows_deleted: int | None = None
    last_error: str | None = None
    skipped_ticks: int = 0
    staged_rows: int | None = None  # rows of the refresh in flight once its load is complete


@dataclass
class Chunk:
    chunk: int
    rows: int
    file: str


def store_for(catalog: Any) -> RefreshStore:
    """The refresh store of ``catalog`` (one per catalog object, opened on first use)."""
    return shared_store(catalog, RefreshStore)


class RefreshStore(CatalogStore):
    """Thread-safe refresh state; every change is its own durable transaction."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path, _SCHEMA_SQL)

    def _row(self, table_oid: int) -> RefreshState:
        row = self._conn.execute(
            "SELECT table_oid, status, refresh_id, phase, fingerprint, last_trigger_time, last_success_time, "
            "rows_loaded, rows_inserted, rows_updated, rows_deleted, last_error, skipped_ticks, staged_rows "
            "FROM refresh_state WHERE table_oid=?", (table_oid,)).fetchone()
        if row is None:
            return RefreshState(table_oid)
        return RefreshState(row[0], row[1], row[2], row[3], row[4], _dt(row[5]), _dt(row[6]), *row[7:])

    def get(self, table_oid: int) -> RefreshState:
        with self._lock:
            return self._row(table_oid)

    def all(self) -> dict[int, RefreshState]:
        with self._lock:
            oids = [r[0] for r in self._conn.execute("SELECT table_oid FROM refresh_state").fetchall()]
            return {oid: self._row(oid) for oid in oids}

    def begin(self, table_oid: int, qualified: str, fingerprint: str | None = None) -> int:
        """Atomically move an IDLE table to REFRESHING; returns the new refresh id.

        55000 with RisingWave's text when a refresh of the table is already running."""
        with self.transaction():
            st = self._row(table_oid)
            if st.status != IDLE:
                raise SqlError("55000", f"Table '{qualified}' is not in idle state. Current state: {st.status}")
            rid = st.refresh_id + 1
            self._conn.execute(
                "INSERT INTO refresh_state (table_oid) VALUES (?) ON CONFLICT(table_oid) DO NOTHING", (table_oid,))
            self._conn.execute(
                "UPDATE refresh_state SET status=?, refresh_id=?, phase='load', fingerprint=?, "
                "last_trigger_time=?, last_error=NULL WHERE table_oid=?",
                (REFRESHING, rid, fingerprint, _now().isoformat(), table_oid))
            self._conn.execute("DELETE FROM refresh_chunks WHERE table_oid=?", (table_oid,))
            return rid

    def set_fingerprint(self, table_oid: int, fingerprint: str) -> None:
        with self._lock:
            self._conn.execute("UPDATE refresh_state SET fingerprint=? WHERE table_oid=?", (fingerprint, table_oid))

    def restart(self, table_oid: int, fingerprint: str | None) -> int:
        """Start the refresh in flight over under a new id (the source changed since its chunks)."""
        with self.transaction():
            rid = self._row(table_oid).refresh_id + 1
            self._conn.execute("UPDATE refresh_state SET refresh_id=?, phase='load', fingerprint=?, status=? "
                               "WHERE table_oid=?", (rid, fingerprint, REFRESHING, table_oid))
            self._conn.execute("DELETE FROM refresh_chunks WHERE table_oid=?", (table_oid,))
            return rid

    def record_chunk(self, table_oid: int, refresh_id: int, chunk: Chunk) -> None:
        with self._lock:
            self._conn.execute("INSERT INTO refresh_chunks VALUES (?, ?, ?, ?, ?) ON CONFLICT (table_oid, refresh_id, chunk) "
                               "DO UPDATE SET rows = excluded.rows, file = excluded.file",
                               (table_oid, refresh_id, chunk.chunk, chunk.rows, chunk.file))

    def chunks(self, table_oid: int, refresh_id: int) -> list[Chunk]:
        with self._lock:
            rows = self._conn.execute("SELECT chunk, rows, file FROM refresh_chunks WHERE table_oid=? AND refresh_id=? "
                                      "ORDER BY chunk", (table_oid, refresh_id)).fetchall()
        return [Chunk(*r) for r in rows]

    def finishing(self, table_oid: int, rows_loaded: int) -> None:
        """The load is complete: from now on a crash finishes the commit instead of reloading."""
        with self._lock:
            self._conn.execute("UPDATE refresh_state SET status=?, phase='commit', staged_rows=? WHERE table_oid=?",
                               (FINISHING, rows_loaded, table_oid))

    def set_pending(self, table_oid: int, inserted: int, updated: int, deleted: int) -> None:
        """The statistics of the diff about to be committed (read back if a crash follows the commit)."""
        with self._lock:
            self._conn.execute("UPDATE refresh_state SET pending=? WHERE table_oid=?",
                               (json.dumps([inserted, updated, deleted]), table_oid))

    def pending(self, table_oid: int) -> tuple[int, int, int]:
        with self._lock:
            row = self._conn.execute("SELECT pending FROM refresh_state WHERE table_oid=?", (table_oid,)).fetchone()
        if not row or not row[0]:
            return 0, 0, 0
        i, u, d = json.loads(row[0])
        return int(i), int(u), int(d)

    def succeed(self, table_oid: int, loaded: int, inserted: int, updated: int, deleted: int,
                warning: str | None = None) -> None:
        with self.transaction():
            self._conn.execute(
                "UPDATE refresh_state SET status=?, phase=NULL, fingerprint=NULL, last_success_time=?, pending=NULL, rows_loaded=?, "
                "rows_inserted=?, rows_updated=?, rows_deleted=?, last_error=? WHERE table_oid=?",
                (IDLE, _now().isoformat(), loaded, inserted, updated, deleted, warning, table_oid))
            self._conn.execute("DELETE FROM refresh_chunks WHERE table_oid=?", (table_oid,))

    def fail(self, table_oid: int, error: str) -> None:
        with self.transaction():
            self._conn.execute("UPDATE refresh_state SET status=?, phase=NULL, fingerprint=NULL, last_error=? "
                               "WHERE table_oid=?", (IDLE, error, table_oid))
            self._conn.execute("DELETE FROM refresh_chunks WHERE table_oid=?", (table_oid,))

    def skip_tick(self, table_oid: int) -> None:
        with self._lock:
            self._conn.execute("INSERT INTO refresh_state (table_oid) VALUES (?) ON CONFLICT(table_oid) DO NOTHING",
                               (table_oid,))
            self._conn.execute("UPDATE refresh_state SET skipped_ticks = skipped_ticks + 1 WHERE table_oid=?",
                               (table_oid,))

    def forget(self, table_oid: int) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM refresh_state WHERE table_oid=?", (table_oid,))
            self._conn.execute("DELETE FROM refresh_chunks WHERE table_oid=?", (table_oid,))


# -- INFORMATION_SCHEMA.REFRESH_TABLES ------------------------------------------------------------

def is_refreshable(options: dict[str, str]) -> bool:
    return options.get("refresh_mode", "").upper() == "FULL_RELOAD"


def information_schema_rows(catalog: Any) -> pa.Table:
    """One row per refreshable table of ``catalog`` (SHOW REFRESH STATUS shows the same rows)."""
    store = store_for(catalog)
    states = store.all()
    cols: dict[str, list[Any]] = {n: [] for n, _ in REFRESH_TABLES_COLUMNS}
    tables = sorted((t for t in catalog.list_tables(kind="table") if is_refreshable(t.options)),
                    key=lambda t: (t.schema, t.name))
    # the gateway that schedules and runs refreshes: the catalog's leader (catalog/active.py)
    gateway = active.leader_address(catalog) if tables else None
    for t in tables:
        st = states.get(t.oid) or RefreshState(t.oid)
        interval = t.options.get("refresh_interval_sec")
        values = {
            "table_schema": t.schema, "table_name": t.name, "current_status": st.status,
            "last_trigger_time": st.last_trigger_time, "last_success_time": st.last_success_time,
            "trigger_interval_secs": int(interval) if interval else None,
            "rows_loaded": st.rows_loaded, "rows_inserted": st.rows_inserted, "rows_updated": st.rows_updated,
            "rows_deleted": st.rows_deleted, "last_error": st.last_error, "skipped_ticks": st.skipped_ticks,
            "gateway": gateway,
        }
        for k, v in values.items():
            cols[k].append(v)
    return pa.table({n: pa.array(cols[n], t) for n, t in REFRESH_TABLES_COLUMNS})


def mentions_refresh_relations(sql: str) -> bool:
    """Whether a catalog query reads INFORMATION_SCHEMA.REFRESH_TABLES (rows change without a
    catalog version bump: reloaded per query and never cached)."""
    return "refresh_tables" in sqllex.identifiers(sql)


def load_into_duckdb(con: Any, catalog: Any, *, create: bool = False) -> None:
    """Create (``create=True``) or refresh ``isx.refresh_tables`` in the evaluator's DuckDB."""
    if create:
        live.create_tables(con, {"refresh_tables": pa.table({n: pa.array([], t) for n, t in REFRESH_TABLES_COLUMNS})})
    else:
        live.replace_rows(con, {"refresh_tables": information_schema_rows(catalog)})
