"""Per-statement table resolution: the translator's view of the catalog for one statement.

A :class:`StatementResolver` pins one Delta version of every table a statement reads (through its
session's ``table_view``) and checks each read against the acting role: the session's, or inside a
view its owner's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from catalog.store import TableDef
from engine.storage import Snapshot
from engine.translate import ResolvedRelation
from tidegate.errors import SqlError
from tidegate.pgtypes import TYPES_BY_NAME, ColumnType
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from engine.executor import EngineSession


class StatementResolver:
    """The translator's TableResolver: pins one Delta version per table for one statement."""

    def __init__(self, session: EngineSession, info: SessionInfo, overrides: dict[str, Any] | None = None,
                 *, stored_rows: bool = False) -> None:
        self.session = session
        self.info = info
        # Read what storage holds, rows past their table's ttl included (flows: a source's expiry
        # is not a delete for them); statements read only the rows a ttl keeps.
        self.stored_rows = stored_rows
        self.snapshots: dict[str, Snapshot] = {}
        self.tables: dict[str, TableDef] = {}
        self.overrides = overrides or {}
        # Whose privileges a read is checked against: the session's, or inside a view its owner's
        # (PostgreSQL checks a view's own reads as its owner).
        self.acting = info
        # A relation read as its state now (a sequence's last_value): the translation holds it,
        # so it is not kept for a later statement (engine.plans).
        self.reads_state = False

    @contextmanager
    def view_scope(self, rel: Any) -> Iterator[None]:
        saved = self.acting
        self.acting = owner_info(rel.owner, self.info)
        try:
            yield
        finally:
            self.acting = saved

    def resolve(self, schema: str | None, name: str) -> Any:
        key = name if schema is None else f"{schema}.{name}"
        if key in self.overrides:
            return self.overrides[key]
        if schema in ("pg_catalog", "information_schema"):
            raise SqlError("0A000", f'relation "{key}" (a system catalog) cannot be joined with tables')
        t = self.session.catalog.resolve_table(name, schema, self.info.search_path)
        self.session.catalog.roles.check_table(self.acting, t, "SELECT")
        if t.kind == "sequence":  # SELECT last_value, is_called FROM s: its state now, as a one-row view
            self.reads_state = True
            last, called = self.session.engine.catalog.sequences.state(t)
            int8, boolean = ColumnType(TYPES_BY_NAME["int8"]), ColumnType(TYPES_BY_NAME["bool"])
            sql = (f"SELECT CAST({last} AS bigint) AS last_value, CAST(0 AS bigint) AS log_cnt, "
                   f"{'true' if called else 'false'} AS is_called")
            return ResolvedRelation(t.schema, t.name, None, [("last_value", int8), ("log_cnt", int8),
                                                             ("is_called", boolean)], sql, t.owner)
        cols = [(c.name, c.type) for c in t.columns]
        if t.kind == "view":
            return ResolvedRelation(t.schema, t.name, None, cols, t.view_sql, t.owner)
        view = self.session.table_view(t, self)
        return ResolvedRelation(t.schema, t.name, view, cols, None, t.owner)


def owner_info(owner: str | None, info: SessionInfo) -> SessionInfo:
    """The privileges of an object's owner, for work done on its behalf (a view's reads).
    No owner: the bootstrap superuser of catalogs older than roles."""
    if owner is None:
        return replace(info, internal=True)
    return replace(info, user=owner, superuser=True, internal=False)


def node_name(node: Any) -> str:
    if node is None:
        return ""
    if isinstance(node, str):
        return node
    if isinstance(node, exp.Identifier):
        return node.this if node.quoted else node.this.lower()
    if isinstance(node, (exp.Column, exp.Table)):
        return node_name(node.this)
    if isinstance(node, exp.Expression) and isinstance(node.this, (exp.Identifier, str)):
        return node_name(node.this)
    return node.name.lower()


def param_index(e: exp.Expression) -> int | None:
    if isinstance(e, exp.Parameter):
        inner = e.this
        try:
            return int(inner.name if isinstance(inner, exp.Expression) else inner)
        except (TypeError, ValueError):
            return None
    if isinstance(e, exp.Placeholder):
        try:
            return int(e.name)
        except (TypeError, ValueError):
            return None
    if isinstance(e, exp.Cast):
        return None
    return None
