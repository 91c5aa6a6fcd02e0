"""Persistent metadata: schemas, tables and views, in SQLite under the data directory.

The store speaks in dataclasses (:class:`SchemaDef`, :class:`TableDef`, :class:`ColumnDef`) so
that a PostgreSQL-backed implementation can replace SQLite without touching callers. Each table's
definition is kept as one JSON document: definitions are read whole and written whole, and the
relational part of SQLite (unique (schema, name), foreign key to its schema) keeps it consistent
under concurrent sessions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from catalog.roles import Roles
from catalog.sqlitedb import SqliteStore
from tidegate.errors import SqlError
from tidegate.pgtypes import TYPES_BY_OID, ColumnType

DATABASE_NAME = "tidegate"
# OIDs below this are PostgreSQL's own (pg_catalog objects, types); user objects start here.
FIRST_USER_OID = 16384
SYSTEM_SCHEMAS = ("pg_catalog", "information_schema")


@dataclass
class ColumnDef:
    name: str
    type: ColumnType
    not_null: bool = False
    default: str | None = None  # SQL expression text in PostgreSQL dialect, e.g. "now()"
    comment: str | None = None


@dataclass
class TableDef:
    schema: str
    name: str
    columns: list[ColumnDef]
    primary_key: list[str] = field(default_factory=list)
    time_index: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    kind: str = "table"  # "table" | "view"
    view_sql: str | None = None  # a view's defining query (PostgreSQL dialect)
    location: str | None = None  # absolute path of the Delta table (<warehouse>/<schema oid>/<oid>)
    oid: int = 0
    owner: str | None = None  # owning role; None: the bootstrap superuser (catalogs before roles)
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def column(self, name: str) -> ColumnDef | None:
        for c in self.columns:
            if c.name == name:
                return c
        return None

    @property
    def qualified_name(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass
class SchemaDef:
    name: str
    oid: int
    owner: str = "tidegate"
    comment: str | None = None


def _type_to_json(t: ColumnType) -> dict:
    return {"oid": t.pg.oid, "length": t.length, "precision": t.precision, "scale": t.scale}


def _type_from_json(d: dict) -> ColumnType:
    return ColumnType(TYPES_BY_OID[d["oid"]], d.get("length"), d.get("precision"), d.get("scale"))


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
"""


class RelationReads:
    """Lookups over a name -> definition map (``_all``) and ``get_schema``: shared by the catalog
    and by a transaction's view of it (:class:`catalog.txn.CatalogTxn`)."""

    def _all(self) -> dict[tuple[str, str], TableDef]:
        raise NotImplementedError

    def get_schema(self, name: str) -> SchemaDef | None:
        raise NotImplementedError

    def get_table(self, schema: str, name: str) -> TableDef | None:
        t = self._all().get((schema, name))
        return replace(t, columns=list(t.columns)) if t else None

    def list_tables(self, schema: str | None = None, kind: str | None = None) -> list[TableDef]:
        return [replace(t, columns=list(t.columns)) for (s, _), t in self._all().items()
                if (schema is None or s == schema) and (kind is None or t.kind == kind)]

    def resolve_table(self, name: str, schema: str | None, search_path: list[str]) -> TableDef:
        """Find a relation as PostgreSQL does: qualified, or the first search_path schema holding it."""
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

    def check_new_relation(self, table: TableDef) -> None:
        """42P07/3F000/42701 for a definition that cannot be created under this view."""
        if self.get_schema(table.schema) is None:
            raise SqlError("3F000", f'schema "{table.schema}" does not exist')
        if self.get_table(table.schema, table.name) is not None:
            raise SqlError("42P07", f'relation "{table.name}" already exists')
        names = [c.name for c in table.columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SqlError("42701", f'column "{dupes[0]}" specified more than once')


class Catalog(SqliteStore, RelationReads):
    """Thread-safe metadata store. Every mutation bumps :attr:`version`.

    One SQLite connection guarded by a lock: metadata operations are tiny, and a single writer
    keeps the version counter and the in-memory cache exact.
    """

    database = DATABASE_NAME

    def __init__(self, path: Path | str) -> None:
        super().__init__(path, _SCHEMA_SQL, foreign_keys=True)
        with self._lock:
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('next_oid', ?)", (str(FIRST_USER_OID),))
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('version', '1')")
            if self._conn.execute("SELECT 1 FROM schemas WHERE name='public'").fetchone() is None:
                self._conn.execute("INSERT INTO schemas VALUES ('public', 2200, 'tidegate', 'standard public schema')")
        self._cache: dict[tuple[str, str], TableDef] | None = None
        self._cache_version = -1
        self.roles = Roles(self)

    # -- infrastructure -------------------------------------------------------------------------

    def _rolled_back(self) -> None:
        self._cache = None

    def _bump(self) -> None:
        self._conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'version'")
        self._cache = None

    @property
    def version(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT value FROM meta WHERE key='version'").fetchone()[0])

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

    @staticmethod
    def refuse_schema_drop(name: str, members: list[TableDef]) -> None:
        raise SqlError("2BP01", f"cannot drop schema {name} because other objects depend on it",
                       detail="\n".join(f"{'view' if t.kind == 'view' else 'table'} {t.qualified_name} depends on schema {name}"
                                        for t in members),
                       hint="Use DROP ... CASCADE to drop the dependent objects too.")

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

    def drop_schema(self, name: str, if_exists: bool = False, cascade: bool = False) -> list[TableDef]:
        """Drop a schema; returns the relations dropped with it (CASCADE) so storage can remove them."""
        with self.transaction():
            if self.get_schema(name) is None:
                if if_exists:
                    return []
                raise SqlError("3F000", f'schema "{name}" does not exist')
            members = self.list_tables(name)
            if members and not cascade:
                self.refuse_schema_drop(name, members)
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
        """Apply a transaction's catalog changes in one SQLite transaction (one version bump).

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
