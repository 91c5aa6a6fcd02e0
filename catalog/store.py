"""Persistent metadata: schemas, tables and views, in the catalog's database (:mod:`catalog.db`:
SQLite under the data directory, or PostgreSQL).

The store speaks in dataclasses (:class:`SchemaDef`, :class:`TableDef`, :class:`ColumnDef`) so
that the database behind them is the backend's concern, not the callers'. Each table's
definition is kept as one JSON document: definitions are read whole and written whole, and the
relational part of the database (unique (schema, name), foreign key to its schema) keeps it consistent
under concurrent sessions.
"""

from __future__ import annotations

import json
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from catalog.roles import Roles
from catalog.db import CatalogStore
from catalog.lock import DataDirLockError
from tidegate.errors import SqlError
from tidegate.pgtypes import TYPES_BY_OID, ColumnType

log = logging.getLogger(__name__)

DATABASE_NAME = "tidegate"
# OIDs below this are PostgreSQL's own (pg_catalog objects, types); user objects start here.
FIRST_USER_OID = 16384
SYSTEM_SCHEMAS = ("pg_catalog", "information_schema")
# A session's temporary schema is ``pg_temp_<backend pid>`` (tidegate.session.SessionInfo.temp_schema).
TEMP_SCHEMA_PREFIX = "pg_temp_"


def is_temp_schema(name: str | None) -> bool:
    """Whether ``name`` is some session's temporary schema (users cannot create ``pg_`` schemas)."""
    return bool(name) and name.startswith(TEMP_SCHEMA_PREFIX) and name[len(TEMP_SCHEMA_PREFIX):].isdigit()


def own_temp_schema(search_path: list[str]) -> str | None:
    """The session's temporary schema: the one ``pg_temp_N`` its effective search path holds."""
    return next((s for s in search_path if is_temp_schema(s)), None)


@dataclass
class ColumnDef:
    name: str
    type: ColumnType
    not_null: bool = False
    default: str | None = None  # SQL expression text in PostgreSQL dialect, e.g. "now()"
    comment: str | None = None
    # GENERATED ALWAYS ("a") / BY DEFAULT ("d") AS IDENTITY; ``default`` then holds the nextval()
    # of its sequence (used for inserts; catalogs show no default for identity columns, as PostgreSQL)
    identity: str | None = None


@dataclass
class TableDef:
    schema: str
    name: str
    columns: list[ColumnDef]
    primary_key: list[str] = field(default_factory=list)
    time_index: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    kind: str = "table"  # "table" | "view" | "sequence" (options: see :class:`SequenceParams`)
    view_sql: str | None = None  # a view's defining query (PostgreSQL dialect)
    location: str | None = None  # absolute path of the Delta table (<warehouse>/<schema oid>/<oid>)
    oid: int = 0
    owner: str | None = None  # owning role; None: the bootstrap superuser (catalogs before roles)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # UNIQUE ("u") and FOREIGN KEY ("f") constraints, JSON-ready dicts: {"type", "name", "columns",
    # "n" (a per-table serial, for stable catalog oids)} and for "f" also "ref" ([schema, table]),
    # "ref_columns", "on_delete", "on_update" (PostgreSQL's confdeltype letters: "a" / "r").
    constraints: list[dict] = field(default_factory=list)
    # CREATE [UNIQUE] INDEX: {"name", "columns", "unique", "n"}
    indexes: list[dict] = field(default_factory=list)

    def column(self, name: str) -> ColumnDef | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"

    def unique_sets(self) -> list[tuple[str, list[str]]]:
        """(name, columns) of the UNIQUE constraints and unique indexes (not the PRIMARY KEY)."""
        return ([(c["name"], list(c["columns"])) for c in self.constraints if c["type"] == "u"]
                + [(i["name"], list(i["columns"])) for i in self.indexes if i["unique"]])

    def index_names(self) -> list[str]:
        """Names this table's indexes take in its schema's relation namespace (PK, UNIQUE, CREATE INDEX)."""
        names = [f"{self.name}_pkey"] if self.primary_key and self.kind == "table" else []
        return names + [c["name"] for c in self.constraints if c["type"] == "u"] + [i["name"] for i in self.indexes]

    def next_serial(self) -> int:
        return 1 + max([c.get("n", 0) for c in self.constraints] + [i.get("n", 0) for i in self.indexes] + [0])


@dataclass
class SchemaDef:
    name: str
    oid: int
    owner: str = "tidegate"
    comment: str | None = None


def _type_to_json(t: ColumnType) -> dict:
    doc = {"oid": t.pg.oid, "length": t.length, "precision": t.precision, "scale": t.scale}
    if t.div_min_scale is not None:  # a result column's display rules (a job's stored result)
        doc["div_min_scale"] = t.div_min_scale
    if t.exact_op is not None:
        doc["exact_op"], doc["op_scales"] = t.exact_op, list(t.op_scales)
    return doc


def _type_from_json(d: dict) -> ColumnType:
    return ColumnType(TYPES_BY_OID[d["oid"]], d.get("length"), d.get("precision"), d.get("scale"),
                      d.get("div_min_scale"), d.get("exact_op"), tuple(d.get("op_scales", (0, 0))))


def _table_to_json(t: TableDef) -> str:
    doc = asdict(t)
    doc["columns"] = [{**asdict(c), "type": _type_to_json(c.type)} for c in t.columns]
    for key in ("created_at", "updated_at"):
        doc[key] = doc[key].isoformat() if doc[key] else None
    return json.dumps(doc)


def _table_from_json(raw: str) -> TableDef:
    doc = json.loads(raw)
    doc["columns"] = [ColumnDef(**{**c, "type": _type_from_json(c["type"])}) for c in doc["columns"]]
    for key in ("created_at", "updated_at"):
        doc[key] = datetime.fromisoformat(doc[key]) if doc[key] else None
    return TableDef(**doc)


def _now() -> datetime:
    return datetime.now(timezone.utc)


_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS schemas (
    name TEXT PRIMARY KEY, oid INTEGER NOT NULL UNIQUE, owner TEXT NOT NULL, comment TEXT);
CREATE TABLE IF NOT EXISTS relations (
    schema TEXT NOT NULL REFERENCES schemas(name), name TEXT NOT NULL,
    oid INTEGER NOT NULL UNIQUE, kind TEXT NOT NULL, definition TEXT NOT NULL,
    PRIMARY KEY (schema, name));
CREATE TABLE IF NOT EXISTS sequence_values (
    oid INTEGER PRIMARY KEY, last_value INTEGER NOT NULL, is_called INTEGER NOT NULL);
"""


class RelationReads(ABC):
    """Lookups over a name -> definition map (``_all``) and ``get_schema``: shared by the catalog
    and by a transaction's view of it (:class:`catalog.txn.CatalogTxn`)."""

    @abstractmethod
    def _all(self) -> dict[tuple[str, str], TableDef]: ...

    @abstractmethod
    def get_schema(self, name: str) -> SchemaDef | None: ...

    def schema_drop_members(self, name: str, if_exists: bool, cascade: bool) -> list[TableDef] | None:
        """The relations DROP SCHEMA takes with it (2BP01 without CASCADE); None when the schema
        does not exist and IF EXISTS was given (3F000 without)."""
        if self.get_schema(name) is None:
            if if_exists:
                return None
            raise SqlError("3F000", f'schema "{name}" does not exist')
        members = self.list_tables(name)
        if members and not cascade:
            raise SqlError("2BP01", f"cannot drop schema {name} because other objects depend on it",
                           detail="\n".join(f"{'view' if t.kind == 'view' else 'table'} {t.qualified_name} depends on schema {name}"
                                            for t in members),
                           hint="Use DROP ... CASCADE to drop the dependent objects too.")
        return members

    def get_table(self, schema: str, name: str) -> TableDef | None:
        t = self._all().get((schema, name))
        return replace(t, columns=list(t.columns)) if t else None

    def list_tables(self, schema: str | None = None, kind: str | None = None) -> list[TableDef]:
        return [replace(t, columns=list(t.columns)) for (s, _), t in self._all().items()
                if (schema is None or s == schema) and (kind is None or t.kind == kind)]

    def resolve_table(self, name: str, schema: str | None, search_path: list[str]) -> TableDef:
        """Find a relation as PostgreSQL does: qualified, or the first search_path schema holding it.

        ``pg_temp`` names the session's temporary schema (the one in its effective search path);
        another session's temporary schema cannot be named (42P01, as if it did not exist)."""
        if schema == "pg_temp":
            schema = own_temp_schema(search_path) or schema
        elif is_temp_schema(schema) and schema not in search_path:
            raise SqlError("42P01", f'relation "{schema}.{name}" does not exist')
        if schema is not None:
            t = self.get_table(schema, name)
            if t is None:
                raise SqlError("42P01", f'relation "{schema}.{name}" does not exist')
            return t
        for s in search_path:
            t = self.get_table(s, name)
            if t is not None:
                return t
        raise SqlError("42P01", f'relation "{name}" does not exist')

    def index_owner(self, schema: str, name: str) -> TableDef | None:
        """The table of ``schema`` one of whose indexes (PK, UNIQUE constraint, CREATE INDEX) is ``name``."""
        for (s, _), t in self._all().items():
            if s == schema and t.kind == "table" and name in t.index_names():
                return replace(t, columns=list(t.columns))
        return None

    def relation_name_taken(self, schema: str, name: str) -> bool:
        """Whether ``name`` is a relation or an index of ``schema`` (one namespace, as in PostgreSQL)."""
        return self.get_table(schema, name) is not None or self.index_owner(schema, name) is not None

    def check_new_relation(self, table: TableDef) -> None:
        """42P07/3F000/42701 for a definition that cannot be created under this view."""
        if self.get_schema(table.schema) is None:
            raise SqlError("3F000", f'schema "{table.schema}" does not exist')
        if self.relation_name_taken(table.schema, table.name):
            raise SqlError("42P07", f'relation "{table.name}" already exists')
        names = [c.name for c in table.columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SqlError("42701", f'column "{dupes[0]}" specified more than once')


CHANGES_CHANNEL = "tidegate_catalog"  # NOTIFY'd by every change of a shared catalog


class _ChangeListener:
    """LISTENs for the changes other gateways commit to a shared catalog and calls ``changed``
    for each (and after every reconnection, when some may have been missed)."""

    RETRY_S = 1.0

    def __init__(self, url: str, changed: Callable[[], None]) -> None:
        self._url = url
        self._changed = changed
        self._stop = threading.Event()
        self._conn: Any = None
        self._thread = threading.Thread(target=self._run, name="tidegate-catalog-changes", daemon=True)
        self._ready = threading.Event()
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        import psycopg

        while not self._stop.is_set():
            try:
                self._conn = psycopg.connect(self._url, autocommit=True, connect_timeout=10,
                                             application_name="tidegate catalog changes")
                self._conn.execute(f"LISTEN {CHANGES_CHANNEL}")
                self._changed()  # whatever changed while not listening
                self._ready.set()
                while not self._stop.is_set():
                    for _ in self._conn.notifies(timeout=0.5):
                        self._changed()
            except psycopg.Error as exc:
                if self._stop.is_set():
                    return
                log.warning("listening for catalog changes failed (retrying): %s", exc)
                self._changed()
                self._stop.wait(self.RETRY_S)
            finally:
                if self._conn is not None:
                    self._conn.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


class Catalog(CatalogStore, RelationReads):
    """Thread-safe metadata store. Every mutation bumps :attr:`version`.

    One connection guarded by a lock: metadata operations are tiny, and a single writer
    keeps the version counter and the in-memory cache exact.
    """

    database = DATABASE_NAME

    def __init__(self, path: Path | str, *, shared: bool = False) -> None:
        """``shared``: other gateways change this (PostgreSQL) catalog too; the version is then
        forgotten when one of them commits a change (:class:`_ChangeListener`) and at each
        statement's start (:meth:`fresh`)."""
        super().__init__(path, _SCHEMA_SQL)
        with self._lock:
            self._conn.execute("INSERT INTO meta VALUES ('next_oid', ?) ON CONFLICT DO NOTHING", (str(FIRST_USER_OID),))
            self._conn.execute("INSERT INTO meta VALUES ('version', '1') ON CONFLICT DO NOTHING")
            if self._conn.execute("SELECT 1 FROM schemas WHERE name='public'").fetchone() is None:
                self._conn.execute("INSERT INTO schemas VALUES ('public', 2200, 'tidegate', 'standard public schema')")
        self._cache: dict[tuple[str, str], TableDef] | None = None
        self._cache_version = -1
        self._version: int | None = None  # see version
        self.shared = shared and self.backend == "postgresql"
        self._listener = _ChangeListener(str(path), self._forget_version) if self.shared else None
        self.roles = Roles(self)
        self.sequences = Sequences(self)

    # -- infrastructure -------------------------------------------------------------------------

    def _rolled_back(self) -> None:
        self._cache = None
        self._version = None

    def _bump(self) -> None:
        self._conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'version'")
        if self.shared:  # sent when the transaction commits, to every listening gateway
            self._conn.execute(f"NOTIFY {CHANGES_CHANNEL}")
        self._cache = None
        self._version = None

    def _forget_version(self) -> None:
        self._version = None

    def fresh(self) -> None:
        """A statement starts: on a shared catalog, forget the kept version, so the statement
        sees every change another gateway committed before it (one read of the version). A
        change notice may still be on its way; this read is what makes DDL through one gateway
        visible through every other at once."""
        if self.shared and self._depth == 0:
            self._version = None

    def close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
        super().close()

    @property
    def version(self) -> int:
        """The catalog's version, bumped by every change. Kept in memory once read outside a
        transaction: every statement asks, and the query under the catalog's lock was a third of
        a cached lookup's time with 50 clients. Only this process writes an unshared catalog (the
        data dir lock); a shared one forgets it on other gateways' changes and at :meth:`fresh`."""
        kept = self._version
        if kept is not None:
            return kept
        with self._lock:
            value = int(self._conn.execute("SELECT value FROM meta WHERE key='version'").fetchone()[0])
            if self._depth == 0:  # committed: a transaction's own bump is not kept
                self._version = value
            return value

    def bind_data_dir(self, data_dir: Path | str) -> None:
        """A PostgreSQL catalog belongs to one data directory: it names its tables' files by
        absolute path there, and a gateway taking over recovers the commits its predecessor left
        in that directory. The first gateway records it; a gateway on another directory is refused
        (catalog.lock.DataDirLockError) before it touches anything."""
        if self.backend != "postgresql":
            return  # the embedded catalog is a file inside its data directory
        path = str(Path(data_dir).resolve())
        with self.transaction():
            row = self._conn.execute("SELECT value FROM meta WHERE key='data_dir'").fetchone()
            if row is None:
                self._conn.execute("INSERT INTO meta VALUES ('data_dir', ?)", (path,))
            elif row[0] != path:
                raise DataDirLockError(
                    f"this catalog belongs to the data directory {row[0]}, not {path}: every gateway of a catalog "
                    "uses the same data directory (shared storage when they run on several hosts)")

    def next_oid(self) -> int:
        with self.transaction():
            oid = int(self._conn.execute("SELECT value FROM meta WHERE key='next_oid'").fetchone()[0])
            self._conn.execute("UPDATE meta SET value=? WHERE key='next_oid'", (str(oid + 1),))
            return oid

    # -- schemas ------------------------------------------------------------------------------

    def list_schemas(self) -> list[SchemaDef]:
        with self._lock:
            rows = self._conn.execute("SELECT name, oid, owner, comment FROM schemas ORDER BY name").fetchall()
        return [SchemaDef(*r) for r in rows]

    def get_schema(self, name: str) -> SchemaDef | None:
        with self._lock:
            row = self._conn.execute("SELECT name, oid, owner, comment FROM schemas WHERE name=?", (name,)).fetchone()
        return SchemaDef(*row) if row else None

    @staticmethod
    def check_schema_name(name: str) -> None:
        if name in SYSTEM_SCHEMAS or name.startswith("pg_"):
            raise SqlError("42939", f'unacceptable schema name "{name}"',
                           detail='The prefix "pg_" is reserved for system schemas.')

    def create_schema(self, name: str, if_not_exists: bool = False, owner: str = "tidegate") -> bool:
        """Create a schema; returns False when it existed and ``if_not_exists`` was given."""
        self.check_schema_name(name)
        with self.transaction():
            if self.get_schema(name) is not None:
                if if_not_exists:
                    return False
                raise SqlError("42P06", f'schema "{name}" already exists')
            self._conn.execute("INSERT INTO schemas VALUES (?, ?, ?, NULL)", (name, self.next_oid(), owner))
            self._bump()
            return True

    def create_temp_schema(self, name: str, owner: str = "tidegate") -> SchemaDef:
        """A session's temporary schema, created at once (not with the caller's transaction: as in
        PostgreSQL it stays until the session ends). Idempotent. Owned by the session's user, who
        thereby may use it (PostgreSQL lets a session use its own temporary schema implicitly)."""
        if not is_temp_schema(name):
            raise SqlError("42939", f'unacceptable temporary schema name "{name}"')
        with self.transaction():
            s = self.get_schema(name)
            if s is None:
                s = SchemaDef(name, self.next_oid(), owner)
                self._conn.execute("INSERT INTO schemas VALUES (?, ?, ?, NULL)", (s.name, s.oid, s.owner))
                self._bump()
            return s

    def temp_schemas(self) -> list[SchemaDef]:
        return [s for s in self.list_schemas() if is_temp_schema(s.name)]

    def drop_schema(self, name: str, if_exists: bool = False, cascade: bool = False) -> list[TableDef]:
        """Drop a schema; returns the relations dropped with it (CASCADE) so storage can remove them."""
        with self.transaction():
            members = self.schema_drop_members(name, if_exists, cascade)
            if members is None:
                return []
            self._conn.execute("DELETE FROM relations WHERE schema=?", (name,))
            self._conn.execute("DELETE FROM schemas WHERE name=?", (name,))
            self._bump()
            return members

    def set_schema_owner(self, name: str, owner: str) -> None:
        with self.transaction():
            self._conn.execute("UPDATE schemas SET owner=? WHERE name=?", (owner, name))
            self._bump()

    def set_schema_comment(self, name: str, comment: str | None) -> None:
        with self.transaction():
            if self.get_schema(name) is None:
                raise SqlError("3F000", f'schema "{name}" does not exist')
            self._conn.execute("UPDATE schemas SET comment=? WHERE name=?", (comment, name))
            self._bump()

    # -- relations ----------------------------------------------------------------------------

    def _all(self) -> dict[tuple[str, str], TableDef]:
        with self._lock:
            version = self.version
            if self._cache is None or self._cache_version != version:
                rows = self._conn.execute("SELECT definition FROM relations ORDER BY schema, name").fetchall()
                cache = {}
                for (raw,) in rows:
                    t = _table_from_json(raw)
                    cache[(t.schema, t.name)] = t
                self._cache, self._cache_version = cache, version
            return self._cache

    def create_table(self, table: TableDef, if_not_exists: bool = False) -> TableDef | None:
        """Store a new table or view; returns it with oid and times set, or None if it existed
        and ``if_not_exists`` was given."""
        with self.transaction():
            if if_not_exists and self.get_schema(table.schema) is not None \
                    and self.get_table(table.schema, table.name) is not None:
                return None
            self.check_new_relation(table)
            now = _now()
            stored = replace(table, oid=table.oid or self.next_oid(), created_at=now, updated_at=now)
            self._conn.execute("INSERT INTO relations VALUES (?, ?, ?, ?, ?)",
                               (stored.schema, stored.name, stored.oid, stored.kind, _table_to_json(stored)))
            self._bump()
            return stored

    def replace_table(self, table: TableDef) -> TableDef:
        """Write a changed definition (ALTER, COMMENT ON); keeps oid and created_at."""
        with self.transaction():
            old = self.get_table(table.schema, table.name)
            if old is None:
                raise SqlError("42P01", f'relation "{table.qualified_name}" does not exist')
            stored = replace(table, oid=old.oid, created_at=old.created_at, updated_at=_now())
            self._conn.execute("UPDATE relations SET definition=?, kind=? WHERE schema=? AND name=?",
                               (_table_to_json(stored), stored.kind, stored.schema, stored.name))
            self._bump()
            return stored

    def rename_table(self, schema: str, old_name: str, new_name: str) -> TableDef:
        with self.transaction():
            t = self.get_table(schema, old_name)
            if t is None:
                raise SqlError("42P01", f'relation "{old_name}" does not exist')
            if self.get_table(schema, new_name) is not None:
                raise SqlError("42P07", f'relation "{new_name}" already exists')
            renamed = replace(t, name=new_name, updated_at=_now())
            self._conn.execute("UPDATE relations SET name=?, definition=? WHERE schema=? AND name=?",
                               (new_name, _table_to_json(renamed), schema, old_name))
            self._bump()
            return renamed

    def drop_table(self, schema: str, name: str) -> None:
        with self.transaction():
            cur = self._conn.execute("DELETE FROM relations WHERE schema=? AND name=?", (schema, name))
            if cur.rowcount == 0:
                raise SqlError("42P01", f'relation "{name}" does not exist')
            self._bump()

    # -- a transaction's changes ---------------------------------------------------------------

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the catalog: no other thread reads or changes it until the block ends."""
        with self._lock:
            yield

    def verify_changes(self, changes: CatalogChanges) -> None:
        with self._lock:
            self._verify(changes)

    def relation_by_oid(self, oid: int) -> TableDef | None:
        with self._lock:
            row = self._conn.execute("SELECT definition FROM relations WHERE oid=?", (oid,)).fetchone()
        return _table_from_json(row[0]) if row else None

    def apply_changes(self, changes: CatalogChanges, *, verify: bool = True) -> None:
        """Apply a transaction's catalog changes in one catalog transaction (one version bump).

        ``verify``: first check that nothing the transaction changed was changed by another one
        since it read it (40001), and that no name it creates was taken meanwhile (42P07 / 42P06).
        Recovery applies a record made durable before a crash without checking: the changes are
        final states (by oid, by schema name), so applying them twice is applying them once."""
        with self.transaction():
            if verify:
                self._verify(changes)
            for name, s in changes.schemas.items():
                if s is not None:
                    self._conn.execute("INSERT INTO schemas VALUES (?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET "
                                       "oid=excluded.oid, owner=excluded.owner, comment=excluded.comment",
                                       (s.name, s.oid, s.owner, s.comment))
            for oid in changes.relations:
                self._conn.execute("DELETE FROM relations WHERE oid=?", (oid,))
            for t in changes.relations.values():
                if t is not None:
                    self._conn.execute("INSERT INTO relations VALUES (?, ?, ?, ?, ?)",
                                       (t.schema, t.name, t.oid, t.kind, _table_to_json(t)))
            for name, s in changes.schemas.items():
                if s is None:
                    self._conn.execute("DELETE FROM relations WHERE schema=?", (name,))
                    self._conn.execute("DELETE FROM schemas WHERE name=?", (name,))
            self._bump()

    def _verify(self, changes: CatalogChanges) -> None:
        for oid, seen in changes.seen.items():
            now = self.relation_by_oid(oid)
            if (None if now is None else _table_to_json(now)) != seen:
                t = now or changes.relations.get(oid)
                name = t.name if t else str(oid)
                raise SqlError("40001", "could not serialize access due to concurrent update",
                               detail=f'relation "{name}" was changed by another transaction after this one read it',
                               hint="Run the transaction again.")
        for name, seen_oid in changes.schema_seen.items():
            s = self.get_schema(name)
            if (s.oid if s else None) != seen_oid:
                if s is not None and seen_oid is None:
                    raise SqlError("42P06", f'schema "{name}" already exists')
                raise SqlError("40001", "could not serialize access due to concurrent update",
                               detail=f'schema "{name}" was changed by another transaction after this one read it')
        for oid, t in changes.relations.items():
            if t is None:
                continue
            if changes.schemas.get(t.schema) is None and self.get_schema(t.schema) is None:
                raise SqlError("3F000", f'schema "{t.schema}" does not exist',
                               detail="Another transaction dropped it after this one used it.")
            other = self.get_table(t.schema, t.name)
            if other is not None and other.oid != oid and other.oid not in changes.relations:
                raise SqlError("42P07", f'relation "{t.name}" already exists')


@dataclass
class CatalogChanges:
    """What a transaction does to the catalog, as final states: each relation it touched (by oid)
    as it leaves it (None: dropped), each schema (by name) likewise, and what it saw of them
    first (``seen``: the stored definition's JSON, None for one it created; ``schema_seen``: the
    oid, None) so that COMMIT can tell whether another transaction changed them meanwhile."""

    relations: dict[int, TableDef | None] = field(default_factory=dict)
    seen: dict[int, str | None] = field(default_factory=dict)
    schemas: dict[str, SchemaDef | None] = field(default_factory=dict)
    schema_seen: dict[str, int | None] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.relations or self.schemas)

    def to_json(self) -> dict:
        return {"relations": {str(o): (json.loads(_table_to_json(t)) if t else None) for o, t in self.relations.items()},
                "schemas": {n: (asdict(s) if s else None) for n, s in self.schemas.items()}}

    @classmethod
    def from_json(cls, doc: dict) -> CatalogChanges:
        return cls(relations={int(o): (_table_from_json(json.dumps(t)) if t else None)
                              for o, t in doc.get("relations", {}).items()},
                   schemas={n: (SchemaDef(**s) if s else None) for n, s in doc.get("schemas", {}).items()})


# -- sequences ------------------------------------------------------------------------------------

def relation_word(t: TableDef) -> str:
    """How PostgreSQL names a relation's kind in messages."""
    return {"view": "view", "sequence": "sequence"}.get(t.kind, "table")


SEQUENCE_TYPE_RANGES = {"int2": (-32768, 32767), "int4": (-2 ** 31, 2 ** 31 - 1), "int8": (-2 ** 63, 2 ** 63 - 1)}
SEQUENCE_TYPE_OIDS = {"int2": 21, "int4": 23, "int8": 20}
SEQUENCE_TYPE_NAMES = {"int2": "smallint", "int4": "integer", "int8": "bigint"}


@dataclass(frozen=True)
class SequenceParams:
    """A sequence's definition, kept in its :class:`TableDef`'s ``options`` (``seq.*`` keys) so that
    CREATE / ALTER / DROP SEQUENCE are catalog changes like any relation's (transactional in a
    block). Its value is not: see :class:`Sequences`."""

    type: str = "int8"  # int2 | int4 | int8
    start: int = 1
    increment: int = 1
    min: int = 1
    max: int = 2 ** 63 - 1
    cache: int = 1
    cycle: bool = False
    owned_by: tuple[int, str] | None = None  # (table oid, column name)

    def to_options(self) -> dict[str, str]:
        out = {"seq.type": self.type, "seq.start": str(self.start), "seq.increment": str(self.increment),
               "seq.min": str(self.min), "seq.max": str(self.max), "seq.cache": str(self.cache),
               "seq.cycle": "true" if self.cycle else "false"}
        if self.owned_by is not None:
            out["seq.owned_by"] = f"{self.owned_by[0]}.{self.owned_by[1]}"
        return out

    @classmethod
    def of(cls, t: TableDef) -> SequenceParams:
        o = t.options
        owned = o.get("seq.owned_by")
        owned_by = None
        if owned:
            oid, _, col = owned.partition(".")
            owned_by = (int(oid), col)
        return cls(o.get("seq.type", "int8"), int(o.get("seq.start", "1")), int(o.get("seq.increment", "1")),
                   int(o.get("seq.min", "1")), int(o.get("seq.max", str(2 ** 63 - 1))), int(o.get("seq.cache", "1")),
                   o.get("seq.cycle") == "true", owned_by)


@dataclass
class _SessionSequences:
    current: dict[int, int] = field(default_factory=dict)  # currval per sequence oid
    last: int | None = None  # the sequence of the last nextval (lastval)


class Sequences:
    """Sequence values: ``(last_value, is_called)`` per sequence oid in the catalog's database,
    outside the relations' definitions. Every change is its own durable transaction (never
    rolled back with the caller's transaction, as in PostgreSQL), made under the catalog's lock, so
    concurrent sessions never get the same value and a restart continues after the last one handed
    out. A block of values (a multi-row INSERT) is reserved in one transaction.

    Also each session's currval/lastval state, keyed by the session's backend pid."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._sessions: dict[int, _SessionSequences] = {}

    def _read(self, oid: int, p: SequenceParams) -> tuple[int, bool]:
        row = self._catalog._conn.execute("SELECT last_value, is_called FROM sequence_values WHERE oid=?",
                                          (oid,)).fetchone()
        return (int(row[0]), bool(row[1])) if row else (p.start, False)

    def _write(self, oid: int, last: int, called: bool) -> None:
        self._catalog._conn.execute(
            "INSERT INTO sequence_values VALUES (?, ?, ?) ON CONFLICT(oid) DO UPDATE SET "
            "last_value=excluded.last_value, is_called=excluded.is_called", (oid, last, int(called)))

    def state(self, seq: TableDef) -> tuple[int, bool]:
        """(last_value, is_called) as stored now."""
        with self._catalog._lock:
            return self._read(seq.oid, SequenceParams.of(seq))

    def next_values(self, seq: TableDef, n: int, pid: int = 0) -> list[int]:
        """Reserve the next ``n`` values of ``seq`` in one transaction (2200H past the bound
        without CYCLE: nothing is reserved then)."""
        if n <= 0:
            return []
        p = SequenceParams.of(seq)
        with self._catalog.transaction():
            last, called = self._read(seq.oid, p)
            if p.cycle:
                out = []
                value, fresh = last, not called
                for _ in range(n):
                    if fresh:
                        fresh = False
                    else:
                        value += p.increment
                        if value > p.max:
                            value = p.min
                        elif value < p.min:
                            value = p.max
                    out.append(value)
            else:
                first = last if not called else last + p.increment
                final = first + (n - 1) * p.increment
                if p.increment > 0 and final > p.max:
                    raise SqlError("2200H", f'nextval: reached maximum value of sequence "{seq.name}" ({p.max})')
                if p.increment < 0 and final < p.min:
                    raise SqlError("2200H", f'nextval: reached minimum value of sequence "{seq.name}" ({p.min})')
                out = list(range(first, final + (1 if p.increment > 0 else -1), p.increment))
            self._write(seq.oid, out[-1], True)
        state = self._sessions.setdefault(pid, _SessionSequences())
        state.current[seq.oid] = out[-1]
        state.last = seq.oid
        return out

    def setval(self, seq: TableDef, value: int, is_called: bool = True, pid: int = 0) -> int:
        p = SequenceParams.of(seq)
        if not p.min <= value <= p.max:
            raise SqlError("22003", f'setval: value {value} is out of bounds for sequence "{seq.name}" ({p.min}..{p.max})')
        with self._catalog.transaction():
            self._write(seq.oid, value, is_called)
        if is_called:
            self._sessions.setdefault(pid, _SessionSequences()).current[seq.oid] = value
        return value

    def restart(self, seq: TableDef, value: int) -> None:
        """ALTER SEQUENCE ... RESTART [WITH n]: the next nextval returns ``value``."""
        with self._catalog.transaction():
            self._write(seq.oid, value, False)

    def currval(self, seq: TableDef, pid: int = 0) -> int:
        value = self._sessions.get(pid, _SessionSequences()).current.get(seq.oid)
        if value is None:
            raise SqlError("55000", f'currval of sequence "{seq.name}" is not yet defined in this session')
        return value

    def lastval(self, pid: int, alive: Any) -> int:
        """``alive(oid)``: whether that sequence still exists (a dropped one has no lastval)."""
        state = self._sessions.get(pid)
        if state is None or state.last is None or not alive(state.last) or state.last not in state.current:
            raise SqlError("55000", "lastval is not yet defined in this session")
        return state.current[state.last]

    def forget(self, oid: int) -> None:
        """A dropped sequence's value (after its DROP committed)."""
        with self._catalog.transaction():
            self._catalog._conn.execute("DELETE FROM sequence_values WHERE oid=?", (oid,))

    def end_session(self, pid: int) -> None:
        self._sessions.pop(pid, None)

    # -- the SQL functions ------------------------------------------------------------------------

    def call(self, view: RelationReads, fn: str, args: list[Any], search_path: list[str], pid: int) -> Any:
        """nextval / currval / setval / lastval with PostgreSQL's semantics and errors; ``view``
        resolves names (the catalog, or a transaction block's view of it)."""
        fn = fn.lower()
        if fn == "lastval":
            if args:
                raise SqlError("42883", "function lastval(unknown) does not exist")
            return self.lastval(pid, lambda oid: any(t.oid == oid for t in view.list_tables(kind="sequence")))
        if not args:
            raise SqlError("42883", f"function {fn}() does not exist")
        if any(a is None for a in args):
            return None  # strict functions
        seq = sequence_named(view, args[0], search_path)
        if fn == "nextval" and len(args) == 1:
            return self.next_values(seq, 1, pid)[0]
        if fn == "currval" and len(args) == 1:
            return self.currval(seq, pid)
        if fn == "setval" and len(args) in (2, 3):
            return self.setval(seq, int(args[1]), bool(args[2]) if len(args) == 3 else True, pid)
        raise SqlError("42883", f"function {fn} with {len(args)} arguments does not exist")


def regclass_parts(text: str) -> list[str]:
    """A regclass input's name parts: dotted, unquoted parts folded to lower case (42602 if malformed)."""
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i < n and text[i] == '"':
            j = i + 1
            buf = []
            while j < n:
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            if j >= n or not buf:
                raise SqlError("42602", 'invalid name syntax')
            parts.append("".join(buf))
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in '."' and not text[j].isspace():
                j += 1
            if j == i:
                raise SqlError("42602", "invalid name syntax")
            parts.append(text[i:j].lower())
            i = j
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        if text[i] != ".":
            raise SqlError("42602", "invalid name syntax")
        i += 1
    if len(parts) > 3:
        raise SqlError("42601", f"improper relation name (too many dotted names): {text}")
    return parts


def sequence_named(view: RelationReads, ref: Any, search_path: list[str]) -> TableDef:
    """A sequence by regclass text ('s', 'public.s', '"S"') or OID (42P01, 42809)."""
    text = str(ref).strip()
    if text.isdigit():
        t = next((x for x in view.list_tables() if x.oid == int(text)), None)
        if t is None:
            raise SqlError("42P01", f"could not open relation with OID {text}")
    else:
        parts = regclass_parts(text)
        t = view.resolve_table(parts[-1], parts[-2] if len(parts) > 1 else None, search_path)
    if t.kind != "sequence":
        raise SqlError("42809", f'"{t.name}" is not a sequence')
    return t
