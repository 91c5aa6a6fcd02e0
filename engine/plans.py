"""The plan cache of the Spark path: a query's translation kept per session, its parameters bound.

A statement Spark runs is translated (parsed, resolved against the catalog, type-annotated and
rewritten into Spark SQL: :func:`engine.translate.translate_query`) at every Execute, with its
parameters inlined as literals. Drivers repeat their statements, prepared (psycopg, asyncpg,
JDBC) or not, so a session keeps the Spark SQL of a query it ran before with a marker in place of
each bound parameter, and runs it again with the new values written into the markers: the
statement is translated again only when the catalog, the session's settings or role, a table's
version, or the shape of a parameter changed. (Spark's own parameter markers, ``spark.sql(text,
args=...)``, fail with UNBOUND_SQL_PARAMETER once Delta Lake's SQL extension is installed: the
values are written into the kept Spark SQL as the translation would write them, and Spark parses
that text as it parses any statement; it keeps no plans of SQL text.)

Which parameters are bound, and which are part of the key. The translator reads literal values
in many places (a string literal is parsed in its context's type, LIMIT -1 is an error before any
row, an integer's type follows its value ...), so a translation made with one value is not in
general the translation of another. A parameter is *bound* only where the translator writes the
value as it is: an operand of a comparison, a bound of BETWEEN, an item of IN or the pattern of
[I]LIKE whose other side is a column (``WHERE id = $1``, ``ts BETWEEN $1 AND $2``, ``k IN ($1,
$2)``, ``name LIKE $1``), cast or not, and LIMIT / OFFSET / FETCH FIRST counts. Every other
parameter (a function's argument, an operand of arithmetic ...) is part of the cache key with its
value: its statement is translated once per value, as before, and is still exact.

Even so a bound parameter's translation is checked before it is kept: the statement is
translated with two sentinel values of the parameter's shape, chosen to differ in everything the
translator could inspect (sign, magnitude, quotes, backslashes, LIKE wildcards, spaces at either
end, non-ASCII text), and the plan is kept only when the current value's translation and both
sentinels' give the same Spark SQL once each value is replaced by its marker. A translation that
read the clock ('today'::date ...) or a sequence's state is never kept.

``SET plan_cache_mode = force_custom_plan`` translates every Execute, as PostgreSQL plans each
one for its values; ``auto`` (the default) and ``force_generic_plan`` keep plans. A plan is
built on a statement's second run of one key: a statement run once costs no extra translation.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from catalog.store import TableDef
from engine.resolver import param_index
from engine.translate import TranslatedQuery, param_literal
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from engine.executor import EngineSession
    from engine.resolver import StatementResolver

SETTING = "plan_cache_mode"
MAX_PLANS = 64  # per session

_INT4, _INT8, _FLOAT, _TEXT, _BYTES, _TS, _TSTZ, _DATE = "int4", "int8", "float", "text", "bytes", "ts", "tstz", "date"

# Two values of each shape that differ in everything a translation might look at; each parameter
# gets its own pair (:func:`_sentinels`), so no two bound parameters share a value.
_PI = "31415926535897932384626433832795028841" * 2
_E = "27182818284590452353602874713526624977" * 2


def _shape(value: Any) -> Any:
    """The shape of a parameter value a marker can take (None: it cannot; its value is keyed)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return _INT4 if -(2**31) <= value < 2**31 else _INT8 if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        finite = math.isfinite(value) and not (value == 0 and math.copysign(1.0, value) < 0)
        return _FLOAT if finite else None
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        cast = param_literal(value)
        return ("numeric", cast.to.sql(dialect="spark")) if isinstance(cast, exp.Cast) else None
    if isinstance(value, str):
        return _TEXT
    if isinstance(value, (bytes, bytearray)):
        return _BYTES
    if isinstance(value, dt.datetime):
        return _TSTZ if value.tzinfo is not None else _TS
    if isinstance(value, dt.date):
        return _DATE
    return None


def _sentinels(shape: Any, index: int) -> tuple[Any, Any] | None:
    """The two sentinel values of parameter ``index`` (0-based) of ``shape``, or None."""
    if shape == _INT4:
        return 1357924680 - 7919 * index, -1029384756 + 7919 * index
    if shape == _INT8:
        return 8070450532247928811 - 7919 * index, -6917529027641081857 + 7919 * index
    if shape == _FLOAT:
        return float(f"1.2345678{index:07d}e300"), float(f"-9.8765432{index:07d}e-300")
    if shape == _TEXT:
        return f"tgpAqzx{index}", f" tgpB{index}'\\%_\u00e9\"\n\u4e2d "
    if shape == _BYTES:
        return b"\x01\x02tgpA" + str(index).encode(), b"\xff\x00 '\\tgpB" + str(index).encode()
    if shape in (_TS, _TSTZ, _DATE):
        zone = dt.timezone.utc if shape == _TSTZ else None
        a = dt.datetime(2001, 2, 3, 4, 5, 6, 789012, tzinfo=zone) + dt.timedelta(days=index, seconds=index)
        b = dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=zone) - dt.timedelta(days=index, seconds=index)
        return (a.date(), b.date()) if shape == _DATE else (a, b)
    m = re.fullmatch(r"DECIMAL\((\d+), (\d+)\)", shape[1]) if isinstance(shape, tuple) else None
    if m is None:
        return None
    precision, scale = int(m.group(1)), int(m.group(2))
    whole = precision - scale
    if whole < 1:
        return None

    def number(digits: str, sign: str) -> Decimal:
        digits = digits[index % 38:]
        return Decimal(sign + digits[:whole] + ("." + digits[whole:precision] if scale else ""))

    pair = (number(_PI, ""), number(_E, "-"))
    return pair if all(_shape(v) == shape for v in pair) else None


def _render(value: Any) -> str:
    return param_literal(value).sql(dialect="spark", identify=True, comments=False)


def _marker(index: int) -> str:
    """A bound parameter's place in a kept plan's Spark SQL: NUL never occurs in a statement's text
    (the protocol's strings end at NUL), so no literal of the query can look like it."""
    return f"\x00{index}\x00"


_MARKED = re.compile("\x00(\\d+)\x00")


def _replace(spark_sql: str, values: dict[int, Any]) -> str:
    """``spark_sql`` with each bound value's literal replaced by its marker (whole tokens only)."""
    for index, value in values.items():
        text = _render(value)
        pattern = re.escape(text)
        if not text.startswith("'"):
            pattern = rf"(?<![\w.]){pattern}(?![\w.])"
        spark_sql = re.sub(pattern, lambda _m, i=index: _marker(i), spark_sql)
    return spark_sql


def _bind(template: str, params: Sequence[Any]) -> str:
    """A kept plan's Spark SQL with each marker replaced by its parameter's literal, written as
    the translation writes it (engine.translate.param_literal)."""
    return _MARKED.sub(lambda m: _render(params[int(m.group(1))]), template)


@dataclass
class Plan:
    """A kept translation: Spark SQL with a marker in place of each bound parameter."""

    template: str
    output_names: list[str]
    output_types: list[ColumnType | None]
    operands: dict[int, tuple[int, ...]]
    views: dict[str, tuple[TableDef, str]]  # table location -> (its definition, the view it read)
    integer_ops: Callable[[], dict[str, str]] = dict  # of the template (rendered once: functools.cache)

    def query(self, params: Sequence[Any]) -> TranslatedQuery:
        """The translation of this plan's statement with ``params``."""
        def integer_ops() -> dict[str, str]:
            return {_bind(text, params): word for text, word in self.integer_ops().items()}

        return TranslatedQuery(_bind(self.template, params), self.output_names, self.output_types, [],
                               self.operands, integer_ops)


class PlanCache:
    """One session's kept plans (at most :data:`MAX_PLANS`, least recently used first out)."""

    def __init__(self) -> None:
        self._plans: OrderedDict[tuple, Plan | None] = OrderedDict()  # None: tried, not keepable
        self._seen: OrderedDict[tuple, int] = OrderedDict()  # misses per key

    def clear(self) -> None:
        self._plans.clear()
        self._seen.clear()

    def key(self, session: EngineSession, sql: str, tree: exp.Expression, params: Sequence[Any],
            info: SessionInfo) -> tuple | None:
        """The key of ``sql`` run now with ``params``, or None when no plan may be kept for it."""
        if info.settings.get(SETTING, "auto") == "force_custom_plan":
            return None
        if session._pending or session.catalog_in_block is not None or tree.args.get("locks"):
            return None  # a block's own writes or DDL are read through the block's views
        bindable = _bindable(tree)
        parts = []
        for i, value in enumerate(params):
            shape = _shape(value) if i in bindable else None
            if shape is not None and _sentinels(shape, i) is not None:
                parts.append(("bound", shape))
            else:
                if isinstance(value, (bytearray, memoryview)):
                    value = bytes(value)
                try:
                    hash(value)
                except TypeError:
                    value = repr(value)
                if isinstance(value, (str, bytes)) and len(value) > 1024:
                    return None  # a long value in the key of every run: not kept
                parts.append(("value", type(value).__name__, value))
        return (sql, session.catalog.version, info.user, info.superuser, info.internal, info.database,
                info.application_name, info.backend_pid, tuple(sorted(info.settings.items())), tuple(parts))

    def get(self, session: EngineSession, key: tuple, resolver: StatementResolver) -> Plan | None:
        """The plan kept for ``key`` if every table it reads is still at the version it read."""
        plan = self._plans.get(key)
        if plan is None:
            return None
        for table, view in plan.views.values():
            if session.table_view(table, resolver) != view:  # a newer commit: translate again
                del self._plans[key]
                return None
        self._plans.move_to_end(key)
        return plan

    def learn(self, session: EngineSession, key: tuple, tree: exp.Expression, params: Sequence[Any],
              tq: TranslatedQuery, resolver: StatementResolver, translate: Callable[..., TranslatedQuery],
              clock_read: bool) -> None:
        """After a miss whose translation was ``tq`` (``clock_read``: it read a value from the clock):
        on the key's second miss, keep a plan if the translation is the same for other values of
        its bound parameters."""
        if key in self._plans or resolver.reads_state:
            return
        seen = self._seen.pop(key, 0) + 1
        if seen < 2:
            self._seen[key] = seen
            while len(self._seen) > 4 * MAX_PLANS:
                self._seen.popitem(last=False)
            return
        bound = {i for i, part in enumerate(key[-1]) if part[0] == "bound"}
        plan = None if clock_read else _build(session, tree, params, bound, tq, resolver, translate)
        if plan is _AGAIN:  # a commit landed while the plan was checked: check at a later run
            self._seen[key] = 1
            return
        self._remember(key, plan)

    def _remember(self, key: tuple, plan: Plan | None) -> None:
        self._plans[key] = plan
        while len(self._plans) > MAX_PLANS:
            self._plans.popitem(last=False)


_AGAIN: Any = object()  # :func:`_build`: not known yet


def _build(session: EngineSession, tree: exp.Expression, params: Sequence[Any], bound: set[int],
           tq: TranslatedQuery, resolver: StatementResolver,
           translate: Callable[..., TranslatedQuery]) -> Plan | None:
    """The plan of ``tree`` for the key of ``params`` whose parameters ``bound`` (0-based) take a
    marker (:meth:`PlanCache.key`; this run translated as ``tq``), or None when
    its translation depends on the values of its bound parameters; :data:`_AGAIN` when a table
    got a newer version while it was checked (the sentinels' translations read that one)."""
    read = {location: session._views[location].view_name for location in resolver.tables
            if location in session._views}
    template, ops = tq.spark_sql, tq.integer_ops
    if "\x00" in template:
        return None  # (no statement holds NUL, nor any value: the markers could not be told apart)
    if bound:
        templates: list[str] = []
        sentinel_ops: list[Callable[[], dict[str, str]]] = []
        for which in (0, 1):
            values = list(params)
            for i in bound:
                values[i] = _sentinels(_shape(params[i]), i)[which]
            try:
                other = translate(tree, values)
            except SqlError:
                return None
            templates.append(_replace(other.spark_sql, {i: values[i] for i in bound}))
            sentinel_ops.append(other.integer_ops)
        if any(session._views[location].view_name != view for location, view in read.items()):
            return _AGAIN
        template = templates[0]
        if templates[1] != template or any(_marker(i) not in template for i in bound):
            return None  # a bound value the translation read, or did not keep as one value
        if _bind(template, params) != tq.spark_sql:
            return None  # this run's values translate otherwise
        first = {i: _sentinels(_shape(params[i]), i)[0] for i in bound}
        ops = lambda: {_replace(text, first): word for text, word in sentinel_ops[0]().items()}  # noqa: E731
    if set(read) != set(resolver.tables) or any(location not in resolver.snapshots for location in read):
        return None
    views = {location: (table, read[location]) for location, table in resolver.tables.items()}
    return Plan(template, tq.output_names, tq.output_types, tq.operands, views, functools.cache(ops))


def _bindable(tree: exp.Expression) -> set[int]:
    """0-based indexes of the parameters whose every use is in a place that takes a value as it
    is (:func:`_bindable_place`)."""
    good: set[int] = set()
    bad: set[int] = set()
    for node in tree.find_all(exp.Parameter, exp.Placeholder):
        index = param_index(node)
        if index is None:
            continue
        (good if _bindable_place(node) else bad).add(index - 1)
    return good - bad


def _value_of(node: exp.Expression) -> exp.Expression:
    """``node`` with the parentheses and casts around it: ``($1)::bigint``."""
    while isinstance(node.parent, (exp.Paren, exp.Cast)) and node.arg_key == "this":
        node = node.parent
    return node


def _is_column(node: exp.Expression | None) -> bool:
    while isinstance(node, (exp.Paren, exp.Cast)):
        node = node.this
    return isinstance(node, exp.Column) and not isinstance(node.this, exp.Star)


def _bindable_place(node: exp.Expression) -> bool:
    """Whether the parameter ``node`` is compared with a column (``= <> < <= > >=``, IS [NOT]
    DISTINCT FROM, a bound of BETWEEN, an item of IN, the pattern of [I]LIKE), or counts rows (LIMIT,
    OFFSET, FETCH FIRST): places where the translator writes the value as it is and PostgreSQL's
    answer depends on the value, not on how it was written. (A NULL LIMIT is no limit: NULL is
    always part of the key, never bound.)"""
    value = _value_of(node)
    parent = value.parent
    if isinstance(parent, (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ)):
        other = parent.expression if value.arg_key == "this" else parent.this
        return _is_column(other)
    if isinstance(parent, exp.Between):
        return value.arg_key in ("low", "high") and _is_column(parent.this)
    if isinstance(parent, exp.In):
        return value.arg_key == "expressions" and _is_column(parent.this)
    if isinstance(parent, (exp.Like, exp.ILike)):
        return value.arg_key == "expression" and _is_column(parent.this)
    if isinstance(parent, (exp.Limit, exp.Offset)):
        return value.arg_key == "expression"
    if isinstance(parent, exp.Fetch):
        return value.arg_key == "count"
    return False
