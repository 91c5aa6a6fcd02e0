"""The commit journal: a transaction that writes several Delta commits is all there or not at all.

Delta commits one table version at a time, so a transaction touching two tables (or writing a
table twice in ways that cannot be one commit) is several commits. Its COMMIT therefore runs in
three steps, under the locks of every table it writes (``TableStore.commit_all``):

1. every write is checked against what others committed since it was computed (23505, 40001):
   a failure here writes nothing;
2. the journal record is made durable: one Parquet file per write and then ``<id>.json`` listing
   them (written to a temporary name, fsync'd, renamed, directory fsync'd). This is the commit
   point;
3. the writes are applied in order, each as a Delta commit carrying the application transaction
   ``tidegate-txn`` (the journal's :attr:`Journal.app_id`) = ``id * 10000 + position``; then the
   record is removed.

A transaction that ran DDL also records its catalog changes (final states by oid and schema
name), applied after its writes, then the storage of the tables it dropped is removed; the catalog
is held from the check of those changes to the end, so recovery never replays over a newer change.
Storage a block creates before COMMIT is noted in ``created/`` (:meth:`Journal.note_created`);
recovery removes what such notes name unless the catalog has the table.

After a crash, :func:`recover` (run when the engine starts, before any statement) finds the
records left behind and applies each write whose application transaction the table does not show
yet, so a transaction whose record was made durable ends complete, and one whose record was not
has written nothing. Ids only grow: ``sequence`` keeps the end of the block of ids being handed
out (reserved a thousand at a time), so a restart never reuses one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from catalog.store import CatalogChanges, _table_from_json, _table_to_json
from engine import durability

if TYPE_CHECKING:
    from catalog.store import Catalog, TableDef
    from engine.storage import TableStore

log = logging.getLogger("tidegate.txnlog")

APP_ID = "tidegate-txn"
_PER_TXN = 10_000  # app versions per transaction: id * _PER_TXN + position
_ID_BLOCK = 1000  # transaction ids reserved per write of ``sequence``


@dataclass
class WriteOp:
    """A validated write, applied as one Delta commit.

    ``kind``: "append" (rows), "upsert" (rows replace rows with equal ``keys``), "merge" (ON
    CONFLICT DO UPDATE: ``updates`` are DataFusion SQL expressions over t./s.), "update" (``data``
    holds every column's new value plus ``__tg_old_<k>`` for each match column ``keys``),
    "delete" (``data`` holds the ``keys`` of the rows to remove), "overwrite" (the whole new
    content, computed from ``base_version``), "add_columns" (the columns of ``table`` the stored
    table lacks, added as nullable), "none".
    """

    table: TableDef
    kind: str
    data: pa.Table | pa.RecordBatchReader | None = None
    keys: list[str] = field(default_factory=list)
    updates: dict[str, str] = field(default_factory=dict)
    base_version: int | None = None
    app_id: str | None = None
    app_version: int | None = None
    schema_change: bool = False
    null_safe: bool = False  # "update"/"delete" matched on nullable columns
    # "append" into a PRIMARY KEY table: ``keys`` are re-checked against the table at commit, under
    # its lock (23505), so concurrent statements and transactions cannot both store one key.
    unique: bool = False
    # "append" of INSERT ... ON CONFLICT DO NOTHING: rows whose ``keys`` exist at commit are dropped.
    skip_existing: bool = False
    # "append"/"update" of a table with UNIQUE constraints or unique indexes: (name, columns) each
    # re-checked at commit under the table's lock (23505), NULLs distinct as in PostgreSQL.
    unique_sets: list[tuple[str, list[str]]] = field(default_factory=list)


def app_version(txid: int, position: int) -> int:
    return txid * _PER_TXN + position


class Journal:
    """The records of transactions being committed, under ``<data dir>/txn`` (``txn-<slot>`` for the
    gateways of a shared catalog other than slot 0's, catalog/slots.py)."""

    def __init__(self, root: Path | str, app_id: str = APP_ID) -> None:
        """``app_id``: the Delta application id of this journal's commits (one per gateway slot,
        catalog/slots.py: a table keeps one version per application id)."""
        self.root = Path(root)
        self.app_id = app_id
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        seq = self.root / "sequence"
        # ids are handed out from blocks reserved on disk, so a restart never reuses one
        self._last = self._reserved = int(seq.read_text()) if seq.exists() else 0
        self._notes = 0

    def _next_id(self) -> int:
        with self._lock:
            self._last += 1
            if self._last > self._reserved:
                self._reserved = self._last + _ID_BLOCK - 1
                tmp = self.root / "sequence.tmp"
                with open(tmp, "w") as fh:
                    fh.write(str(self._reserved))
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, self.root / "sequence")
            return self._last

    def begin(self, ops: list[WriteOp], ddl: DdlRecord | None = None, note: dict | None = None) -> int:
        """Make the transaction's writes (and catalog changes) durable; returns its id (the
        commit point). ``note`` (a caller's JSON, :class:`CommitHooks`) is kept with the record."""
        txid = self._next_id()
        entries = []
        for i, op in enumerate(ops):
            data_file = None
            if isinstance(op.data, pa.Table):
                data_file = f"{txid}-{i}.parquet"
                pq.write_table(op.data, self.root / data_file)
                with open(self.root / data_file, "rb+") as fh:
                    os.fsync(fh.fileno())
            entries.append({"table": json.loads(_table_to_json(op.table)), "kind": op.kind, "keys": op.keys,
                            "updates": op.updates, "null_safe": op.null_safe, "schema_change": op.schema_change,
                            "data": data_file})
        tmp = self.root / f"{txid}.json.tmp"
        with open(tmp, "w") as fh:
            json.dump({"id": txid, "writes": entries, "ddl": ddl.to_json() if ddl else None, "note": note}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.root / f"{txid}.json")
        durability.fsync_file(self.root)
        if ddl is not None:
            ddl.durable = True
        return txid

    def finish(self, txid: int) -> None:
        """The transaction's writes all landed: forget its record."""
        record = self.root / f"{txid}.json"
        doc = json.loads(record.read_text())
        record.unlink()
        for entry in doc["writes"]:
            if entry["data"]:
                (self.root / entry["data"]).unlink(missing_ok=True)

    def pending(self) -> list[tuple[int, list[WriteOp], DdlRecord | None, dict | None]]:
        """Records of transactions whose writes may not all have landed, oldest first (with their notes)."""
        out = []
        for record in sorted(self.root.glob("*.json"), key=lambda p: int(p.stem)):
            doc = json.loads(record.read_text())
            ops = []
            for entry in doc["writes"]:
                table = _table_from_json(json.dumps(entry["table"]))
                data = pq.read_table(self.root / entry["data"]) if entry["data"] else None
                ops.append(WriteOp(table, entry["kind"], data, keys=entry["keys"], updates=entry["updates"],
                                   null_safe=entry["null_safe"], schema_change=entry["schema_change"]))
            out.append((doc["id"], ops, DdlRecord.from_json(doc["ddl"]) if doc.get("ddl") else None, doc.get("note")))
        for tmp in self.root.glob("*.tmp"):  # a record never made durable: its transaction wrote nothing
            tmp.unlink()
        return out


    # -- storage a transaction created before its COMMIT -------------------------------------

    def note_created(self, location: str) -> str:
        """Record (durably) that an open transaction created table storage at ``location``, so
        that a crash before its COMMIT does not leave the directory behind; returns the note."""
        notes = self.root / "created"
        notes.mkdir(exist_ok=True)
        with self._lock:
            self._notes += 1
            name = f"{os.getpid()}-{self._notes}-{threading.get_ident()}"
        tmp = notes / f"{name}.tmp"
        with open(tmp, "w") as fh:
            fh.write(location)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, notes / name)
        durability.fsync_file(notes)
        return name

    def forget_created(self, notes: list[str]) -> None:
        for name in notes:
            (self.root / "created" / name).unlink(missing_ok=True)

    def created(self) -> list[tuple[str, str]]:
        """Notes left by transactions that never committed nor rolled back: (note, location)."""
        notes = self.root / "created"
        if not notes.is_dir():
            return []
        for tmp in notes.glob("*.tmp"):
            tmp.unlink()
        return [(p.name, p.read_text()) for p in sorted(notes.iterdir())]


@dataclass
class DdlRecord:
    """A transaction's DDL in its journal record: the catalog changes, applied after its data
    writes, then the storage of the tables it dropped removed, then its notes of created
    storage forgotten (the tables are in the catalog now)."""

    changes: CatalogChanges
    drop_locations: list[str] = field(default_factory=list)
    drop_schema_dirs: list[int] = field(default_factory=list)
    created_notes: list[str] = field(default_factory=list)
    durable: bool = field(default=False, compare=False)  # set once the record is the commit point

    def to_json(self) -> dict:
        return {"catalog": self.changes.to_json(), "drop_locations": self.drop_locations,
                "drop_schema_dirs": self.drop_schema_dirs, "created_notes": self.created_notes}

    @classmethod
    def from_json(cls, doc: dict) -> DdlRecord:
        return cls(CatalogChanges.from_json(doc["catalog"]), list(doc.get("drop_locations") or []),
                   list(doc.get("drop_schema_dirs") or []), list(doc.get("created_notes") or []))


@dataclass
class CommitHooks:
    """What a caller adds to one transaction's commit (a job's, :mod:`engine.jobs`): such a
    commit always goes through the journal, so that whether it landed is known after a crash.

    ``check`` runs under the written tables' locks just before the commit point (raise: nothing
    is written); ``note`` is kept in the journal record; ``landed`` runs once the writes and DDL
    are applied, before the record is removed. After a crash, :func:`recover` completes the record
    and hands its note to the caller instead (``Engine.recovered_notes``)."""

    note: dict
    check: Callable[[], None]
    landed: Callable[[], None]


def apply_all(store: TableStore, journal: Journal, txid: int, ops: list[WriteOp],
              ddl: DdlRecord | None = None, catalog: Catalog | None = None,
              landed: Callable[[], None] | None = None) -> None:
    """Step 3: apply the journaled writes in order, skipping those already in their tables; then
    the catalog changes (already verified, or being recovered) and the storage they free."""
    pause = float(os.environ.get("TIDEGATE_TXN_TEST_PAUSE", "0") or 0)  # lets crash tests kill -9 mid-commit
    for i, op in enumerate(ops):
        if pause and i:
            import time

            time.sleep(pause)
        version = app_version(txid, i)
        location = op.table.location or ""
        if not os.path.exists(location):
            log.warning("transaction %s: table %s is gone; its write is dropped", txid, op.table.qualified_name)
            continue
        if (store.app_version(location, journal.app_id) or 0) >= version:
            continue
        store.apply(replace(op, app_id=journal.app_id, app_version=version, base_version=None, unique=False,
                            skip_existing=False))
    if ddl is not None:
        assert catalog is not None, "a transaction with DDL needs the catalog to commit"
        if pause:
            import time

            time.sleep(pause)
        catalog.apply_changes(ddl.changes, verify=False)
        for location in ddl.drop_locations:
            store.drop(location)
        for schema_oid in ddl.drop_schema_dirs:
            store.drop_schema_dir(schema_oid)
        journal.forget_created(ddl.created_notes)
    if landed is not None:
        landed()
    journal.finish(txid)


def recover(store: TableStore, journal: Journal, catalog: Catalog, notes: list[dict] | None = None) -> int:
    """Complete the transactions a crash interrupted after their commit point; then remove the
    storage that transactions which never committed had created. Returns how many were completed;
    the notes of their records (:class:`CommitHooks`) are appended to ``notes``."""
    done = 0
    for txid, ops, ddl, note in journal.pending():
        log.info("completing transaction %s interrupted during COMMIT (%d writes%s)", txid, len(ops),
                 ", with DDL" if ddl else "")
        try:
            apply_all(store, journal, txid, ops, ddl, catalog)
        except Exception:
            # never expected; a record that cannot be completed must not keep the gateway down
            log.exception("transaction %s could not be completed; its record is kept as %s.json.failed",
                          txid, txid)
            record = journal.root / f"{txid}.json"
            record.rename(record.with_name(f"{txid}.json.failed"))
            continue
        done += 1
        if note is not None and notes is not None:
            notes.append(note)
    live = {t.location for t in catalog.list_tables(kind="table")}
    for note, location in journal.created():
        if location not in live:
            log.info("removing table storage %s of a transaction that never committed", location)
            store.drop(location)
        journal.forget_created([note])
    return done


__all__ = ["APP_ID", "CommitHooks", "DdlRecord", "Journal", "app_version", "apply_all", "recover"]
