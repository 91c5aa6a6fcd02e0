"""Rendering of statement results as they appear in ``.result`` files.

Values are the server's own text representation (every type is loaded as text, see
:func:`text_adapters`), so golden files show exactly what PostgreSQL's text format carries,
the same strings psql prints, independent of psycopg's Python conversions.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import psycopg
import psycopg.errors
from psycopg.adapt import AdaptersMap, Loader

from tidegate.errors import CONDITION_NAMES

NULL_TEXT = "NULL"


class _ServerText(Loader):
    """Return the value exactly as the server sent it in text format."""

    def load(self, data: Any) -> str:
        return bytes(data).decode("utf-8", errors="backslashreplace")


def text_adapters() -> AdaptersMap:
    """An adapters map without any type-specific loader: every OID falls back to raw text.

    psycopg looks a loader up by OID and falls back to the one registered for OID 0; with an
    empty map that fallback is the only loader, so no value is ever parsed into Python.
    """
    adapters = AdaptersMap()
    adapters.register_loader(0, _ServerText)
    return adapters


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _cell(value: str | None) -> str:
    """One table cell; line breaks and tabs are escaped so every row is one line (and sortable)."""
    if value is None:
        return NULL_TEXT
    if any(c in value for c in _ESCAPES):
        return re.sub(r"[\n\r\t]", lambda m: _ESCAPES[m.group()], value)
    return value


def format_table(columns: Sequence[str], rows: Sequence[Sequence[str | None]]) -> str:
    """An ASCII table, values left aligned; ``++``/``++`` for a result without columns."""
    if not columns:
        return "++\n++"
    header = [_cell(c) for c in columns]
    body = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in header]
    for row in body:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    border = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells: Sequence[str]) -> str:
        return "|" + "|".join(f" {c.ljust(w)} " for c, w in zip(cells, widths)) + "|"

    out = [border, line(header), border]
    out.extend(line(row) for row in body)
    out.append(border)
    return "\n".join(out)


def format_affected(status: str | None) -> str:
    """``Affected Rows: N`` from the command tag (``INSERT 0 3`` -> 3; tags without a count -> 0)."""
    count = 0
    if status:
        last = status.rsplit(" ", 1)[-1]
        if last.isdigit():
            count = int(last)
    return f"Affected Rows: {count}"


def _psycopg_condition_names() -> dict[str, str]:
    """SQLSTATE -> condition name from psycopg's error registry (which knows every PG code)."""
    registry: dict[str, type] = getattr(psycopg.errors, "_sqlcodes", {})
    by_class: dict[type, str] = {}
    for key, cls in registry.items():
        if not re.fullmatch(r"[0-9A-Z]{5}", key) or "_" in key:
            by_class.setdefault(cls, key.lower())
    names: dict[str, str] = {}
    for key, cls in registry.items():
        if re.fullmatch(r"[0-9A-Z]{5}", key) and cls in by_class:
            names[key] = by_class[cls]
    return names


_PSYCOPG_NAMES = _psycopg_condition_names()


def condition_name(sqlstate: str) -> str:
    """tidegate's table first, psycopg's knowledge of PostgreSQL's codes next, else ``unknown``."""
    if sqlstate in CONDITION_NAMES:
        return CONDITION_NAMES[sqlstate]
    if sqlstate in _PSYCOPG_NAMES:
        return _PSYCOPG_NAMES[sqlstate]
    cls = getattr(psycopg.errors, "_sqlcodes", {}).get(sqlstate)
    if cls is not None and cls.__name__ not in ("Error", "DatabaseError"):
        return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
    return "unknown"


def format_error(exc: BaseException, connection_lost: bool = False) -> str:
    """``Error: <SQLSTATE>(<condition_name>), <primary message>``."""
    sqlstate: str | None = None
    message: str | None = None
    if isinstance(exc, psycopg.Error):
        sqlstate = exc.sqlstate or None
        message = exc.diag.message_primary
    if message is None:
        text = str(exc).strip()
        message = text.splitlines()[0].strip() if text else type(exc).__name__
    if sqlstate is None:
        if connection_lost:
            sqlstate = "08006"
        else:
            return f"Error: unknown(unknown), {message}"
    return f"Error: {sqlstate}({condition_name(sqlstate)}), {message}"
