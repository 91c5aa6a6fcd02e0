"""A transaction's view of the catalog: its own DDL seen at once, everyone else's at COMMIT.

Inside a transaction block, CREATE / ALTER / DROP / RENAME of tables and views and CREATE / DROP
SCHEMA change a :class:`CatalogTxn` instead of the catalog. The session that runs the block reads
through it (the base catalog with these changes laid over it); other sessions keep reading the
catalog as it was. COMMIT hands :attr:`CatalogTxn.changes` to the engine's commit, which applies
them in one catalog transaction after the block's data writes, with both recorded in the commit
journal so that a crash in between completes them (engine/txnlog.py); ROLLBACK forgets them.

The API is the catalog's own (reads and the mutations DDL uses), so DDL code does not care whether
it runs in a block.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from catalog.store import (Catalog, CatalogChanges, RelationReads, SchemaDef, TableDef, _now, _table_to_json,
                           is_temp_schema)
from tidegate.errors import SqlError


class CatalogTxn(RelationReads):
    """The catalog as one open transaction sees it."""

    def __init__(self, base: Catalog) -> None:
        self.base = base
        self.changes = CatalogChanges()
        self._seq = 0
        self._cache: dict[tuple[str, str], TableDef] | None = None
        self._cache_key: tuple[int, int] | None = None

    # -- what the base catalog offers unchanged ------------------------------------------------

    def __getattr__(self, name: str) -> Any:  # only for what this class does not define
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    @property
    def database(self) -> str:
        return self.base.database

    @property
    def roles(self) -> Any:
        return self.base.roles

    def next_oid(self) -> int:
        return self.base.next_oid()

    @property
    def version(self) -> tuple[int, int, int]:
        """Moves with the base catalog and with every change made here (analysis caches key on it)."""
        return (self.base.version, id(self), self._seq)

    # -- reads ---------------------------------------------------------------------------------

    def _all(self) -> dict[tuple[str, str], TableDef]:
        base = self.base._all()
        if not self.changes:
            return base
        key = (self.base.version, self._seq)
        if self._cache is None or self._cache_key != key:
            dropped = {n for n, s in self.changes.schemas.items() if s is None}
            merged = {k: t for k, t in base.items()
                      if t.oid not in self.changes.relations and k[0] not in dropped}
            for t in self.changes.relations.values():
                if t is not None:
                    merged[(t.schema, t.name)] = t
            self._cache, self._cache_key = merged, key
        return self._cache

    def get_schema(self, name: str) -> SchemaDef | None:
        if name in self.changes.schemas:
            s = self.changes.schemas[name]
            return replace(s) if s else None
        return self.base.get_schema(name)

    def list_schemas(self) -> list[SchemaDef]:
        out = {s.name: s for s in self.base.list_schemas()}
        for name, s in self.changes.schemas.items():
            if s is None:
                out.pop(name, None)
            else:
                out[name] = s
        return [out[n] for n in sorted(out)]

    # -- changes -------------------------------------------------------------------------------

    def _touch(self, oid: int) -> None:
        if oid not in self.changes.seen:
            stored = self.base.relation_by_oid(oid)
            self.changes.seen[oid] = _table_to_json(stored) if stored is not None else None

    def _set(self, t: TableDef | None, oid: int) -> None:
        self._touch(oid)
        self.changes.relations[oid] = t
        self._seq += 1

    def created_here(self, oid: int) -> bool:
        """Whether the relation was created by this transaction (its storage is private to it)."""
        return oid in self.changes.seen and self.changes.seen[oid] is None

    def create_table(self, table: TableDef, if_not_exists: bool = False) -> TableDef | None:
        if if_not_exists and self.get_schema(table.schema) is not None \
                and self.get_table(table.schema, table.name) is not None:
            return None
        self.check_new_relation(table)
        now = _now()
        stored = replace(table, oid=table.oid or self.next_oid(), created_at=now, updated_at=now)
        self._set(stored, stored.oid)
        return stored

    def replace_table(self, table: TableDef) -> TableDef:
        old = self.get_table(table.schema, table.name)
        if old is None:
            raise SqlError("42P01", f'relation "{table.qualified_name}" does not exist')
        stored = replace(table, oid=old.oid, created_at=old.created_at, updated_at=_now())
        self._set(stored, old.oid)
        return stored

    def rename_table(self, schema: str, old_name: str, new_name: str) -> TableDef:
        t = self.get_table(schema, old_name)
        if t is None:
            raise SqlError("42P01", f'relation "{old_name}" does not exist')
        if self.get_table(schema, new_name) is not None:
            raise SqlError("42P07", f'relation "{new_name}" already exists')
        renamed = replace(t, name=new_name, updated_at=_now())
        self._set(renamed, t.oid)
        return renamed

    def drop_table(self, schema: str, name: str) -> None:
        t = self.get_table(schema, name)
        if t is None:
            raise SqlError("42P01", f'relation "{name}" does not exist')
        self._set(None, t.oid)

    def _schema_touch(self, name: str) -> None:
        if name not in self.changes.schema_seen:
            s = self.base.get_schema(name)
            self.changes.schema_seen[name] = s.oid if s else None

    def _schema_set(self, name: str, s: SchemaDef | None) -> None:
        self._schema_touch(name)
        self.changes.schemas[name] = s
        self._seq += 1

    def create_schema(self, name: str, if_not_exists: bool = False, owner: str = "tidegate") -> bool:
        Catalog.check_schema_name(name)
        if self.get_schema(name) is not None:
            if if_not_exists:
                return False
            raise SqlError("42P06", f'schema "{name}" already exists')
        self._schema_set(name, SchemaDef(name, self.next_oid(), owner))
        return True

    def drop_schema(self, name: str, if_exists: bool = False, cascade: bool = False) -> list[TableDef]:
        members = self.schema_drop_members(name, if_exists, cascade)
        if members is None:
            return []
        for t in members:
            self._set(None, t.oid)
        self._schema_set(name, None)
        return members

    def set_schema_owner(self, name: str, owner: str) -> None:
        s = self.get_schema(name)
        if s is not None:
            self._schema_set(name, replace(s, owner=owner))

    def set_schema_comment(self, name: str, comment: str | None) -> None:
        s = self.get_schema(name)
        if s is None:
            raise SqlError("3F000", f'schema "{name}" does not exist')
        self._schema_set(name, replace(s, comment=comment))


class SessionView(RelationReads):
    """The catalog (or a block's :class:`CatalogTxn`) as one session may see it: without the
    temporary schemas of other sessions (``own``: this session's, None: hide every one). Catalog
    queries (pg_class, information_schema, psql's \\d) read through it, so another session's
    temporary tables are not listed; reads only, everything else is the base's."""

    def __init__(self, base: Catalog | CatalogTxn, own: str | None) -> None:
        self.base = base
        self.own = own
        self._source: dict | None = None
        self._filtered: dict[tuple[str, str], TableDef] = {}

    def __getattr__(self, name: str) -> Any:
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    @property
    def database(self) -> str:
        return self.base.database

    @property
    def roles(self) -> Any:
        return self.base.roles

    @property
    def version(self) -> Any:
        return self.base.version

    def _hidden(self, schema: str) -> bool:
        return is_temp_schema(schema) and schema != self.own

    def _all(self) -> dict[tuple[str, str], TableDef]:
        source = self.base._all()
        if source is not self._source:
            self._filtered = {k: t for k, t in source.items() if not self._hidden(k[0])}
            self._source = source
        return self._filtered

    def get_schema(self, name: str) -> SchemaDef | None:
        return None if self._hidden(name) else self.base.get_schema(name)

    def list_schemas(self) -> list[SchemaDef]:
        return [s for s in self.base.list_schemas() if not self._hidden(s.name)]


__all__ = ["CatalogTxn", "SessionView"]
