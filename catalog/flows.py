"""Flow metadata: definitions, progress and statistics, in the catalog's database.

Flows are kept in their own tables of the same database as :mod:`catalog.store` (one more
connection, :mod:`catalog.db`), so they survive restarts with the rest of the catalog:

* ``flows``: one JSON definition per flow (what CREATE FLOW said, resolved sources and sink);
* ``flow_progress``: the per-source Delta versions already folded into the sink, the run sequence
  (the Delta app-transaction version of the sink commits) and the plan of a run in flight, so a
  restart resumes without losing or duplicating sink rows;
* ``flow_stats``: the figures INFORMATION_SCHEMA.FLOW_STATISTICS shows.

The runtime (engine/flows) writes progress and statistics; :func:`information_schema_rows`
renders INFORMATION_SCHEMA.FLOWS / FLOW_STATISTICS for the pg_catalog evaluator, which finds the
store of its catalog through :func:`store_for` (the catalog package never imports the engine).
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from tidegate import sqllex
from tidegate.errors import SqlError
from catalog import live
from catalog.db import CatalogStore

# GreptimeDB numbers flows from 1024; so do we (ids are never re-used).
FIRST_FLOW_ID = 1024

FLOWS_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("flow_name", pa.string()), ("flow_id", pa.int64()), ("state_size", pa.int64()),
    ("table_catalog", pa.string()), ("flow_definition", pa.string()), ("comment", pa.string()),
    ("expire_after", pa.int64()), ("source_table_ids", pa.string()), ("sink_table_name", pa.string()),
    ("flownode_ids", pa.string()), ("options", pa.string()), ("created_time", pa.timestamp("us", tz="UTC")),
    ("updated_time", pa.timestamp("us", tz="UTC")), ("last_execution_time", pa.timestamp("us", tz="UTC")),
    ("source_table_names", pa.string()), ("flownode_addrs", pa.string()),
]
FLOW_STATISTICS_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("flow_id", pa.int64()), ("flow_name", pa.string()), ("start_time", pa.timestamp("us", tz="UTC")),
    ("last_execution_time", pa.timestamp("us", tz="UTC")), ("uptime_seconds", pa.float64()),
    ("state_size", pa.int64()), ("status", pa.string()), ("last_error", pa.string()),
    # Streaming flows (part 2): micro-batch figures; batching flows report runs as batches.
    ("input_rows", pa.int64()), ("batches", pa.int64()), ("last_batch_time", pa.timestamp("us", tz="UTC")),
    ("lag_seconds", pa.float64()), ("late_rows", pa.int64()),
]


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _dt(v: str | None) -> datetime | None:
    return datetime.fromisoformat(v) if v else None


@dataclass
class FlowDef:
    """One flow as CREATE FLOW declared it, with its resolved sources and sink."""

    name: str
    schema: str  # the schema the flow was created in (SHOW FLOWS IN <schema>)
    sink_schema: str
    sink_table: str
    query: str  # the flow's query, normalised (SHOW CREATE FLOW prints it)
    search_path: str  # the creating session's search_path: how the query's names resolve
    flow_type: str  # "batching" | "streaming": the mode the runtime runs it in
    options: dict[str, str] = field(default_factory=dict)  # as the user gave them (normalised)
    expire_after: int | None = None  # seconds
    eval_interval: int | None = None  # seconds
    comment: str | None = None
    sources: list[str] = field(default_factory=list)  # "schema.table" as written/resolved
    source_ids: list[int] = field(default_factory=list)  # table oids; empty while pending
    missing_sources: list[str] = field(default_factory=list)  # non-empty: the flow is pending
    flow_id: int = 0
    owner: str | None = None  # the creating role (None: the bootstrap superuser); its sink's owner
    created_time: datetime | None = None
    updated_time: datetime | None = None
    # Bumped when a source table is dropped under the flow (it waits, pending, for the table to be
    # created again): names the app transactions of the sink commits, so the rebuilt flow's first
    # commits are not mistaken for replays of the old ones.
    epoch: int = 0

    @property
    def pending(self) -> bool:
        return bool(self.missing_sources)

    @property
    def sink_name(self) -> str:
        return f"{self.sink_schema}.{self.sink_table}"

    def to_json(self) -> str:
        doc = asdict(self)
        doc["created_time"] = self.created_time.isoformat() if self.created_time else None
        doc["updated_time"] = self.updated_time.isoformat() if self.updated_time else None
        return json.dumps(doc)

    @classmethod
    def from_json(cls, raw: str) -> FlowDef:
        doc = json.loads(raw)
        known = {f.name for f in fields(cls)}
        doc = {k: v for k, v in doc.items() if k in known}
        doc["created_time"] = _dt(doc.get("created_time"))
        doc["updated_time"] = _dt(doc.get("updated_time"))
        return cls(**doc)


@dataclass
class FlowProgress:
    """How far a flow has folded its sources into its sink.

    ``versions`` maps a source table oid (as text) to the last Delta version processed (-1: none).
    ``seq`` is the sequence number of the last committed run (the sink commit's app-transaction
    version). A run first records ``planned_seq``/``planned_versions``, then commits the sink,
    then records the new ``seq``/``versions``: after a crash between the two, the sink's app
    transaction tells whether the planned run landed.
    """

    versions: dict[str, int] = field(default_factory=dict)
    seq: int = 0
    planned_seq: int | None = None
    planned_versions: dict[str, int] | None = None


@dataclass
class FlowStats:
    status: str = "active"
    last_error: str | None = None
    start_time: datetime | None = None
    last_execution_time: datetime | None = None
    runs: int = 0
    rows_written: int = 0
    rows_deleted: int = 0
    failures: int = 0
    execution: str = ""  # how runs evaluate the query (incremental windows or full recompute)
    state_size: int = 0
    node: str | None = None  # "host:port" of the gateway running it
    # Streaming flows (part 2): source change rows read, micro-batches, the last one's time, how
    # long the sink has been behind its sources, change rows dropped as later than the watermark.
    input_rows: int = 0
    batches: int = 0
    last_batch_time: datetime | None = None
    lag_seconds: float = 0.0
    late_rows: int = 0

    def to_json(self) -> str:
        doc = asdict(self)
        for k in ("start_time", "last_execution_time", "last_batch_time"):
            doc[k] = doc[k].isoformat() if doc[k] else None
        return json.dumps(doc)

    @classmethod
    def from_json(cls, raw: str) -> FlowStats:
        doc = json.loads(raw)
        known = {f.name for f in fields(cls)}
        doc = {k: v for k, v in doc.items() if k in known}
        for k in ("start_time", "last_execution_time", "last_batch_time"):
            doc[k] = _dt(doc.get(k))
        return cls(**doc)


_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS flows (
    flow_id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, definition TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS flow_progress (flow_id INTEGER PRIMARY KEY, progress TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS flow_stats (flow_id INTEGER PRIMARY KEY, stats TEXT NOT NULL);
"""

_STORES: weakref.WeakKeyDictionary[Any, FlowStore] = weakref.WeakKeyDictionary()
_STORES_LOCK = threading.Lock()


def register(catalog: Any, store: FlowStore) -> None:
    """Make ``store`` the flow store of ``catalog`` (the pg_catalog evaluator looks it up)."""
    with _STORES_LOCK:
        _STORES[catalog] = store


def store_for(catalog: Any) -> FlowStore | None:
    from catalog.store import Catalog

    while not isinstance(catalog, Catalog) and getattr(catalog, "base", None) is not None:
        catalog = catalog.base  # a block's or a session's view of the catalog: the catalog's store
    with _STORES_LOCK:
        return _STORES.get(catalog)


class FlowStore(CatalogStore):
    """Thread-safe flow metadata in the catalog's database. ``version`` moves on every change
    of a definition (not of progress or statistics)."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path, _SCHEMA_SQL)
        self.version = 0
        with self.transaction():
            self._conn.first_id("flows", "flow_id", FIRST_FLOW_ID)

    # -- definitions ----------------------------------------------------------------------------

    def list(self) -> list[FlowDef]:
        with self._lock:
            rows = self._conn.execute("SELECT flow_id, definition FROM flows ORDER BY name").fetchall()
        out = []
        for flow_id, raw in rows:
            f = FlowDef.from_json(raw)
            f.flow_id = flow_id
            out.append(f)
        return out

    def get(self, name: str) -> FlowDef | None:
        with self._lock:
            row = self._conn.execute("SELECT flow_id, definition FROM flows WHERE name=?", (name,)).fetchone()
        if row is None:
            return None
        f = FlowDef.from_json(row[1])
        f.flow_id = row[0]
        return f

    def get_by_id(self, flow_id: int) -> FlowDef | None:
        with self._lock:
            row = self._conn.execute("SELECT definition FROM flows WHERE flow_id=?", (flow_id,)).fetchone()
        if row is None:
            return None
        f = FlowDef.from_json(row[0])
        f.flow_id = flow_id
        return f

    def create(self, flow: FlowDef, *, replace_existing: bool = False) -> FlowDef:
        """Store a new flow (a new id; OR REPLACE deletes the old one in the same transaction)."""
        with self.transaction():
            old = self.get(flow.name)
            if old is not None:
                if not replace_existing:
                    raise SqlError("42710", f'flow "{flow.name}" already exists')
                self._delete(old.flow_id)
            now = _now()
            flow.created_time = flow.created_time or now
            flow.updated_time = now
            flow.flow_id = int(self._conn.execute("INSERT INTO flows(name, definition) VALUES (?, ?) RETURNING flow_id",
                                                  (flow.name, flow.to_json())).fetchone()[0])
            self._conn.execute("INSERT INTO flow_progress VALUES (?, ?)",
                               (flow.flow_id, json.dumps(asdict(FlowProgress()))))
            stats = FlowStats(status="pending" if flow.pending else "active")
            self._conn.execute("INSERT INTO flow_stats VALUES (?, ?)", (flow.flow_id, stats.to_json()))
            self.version += 1
            return flow

    def update(self, flow: FlowDef) -> FlowDef:
        """Rewrite a definition in place (COMMENT ON FLOW, activation of a pending flow)."""
        with self.transaction():
            flow.updated_time = _now()
            cur = self._conn.execute("UPDATE flows SET definition=? WHERE flow_id=?", (flow.to_json(), flow.flow_id))
            if cur.rowcount == 0:
                raise SqlError("42704", f'flow "{flow.name}" does not exist')
            self.version += 1
            return flow

    def _delete(self, flow_id: int) -> None:
        for table in ("flows", "flow_progress", "flow_stats"):
            self._conn.execute(f"DELETE FROM {table} WHERE flow_id=?", (flow_id,))

    def drop(self, name: str) -> FlowDef:
        with self.transaction():
            f = self.get(name)
            if f is None:
                raise SqlError("42704", f'flow "{name}" does not exist')
            self._delete(f.flow_id)
            self.version += 1
            return f

    # -- progress and statistics ------------------------------------------------------------------

    def progress(self, flow_id: int) -> FlowProgress:
        with self._lock:
            row = self._conn.execute("SELECT progress FROM flow_progress WHERE flow_id=?", (flow_id,)).fetchone()
        return FlowProgress(**json.loads(row[0])) if row else FlowProgress()

    def save_progress(self, flow_id: int, progress: FlowProgress) -> None:
        """Persist progress unless the flow was dropped meanwhile."""
        with self.transaction():
            if self._conn.execute("SELECT 1 FROM flows WHERE flow_id=?", (flow_id,)).fetchone() is None:
                return
            self._conn.execute("INSERT INTO flow_progress VALUES (?, ?) ON CONFLICT (flow_id) DO UPDATE SET progress = excluded.progress",
                               (flow_id, json.dumps(asdict(progress))))

    def stats(self, flow_id: int) -> FlowStats:
        with self._lock:
            row = self._conn.execute("SELECT stats FROM flow_stats WHERE flow_id=?", (flow_id,)).fetchone()
        return FlowStats.from_json(row[0]) if row else FlowStats()

    def all_stats(self) -> dict[int, FlowStats]:
        with self._lock:
            rows = self._conn.execute("SELECT flow_id, stats FROM flow_stats").fetchall()
        return {fid: FlowStats.from_json(raw) for fid, raw in rows}

    def save_stats(self, flow_id: int, stats: FlowStats) -> None:
        with self.transaction():
            if self._conn.execute("SELECT 1 FROM flows WHERE flow_id=?", (flow_id,)).fetchone() is None:
                return
            self._conn.execute("INSERT INTO flow_stats VALUES (?, ?) ON CONFLICT (flow_id) DO UPDATE SET stats = excluded.stats", (flow_id, stats.to_json()))


# -- INFORMATION_SCHEMA ------------------------------------------------------------------------------

def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def information_schema_rows(store: FlowStore | None, database: str,
                            definition_of: Any = None) -> dict[str, pa.Table]:
    """The rows of INFORMATION_SCHEMA.FLOWS and FLOW_STATISTICS, as Arrow tables.

    ``definition_of(flow) -> str`` renders flow_definition (SHOW CREATE FLOW text); the default
    renderer is :func:`render_create_flow`.
    """
    flows = store.list() if store is not None else []
    stats = store.all_stats() if store is not None else {}
    render = definition_of or render_create_flow
    now = _now()
    frows: dict[str, list[Any]] = {name: [] for name, _ in FLOWS_COLUMNS}
    srows: dict[str, list[Any]] = {name: [] for name, _ in FLOW_STATISTICS_COLUMNS}
    for f in flows:
        st = stats.get(f.flow_id, FlowStats())
        opts = dict(f.options)
        opts["flow_type"] = f.flow_type
        node = st.node if not f.pending else None
        values = {
            # GreptimeDB's forms: batching flows keep no state (state_size NULL), a flow without
            # comment shows '', JSON-in-text columns are compact ({"flow_type":"batching"}).
            "flow_name": f.name, "flow_id": f.flow_id,
            "state_size": st.state_size if f.flow_type == "streaming" else None, "table_catalog": database,
            "flow_definition": render(f), "comment": f.comment if f.comment is not None else "",
            "expire_after": f.expire_after,
            "source_table_ids": _compact_json(list(f.source_ids)),
            "sink_table_name": f"{database}.{f.sink_schema}.{f.sink_table}",
            "flownode_ids": _compact_json({"0": 0} if node else {}),
            "options": _compact_json(dict(sorted(opts.items()))),
            "created_time": f.created_time, "updated_time": f.updated_time,
            "last_execution_time": st.last_execution_time,
            "source_table_names": ",".join(f"{database}.{s}" for s in f.sources) if not f.pending else "",
            "flownode_addrs": _compact_json({"0": node}) if node else None,
        }
        for k, v in values.items():
            frows[k].append(v)
        uptime = (now - st.start_time).total_seconds() if st.start_time and not f.pending else None
        svalues = {
            "flow_id": f.flow_id, "flow_name": f.name, "start_time": st.start_time,
            "last_execution_time": st.last_execution_time, "uptime_seconds": uptime,
            "state_size": st.state_size, "status": "pending" if f.pending else st.status,
            "last_error": st.last_error,
            "input_rows": st.input_rows, "batches": st.batches if f.flow_type == "streaming" else st.runs,
            "last_batch_time": st.last_batch_time if f.flow_type == "streaming" else st.last_execution_time,
            "lag_seconds": st.lag_seconds, "late_rows": st.late_rows,
        }
        for k, v in svalues.items():
            srows[k].append(v)
    return {
        "flows": pa.table({n: pa.array(frows[n], t) for n, t in FLOWS_COLUMNS}),
        "flow_statistics": pa.table({n: pa.array(srows[n], t) for n, t in FLOW_STATISTICS_COLUMNS}),
    }


def _quote_ident(name: str) -> str:
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) and name.upper() not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


_RESERVED = {"ALL", "AND", "ANY", "AS", "ASC", "CASE", "CAST", "CREATE", "DEFAULT", "DESC", "DISTINCT",
             "ELSE", "END", "FALSE", "FLOW", "FOR", "FROM", "GROUP", "HAVING", "IN", "INTO", "IS", "JOIN", "LIMIT",
             "NOT", "NULL", "ON", "OR", "ORDER", "SELECT", "SINK", "TABLE", "THEN", "TO", "TRUE", "UNION",
             "USING", "WHEN", "WHERE", "WITH", "OFFSET", "WINDOW", "USER", "TIME", "TIMESTAMP"}


def render_create_flow(f: FlowDef) -> str:
    """SHOW CREATE FLOW: one clause a line; running it again recreates the flow."""
    lines = [f"CREATE FLOW IF NOT EXISTS {_quote_ident(f.name)}",
             f"SINK TO {_quote_ident(f.sink_schema)}.{_quote_ident(f.sink_table)}"]
    if f.expire_after is not None:
        lines.append(f"EXPIRE AFTER '{f.expire_after} s'")
    if f.eval_interval is not None:
        lines.append(f"EVAL INTERVAL '{f.eval_interval} s'")
    if f.comment is not None:
        lines.append(f"COMMENT {_quote_literal(f.comment)}")
    if f.options:
        body = ", ".join(f"{k} = {_quote_literal(v)}" for k, v in sorted(f.options.items()))
        lines.append(f"WITH ({body})")
    lines.append(f"AS {f.query}")
    return "\n".join(lines)


# -- the pg_catalog evaluator's view of flows ------------------------------------------------------

def mentions_flow_relations(sql: str) -> bool:
    """Whether a catalog query reads INFORMATION_SCHEMA.FLOWS / FLOW_STATISTICS (whose rows change
    without a catalog version bump: they are reloaded per query and never cached)."""
    return not sqllex.identifiers(sql).isdisjoint(("flows", "flow_statistics"))


def duckdb_relations(catalog: Any) -> dict[str, pa.Table]:
    """``{"flows": ..., "flow_statistics": ...}`` rows for the evaluator of ``catalog``."""
    return information_schema_rows(store_for(catalog), getattr(catalog, "database", "tidegate"))


def load_into_duckdb(con: Any, catalog: Any, *, create: bool = False) -> None:
    """Create (``create=True``) or refresh the ``isx.flows`` / ``isx.flow_statistics`` tables of the
    evaluator's DuckDB database ``con`` in one transaction."""
    tables = duckdb_relations(catalog)
    if create:
        live.create_tables(con, tables)
    else:
        live.replace_rows(con, tables)
