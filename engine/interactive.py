"""The interactive path: small reads of one table answered from its files, without Spark.

A query qualifies when its answer is a filter, projection, order and limit of one base table's
stored rows, which Arrow computes exactly as the Spark path does:

* ``SELECT`` of plain columns (``*``, ``t.*``, ``c``, ``c AS x``) ``FROM`` one table (no join,
  subquery, CTE, GROUP BY / HAVING / DISTINCT / window, FOR UPDATE);
* ``WHERE``: a conjunction of ``c <op> v`` (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``),
  ``c BETWEEN v AND w``, ``c IN (v, ...)``, ``c IS [NOT] NULL``, where ``c`` is a column of type
  smallint / integer / bigint, text / varchar, boolean, date, timestamp or timestamptz and ``v``
  a literal or parameter PostgreSQL reads as a value of that type (an integer literal for an
  integer column, a string literal read by the column type's input rules, a parameter of the
  column's Python type); anything else goes to Spark, which gives PostgreSQL's answer or error;
* ``ORDER BY`` columns of those types whose NULLs all sort the same way; ``LIMIT`` / ``OFFSET``
  integer literals;
* the table: a base table (not a view or sequence) with no ttl, no write of this session's open
  transaction pending on it, and at most :data:`MAX_ROWS` rows in the files its statistics cannot
  exclude.

The files are those of the Delta version the Spark path would read at this moment (a newer commit
visible to the session is always read). Integer and date statistics of the log exclude files,
as do timestamp statistics widened by their millisecond precision (strings' are prefixes: never
used to exclude), and the filter is applied to the rows read.
Decoded columns of the files read are kept (:func:`engine.storage.file_columns`): a data
file never changes, so a key looked up again is a filter in memory. Results go through the same
conversion as Spark's (:func:`engine.storage.convert_batches`).
``SET tidegate.interactive = off`` sends every query to Spark; EXPLAIN says which path runs.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from dataclasses import dataclass, field
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from catalog.store import ColumnDef, TableDef
from engine import ttl
from engine.resolver import node_name, param_index
from engine.storage import (KeyIndex, Snapshot, action_path, columns_kept, convert_batches, file_columns, key_index,
                            kept_columns, kept_key_index, prefetch, python_value, read_file_columns,
                            storage_schema)
from tidegate.errors import SqlError
from tidegate.results import ResultField, RowStream
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from engine.executor import EngineSession

SETTING = "tidegate.interactive"
# Rows (in the files statistics cannot exclude) up to which Arrow in the gateway answers: bench/
# interactive.py measures the crossover with Spark (docs/DESIGN.md, "Interactive path").
MAX_ROWS = 1_000_000

_INTS = {"int2": (-2**15, 2**15 - 1), "int4": (-2**31, 2**31 - 1), "int8": (-2**63, 2**63 - 1)}
_TEXTS = ("text", "varchar")
_FAMILIES = (*_INTS, *_TEXTS, "bool", "date", "timestamp", "timestamptz")
_PRUNED_BY_STATS = (*_INTS, "date")  # exact statistics in the Delta log
# Timestamps' statistics are milliseconds (a writer may truncate or round the microseconds): a
# file's range is widened by one millisecond each way before it excludes the file.
_PRUNED_BY_MS_STATS = ("timestamp", "timestamptz")
_STATS_SLACK = dt.timedelta(milliseconds=1)
_OPS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ALLOWED_ARGS = {"expressions", "from_", "where", "order", "limit", "offset"}


class _NotHere(Exception):
    """The query is not one the interactive path answers: Spark runs it."""


@dataclass(frozen=True)
class _Read:
    """A date or time read from a string literal: 'today', 'now', 'epoch' ... are read again at
    every statement, so a lookup holding one is not kept for the next."""

    value: Any


@dataclass
class _Term:
    column: ColumnDef
    op: str  # = <> < <= > >= between in null notnull
    values: list[Any] = field(default_factory=list)  # unbound: (literal value) or ("param", n)


@dataclass
class Lookup:
    """A query the interactive path answers, with its values not yet bound."""

    table: TableDef
    columns: list[ColumnDef]
    names: list[str]
    terms: list[_Term]
    order: list[tuple[str, bool]]  # (column, descending)
    nulls_first: bool
    limit: int | None
    offset: int

    @property
    def fields(self) -> list[ResultField]:
        return [ResultField(n, c.type) for n, c in zip(self.names, self.columns)]


def enabled(info: SessionInfo) -> bool:
    return info.settings.get(SETTING, "on") != "off"


def shape(session: EngineSession, tree: exp.Expression, info: SessionInfo, sql: str | None = None) -> Lookup | None:
    """The lookup ``tree`` is, or None when Spark must run it. Resolution errors (42P01, 42501)
    are raised as the Spark path raises them. With ``sql``, the lookup of that text is kept for
    the session's next statements while the catalog is unchanged (Describe then Execute, a
    prepared statement's every Execute)."""
    if not enabled(info) or not isinstance(tree, exp.Select):
        return None
    key = None
    if sql is not None and not session.in_block:
        key = _kept_key(session, sql, info)
        kept = session._lookups.get(key)
        if kept is not None:
            return _checked(session, kept, info)
    lookup = _shape(session, tree, info)
    if key is not None and lookup is not None and not any(
            isinstance(v, _Read) for term in lookup.terms for v in term.values):
        if len(session._lookups) >= 64:
            session._lookups.pop(next(iter(session._lookups)))
        session._lookups[key] = lookup
    return lookup


def kept(session: EngineSession, sql: str, info: SessionInfo) -> Lookup | None:
    """The lookup :func:`shape` kept for the text ``sql`` (no parse), or None: not kept."""
    if session.in_block or not enabled(info):
        return None
    lookup = session._lookups.get(_kept_key(session, sql, info))
    return None if lookup is None else _checked(session, lookup, info)


def _kept_key(session: EngineSession, sql: str, info: SessionInfo) -> tuple:
    return (sql, session.catalog.version, info.user, tuple(info.search_path), info.timezone)


def _checked(session: EngineSession, lookup: Lookup, info: SessionInfo) -> Lookup | None:
    if session._pending_ops(lookup.table):
        return None
    session.catalog.roles.check_table(info, lookup.table, "SELECT")
    return lookup


def _shape(session: EngineSession, tree: exp.Select, info: SessionInfo) -> Lookup | None:
    if any(v for k, v in tree.args.items() if k not in _ALLOWED_ARGS) or any(
            n is not tree for n in tree.find_all(exp.Select, exp.Subquery, exp.Window, exp.AggFunc)):
        return None
    source = tree.args.get("from_")
    table_node = source.this if source is not None else None
    if not isinstance(table_node, exp.Table) or not isinstance(table_node.this, exp.Identifier) or any(
            v for k, v in table_node.args.items() if k not in ("this", "db", "alias")):
        return None  # a function in FROM (generate_series ...), a sample, a catalog-qualified name
    if session.in_block and session.catalog_in_block is not None:
        return None  # the block ran DDL: its tables are read through Spark, as the block sees them
    alias = table_node.args.get("alias")
    if alias is not None and alias.args.get("columns"):
        return None
    schema, name = session._table_name(table_node)
    if schema in ("pg_catalog", "information_schema"):
        return None
    t = session.catalog.resolve_table(name, schema, info.search_path)
    if t.kind != "table" or not ttl.of(t).forever or session._pending_ops(t):
        return None
    session.catalog.roles.check_table(info, t, "SELECT")
    qualifiers = {node_name(alias.this)} if alias is not None else {t.name, f"{t.schema}.{t.name}"}
    try:
        columns, names = _projection(tree.expressions, t, qualifiers)
        terms = _terms(tree.args.get("where"), t, qualifiers)
        order, nulls_first = _order(tree.args.get("order"), t, qualifiers, names, columns)
        limit = _count(tree.args.get("limit"))
        offset = _count(tree.args.get("offset")) or 0
    except _NotHere:
        return None
    return Lookup(t, columns, names, terms, order, nulls_first, limit, offset)


def _column(node: exp.Expression, t: TableDef, qualifiers: set[str]) -> ColumnDef:
    if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
        raise _NotHere
    table = node.args.get("table")
    if node.args.get("catalog") is not None or node.args.get("db") is not None:
        raise _NotHere
    if table is not None and node_name(table) not in qualifiers:
        raise _NotHere
    c = t.column(node_name(node.this))
    if c is None:
        raise _NotHere  # Spark's translation raises 42703 with its position
    return c


def _projection(items: list[exp.Expression], t: TableDef, qualifiers: set[str]) -> tuple[list[ColumnDef], list[str]]:
    columns: list[ColumnDef] = []
    names: list[str] = []
    for item in items:
        star = item if isinstance(item, exp.Star) else (
            item.this if isinstance(item, exp.Column) and isinstance(item.this, exp.Star) else None)
        if star is not None:
            if star.args.get("except_") or star.args.get("replace") or star.args.get("rename"):
                raise _NotHere
            if isinstance(item, exp.Column) and (item.args.get("table") is None
                                                 or node_name(item.args["table"]) not in qualifiers):
                raise _NotHere
            columns += t.columns
            names += [c.name for c in t.columns]
            continue
        node, label = (item.this, node_name(item.args["alias"])) if isinstance(item, exp.Alias) else (item, None)
        c = _column(node, t, qualifiers)
        columns.append(c)
        names.append(label if label is not None else c.name)
    if not columns:
        raise _NotHere
    return columns, names


def _family(c: ColumnDef) -> str:
    name = c.type.pg.name
    if c.type.is_array or name not in _FAMILIES:
        raise _NotHere
    return name


def _value(node: exp.Expression, c: ColumnDef) -> Any:
    """A literal's value as PostgreSQL compares it with column ``c``, or ("param", n)."""
    family = _family(c)
    n = param_index(node)
    if n is not None:
        return ("param", n)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        value = _value(node.this, c)
        return -value
    if isinstance(node, exp.Boolean):
        if family != "bool":
            raise _NotHere
        return bool(node.this)
    if not isinstance(node, exp.Literal):
        raise _NotHere
    text = node.this
    if not node.is_string:  # a number: integer columns against integer literals only
        if family not in _INTS or not (text.isascii() and text.isdigit()):
            raise _NotHere
        return int(text)
    if family in _TEXTS:
        return text
    try:  # an unknown-typed literal takes the column's type (its input rules, the session zone)
        value = python_value(text, c.type, c.name)
    except SqlError:
        raise _NotHere from None  # Spark's path gives the error
    return _Read(value) if family in ("date", "timestamp", "timestamptz") else value


def _terms(where: exp.Where | None, t: TableDef, qualifiers: set[str]) -> list[_Term]:
    if where is None:
        return []
    out: list[_Term] = []
    stack = [where.this]
    while stack:
        node = stack.pop()
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            stack += [node.this, node.expression]
            continue
        negated = isinstance(node, exp.Not)
        if negated:
            node = node.this
            while isinstance(node, exp.Paren):
                node = node.this
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            c = _column(node.this, t, qualifiers)
            _family(c)
            out.append(_Term(c, "notnull" if negated != bool(node.args.get("negate")) else "null"))
            continue
        if negated:
            raise _NotHere
        if type(node) in _OPS:
            op = _OPS[type(node)]
            left, right = node.this, node.expression
            if not isinstance(left, exp.Column):
                left, right, op = right, left, _FLIPPED[op]
            c = _column(left, t, qualifiers)
            out.append(_Term(c, op, [_value(right, c)]))
        elif isinstance(node, exp.Between) and not node.args.get("symmetric"):
            c = _column(node.this, t, qualifiers)
            out.append(_Term(c, "between", [_value(node.args["low"], c), _value(node.args["high"], c)]))
        elif isinstance(node, exp.In) and node.expressions and not node.args.get("query") \
                and not node.args.get("unnest") and not node.args.get("field"):
            c = _column(node.this, t, qualifiers)
            out.append(_Term(c, "in", [_value(e, c) for e in node.expressions]))
        else:
            raise _NotHere
    return out


def _order(order: exp.Order | None, t: TableDef, qualifiers: set[str], names: list[str],
           columns: list[ColumnDef]) -> tuple[list[tuple[str, bool]], bool]:
    if order is None:
        return [], False
    keys: list[tuple[str, bool]] = []
    placements = set()
    for o in order.expressions:
        if not isinstance(o, exp.Ordered) or not isinstance(o.this, exp.Column):
            raise _NotHere
        name = node_name(o.this.this)
        if o.this.args.get("table") is None and name in names and columns[names.index(name)].name != name:
            raise _NotHere  # an output label, not the table's column of that name
        c = _column(o.this, t, qualifiers)
        _family(c)
        desc = bool(o.args.get("desc"))
        keys.append((c.name, desc))
        if not c.not_null:
            placements.add(bool(o.args.get("nulls_first")))
    if len(placements) > 1:
        raise _NotHere  # Arrow places the NULLs of every key alike
    return keys, placements.pop() if placements else False


def _count(node: exp.Expression | None) -> int | None:
    if node is None:
        return None
    value = node.args.get("expression")
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isascii() and value.this.isdigit():
        return int(value.this)
    raise _NotHere


# -- binding and reading ------------------------------------------------------------------------

def _bind(term: _Term, params: list[Any]) -> list[Any]:
    out = []
    family = term.column.type.pg.name
    for v in term.values:
        if isinstance(v, _Read):
            v = v.value
        elif isinstance(v, tuple):
            n = v[1]
            if not 1 <= n <= len(params):
                raise _NotHere  # Spark's path raises 42P02
            v = params[n - 1]
            if v is None:
                pass
            elif family in _INTS:
                if type(v) is not int:
                    raise _NotHere
            elif family in _TEXTS:
                if not isinstance(v, str):
                    raise _NotHere
            elif family == "bool":
                if not isinstance(v, bool):
                    raise _NotHere
            elif family == "date":
                if type(v) is not dt.date:
                    raise _NotHere
            elif family == "timestamp":
                if not isinstance(v, dt.datetime) or v.tzinfo is not None:
                    raise _NotHere
            elif not isinstance(v, dt.datetime) or v.tzinfo is None:  # timestamptz
                raise _NotHere
        if family in _INTS and v is not None and not _INTS[family][0] <= v <= _INTS[family][1]:
            raise _NotHere  # PostgreSQL compares across integer widths; Spark's path does it
        out.append(v)
    return out


_KERNELS = {"=": pc.equal, "<>": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
            ">=": pc.greater_equal}


def _mask(term: _Term, values: list[Any], column: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array | None:
    """Where ``term`` holds in ``column`` (NULL: it does not); None: nowhere."""
    if term.op == "null":
        return pc.is_null(column)
    if term.op == "notnull":
        return pc.is_valid(column)
    if term.op == "in":
        values = [v for v in values if v is not None]
        if not values:
            return None
        return pc.is_in(column, value_set=pa.array(values, type=column.type))
    if any(v is None for v in values):
        return None  # a comparison with NULL is never true
    scalars = [pa.scalar(v, type=column.type) for v in values]
    if term.op == "between":
        return pc.and_(pc.greater_equal(column, scalars[0]), pc.less_equal(column, scalars[1]))
    return _KERNELS[term.op](column, scalars[0])


def _text(term: _Term, values: list[Any]) -> str:
    """The term as EXPLAIN shows it."""
    name = term.column.name
    if term.op in ("null", "notnull"):
        return f"{name} IS {'NOT ' if term.op == 'notnull' else ''}NULL"
    shown = [_shown(v) for v in values]
    if term.op == "between":
        return f"{name} BETWEEN {shown[0]} AND {shown[1]}"
    if term.op == "in":
        return f"{name} IN ({', '.join(shown)})"
    return f"{name} {term.op} {shown[0]}"


def _shown(v: Any) -> str:
    """A bound value as a SQL literal for EXPLAIN."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return f"'{v.isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"'{v.isoformat()}'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def _excluded(op: str, keys: list[int], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Which files, whose column lies in [lo, hi] by their statistics, can hold no value for which
    ``op`` holds against ``keys`` (every value and bound as its :func:`_stat_key`)."""
    if op == "=":
        return (lo > keys[0]) | (hi < keys[0])
    if op == "<":
        return lo >= keys[0]
    if op == "<=":
        return lo > keys[0]
    if op == ">":
        return hi <= keys[0]
    if op == ">=":
        return hi < keys[0]
    if op == "between":
        return (lo > keys[1]) | (hi < keys[0])
    if op == "in":
        out = np.ones(len(lo), dtype=bool)
        for k in keys:
            out &= (lo > k) | (hi < k)
        return out
    return np.zeros(len(lo), dtype=bool)


_EPOCH = dt.datetime(1970, 1, 1)
_MICRO = dt.timedelta(microseconds=1)


def _stat_key(family: str, v: Any) -> int:
    """A value or statistics bound of a pruned column as an integer that orders alike: integers as
    they are, dates as ordinals, timestamps as microseconds of their UTC wall clock."""
    if family in _PRUNED_BY_MS_STATS:
        return (_utc_wall(v) - _EPOCH) // _MICRO
    if family == "date":
        return v.toordinal()
    return v


class _Bounds:
    """One column's statistics of a version's files, as arrays :func:`_excluded` compares at once:
    a lookup's pruning was a Python loop over every file (40% of a lookup on a table of 100
    files). Bounds a file lacks (or a timestamp's widened bound out of range) are not ``known``:
    such a file is never excluded."""

    __slots__ = ("lo", "hi", "known")

    def __init__(self, family: str, lows: list[Any], highs: list[Any]) -> None:
        n = len(lows)
        lo, hi, known = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        for i, (a, b) in enumerate(zip(lows, highs)):
            if a is None or b is None:
                continue
            try:
                if family in _PRUNED_BY_MS_STATS:
                    a, b = _utc_wall(a) - _STATS_SLACK, _utc_wall(b) + _STATS_SLACK
                lo[i], hi[i], known[i] = _stat_key(family, a), _stat_key(family, b), True
            except (TypeError, OverflowError, AttributeError):  # years 1 / 9999 widened: not excluded
                continue
        self.lo, self.hi, self.known = lo, hi, known


# The bounds of the versions' statistics lookups read lately, by the identity of their actions
# (kept with them, so an identity is not reused while its entry lives).
_BOUNDS: dict[tuple[int, str], tuple[Mapping[str, list[Any]], _Bounds]] = {}
_BOUNDS_KEPT = 256
_BOUNDS_LOCK = threading.Lock()  # the loop and worker threads add entries; eviction iterates


def _bounds(actions: Mapping[str, list[Any]], column: str, family: str) -> _Bounds | None:
    lo_name, hi_name = f"min.{column}", f"max.{column}"
    if lo_name not in actions or hi_name not in actions:
        return None
    key = (id(actions), column)
    kept = _BOUNDS.get(key)
    if kept is not None and kept[0] is actions:
        return kept[1]
    bounds = _Bounds(family, actions[lo_name], actions[hi_name])
    with _BOUNDS_LOCK:
        if len(_BOUNDS) >= _BOUNDS_KEPT:
            _BOUNDS.pop(next(iter(_BOUNDS)), None)
        _BOUNDS[key] = (actions, bounds)
    return bounds


@dataclass
class Plan:
    """A bound lookup and the files it reads."""

    lookup: Lookup
    snapshot: Snapshot
    files: list[str]
    rows: int  # rows in ``files`` (statistics)
    total_files: int
    terms: list[tuple[_Term, list[Any]]]  # the WHERE terms with their values
    listed: list[str] = field(default_factory=list)  # every file of the version, as its log names it
    # More rows than MAX_ROWS of a query with neither WHERE nor ORDER BY: its rows stream from the
    # files one after another (never all in memory, never kept in the cache).
    streaming: bool = False
    # Answered at once (answer_now): from what is in memory only; anything missing is _NotHere.
    at_once: bool = False


def bind(session: EngineSession, lookup: Lookup, params: list[Any]) -> Plan | None:
    """The files and filter of ``lookup`` with ``params``; None: too big here, or a parameter
    this path does not compare as PostgreSQL would (Spark runs the query)."""
    bound = _bound(lookup, params)
    if bound is None:
        return None
    with session.store.gate.reading():  # not halfway through another transaction's commits
        snap, actions = session.store.snapshot_with_stats(lookup.table.location)
    return _plan(lookup, bound, snap, actions)


def _utc_wall(v: Any) -> Any:
    """A datetime as naive UTC (statistics and values of one column compare alike whichever carries
    a zone: a timestamp column's wall clock is stored as UTC)."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return v


def _bound(lookup: Lookup, params: list[Any]) -> list[tuple[_Term, list[Any]]] | None:
    try:
        return [(term, _bind(term, params)) for term in lookup.terms]
    except _NotHere:
        return None


def _plan(lookup: Lookup, bound: list[tuple[_Term, list[Any]]], snap: Snapshot,
          actions: Mapping[str, list[Any]]) -> Plan | None:
    paths, counts = actions["path"], actions["num_records"]
    keep: np.ndarray | None = None
    for term, values in bound:
        family = term.column.type.pg.name
        if family not in _PRUNED_BY_STATS and family not in _PRUNED_BY_MS_STATS:
            continue
        if any(v is None for v in values):
            continue  # a comparison with NULL excludes by its mask, not by statistics
        if family in _PRUNED_BY_MS_STATS and not all(isinstance(v, dt.datetime) for v in values):
            continue
        bounds = _bounds(actions, term.column.name, family)
        if bounds is None:
            continue
        excluded = bounds.known & _excluded(term.op, [_stat_key(family, v) for v in values], bounds.lo, bounds.hi)
        keep = ~excluded if keep is None else keep & ~excluded
    kept = range(len(paths)) if keep is None else np.flatnonzero(keep).tolist()
    files = [action_path(lookup.table.location, paths[i]) for i in kept]
    kept_counts = [counts[i] for i in kept]
    if any(n is None for n in kept_counts):
        return None
    rows = sum(kept_counts)
    streaming = rows > MAX_ROWS
    if streaming and (lookup.terms or lookup.order):
        return None  # a filter or sort of that many rows: Spark's (its cores, its pushdown)
    return Plan(lookup, snap, files, rows, len(paths), bound, paths, streaming)


def answer_now(session: EngineSession, sql: str, params: list[Any], info: SessionInfo) -> RowStream | None:
    """The lookup kept for the text ``sql`` answered at once, when that needs neither a wait nor
    a read: the commit gate open, the table's current statistics kept, every column the read
    needs decoded in memory for each of its files (and their key index built). None: run it as
    any statement (a worker thread, which may wait and read files). The answer is
    :func:`bind` then :func:`run`'s; the gateway may compute it on its event loop."""
    lookup = kept(session, sql, info)
    if lookup is None:
        return None
    bound = _bound(lookup, params)
    if bound is None:
        return None
    with session.store.gate.reading_now() as entered:
        if not entered:
            return None
        stats = session.store.current_stats(lookup.table.location)
        if stats is None:
            return None
        plan = _plan(lookup, bound, *stats)
    if plan is None or plan.streaming or (plan.rows > NOW_ROWS and _key_term(lookup) is None):
        return None
    plan.at_once = True
    try:
        return run(plan)
    except _NotHere:  # a file's columns or key index not in memory (never read, or pushed out)
        return None


# Rows a read answered at once may filter without a key index (milliseconds of Arrow kernels at
# most: the event loop computes it, and every other client waits meanwhile).
NOW_ROWS = 262_144


def _needed(lk: Lookup, wanted: list[str]) -> list[str]:
    return list(dict.fromkeys(wanted + [t.column.name for t in lk.terms]))


def _run_columns(lk: Lookup) -> list[str]:
    return list(dict.fromkeys([c.name for c in lk.columns] + [k for k, _ in lk.order]))


def rows(plan: Plan) -> pa.Table:
    """``plan``'s rows in storage form, every column of the table (an UPDATE / DELETE's rows)."""
    return _read(plan, [c.name for c in plan.lookup.table.columns])


def run(plan: Plan) -> RowStream:
    """Read, filter, order and cut ``plan``'s rows; the result as the Spark path shapes it."""
    lk = plan.lookup
    fields = lk.fields
    if plan.streaming:
        return RowStream(fields, convert_batches(_stream(plan), fields), command="SELECT")
    table = _read(plan, _run_columns(lk))
    out = pa.Table.from_arrays([table.column(c.name) for c in lk.columns], names=lk.names)
    return RowStream(fields, convert_batches(iter(out.to_batches()), fields), command="SELECT", size=out.num_rows)


# -- key index -------------------------------------------------------------------------------------

_RANGE_OPS = ("=", "in", "between", "<", "<=", ">", ">=")


def _indexed_rows(term: _Term, values: list[Any], index: KeyIndex) -> np.ndarray:
    """Row numbers (ascending) of the file where ``term`` may hold, from its key index."""
    sorted_values = index.values
    if any(v is None for v in values) and term.op != "in":
        return np.empty(0, dtype=np.int64)
    if term.op in ("=", "in"):
        return index.rows_of([v for v in values if v is not None])
    lo, hi = 0, len(sorted_values)
    if term.op == "between":
        lo, hi = np.searchsorted(sorted_values, values[0], "left"), np.searchsorted(sorted_values, values[1], "right")
    elif term.op in (">", ">="):
        lo = np.searchsorted(sorted_values, values[0], "right" if term.op == ">" else "left")
    else:
        hi = np.searchsorted(sorted_values, values[0], "left" if term.op == "<" else "right")
    return np.sort(index.rows[lo:hi]) if hi > lo else np.empty(0, dtype=np.int64)


def _key_term(lk: Lookup) -> _Term | None:
    """The term a key index narrows: on the first column of the table's primary key or its time
    index when that is an integer column (the columns lookups by key name)."""
    t = lk.table
    keys = {n for n in (t.primary_key[:1] + ([t.time_index] if t.time_index else []))}
    for term in lk.terms:
        if term.op in _RANGE_OPS and term.column.name in keys and term.column.type.pg.name in _INTS:
            return term
    return None


def _read(plan: Plan, wanted: list[str]) -> pa.Table:
    lk = plan.lookup
    needed = _needed(lk, wanted)
    narrowing = _key_term(lk)
    schema = None if plan.at_once else storage_schema(lk.table.columns)
    parts = []
    for path in plan.files:
        if plan.at_once:
            part = kept_columns(path, needed)
            if part is None:
                raise _NotHere
        else:
            if not columns_kept(path, needed):  # a cold table: the other files are read meanwhile
                prefetch([action_path(lk.table.location, p) for p in plan.listed], schema, needed,
                         narrowing.column.name if narrowing is not None else None)
            part = file_columns(path, schema, needed)
        terms = plan.terms
        if narrowing is not None:  # exactly the rows where the narrowing term holds: the others are checked below
            values = next(v for term, v in plan.terms if term is narrowing)
            if plan.at_once:
                index = kept_key_index(path, narrowing.column.name)
                if index is None:
                    raise _NotHere
            else:
                index = key_index(path, narrowing.column.name, part.column(narrowing.column.name))
            found = _indexed_rows(narrowing, values, index)
            if not len(found):
                continue
            first, last = int(found[0]), int(found[-1])
            if last - first + 1 == len(found):  # one row, or a run of them: a zero-copy slice (a take is ~60 us)
                part = part.slice(first, len(found))
            else:
                part = part.take(found)
            terms = [(term, v) for term, v in terms if term is not narrowing]
        keep = None
        for term, values in terms:
            mask = _mask(term, values, part.column(term.column.name))
            if mask is None:
                keep = None
                part = part.slice(0, 0)
                break
            keep = mask if keep is None else pc.and_(keep, mask)
        if keep is not None:
            part = part.filter(keep)  # NULL: not kept
        parts.append(part.select(wanted))
    if len(parts) == 1:
        table = parts[0]
    elif parts:
        table = pa.concat_tables(parts)
    else:
        table = storage_schema(lk.table.columns).empty_table().select(wanted)
    if lk.order:
        placement = "at_start" if lk.nulls_first else "at_end"
        table = table.sort_by([(k, "descending" if d else "ascending", placement) for k, d in lk.order])
    if lk.offset or lk.limit is not None:
        table = table.slice(lk.offset, lk.limit)
    return table


def _stream(plan: Plan) -> Iterator[pa.RecordBatch]:
    """A streaming plan's rows, file after file (LIMIT / OFFSET across them): the columns a file
    has in the cache, else read from it without keeping them (a scan of everything would push
    the lookups' files out)."""
    lk = plan.lookup
    schema = storage_schema(lk.table.columns)
    wanted = [c.name for c in lk.columns]
    skip, left = lk.offset, lk.limit
    for path in plan.files:
        if left is not None and left <= 0:
            return
        part = kept_columns(path, wanted)
        if part is None:
            part = read_file_columns(path, schema, wanted)
        if skip:
            cut = min(skip, part.num_rows)
            part, skip = part.slice(cut), skip - cut
        if left is not None:
            part = part.slice(0, left)
            left -= part.num_rows
        if part.num_rows:
            out = pa.Table.from_arrays([part.column(c.name) for c in lk.columns], names=lk.names)
            yield from out.to_batches(max_chunksize=_STREAM_BATCH_ROWS)


_STREAM_BATCH_ROWS = 65_536


def explain(plan: Plan) -> list[str]:
    lk = plan.lookup
    lines = [f"Interactive read of {lk.table.schema}.{lk.table.name} (Delta version {plan.snapshot.version}, "
             f"in the gateway with Arrow)",
             f"  Files: {len(plan.files)} of {plan.total_files} after statistics, {plan.rows} rows"
             + (" (streamed file by file)" if plan.streaming else "")]
    if plan.terms:
        lines.append("  Filter: " + " AND ".join(_text(term, values) for term, values in plan.terms))
    if lk.order:
        lines.append("  Sort: " + ", ".join(f"{k}{' DESC' if d else ''}" for k, d in lk.order)
                     + (" NULLS FIRST" if lk.nulls_first else ""))
    if lk.limit is not None or lk.offset:
        lines.append(f"  Limit: {lk.limit if lk.limit is not None else 'ALL'} offset {lk.offset}")
    # the files by their names inside the table's folder: a client learns no server path
    lines += [f"    {os.path.relpath(f, lk.table.location)}" for f in plan.files]
    return lines


def param_types(lookup: Lookup) -> dict[int, Any]:
    """$n -> the type of the column it is compared with (Describe's parameter types)."""
    return {v[1]: term.column.type for term in lookup.terms for v in term.values if isinstance(v, tuple)}


__all__ = ["Lookup", "MAX_ROWS", "Plan", "SETTING", "answer_now", "bind", "enabled", "explain", "kept", "param_types",
           "rows", "run", "shape"]
