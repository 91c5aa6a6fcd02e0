"""PostgreSQL-dialect queries -> Spark SQL that returns what PostgreSQL returns.

The pipeline works on sqlglot ASTs:

1. bind ``$n`` parameters as typed literals, rewrite PostgreSQL-only relations (top-level
   ``VALUES``, ``generate_series``/``unnest`` in FROM) and replace table references with the
   Spark temp views the resolver names (SQL views are inlined as subqueries);
2. ``qualify`` + ``annotate_types`` against a schema built from the resolver's columns, so
   stars are expanded, columns are checked (42703) and every expression has a type;
3. compute the result column names PostgreSQL would give (``count``, ``?column?``, ...) and
   the PostgreSQL types Spark cannot express (varchar(n), json, numeric(p,s), ...);
4. rewrite the semantics Spark does differently (integer division, NULL ordering, casts,
   interval literals, extract, date_bin, avg(int), regexp flags, ...), then generate Spark SQL.

Value conventions shared with the executor (tidegate's storage forms): ``time`` is a bigint of
microseconds since midnight (Spark has no TIME type); intervals are Spark day-time intervals
where possible, and a result interval with months is sent as PostgreSQL interval text (Spark
cannot hand year-month/calendar intervals to Arrow) with output type ``interval``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import itertools
import logging
import math
import operator
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Protocol

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from engine.functions import (
    PgInterval,
    format_interval,
    parse_interval,
    pg_regex_flags,
    similar_to_regex,
    to_char_format,
)
from tidegate import pg_keywords
from catalog.store import DATABASE_NAME
from engine import pgfunctions, pgoperators
from engine.errors import RAISED_QUOTE
from tidegate import dialect, pgvalues, sqllex
from tidegate.dialect import ARITHMETIC as _ARITHMETIC
from tidegate.dialect import FLOAT_TYPES as _FLOAT_TYPES
from tidegate.dialect import INTEGER_TYPES as _INTEGER_TYPES
from tidegate.dialect import NUMERIC_OPERAND_TYPES as _NUMERIC_OPERAND_TYPES
from tidegate.dialect import NUMERIC_CONSTANT, Tidegate, negated_literal
from tidegate.dialect import parse as parse_sql
from tidegate.errors import SqlError
from tidegate.pgtypes import (
    BOOL,
    BPCHAR,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    NUMERIC,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    VARCHAR,
    TYPES_BY_NAME,
    ColumnType,
)

# sqlglot logs a warning whenever it falls back to exp.Command (EXPLAIN, SET, ...); the
# translator handles those itself.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

__all__ = [
    "ResolvedRelation",
    "TableResolver",
    "TranslatedQuery",
    "translate_expression",
    "translate_merge_parts",
    "translate_row_expressions",
    "translate_query",
    "DIALECT",
]


DIALECT = Tidegate



# --------------------------------------------------------------------------------------------
# Public API types


@dataclass
class TranslatedQuery:
    spark_sql: str
    output_names: list[str]
    output_types: list[ColumnType | None]
    tables: list[tuple[str, str]] = field(default_factory=list)
    # output column -> the trailing hidden columns holding its exact operands (ColumnType.exact_op)
    operands: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # Spark SQL text of each integer +, -, *, unary minus and abs -> its PostgreSQL type word:
    # Spark's overflow error names neither (engine.errors.map_spark_error). Computed when an error
    # asks (rendering every operation cost a fifth of a translation with 60 of them).
    integer_ops: Callable[[], dict[str, str]] = dict


@dataclass
class ResolvedRelation:
    schema: str
    name: str
    view_name: str
    columns: list[tuple[str, ColumnType]]
    view_sql: str | None = None
    owner: str | None = None  # a view's owner: its own reads are checked as that role


class TableResolver(Protocol):
    def resolve(self, schema: str | None, name: str) -> ResolvedRelation: ...

    def view_scope(self, rel: ResolvedRelation) -> AbstractContextManager[None]:
        """Resolve the relations inside view ``rel`` (with its owner's privileges)."""
        ...


# --------------------------------------------------------------------------------------------
# Parsing


def _schema_key(column: str) -> str:
    """A column's key in the sqlglot schema: sqlglot folds unquoted keys to lower case, so a
    column whose name has upper case (created as "Host" or `Host`) is keyed quoted, and only
    the quoted reference "Host" finds it, as in PostgreSQL."""
    return column if column == column.lower() else '"' + column.replace('"', '""') + '"'


# --------------------------------------------------------------------------------------------
# Types: PostgreSQL ColumnType <-> sqlglot DataType


_DISPLAY_SCALE_ONLY = 0


def _sqlglot_type(ct: ColumnType) -> str:
    """The sqlglot type string a column of ``ct`` is annotated with during translation."""
    if ct.is_array:
        return f"ARRAY<{_sqlglot_type(ct.element)}>"
    name = ct.pg.name
    if name == "numeric":
        if ct.precision is not None:
            return f"DECIMAL({ct.precision}, {ct.scale or 0})"
        # Unconstrained numeric with a known display scale (e.g. a CREATE TABLE AS column made from
        # ``salary * 2``): precision 0, which PostgreSQL never allows, marks "no precision, scale s".
        return f"DECIMAL({_DISPLAY_SCALE_ONLY}, {ct.scale})" if ct.scale is not None else "DECIMAL"
    if name == "varchar":
        return f"VARCHAR({ct.length})" if ct.length is not None else "VARCHAR"
    if name == "bpchar":
        return f"CHAR({ct.length or 1})"
    return {
        "bool": "BOOLEAN",
        "int2": "SMALLINT",
        "int4": "INT",
        "int8": "BIGINT",
        "oid": "BIGINT",
        "float4": "REAL",
        "float8": "DOUBLE",
        "text": "TEXT",
        "name": "TEXT",
        "char": "TEXT",
        "bytea": "VARBINARY",
        "date": "DATE",
        "time": "TIME",
        "timestamp": "TIMESTAMP",
        "timestamptz": "TIMESTAMPTZ",
        "interval": "INTERVAL",
        "json": "JSON",
        "jsonb": "JSONB",
        "uuid": "UUID",
    }.get(name, "TEXT")


_T = exp.DataType.Type
# (digits, scale) of the integer types' widest values, as a decimal's shape
_INTEGER_DIGITS = {_T.TINYINT: (3, 0), _T.SMALLINT: (5, 0), _T.INT: (10, 0), _T.BIGINT: (19, 0)}


def _null_when_empty(values: exp.Expression) -> exp.Expression:
    """array_agg's result: NULL over no rows, as PostgreSQL's (Spark collects an empty array).
    Spark computes the one collecting aggregate the two copies share once."""
    return exp.If(this=exp.GT(this=_func("size", values.copy()), expression=exp.Literal.number(0)),
                  true=values, false=exp.Null())


def _aggregate_value(arg: exp.Expression) -> exp.Expression:
    """The value an aggregate's argument aggregates: x of ``DISTINCT x``."""
    return arg.expressions[0] if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1 else arg


def _cast_aggregated(node: exp.Expression, spark_type: str) -> None:
    """Cast the argument of aggregate ``node`` (``sum(DISTINCT x)``: the values x, as DISTINCT
    of the cast values is DISTINCT of the values for the integer and decimal casts used here)."""
    arg = node.this
    if isinstance(arg, exp.Distinct):
        arg.set("expressions", [_cast(e, spark_type) for e in arg.expressions])
    else:
        node.set("this", _cast(arg, spark_type))
_PG_TYPE_NAME = "pg_type_name"  # meta: the PostgreSQL type an operator's result has (engine.pgoperators)
# PostgreSQL's result types of arithmetic with a time operand (engine.pgoperators names them)
_TIME_ARITHMETIC_TYPES = {pgoperators.TIME: "TIME", pgoperators.INTERVAL: "INTERVAL",
                          pgoperators.TIMESTAMP: "TIMESTAMP", pgoperators.TIMESTAMPTZ: "TIMESTAMPTZ"}
# Aggregates sqlglot leaves as plain calls: PostgreSQL's (bool_and, every...) and the Spark ones
# the translator writes for them (array_agg becomes collect_list): the grouping check sees them.
_AGGREGATE_CALLS = frozenset({
    "bool_and", "bool_or", "every", "bit_and", "bit_or", "bit_xor", "json_agg", "jsonb_agg", "json_object_agg",
    "jsonb_object_agg", "string_agg", "array_agg", "mode", "regr_count", "regr_sxx", "regr_syy", "regr_sxy",
    "regr_avgx", "regr_avgy", "regr_r2", "regr_slope", "regr_intercept", "covar_pop", "covar_samp", "corr",
    "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "xmlagg",
    "collect_list", "collect_set", "percentile", "percentile_approx", "count_if", "max_by", "min_by",
    "any_value", "first", "last", "listagg", "array_union_agg",
})
# raise_error messages the translator writes carry PostgreSQL's SQLSTATE (engine/errors.py reads it)
_RAISED_PREFIX = "tidegate-sqlstate:"
_TEMPORAL_TYPES = {_T.DATE, _T.TIME, _T.TIMETZ, _T.TIMESTAMP, _T.TIMESTAMPTZ, _T.TIMESTAMPLTZ, _T.TIMESTAMPNTZ,
                   _T.DATETIME, _T.INTERVAL, _T.UNKNOWN, None}
_STRING_TYPES = {_T.TEXT, _T.VARCHAR, _T.CHAR, _T.NCHAR, _T.NVARCHAR, _T.JSON, _T.JSONB, _T.UUID}
_NTZ_TYPES = {_T.TIMESTAMP, _T.TIMESTAMPNTZ, _T.DATETIME}
_TZ_TYPES = {_T.TIMESTAMPTZ, _T.TIMESTAMPLTZ}
_EPOCH_NTZ = "TIMESTAMP_NTZ '1970-01-01 00:00:00'"


def _ntz_micros(e: exp.Expression) -> exp.Expression:
    """Microseconds of a timestamp-without-time-zone since 1970-01-01 00:00, read as wall time.

    ``unix_micros(CAST(ntz AS TIMESTAMP))`` would read it in the Spark session's time zone, which
    follows the client's TimeZone, and Spark's timestampdiff on TIMESTAMP_NTZ moves a wall time
    in a DST gap of that zone; its date and clock fields are free of any zone."""
    def scaled(value: exp.Expression, factor: int) -> exp.Expression:
        return exp.Mul(this=_cast(value, "BIGINT"), expression=exp.Literal.number(factor))

    day = scaled(_func("unix_date", _cast(e.copy(), "DATE")), 86_400_000_000)
    hours = scaled(_func("hour", e.copy()), 3_600_000_000)
    minutes = scaled(_func("minute", e.copy()), 60_000_000)
    seconds = _cast(exp.Mul(this=exp.Extract(this=exp.var("SECOND"), expression=e.copy()),
                            expression=exp.Literal.number(1_000_000)), "BIGINT")
    return exp.Paren(this=exp.Add(this=exp.Add(this=exp.Add(this=day, expression=hours),
                                               expression=minutes), expression=seconds))


_MICROS_PER = {"microsecond": 1, "millisecond": 1_000, "second": 1_000_000, "minute": 60_000_000,
               "hour": 3_600_000_000, "day": 86_400_000_000}


def _ntz_to_tz(value: exp.Expression) -> exp.Expression:
    """timestamp -> timestamptz in the session zone (Spark's session zone is the client's). A wall
    time a DST fall-back repeats takes the offset after the transition, as in PostgreSQL (Java
    takes the earlier one): when the instant an hour later still reads as the same wall time, that
    later instant is the answer. (A wall time in a spring-forward gap moves forward in both.)"""
    first = _cast(value.copy(), "TIMESTAMP")
    later = exp.Add(this=first.copy(), expression=exp.Interval(this=_string("1"), unit=exp.var("HOUR")))
    repeated = exp.EQ(this=_cast(later.copy(), "TIMESTAMP_NTZ"), expression=_cast(value.copy(), "TIMESTAMP_NTZ"))
    return exp.If(this=repeated, true=later, false=first)


def _ntz_trunc(unit: str, value: exp.Expression) -> exp.Expression:
    """date_trunc of a timestamp without time zone, free of any zone: Spark's date_trunc reads
    it in the session zone, so a wall time in that zone's DST gap moved an hour
    ('2024-03-10 02:30' to 03:00 in New York)."""
    micros = _ntz_micros(value)
    if unit in _MICROS_PER or unit == "week":
        size = exp.Literal.number(_MICROS_PER.get(unit, _MICROS_PER["day"]))
        start = exp.Sub(this=micros, expression=_func("pmod", micros.copy(), size))
        if unit == "week":  # back to Monday
            monday = exp.Mod(this=exp.paren(exp.Add(this=_func("dayofweek", value.copy()), expression=exp.Literal.number(5))),
                             expression=exp.Literal.number(7))
            start = exp.Sub(this=exp.paren(start), expression=exp.Mul(
                this=exp.paren(monday), expression=exp.Literal.number(_MICROS_PER["day"])))
        return _ntz_from_micros(start)
    month = {"month": _func("month", value.copy()), "year": exp.Literal.number(1),
             "quarter": exp.Add(this=exp.Mul(this=exp.paren(exp.IntDiv(this=exp.paren(exp.Sub(
                 this=_func("month", value.copy()), expression=exp.Literal.number(1))), expression=exp.Literal.number(3))),
                 expression=exp.Literal.number(3)), expression=exp.Literal.number(1))}.get(unit)
    if month is None:
        raise SqlError("22023", f'unit "{unit}" not supported for type timestamp without time zone')
    return _func("make_timestamp_ntz", _func("year", value.copy()), month, *(exp.Literal.number(v) for v in (1, 0, 0, 0)))


# date_trunc's units below a day, in microseconds
_US_UNITS = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000, "millisecond": 1_000, "microsecond": 1}


def _spark_zone_arg(zone: exp.Expression) -> exp.Expression:
    """A zone argument as Spark reads it: PostgreSQL's spelling of a constant ('-7' and 'UTC+5'
    are POSIX: hours west) as a Spark zone id; anything else as it is."""
    if isinstance(zone, exp.Literal) and zone.is_string and pgvalues.known_zone(zone.name, numeric_east=False):
        return _string(pgvalues.spark_zone(zone.name, numeric_east=False))
    return zone


def _ntz_from_micros(e: exp.Expression) -> exp.Expression:
    """The timestamp-without-time-zone ``e`` microseconds after 1970-01-01 00:00 (no time zone)."""
    return exp.Anonymous(this="timestampadd", expressions=[exp.var("MICROSECOND"), e,
                                                           sqlglot.parse_one(_EPOCH_NTZ, read="spark")])


def use_session_zone(resolver: Any) -> None:
    """Make the Spark session of ``resolver``'s statement compute in the client's TimeZone.

    timestamptz values are instants (UTC microseconds); what a cast to date/timestamp, a
    timestamp to timestamptz cast, date_trunc, extract, to_char or a timestamptz literal without
    offset mean depends on the session zone, as in PostgreSQL: Spark's
    ``spark.sql.session.timeZone`` gives them that meaning. Set per statement (only when it
    changes) on the statement's own Spark session."""
    info = getattr(resolver, "info", None)
    session = getattr(resolver, "session", None)
    if info is None or session is None:
        return
    zone = pgvalues.spark_zone(getattr(info, "timezone", "UTC"))
    try:
        spark = session.spark
    except Exception:  # noqa: BLE001 - no Spark session (yet): nothing to set
        return
    if getattr(spark, "_tidegate_zone", "UTC") != zone:
        spark.conf.set("spark.sql.session.timeZone", zone)
        try:
            spark._tidegate_zone = zone
        except AttributeError:
            pass


def _dtype(node: exp.Expression | None) -> exp.DataType.Type | None:
    if node is None:
        return None
    t = node.type
    return t.this if isinstance(t, exp.DataType) else None


def _typed(node: exp.Expression, pg_type: exp.DataType) -> exp.Expression:
    """``node`` annotated with the PostgreSQL type it computes (what an enclosing cast reads)."""
    node.type = pg_type.copy()
    return node


# meta of a json/jsonb value computed as JSON text by Spark's variant (json -> key): compact, with
# Spark's key order; the codec prints it as jsonb prints (ColumnType.exact_op "jsonb")
_JSON_VALUE = "pg_json_value"
# meta of an expression around a collecting aggregate (json_agg's text around its array_agg)
_WRAPS_COLLECT = "tg_wraps_collect"


def _json_member_path(node: exp.Expression) -> str | None:
    """The variant path of ``json -> 'key'`` / ``json -> n`` (a constant key, or an index >= 0),
    and of ``->>`` likewise, else None (the other forms keep their older translation)."""
    if not isinstance(node, (exp.JSONExtract, exp.JSONExtractScalar)) or _json_kind(node.this) is None:
        return None
    path = node.expression
    if not isinstance(path, exp.JSONPath) or len(path.expressions) != 2:
        return None
    part = path.expressions[1]
    if isinstance(part, exp.JSONPathKey) and isinstance(part.this, str) and "\\" not in part.this:
        if '"' not in part.this:
            return f'$["{part.this}"]'
        return f"$['{part.this}']" if "'" not in part.this else None
    if isinstance(part, exp.JSONPathSubscript) and isinstance(part.this, int) and part.this >= 0:
        return f"$[{part.this}]"
    return None


_JSON_PATH_CHOICES = 16  # variant paths tried for one #> path (numeric elements: index or key)


def _json_path_extract(node: exp.JSONBExtract | exp.JSONBExtractScalar) -> exp.Expression:
    """``json #> path`` / ``json #>> path`` with a constant text array path: its elements are
    object keys, or array indexes when they read as integers (PostgreSQL decides per level by what
    it finds there; a level is one or the other, so the variant paths of every reading are tried
    in turn). A NULL element gives NULL; a jsonb scalar has no element 0 here (unlike ->)."""
    scalar = isinstance(node, exp.JSONBExtractScalar)
    operator = "#>>" if scalar else "#>"
    path = node.expression.unnest()
    if isinstance(path, exp.Literal) and path.is_string:
        elements = pgvalues.parse_flat_array(path.name)
    elif isinstance(path, exp.Array) and all(isinstance(e, exp.Literal) and e.is_string for e in path.expressions):
        elements = [e.name for e in path.expressions]
    else:
        raise SqlError("0A000", f"the path of {operator} must be a constant text array here",
                       hint=f"Write it as a literal such as '{{key,0}}', or chain -> / ->> for each step.")
    jsonb = _json_kind(node.this) == _T.JSONB
    result_type = exp.DataType.build("TEXT" if scalar else "JSONB" if jsonb else "JSON")
    if any(e is None for e in elements):
        return _typed(exp.Cast(this=exp.Null(), to=exp.DataType.build("STRING")), result_type)
    readings: list[str] = [""]
    for element in elements:
        assert element is not None
        if "\\" in element or ('"' in element and "'" in element):
            raise SqlError("0A000", f"{operator} path elements with backslashes or both quote marks are not supported",
                           hint="Chain -> / ->> for that step.")
        steps = [f'["{element}"]' if '"' not in element else f"['{element}']"]
        index = _array_index(element)
        if index is not None and index < 0:
            raise SqlError("0A000", f"negative array subscripts in {operator} paths are not supported",
                           hint="Count from the start (jsonb_array_length gives the length).")
        if index is not None:
            steps.append(f"[{index}]")
        readings = [r + step for r in readings for step in steps]
        if len(readings) > _JSON_PATH_CHOICES:
            raise SqlError("0A000", f"{operator} paths with more than four numeric elements are not supported",
                           hint="Chain -> / ->> for the later steps.")
    kind = "string" if scalar else "variant"
    gets = [_func("variant_get", _func("parse_json", node.this.copy()), _string("$" + r), _string(kind))
            for r in readings]
    value = gets[0] if len(gets) == 1 else _func("coalesce", *gets)
    if not scalar:
        value = _func("to_json", value)
        value.meta[_JSON_VALUE] = True
    value.meta[_PG_TYPE_NAME] = "text" if scalar else "jsonb" if jsonb else "json"
    return _typed(value, result_type)


def _array_index(text: str) -> int | None:
    """``text`` as PostgreSQL reads a path element as an array subscript (strtol: a sign, digits,
    nothing after), else None."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit():
        return None
    value = int(text)
    return value if -(2 ** 31) <= value < 2 ** 31 else None


# expressions whose value is one of their operands' (or an aggregate / window of it): over time
# (stored and computed as microseconds since midnight) their result is time, printed as time
_TIME_KEEPING = (exp.Min, exp.Max, exp.Coalesce, exp.Greatest, exp.Least, exp.Lag, exp.Lead, exp.FirstValue,
                 exp.LastValue, exp.NthValue, exp.Case, exp.If, exp.Nullif, exp.AnyValue, exp.Bracket)


def _interval_span(text: exp.Expression) -> exp.Expression:
    """The length of a stored interval (PostgreSQL's text form: ``1 year -2 mons +3 days
    -04:05:06.5``) in microseconds, as PostgreSQL orders and compares intervals: a month is 30
    days, a day 24 hours (interval_cmp). Two intervals are equal when their lengths are."""
    def number(pattern: str, scale: int = 0) -> exp.Expression:
        found = _func("regexp_extract", text.copy(), _string(pattern), exp.Literal.number(1))
        value = _cast(exp.Nullif(this=found, expression=_string("")), f"DECIMAL(38,{scale})")
        return _func("coalesce", value, exp.Literal.number(0))

    clock = "([+-]?)([0-9]+):([0-9]+):([0-9]+(?:[.][0-9]+)?)"
    months = exp.Add(this=exp.Mul(this=number("([+-]?[0-9]+) years?"), expression=exp.Literal.number(12)),
                     expression=number("([+-]?[0-9]+) mons?"))
    days = exp.Add(this=exp.Mul(this=exp.paren(months), expression=exp.Literal.number(30)),
                   expression=number("([+-]?[0-9]+) days?"))

    def clock_part(group: int, scale: int = 0) -> exp.Expression:
        found = _func("regexp_extract", text.copy(), _string(clock), exp.Literal.number(group))
        return _func("coalesce", _cast(exp.Nullif(this=found, expression=_string("")), f"DECIMAL(38,{scale})"),
                     exp.Literal.number(0))

    micros = exp.Add(this=exp.Add(this=exp.Mul(this=clock_part(2), expression=exp.Literal.number(3_600_000_000)),
                                  expression=exp.Mul(this=clock_part(3), expression=exp.Literal.number(60_000_000))),
                     expression=exp.Mul(this=clock_part(4, 6), expression=exp.Literal.number(1_000_000)))
    negative = exp.EQ(this=_func("regexp_extract", text.copy(), _string(clock), exp.Literal.number(1)),
                      expression=_string("-"))
    signed = exp.If(this=negative, true=exp.Neg(this=exp.paren(micros)), false=micros)
    span = exp.Add(this=exp.Mul(this=exp.paren(days), expression=exp.Literal.number(86_400_000_000)),
                   expression=exp.paren(signed))
    whole = _cast(span, "DECIMAL(38,0)")
    return exp.If(this=exp.Is(this=text.copy(), expression=exp.Null()), true=_cast(exp.Null(), "DECIMAL(38,0)"),
                  false=whole)


def _interval_length(node: exp.Expression) -> exp.Expression | None:
    """``node``'s length in microseconds (see :func:`_interval_span`) when it is a stored interval
    column, an interval constant or an untyped literal / NULL beside one; else None."""
    iv = node.meta.get("pg_interval") if node.meta else None
    if iv is not None:
        return exp.Literal.number((iv.months * 30 + iv.days) * 86_400_000_000 + iv.micros)
    if isinstance(node, exp.Column) and _dtype(node) == _T.INTERVAL:
        return _interval_span(node.copy())
    if isinstance(node, exp.Literal) and node.is_string:
        months, days, micros = pgvalues.parse_interval_fields(node.name)
        return exp.Literal.number((months * 30 + days) * 86_400_000_000 + micros)
    if isinstance(node, exp.Null):
        return _cast(exp.Null(), "DECIMAL(38,0)")
    return None


def _row_value(node: exp.Expression) -> bool:
    """Whether ``node`` is a row value: ``(a, b)``, or a scalar subquery selecting one."""
    node = node.unnest()
    if isinstance(node, exp.Select) and len(node.expressions) == 1:
        node = node.expressions[0].unalias().unnest()
    return isinstance(node, exp.Tuple)


def _json_kind(node: exp.Expression) -> exp.DataType.Type | None:
    """JSON or JSONB when ``node`` is a json / jsonb value (a member of one included), else None."""
    node = node.unnest()
    if isinstance(node, exp.JSONExtract) and _json_member_path(node) is not None:
        return _json_kind(node.this)
    kind = _dtype(node)
    return kind if kind in (_T.JSON, _T.JSONB) else None


def _type_params(dt: exp.DataType) -> list[int]:
    out = []
    for p in dt.expressions:
        value = p.this if isinstance(p, exp.DataTypeParam) else p
        try:
            out.append(int(value.name if isinstance(value, exp.Expression) else value))
        except (TypeError, ValueError):
            return []
    return out


def _column_type_of(dt: exp.DataType | None) -> ColumnType | None:
    """PostgreSQL type for a sqlglot type, or None when Spark's own type says it as well."""
    if not isinstance(dt, exp.DataType):
        return None
    t = dt.this
    params = _type_params(dt)
    if t == _T.ARRAY:
        inner = _column_type_of(dt.expressions[0]) if dt.expressions else None
        return inner.array_of() if inner is not None and inner.pg.array_oid else None
    if t == _T.DECIMAL:
        if len(params) >= 1 and params[0] == _DISPLAY_SCALE_ONLY:
            return ColumnType(NUMERIC, scale=params[1] if len(params) > 1 else 0)
        if len(params) >= 1:
            return ColumnType(NUMERIC, precision=params[0], scale=params[1] if len(params) > 1 else 0)
        return ColumnType(NUMERIC)
    if t == _T.VARCHAR:
        return ColumnType(VARCHAR, length=params[0] if params else None)
    if t in (_T.CHAR, _T.NCHAR):
        return ColumnType(BPCHAR, length=params[0] if params else 1)
    simple = {
        _T.BOOLEAN: BOOL,
        _T.SMALLINT: INT2,
        _T.TINYINT: INT2,
        _T.INT: INT4,
        _T.BIGINT: INT8,
        _T.FLOAT: FLOAT4,
        _T.DOUBLE: FLOAT8,
        _T.TEXT: TEXT,
        _T.VARBINARY: BYTEA,
        _T.BINARY: BYTEA,
        _T.DATE: DATE,
        _T.TIME: TIME,
        _T.TIMESTAMP: TIMESTAMP,
        _T.TIMESTAMPNTZ: TIMESTAMP,
        _T.TIMESTAMPTZ: TIMESTAMPTZ,
        _T.TIMESTAMPLTZ: TIMESTAMPTZ,
        _T.INTERVAL: INTERVAL,
        _T.JSON: JSON,
        _T.JSONB: JSONB,
        _T.UUID: UUID,
    }.get(t)
    return ColumnType(simple) if simple is not None else None


_EXTRACT_SCALES = {"epoch": 6, "second": 6, "seconds": 6, "milliseconds": 3, "millisecond": 3,
                   "microseconds": 0, "microsecond": 0}


def _pg_display_scale(node: exp.Expression) -> int | None:
    """PostgreSQL's display scale of a numeric expression when it is known before execution.

    numeric(p,s) keeps s, integers have scale 0, + and - take the larger scale, * adds them
    (numeric.c add_var/mul_var), aggregates that return an input value keep its scale. None means
    "data dependent" (division, avg, unconstrained columns): those keep the codec's trimmed output.
    """
    while isinstance(node, (exp.Paren, exp.Alias)):
        node = node.this
    if isinstance(node, exp.Distinct):  # sum(DISTINCT x): x's
        value = _aggregate_value(node)
        return None if value is node else _pg_display_scale(value)
    t = node.type if isinstance(node.type, exp.DataType) else None
    if isinstance(node, exp.Literal) and not node.is_string:
        text = node.name.lower()
        if re.fullmatch(r"\d+", text):
            return 0
        if re.fullmatch(r"\d*\.\d*", text):
            return len(text.partition(".")[2])
        return None
    if isinstance(node, exp.Extract):
        field = node.this.name.lower() if isinstance(node.this, exp.Expression) else str(node.this).lower()
        source = _dtype(node.expression)
        if field == "epoch" and source == _T.DATE:
            return 0
        return _EXTRACT_SCALES.get(field, 0)
    if t is not None and t.this in _INTEGER_TYPES:
        return 0
    if isinstance(node, (exp.Cast, exp.TryCast)):
        if t is not None and t.this == _T.DECIMAL:
            params = _type_params(t)
            if params:
                return params[1] if len(params) > 1 else 0
            return _pg_display_scale(node.this) if _dtype(node.this) in (_INTEGER_TYPES | {_T.DECIMAL}) else None
        return None
    if isinstance(node, exp.Column):
        if t is not None and t.this == _T.DECIMAL:
            params = _type_params(t)
            return (params[1] if len(params) > 1 else 0) if params else None
        return None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Mod)):
        left, right = _pg_display_scale(node.left), _pg_display_scale(node.right)
        if left is None or right is None:
            return None
        return left + right if isinstance(node, exp.Mul) else max(left, right)
    if isinstance(node, (exp.Neg, exp.Abs, exp.Sum, exp.Min, exp.Max)):
        return _pg_display_scale(node.this)
    if isinstance(node, (exp.Window, exp.Filter)):
        return _pg_display_scale(node.this)
    if isinstance(node, (exp.Coalesce, exp.Greatest, exp.Least)):
        # each value keeps its own scale: known only when every argument has the same one
        args = [a for a in [node.this, *node.expressions] if not isinstance(a, exp.Null)]
        scales = {_pg_display_scale(a) for a in args}
        return scales.pop() if len(scales) == 1 else None
    if isinstance(node, (exp.Lag, exp.Lead)):
        # the value of another row, or the default: one scale when both have it (as coalesce)
        default = node.args.get("default")
        scales = {_pg_display_scale(a) for a in [node.this, default] if a is not None and not isinstance(a, exp.Null)}
        return scales.pop() if len(scales) == 1 else None
    if isinstance(node, (exp.FirstValue, exp.LastValue, exp.NthValue)):
        return _pg_display_scale(node.this)
    if isinstance(node, (exp.Round, exp.Trunc)):  # round(x, n) and trunc(x, n) print n digits
        digits = node.args.get("decimals")
        if digits is None:
            return 0
        if isinstance(digits, exp.Literal) and re.fullmatch(r"-?\d+", digits.name):
            return max(int(digits.name), 0)
        return None
    return None


# PostgreSQL's pg_type.typname for cast targets (names a bare ``1::int`` column gets).
_TYPNAME: dict[exp.DataType.Type, str] = {
    _T.BOOLEAN: "bool",
    _T.SMALLINT: "int2",
    _T.INT: "int4",
    _T.BIGINT: "int8",
    _T.FLOAT: "float4",
    _T.DOUBLE: "float8",
    _T.DECIMAL: "numeric",
    _T.TEXT: "text",
    _T.VARCHAR: "varchar",
    _T.CHAR: "bpchar",
    _T.VARBINARY: "bytea",
    _T.DATE: "date",
    _T.TIME: "time",
    _T.TIMESTAMP: "timestamp",
    _T.TIMESTAMPTZ: "timestamptz",
    _T.INTERVAL: "interval",
    _T.JSON: "json",
    _T.JSONB: "jsonb",
    _T.UUID: "uuid",
}

# PostgreSQL type names for "function f(integer) does not exist".
_PG_ARG_TYPE: dict[exp.DataType.Type, str] = {
    _T.BOOLEAN: "boolean",
    _T.SMALLINT: "smallint",
    _T.INT: "integer",
    _T.BIGINT: "bigint",
    _T.FLOAT: "real",
    _T.DOUBLE: "double precision",
    _T.DECIMAL: "numeric",
    _T.TEXT: "text",
    _T.VARCHAR: "character varying",
    _T.CHAR: "character",
    _T.DATE: "date",
    _T.TIMESTAMP: "timestamp without time zone",
    _T.TIMESTAMPTZ: "timestamp with time zone",
    _T.INTERVAL: "interval",
    _T.JSON: "json",
    _T.JSONB: "jsonb",
    _T.UUID: "uuid",
    _T.VARBINARY: "bytea",
}


_NOT_FROM_BOOLEAN = frozenset({_T.SMALLINT, _T.BIGINT, _T.FLOAT, _T.DOUBLE, _T.DECIMAL})


def _spark_dt(text: str) -> exp.DataType:
    return exp.DataType.build(text, dialect="spark")


# --------------------------------------------------------------------------------------------
# Literals


def _cast(node: exp.Expression, spark_type: str) -> exp.Cast:
    return exp.Cast(this=node, to=_spark_dt(spark_type))


def _string(value: str) -> exp.Literal:
    return exp.Literal.string(value)


def _surely_integer(e: exp.Expression) -> bool:
    """Whether ``e`` is integer-typed in PostgreSQL for certain: integer columns, casts and
    literals combined by + - * / % (sqlglot's annotation alone also calls extract() an integer)."""
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, (exp.Column, exp.Cast)):
        return _dtype(e) in _INTEGER_TYPES
    if isinstance(e, exp.Literal):
        return not e.is_string and re.fullmatch(r"\d+", e.name) is not None
    if isinstance(e, exp.Neg):
        return _surely_integer(e.this)
    if isinstance(e, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)):
        return _surely_integer(e.this) and _surely_integer(e.expression)
    return False


_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ, exp.NullSafeNEQ)
_BPCHAR = "character"  # pgoperators' name of character(n)


def _bpchar_semantics(tree: exp.Expression, pg_type: Callable[[exp.Expression], str | None]) -> None:
    """PostgreSQL's character(n): stored and shown padded to n, but its trailing spaces mean
    nothing. Comparisons, LIKE, ||, text functions and casts to text see the value without them
    (bpchar to text strips them; ``bpchar = bpchar`` ignores them). Spark has only strings, so a
    character(n) value is wrapped in rtrim() wherever it is used, except where it is an output
    of a query (shown, or passed on by a derived table, whose column is typed through it),
    counted or keyed (GROUP BY, ORDER BY, PARTITION BY, min/max: padded to one length, the order
    and the groups are the same), matched (LIKE, ~ and SIMILAR TO see the padding in PostgreSQL)
    and in octet_length(), which counts the padding. The other operand of a comparison with one is trimmed too when
    PostgreSQL compares them as character(n) (an untyped literal, a varchar), not as text."""
    targets = [n for n in tree.walk() if isinstance(n, (exp.Column, exp.Cast, exp.Min, exp.Max))
               and pg_type(n) == _BPCHAR]
    if not targets:
        return
    shown = {id(e) for sel in tree.find_all(exp.Select) for e in sel.expressions}
    trims: dict[int, exp.Expression] = {}

    def as_bpchar(other: exp.Expression) -> None:
        if pg_type(other) not in (pgoperators.TEXT, _BPCHAR) and not other.find(exp.Select):
            trims.setdefault(id(other), other)

    for node in targets:
        up, parent = node, node.parent
        while isinstance(parent, exp.Paren):
            up, parent = parent, parent.parent
        if isinstance(parent, exp.Alias):
            if id(parent) in shown:
                continue
        elif id(up) in shown:
            continue
        if isinstance(parent, (exp.Group, exp.Ordered, exp.Min, exp.Max, exp.Count, exp.Distinct)) \
                or up.arg_key == "partition_by":
            continue
        if isinstance(parent, (exp.Like, exp.ILike, exp.RegexpLike, exp.SimilarTo)) and parent.this is up:
            continue  # bpcharlike / bpcharregexeq match the padded value
        if isinstance(parent, exp.Anonymous) and parent.name.lower() == "octet_length":
            continue
        if isinstance(parent, exp.Cast) and pg_type(parent) == _BPCHAR:
            continue
        if isinstance(parent, _COMPARISONS):
            as_bpchar(parent.expression if parent.this is up else parent.this)
        elif isinstance(parent, exp.In) and parent.this is up:
            for item in parent.expressions:
                as_bpchar(item)
        elif isinstance(parent, exp.Between) and parent.this is up:
            as_bpchar(parent.args["low"])
            as_bpchar(parent.args["high"])
        trims[id(node)] = node
    for node in sorted(trims.values(), key=lambda n: -n.depth):  # inner ones first: outer copies keep them
        node.replace(_func("rtrim", node.copy()))


def _check_numeric_constant(text: str) -> None:
    """A constant cast to unconstrained numeric: NaN/Infinity (Spark decimals have neither) and
    digits the stored scale would round into another number are 0A000 (tidegate.pgvalues)."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        return  # not a number: the cast reports it
    pgvalues.refuse_non_finite_numeric(value)
    pgvalues.check_unconstrained_numeric(value, value.quantize(Decimal("1e-18"), rounding=ROUND_HALF_UP,
                                                              context=pgvalues.WIDE_DECIMAL), text)


_INT_WORDS = {_T.SMALLINT: "int2", _T.INT: "int4", _T.BIGINT: "int8"}


def _check_constant_input(text: str, target: exp.DataType.Type) -> None:
    """A constant's text checked as PostgreSQL's input function checks it (tidegate.pgvalues),
    where Spark's cast would answer instead: '1e400'::float8 is 22003 (Spark: Infinity),
    '{bad'::json 22P02 (Spark keeps the text; json is stored as text)."""
    if target in (_T.DOUBLE, _T.FLOAT):
        pgvalues.parse_float(text, real=target == _T.FLOAT)
    elif target in (_T.DATE, _T.TIMESTAMP, _T.TIMESTAMPTZ, _T.TIMESTAMPNTZ, _T.DATETIME):
        pgvalues.refuse_bc(text)
    elif target in (_T.JSON, _T.JSONB):
        pgvalues.check_json(text)


def _func(name: str, *args: exp.Expression) -> exp.Anonymous:
    node = exp.Anonymous(this=name, expressions=list(args))
    node.meta[pgfunctions.INTERNAL] = True  # made by the translator: not a client's call
    return node


def _interval_expr(iv: PgInterval) -> exp.Expression:
    """A Spark interval value: day-time or year-month ANSI intervals when possible."""
    # A day-time interval keeps one length: only when days and time split back the same way
    # ('-1 2:03:04' is -1 days +02:03:04, not -21:56:56) does it stand for the PostgreSQL value.
    if iv.months == 0 and _ansi_interval(iv):
        total = iv.total_micros
        sign = "-" if total < 0 else ""
        total = abs(total)
        days, rem = divmod(total, 86_400_000_000)
        hours, rem = divmod(rem, 3_600_000_000)
        minutes, rem = divmod(rem, 60_000_000)
        seconds, micros = divmod(rem, 1_000_000)
        text = f"{sign}{days} {hours:02d}:{minutes:02d}:{seconds:02d}.{micros:06d}"
        node = sqlglot.parse_one(f"INTERVAL '{text}' DAY TO SECOND", read="spark")
        node.meta["pg_interval"] = iv
        return node
    if iv.days == 0 and iv.micros == 0:
        sign = "-" if iv.months < 0 else ""
        years, months = divmod(abs(iv.months), 12)
        node = sqlglot.parse_one(f"INTERVAL '{sign}{years}-{months}' YEAR TO MONTH", read="spark")
        node.meta["pg_interval"] = iv
        return node
    years, months = divmod(abs(iv.months), 12)
    msign = -1 if iv.months < 0 else 1
    secs = Decimal(iv.micros) / Decimal(1_000_000)
    node = _func(
        "make_interval",
        exp.Literal.number(msign * years),
        exp.Literal.number(msign * months),
        exp.Literal.number(0),
        exp.Literal.number(iv.days),
        exp.Literal.number(0),
        exp.Literal.number(0),
        _cast(exp.Literal.number(str(secs)), "DECIMAL(18,6)"),
    )
    node.meta["pg_interval"] = iv
    return node


def _result_column(node: exp.Expression) -> bool:
    """Whether ``node`` is (the value of) one of its SELECT's result columns."""
    parent = node.parent
    if isinstance(parent, exp.Alias):
        parent = parent.parent
    return isinstance(parent, exp.Select) and any(e is node or e is node.parent for e in parent.expressions)


def _ansi_interval(iv: PgInterval) -> bool:
    """Whether a Spark ANSI interval (day-time or year-month) holds ``iv`` exactly."""
    if iv.months:
        return iv.days == 0 and iv.micros == 0
    if abs(iv.micros) >= 86_400_000_000:
        return False  # '27 hours' is not '1 day 03:00:00' (a day-time interval would carry it into days)
    return iv.days == 0 or iv.micros == 0 or ((iv.days > 0) == (iv.micros > 0) and abs(iv.micros) < 86_400_000_000)


def _interval_value(iv: PgInterval, node: exp.Expression) -> exp.Expression:
    """An interval constant for Spark. A value no ANSI interval holds ('1 year 3 days',
    '-1 2:03:04') is a CalendarInterval, which Spark cannot return: as a result column it is
    sent as its PostgreSQL text instead (the result column is typed interval, and interval text
    is what the result conversion reads)."""
    if not _ansi_interval(iv) and _result_column(node):
        out = _string(format_interval(iv.months, iv.days, iv.micros))
        out.meta["pg_interval"] = iv
        return out
    result = _interval_expr(iv)
    result.meta["pg_interval"] = iv
    return result


def _time_micros(text: str) -> int:
    """time input -> microseconds since midnight (tidegate.pgvalues.parse_time: 24:00:00 included)."""
    return pgvalues.parse_time(text)


def _micros_literal(td: _dt.timedelta) -> int:
    return (td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds


class TypedNull:
    """A parameter whose value is not known yet (Describe before Bind), of a type known: Spark
    analyses the statement with a NULL of that type (an untyped NULL in ``ts < $1 + interval '1
    day'`` failed Spark's analysis where the client had said $1 is a timestamptz)."""

    _SPARK_TYPES = {"int2": "SMALLINT", "int4": "INT", "int8": "BIGINT", "float4": "FLOAT", "float8": "DOUBLE",
                    "bool": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP_NTZ",
                    "timestamptz": "TIMESTAMP"}

    def __init__(self, spark_type: str) -> None:
        self.spark_type = spark_type

    @classmethod
    def of(cls, ctype: ColumnType | None) -> TypedNull | None:
        """The typed NULL standing for a parameter of ``ctype``; None (an untyped NULL) for text,
        unknown and the types whose literals the translator reads by their text."""
        spark_type = cls._SPARK_TYPES.get(ctype.pg.name) if ctype is not None and not ctype.is_array else None
        return cls(spark_type) if spark_type else None


def param_literal(value: Any) -> exp.Expression:
    """A Python parameter value as a typed Spark literal expression."""
    if value is None:
        return exp.Null()
    if isinstance(value, TypedNull):
        return _cast(exp.Null(), value.spark_type)
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return exp.Literal.number(value)
        if -(2**63) <= value < 2**63:
            return _cast(exp.Literal.number(value), "BIGINT")
        return _cast(exp.Literal.number(value), "DECIMAL(38,0)")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            text = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
            return _cast(_string(text), "DOUBLE")
        if value == 0 and math.copysign(1.0, value) < 0:
            return _cast(_string("-0"), "DOUBLE")  # a literal -0.0 is the negation of 0.0: +0
        return _cast(exp.Literal.number(repr(value)), "DOUBLE")
    if isinstance(value, Decimal):
        if not value.is_finite():
            return _cast(_string("NaN"), "DOUBLE")
        text = format(value, "f")
        digits = text.lstrip("-").replace(".", "").lstrip("0") or "0"
        scale = len(text.split(".")[1]) if "." in text else 0
        precision = min(38, max(len(digits), scale + 1, 1))
        return _cast(exp.Literal.number(text), f"DECIMAL({precision},{min(scale, precision)})")
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _func("unhex", _string(bytes(value).hex()))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            utc = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            return _cast(_string(utc.isoformat(sep=" ") + "+00:00"), "TIMESTAMP")
        return _cast(_string(value.isoformat(sep=" ")), "TIMESTAMP_NTZ")
    if isinstance(value, _dt.date):
        return _cast(_string(value.isoformat()), "DATE")
    if isinstance(value, _dt.time):
        # tidegate carries time as microseconds since midnight (Spark has no TIME type)
        return _cast(
            exp.Literal.number(((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond),
            "BIGINT",
        )
    if isinstance(value, _dt.timedelta):
        return _interval_expr(PgInterval(0, 0, _micros_literal(value)))
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[param_literal(v) for v in value])
    raise SqlError("22023", f"unsupported parameter value of type {type(value).__name__}")


# --------------------------------------------------------------------------------------------
# Result column names (PostgreSQL's FigureColname)

_CLASS_NAMES: dict[type, str] = {
    exp.CurrentTimestamp: "current_timestamp",
    exp.JSONArrayAgg: "json_agg",
    exp.CurrentDate: "current_date",
    exp.CurrentTime: "current_time",
    exp.Localtimestamp: "localtimestamp",
    exp.Extract: "extract",
    exp.Substring: "substring",
    exp.StrPosition: "position",
    exp.Coalesce: "coalesce",
    exp.Nullif: "nullif",
    exp.Greatest: "greatest",
    exp.Least: "least",
    exp.AtTimeZone: "timezone",
    exp.Overlay: "overlay",
    exp.Array: "array",
    exp.Exists: "exists",
    exp.Case: "case",
    exp.If: "case",
    exp.GroupConcat: "string_agg",
    exp.ArrayAgg: "array_agg",
}


def _label(alias: exp.Alias) -> str:
    """The name an ``AS`` label gives: unquoted labels fold to lower case, as identifiers do."""
    ident = alias.args.get("alias")
    if isinstance(ident, exp.Identifier) and not ident.quoted:
        return ident.name.lower()
    return alias.alias


# Window functions whose frame PostgreSQL ignores (they see the whole partition in order).
_FRAMELESS_WINDOW_FUNCTIONS = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist,
                               exp.Ntile, exp.Lag, exp.Lead)


def _name_strength(node: exp.Expression) -> tuple[str, int]:
    """(name, strength) as PostgreSQL's FigureColnameInternal computes it."""
    meta_name = node.meta.get("pg_name") if node.meta else None
    if node.meta and node.meta.get(pgoperators.PARAMETER):
        return "?column?", 0
    if isinstance(node, exp.Alias):
        return node.alias, 2
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            return "?column?", 0
        return node.name, 2
    if isinstance(node, exp.Paren):
        return _name_strength(node.this)
    if isinstance(node, exp.Bracket):
        return _name_strength(node.this)
    if isinstance(node, (exp.Cast, exp.TryCast)) and not meta_name:
        name, strength = _name_strength(node.this)
        if strength <= 1:
            to = node.to
            while to.this == _T.ARRAY and to.expressions:
                to = to.expressions[0]
            return _TYPNAME.get(to.this, to.sql("postgres").split("(")[0].lower()), 1
        return name, strength
    if isinstance(node, exp.Interval):
        return "interval", 1
    if isinstance(node, exp.Tuple):  # a row constructor
        return "row", 2
    if isinstance(node, (exp.Window, exp.Filter, exp.WithinGroup)):
        return _name_strength(node.this)
    if isinstance(node, exp.Subquery):
        inner = node.this
        if isinstance(inner, exp.Select) and inner.expressions:
            name, strength = _name_strength(inner.expressions[0])
            return (name, 2) if strength == 2 else ("?column?", 0)
        return "?column?", 0
    if isinstance(node, (exp.Case, exp.If)):
        return "case", 1
    if meta_name:
        return str(meta_name).lower(), 2
    if isinstance(node, exp.Trim):
        position = (node.args.get("position") or "").upper()
        return {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "btrim"), 2
    for cls, name in _CLASS_NAMES.items():
        if type(node) is cls:
            return name, 2
    if isinstance(node, exp.Anonymous):
        return node.name.lower(), 2
    if isinstance(node, (exp.Binary, exp.Unary, exp.Predicate, exp.Connector, exp.Literal, exp.Null)):
        return "?column?", 0
    if isinstance(node, exp.Func):
        return node.sql_name().lower(), 2
    return "?column?", 0


def pg_column_name(node: exp.Expression) -> str:
    return _name_strength(node)[0]


def pg_output_name(projection: exp.Expression) -> str:
    """The name PostgreSQL gives an output column: its label, else FigureColname's."""
    return _label(projection) if isinstance(projection, exp.Alias) else pg_column_name(projection)


# --------------------------------------------------------------------------------------------
# Translation


# PostgreSQL functions passed to Spark under another name (same semantics). Which functions a
# client may call at all is engine.pgfunctions.PG_FUNCTIONS (an allow-list).
_RENAMES = {
    "clock_timestamp": "current_timestamp",
    "statement_timestamp": "current_timestamp",
    "transaction_timestamp": "current_timestamp",
    "gen_random_uuid": "uuid",
    "cardinality": "size",
    "ceiling": "ceil",
    "make_timestamp": "make_timestamp_ntz",
    "make_timestamptz": "make_timestamp",
}


# Calls whose value differs at each evaluation (Spark's names and PostgreSQL's).
_VOLATILE_CALLS = frozenset({"random", "rand", "randn", "uuid", "shuffle", "nextval", "setval", "clock_timestamp",
                             "timeofday", "gen_random_uuid", "uuid_generate_v4", "setseed"})
_once_names = itertools.count(1)


def _volatile(value: exp.Expression) -> bool:
    """Whether ``value`` holds a call that answers differently each time it is evaluated."""
    return any(isinstance(n, exp.Rand) or (isinstance(n, exp.Func) and n.name.lower() in _VOLATILE_CALLS)
               for n in value.walk())


def _evaluated_once(build: Callable[..., exp.Expression]) -> Callable[..., exp.Expression]:
    """``build(value, ...)`` writes ``value`` more than once (a CASE over its text, ...). Spark
    evaluates each copy on its own: ``random()::text`` drew a new number for each branch test and
    for the branch taken (a CASE matching none of its branches, or the exponent of one number cut
    from another). A volatile value is computed once and handed to ``build`` as a lambda variable:
    ``element_at(transform(array(value), v -> ...), 1)``."""
    @functools.wraps(build)
    def once(value: exp.Expression, *args: Any, **kwargs: Any) -> exp.Expression:
        if not _volatile(value):
            return build(value, *args, **kwargs)
        name = f"tg_once_{next(_once_names)}"
        var = exp.column(name)
        var.type = value.type
        body = build(var, *args, **kwargs)
        lam = exp.Lambda(this=body, expressions=[exp.to_identifier(name)])
        return _func("element_at", _func("transform", _func("array", value), lam), exp.Literal.number(1))
    return once


def _is_infinite(x: exp.Expression) -> exp.Expression:
    return exp.EQ(this=_func("abs", x), expression=_cast(_string("Infinity"), "DOUBLE"))


def _regexp_replace(value: exp.Expression, pattern: str, replacement: str) -> exp.Expression:
    return _func("regexp_replace", value, _string(pattern), _string(replacement))


@_evaluated_once
def _float_text(value: exp.Expression, plain_below: int) -> exp.Expression:
    """A float as PostgreSQL prints it (shortest digits; plain notation for decimal exponents
    -4 .. plain_below - 1, else ``1.5e+20`` / ``1e-05``), from Java's shortest digits, which
    Spark's cast to string gives as ``100.0``, ``1.0E-4``, ``3.4E38``."""
    java = _cast(value, "STRING")
    exponent = _cast(_func("substring_index", java.copy(), _string("E"), exp.Literal.number(-1)), "INT")
    def decimal_text(scale: int) -> exp.Expression:  # the digits as a decimal, trailing zeros dropped
        text = _cast(_cast(java.copy(), f"DECIMAL(38,{scale})"), "STRING")
        return _regexp_replace(_regexp_replace(text, "0+$", ""), r"\.$", "")

    plain, plain_large = decimal_text(30), decimal_text(15)
    mantissa = _regexp_replace(_func("substring_index", java.copy(), _string("E"), exp.Literal.number(1)),
                               r"\.0$", "")
    sign = exp.If(this=exp.LT(this=exponent.copy(), expression=exp.Literal.number(0)), true=_string("-"),
                  false=_string("+"))
    def scientific_text(mantissa: exp.Expression, exponent: exp.Expression, sign: exp.Expression) -> exp.Expression:
        magnitude = _cast(_func("abs", exponent.copy()), "STRING")
        padded = exp.If(this=exp.LT(this=_func("abs", exponent.copy()), expression=exp.Literal.number(10)),
                        true=_func("concat", _string("0"), magnitude), false=magnitude.copy())
        return _func("concat", mantissa, _string("e"), sign, padded)

    scientific = scientific_text(mantissa, exponent, sign)
    has_e = _func("instr", java.copy(), _string("E"))
    # NaN and the infinities are spelled as PostgreSQL spells them (and NaN sorts above 1e6 in Spark)
    ifs = [exp.If(this=exp.In(this=java.copy(), expressions=[_string("NaN"), _string("Infinity"), _string("-Infinity")]),
                  true=java.copy())]
    if plain_below < 7:
        # Java prints a float below 1e7 plainly (1234567.0); PostgreSQL's float4 from 1e6 on as
        # 1.234567e+06: the seven integer digits become the mantissa
        unsigned = _regexp_replace(_regexp_replace(java.copy(), r"\.0$", ""), "^-", "")
        digits = _func("replace", unsigned, _string("."), _string(""))
        mant = _regexp_replace(_func("concat", _func("substring", digits.copy(), exp.Literal.number(1), exp.Literal.number(1)),
                                     _string("."), _func("substring", digits.copy(), exp.Literal.number(2))), r"\.?0*$", "")
        negative = exp.If(this=exp.LT(this=_cast(value.copy(), "DOUBLE"), expression=exp.Literal.number(0)),
                          true=_string("-"), false=_string(""))
        ifs.append(exp.If(this=exp.and_(exp.EQ(this=has_e.copy(), expression=exp.Literal.number(0)),
                                        exp.GTE(this=_func("abs", _cast(value.copy(), "DOUBLE")),
                                                expression=exp.Literal.number(10 ** plain_below))),
                          true=scientific_text(_func("concat", negative, mant), exp.Literal.number(plain_below),
                                               _string("+"))))
    return exp.Case(ifs=ifs + [
        exp.If(this=exp.EQ(this=has_e.copy(), expression=exp.Literal.number(0)),
               true=_regexp_replace(java.copy(), r"\.0$", "")),
        exp.If(this=exp.and_(exp.GTE(this=exponent.copy(), expression=exp.Literal.number(-4)),
                             exp.LT(this=exponent.copy(), expression=exp.Literal.number(0))), true=plain),
        exp.If(this=exp.and_(exp.GTE(this=exponent.copy(), expression=exp.Literal.number(0)),
                             exp.LT(this=exponent.copy(), expression=exp.Literal.number(plain_below))),
               true=plain_large),
    ], default=scientific)


def _fraction_text(micros: exp.Expression) -> exp.Expression:
    """``.5`` / ``.000001`` for the sub-second part of microseconds ('' when whole seconds)."""
    frac = _func("pmod", micros, exp.Literal.number(1_000_000))
    digits = _regexp_replace(_func("lpad", _cast(frac.copy(), "STRING"), exp.Literal.number(6), _string("0")), "0+$", "")
    return exp.If(this=exp.EQ(this=frac, expression=exp.Literal.number(0)), true=_string(""),
                  false=_func("concat", _string("."), digits))


@_evaluated_once
def _time_text(micros: exp.Expression) -> exp.Expression:
    """A time (microseconds since midnight) as ``HH:MM:SS[.ffffff]``."""
    def part(div: int, mod: int) -> exp.Expression:
        n = _func("pmod", exp.IntDiv(this=exp.paren(micros.copy()), expression=exp.Literal.number(div)),
                  exp.Literal.number(mod))
        return _func("lpad", _cast(n, "STRING"), exp.Literal.number(2), _string("0"))
    return _func("concat", part(3_600_000_000, 100), _string(":"), part(60_000_000, 60), _string(":"),
                 part(1_000_000, 60), _fraction_text(micros.copy()))


@_evaluated_once
def _timestamptz_text(value: exp.Expression) -> exp.Expression:
    """A timestamptz in the session zone (Spark's session zone is the client's) with its offset,
    as PostgreSQL prints it: ``2024-03-10 03:30:00-04``, ``... 23:59:59.5+05:30``."""
    offset = _regexp_replace(_func("date_format", value.copy(), _string("xxx")), ":00$", "")
    return _func("concat", _func("date_format", value.copy(), _string("yyyy-MM-dd HH:mm:ss")),
                 _fraction_text(_func("unix_micros", value.copy())), offset)


@_evaluated_once
def _bool_text(value: exp.Expression, true: str = "t", false: str = "f") -> exp.Expression:
    """A boolean as text, NULL kept: boolout's 't' / 'f', or a cast's 'true' / 'false'."""
    return exp.Case(ifs=[exp.If(this=exp.paren(value.copy()), true=_string(true)),
                         exp.If(this=exp.Not(this=exp.paren(value.copy())), true=_string(false))])


def _output_text(value: exp.Expression) -> exp.Expression:
    """A value as its type's output function writes it (what concat and concat_ws append)."""
    t = _dtype(value)
    if t == _T.BOOLEAN:
        return _bool_text(value)
    if t in _PG_TEXT_OF:
        return _PG_TEXT_OF[t](value)
    return _cast(value, "STRING")


# upper() / lower() map one character at a time in PostgreSQL (towupper / towlower); Java's
# String case mapping expands some (upper('ß') is 'SS', lower('İ') is 'i̇') and makes a final 'Σ'
# 'ς'. These characters are set aside before Spark's upper / lower and put back as PostgreSQL
# maps them: the ones without a one-character uppercase stay as they are.
_UPPER_KEEP = "ßŉǰΐΰևﬀﬁﬂﬃﬄﬅﬆﬓﬔﬕﬖﬗ"
_LOWER_AS = {"İ": "i", "Σ": "σ"}


def _simple_case(node: exp.Upper | exp.Lower) -> exp.Expression:
    upper = isinstance(node, exp.Upper)
    kept = _UPPER_KEEP if upper else "".join(_LOWER_AS)
    back = _UPPER_KEEP if upper else "".join(_LOWER_AS.values())
    marks = "".join(chr(0xFDD0 + k) for k in range(len(kept)))  # Unicode noncharacters
    plain = _func("upper" if upper else "lower", node.this.copy())
    inner = _func("translate", node.this, _string(kept), _string(marks))
    mapped = _func("translate", _func("upper" if upper else "lower", inner), _string(marks), _string(back))
    # a text that holds one of the marks itself keeps Java's mapping rather than change characters
    return exp.If(this=exp.RegexpLike(this=node.this.copy(), expression=_string("[\uFDD0-\uFDEF]")),
                  true=plain, false=mapped)


_QUOTED_KEYWORDS = sorted(w for w, category in pg_keywords.CATEGORY.items() if category != "U")


def _quote_ident(text: exp.Expression) -> exp.Expression:
    """quote_ident: as written when all lower-case letters, digits and underscores (not starting
    with a digit) and no keyword PostgreSQL reserves in any way; else double-quoted, "" doubled."""
    safe = exp.and_(exp.RegexpLike(this=text.copy(), expression=_string("^[a-z_][a-z0-9_]*$")),
                    exp.Not(this=exp.In(this=text.copy(), expressions=[_string(w) for w in _QUOTED_KEYWORDS])))
    quoted = _func("concat", _string('"'), _func("replace", text.copy(), _string('"'), _string('""')), _string('"'))
    return exp.If(this=safe, true=text, false=quoted)


_ARRAY_VARS = itertools.count()


@_evaluated_once
def _array_text(value: exp.Expression) -> exp.Expression:
    """An array as array_out writes it (``{1,NULL,"a b"}``: elements in their type's output
    form, quoted when empty, ``NULL``-like, or holding a quote, backslash, brace, comma or white
    space); Spark's cast gives ``[1, null, a b]``."""
    dt = value.type if isinstance(value.type, exp.DataType) else None
    element_type = dt.expressions[0] if dt is not None and dt.expressions else None
    var = exp.to_identifier(f"__a{next(_ARRAY_VARS)}")
    x = exp.column(var.name)
    if isinstance(element_type, exp.DataType):
        x.type = element_type.copy()
    et = element_type.this if isinstance(element_type, exp.DataType) else None
    if et == _T.ARRAY:
        element = _array_text(x)
    else:
        text = _bool_text(x) if et == _T.BOOLEAN else _PG_TEXT_OF[et](x) if et in _PG_TEXT_OF else _cast(x, "STRING")
        plain = exp.Paren(this=exp.or_(
            exp.EQ(this=text.copy(), expression=_string("")),
            exp.EQ(this=_func("lower", text.copy()), expression=_string("null")),
            exp.RegexpLike(this=text.copy(), expression=_string('[{},"\\\\\\s]'))))
        quoted = _func("concat", _string('"'), _regexp_replace(text.copy(), '(["\\\\])', "\\\\$1"), _string('"'))
        element = exp.Case(ifs=[exp.If(this=exp.Is(this=x.copy(), expression=exp.Null()), true=_string("NULL")),
                                exp.If(this=plain, true=quoted)], default=text)
    body = _func("concat", _string("{"),
                 _func("array_join", _func("transform", value.copy(), exp.Lambda(this=element, expressions=[var])),
                       _string(",")),
                 _string("}"))
    return exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null(), false=body)


# Casts to text that Spark spells differently from PostgreSQL, by source type.
def _bytea_text(v: exp.Expression) -> exp.Expression:
    """bytea as text: its output form, hex (Spark's cast decoded the bytes as UTF-8)."""
    return _func("concat", _string("\\x"), _func("lower", _func("hex", v)))


def _ansi_interval_text(value: exp.Expression) -> exp.Expression:
    """A Spark ANSI interval (``ts - ts``, ``interval '1 day' * 2``) as PostgreSQL prints an
    interval (``1 day 03:00:00``, ``1 year 2 mons``); Spark's text is ``INTERVAL '1 03:00:00' DAY
    TO SECOND``. Other interval values keep Spark's text (constants are PostgreSQL's own). Spark's
    text is read once and its months, days and microseconds computed once (lambda variables):
    written out in place, the nested copies made a statement Spark's parser took minutes over."""
    s, q = exp.to_identifier(f"tg_iv_{next(_once_names)}"), exp.to_identifier(f"tg_iv_{next(_once_names)}")
    day_time = r"^INTERVAL '(-?)(\d+) (\d+):(\d+):([0-9.]+)' DAY TO SECOND$"
    year_month = r"^INTERVAL '(-?)(\d+)-(\d+)' YEAR TO MONTH$"

    def text() -> exp.Expression:
        return exp.Column(this=s.copy())

    def number(pattern: str, n: int, kind: str = "BIGINT") -> exp.Expression:
        return _cast(_func("regexp_extract", text(), _string(pattern), _num(n)), kind)

    def signed(pattern: str, magnitude: exp.Expression) -> exp.Expression:
        negative = exp.EQ(this=_func("regexp_extract", text(), _string(pattern), _num(1)), expression=_string("-"))
        return exp.Mul(this=exp.paren(magnitude), expression=exp.If(this=negative, true=_num(-1), false=_num(1)))

    micros = exp.Add(this=exp.Add(
        this=exp.Mul(this=number(day_time, 3), expression=_num(3_600_000_000)),
        expression=exp.Mul(this=number(day_time, 4), expression=_num(60_000_000))),
        expression=_cast(exp.Mul(this=number(day_time, 5, "DECIMAL(18,6)"), expression=_num(1_000_000)), "BIGINT"))
    months = exp.Add(this=exp.Mul(this=number(year_month, 2), expression=_num(12)), expression=number(year_month, 3))
    zero = _cast(_num(0), "BIGINT")
    parts = exp.Case(ifs=[
        exp.If(this=exp.RegexpLike(this=text(), expression=_string(day_time)),
               true=_func("named_struct", _string("m"), zero.copy(), _string("d"), signed(day_time, number(day_time, 2)),
                          _string("t"), signed(day_time, micros))),
        exp.If(this=exp.RegexpLike(this=text(), expression=_string(year_month)),
               true=_func("named_struct", _string("m"), signed(year_month, months), _string("d"), zero.copy(),
                          _string("t"), zero.copy())),
    ])

    def field(key: str) -> exp.Expression:
        return exp.Dot(this=exp.Column(this=q.copy()), expression=exp.to_identifier(key))

    printed = exp.If(this=exp.Is(this=exp.Column(this=q.copy()), expression=exp.Null()), true=text(),
                     false=_interval_text_of(field("m"), field("d"), field("t")))
    inner = _func("element_at", _func("transform", _func("array", parts),
                                      exp.Lambda(this=printed, expressions=[q.copy()])), _num(1))
    return _func("element_at", _func("transform", _func("array", _cast(value, "STRING")),
                                     exp.Lambda(this=inner, expressions=[s.copy()])), _num(1))


_PG_TEXT_OF = {
    _T.INTERVAL: _ansi_interval_text,
    _T.ARRAY: _array_text,
    _T.VARBINARY: _bytea_text,
    _T.BINARY: _bytea_text,
    _T.DOUBLE: lambda v: _float_text(v, 15),
    _T.FLOAT: lambda v: _float_text(v, 6),
    _T.TIME: _time_text,
    _T.TIMESTAMPTZ: _timestamptz_text,
    _T.TIMESTAMPLTZ: _timestamptz_text,
}


def _interval_constant(value: exp.Expression) -> PgInterval | None:
    """The PostgreSQL value of an interval constant (parenthesized or not), else None."""
    value = value.unnest()
    return value.meta.get("pg_interval") if value.meta else None


def _against(node: exp.Binary, other: exp.Expression) -> exp.Expression:
    """``node``'s comparison (=, <, [NOT] [I]LIKE ...) of its left operand against ``other``."""
    out = node.copy()
    out.set("expression", other)
    return out


def _number_constant(node: exp.Expression) -> float | None:
    node = node.unnest()
    sign = 1.0
    if isinstance(node, exp.Neg):
        node, sign = node.this.unnest(), -1.0
    if isinstance(node, exp.Literal) and not node.is_string:
        return sign * float(node.name)
    return None


_INTERVAL_COMPARISONS = {exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.LT: operator.lt, exp.LTE: operator.le,
                         exp.GT: operator.gt, exp.GTE: operator.ge}


def _fold_interval_constants(node: exp.Expression) -> exp.Expression | None:
    """Arithmetic and comparisons of interval constants, computed here by PostgreSQL's rules
    (tidegate.pgvalues): Spark keeps year-month and day-time intervals apart, so '1 month' * 1.5,
    '1 month' = '30 days' or '1 day' = '24 hours' failed with its own wording, and it carries a
    product's hours into days. None when ``node`` is not such a computation."""
    if not isinstance(node, exp.Binary) and not isinstance(node, exp.Neg):
        return None
    if isinstance(node, exp.Neg):
        iv = _interval_constant(node.this)
        return None if iv is None else _interval_value(PgInterval(-iv.months, -iv.days, -iv.micros), node)
    left, right = _interval_constant(node.this), _interval_constant(node.expression)
    if isinstance(node, (exp.Mul, exp.Div)) and (left is None) != (right is None):
        iv = left or right
        factor = _number_constant(node.expression if left is not None else node.this)
        if factor is None or (isinstance(node, exp.Div) and left is None):
            return None
        scaled = pgvalues.interval_scale(iv.months, iv.days, iv.micros, factor, divide=isinstance(node, exp.Div))
        return _interval_value(PgInterval(*scaled), node)
    if left is None or right is None:
        return None
    if isinstance(node, (exp.Add, exp.Sub)):
        sign = 1 if isinstance(node, exp.Add) else -1
        return _interval_value(PgInterval(left.months + sign * right.months, left.days + sign * right.days,
                                          left.micros + sign * right.micros), node)
    compare = _INTERVAL_COMPARISONS.get(type(node))
    if compare is None:
        return None
    spans = [pgvalues.interval_span(iv.months, iv.days, iv.micros) for iv in (left, right)]
    return _typed(exp.Boolean(this=compare(*spans)), exp.DataType.build("BOOLEAN"))


def _interval_valued(value: exp.Expression) -> bool:
    """Whether ``value`` is an interval (its type, or PostgreSQL's for time arithmetic: ts - ts)."""
    value = value.unnest()
    if isinstance(value, exp.Sub) and {_dtype(value.this), _dtype(value.expression)} <= _NTZ_TYPES | _TZ_TYPES:
        return True  # timestamp - timestamp (sqlglot types it a timestamp)
    return _dtype(value) == _T.INTERVAL or (value.meta or {}).get(_PG_TYPE_NAME) == pgoperators.INTERVAL


def _text_operand(value: exp.Expression) -> exp.Expression:
    """An operand of text || as its type's output form where Spark's text of it differs."""
    iv = _interval_constant(value)
    if iv is not None:  # an interval constant: PostgreSQL's text ('1 day 02:00:00', not Spark's)
        return _string(format_interval(iv.months, iv.days, iv.micros))
    if _interval_valued(value):
        return _ansi_interval_text(value)
    to_text = _PG_TEXT_OF.get(_dtype(value))
    return to_text(value) if to_text is not None else value



# -- json (PostgreSQL's to_json, json_build_*, jsonb_build_*; json and jsonb are kept as their text)


def _json_string(text: exp.Expression) -> exp.Expression:
    """``text`` as a JSON string: quoted, and escaped as PostgreSQL's escape_json escapes (\\",
    \\\\, \\b \\f \\n \\r \\t, \\uXXXX for the other control characters), which Spark's JSON writer
    does too."""
    quoted = _func("to_json", _func("array", text))  # ["..."]
    return _func("substring", quoted, exp.Literal.number(2),
                 exp.Sub(this=_func("length", quoted.copy()), expression=exp.Literal.number(2)))


_JSON_SCALAR_TEXT = {_T.JSON, _T.JSONB}
_JSON_RESULTS = {"json_build_object": "json", "json_build_array": "json", "to_json": "json",
                 "jsonb_build_object": "jsonb", "jsonb_build_array": "jsonb", "to_jsonb": "jsonb",
                 "json_typeof": "text", "jsonb_typeof": "text", "json_array_length": "int4",
                 "jsonb_array_length": "int4", "jsonb_agg": "jsonb"}


def _json_value(x: exp.Expression, jsonb: bool = False) -> exp.Expression:
    """The JSON text of ``x`` as PostgreSQL's to_json / to_jsonb writes it (SQL NULL is ``null``
    here; the callers decide what a NULL argument gives). ``jsonb``: arrays are written as jsonb
    prints them (``[1, 2]``; to_json: ``[1,2]``)."""
    t = _dtype(x)
    if isinstance(x, exp.Null) or t == _T.NULL:
        return _string("null")
    if t == _T.BOOLEAN:
        value: exp.Expression = exp.If(this=x.copy(), true=_string("true"), false=_string("false"))
    elif t in _INTEGER_TYPES:
        value = _cast(x.copy(), "STRING")
    elif t == _T.DECIMAL:
        params = _type_params(x.type)
        constant = isinstance(x.unnest(), (exp.Literal, exp.Neg))
        if params[:1] == [_DISPLAY_SCALE_ONLY] and len(params) == 2:  # a known display scale
            value = _cast(_cast(x.copy(), f"DECIMAL(38,{params[1]})"), "STRING")
        else:
            value = _cast(x.copy(), "STRING")  # numeric(p, s) and constants print their scale
            if not params and not constant:  # an unconstrained numeric's digits, not 18 decimals
                value = _regexp_replace(_regexp_replace(value, r"(\.\d*?)0+$", "$1"), r"\.$", "")
    elif t in _FLOAT_TYPES:
        text = _float_text(x.copy(), 6 if t == _T.FLOAT else 15)
        special = exp.In(this=text.copy(), expressions=[_string("NaN"), _string("Infinity"), _string("-Infinity")])
        value = exp.If(this=special, true=_json_string(text.copy()), false=text)
    elif t in _JSON_SCALAR_TEXT:
        value = _cast(x.copy(), "STRING")
    elif t == _T.DATE:
        value = _json_string(_func("date_format", x.copy(), _string("yyyy-MM-dd")))
    elif t in _NTZ_TYPES:
        value = _json_string(_func("concat", _func("date_format", x.copy(), _string("yyyy-MM-dd'T'HH:mm:ss")),
                                   _fraction_text(_ntz_micros(x.copy()))))
    elif t in _TZ_TYPES:
        value = _json_string(_func("concat", _func("date_format", x.copy(), _string("yyyy-MM-dd'T'HH:mm:ss")),
                                   _fraction_text(_func("unix_micros", x.copy())),
                                   _func("date_format", x.copy(), _string("xxx"))))
    elif t == _T.ARRAY:
        element = x.type.expressions[0] if x.type.expressions else exp.DataType.build("TEXT")
        var = exp.to_identifier("__j")
        item = exp.Column(this=var.copy())
        item.type = element.copy()
        inner = _json_value(item, jsonb)
        body = _func("array_join", _func("transform", x.copy(), exp.Lambda(this=inner, expressions=[var])),
                     _string(", " if jsonb else ","))
        value = _func("concat", _string("["), body, _string("]"))
    elif t in (_T.INTERVAL, None, _T.UNKNOWN) and not (isinstance(x, exp.Literal) and x.is_string):
        raise SqlError("0A000", f"JSON of a value of type {_pg_arg_type(x)} is not supported",
                       hint="Cast it to text first: its text becomes a JSON string.")
    else:  # text and the other types: their text, as a JSON string
        value = _json_string(_value_text(x))
    return exp.Case(ifs=[exp.If(this=exp.Is(this=exp.paren(x.copy()), expression=exp.Null()), true=_string("null"))],
                    default=value)


def _json_key(key: exp.Expression, position: int) -> exp.Expression:
    """An object key (argument ``position``): its text; NULL is 22023, as in PostgreSQL."""
    text = _value_text(key)
    return exp.Case(ifs=[exp.If(this=exp.Is(this=exp.paren(key.copy()), expression=exp.Null()),
                                true=_func("raise_error", _string(
                                    f"{_RAISED_PREFIX}22023:argument {position} cannot be null")))],
                    default=text)


def _value_text(value: exp.Expression) -> exp.Expression:
    """``value``'s text as a cast to text writes it (a json key; a json string's content)."""
    to_text = _PG_TEXT_OF.get(_dtype(value))
    return to_text(value.copy()) if to_text is not None else _cast(value.copy(), "STRING")


def _json_build(name: str, args: list[exp.Expression]) -> exp.Expression:
    """json_build_object / jsonb_build_object / json_build_array / jsonb_build_array."""
    jsonb = name.startswith("jsonb")
    if name.endswith("_array"):
        items = [_json_value(a, jsonb) for a in args]
        body = _func("concat_ws", _string(", "), *items) if items else _string("")
        return _typed(_func("concat", _string("["), body, _string("]")), exp.DataType.build("JSONB" if jsonb else "JSON"))
    if len(args) % 2:
        raise SqlError("22023", "argument list must have even number of elements",
                       hint=f"The arguments of {name}() must consist of alternating keys and values.")
    pairs = [(_json_key(args[k], k + 1), _json_value(args[k + 1], jsonb)) for k in range(0, len(args), 2)]
    if not jsonb:  # {"a" : 1, "b" : 2}, in the order written
        members = [_func("concat", _json_string(k), _string(" : "), v) for k, v in pairs]
        body = _func("concat_ws", _string(", "), *members) if members else _string("")
        return _typed(_func("concat", _string("{"), body, _string("}")), exp.DataType.build("JSON"))
    if not pairs:
        return _typed(_string("{}"), exp.DataType.build("JSONB"))
    # jsonb: one member per key (the last one written), keys shorter first, then by their bytes
    entries = _func("array", *[_func("named_struct", _string("p"), exp.Literal.number(i), _string("k"), k,
                                     _string("v"), v) for i, (k, v) in enumerate(pairs)])
    e, o, l, r = (exp.to_identifier(n) for n in ("__e", "__o", "__l", "__r"))
    later_same = _func("exists", entries.copy(), exp.Lambda(
        this=exp.and_(exp.EQ(this=exp.Dot(this=exp.Column(this=o.copy()), expression=exp.to_identifier("k")),
                             expression=exp.Dot(this=exp.Column(this=e.copy()), expression=exp.to_identifier("k"))),
                      exp.GT(this=exp.Dot(this=exp.Column(this=o.copy()), expression=exp.to_identifier("p")),
                             expression=exp.Dot(this=exp.Column(this=e.copy()), expression=exp.to_identifier("p")))),
        expressions=[o.copy()]))
    kept = _func("filter", entries, exp.Lambda(this=exp.Not(this=later_same), expressions=[e.copy()]))

    def key(side: exp.Identifier) -> exp.Expression:
        return exp.Dot(this=exp.Column(this=side.copy()), expression=exp.to_identifier("k"))

    def length(side: exp.Identifier) -> exp.Expression:
        return _func("octet_length", key(side))

    order = exp.Case(ifs=[exp.If(this=exp.LT(this=length(l), expression=length(r)), true=exp.Literal.number(-1)),
                          exp.If(this=exp.GT(this=length(l), expression=length(r)), true=exp.Literal.number(1)),
                          exp.If(this=exp.LT(this=key(l), expression=key(r)), true=exp.Literal.number(-1)),
                          exp.If(this=exp.GT(this=key(l), expression=key(r)), true=exp.Literal.number(1))],
                     default=exp.Literal.number(0))
    ordered = _func("array_sort", kept, exp.Lambda(this=order, expressions=[l.copy(), r.copy()]))
    member = _func("concat", _json_string(key(e)), _string(": "),
                   exp.Dot(this=exp.Column(this=e.copy()), expression=exp.to_identifier("v")))
    body = _func("array_join", _func("transform", ordered, exp.Lambda(this=member, expressions=[e.copy()])),
                 _string(", "))
    return _typed(_func("concat", _string("{"), body, _string("}")), exp.DataType.build("JSONB"))


def _json_first_char(j: exp.Expression) -> exp.Expression:
    return _func("regexp_extract", _cast(j.copy(), "STRING"), _string(r"^\s*(.)"), exp.Literal.number(1))


def _json_typeof(j: exp.Expression) -> exp.Expression:
    """jsonb_typeof / json_typeof: read from the value's first character (json and jsonb values
    were checked when they were made)."""
    first = _json_first_char(j)
    return _typed(exp.Case(ifs=[exp.If(this=exp.Is(this=exp.paren(j.copy()), expression=exp.Null()), true=exp.Null()),
                                exp.If(this=exp.EQ(this=first.copy(), expression=_string("{")), true=_string("object")),
                                exp.If(this=exp.EQ(this=first.copy(), expression=_string("[")), true=_string("array")),
                                exp.If(this=exp.EQ(this=first.copy(), expression=_string('"')), true=_string("string")),
                                exp.If(this=exp.In(this=first.copy(), expressions=[_string("t"), _string("f")]),
                                       true=_string("boolean")),
                                exp.If(this=exp.EQ(this=first.copy(), expression=_string("n")), true=_string("null"))],
                          default=_string("number")), exp.DataType.build("TEXT"))


def _json_array_length(j: exp.Expression) -> exp.Expression:
    first = _json_first_char(j)
    raised = "cannot get array length of a {}"
    return _typed(exp.Case(ifs=[
        exp.If(this=exp.Is(this=exp.paren(j.copy()), expression=exp.Null()), true=exp.Null()),
        exp.If(this=exp.EQ(this=first.copy(), expression=_string("{")), true=_func(
            "raise_error", _string(f"{_RAISED_PREFIX}22023:{raised.format('non-array')}"))),
        exp.If(this=exp.NEQ(this=first.copy(), expression=_string("[")), true=_func(
            "raise_error", _string(f"{_RAISED_PREFIX}22023:{raised.format('scalar')}")))],
        default=_func("size", _func("from_json", _cast(j.copy(), "STRING"), _string("array<string>")))),
        exp.DataType.build("INT"))


def _jsonb_has_key(j: exp.Expression, key: exp.Expression) -> exp.Expression:
    """``jsonb ? text``: an object's top-level key, an array's string element, or the string itself."""
    text = _cast(j.copy(), "STRING")
    first = _json_first_char(j)
    e = exp.to_identifier("__e")
    element = exp.Column(this=e.copy())
    string_element = exp.and_(
        exp.EQ(this=_func("schema_of_variant", element.copy()), expression=_string("STRING")),
        exp.EQ(this=_func("variant_get", element.copy(), _string("$"), _string("string")), expression=key.copy()))
    return exp.Case(ifs=[
        exp.If(this=exp.EQ(this=first.copy(), expression=_string("{")),
               true=_func("array_contains", _func("json_object_keys", text.copy()), key.copy())),
        exp.If(this=exp.EQ(this=first.copy(), expression=_string("[")),
               true=_func("exists", _cast(_func("parse_json", text.copy()), "ARRAY<VARIANT>"),
                          exp.Lambda(this=string_element, expressions=[e.copy()]))),
        exp.If(this=exp.EQ(this=first.copy(), expression=_string('"')),
               true=exp.EQ(this=_func("variant_get", _func("parse_json", text.copy()), _string("$"), _string("string")),
                           expression=key.copy()))],
        default=exp.false())



def _num(value: int) -> exp.Literal:
    return exp.Literal.number(value)


def _interval_text_of(months: exp.Expression, days: exp.Expression, micros: exp.Expression) -> exp.Expression:
    """An interval's text as PostgreSQL prints it (IntervalStyle postgres, EncodeInterval), from
    its months, days and microseconds computed in Spark: ``1 year 2 mons -3 days +04:05:06.5``."""
    years = _func("div", months.copy(), _num(12))
    mons = exp.paren(exp.Sub(this=months.copy(), expression=exp.Mul(this=years.copy(), expression=_num(12))))

    def part(value: exp.Expression, unit: str, before_negative: exp.Expression) -> exp.Expression:
        plus = exp.If(this=exp.and_(before_negative, exp.GT(this=value.copy(), expression=_num(0))),
                      true=_string("+"), false=_string(""))
        text = _func("concat", plus, _cast(value.copy(), "STRING"), _string(f" {unit}"),
                     exp.If(this=exp.EQ(this=value.copy(), expression=_num(1)), true=_string(""), false=_string("s")))
        return exp.If(this=exp.EQ(this=value.copy(), expression=_num(0)), true=exp.Null(), false=text)

    def negative(value: exp.Expression) -> exp.Expression:
        return exp.LT(this=value.copy(), expression=_num(0))

    def last_negative(*values: exp.Expression) -> exp.Expression:
        """Whether the last nonzero of ``values`` is negative (PostgreSQL's is_before)."""
        out: exp.Expression = exp.false()
        for v in values:
            out = exp.If(this=exp.NEQ(this=v.copy(), expression=_num(0)), true=negative(v), false=out)
        return out

    magnitude = _func("abs", micros.copy())
    hours = _func("div", magnitude.copy(), _num(3_600_000_000))
    minutes = _func("pmod", _func("div", magnitude.copy(), _num(60_000_000)), _num(60))
    seconds = _func("pmod", _func("div", magnitude.copy(), _num(1_000_000)), _num(60))

    def two(value: exp.Expression) -> exp.Expression:
        return _func("lpad", _cast(value, "STRING"), _func("greatest", _num(2), _func("length", _cast(value.copy(), "STRING"))),
                     _string("0"))

    sign = exp.If(this=negative(micros), true=_string("-"),
                  false=exp.If(this=last_negative(years, mons, days), true=_string("+"), false=_string("")))
    clock = _func("concat", sign, two(hours), _string(":"), two(minutes), _string(":"), two(seconds),
                  _fraction_text(magnitude.copy()))
    nothing_else = exp.and_(*[exp.EQ(this=v.copy(), expression=_num(0)) for v in (years, mons, days)])
    time_part = exp.If(this=exp.or_(nothing_else, exp.NEQ(this=micros.copy(), expression=_num(0))), true=clock,
                       false=exp.Null())
    return _func("concat_ws", _string(" "), part(years, "year", exp.false()), part(mons, "mon", negative(years)),
                 part(days, "day", last_negative(years, mons)), time_part)


def _float_digits(x: exp.Expression, digits: int) -> exp.Expression:
    """The text of the double ``x`` to ``digits`` significant digits, as PostgreSQL converts
    float8 (15) and real (6) to numeric (``%.*g``: the exact binary value rounded; Spark's own
    cast kept every digit of the shortest form, 0.1::float8 + 0.2 became 0.30000000000000004).
    Java's DecimalFormat (``format_number``) rounds the exact binary value as printf does; past
    10^digits, where it would need negative decimals, ``%e`` gives the digits."""
    magnitude = _cast(_func("floor", _func("log10", _func("abs", x.copy()))), "INT")
    places = exp.Sub(this=exp.Literal.number(digits - 1), expression=magnitude)
    fixed = _func("replace", _func("format_number", x.copy(), places), _string(","), _string(""))
    scientific = _func("format_string", _string(f"%.{digits - 1}e"), x.copy())
    return exp.Case(ifs=[
        exp.If(this=exp.EQ(this=x.copy(), expression=exp.Literal.number(0)), true=_string("0")),
        exp.If(this=exp.GTE(this=_func("abs", x.copy()), expression=exp.Literal.number(f"1e{digits}")),
               true=scientific),
    ], default=fixed)


def _float_integral(arg: exp.Expression, integral) -> exp.Expression:
    """floor / ceil / trunc of a double precision value as a double precision value. Spark's
    floor and ceil return a bigint (NaN became 0, infinities and values past 2^63 overflowed):
    a value at least 2^52 in magnitude, NaN or infinite is already integral and kept as it is."""
    x = _cast(arg.copy(), "DOUBLE")
    whole = exp.or_(_func("isnan", x.copy()),
                    exp.GTE(this=_func("abs", x.copy()), expression=exp.Literal.number(1 << 52)))
    return exp.If(this=whole, true=x.copy(), false=_cast(integral(x.copy()), "DOUBLE"))


def _pg_arg_type(node: exp.Expression) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return "unknown"
    t = _dtype(node)
    return _PG_ARG_TYPE.get(t, "unknown") if t is not None else "unknown"


def _literal_arg_type(node: exp.Expression) -> str:
    """_pg_arg_type of an argument not annotated yet (its literal types; columns are unknown)."""
    if node.type is None:
        node = annotate_types(node.copy(), dialect=Tidegate)
    return _pg_arg_type(node)


_FLOAT_CAST_TYPES = {_T.DOUBLE: False, _T.FLOAT: True}  # -> real?
_MAX_NUMERIC_DIGITS = 38  # a Spark decimal's


def _numeric_literal(literal: exp.Literal) -> None:
    """A numeric constant as PostgreSQL reads it: ``1e37`` and ``1.5e-20`` are exact numerics
    (Spark reads an exponent as a double), written out in plain digits. One wider than a Spark
    decimal is a double only where PostgreSQL turns it into one (a cast to a float, a comparison, a
    float column's value: ``1e400::float8`` is 22003 as there); anywhere else it is 0A000, never a
    double standing in for a numeric."""
    text = literal.name
    if text.isdigit() and (len(text) < 19 or int(text) < 2**63):
        return  # an integer constant, typed by its value
    context = literal.parent
    while isinstance(context, (exp.Neg, exp.Paren)):
        context = context.parent
    value = pgvalues.WIDE_DECIMAL.create_decimal(text)
    if not -16383 <= value.adjusted() < 131072:  # numeric's own limits (digits before / after the point)
        raise SqlError("22003", "value overflows numeric format")
    plain = format(value, "f")
    if isinstance(context, exp.Cast) and context.to.this in _FLOAT_CAST_TYPES:
        real = _FLOAT_CAST_TYPES[context.to.this]
        try:
            pgvalues.parse_float(text, real=real)
        except SqlError as e:  # PostgreSQL's cast names the numeric's digits
            raise SqlError(e.sqlstate, f'"{plain}" is out of range for type {"real" if real else "double precision"}') \
                from None
        return
    sign, digits, exponent = value.as_tuple()
    scale = max(0, -exponent)
    precision = max(len(digits) + max(exponent, 0), scale)
    if precision > _MAX_NUMERIC_DIGITS or scale > _MAX_NUMERIC_DIGITS:
        if isinstance(context, _FLOAT_CONTEXTS) and math.isfinite(float(value)) and (float(value) or not value):
            return  # compared as a double (a float column's comparison converts it so)
        raise SqlError("0A000", f"numeric constant {text} needs {max(precision, scale)} digits: tidegate's numeric "
                                f"values have at most {_MAX_NUMERIC_DIGITS}",
                       hint="Cast it to double precision, or write fewer digits.")
    if plain != text:
        literal.set("this", plain)
        if plain.isdigit():
            literal.meta[NUMERIC_CONSTANT] = True  # 1e10: numeric, though written out as digits


# Collations that order text by its bytes, as every comparison here does (Spark's UTF8_BINARY; the
# oracle PostgreSQL's database collation is C too).
_BYTE_ORDER_COLLATIONS = {"c", "posix", "default", "ucs_basic"}


def _collate(node: exp.Collate) -> None:
    """``x COLLATE "C"``: text compared by its bytes, which is how tidegate compares text."""
    name = node.expression.name
    qualifier = node.expression.args.get("table") if isinstance(node.expression, exp.Column) else None
    if name.lower() not in _BYTE_ORDER_COLLATIONS or (qualifier is not None and qualifier.name != "pg_catalog"):
        raise SqlError("0A000", f'collation "{name}" is not supported: text is compared by its bytes, as '
                                'collation "C" compares it',
                       hint='Write COLLATE "C", or leave the COLLATE clause out.')
    node.replace(node.this)


_FLOAT_CONTEXTS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In)


class _Translator:
    def __init__(self, resolver: TableResolver | None, params: Sequence[Any]) -> None:
        self.resolver = resolver
        self.params = list(params)
        self.schema: dict[str, dict[str, str]] = {}
        self.tables: list[tuple[str, str]] = []
        self.generators: dict[str, exp.Expression] = {}  # placeholder table -> generator node
        self.labels: dict[str, str] = {}  # distinct Spark name of a repeated subquery column -> its name
        self._counter = 0
        # the session's TimeZone: timestamptz literals without offset are read in it
        info = getattr(resolver, "info", None)
        self.zone: str = getattr(info, "timezone", None) or "UTC"

    # ---------------------------------------------------------------- preparation (pre-qualify)

    def _name(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def bind_params(self, tree: exp.Expression) -> exp.Expression:
        for node in list(tree.find_all(exp.Parameter, exp.Placeholder)):
            raw = node.this.name if isinstance(node.this, exp.Expression) else str(node.this or node.name)
            if not raw.isdigit():
                raise SqlError("42601", f'syntax error at or near "{node.sql("postgres")}"')
            index = int(raw)
            if index < 1 or index > len(self.params):
                raise SqlError("42P02", f"there is no parameter ${index}")
            value = self.params[index - 1]
            holder = node.parent
            while isinstance(holder, (exp.Paren, exp.Cast)):  # LIMIT $1::INTEGER (SQLAlchemy on psycopg)
                holder = holder.parent
            if (value is None or isinstance(value, TypedNull)) and isinstance(holder, (exp.Limit, exp.Offset, exp.Fetch)) \
                    and holder.parent is not None:
                holder.pop()  # LIMIT NULL / OFFSET NULL / FETCH FIRST NULL ROWS: no limit, no offset
                continue
            literal = param_literal(value)
            literal.meta[pgoperators.PARAMETER] = True  # named like a bare $n: "?column?"
            node.replace(literal)
        return tree

    def prepare(self, tree: exp.Expression, depth: int = 0) -> exp.Expression:
        """Rewrite relations: VALUES, set-returning functions in FROM, table -> view."""
        if depth > 32:
            raise SqlError("42P17", "infinite recursion detected in rules for relation")
        for neg in list(tree.find_all(exp.Neg)):  # outermost first
            value = negated_literal(neg) if neg.parent is not None else None
            if value is not None:  # one constant, as PostgreSQL reads it: -(-9223372036854775808) is numeric
                literal = exp.Literal.number(abs(value))
                neg.replace(exp.Neg(this=literal) if value < 0 else literal)
        for literal in list(tree.find_all(exp.Literal)):
            if not literal.is_string:
                _numeric_literal(literal)
        for collate in list(tree.find_all(exp.Collate)):
            _collate(collate)
        for join in list(tree.find_all(exp.Join)):
            if isinstance(join.args.get("on"), exp.Subquery):  # ON (SELECT ...): a condition, not a joined relation
                join.set("on", exp.Paren(this=join.args["on"]))
        if isinstance(tree, exp.Values) and not isinstance(tree.parent, (exp.From, exp.Join)):
            tree = self._values_statement(tree)
        cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for values in list(tree.find_all(exp.Values)):
            if isinstance(values.parent, (exp.From, exp.Join, exp.Subquery)) or values is tree:
                self._name_values_columns(values)
        for node in list(tree.find_all(exp.Table)):
            inner = node.this
            if node.args.get("ordinality"):
                raise SqlError("0A000", "WITH ORDINALITY is not supported")
            if isinstance(inner, (exp.ExplodingGenerateSeries, exp.GenerateSeries)):
                self._generator_placeholder(node, inner, "generate_series")
            elif isinstance(inner, exp.Anonymous) and inner.name.lower() == "generate_series":
                series = exp.ExplodingGenerateSeries(
                    start=inner.expressions[0],
                    end=inner.expressions[1] if len(inner.expressions) > 1 else None,
                    step=inner.expressions[2] if len(inner.expressions) > 2 else None,
                )
                self._generator_placeholder(node, series, "generate_series")
            elif isinstance(inner, (exp.Anonymous, exp.Func)) and not isinstance(inner, exp.Identifier):
                fname = inner.name if isinstance(inner, exp.Anonymous) else inner.sql_name()
                written = pgfunctions.written_name(inner)
                if written is not None and written not in pgfunctions.PG_FUNCTIONS:
                    raise pgfunctions.undefined_function(fname.lower(), [
                        _literal_arg_type(a) for a in pgfunctions.call_arguments(inner)])
                raise SqlError("0A000", f"function {fname.lower()}() in FROM is not supported")
        for node in list(tree.find_all(exp.Unnest)):
            if isinstance(node.parent, (exp.From, exp.Join)):
                self._generator_placeholder(node, node, "unnest")
        for node in list(tree.find_all(exp.Table)):
            if not isinstance(node.this, exp.Identifier) or node.name in self.generators:
                continue
            name = node.name
            schema = node.db or None
            if schema is None and name.lower() in cte_names:
                continue
            self._resolve_table(node, schema, name, depth)
        return tree

    def _values_statement(self, values: exp.Values) -> exp.Expression:
        width = len(values.expressions[0].expressions) if values.expressions else 0
        alias = exp.TableAlias(
            this=exp.to_identifier("*VALUES*", quoted=True),
            columns=[exp.to_identifier(f"column{i + 1}") for i in range(width)],
        )
        values.set("alias", alias)
        select = exp.select("*").from_(values)
        return select

    def _name_values_columns(self, values: exp.Values) -> None:
        width = len(values.expressions[0].expressions) if values.expressions else 0
        alias = values.args.get("alias")
        if alias is None:
            alias = exp.TableAlias(this=exp.to_identifier("*VALUES*", quoted=True))
            values.set("alias", alias)
        columns = list(alias.columns)
        if len(columns) < width:
            columns += [exp.to_identifier(f"column{i + 1}") for i in range(len(columns), width)]
            alias.set("columns", columns)

    def _generator_placeholder(self, node: exp.Expression, generator: exp.Expression, fname: str) -> None:
        """Stand a placeholder table in for a set-returning function while qualifying."""
        alias = node.args.get("alias")
        alias_name = alias.name if alias is not None and alias.name else fname
        columns = list(alias.columns) if alias is not None else []
        col_name = columns[0].name if columns else (alias_name if alias is not None and alias.name else fname)
        placeholder = self._name("__srf")
        # The element type decides integer semantics downstream; infer it from the arguments.
        if isinstance(generator, exp.Unnest):
            elem_type = "TEXT"
            arr = generator.expressions[0] if generator.expressions else None
            if isinstance(arr, exp.Array) and arr.expressions:
                elem_type = self._literal_type(arr.expressions[0])
            elif isinstance(arr, exp.Cast) and arr.to.this == _T.ARRAY and arr.to.expressions:
                elem_type = arr.to.expressions[0].sql("postgres")
        else:
            elem_type = self._literal_type(generator.args.get("start"))
            bounds = [self._literal_type(generator.args.get(k)) for k in ("start", "end", "step")
                      if generator.args.get(k) is not None]
            if elem_type == "INT" and "BIGINT" in bounds and set(bounds) <= {"INT", "BIGINT"}:
                elem_type = "BIGINT"  # generate_series(int, bigint) is generate_series(bigint, bigint)
        self.schema[placeholder] = {col_name.lower(): elem_type}
        table = exp.Table(
            this=exp.to_identifier(placeholder),
            alias=exp.TableAlias(this=exp.to_identifier(alias_name), columns=[exp.to_identifier(col_name)]),
        )
        self.generators[placeholder] = generator.copy() if generator is not node else node.copy()
        node.replace(table)

    @staticmethod
    def _literal_type(node: exp.Expression | None) -> str:
        if node is None:
            return "INT"
        probe = annotate_types(node.copy(), dialect=Tidegate)
        t = probe.type
        if isinstance(t, exp.DataType) and t.this not in (_T.UNKNOWN, _T.NULL):
            if t.this in _STRING_TYPES:
                return "TIMESTAMPTZ"
            return t.sql("postgres")
        return "INT"

    def _resolve_table(self, node: exp.Table, schema: str | None, name: str, depth: int) -> None:
        if self.resolver is None:
            raise SqlError("42P01", f'relation "{name}" does not exist')
        database = node.args.get("catalog")
        if database is not None:
            # db.schema.table: only the current database, as in PostgreSQL
            info = getattr(self.resolver, "info", None)
            if database.name not in (DATABASE_NAME, getattr(info, "database", None)):
                parts = [p.name for p in (database, node.args.get("db"), node.this) if p is not None]
                raise SqlError("0A000", f'cross-database references are not implemented: "{".".join(parts)}"')
        rel = self.resolver.resolve(schema, name)
        alias = node.args.get("alias")
        if alias is None or not alias.name:
            alias_node = exp.TableAlias(this=exp.to_identifier(name))
            if alias is not None and alias.columns:
                alias_node.set("columns", alias.columns)
            alias = alias_node
        if rel.view_sql:
            statements = parse_sql(rel.view_sql)
            if len(statements) != 1:
                raise SqlError("XX000", f'view "{rel.name}" has an invalid definition')
            with self.resolver.view_scope(rel):
                view = self.prepare(statements[0], depth + 1)
            node.replace(exp.Subquery(this=view, alias=alias))
            return
        if (rel.schema, rel.name) not in self.tables:
            self.tables.append((rel.schema, rel.name))
        self.schema[rel.view_name] = {_schema_key(col): _sqlglot_type(ct) for col, ct in rel.columns}
        node.set("this", exp.to_identifier(rel.view_name))
        node.set("db", None)
        node.set("catalog", None)
        node.set("alias", alias)

    # ---------------------------------------------------------------- qualify / annotate

    def qualify(self, tree: exp.Expression) -> exp.Expression:
        try:
            tree = qualify(
                tree,
                dialect=Tidegate,
                schema=self.schema,
                quote_identifiers=False,
                identify=False,
                validate_qualify_columns=True,
            )
        except OptimizeError as err:
            raise self._qualify_error(err, tree) from None
        return annotate_types(tree, schema=self.schema, dialect=Tidegate)

    def _qualify_error(self, err: OptimizeError, tree: exp.Expression) -> SqlError:
        message = str(err)
        aliases = {t.alias_or_name for t in tree.find_all(exp.Table)} | {
            s.alias_or_name for s in tree.find_all(exp.Subquery) if s.alias_or_name
        } | {c.alias_or_name for c in tree.find_all(exp.CTE)}
        match = re.search(r"Column '([^']*)' could not be resolved(?: for table: '([^']*)')?", message)
        if match:
            column, table = match.group(1), match.group(2)
            column = column.split(".")[-1].strip('"')
            if table:
                if table not in aliases:
                    return SqlError("42P01", f'missing FROM-clause entry for table "{table}"')
                return SqlError("42703", f"column {table}.{column} does not exist")
            for col in tree.find_all(exp.Column):
                if col.name == column and col.table:
                    if col.table not in aliases:
                        return SqlError("42P01", f'missing FROM-clause entry for table "{col.table}"')
                    return SqlError("42703", f"column {col.table}.{column} does not exist")
            holders = [
                t for t in tree.find_all(exp.Table)
                if column.lower() in self.schema.get(t.name, {})
            ]
            if len(holders) > 1:
                return SqlError("42702", f'column reference "{column}" is ambiguous')
            return SqlError("42703", f'column "{column}" does not exist')
        match = re.search(r"Unknown column: (\S+)", message)
        if match:
            column = match.group(1).strip("'\"")
            for col in tree.find_all(exp.Column):
                if col.name == column and col.table:
                    if col.table not in aliases:
                        return SqlError("42P01", f'missing FROM-clause entry for table "{col.table}"')
                    return SqlError("42703", f"column {col.table}.{column} does not exist")
            return SqlError("42703", f'column "{column}" does not exist')
        match = re.search(r"Unknown table: '?([^'\s]*)'?", message) or re.search(r"table '?([^'\s]*)'? not found", message, re.I)
        if match:
            return SqlError("42P01", f'missing FROM-clause entry for table "{match.group(1)}"')
        if "Ambiguous column" in message or "ambiguous" in message.lower():
            match = re.search(r"'([^']*)'", message)
            return SqlError("42702", f'column reference "{match.group(1) if match else "?"}" is ambiguous')
        return SqlError("42601", message.splitlines()[0])

    # ---------------------------------------------------------------- output columns

    @staticmethod
    def output_select(tree: exp.Expression) -> exp.Select:
        node = tree
        while True:
            if isinstance(node, exp.Select):
                return node
            if isinstance(node, exp.SetOperation):
                node = node.this
            elif isinstance(node, exp.Subquery):
                node = node.this
            else:
                raise SqlError("0A000", f"{type(node).__name__.upper()} as a query is not supported")

    @staticmethod
    def mark_names(tree: exp.Expression) -> None:
        select = _Translator.output_select(tree)
        for proj in select.expressions:
            if not isinstance(proj, exp.Star) and not (isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star)):
                proj.meta["pg_output"] = pg_output_name(proj)

    def name_inner_columns(self, tree: exp.Expression) -> None:
        """Alias the unnamed projections of subqueries and CTEs with PostgreSQL's names.

        ``SELECT * FROM (SELECT count(*) FROM t) s`` names its column ``count`` in PostgreSQL;
        left alone, the projection would be named by the qualifier (``_col_0``) or by Spark
        (``count(1)``). A subquery may repeat a name (``SELECT 1, 2`` is ``?column?`` twice);
        Spark needs distinct names to tell them apart through ``*``, so repeats get a
        ``#n`` suffix and :meth:`pg_label` gives the name back for the client.
        """
        output = self.output_select(tree)
        for select in list(tree.find_all(exp.Select)):
            if select is output:
                continue
            used: set[str] = {p.alias_or_name.lower() for p in select.expressions if isinstance(p, exp.Alias)}
            for proj in list(select.expressions):
                if isinstance(proj, exp.Alias):
                    proj.set("alias", exp.to_identifier(_label(proj), quoted=True))
                    continue
                if isinstance(proj, (exp.Alias, exp.Star)) or (
                        isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star)):
                    continue
                name = pg_column_name(proj)
                label, k = name, 1
                while label.lower() in used:
                    k += 1
                    label = f"{name}#{k}"
                used.add(label.lower())
                if label != name:
                    self.labels[label] = name
                proj.replace(exp.alias_(proj.copy(), label, quoted=True))

    def pg_label(self, name: str) -> str:
        return self.labels.get(name, name)

    @staticmethod
    def output_columns(select: exp.Select) -> tuple[list[str], list[ColumnType | None]]:
        names: list[str] = []
        types: list[ColumnType | None] = []
        for proj in select.expressions:
            inner = proj.this if isinstance(proj, exp.Alias) else proj
            name = proj.meta.get("pg_output") or inner.meta.get("pg_output") or proj.alias_or_name
            names.append(name)
            types.append(_Translator._output_type(inner))
        return names, types

    @staticmethod
    def _output_type(node: exp.Expression) -> ColumnType | None:
        while isinstance(node, exp.Paren):
            node = node.this
        base = node.this if isinstance(node, (exp.Window, exp.Filter)) else node
        if isinstance(base, exp.Filter):
            base = base.this
        divides = isinstance(base, exp.Div) and _dtype(base) == _T.DECIMAL and not (
            {_dtype(base.this), _dtype(base.expression)} & _FLOAT_TYPES)
        averages = isinstance(base, exp.Avg) and (_dtype(base.this) in _INTEGER_TYPES or _dtype(base.this) == _T.DECIMAL)
        if divides or averages:
            operands = (base.this, base.expression) if divides else (_aggregate_value(base.this),)
            return ColumnType(NUMERIC, div_min_scale=max(_pg_display_scale(o) or 0 for o in operands))
        ct = _Translator._output_type_base(node)
        if ct is not None and ct.pg == NUMERIC and ct.precision is None:
            scale = _pg_display_scale(node)
            if scale is not None:
                # Display scale only (precision stays None, so typmod is -1 as in PostgreSQL).
                return ColumnType(NUMERIC, scale=scale)
        return ct

    @staticmethod
    def _output_type_base(node: exp.Expression) -> ColumnType | None:
        while isinstance(node, exp.Paren):
            node = node.this
        if node.meta.get("pg_regtype") or (isinstance(node, exp.Anonymous) and node.name.lower() == "pg_typeof"):
            return ColumnType(TYPES_BY_NAME["regtype"])
        if isinstance(node, (exp.Column, exp.Cast, exp.TryCast)):
            return _column_type_of(node.type)
        if isinstance(node, exp.JSONArrayAgg):
            return ColumnType(TYPES_BY_NAME["json"])
        if isinstance(node, exp.JSONBExtractScalar) and _json_kind(node.this) is not None:
            return ColumnType(TYPES_BY_NAME["text"])  # json #>> path
        if (isinstance(node, exp.JSONExtract) and _json_member_path(node) is not None) \
                or (isinstance(node, exp.JSONBExtract) and _json_kind(node.this) is not None):
            name = "jsonb" if _json_kind(node.this) == _T.JSONB else "json"
            return ColumnType(TYPES_BY_NAME[name], exact_op="jsonb" if name == "jsonb" else None)
        inner = node.this if isinstance(node, (exp.Window, exp.Filter)) else node
        if isinstance(inner, exp.Filter):
            inner = inner.this
        if _dtype(node) == _T.DECIMAL and isinstance(inner, (exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.Neg, exp.Min,
                                                             exp.Max, exp.Sum, exp.Abs, exp.Coalesce, exp.Greatest,
                                                             exp.Least, exp.Lag, exp.Lead, exp.FirstValue,
                                                             exp.LastValue, exp.NthValue)):
            return ColumnType(NUMERIC)
        if isinstance(node, exp.Sign) and _dtype(node.this) == _T.DECIMAL:
            return ColumnType(NUMERIC, scale=0)
        if isinstance(node, (exp.Round, exp.Trunc)) and (_dtype(node.this) == _T.DECIMAL or (
                node.args.get("decimals") is not None and _surely_integer(node.this))):
            return ColumnType(NUMERIC)
        if isinstance(node, exp.Literal) and not node.is_string and _dtype(node) == _T.DECIMAL:
            return ColumnType(NUMERIC)  # 1.50 keeps its written scale
        if isinstance(node, (exp.Add, exp.Sub)) and _dtype(node) == _T.TIME:
            return ColumnType(TIME)
        if _dtype(node) == _T.TIME and isinstance(inner, _TIME_KEEPING):
            return ColumnType(TIME)  # a time column's value chosen or carried (kept as microseconds)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select) and len(node.this.expressions) == 1:
            carried = _Translator._output_type_base(node.this.expressions[0].unalias())
            if carried is not None and carried.pg == TIME:
                return carried  # (SELECT max(t) ...): a time
        if isinstance(node, exp.WithinGroup) and isinstance(node.this, (exp.PercentileDisc, exp.Mode)) \
                and isinstance(node.expression, exp.Order) and node.expression.expressions \
                and _dtype(node.expression.expressions[0].this) == _T.TIME:
            return ColumnType(TIME)
        if isinstance(inner, exp.ArrayAgg) and _dtype(_aggregate_value(
                inner.this.this if isinstance(inner.this, exp.Order) else inner.this)) == _T.TIME:
            return _column_type_of(exp.DataType.build("ARRAY<TIME>"))
        if isinstance(node, (exp.Interval, exp.MakeInterval, exp.JustifyHours, exp.JustifyDays, exp.JustifyInterval)) or (
                isinstance(node, (exp.Add, exp.Sub, exp.Neg)) and _dtype(node) == _T.INTERVAL):
            return ColumnType(INTERVAL)
        if isinstance(node, exp.TimestampFromParts) and not node.args.get("zone"):
            return ColumnType(TIMESTAMP)
        if isinstance(node, exp.WithinGroup) and isinstance(node.this, (exp.PercentileCont, exp.PercentileDisc)):
            keys = node.expression.expressions if isinstance(node.expression, exp.Order) else []
            key = keys[0].this if keys and isinstance(keys[0], exp.Ordered) else None
            if isinstance(node.this, exp.PercentileCont):
                return ColumnType(FLOAT8)
            return _column_type_of(key.type) if key is not None else None
        base = node.this if isinstance(node, (exp.Window, exp.Filter)) else node
        if isinstance(base, exp.Filter):
            base = base.this
        if isinstance(base, exp.Avg):
            arg = _dtype(base.this)
            if arg in _INTEGER_TYPES or arg == _T.DECIMAL:
                return ColumnType(NUMERIC)
        if isinstance(base, exp.Sum) and _dtype(base.this) in (_T.BIGINT, _T.DECIMAL):
            return ColumnType(NUMERIC)
        if isinstance(base, exp.Extract):
            return ColumnType(NUMERIC)
        if isinstance(base, exp.Anonymous) and base.name.lower() == "date_part":
            return ColumnType(FLOAT8)
        if isinstance(base, exp.Anonymous) and base.name.lower() == "age":
            return ColumnType(INTERVAL)
        if isinstance(base, exp.Anonymous) and base.name.lower() in _JSON_RESULTS:
            return ColumnType(TYPES_BY_NAME[_JSON_RESULTS[base.name.lower()]])
        if isinstance(base, (exp.Count,)):
            return ColumnType(INT8)
        return None

    # ---------------------------------------------------------------- semantic rewrites

    def rewrite(self, tree: exp.Expression) -> exp.Expression:
        for node in reversed(list(tree.walk(bfs=False))):
            self._widen_reals(node)
            numeric_power = isinstance(node, exp.Pow) and _numeric_power(node)
            ranged = isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Pow)) and _dtype(node) in _FLOAT_TYPES \
                and not numeric_power
            operands = (node.this.copy(), node.expression.copy()) if ranged else None
            new = self._rewrite_node(node)
            if operands is not None:
                new = self._float_range(node, new if new is not None else node, *operands)
            elif numeric_power:
                new = self._numeric_power_range(new if new is not None else node)
            if new is not None and new is not node:
                if new.type is None or _dtype(new) in (None, _T.UNKNOWN):
                    new.type = node.type
                elif _dtype(node) in _JSON_SCALAR_TEXT and _dtype(new) != _dtype(node):
                    new = _typed(exp.paren(new), node.type)  # json is kept as text: still json to what reads it
                if _PG_TYPE_NAME in node.meta:
                    new.meta.setdefault(_PG_TYPE_NAME, node.meta[_PG_TYPE_NAME])
                if node is tree:
                    tree = new
                else:
                    node.replace(new)
        return tree

    _REAL_TO_DOUBLE = (exp.Round, exp.Ceil, exp.Floor, exp.Sign, exp.Sqrt, exp.Cbrt, exp.Ln, exp.Log, exp.Exp, exp.Pow)

    @staticmethod
    def _widen_reals(node: exp.Expression) -> None:
        """real meets PostgreSQL's operators and functions as it should: real with an integer,
        numeric or double operand is computed in double precision (Spark would stay in float),
        round/ceil/sqrt/... of a real are the float8 functions, and coalesce/greatest/least of a
        real with integers or numerics are real (Spark would widen them to double)."""
        def as_type(arg: exp.Expression, spark: str, kind: exp.DataType.Type) -> exp.Expression:
            cast = _cast(arg.copy(), spark)
            cast.type = exp.DataType.build(kind)
            return cast

        if isinstance(node, _ARITHMETIC) and _dtype(node) == _T.DOUBLE:
            for key in ("this", "expression"):
                arg = node.args.get(key)
                if arg is not None and _dtype(arg) == _T.FLOAT:
                    node.set(key, as_type(arg, "DOUBLE", _T.DOUBLE))
        elif isinstance(node, _Translator._REAL_TO_DOUBLE):
            for key in ("this", "expression"):
                arg = node.args.get(key)
                if isinstance(arg, exp.Expression) and _dtype(arg) == _T.FLOAT:
                    node.set(key, as_type(arg, "DOUBLE", _T.DOUBLE))
            if isinstance(node, exp.Sign) and _dtype(node.this) in _FLOAT_TYPES:
                node.type = exp.DataType.build("DOUBLE")
        elif isinstance(node, (exp.Coalesce, exp.Greatest, exp.Least)) and _dtype(node) == _T.FLOAT:
            args = [node.this, *node.expressions]
            if any(_dtype(a) not in (_T.FLOAT, _T.NULL, _T.UNKNOWN, None) for a in args):
                node.set("this", as_type(node.this, "FLOAT", _T.FLOAT) if _dtype(node.this) != _T.FLOAT else node.this)
                node.set("expressions", [as_type(a, "FLOAT", _T.FLOAT) if _dtype(a) != _T.FLOAT else a
                                         for a in node.expressions])

    @staticmethod
    def _float_range(node: exp.Expression, value: exp.Expression, a: exp.Expression,
                     b: exp.Expression) -> exp.Expression:
        """A float result beyond the type's range is PostgreSQL's 22003 (Spark answers Infinity or
        0): overflow when finite operands give an infinity, underflow when * / ^ of non-zero
        operands gives 0 (float8_mul / float8_div / dpow's checks)."""
        def infinite(e: exp.Expression) -> exp.Expression:
            return _is_infinite(_cast(exp.paren(e.copy()), "DOUBLE"))

        def nonzero(e: exp.Expression) -> exp.Expression:
            return exp.NEQ(this=exp.paren(e.copy()), expression=exp.Literal.number(0))

        result = exp.paren(value.copy())
        checks = [(exp.and_(infinite(result), exp.not_(infinite(a)), exp.not_(infinite(b))),
                   "22003", "value out of range: overflow")]
        if isinstance(node, (exp.Mul, exp.Div, exp.Pow)):
            beside = nonzero(b) if isinstance(node, exp.Mul) else exp.not_(infinite(b))
            if isinstance(node, exp.Pow):  # (-)Infinity to a negative power is 0, not an underflow
                beside = exp.and_(beside, exp.not_(infinite(a)))
            checks.append((exp.and_(exp.EQ(this=result.copy(), expression=exp.Literal.number(0)), nonzero(a), beside),
                           "22003", "value out of range: underflow"))
        return _Translator._guarded(value.copy(), checks)

    @staticmethod
    def _numeric_power_range(value: exp.Expression) -> exp.Expression:
        """A numeric power past numeric's range is 22003 (Spark computes it in double: Infinity)."""
        return _Translator._guarded(value.copy(), [(_is_infinite(_cast(exp.paren(value.copy()), "DOUBLE")),
                                                    "22003", "value overflows numeric format")])

    def _rewrite_node(self, node: exp.Expression) -> exp.Expression | None:  # noqa: C901 - a dispatch table
        folded = _fold_interval_constants(node)
        if folded is not None:
            return folded
        if isinstance(node, exp.JSONArrayAgg) or (isinstance(node, exp.Anonymous) and node.name.lower() == "jsonb_agg"
                                                  and len(node.expressions) == 1):
            return self._json_agg(node)
        if isinstance(node, exp.Array) and any(isinstance(e.unnest(), exp.Array) for e in node.expressions):
            raise SqlError("0A000", "multidimensional array literals are not supported",
                           hint="Spark arrays hold one dimension: an array of arrays is not a PostgreSQL "
                                "multidimensional array.")
        if isinstance(node, exp.Grouping):
            # grouping(a, b, ...): an integer whose bits say which arguments this row is not grouped
            # by (the first the most significant); Spark's grouping is one column's, grouping_id all
            args = node.expressions
            select = node.find_ancestor(exp.Select)
            group = select.args.get("group") if select is not None else None
            if group is None:
                raise SqlError("42803", "arguments to GROUPING must be grouping expressions of the associated query level")
            if not any(group.args.get(k) for k in ("grouping_sets", "cube", "rollup")) and not any(
                    isinstance(e, (exp.Cube, exp.Rollup, exp.GroupingSets)) for e in group.expressions):
                return _typed(exp.Literal.number(0), exp.DataType.build("INT"))  # every row is grouped by all
            bits = [exp.Mul(this=_cast(_func("grouping", a), "INT"), expression=exp.Literal.number(1 << (len(args) - 1 - k)))
                    for k, a in enumerate(args)]
            total = bits[0]
            for bit in bits[1:]:
                total = exp.Add(this=total, expression=bit)
            return _typed(exp.paren(total), exp.DataType.build("INT"))
        if isinstance(node, exp.Escape) and isinstance(node.this, (exp.Like, exp.ILike)) \
                and isinstance(node.expression, exp.Literal) and node.expression.is_string:
            escape = node.expression.name
            if len(escape) > 1:
                raise SqlError("22025", "invalid escape string", hint="Escape string must be empty or one character.")
            if escape == "":  # no escape character: a backslash in the pattern is itself
                like = node.this
                like.set("expression", _func("replace", like.expression, _string("\\"), _string("\\\\")))
                return like
        if isinstance(node, exp.JSONExtract) and (path := _json_member_path(node)) is not None:
            # json -> key: the member as JSON (a string stays quoted, JSON null is 'null', a missing
            # key SQL NULL); get_json_object gave a string's bare text, and text as its type
            value = _func("to_json", _func("variant_get", _func("parse_json", node.this), _string(path), _string("variant")))
            if path == "$[0]" and _json_kind(node.this) == _T.JSONB:
                # a jsonb scalar is its own element 0 (PostgreSQL keeps it as a one-element array)
                first = _func("substr", _func("ltrim", node.this.copy()), exp.Literal.number(1), exp.Literal.number(1))
                value = exp.If(this=exp.In(this=first, expressions=[_string("{"), _string("[")]), true=value,
                               false=node.this.copy())
            value.meta[_JSON_VALUE] = True
            jsonb = _json_kind(node.this) == _T.JSONB
            value.meta[_PG_TYPE_NAME] = "jsonb" if jsonb else "json"
            node.type = exp.DataType.build("JSONB" if jsonb else "JSON")  # (sqlglot typed every -> json)
            return _typed(value, node.type)
        if isinstance(node, (exp.JSONBExtract, exp.JSONBExtractScalar)) and _json_kind(node.this) is not None:
            return _json_path_extract(node)
        if isinstance(node, exp.JSONExtractScalar) and (path := _json_member_path(node)) is not None:
            # json ->> key: the member as text. Spark's get_json_object re-reads a number as a
            # double (12345678901234567890.10 came back as 1.2345678901234567E19); the variant
            # keeps its digits (trailing zeros of a fraction still go: docs/UNSUPPORTED.md)
            value = _func("variant_get", _func("parse_json", node.this), _string(path), _string("string"))
            if path == "$[0]" and _json_kind(node.this) == _T.JSONB:
                # a jsonb scalar is its own element 0 (see json -> above)
                first = _func("substr", _func("ltrim", node.this.copy()), exp.Literal.number(1), exp.Literal.number(1))
                scalar = _func("variant_get", _func("parse_json", node.this.copy()), _string("$"), _string("string"))
                value = exp.If(this=exp.In(this=first, expressions=[_string("{"), _string("[")]), true=value,
                               false=scalar)
            value.meta[_PG_TYPE_NAME] = "text"
            return _typed(value, exp.DataType.build("TEXT"))
        if isinstance(node, (exp.EQ, exp.NEQ)) and any(
                o.unnest().meta.get(_JSON_VALUE) and _dtype(o) == _T.JSONB for o in (node.this, node.expression)):
            # jsonb = jsonb compares values: both sides as the variant's canonical JSON text (a
            # literal is read as jsonb input first: 22P02 for one that is not JSON)
            sides = []
            for side in (node.this, node.expression):
                literal = side.unnest()
                if isinstance(literal, exp.Literal) and literal.is_string:
                    side = _string(pgvalues.jsonb_text(literal.name))
                elif _dtype(side) != _T.JSONB:
                    return None
                sides.append(_func("to_json", _func("parse_json", side)))
            return type(node)(this=sides[0], expression=sides[1])
        if isinstance(node, (exp.Filter, exp.Window)) and (isinstance(node.this, exp.If) or node.this.meta.get(_WRAPS_COLLECT)):
            collected = [n for n in node.this.walk() if n.meta.get("tg_collect")]
            if collected:
                # array_agg(...) FILTER (WHERE c) / OVER (...): Spark filters, or computes over the
                # window, the collecting aggregate, not the expression of its result around it
                for n in collected:
                    if isinstance(node, exp.Window) and isinstance(n.parent, exp.Filter):
                        n = n.parent  # agg(...) FILTER (WHERE c) OVER (...)
                    wrapped = node.copy()
                    wrapped.set("this", n.copy())
                    n.replace(wrapped)
                return node.this
        if isinstance(node, exp.Sub) and _dtype(node.this) in _TZ_TYPES and _dtype(node.expression) in _TZ_TYPES:
            # timestamptz - timestamptz is the elapsed time (Spark subtracts wall times in the
            # session zone, an hour off across a DST change)
            micros = exp.Sub(this=_func("unix_micros", node.this.copy()), expression=_func("unix_micros", node.expression.copy()))
            return exp.Mul(this=exp.paren(micros), expression=exp.Interval(this=_string("0.000001"), unit=exp.var("SECOND")))
        if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)) and (
                {_dtype(node.this), _dtype(node.expression)} & _NTZ_TYPES) and (
                {_dtype(node.this), _dtype(node.expression)} & _TZ_TYPES):
            # timestamp against timestamptz: the timestamp is read in the session zone, as PostgreSQL
            # casts it (Spark casts the other way, to wall times)
            for key in ("this", "expression"):
                if _dtype(node.args[key]) in _NTZ_TYPES:
                    node.set(key, _ntz_to_tz(node.args[key]))
        if isinstance(node, (exp.JustifyHours, exp.JustifyDays, exp.JustifyInterval)):
            iv = node.this.meta.get("pg_interval")
            if iv is None:
                raise SqlError("0A000", f"{node.sql_name().lower()} of a non-constant interval is not supported",
                               hint="Give it an interval constant, or compute with extract(epoch from ...).")
            justify = {exp.JustifyHours: pgvalues.justify_hours, exp.JustifyDays: pgvalues.justify_days,
                       exp.JustifyInterval: pgvalues.justify_interval}[type(node)]
            return _interval_value(PgInterval(*justify(iv.months, iv.days, iv.micros)), node)
        if isinstance(node, exp.JSONBContainsTopKey):  # jsonb ? text (operands checked by check_operators)
            return _typed(_jsonb_has_key(node.this, node.expression), exp.DataType.build("BOOLEAN"))
        if isinstance(node, exp.Sign) and _dtype(node.this) in _FLOAT_TYPES:
            # PostgreSQL's sign(NaN) is 0 (Spark: NaN)
            x = exp.paren(node.this.copy())  # (and sign(-0.0) is 0: the + 0.0 turns -0.0 into 0.0)
            return exp.If(this=_func("isnan", x), true=_cast(exp.Literal.number(0), "DOUBLE"),
                          false=exp.Add(this=_func("sign", x.copy()), expression=_cast(exp.Literal.number(0), "DOUBLE")))
        if isinstance(node, exp.Sign) and _dtype(node.this) == _T.DECIMAL:
            # sign(numeric) is a numeric (-1, 0 or 1), not Spark's double
            return _typed(_cast(_func("sign", node.this), "DECIMAL(1,0)"), exp.DataType.build("DECIMAL"))
        if isinstance(node, exp.Window) and isinstance(node.this, _FRAMELESS_WINDOW_FUNCTIONS):
            return self._frameless_window(node)
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
            self._check_text_arithmetic(node)
            for lit, other in ((node.this, node.expression), (node.expression, node.this)):
                if _dtype(other) in _INTEGER_TYPES:
                    self._coerce_literal(lit, other)  # 1 + '5': the literal read as an integer
        if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT,
                             exp.LTE)):
            self._check_stored_interval(node)
        if isinstance(node, (exp.Mul, exp.Div)):
            self._check_interval_scaling(node)
        if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
            self._time_against_interval(node)
        if isinstance(node, (exp.Add, exp.Sub)) and _T.TIME in (_dtype(node.this), _dtype(node.expression)):
            timed = self._time_arithmetic(node)
            if timed is not None:
                return timed
        if isinstance(node, exp.Div):
            return self._div(node)
        if isinstance(node, exp.Localtimestamp):
            return _func("localtimestamp")
        if isinstance(node, exp.CurrentVersion):
            from catalog.pgcatalog import VERSION_STRING  # PostgreSQL's version(), never Spark's

            return _string(VERSION_STRING)
        if isinstance(node, (exp.CurrentUser, exp.SessionUser)):
            # the session's role, never the OS user Spark's current_user() would answer with
            info = getattr(self.resolver, "info", None)
            return _string(info.user if info is not None else "tidegate")
        if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)):
            self._coerce_literal_operands(node)
            if isinstance(node, (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ)):
                self._interval_text_operands(node)
        if isinstance(node, (exp.Coalesce, exp.Greatest, exp.Least, exp.Nullif, exp.Case, exp.Lag, exp.Lead)):
            # a time among the values chosen from: an untyped literal beside it is a time (kept as
            # microseconds); Spark would refuse BIGINT beside STRING
            if isinstance(node, exp.Case):
                values = [i.args.get("true") for i in node.args.get("ifs") or []] + [node.args.get("default")]
            elif isinstance(node, (exp.Lag, exp.Lead)):
                values = [node.this, node.args.get("default")]
            elif isinstance(node, exp.Nullif):
                values = [node.this, node.expression]
            else:
                values = [node.this, *node.expressions]
            clock = next((v for v in values if v is not None and _dtype(v) == _T.TIME), None)
            if clock is not None:
                for v in values:
                    self._coerce_literal(v, clock)
        if isinstance(node, (exp.Between, exp.In)) and isinstance(node.this, exp.Column) \
                and _dtype(node.this) == _T.INTERVAL and not node.args.get("query"):
            # a stored interval against interval bounds or items: by length, as PostgreSQL compares
            others = [node.args.get("low"), node.args.get("high")] if isinstance(node, exp.Between) else node.expressions
            lengths = [_interval_length(o) for o in others]
            if any(x is None for x in lengths):
                raise SqlError("0A000", f'comparison on the interval column "{node.this.name}" with a value '
                               "computed at run time is not supported",
                               hint="Compare it with interval constants, or store the duration as a number.")
            for o, length in zip(others, lengths):
                o.replace(length)
            node.this.replace(_interval_span(node.this.copy()))
        if isinstance(node, exp.Between):  # x BETWEEN 'a' AND 'b': the bounds take x's type
            for bound in ("low", "high"):
                self._coerce_literal(node.args.get(bound), node.this)
        if isinstance(node, exp.In) and not node.args.get("query"):  # x IN ('a', 'b'): as x = 'a' OR ...
            for item in node.expressions:
                self._coerce_literal(item, node.this)
        if isinstance(node, exp.Ordered) and isinstance(node.this, exp.Column) and _dtype(node.this) == _T.INTERVAL:
            node.set("this", _interval_span(node.this.copy()))  # ORDER BY a stored interval: by length
        if isinstance(node, (exp.Max, exp.Min)) and isinstance(node.this, exp.Column) \
                and _dtype(node.this) == _T.INTERVAL:
            # the longest / shortest stored interval itself (its text), not the text's order
            chosen = _func("max_by" if isinstance(node, exp.Max) else "min_by", node.this.copy(),
                           _interval_span(node.this.copy()))
            return _typed(chosen, node.this.type)
        if isinstance(node, (exp.Greatest, exp.Least)) and any(
                isinstance(a, exp.Column) and _dtype(a) == _T.INTERVAL for a in [node.this, *node.expressions]):
            raise SqlError("0A000", f"{'greatest' if isinstance(node, exp.Greatest) else 'least'}() over an interval "
                           "column is not supported", hint="Use CASE with comparisons of the values.")
        if isinstance(node, (exp.Sum, exp.Avg)) and not isinstance(node.this, exp.Literal):
            if _dtype(node.this) in _STRING_TYPES:
                fname = "sum" if isinstance(node, exp.Sum) else "avg"
                raise SqlError("42883", f"function {fname}({_pg_arg_type(node.this)}) does not exist",
                               hint="No function matches the given name and argument types. "
                               "You might need to add explicit type casts.")
        if isinstance(node, (exp.Add, exp.Sub, exp.Neg, exp.MakeInterval)):
            folded = self._fold_interval(node)
            if folded is not None:
                return folded
        if isinstance(node, exp.MakeInterval):
            return self._make_interval(node)
        if isinstance(node, (exp.Add, exp.Sub)):
            shifted = self._tz_plus_interval(node)
            if shifted is not None:
                return shifted
        if isinstance(node, (exp.Add, exp.Sub)) and self._date_plus_interval(node):
            cls = type(node)
            left, right = node.this, node.expression
            if _dtype(left) == _T.DATE:
                left = _cast(left, "TIMESTAMP_NTZ")
            if _dtype(right) == _T.DATE:
                right = _cast(right, "TIMESTAMP_NTZ")
            return cls(this=left, expression=right)
        if isinstance(node, exp.IntDiv):
            return None
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self._cast_node(node)
        if isinstance(node, exp.Interval):
            return self._interval(node)
        if isinstance(node, (exp.Add, exp.Sub)) and (
                (_dtype(node.this) == _T.DATE and _dtype(node.expression) in _INTEGER_TYPES)
                or (isinstance(node, exp.Add) and _dtype(node.expression) == _T.DATE and _dtype(node.this) in _INTEGER_TYPES)):
            # date +/- integer beyond PostgreSQL's dates (4714-11-24 BC .. 5874897-12-31): 22008
            days = _func("unix_date", exp.paren(node.copy()))
            return self._guarded(node.copy(), [(exp.not_(exp.Between(
                this=days, low=exp.Literal.number(-2440588), high=exp.Literal.number(2145042905))),
                "22008", "date out of range")])
        if isinstance(node, exp.Sub):
            lt, rt = _dtype(node.this), _dtype(node.expression)
            if lt == _T.DATE and rt == _T.DATE:
                return _func("datediff", node.this, node.expression)
            return None
        if isinstance(node, (exp.Sqrt, exp.Ln, exp.Log, exp.Pow)):
            return self._math_domain(node)
        if isinstance(node, exp.Exp):
            # e^x past double precision's range: PostgreSQL's 22003 (Spark: Infinity or 0)
            x = exp.paren(_cast(node.this.copy(), "DOUBLE"))
            finite = exp.Not(this=_is_infinite(x.copy()))  # exp(Infinity) is Infinity, exp(-Infinity) 0
            return self._guarded(node.copy(), [
                (exp.and_(exp.GT(this=x.copy(), expression=exp.Literal.number(709.782712893384)),
                          exp.Not(this=_func("isnan", x.copy())), finite), "22003", "value out of range: overflow"),
                (exp.and_(exp.LT(this=x.copy(), expression=exp.Literal.number(-745.1332191019412)), finite.copy()),
                 "22003", "value out of range: underflow")])
        if isinstance(node, (exp.Cos, exp.Sin, exp.Tan, exp.Cot)):
            x = exp.paren(_cast(node.this.copy(), "DOUBLE"))
            return self._guarded(node.copy(), [(_is_infinite(x), "22003", "input is out of range")])
        if isinstance(node, (exp.Pad, exp.Repeat)):
            return self._length_limited(node)
        if isinstance(node, exp.Hex):
            # to_hex: lower-case digits; a negative integer is its 32-bit two's complement
            # (to_hex(-1) is ffffffff), a bigint its 64-bit one
            value = node.this
            if _dtype(value) in (_T.INT, _T.SMALLINT, _T.TINYINT):
                value = exp.BitwiseAnd(this=_cast(value, "BIGINT"), expression=exp.Literal.number(0xFFFFFFFF))
            return _func("lower", _func("hex", value))
        if isinstance(node, exp.Substring) and node.args.get("start") is not None:
            return self._substring(node)
        if isinstance(node, (exp.Left, exp.Right)):
            return self._left_right(node)
        if isinstance(node, exp.Overlay):
            return self._overlay(node)
        if isinstance(node, (exp.StrToDate, exp.StrToTime)):
            # PostgreSQL reads an empty string as year 0: 0001-01-01 BC (at midnight)
            year_zero = _func("date_from_unix_date", exp.Literal.number(-719528))
            if isinstance(node, exp.StrToTime):
                year_zero = _ntz_to_tz(_cast(year_zero, "TIMESTAMP_NTZ"))
            return exp.If(this=exp.EQ(this=exp.paren(node.this.copy()), expression=_string("")),
                          true=year_zero, false=node.copy())
        if isinstance(node, exp.UnixToTime) and node.args.get("format") is None and node.args.get("scale") is None:
            return self._to_timestamp_seconds(node.this)
        if isinstance(node, exp.Chr):
            return self._chr(node)
        if isinstance(node, exp.WidthBucket):
            return self._width_bucket(node)
        if isinstance(node, exp.SplitPart):
            return self._split_part(node)
        if isinstance(node, (exp.Round, exp.Trunc, exp.Floor, exp.Ceil)) and node.args.get("decimals") is None \
                and _surely_integer(node.this):
            # PostgreSQL has no integer round/trunc/floor/ceil: an integer argument takes the
            # double precision form (floor(7) is 7 as double precision)
            return _cast(node.this, "DOUBLE")
        if isinstance(node, exp.Round):
            if _dtype(node.this) in _FLOAT_TYPES and node.args.get("decimals") is None:
                return _func("bround", node.this)
            if node.args.get("decimals") is not None and _surely_integer(node.this):
                # round(integer, n) is round(numeric, n): a numeric of scale n (1.0), not an integer
                return _func("round", _cast(node.this, "DECIMAL(38,0)"), node.args["decimals"])
            return None
        if isinstance(node, exp.Trunc):
            return self._trunc(node)
        if isinstance(node, (exp.Floor, exp.Ceil)):
            if _dtype(node.this) in _FLOAT_TYPES and node.args.get("decimals") is None:
                fn = "floor" if isinstance(node, exp.Floor) else "ceil"
                return _float_integral(node.this, lambda x: _func(fn, x))
            return None
        if isinstance(node, (exp.ArrayContainsAll, exp.ArrayContainedBy, exp.ArrayOverlaps)):
            return self._array_set_test(node)
        if isinstance(node, exp.ArrayPosition) and node.expression is not None:
            # Spark says 0 for an element the array lacks; PostgreSQL says NULL
            return exp.Nullif(this=_func("array_position", node.this, node.expression), expression=exp.Literal.number(0))
        if isinstance(node, exp.DPipe):
            types = {_dtype(node.this), _dtype(node.expression)}
            if _T.ARRAY in types:
                return self._array_concat(node.this, node.expression)
            binary = types & {_T.VARBINARY, _T.BINARY}
            if binary and all(_dtype(o) in binary or (isinstance(o, exp.Literal) and o.is_string)
                              for o in (node.this, node.expression)):
                # bytea || 'literal': the literal is bytea input (PostgreSQL resolves bytea || bytea)
                return _func("concat", *[_func("unhex", _string(pgvalues.parse_bytea(o.name).hex()))
                                         if isinstance(o, exp.Literal) else o for o in (node.this, node.expression)])
            if (types & _PG_TEXT_OF.keys() and not types <= {_T.VARBINARY, _T.BINARY}) or any(
                    _interval_valued(o) for o in (node.this, node.expression)):
                # text || value appends the value's output form (0.0004123, 1e+20, 12:00:00, \x01),
                # not Spark's text of it (4.123E-4, 1.0E20, microseconds, the raw bytes)
                return exp.DPipe(this=_text_operand(node.this), expression=_text_operand(node.expression),
                                 safe=node.args.get("safe"))

        if isinstance(node, exp.ArrayConcat) and len(node.expressions) == 1:
            return self._array_concat(node.this, node.expressions[0])
        if isinstance(node, exp.StringToArray):
            return self._string_to_array(node.this, node.expression, node.args.get("null"))
        if isinstance(node, (exp.Encode, exp.Decode)):
            return self._hex_codec(node)
        if isinstance(node, exp.ConcatWs):
            sep, *args = node.expressions
            return _func("concat_ws", sep, *[_output_text(a) for a in args])
        if isinstance(node, exp.Concat):
            args = [_output_text(a) for a in node.expressions]
            return _func("concat_ws", _string(""), *args)
        if isinstance(node, exp.RegexpILike):
            return exp.RegexpLike(this=node.this, expression=self._prefixed(node.expression, "(?i)"))
        if isinstance(node, exp.SimilarTo):
            return self._similar(node)
        if isinstance(node, exp.RegexpReplace):
            return self._regexp_replace(node)
        if isinstance(node, exp.Extract):
            return self._extract(node, numeric=True)
        if isinstance(node, exp.Anonymous):
            return self._anonymous(node)
        if isinstance(node, exp.DateBin):
            return self._date_bin(node)
        if isinstance(node, (exp.DateTrunc, exp.TimestampTrunc)):
            return self._date_trunc(node)
        if isinstance(node, exp.AtTimeZone):
            return self._at_time_zone(node.this, node.args.get("zone"))
        if isinstance(node, exp.TimestampFromParts) and not node.args.get("zone"):
            args = [node.args.get(k) for k in ("year", "month", "day", "hour", "min", "sec")]
            if all(a is not None for a in args):
                return _func("make_timestamp_ntz", *args)
            return None
        if isinstance(node, exp.WithinGroup) and isinstance(node.this, (exp.PercentileCont, exp.PercentileDisc)):
            return self._percentile(node)
        if isinstance(node, (exp.Upper, exp.Lower)):
            return _simple_case(node)
        if isinstance(node, exp.Initcap):
            # PostgreSQL starts a word after any non-alphanumeric character, Spark only after
            # white space: mark each such character with a following space, capitalise, unmark.
            marked = _func("regexp_replace", node.this, _string(r"([^\p{L}\p{N}])"), _string("$1 "))
            return _func("regexp_replace", _func("initcap", marked), _string(r"([^\p{L}\p{N}]) "), _string("$1"))
        if isinstance(node, exp.Avg):
            value = _aggregate_value(node.this)
            t = _dtype(value)
            shape = _INTEGER_DIGITS.get(t) if t in _INTEGER_TYPES else (
                self._decimal_shape(value) or (38, 18)) if t == _T.DECIMAL else None
            if shape is not None and shape[1] < 20:
                # Spark's avg keeps as many fraction digits as its input: PostgreSQL shows 16
                # significant ones (20 below 1), so the sum is carried at up to scale 20. Spark
                # sums decimal(38,s) as decimal(38,s) and divides into decimal(38,s+4): the scale
                # leaves the input's integer digits and ten more (for the sum) room.
                scale = max(shape[1], min(20, 28 - (shape[0] - shape[1])))
                _cast_aggregated(node, f"DECIMAL(38,{scale})")
            return None
        if isinstance(node, exp.Sum):
            if _dtype(_aggregate_value(node.this)) == _T.BIGINT:
                _cast_aggregated(node, "DECIMAL(38,0)")
            return None
        if isinstance(node, exp.ArrayAgg):
            return self._array_agg(node)

        if isinstance(node, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)) and isinstance(
            node.expression, (exp.Any, exp.All)
        ):
            # (Spark's own LIKE ANY takes a list of patterns: an array there was one pattern,
            # its text, and matched nothing)
            return self._quantified(node)
        if isinstance(node, exp.Select):
            self._check_grouping(node)
            if node.args.get("distinct") is not None and node.args["distinct"].args.get("on") is not None:
                return self._distinct_on(node)
            return None
        if isinstance(node, exp.Bracket):
            # PostgreSQL arrays are 1-based and yield NULL out of range.
            if len(node.expressions) == 1 and _dtype(node.this) in (_T.ARRAY, None, _T.UNKNOWN):
                index = node.expressions[0]
                if isinstance(index, exp.Slice):
                    return self._array_slice(node.this, index.this, index.expression)
                # the index as written, counted from 1 (the dialect's INDEX_OFFSET); Spark's get()
                # counts from 0 and is NULL past either end (element_at counts a negative index
                # from the end and fails on 0)
                if isinstance(index, exp.Literal) and index.is_int:
                    zero_based: exp.Expression = exp.Literal.number(int(index.name) - 1)
                else:
                    zero_based = exp.Sub(this=index if _dtype(index) == _T.INT else _cast(index, "INT"),
                                         expression=exp.Literal.number(1))
                return _func("get", node.this, zero_based)
            return None
        if isinstance(node, exp.Array) and len(node.expressions) == 1 and isinstance(
            node.expressions[0], (exp.Select, exp.Subquery, exp.SetOperation)
        ):
            inner = node.expressions[0]
            inner = inner.this if isinstance(inner, exp.Subquery) else inner
            alias = self._name("__arr")
            source = exp.Subquery(
                this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias), columns=[exp.to_identifier("__v")])
            )
            return exp.Subquery(this=exp.select(_func("collect_list", exp.column("__v", table=alias))).from_(source))
        if isinstance(node, exp.ArraySize):
            size = _func("size", node.this)
            dim = node.args.get("expression")
            if dim is None:
                return size
            # array_length(a, d): NULL for an empty array and for a dimension the array lacks
            # (arrays here have one dimension); Spark's size() would say 0.
            return exp.Case(ifs=[exp.If(this=exp.and_(exp.EQ(this=dim, expression=exp.Literal.number(1)),
                                                      exp.GT(this=size, expression=exp.Literal.number(0))),
                                        true=size.copy())])
        return None

    # -- arithmetic

    @staticmethod
    def _frameless_window(node: exp.Window) -> exp.Expression:
        """Ranking and offset functions over a window, as PostgreSQL computes them.

        PostgreSQL ignores the frame of ``row_number``, ``rank``, ``dense_rank``, ``percent_rank``,
        ``cume_dist``, ``ntile``, ``lag`` and ``lead`` (they work on the whole partition in
        window order); Spark refuses any frame but its own for them, so the frame is dropped,
        also when it comes from a named window (``WINDOW w AS (... ROWS ...)``, inlined here).
        ``OVER ()`` is a valid window in PostgreSQL (rows in the order they come); Spark needs an
        ORDER BY for these functions, so a constant one is given. row_number/rank/dense_rank are
        bigint in PostgreSQL (Spark: int).
        """
        window = node.copy()  # the result replaces ``node`` and may wrap it
        ref = node.args.get("alias")
        if isinstance(ref, exp.Identifier):
            select = node.find_ancestor(exp.Select)
            named = None
            for candidate in (select.args.get("windows") or []) if select is not None else []:
                if isinstance(candidate.this, exp.Identifier) and candidate.this.name.lower() == ref.name.lower():
                    named = candidate
            if named is None:
                raise SqlError("42P20", f'window "{ref.name}" does not exist')
            window = exp.Window(
                this=node.this,
                partition_by=[p.copy() for p in named.args.get("partition_by") or []] or None,
                order=named.args["order"].copy() if named.args.get("order") else node.args.get("order"),
                over=node.args.get("over") or "OVER",
            )
        else:
            window.set("spec", None)
        if not window.args.get("order"):
            window.set("order", exp.Order(expressions=[exp.Ordered(this=exp.Literal.number(1))]))
        if isinstance(window.this, (exp.RowNumber, exp.Rank, exp.DenseRank)):
            return exp.Cast(this=window, to=exp.DataType.build("BIGINT"))
        return window

    @staticmethod
    def _at_time_zone(value: exp.Expression, zone: exp.Expression) -> exp.Expression:
        """``value AT TIME ZONE zone`` without the Spark session zone taking part:
        timestamp -> the instant whose wall time in ``zone`` it is; timestamptz -> its wall time
        in ``zone``. (Spark's to/from_utc_timestamp work on UTC-read wall times, so the
        timestamp-without-time-zone side goes through its microseconds, not a session-zone cast.)"""
        zone = _spark_zone_arg(zone)
        if _dtype(value) in _NTZ_TYPES:
            # a wall time a DST fall-back repeats is the later instant, as in PostgreSQL (Java: the earlier)
            wall = _ntz_micros(value)
            first = _func("to_utc_timestamp", _func("timestamp_micros", wall), zone)
            later = exp.Add(this=first.copy(), expression=exp.Interval(this=_string("1"), unit=exp.var("HOUR")))
            repeated = exp.EQ(this=_func("unix_micros", _func("from_utc_timestamp", later.copy(), zone.copy())),
                              expression=wall.copy())
            return exp.If(this=repeated, true=later, false=first)
        if _dtype(value) == _T.DATE:
            value = _cast(value, "TIMESTAMP")
        return _ntz_from_micros(_func("unix_micros", _func("from_utc_timestamp", value, zone)))

    def _percentile(self, node: exp.WithinGroup) -> exp.Expression:
        """Ordered-set percentiles: Spark has the same WITHIN GROUP form (sqlglot would emit the
        approximate percentile); percentile_disc keeps its input's type as in PostgreSQL."""
        func = node.this
        name = "percentile_disc" if isinstance(func, exp.PercentileDisc) else "percentile_cont"
        order = node.expression
        keys = order.expressions if isinstance(order, exp.Order) else []
        if len(keys) != 1:
            raise SqlError("42883", f"function {name} requires exactly one ORDER BY expression")
        out: exp.Expression = exp.WithinGroup(this=_func(name, func.this), expression=order)
        key = keys[0].this if isinstance(keys[0], exp.Ordered) else keys[0]
        if name == "percentile_disc" and (_dtype(key) in _INTEGER_TYPES or _dtype(key) == _T.DECIMAL):
            out = _cast(out, self._spark_type(key.type))
        elif name == "percentile_disc" and _dtype(key) == _T.TIME:
            out = _typed(_cast(out, "BIGINT"), key.type)  # one of the times (microseconds), a time
        return out

    def _div(self, node: exp.Div) -> exp.Expression | None:
        lt, rt = _dtype(node.this), _dtype(node.expression)
        if lt in _INTEGER_TYPES and rt in _INTEGER_TYPES:
            if _T.BIGINT in (lt, rt):
                target = "BIGINT"
            elif lt == rt == _T.SMALLINT:
                target = "SMALLINT"
            else:
                target = "INT"
            return _cast(exp.IntDiv(this=node.this, expression=node.expression), target)
        if _T.DECIMAL in (lt, rt) and lt not in _FLOAT_TYPES and rt not in _FLOAT_TYPES:
            return self._decimal_div(node)
        quotient: exp.Expression = exp.Div(this=node.this, expression=node.expression)
        if lt in _FLOAT_TYPES or rt in _FLOAT_TYPES:
            # NaN / 0 is NaN in PostgreSQL (any other x / 0 is 22012, as in Spark)
            nan_over_zero = exp.and_(_func("isnan", _cast(exp.paren(node.this.copy()), "DOUBLE")),
                                     exp.EQ(this=exp.paren(node.expression.copy()), expression=exp.Literal.number(0)))
            quotient = exp.If(this=nan_over_zero, true=_cast(_string("NaN"), "DOUBLE"), false=quotient)
        if lt == rt == _T.FLOAT:  # real / real is real (Spark divides in double)
            return _cast(quotient, "FLOAT")
        return quotient

    _COERCIBLE = _INTEGER_TYPES | _FLOAT_TYPES | {_T.DECIMAL, _T.DATE, _T.BOOLEAN, _T.TIME} | _NTZ_TYPES | _TZ_TYPES

    @staticmethod
    def _quote_literal(arg: exp.Expression) -> exp.Expression:
        """quote_literal(x): the text in single quotes with quotes doubled; with a backslash in
        it, PostgreSQL's E'' form with backslashes doubled. NULL stays NULL."""
        text = _cast(arg, "STRING")
        quoted = _func("replace", text, _string("'"), _string("''"))
        plain = _func("concat", _string("'"), quoted, _string("'"))
        escaped = _func("concat", _string("E'"), _func("replace", _func("replace", text.copy(), _string("\\"),
                                                                     _string("\\\\")), _string("'"), _string("''")),
                        _string("'"))
        return exp.Case(ifs=[exp.If(this=exp.GT(this=_func("locate", _string("\\"), text.copy()),
                                                expression=exp.Literal.number(0)), true=escaped)], default=plain)

    @staticmethod
    def _string_to_array(text: exp.Expression, delimiter: exp.Expression | None,
                         null_string: exp.Expression | None) -> exp.Expression:
        """string_to_array(s, d [, n]): s split at every d (taken literally); an empty s is an
        empty array, an empty d gives s whole, a NULL d splits into characters; elements equal
        to n become NULL."""
        if isinstance(delimiter, exp.Null) or delimiter is None:
            parts: exp.Expression = _func("regexp_extract_all", text, _string("(?s)."), exp.Literal.number(0))
        else:
            pattern = _func("concat", _string("\\Q"), delimiter, _string("\\E"))
            parts = exp.Case(ifs=[exp.If(this=exp.EQ(this=delimiter.copy(), expression=_string("")),
                                         true=exp.Array(expressions=[text.copy()]))],
                             default=_func("split", text.copy(), pattern, exp.Literal.number(-1)))
        out = exp.Case(ifs=[exp.If(this=exp.Is(this=text.copy(), expression=exp.Null()),
                                   true=_cast(exp.Null(), "ARRAY<STRING>")),
                            exp.If(this=exp.EQ(this=text.copy(), expression=_string("")),
                                   true=_cast(exp.Array(expressions=[]), "ARRAY<STRING>"))], default=parts)
        if null_string is not None and not isinstance(null_string, exp.Null):
            var = exp.to_identifier("__p")
            out = _func("transform", out, exp.Lambda(this=exp.Nullif(this=exp.column("__p"), expression=null_string),
                                                     expressions=[var]))
        return out

    def _hex_codec(self, node: exp.Encode | exp.Decode) -> exp.Expression:
        """encode(bytea, 'hex') / decode(text, 'hex'); decode of text that is not hex digits is
        22023 (Spark's unhex would be NULL). Other formats are 0A000."""
        fmt = node.args.get("charset")
        word = "encode" if isinstance(node, exp.Encode) else "decode"
        if not (isinstance(fmt, exp.Literal) and fmt.is_string and fmt.name.lower() == "hex"):
            raise SqlError("0A000", f"{word}() supports the format 'hex' only",
                           hint="Use 'hex'; base64 and escape are not supported yet.")
        if isinstance(node, exp.Encode):
            return _func("lower", _func("hex", node.this))
        value = _func("unhex", node.this)
        bad = exp.and_(exp.Not(this=exp.Is(this=node.this.copy(), expression=exp.Null())),
                       exp.Is(this=value.copy(), expression=exp.Null()))
        return self._guarded(value, [(bad, "22023", "invalid hexadecimal data")])

    @staticmethod
    def _array_slice(arr: exp.Expression, lo: exp.Expression | None, hi: exp.Expression | None) -> exp.Expression:
        """``a[lo:hi]``: the elements lo..hi (1-based, inclusive, clamped to the array; an omitted
        bound is the array's end); empty when lo > hi, NULL for a NULL array."""
        start = _func("greatest", lo if lo is not None else exp.Literal.number(1), exp.Literal.number(1))
        end = hi if hi is not None else _func("size", arr.copy())
        length = _func("greatest", exp.Add(this=exp.Sub(this=end, expression=start.copy()),
                                           expression=exp.Literal.number(1)), exp.Literal.number(0))
        return _func("slice", arr, start, length)

    @staticmethod
    def _array_set_test(node: exp.Expression) -> exp.Expression:
        """``a @> b`` (every element of b is in a), ``a <@ b``, ``a && b`` (an element in common);
        a NULL element is in no array, a NULL array gives NULL."""
        left, right = node.this, node.expression
        outer, inner = (left, right) if isinstance(node, exp.ArrayContainedBy) else (right, left)
        var = exp.to_identifier("__e")
        body = exp.and_(exp.Not(this=exp.Is(this=exp.column("__e"), expression=exp.Null())),
                        _func("array_contains", inner, exp.column("__e")))
        quantifier = "exists" if isinstance(node, exp.ArrayOverlaps) else "forall"
        return _func(quantifier, outer, exp.Lambda(this=body, expressions=[var]))

    @staticmethod
    def _array_concat(left: exp.Expression, right: exp.Expression) -> exp.Expression:
        """PostgreSQL's array ``||`` / array_cat: array || element appends, element || array
        prepends (a NULL array counts as empty), array || array concatenates (a NULL one is
        skipped; both NULL: NULL). Spark's concat() would be NULL for any NULL input."""
        left_array, right_array = _dtype(left) == _T.ARRAY, _dtype(right) == _T.ARRAY
        if left_array and not right_array:
            return exp.ArrayAppend(this=left, expression=right)
        if right_array and not left_array:
            return exp.ArrayPrepend(this=right, expression=left)
        return exp.Case(ifs=[exp.If(this=exp.Is(this=left.copy(), expression=exp.Null()), true=right.copy()),
                             exp.If(this=exp.Is(this=right.copy(), expression=exp.Null()), true=left.copy())],
                        default=_func("concat", left, right))

    def _coerce_literal_operands(self, node: exp.Binary) -> None:
        """An untyped string literal compared with a typed value takes that type (PostgreSQL's
        'unknown' literal); Spark would compare both as strings or doubles instead."""
        for lit, other in ((node.this, node.expression), (node.expression, node.this)):
            if not (isinstance(lit, exp.Literal) and lit.is_string):
                continue
            if isinstance(other, (exp.Any, exp.All)):
                # x = ANY(array): the literal takes the array's element type (not the boolean
                # sqlglot gives the quantified operand)
                arr = other.this
                while isinstance(arr, exp.Paren):
                    arr = arr.this
                t = arr.type if isinstance(arr.type, exp.DataType) else None
                element = t.expressions[0] if t is not None and t.this == _T.ARRAY and t.expressions else None
                if isinstance(element, exp.DataType) and element.this in self._COERCIBLE:
                    lit.replace(self._cast_node(exp.Cast(this=lit.copy(), to=element.copy())))
                return
            if _dtype(other) in self._COERCIBLE:
                self._coerce_literal(lit, other)
                return

    def _coerce_literal(self, lit: exp.Expression | None, other: exp.Expression) -> None:
        """An untyped string literal beside a value of a coercible type takes that type."""
        if isinstance(lit, exp.Literal) and lit.is_string and _dtype(other) in self._COERCIBLE:
            lit.replace(self._cast_node(exp.Cast(this=lit.copy(), to=other.type.copy())))

    @staticmethod
    def _interval_text_operands(node: exp.Binary) -> None:
        """Interval columns are stored as PostgreSQL's interval text: (in)equality with a constant
        interval compares that text with the constant's canonical text."""
        for col, other in ((node.this, node.expression), (node.expression, node.this)):
            iv = other.meta.get("pg_interval") if other.meta else None
            if isinstance(col, exp.Column) and _dtype(col) == _T.INTERVAL and iv is not None:
                days, micros = iv.days, iv.micros
                if iv.months == 0 and days == 0:
                    # a driver's timedelta carries whole days as the interval's day field
                    days, micros = divmod(micros, 86_400_000_000)
                other.replace(_string(format_interval(iv.months, days, micros)))
                return

    @staticmethod
    def _time_arithmetic(node: exp.Binary) -> exp.Expression | None:
        """time values are microseconds since midnight: time - time is an interval, time ±
        interval wraps around midnight and uses only the interval's time part (as PostgreSQL:
        its months and days are ignored), date + time is that date's timestamp at that time."""
        left, right = node.this, node.expression
        lt, rt = _dtype(left), _dtype(right)
        day = exp.Literal.number(86_400_000_000)
        if isinstance(node, exp.Sub) and lt == rt == _T.TIME:
            micros = _cast(exp.Sub(this=left, expression=right), "DECIMAL(20, 6)")
            out = _func("make_dt_interval", exp.Literal.number(0), exp.Literal.number(0), exp.Literal.number(0),
                        exp.Div(this=micros, expression=exp.Literal.number(1_000_000)))
            out.type = exp.DataType.build("INTERVAL")
            return out
        clock, other = (left, right) if lt == _T.TIME else (right, left)
        iv = other.meta.get("pg_interval") if other.meta else None
        if iv is not None and (isinstance(node, exp.Add) or clock is left):
            sign = -1 if isinstance(node, exp.Sub) else 1
            moved = exp.Add(this=clock, expression=exp.Literal.number(sign * (iv.micros % 86_400_000_000)))
            out = _func("pmod", moved, day)
            out.type = exp.DataType.build("TIME")
            return out
        if clock is right or isinstance(node, exp.Add):
            # date + time, and a time taken as an interval (its implicit cast) next to a point in time
            sign_cls = exp.Sub if isinstance(node, exp.Sub) else exp.Add
            if _dtype(other) == _T.DATE:
                days = exp.Mul(this=_cast(_func("unix_date", other), "BIGINT"), expression=day)
                out = _ntz_from_micros(sign_cls(this=days, expression=clock))
                out.type = exp.DataType.build("TIMESTAMP")
                return out
            if _dtype(other) in _NTZ_TYPES:
                out = _ntz_from_micros(sign_cls(this=_ntz_micros(other), expression=clock))
                out.type = exp.DataType.build("TIMESTAMP")
                return out
            if _dtype(other) in _TZ_TYPES:
                out = _func("timestamp_micros", sign_cls(this=_func("unix_micros", other), expression=clock))
                out.type = exp.DataType.build("TIMESTAMPTZ")
                return out
        return None

    @staticmethod
    def _check_interval_scaling(node: exp.Binary) -> None:
        """An interval with a time part scaled by a number known only at run time: PostgreSQL
        keeps the product's hours in the time field ('10:00:00' * 3 is 30:00:00), Spark's
        day-time interval carries them into days (1 day 06:00:00). The same length, printed
        differently, so it is refused unless a timestamp or date is moved by it at once."""
        for iv_side, factor in ((node.this, node.expression), (node.expression, node.this)):
            iv = iv_side.meta.get("pg_interval") if iv_side.meta else None
            if iv is None or not iv.micros or (isinstance(node, exp.Div) and iv_side is not node.this):
                continue
            if isinstance(factor, exp.Literal) or (isinstance(factor, exp.Neg) and isinstance(factor.this, exp.Literal)):
                continue
            parent = node.parent
            while isinstance(parent, exp.Paren):
                parent = parent.parent
            if isinstance(parent, (exp.Add, exp.Sub)) and any(
                    _dtype(side) in (_NTZ_TYPES | _TZ_TYPES | {_T.DATE}) for side in (parent.this, parent.expression)):
                continue
            raise SqlError("0A000", "an interval with a time part multiplied or divided by a value known only "
                           "at run time is not supported",
                           hint="Add the product to a timestamp or date directly, or compute with the "
                           "number of seconds (n * 3600) instead.")

    @staticmethod
    def _time_against_interval(node: exp.Binary) -> None:
        """time compared with an interval constant: the time as an interval (its implicit cast),
        the interval by its length (PostgreSQL orders intervals with 30-day months), compared in
        place as microseconds."""
        for clock, other in ((node.this, node.expression), (node.expression, node.this)):
            iv = other.meta.get("pg_interval") if other.meta else None
            if _dtype(clock) == _T.TIME and iv is not None:
                other.replace(exp.Literal.number((iv.months * 30 + iv.days) * 86_400_000_000 + iv.micros))
                return

    @staticmethod
    def _check_stored_interval(node: exp.Expression) -> None:
        """Interval columns are stored as PostgreSQL's interval text, which Spark cannot compute
        with: a comparison with another interval (a column, a constant, an untyped literal)
        compares their lengths, as PostgreSQL does ('1 mon' = '30 days', '1 day' < '25:00:00');
        arithmetic is refused rather than let Spark read the text as a number."""
        if isinstance(node, exp.Predicate) and any(
                isinstance(o, exp.Column) and _dtype(o) == _T.INTERVAL for o in (node.this, node.args.get("expression"))):
            left, right = _interval_length(node.this), _interval_length(node.expression)
            if left is not None and right is not None:
                node.this.replace(left)
                node.expression.replace(right)
                return
        for operand, other in ((node.this, node.args.get("expression")), (node.args.get("expression"), node.this)):
            if isinstance(operand, exp.Column) and _dtype(operand) == _T.INTERVAL:
                what = "comparison" if isinstance(node, exp.Predicate) else "arithmetic"
                raise SqlError("0A000", f'{what} on the interval column "{operand.name}" is not supported',
                               hint="Store the duration as a number (seconds, or months and days) and compute "
                               "with that, or combine the column's value in the client.")

    @staticmethod
    def _check_text_arithmetic(node: exp.Binary) -> None:
        lt, rt = _dtype(node.this), _dtype(node.expression)
        text_side = any(
            t in _STRING_TYPES and not isinstance(n, exp.Literal) for t, n in ((lt, node.this), (rt, node.expression))
        )
        if text_side and lt is not None and rt is not None and _T.UNKNOWN not in (lt, rt):
            op = pgoperators.ARITHMETIC[type(node)]
            left = "unknown" if isinstance(node.this, exp.Literal) and node.this.is_string else _pg_arg_type(node.this)
            right = "unknown" if isinstance(node.expression, exp.Literal) and node.expression.is_string else _pg_arg_type(node.expression)
            raise SqlError("42883", f"operator does not exist: {left} {op} {right}",
                           hint="No operator matches the given name and argument types. "
                           "You might need to add explicit type casts.")

    @staticmethod
    def _decimal_shape(node: exp.Expression) -> tuple[int, int] | None:
        """(precision, scale) of an exact numeric operand, when known."""
        if isinstance(node, exp.Literal) and not node.is_string:
            text = node.name.lstrip("-")
            if "e" in text.lower():
                return None
            whole, _, frac = text.partition(".")
            digits = len(whole.lstrip("0")) + len(frac)
            return max(digits, len(frac), 1), len(frac)
        if isinstance(node, exp.Neg):
            return _Translator._decimal_shape(node.this)
        summed = node.this if isinstance(node, exp.Window) else node
        if isinstance(summed, exp.Sum) and _dtype(summed) == _T.DECIMAL and _dtype(summed.this) in _INTEGER_TYPES:
            return 38, 0  # sum(bigint) is summed as decimal(38,0)
        if isinstance(summed, exp.Sum) and _dtype(summed) == _T.DECIMAL:
            inner = _Translator._decimal_shape(summed.this)  # Spark sums decimal(p,s) as decimal(p+10,s)
            return (min(inner[0] + 10, 38), inner[1]) if inner is not None else None
        t = node.type if isinstance(node.type, exp.DataType) else None
        if t is None:
            return None
        if t.this == _T.INT:
            return 10, 0
        if t.this == _T.BIGINT:
            return 20, 0
        if t.this in (_T.SMALLINT, _T.TINYINT):
            return 5, 0
        if t.this == _T.DECIMAL:
            params = _type_params(t)
            if len(params) >= 1:
                return params[0], params[1] if len(params) > 1 else 0
        return None

    def _decimal_div(self, node: exp.Div) -> exp.Expression:
        """numeric division with PostgreSQL-like scale (Spark keeps as few as 6 digits).

        Spark's result scale is ``s1 + p2 + 1`` (while the precision fits 38): widening the
        divisor's precision buys fraction digits without changing any value.
        """
        num, den = self._decimal_shape(node.this), self._decimal_shape(node.expression)
        if num is not None and den is not None:
            p1, s1 = num
            p2, s2 = den
            wide = 37 - p1 - s2
            if wide >= p2 and s1 + wide + 1 >= 16:
                return exp.Div(
                    this=_cast(node.this, f"DECIMAL({p1},{s1})"),
                    expression=_cast(node.expression, f"DECIMAL({wide},{s2})"),
                )
            if 38 - (p1 - s1 + s2) >= 16:
                # Spark then keeps 38 minus the integer digits as the scale: still >= 16.
                return exp.Div(
                    this=_cast(node.this, f"DECIMAL({p1},{s1})"),
                    expression=_cast(node.expression, f"DECIMAL({p2},{s2})"),
                )
        quotient = exp.Div(this=_cast(node.this, "DOUBLE"), expression=_cast(node.expression, "DOUBLE"))
        return _cast(quotient, "DECIMAL(38,12)")

    _MAKE_INTERVAL_ARGS = ("year", "month", "week", "day", "hour", "minute", "second")

    @staticmethod
    def _make_interval_args(node: exp.MakeInterval) -> list[exp.Expression]:
        """make_interval's arguments by position (named ones, ``days => 3``, moved in place)."""
        out: list[exp.Expression] = []
        for key in _Translator._MAKE_INTERVAL_ARGS:
            arg = node.args.get(key)
            if isinstance(arg, exp.Kwarg):
                arg = arg.expression
            out.append(arg if arg is not None else exp.Literal.number(0))
        return out

    def _make_interval(self, node: exp.MakeInterval) -> exp.Expression:
        """Spark's make_interval takes PostgreSQL's arguments in the same order, by position only."""
        args = self._make_interval_args(node)
        args[-1] = _cast(args[-1], "DECIMAL(18,6)")
        call = _func("make_interval", *args)
        # a CalendarInterval cannot be returned through Arrow; its text ('1 days 2 hours') is
        # interval input the result conversion reads
        return _cast(call, "STRING") if _result_column(node) else call

    def _fold_interval(self, node: exp.Expression) -> exp.Expression | None:
        """Interval constants combined as PostgreSQL does, field by field ('1 day' - '1 hour' is
        1 day -01:00:00; make_interval(days => 3) is 3 days): Spark's day-time intervals would
        merge the fields."""
        def value(e: exp.Expression) -> PgInterval | None:
            return e.meta.get("pg_interval") if e.meta else None

        if isinstance(node, exp.MakeInterval):
            nums = []
            for a in self._make_interval_args(node):
                if isinstance(a, exp.Neg) and isinstance(a.this, exp.Literal) and not a.this.is_string:
                    nums.append(-Decimal(a.this.this))
                elif isinstance(a, exp.Literal) and not a.is_string:
                    nums.append(Decimal(a.this))
                else:
                    return None
            y, mo, w, d, h, mi, sec = nums
            if any(v != int(v) for v in (y, mo, w, d, h, mi)):
                return None
            micros = int((h * 3_600_000_000 + mi * 60_000_000 + sec * 1_000_000).to_integral_value())
            iv = PgInterval(int(y) * 12 + int(mo), int(w) * 7 + int(d), micros)
        elif isinstance(node, exp.Neg):
            inner = value(node.this)
            if inner is None:
                return None
            iv = PgInterval(-inner.months, -inner.days, -inner.micros)
        else:
            left, right = value(node.this), value(node.expression)
            if left is None or right is None:
                return None
            sign = -1 if isinstance(node, exp.Sub) else 1
            iv = PgInterval(left.months + sign * right.months, left.days + sign * right.days,
                            left.micros + sign * right.micros)
        out = _interval_value(iv, node)
        out.type = exp.DataType.build("INTERVAL")
        return out

    @staticmethod
    def _tz_plus_interval(node: exp.Binary) -> exp.Expression | None:
        """timestamptz ± interval as PostgreSQL adds it: months and days on the session zone's
        calendar, then the time part as elapsed microseconds ('24 hours' across a DST change is
        not '1 day'; Spark would add a day-time interval's whole days on the calendar)."""
        left, right = node.this, node.expression
        if isinstance(node, exp.Add) and _dtype(left) not in _TZ_TYPES:
            left, right = right, left
        iv = right.meta.get("pg_interval") if right.meta else None
        if iv is None or iv.micros == 0 or _dtype(left) not in _TZ_TYPES:
            return None
        sign = -1 if isinstance(node, exp.Sub) else 1
        base = left
        if iv.months or iv.days:
            cal = _interval_expr(PgInterval(iv.months, iv.days, 0))
            base = (exp.Sub if sign < 0 else exp.Add)(this=left, expression=cal)
        moved = exp.Add(this=_func("unix_micros", base), expression=exp.Literal.number(sign * iv.micros))
        return _func("timestamp_micros", moved)

    @staticmethod
    def _date_plus_interval(node: exp.Binary) -> bool:
        """date ± interval is a timestamp in PostgreSQL (Spark keeps a date for month steps)."""
        types = {_dtype(node.this), _dtype(node.expression)}
        has_interval = _T.INTERVAL in types or any(
            n.meta.get("pg_interval") is not None for n in (node.this, node.expression)
        )
        return _T.DATE in types and has_interval

    def _trunc(self, node: exp.Trunc) -> exp.Expression:
        arg = node.this
        decimals = node.args.get("decimals")
        if _dtype(arg) in _FLOAT_TYPES and decimals is None:
            return _float_integral(arg, lambda x: exp.If(this=exp.GTE(this=x, expression=exp.Literal.number(0)),
                                                         true=_func("floor", x.copy()), false=_func("ceil", x.copy())))
        scale = decimals if decimals is not None else exp.Literal.number(0)
        return exp.If(
            this=exp.GTE(this=arg, expression=exp.Literal.number(0)),
            true=_func("floor", arg.copy(), scale),
            false=_func("ceil", arg.copy(), scale.copy()),
        )

    # -- casts and literals

    def _cast_node(self, node: exp.Cast) -> exp.Expression:
        to = node.to
        t = to.this
        arg = node.this
        src = _dtype(arg)
        params = _type_params(to)
        if (src == _T.BOOLEAN and t in _NOT_FROM_BOOLEAN) or (t == _T.BOOLEAN and src in _NOT_FROM_BOOLEAN):
            # PostgreSQL casts boolean to and from integer (int4) only among the numbers
            raise SqlError("42846", f"cannot cast type {_PG_ARG_TYPE[src]} to {_PG_ARG_TYPE[t]}")
        if isinstance(arg, exp.Literal) and arg.is_string and t == _T.DECIMAL and not params:
            _check_numeric_constant(arg.name)  # (a numeric constant is exact: _numeric_literal)
            if arg.is_string:
                # '1.50'::numeric is the number 1.50, scale and all, as the literal 1.50 is
                value = pgvalues.parse_numeric(arg.name)
                digits, exponent = len(value.as_tuple().digits), value.as_tuple().exponent
                scale = max(0, -exponent)
                precision = max(digits, scale + 1)
                if precision <= 38 and scale <= 18:
                    return _typed(_cast(exp.Literal.number(format(value, "f")), f"DECIMAL({precision},{scale})"), to)
        if t == _T.DECIMAL and not params and src == _T.DECIMAL:
            return _typed(arg, to)  # numeric without a typmod keeps the value (and its scale)
        if isinstance(arg, exp.Literal) and arg.is_string:
            if t in (_T.VARBINARY, _T.BINARY):  # bytea input syntax, as a table's column reads it
                return _func("unhex", exp.Literal.string(pgvalues.parse_bytea(arg.name).hex()))
            if t == _T.JSONB:  # jsonb's value, printed as jsonb prints it (keys ordered, one each)
                return _typed(_cast(_string(pgvalues.jsonb_text(arg.name)), "STRING"), to)
            _check_constant_input(arg.name, t)
        if t == _T.ARRAY:
            if isinstance(arg, exp.Literal) and arg.is_string:
                elem = to.expressions[0] if to.expressions else exp.DataType.build("TEXT")
                items = pgvalues.parse_flat_array(arg.name)
                elems = [
                    exp.Null() if item is None else self._cast_node(exp.Cast(this=_string(item), to=elem.copy()))
                    for item in items
                ]
                spark_elem = self._spark_type(elem)
                return _typed(_cast(exp.Array(expressions=elems), f"ARRAY<{spark_elem}>"), to)
            if isinstance(arg, exp.Array):
                elem = to.expressions[0] if to.expressions else exp.DataType.build("TEXT")
                return _typed(_cast(arg, f"ARRAY<{self._spark_type(elem)}>"), to)
            return _typed(_cast(arg, self._spark_type(to)), to)
        if t == _T.INTERVAL:
            if isinstance(arg, exp.Literal) and arg.is_string:
                return _interval_value(parse_interval(arg.name), node)
            if isinstance(arg, exp.Interval):
                return arg
            raise SqlError("0A000", "casting a non-constant value to interval is not supported")
        if t in (_T.VARCHAR, _T.CHAR, _T.NCHAR) and params:
            text = _bytea_text(arg) if src in (_T.VARBINARY, _T.BINARY) else _cast(arg, "STRING")
            n = params[0]
            if t == _T.VARCHAR:
                return _func("substring", text, exp.Literal.number(1), exp.Literal.number(n))
            return _func("rpad", _func("substring", text, exp.Literal.number(1), exp.Literal.number(n)),
                         exp.Literal.number(n), _string(" "))
        if t == _T.TIME:
            return _typed(self._time_value(arg, src), to)
        if t == _T.DATE and isinstance(arg, exp.Literal) and arg.is_string:
            # date input by PostgreSQL's rules (tidegate.pgvalues, as parameters, COPY and storage
            # read it): '20240101', 'epoch', 'today' in the session zone; infinity refused
            try:
                day = pgvalues.parse_date(arg.name, self.zone)
            except ValueError:
                raise pgvalues.datetime_input_error(arg.name, "date") from None
            return _cast(_string(day.isoformat()), "DATE")
        if t in _NTZ_TYPES or t in _TZ_TYPES:
            literal = self._timestamp_literal(arg, with_tz=t in _TZ_TYPES)
            if literal is not None:
                return literal
        if t in _TZ_TYPES and src in _NTZ_TYPES:
            return _ntz_to_tz(arg)
        if t == _T.DECIMAL and src in _FLOAT_TYPES:
            # Spark's cast gave NULL for NaN and infinities. PostgreSQL: infinity overflows a
            # numeric(p, s); NaN, and infinity in an unconstrained numeric, are values tidegate's
            # numeric (a Delta decimal) cannot hold
            x = exp.paren(_cast(arg.copy(), "DOUBLE"))
            infinite = _is_infinite(x.copy())
            unsupported = "numeric NaN and infinity are not supported"
            return self._guarded(_cast(_float_digits(x.copy(), 6 if src == _T.FLOAT else 15), self._spark_type(to)), [
                (_func("isnan", x.copy()), "0A000", unsupported),
                (infinite, "22003" if params else "0A000", "numeric field overflow" if params else unsupported)])
        if t == _T.FLOAT and src == _T.DOUBLE:
            # float8 -> float4 overflows (1e300) and underflows (1e-300) with 22003, as in PostgreSQL;
            # Spark's cast gave Infinity and 0
            x = exp.paren(arg.copy())
            narrowed = _cast(x.copy(), "FLOAT")
            return self._guarded(narrowed, [
                (exp.and_(_is_infinite(narrowed.copy()), exp.Not(this=_is_infinite(x.copy()))), "22003",
                 "value out of range: overflow"),
                (exp.and_(exp.EQ(this=narrowed.copy(), expression=exp.Literal.number(0)),
                          exp.NEQ(this=x.copy(), expression=exp.Literal.number(0))), "22003",
                 "value out of range: underflow")])
        if t in _INTEGER_TYPES and src in (_T.DECIMAL, *_FLOAT_TYPES):
            rounded = _func("bround" if src in _FLOAT_TYPES else "round", arg)
            return _cast(rounded, self._spark_type(to))
        if t == _T.BOOLEAN and isinstance(arg, exp.Literal) and arg.is_string:
            return _typed(exp.Boolean(this=pgvalues.parse_bool(arg.name)), to)
        if t in _INT_WORDS and isinstance(arg, exp.Literal) and arg.is_string:
            return _cast(exp.Literal.number(pgvalues.parse_int(arg.name, _INT_WORDS[t])), self._spark_type(to))
        if t in (_T.DOUBLE, _T.FLOAT) and isinstance(arg, exp.Literal) and arg.is_string \
                and math.isfinite(value := pgvalues.parse_float(arg.name, real=t == _T.FLOAT)):
            return _cast(_string(repr(value)), self._spark_type(to))  # hex, '-0', spaces: read once here
        if t in (_T.TEXT, _T.VARCHAR) and (src in _PG_TEXT_OF or _interval_valued(arg)):
            return _text_operand(arg)
        if t in (_T.TEXT, _T.VARCHAR) and src == _T.DECIMAL and isinstance(arg, exp.Column) \
                and isinstance(arg.type, exp.DataType) and not _type_params(arg.type):
            # a column of unconstrained numeric (stored at 18 digits) as the wire prints it: no
            # trailing zeros (docs/UNSUPPORTED.md: the written scale is not stored)
            return _regexp_replace(_regexp_replace(_cast(arg, "STRING"), "(\\.[0-9]*?)0+$", "$1"), "\\.$", "")
        if t in (_T.TEXT, _T.VARCHAR, _T.CHAR) and src == _T.BOOLEAN:
            return _bool_text(arg, "true", "false")
        if t == _T.JSON:  # json text, known as json to the operators on it (->, #>)
            return _typed(_cast(arg, "STRING"), to)
        return _cast(arg, self._spark_type(to))

    def _timestamp_literal(self, arg: exp.Expression, with_tz: bool) -> exp.Expression | None:
        """A timestamp[tz] literal read by PostgreSQL's rules (tidegate.pgvalues): any offset
        spelling ('00:00+00', 'Z', a zone name), a wall time without offset in the session zone
        with PostgreSQL's DST rules; a timestamp ignores an offset; now / today / epoch; infinity
        and BC refused (0A000), as parameters, COPY and storage read it. None: not a literal."""
        if not (isinstance(arg, exp.Literal) and arg.is_string):
            return None
        word = "timestamp with time zone" if with_tz else "timestamp"
        try:
            value = pgvalues.parse_timestamp(arg.name, with_tz, self.zone)
        except ValueError:
            raise pgvalues.datetime_input_error(arg.name, word) from None
        except OverflowError:
            raise SqlError("22008", f'timestamp out of range: "{arg.name}"') from None
        if with_tz:
            text = value.astimezone(_dt.timezone.utc).replace(tzinfo=None).isoformat(sep=" ") + "+00:00"
            return _cast(_string(text), "TIMESTAMP")
        return _cast(_string(value.isoformat(sep=" ")), "TIMESTAMP_NTZ")

    @staticmethod
    def _time_value(arg: exp.Expression, src: exp.DataType.Type | None) -> exp.Expression:
        """time values are microseconds since midnight (bigint), as tidegate stores them:
        Spark has no TIME type."""
        if isinstance(arg, exp.Literal) and arg.is_string:
            return exp.Literal.number(_time_micros(arg.name))
        if isinstance(arg, exp.Null) or src in (_T.NULL, _T.UNKNOWN):
            return _cast(exp.Null(), "BIGINT")  # NULL::time
        if src == _T.TIME or src in _INTEGER_TYPES:
            return arg
        if src in _NTZ_TYPES or src in _TZ_TYPES:
            # a timestamptz's time of day is its wall time in the session zone
            local = arg if src in _NTZ_TYPES else _cast(arg, "TIMESTAMP_NTZ")
            return _func("pmod", _ntz_micros(local), exp.Literal.number(86_400_000_000))
        if src in _STRING_TYPES:
            stamp = _cast(_func("concat", _string("1970-01-01 "), arg), "TIMESTAMP_NTZ")
            return _ntz_micros(stamp)
        raise SqlError("42846", f"cannot cast type {_PG_ARG_TYPE.get(src, 'unknown') if src else 'unknown'} to time without time zone")

    def _spark_type(self, to: exp.DataType) -> str:
        t = to.this
        params = _type_params(to)
        if t == _T.ARRAY:
            inner = to.expressions[0] if to.expressions else exp.DataType.build("TEXT")
            return f"ARRAY<{self._spark_type(inner)}>"
        if t == _T.DECIMAL:
            if params and params[0] != _DISPLAY_SCALE_ONLY:
                return f"DECIMAL({params[0]},{params[1] if len(params) > 1 else 0})"
            return "DECIMAL(38,18)"
        if t in (_T.TIMESTAMP, _T.TIMESTAMPNTZ, _T.DATETIME):
            return "TIMESTAMP_NTZ"
        if t in (_T.TIMESTAMPTZ, _T.TIMESTAMPLTZ):
            return "TIMESTAMP"
        if t in (_T.TEXT, _T.VARCHAR, _T.CHAR, _T.NCHAR, _T.NVARCHAR, _T.JSON, _T.JSONB, _T.UUID, _T.NAME):
            return "STRING"
        if t in (_T.VARBINARY, _T.BINARY):
            return "BINARY"
        mapping = {
            _T.BOOLEAN: "BOOLEAN",
            _T.SMALLINT: "SMALLINT",
            _T.TINYINT: "SMALLINT",
            _T.INT: "INT",
            _T.BIGINT: "BIGINT",
            _T.FLOAT: "FLOAT",
            _T.DOUBLE: "DOUBLE",
            _T.DATE: "DATE",
        }
        if t in mapping:
            return mapping[t]
        raise SqlError("0A000", f"type {to.sql('postgres').lower()} is not supported")

    def _interval(self, node: exp.Interval) -> exp.Expression | None:
        if node.meta.get("pg_interval") is not None:
            return None  # already a Spark interval (parameters, rewritten literals)
        value = node.this
        unit = node.args.get("unit")
        text = value.name if isinstance(value, exp.Expression) else str(value)
        if unit is not None:
            unit_text = unit.name if isinstance(unit, exp.Expression) else str(unit)
            text = f"{text} {unit_text}"
        if isinstance(value, exp.Literal) or value is None:
            return _interval_value(parse_interval(text), node)
        raise SqlError("0A000", "non-constant interval literals are not supported")

    # -- strings and patterns

    @staticmethod
    def _prefixed(pattern: exp.Expression, prefix: str) -> exp.Expression:
        if isinstance(pattern, exp.Literal) and pattern.is_string:
            return _string(prefix + pattern.name)
        return _func("concat", _string(prefix), pattern)

    def _similar(self, node: exp.SimilarTo) -> exp.Expression:
        pattern = node.expression
        escape = None
        if isinstance(pattern, exp.Escape):
            escape = pattern.expression.name
            pattern = pattern.this
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise SqlError("0A000", "SIMILAR TO with a non-constant pattern is not supported")
        return exp.RegexpLike(this=node.this, expression=_string(similar_to_regex(pattern.name, escape or "\\")))

    def _regexp_replace(self, node: exp.RegexpReplace) -> exp.Expression:
        subject = node.this
        pattern = node.expression
        replacement = node.args.get("replacement") or _string("")
        flags_node = node.args.get("modifiers")
        flags = ""
        if flags_node is not None:
            if not (isinstance(flags_node, exp.Literal) and flags_node.is_string):
                raise SqlError("0A000", "regexp_replace with non-constant flags is not supported")
            flags = flags_node.name
        global_, inline = pg_regex_flags(flags)
        # PostgreSQL's \1 back references are $1 for Java.
        if isinstance(replacement, exp.Literal) and replacement.is_string:
            rep_text = replacement.name.replace("$", "\\$")
            rep_text = re.sub(r"\\\\(\d)", lambda m: "$" + m.group(1), rep_text)
            rep_text = re.sub(r"\\(\d)", lambda m: "$" + m.group(1), rep_text)
            rep_text = rep_text.replace("\\&", "$0").replace("\\$", "\\$")
        else:
            rep_text = None
        if global_:
            pat = self._prefixed(pattern, inline) if inline else pattern
            return _func("regexp_replace", subject, pat, _string(rep_text) if rep_text is not None else replacement)
        if not (isinstance(pattern, exp.Literal) and pattern.is_string) or rep_text is None:
            raise SqlError("0A000", "regexp_replace without the 'g' flag needs a constant pattern and replacement")
        # Replace only the first match: capture what precedes and follows it.
        shifted = re.sub(r"\$(\d)", lambda m: "$" + str(int(m.group(1)) + 1), rep_text)
        whole = _string(f"(?s){inline}^(.*?)(?:{pattern.name})(.*)$".replace("(?s)(?", "(?s)(?", 1))
        groups = len(re.findall(r"(?<!\\)\((?!\?)", pattern.name))
        return _func("regexp_replace", subject, whole, _string(f"$1{shifted}${groups + 2}"))

    # -- date/time

    def _extract(self, node: exp.Extract, numeric: bool) -> exp.Expression:
        field_node = node.this
        part = (field_node.name if isinstance(field_node, exp.Expression) else str(field_node)).lower()
        source = node.expression
        return self._date_part(part, source, numeric)

    def _date_part(self, part: str, source: exp.Expression, numeric: bool) -> exp.Expression:
        part = part.strip().lower()
        src_type = _dtype(source)
        aliases = {
            "years": "year", "months": "month", "mon": "month", "days": "day", "hours": "hour",
            "minutes": "minute", "seconds": "second", "microsecond": "microseconds", "millisecond": "milliseconds",
        }
        part = aliases.get(part, part)
        out_scale = 0

        def ex(unit: str, src: exp.Expression | None = None) -> exp.Expression:
            return exp.Extract(this=exp.var(unit), expression=(src or source).copy())

        iv = _interval_constant(source) if src_type == _T.INTERVAL else None
        unit = "epoch" if part == "epoch" else pgvalues.unit_name(part)
        if iv is not None and unit in pgvalues.INTERVAL_PART_SCALES:
            # a constant's fields, exactly: its months are no Spark interval's (year-month and
            # day-time intervals are apart; epoch counts a month as 30 days, a year as 365.25)
            value: exp.Expression = exp.Literal.number(str(pgvalues.interval_part(iv.months, iv.days, iv.micros, unit)))
            out_scale = pgvalues.INTERVAL_PART_SCALES[unit]
        elif src_type == _T.TIME:
            # time is microseconds since midnight here (24:00:00 is 86400000000)
            us = _cast(source.copy(), "DECIMAL(20,0)")
            within_minute = exp.Mod(this=us.copy(), expression=exp.Literal.number(60_000_000))
            if part == "hour":
                value = _func("floor", exp.Div(this=us, expression=exp.Literal.number(3_600_000_000)))
            elif part == "minute":
                value = exp.Mod(this=_func("floor", exp.Div(this=us, expression=exp.Literal.number(60_000_000))),
                                expression=exp.Literal.number(60))
            elif part == "second":
                value, out_scale = exp.Div(this=within_minute, expression=exp.Literal.number(1_000_000)), 6
            elif part == "milliseconds":
                value, out_scale = exp.Div(this=within_minute, expression=exp.Literal.number(1000)), 3
            elif part == "microseconds":
                value = within_minute
            elif part == "epoch":
                value, out_scale = exp.Div(this=us, expression=exp.Literal.number(1_000_000)), 6
            else:
                raise SqlError("0A000", f'unit "{part}" not supported for type time without time zone')
        elif src_type == _T.INTERVAL:
            if part == "epoch":
                value = exp.Add(
                    this=exp.Add(
                        this=exp.Mul(this=ex("DAY"), expression=exp.Literal.number(86400)),
                        expression=exp.Mul(this=ex("HOUR"), expression=exp.Literal.number(3600)),
                    ),
                    expression=exp.Add(
                        this=exp.Mul(this=ex("MINUTE"), expression=exp.Literal.number(60)),
                        expression=ex("SECOND"),
                    ),
                )
                out_scale = 6
            elif part in ("day", "hour", "minute", "second", "year", "month"):
                value = ex(part.upper())
                out_scale = 6 if part == "second" else 0
            else:
                raise SqlError("0A000", f'unit "{part}" not supported for type interval')
        else:
            ts = source
            if part == "epoch":
                if src_type == _T.DATE:
                    value = exp.Mul(this=_cast(_func("unix_date", ts), "DECIMAL(20,0)"), expression=exp.Literal.number(86400))
                else:
                    micros = _ntz_micros(ts) if src_type in _NTZ_TYPES else _func("unix_micros", ts)
                    value = exp.Div(this=_cast(micros, "DECIMAL(24,0)"), expression=exp.Literal.number(1000000))
                out_scale = 6
            elif part == "dow":
                value = exp.Sub(this=ex("DAYOFWEEK"), expression=exp.Literal.number(1))
            elif part == "isodow":
                value = ex("DAYOFWEEK_ISO")
            elif part == "doy":
                value = ex("DOY")
            elif part == "isoyear":
                value = exp.Extract(this=exp.var("YEAROFWEEK"), expression=ts.copy())
            elif part in ("year", "month", "day", "hour", "minute", "quarter", "week"):
                value = ex(part.upper())
            elif part == "second":
                value = ex("SECOND")
                out_scale = 6
            elif part == "milliseconds":
                value = exp.Mul(this=ex("SECOND"), expression=exp.Literal.number(1000))
                out_scale = 3
            elif part == "microseconds":
                value = _cast(exp.Mul(this=ex("SECOND"), expression=exp.Literal.number(1000000)), "DECIMAL(20,0)")
            elif part == "decade":
                value = _func("floor", exp.Div(this=ex("YEAR"), expression=exp.Literal.number(10)))
            elif part == "century":
                value = _func("ceil", exp.Div(this=ex("YEAR"), expression=exp.Literal.number(100)))
            elif part == "millennium":
                value = _func("ceil", exp.Div(this=ex("YEAR"), expression=exp.Literal.number(1000)))
            else:
                raise SqlError("0A000", f'unit "{part}" not supported for extract')
        if numeric:
            return _cast(value, f"DECIMAL({20 + out_scale},{out_scale})")
        return _cast(value, "DOUBLE")

    def _date_bin(self, node: exp.DateBin) -> exp.Expression:
        stride = node.this
        source = node.expression
        origin = node.args.get("unit")  # sqlglot keeps date_bin's origin under "unit"
        if stride.meta.get("pg_interval") is not None:
            iv = stride.meta["pg_interval"]
        elif isinstance(stride, exp.Literal) and stride.is_string:
            iv = parse_interval(stride.name)
        else:
            raise SqlError("0A000", "date_bin with a non-constant stride is not supported")
        if iv.months:
            raise SqlError("22023", "timestamps cannot be binned into intervals containing months or years")
        if iv.total_micros <= 0:
            raise SqlError("22023", "stride must be greater than zero")
        src_type = _dtype(source)

        wall = src_type in _NTZ_TYPES or src_type == _T.DATE

        def micros(e: exp.Expression) -> exp.Expression:
            t = _dtype(e)
            if wall:  # timestamps without time zone bin on their wall time
                if (isinstance(e, exp.Literal) and e.is_string) or t not in _NTZ_TYPES:
                    e = _cast(e, "TIMESTAMP_NTZ")
                return _ntz_micros(e)
            if (isinstance(e, exp.Literal) and e.is_string) or t in _NTZ_TYPES or t == _T.DATE:
                e = _cast(e, "TIMESTAMP")
            return _func("unix_micros", e)

        src_us = micros(source)
        # PostgreSQL requires the origin; like GreptimeDB (whose flows use the two-argument form)
        # tidegate also accepts date_bin(stride, ts) with the Unix epoch as origin.
        org_us = micros(origin) if origin is not None else exp.Literal.number(0)
        stride_lit = exp.Literal.number(iv.total_micros)
        binned = exp.Sub(
            this=src_us,
            expression=_func("pmod", exp.Paren(this=exp.Sub(this=src_us.copy(), expression=org_us)), stride_lit),
        )
        if wall:
            return _ntz_from_micros(binned)
        return _func("timestamp_micros", binned)

    # -- functions sqlglot does not model

    def check_functions(self, tree: exp.Expression) -> None:
        """42883 for a call the client wrote (views and set-returning functions in FROM
        included) to a function that is not on the allow-list (engine.pgfunctions)."""
        pgfunctions.check_calls(tree, _literal_arg_type)
        for generator in self.generators.values():
            pgfunctions.check_calls(generator, _literal_arg_type)

    def check_operators(self, tree: exp.Expression) -> None:
        """42883 for an operator PostgreSQL has not for its operand types (engine.pgoperators)."""
        stored = set(self.schema) - set(self.generators)
        pg_type = pgoperators.check_operators(tree, stored)
        # a string literal where a boolean is required is read as boolean input, as PostgreSQL
        # reads an 'unknown' there ('on', 'tr', ' yes '); Spark would cast it by its own rules
        for _, operand in list(pgoperators.boolean_operands(tree)):
            literal = operand.unnest()
            if isinstance(literal, exp.Literal) and literal.is_string:
                literal.replace(exp.Boolean(this=pgvalues.parse_bool(literal.name)))
            elif isinstance(literal, exp.Null):  # WHERE NULL: Spark's filter refuses an untyped NULL
                literal.replace(exp.cast(exp.null(), exp.DataType.build("boolean")))
        # sqlglot types time arithmetic as time; PostgreSQL's types decide how it is computed
        # (time - time is an interval, date + time a timestamp) and what the client is told.
        for node in tree.find_all(exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod):
            if pg_type(node) is not None:
                node.meta[_PG_TYPE_NAME] = pg_type(node)  # for pg_typeof()
            left, right, op = pg_type(node.this), pg_type(node.expression), pgoperators.ARITHMETIC[type(node)]
            if left and right and pgoperators.time_as_interval(op, left, right):
                points = {pgoperators.DATE, pgoperators.TIMESTAMP, pgoperators.TIMESTAMPTZ}
                if not (isinstance(node, (exp.Add, exp.Sub)) and (left in points or right in points)):
                    raise SqlError("0A000", f"a time used as an interval ({left} {op} {right}) is not supported",
                                   hint="Compute with extract(epoch from the time), its seconds since midnight.")
            if isinstance(node, (exp.Add, exp.Sub)) and pgoperators.TIME in (left, right):
                result = _TIME_ARITHMETIC_TYPES.get(pg_type(node) or "")
                if result is not None:
                    node.type = exp.DataType.build(result)
        _bpchar_semantics(tree, pg_type)
        for node in tree.find_all(exp.JSONBContainsTopKey):
            left = _dtype(node.this)
            if left != _T.JSONB or _dtype(node.expression) not in _STRING_TYPES | {_T.UNKNOWN, None}:
                right = "unknown" if isinstance(node.expression, exp.Literal) and node.expression.is_string \
                    else _pg_arg_type(node.expression)
                raise SqlError("42883", f"operator does not exist: {_PG_ARG_TYPE.get(left, 'unknown')} ? {right}",
                               hint="No operator matches the given name and argument types. "
                                    "You might need to add explicit type casts.")
        for node in tree.find_all(exp.DPipe):
            if _T.JSONB in (_dtype(node.this), _dtype(node.expression)):
                # jsonb is kept as its text: || joined the texts ('{"a":1}{"b":2}') instead of merging
                raise SqlError("0A000", "the jsonb || operator is not supported yet",
                               hint="Concatenate texts with ::text, or build the value in the client.")

    def _anonymous(self, node: exp.Anonymous) -> exp.Expression | None:
        name = node.name.lower()
        args = node.expressions
        if name == "date_part":
            if len(args) != 2 or not (isinstance(args[0], exp.Literal) and args[0].is_string):
                raise SqlError("0A000", "date_part with a non-constant field is not supported")
            return self._date_part(args[0].name, args[1], numeric=False)
        if name == "to_char":
            return self._to_char_call(args)
        if name in ("all", "any", "some") and len(args) == 1 and isinstance(
            node.parent, (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
        ):
            return exp.All(this=args[0]) if name == "all" else exp.Any(this=args[0])
        if name == "timezone" and len(args) == 2:
            return self._at_time_zone(args[1], args[0])
        if name == "current_setting":
            return self._current_setting(args)
        if name == "pg_typeof" and len(args) == 1:
            return self._pg_typeof(args[0])
        if name in _RENAMES:
            node.set("this", _RENAMES[name])
            return None
        if name in ("strpos",):
            return _func("locate", args[1], args[0])
        if name == "quote_literal" and len(args) == 1:
            return self._quote_literal(args[0])
        if name == "age":
            return self._age(node, list(args))
        if name in ("gcd", "lcm") and len(args) == 2:
            return self._gcd_lcm(name, args[0], args[1])
        if name in ("json_build_object", "jsonb_build_object", "json_build_array", "jsonb_build_array"):
            return _json_build(name, list(args))
        if name in ("to_json", "to_jsonb") and len(args) == 1:
            if (isinstance(args[0], exp.Literal) and args[0].is_string) or isinstance(args[0], exp.Null):
                raise SqlError("42804", "could not determine polymorphic type because input has type unknown")
            value = _json_value(args[0], jsonb=name == "to_jsonb")
            return _typed(exp.If(this=exp.Is(this=exp.paren(args[0].copy()), expression=exp.Null()), true=exp.Null(),
                                 false=value), exp.DataType.build("JSONB" if name == "to_jsonb" else "JSON"))
        if name in ("json_typeof", "jsonb_typeof") and len(args) == 1:
            return _json_typeof(args[0])
        if name in ("json_array_length", "jsonb_array_length") and len(args) == 1:
            return _json_array_length(args[0])
        if name == "quote_ident" and len(args) == 1:
            return _quote_ident(_cast(args[0], "STRING"))
        if name in ("num_nulls", "num_nonnulls") and args:
            flags = [exp.Case(ifs=[exp.If(this=exp.Is(this=a, expression=exp.Null()),
                                          true=exp.Literal.number(1 if name == "num_nulls" else 0))],
                              default=exp.Literal.number(0 if name == "num_nulls" else 1)) for a in args]
            total: exp.Expression = flags[0]
            for flag in flags[1:]:
                total = exp.Add(this=total, expression=flag)
            return _cast(total, "INT")
        if name == "btrim":
            return None
        if name == "generate_series":
            start, end = args[0], args[1]
            step = args[2] if len(args) > 2 else None
            return _func("explode", self._series(start, end, step))
        if name not in pgfunctions.PG_FUNCTIONS and not node.meta_get(pgfunctions.INTERNAL):
            raise pgfunctions.undefined_function(name, [_pg_arg_type(a) for a in args])
        return None

    def _date_trunc(self, node: exp.DateTrunc | exp.TimestampTrunc) -> exp.Expression | None:
        """date_trunc(unit, x) with PostgreSQL's unit names (plurals and abbreviations: 'days',
        'mins'; decade, century and millennium, which Spark lacks); an unknown unit is 22023.
        Spark answered NULL for every name it does not know."""
        arg = node.this
        unit = node.args.get("unit")
        if not isinstance(unit, (exp.Var, exp.Literal, exp.Identifier)):
            return None
        zone = node.args.get("zone")
        if zone is not None:
            # date_trunc(unit, timestamptz, zone): truncated on the wall clock of that zone, read back
            # there (a timestamp is a timestamptz in the session's zone first, as PostgreSQL casts it)
            instant = arg if _dtype(arg) in _TZ_TYPES else _cast(arg, "TIMESTAMP")
            instant.type = exp.DataType.build("timestamptz")
            step = _US_UNITS.get(pgvalues.unit_name(unit.name.lower()) or "")
            if step is not None:
                # below a day PostgreSQL keeps the value's own UTC offset (a wall time DST repeats
                # stays the one it was): the wall clock is cut, then read back at that offset
                wall = _func("unix_micros", _func("from_utc_timestamp", instant.copy(), _spark_zone_arg(zone.copy())))
                offset = exp.Sub(this=wall.copy(), expression=_func("unix_micros", instant.copy()))
                cut = exp.Sub(this=wall, expression=_func("pmod", wall.copy(), exp.Literal.number(step)))
                return _func("timestamp_micros", exp.Sub(this=cut, expression=exp.paren(offset)))
            local = self._at_time_zone(instant, zone)
            local.type = exp.DataType.build("timestamp")
            truncated = self._date_trunc(exp.TimestampTrunc(this=local, unit=unit.copy()))
            if truncated is None:
                return None
            truncated.type = exp.DataType.build("timestamp")
            return self._at_time_zone(truncated, zone.copy())
        written = unit.name.lower()
        canonical = pgvalues.unit_name(written)
        with_tz = _dtype(arg) not in _NTZ_TYPES
        if canonical is None:
            zone = "with" if with_tz else "without"
            raise SqlError("22023", f'unit "{written}" not recognized for type timestamp {zone} time zone')
        if _dtype(arg) == _T.DATE:
            arg = _cast(arg, "TIMESTAMP")  # PostgreSQL truncates a date as a timestamptz
        if canonical in ("decade", "century", "millennium"):
            year = _func("year", arg)
            if canonical == "decade":
                first = exp.Mul(this=exp.paren(exp.IntDiv(this=year, expression=exp.Literal.number(10))),
                                expression=exp.Literal.number(10))
            else:
                size = 100 if canonical == "century" else 1000
                first = exp.Add(this=exp.Mul(this=exp.paren(exp.IntDiv(
                    this=exp.paren(exp.Sub(this=year, expression=exp.Literal.number(1))),
                    expression=exp.Literal.number(size))), expression=exp.Literal.number(size)),
                    expression=exp.Literal.number(1))
            zero = [exp.Literal.number(v) for v in (1, 1, 0, 0, 0)]
            return _func("make_timestamp" if with_tz else "make_timestamp_ntz", first, *zero)
        if not with_tz:
            return _ntz_trunc(canonical, arg)
        return _func("date_trunc", _string(canonical.upper()), arg)

    @staticmethod
    def _guarded(value: exp.Expression, checks: list[tuple[exp.Expression, str, str]],
                 strict: Sequence[exp.Expression] = ()) -> exp.Expression:
        """CASE WHEN <check> THEN raise_error(<PostgreSQL's error>) ... ELSE value END: the
        statement fails with PostgreSQL's SQLSTATE and message (engine.errors reads them back).
        ``strict``: the arguments of a strict function, whose NULL is NULL before any check."""
        ifs = [exp.If(this=exp.or_(*[exp.Is(this=exp.paren(a.copy()), expression=exp.Null()) for a in strict]),
                      true=exp.Null())] if strict else []
        ifs += [exp.If(this=cond, true=_func("raise_error", _string(f"{_RAISED_PREFIX}{state}:{message}")))
                for cond, state, message in checks]
        return exp.Case(ifs=ifs, default=value) if ifs else value

    @staticmethod
    def _literal_int(e: exp.Expression | None) -> int | None:
        if isinstance(e, exp.Literal) and not e.is_string and re.fullmatch(r"\d+", e.name):
            return int(e.name)
        if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and re.fullmatch(r"\d+", e.this.name):
            return -int(e.this.name)
        return None

    def _substring(self, node: exp.Substring) -> exp.Expression | None:
        """substr(s, start [, n]) is the characters at positions [start, start + n) that exist:
        a start before 1 shortens the result (Spark would count a negative start from the end,
        and read 0 as 1); a negative n is 22011."""
        start, length = node.args["start"], node.args.get("length")
        if isinstance(start, exp.Literal) and start.is_string:
            if length is not None:
                return None
            # substring(s FROM pattern): the match of a regular expression (its first
            # parenthesized part when it has one), NULL when there is none
            pattern = start.name
            group = 1 if re.search(r"(?<!\\)\((?!\?)", pattern) else 0
            found = exp.RegexpLike(this=node.this.copy(), expression=_string(pattern))
            return exp.If(this=found, true=_func("regexp_extract", node.this, _string(pattern), exp.Literal.number(group)),
                          false=exp.Null())
        first, count = self._literal_int(start), self._literal_int(length)
        if first is not None and first >= 1 and (length is None or (count is not None and count >= 0)):
            return None
        text = node.this
        one = exp.Literal.number(1)
        begin = _func("greatest", exp.paren(start.copy()), one)
        if length is None:
            return exp.Case(ifs=[exp.If(this=exp.Is(this=exp.paren(start.copy()), expression=exp.Null()),
                                        true=exp.Null())], default=_func("substring", text, begin))
        # start + n past the integers runs to the end of the string, as in PostgreSQL
        end = exp.Add(this=_cast(exp.paren(start.copy()), "BIGINT"), expression=exp.paren(length.copy()))
        size = _func("least", _func("greatest", exp.Sub(this=end, expression=begin.copy()), exp.Literal.number(0)),
                     exp.Literal.number(2**31 - 1))
        out = _func("substring", text, begin, _cast(size, "INT"))
        # greatest() skips a NULL: a NULL start or length gives NULL, as in PostgreSQL
        out = exp.Case(ifs=[exp.If(this=exp.or_(exp.Is(this=exp.paren(start.copy()), expression=exp.Null()),
                                                exp.Is(this=exp.paren(length.copy()), expression=exp.Null())),
                                   true=exp.Null())], default=out)
        if count is not None and count >= 0:
            return out
        negative = exp.LT(this=exp.paren(length.copy()), expression=exp.Literal.number(0))
        return self._guarded(out, [(negative, "22011", "negative substring length not allowed")],
                             strict=[text, start, length])  # substr is strict: NULL before the check

    @staticmethod
    def _to_timestamp_seconds(seconds: exp.Expression) -> exp.Expression:
        """to_timestamp(double precision): the instant that many seconds after the Unix epoch,
        rounded half-even to microseconds (PostgreSQL's rint); NaN and instants outside PostgreSQL's
        timestamps (and Spark's, from 294247 AD) are 22008, the infinities are refused (0A000)."""
        x = exp.paren(_cast(exp.paren(seconds.copy()), "DOUBLE"))
        micros = _cast(_func("bround", exp.Mul(this=x.copy(), expression=exp.Literal.number(1_000_000))), "BIGINT")
        value = _func("timestamp_micros", micros)
        out_of_range = _func("raise_error", _func("concat", _string(
            f"{_RAISED_PREFIX}22008:timestamp out of range: {RAISED_QUOTE}"), _float_text(x.copy(), 15),
            _string(RAISED_QUOTE)))
        outside = exp.or_(exp.LT(this=x.copy(), expression=exp.Literal.number(-210866803200)),
                          exp.GTE(this=x.copy(), expression=exp.Literal.number(9223372036854)))
        return exp.Case(ifs=[
            exp.If(this=_func("isnan", x.copy()), true=_func("raise_error", _string(
                f"{_RAISED_PREFIX}22008:timestamp cannot be NaN"))),
            exp.If(this=_is_infinite(x.copy()),
                   true=_func("raise_error", _string(f"{_RAISED_PREFIX}0A000:timestamp infinity is not supported"))),
            exp.If(this=outside, true=out_of_range),
        ], default=value)

    def _overlay(self, node: exp.Overlay) -> exp.Expression:
        """overlay(s placing r from p [for n]) is substr(s, 1, p - 1) || r || substr(s, p + n), n
        defaulting to length(r), as PostgreSQL's text_overlay: p < 1 is 22011, p + n beyond the
        integers 22003 (Spark's overlay treats a negative n as length(r))."""
        text, placing, start = node.this, node.expression, exp.paren(node.args["from_"].copy())
        count = node.args.get("for_")
        n = exp.paren(count.copy()) if count is not None else _func("char_length", placing.copy())
        after = exp.Add(this=_cast(start.copy(), "BIGINT"), expression=n)
        head = _func("substring", text.copy(), exp.Literal.number(1), exp.Sub(this=start.copy(), expression=exp.Literal.number(1)))
        tail = _func("substring", text.copy(), _cast(_func("greatest", after.copy(), exp.Literal.number(1)), "INT"))
        out = exp.If(this=exp.Is(this=after.copy(), expression=exp.Null()), true=exp.Null(),
                     false=_func("concat", head, placing.copy(), tail))  # greatest() would skip a NULL
        return self._guarded(out, [
            (exp.LTE(this=start.copy(), expression=exp.Literal.number(0)), "22011", "negative substring length not allowed"),
            (exp.not_(exp.Between(this=after.copy(), low=exp.Literal.number(-(2**31)), high=exp.Literal.number(2**31 - 1))),
             "22003", "integer out of range"),
        ], strict=[text, placing, start, n])

    def _left_right(self, node: exp.Left | exp.Right) -> exp.Expression | None:
        """left(s, -n) is all but the last n characters, right(s, -n) all but the first n
        (Spark answers an empty string)."""
        n = node.expression
        known = self._literal_int(n)
        if known is not None and known >= 0:
            return None
        text = node.this
        if isinstance(node, exp.Left):
            kept = _func("greatest", exp.Add(this=_func("char_length", text.copy()), expression=exp.paren(n.copy())),
                         exp.Literal.number(0))
            negative_case = _func("substring", text.copy(), exp.Literal.number(1), kept)
        else:
            after = exp.Sub(this=exp.Literal.number(1), expression=_cast(exp.paren(n.copy()), "BIGINT"))
            last = exp.Add(this=_func("char_length", text.copy()), expression=exp.Literal.number(1))
            # -(-2147483648) overflows in PostgreSQL's text_right, which then keeps the whole string
            after = exp.If(this=exp.EQ(this=exp.paren(n.copy()), expression=exp.Literal.number(-(2**31))),
                           true=exp.Literal.number(1), false=after)
            negative_case = _func("substring", text.copy(), _cast(_func("least", after, last), "INT"))
        positive_case = _func("left" if isinstance(node, exp.Left) else "right", text, n)
        if known is not None:
            return negative_case
        return exp.If(this=exp.LT(this=exp.paren(n.copy()), expression=exp.Literal.number(0)),
                      true=negative_case, false=positive_case)

    def _chr(self, node: exp.Chr) -> exp.Expression:
        """chr(n) is the Unicode character n (Spark's chr is n modulo 256): its UTF-8 bytes are
        built and decoded; 0, negative, surrogate and too large code points are PostgreSQL's errors."""
        args = node.expressions if node.expressions else [node.this]
        n = exp.paren(args[0].copy())

        def byte(e: exp.Expression) -> exp.Expression:
            return _func("lpad", _func("hex", e), exp.Literal.number(2), _string("0"))

        def shifted(bits: int) -> exp.Expression:
            return _func("shiftright", n.copy(), exp.Literal.number(bits)) if bits else n.copy()

        def cont(bits: int) -> exp.Expression:  # a continuation byte: 10xxxxxx
            return byte(exp.Add(this=exp.Literal.number(128),
                                expression=exp.paren(exp.BitwiseAnd(this=shifted(bits), expression=exp.Literal.number(63)))))

        def lead(marker: int, bits: int) -> exp.Expression:
            return byte(exp.Add(this=exp.Literal.number(marker), expression=shifted(bits)))

        def below(limit: int) -> exp.Expression:
            return exp.LT(this=n.copy(), expression=exp.Literal.number(limit))

        hexed = exp.Case(ifs=[
            exp.If(this=below(0x80), true=byte(n.copy())),
            exp.If(this=below(0x800), true=_func("concat", lead(0xC0, 6), cont(0))),
            exp.If(this=below(0x10000), true=_func("concat", lead(0xE0, 12), cont(6), cont(0))),
        ], default=_func("concat", lead(0xF0, 18), cont(12), cont(6), cont(0)))
        value = _func("decode", _func("unhex", hexed), _string("UTF-8"))
        too_large = _func("raise_error", _func("concat", _string(
            f"{_RAISED_PREFIX}54000:requested character too large for encoding: "), _cast(n.copy(), "STRING")))
        value = exp.If(this=exp.GT(this=n.copy(), expression=exp.Literal.number(0x10FFFF)), true=too_large, false=value)
        surrogate = exp.Between(this=n.copy(), low=exp.Literal.number(0xD800), high=exp.Literal.number(0xDFFF))
        return self._guarded(value, [
            (below(0), "22023", "character number must be positive"),
            (exp.EQ(this=n.copy(), expression=exp.Literal.number(0)), "54000", "null character not permitted"),
            (surrogate, "54000", "requested character not valid for encoding"),
        ])

    def _width_bucket(self, node: exp.WidthBucket) -> exp.Expression:
        """width_bucket(x, lo, hi, count): a count below 1 or lo = hi is 2201G (Spark: NULL)."""
        lo, hi, count = node.args.get("min_value"), node.args.get("max_value"), node.args.get("num_buckets")
        if lo is None or hi is None or count is None:
            return node
        nan = [(exp.or_(*(_func("isnan", _cast(v.copy(), "DOUBLE")) for v in (node.this, lo, hi))), "2201G",
                "operand, lower bound, and upper bound cannot be NaN")] \
            if any(_dtype(v) in _FLOAT_TYPES for v in (node.this, lo, hi)) else []
        return self._guarded(node.copy(), nan + [
            (exp.LTE(this=exp.paren(count.copy()), expression=exp.Literal.number(0)), "2201G",
             "count must be greater than zero"),
            (exp.EQ(this=exp.paren(lo.copy()), expression=exp.paren(hi.copy())), "2201G",
             "lower bound cannot equal upper bound"),
        ])

    def _split_part(self, node: exp.SplitPart) -> exp.Expression | None:
        """split_part(s, sep, 0) is 22023 (Spark's INVALID_INDEX_OF_ZERO). A field counted from
        the end past -2147483647 is '' as any field past the last (Spark negated -2^31 and
        failed with an internal error)."""
        n = node.args.get("part_index")
        known = self._literal_int(n)
        if n is None:
            return None
        if known is None or known == -(2**31):
            lowest = exp.Literal.number(-(2**31) + 1)  # a CASE, not greatest(), which skips a NULL
            clamped = exp.Case(ifs=[exp.If(this=exp.LT(this=exp.paren(n.copy()), expression=lowest),
                                           true=lowest.copy())], default=exp.paren(n.copy()))
            node = node.copy()
            node.set("part_index", clamped)
            if known is not None:
                return node
        elif known != 0:
            return None
        zero = exp.EQ(this=exp.paren(n.copy()), expression=exp.Literal.number(0))
        return self._guarded(node.copy(), [(zero, "22023", "field position must not be zero")],
                             strict=[a for a in (node.this, node.args.get("delimiter"), n) if a is not None])

    # The longest text lpad / rpad / repeat may build: 64 M characters. PostgreSQL's limit is 1 GB
    # (54000 past it); tidegate's is lower because Spark builds the value in the driver's 2 GB
    # heap, several copies at once (a JVM out of memory left the statement hanging).
    MAX_BUILT_TEXT = 64 * 1024 * 1024

    @staticmethod
    def _length_limited(node: exp.Expression) -> exp.Expression:
        """lpad(s, n) / rpad(s, n), or repeat(s, n) with n times s's length, past
        :attr:`MAX_BUILT_TEXT`: 54000 "requested length too large" before Spark allocates anything.
        The length is clamped inside the value too, since Spark's constant folding evaluates both
        branches of the CASE when the arguments are constants."""
        limit = exp.Literal.number(_Translator.MAX_BUILT_TEXT)
        value = node.copy()
        if isinstance(node, exp.Pad):
            size: exp.Expression = exp.paren(node.expression.copy())
            arg = "expression"
        else:
            size = exp.Mul(this=exp.paren(_cast(node.args["times"].copy(), "BIGINT")),
                           expression=_func("length", node.this.copy()))
            arg = "times"
        too_long = exp.GT(this=size, expression=limit)
        ifs = [exp.If(this=too_long.copy(), true=exp.Literal.number(0))]
        if isinstance(node, exp.Pad):  # a negative length pads to '' (Spark 4.2 overflowed on -2^31)
            ifs.append(exp.If(this=exp.LT(this=size.copy(), expression=exp.Literal.number(0)),
                              true=exp.Literal.number(0)))
        value.set(arg, exp.Case(ifs=ifs, default=value.args[arg]))
        return _Translator._guarded(value, [(too_long, "54000", "requested length too large")])

    @staticmethod
    def _math_domain(node: exp.Expression) -> exp.Expression:
        """sqrt / ln / log / power outside their domain raise PostgreSQL's errors (Spark answers
        NaN or NULL, which would be a wrong answer): CASE WHEN <outside> THEN raise_error(...)."""
        checks: list[tuple[exp.Expression, str, str]] = []

        def lt0(e: exp.Expression) -> exp.Expression:
            return exp.LT(this=exp.paren(e.copy()), expression=exp.Literal.number(0))

        def eq(e: exp.Expression, n: int) -> exp.Expression:
            return exp.EQ(this=exp.paren(e.copy()), expression=exp.Literal.number(n))

        def log_checks(e: exp.Expression) -> None:
            checks.append((eq(e, 0), "2201E", "cannot take logarithm of zero"))
            checks.append((lt0(e), "2201E", "cannot take logarithm of a negative number"))

        if isinstance(node, exp.Sqrt):
            checks.append((lt0(node.this), "2201F", "cannot take square root of a negative number"))
            value: exp.Expression = node.copy()
        elif isinstance(node, exp.Ln):
            log_checks(node.this)
            value = node.copy()
        elif isinstance(node, exp.Log):
            if node.expression is None:  # log(x) is the base-10 logarithm in PostgreSQL
                log_checks(node.this)
                value = _func("log10", node.this.copy())
            else:  # log(b, x)
                log_checks(node.this)
                log_checks(node.expression)
                checks.append((eq(node.this, 1), "22012", "division by zero"))
                value = node.copy()
        else:  # power(x, y)
            x, y = node.this, node.expression
            checks.append((exp.and_(eq(x, 0), lt0(y)), "2201F", "zero raised to a negative power is undefined"))
            checks.append((exp.and_(lt0(x), exp.NEQ(this=exp.paren(y.copy()),  # rint: floor is a bigint in Spark
                                                    expression=_func("rint", _cast(exp.paren(y.copy()), "DOUBLE")))),
                           "2201F", "a negative number raised to a non-integer power yields a complex result"))
            value = node.copy()
            if not _numeric_power(node):
                # C's pow, which PostgreSQL's dpow calls: 1 ^ y is 1 even for NaN, and (-)1 ^
                # (-)Infinity is 1 (Java's Math.pow answers NaN to both)
                x_double = _cast(exp.paren(x.copy()), "DOUBLE")
                one = exp.or_(eq(x, 1), exp.and_(exp.EQ(this=_func("abs", x_double), expression=exp.Literal.number(1)),
                                                 _is_infinite(_cast(exp.paren(y.copy()), "DOUBLE"))))
                known = exp.Not(this=exp.Is(this=exp.paren(y.copy()), expression=exp.Null()))
                value = exp.If(this=exp.and_(one, known), true=_cast(exp.Literal.number(1), "DOUBLE"), false=value)
        return _Translator._guarded(value, checks)

    def _age(self, node: exp.Expression, args: list[exp.Expression]) -> exp.Expression:
        """age(a, b) / age(b) (from today's midnight): years, months and days between them, as
        PostgreSQL's timestamp_age counts them (fields subtracted, a borrowed month counted with
        the earlier date's month's days), its text as the result column; the session zone's
        fields for timestamptz."""
        if not 1 <= len(args) <= 2:
            raise pgfunctions.undefined_function("age", [_pg_arg_type(a) for a in args])
        zoned = any(_dtype(a) in _TZ_TYPES for a in args)
        for a in args:
            if _dtype(a) not in _NTZ_TYPES | _TZ_TYPES | {_T.DATE, _T.UNKNOWN, None}:
                raise pgfunctions.undefined_function("age", [_pg_arg_type(a) for a in args])
        parent = node.parent
        as_text = isinstance(parent, exp.Cast) and parent.to.this in (_T.TEXT, _T.VARCHAR)
        if not _result_column(parent if as_text else node):
            raise SqlError("0A000", "age() outside a query's result columns is not supported",
                           hint="Compare timestamps themselves, or select age() as a result column.")
        kind = "TIMESTAMP" if zoned else "TIMESTAMP_NTZ"
        first = args[0] if len(args) == 2 else _func("current_date")
        t1, t2 = _cast(exp.paren(first.copy()), kind), _cast(exp.paren(args[-1].copy()), kind)
        forward = exp.GTE(this=t1.copy(), expression=t2.copy())
        p, q = exp.to_identifier("__p"), exp.to_identifier("__q")

        def field(var: exp.Identifier, key: str) -> exp.Expression:
            return exp.Dot(this=exp.Column(this=var.copy()), expression=exp.to_identifier(key))

        def sub(a: exp.Expression, b: exp.Expression) -> exp.Expression:
            return exp.paren(exp.Sub(this=a, expression=b))

        def of_day(t: exp.Expression) -> exp.Expression:  # microseconds since the day's midnight
            if not zoned:
                return _func("pmod", _ntz_micros(t), _num(86_400_000_000))
            def micros(unit: str, per: int) -> exp.Expression:
                return exp.Mul(this=_cast(_func(unit, t.copy()), "BIGINT"), expression=_num(per))
            clock = exp.Add(this=exp.Add(this=micros("hour", 3_600_000_000), expression=micros("minute", 60_000_000)),
                            expression=micros("second", 1_000_000))
            return exp.paren(exp.Add(this=clock, expression=_func("pmod", _func("unix_micros", t.copy()), _num(1_000_000))))

        a, b = field(p, "a"), field(p, "b")
        clock = sub(of_day(a.copy()), of_day(b.copy()))
        day_borrow = exp.If(this=exp.LT(this=clock.copy(), expression=_num(0)), true=_num(1), false=_num(0))
        days = sub(sub(_func("day", a.copy()), _func("day", b.copy())), day_borrow.copy())
        month_borrow = exp.If(this=exp.LT(this=days.copy(), expression=_num(0)), true=_num(1), false=_num(0))
        month_days = _func("day", _func("last_day", _cast(b.copy(), "DATE")))
        fields = _func(
            "named_struct",
            _string("m"), exp.Mul(this=exp.paren(exp.Sub(this=exp.Add(
                this=exp.Mul(this=sub(_func("year", a.copy()), _func("year", b.copy())), expression=_num(12)),
                expression=sub(_func("month", a.copy()), _func("month", b.copy()))), expression=month_borrow.copy())),
                expression=field(p, "s")),
            _string("d"), exp.Mul(this=exp.paren(exp.Add(this=days.copy(), expression=exp.Mul(
                this=month_borrow.copy(), expression=month_days))), expression=field(p, "s")),
            _string("t"), exp.Mul(this=exp.paren(exp.Add(this=clock.copy(), expression=exp.Mul(
                this=day_borrow.copy(), expression=_num(86_400_000_000)))), expression=field(p, "s")))
        text = _interval_text_of(_cast(field(q, "m"), "BIGINT"), _cast(field(q, "d"), "BIGINT"),
                                 _cast(field(q, "t"), "BIGINT"))
        pair = _func("named_struct", _string("a"), exp.If(this=forward.copy(), true=t1.copy(), false=t2.copy()),
                     _string("b"), exp.If(this=forward.copy(), true=t2.copy(), false=t1.copy()),
                     _string("s"), exp.If(this=forward.copy(), true=_num(1), false=_num(-1)))
        counted = _func("transform", _func("array", pair), exp.Lambda(this=fields, expressions=[p.copy()]))
        written = _func("get", _func("transform", counted, exp.Lambda(this=text, expressions=[q.copy()])), _num(0))
        return _typed(exp.If(this=exp.or_(exp.Is(this=t1.copy(), expression=exp.Null()),
                                          exp.Is(this=t2.copy(), expression=exp.Null())), true=exp.Null(), false=written),
                      exp.DataType.build("INTERVAL"))

    @staticmethod
    def _gcd_lcm(name: str, a: exp.Expression, b: exp.Expression) -> exp.Expression:
        """gcd / lcm of integers, in their type (Euclid's steps, at most 92 for 64-bit values);
        22003 past the type's range, as PostgreSQL's (gcd(-2147483648, 0) overflows integer)."""
        types = {_dtype(a), _dtype(b)}
        if not types <= _INTEGER_TYPES | {_T.UNKNOWN, _T.NULL, None}:
            raise pgfunctions.undefined_function(name, [_pg_arg_type(a), _pg_arg_type(b)]) if not types & {_T.DECIMAL} else \
                SqlError("0A000", f"{name}() of numeric values is not supported", hint="Cast the arguments to bigint.")
        out = "BIGINT" if _T.BIGINT in types else "INT"
        x, y = _func("abs", _cast(exp.paren(a.copy()), "BIGINT")), _func("abs", _cast(exp.paren(b.copy()), "BIGINT"))
        acc, step = exp.to_identifier("__acc"), exp.to_identifier("__i")

        def field(key: str) -> exp.Expression:
            return exp.Dot(this=exp.Column(this=acc.copy()), expression=exp.to_identifier(key))

        euclid = exp.If(this=exp.EQ(this=field("b"), expression=exp.Literal.number(0)), true=exp.Column(this=acc.copy()),
                        false=_func("named_struct", _string("a"), field("b"), _string("b"),
                                    exp.Mod(this=field("a"), expression=field("b"))))
        gcd = _func("aggregate", _func("sequence", exp.Literal.number(1), exp.Literal.number(100)),
                    _func("named_struct", _string("a"), x, _string("b"), y),
                    exp.Lambda(this=euclid, expressions=[acc.copy(), step]),
                    exp.Lambda(this=field("a"), expressions=[acc.copy()]))
        if name == "gcd":
            return _cast(gcd, out)
        product = exp.Mul(this=exp.IntDiv(this=x.copy(), expression=exp.paren(gcd.copy())), expression=y.copy())
        return exp.If(this=exp.or_(exp.EQ(this=x.copy(), expression=exp.Literal.number(0)),
                                   exp.EQ(this=y.copy(), expression=exp.Literal.number(0))),
                      true=_cast(exp.Literal.number(0), out), false=_cast(product, out))

    @staticmethod
    def _pg_typeof(arg: exp.Expression) -> exp.Expression:
        """pg_typeof(x): the PostgreSQL type of x, known when the statement is translated (a
        regtype, printed as format_type prints it without a typmod). An untyped string is unknown."""
        inner_arg = arg.unnest() if isinstance(arg, exp.Paren) else arg
        if isinstance(arg, exp.Literal) and arg.is_string:
            name = "unknown"
        elif _row_value(inner_arg):
            name = "record"
        elif isinstance(inner_arg, exp.Array) and inner_arg.expressions and all(map(_row_value, inner_arg.expressions)):
            name = "record[]"
        elif _PG_TYPE_NAME in inner_arg.meta:  # operator results typed by engine.pgoperators
            name = inner_arg.meta[_PG_TYPE_NAME]
        else:
            ct = _Translator._output_type(arg)
            inner = arg
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if ct is None and (isinstance(inner, (exp.Column, exp.Cast, exp.Literal))
                               or _dtype(inner) not in _TEMPORAL_TYPES):
                # sqlglot's own typing of date/time arithmetic and functions is not PostgreSQL's
                # (date - date is integer, now() is timestamptz): those are refused, not guessed
                ct = _column_type_of(arg.type)
            if ct is None:
                raise SqlError("0A000", "pg_typeof() of this expression is not supported",
                               hint="Cast the argument to the type you expect, or ask the catalog (format_type).")
            name = ct.pg.sql_name
        # The argument stays evaluated, as PostgreSQL evaluates it: an aggregate or window inside
        # keeps the query aggregated (one row), and its errors still surface.
        out = exp.Case(ifs=[exp.If(this=exp.Is(this=exp.paren(arg.copy()), expression=exp.null()),
                                   true=_string(name))], default=_string(name))
        out.meta["pg_regtype"] = True
        return out

    def _current_setting(self, args: list[exp.Expression]) -> exp.Expression:
        """current_setting('name' [, missing_ok]): the session's value, fixed for the statement."""
        from catalog.pgcatalog import setting_value
        from tidegate.session import SessionInfo

        if not 1 <= len(args) <= 2 or not (isinstance(args[0], exp.Literal) and args[0].is_string) or (
                len(args) == 2 and not isinstance(args[1], exp.Boolean)):
            raise SqlError("0A000", "current_setting() in a query over tables needs the setting's name "
                           "(and missing_ok) as literals", hint="Write current_setting('name') with a string literal.")
        info = getattr(self.resolver, "info", None) or SessionInfo()
        value = setting_value(info, args[0].name, len(args) == 2 and args[1].this is True)
        return _string(value) if value is not None else exp.Cast(this=exp.null(), to=exp.DataType.build("STRING"))

    def _to_char_call(self, args: list[exp.Expression]) -> exp.Expression:
        if len(args) != 2 or not (isinstance(args[1], exp.Literal) and args[1].is_string):
            raise SqlError("0A000", "to_char with a non-constant format is not supported")
        fmt = to_char_format(args[1].name)
        if fmt is None:
            raise SqlError("0A000", f"to_char format \"{args[1].name}\" is not supported")
        if _dtype(args[0]) in _NTZ_TYPES:
            return self._to_char_wall(args[0], fmt)
        return _func("date_format", args[0], _string(fmt))

    _TIME_LETTERS = frozenset("HhkKmsSanAN")

    @staticmethod
    def _to_char_wall(value: exp.Expression, fmt: str) -> exp.Expression:
        """to_char of a timestamp without time zone: its wall time, whatever the session zone.
        Spark formats in the session zone, where a wall time in a DST gap does not exist
        ('2024-03-10 02:30' printed 03:30 in New York): date fields are formatted from the
        wall date's midnight, time fields from the wall clock on 1970-01-02 (no DST change)."""
        x = exp.paren(value.copy())
        date_src = _cast(_cast(x.copy(), "DATE"), "TIMESTAMP")
        clock = _func("make_timestamp_ntz", exp.Literal.number(1970), exp.Literal.number(1), exp.Literal.number(2),
                      _func("hour", x.copy()), _func("minute", x.copy()), exp.Extract(this=exp.var("SECOND"), expression=x.copy()))
        time_src = _cast(clock, "TIMESTAMP")
        groups: list[list[str]] = []  # [kind, pattern]: consecutive pieces formatted from one source
        i = 0
        while i < len(fmt):
            j = i + 1
            kind = None  # quoted or other literal text goes with its neighbours
            if fmt[i] == "'":  # quoted text, '' inside it a quote
                while j < len(fmt) and not (fmt[j] == "'" and fmt[j + 1:j + 2] != "'"):
                    j += 2 if fmt[j] == "'" else 1
                j += 1
            elif fmt[i].isalpha():
                while j < len(fmt) and fmt[j] == fmt[i]:
                    j += 1
                kind = "time" if fmt[i] in _Translator._TIME_LETTERS else "date"
            if groups and (kind is None or groups[-1][0] in (None, kind)):
                groups[-1][1] += fmt[i:j]
                groups[-1][0] = groups[-1][0] or kind
            else:
                groups.append([kind, fmt[i:j]])
            i = j
        parts = [_func("date_format", (time_src if kind == "time" else date_src).copy(), _string(pattern))
                 for kind, pattern in groups]
        out = parts[0] if len(parts) == 1 else _func("concat", *parts)
        return exp.If(this=exp.Is(this=x.copy(), expression=exp.Null()), true=exp.Null(), false=out)

    @staticmethod
    def _series(start: exp.Expression, end: exp.Expression, step: exp.Expression | None) -> exp.Expression:
        """sequence() with PostgreSQL's empty-when-reversed rule (Spark counts backwards)."""
        if isinstance(start, exp.Literal) and start.is_string:
            start = _cast(start, "TIMESTAMP")
        if isinstance(end, exp.Literal) and end.is_string:
            end = _cast(end, "TIMESTAMP")
        if step is None:
            cond: exp.Expression = exp.LTE(this=start.copy(), expression=end.copy())
            seq = _func("sequence", start, end)
        else:
            step_t = _dtype(step)
            is_interval = step_t == _T.INTERVAL or isinstance(step, exp.Interval) or "INTERVAL" in step.sql("spark").upper()
            if is_interval:
                negative = step.sql("spark").replace(" ", "").find("'-") >= 0
                cond = (exp.GTE if negative else exp.LTE)(this=start.copy(), expression=end.copy())
            else:
                cond = exp.Or(
                    this=exp.And(
                        this=exp.GT(this=step.copy(), expression=exp.Literal.number(0)),
                        expression=exp.LTE(this=start.copy(), expression=end.copy()),
                    ),
                    expression=exp.And(
                        this=exp.LT(this=step.copy(), expression=exp.Literal.number(0)),
                        expression=exp.GTE(this=start.copy(), expression=end.copy()),
                    ),
                )
            seq = _func("sequence", start, end, step)
        return exp.Case(ifs=[exp.If(this=cond, true=seq)])

    # -- aggregates

    def _json_agg(self, node: exp.Expression) -> exp.Expression:
        """json_agg / jsonb_agg (x [ORDER BY ...]): each value's JSON text (SQL NULL is null), kept
        in order by array_agg's machinery and joined as PostgreSQL prints the array (``[1, null]``);
        NULL over no rows."""
        jsonb = not isinstance(node, exp.JSONArrayAgg)
        arg = node.this if isinstance(node, exp.JSONArrayAgg) else node.expressions[0]
        order = arg if isinstance(arg, exp.Order) else None
        value = order.this if order is not None else arg
        if isinstance(value, exp.Distinct):
            raise SqlError("0A000", f"{'jsonb' if jsonb else 'json'}_agg(DISTINCT ...) is not supported",
                           hint="Aggregate the DISTINCT values in a subquery first.")
        element = _json_value(value, jsonb=jsonb)
        agg = exp.ArrayAgg(this=exp.Order(this=element, expressions=order.expressions) if order is not None else element)
        joined = _func("concat", _string("["), _func("array_join", self._array_agg(agg), _string(", ")), _string("]"))
        joined.meta[_WRAPS_COLLECT] = True  # FILTER / OVER go to the collecting aggregate inside
        return _typed(joined, exp.DataType.build("JSONB" if jsonb else "JSON"))

    def _array_agg(self, node: exp.ArrayAgg) -> exp.Expression:
        arg = node.this
        order = None
        if isinstance(arg, exp.Order):
            order = arg
            arg = arg.this
        # array_agg(DISTINCT x): each value once, NULL included, in ascending order unless ORDER BY
        # says otherwise (which PostgreSQL allows only on x itself), as PostgreSQL's sorted
        # DISTINCT gives them.
        distinct = isinstance(arg, exp.Distinct) and len(arg.expressions) == 1
        if distinct:
            arg = arg.expressions[0]
            if order is None:
                order = exp.Order(expressions=[exp.Ordered(this=arg.copy(), desc=False, nulls_first=False)])
        collect = "collect_set" if distinct else "collect_list"
        # collect_list drops NULLs; PostgreSQL keeps them, so collect structs and unwrap.
        if order is None:
            collected = _func(collect, exp.Struct(expressions=[exp.PropertyEQ(this=exp.to_identifier("v"), expression=arg)]))
            collected.meta["tg_collect"] = True  # FILTER (WHERE ...) applies here
            return _null_when_empty(exp.Transform(this=collected, expression=exp.Lambda(
                this=exp.Dot(this=exp.column("s"), expression=exp.to_identifier("v")), expressions=[exp.to_identifier("s")])))
        keys = []
        for i, ordered in enumerate(order.expressions):
            keys.append(exp.PropertyEQ(this=exp.to_identifier(f"k{i}"), expression=ordered.this))
        struct = exp.Struct(expressions=[*keys, exp.PropertyEQ(this=exp.to_identifier("v"), expression=arg)])
        collected = _func(collect, struct)
        collected.meta["tg_collect"] = True
        comparator_parts = []
        for i, ordered in enumerate(order.expressions):
            desc = bool(ordered.args.get("desc"))
            nulls_first = bool(ordered.args.get("nulls_first"))
            a = f"a.k{i}"
            b = f"b.k{i}"
            nf = "-1" if nulls_first else "1"
            nl = "1" if nulls_first else "-1"
            lt, gt = ("1", "-1") if desc else ("-1", "1")
            comparator_parts.append(
                f"CASE WHEN {a} IS NULL AND {b} IS NULL THEN 0 WHEN {a} IS NULL THEN {nf} WHEN {b} IS NULL THEN {nl} "
                f"WHEN {a} < {b} THEN {lt} WHEN {a} > {b} THEN {gt} ELSE 0 END"
            )
        comparator = comparator_parts[-1]
        for part in reversed(comparator_parts[:-1]):
            comparator = f"CASE WHEN ({part}) <> 0 THEN ({part}) ELSE ({comparator}) END"
        sorted_sql = f"array_sort(__collected__, (a, b) -> {comparator})"
        sorted_expr = sqlglot.parse_one(sorted_sql, read="spark")
        for col in sorted_expr.find_all(exp.Column):
            if col.name == "__collected__":
                col.replace(collected)
                break
        return _null_when_empty(exp.Transform(this=sorted_expr, expression=exp.Lambda(
            this=exp.Dot(this=exp.column("s"), expression=exp.to_identifier("v")), expressions=[exp.to_identifier("s")])))

    # -- predicates

    def _quantified(self, node: exp.Binary) -> exp.Expression:
        quant = node.expression
        inner = quant.this
        while isinstance(inner, exp.Paren) and not isinstance(inner.this, (exp.Select, exp.SetOperation)):
            inner = inner.this
        if isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Subquery):
            inner = inner.this
        if isinstance(inner, (exp.Select, exp.SetOperation)):
            if isinstance(node, exp.EQ) and isinstance(quant, exp.Any):
                return exp.In(this=node.this, query=exp.Subquery(this=inner))
            if isinstance(node, exp.NEQ) and isinstance(quant, exp.All):
                return exp.Not(this=exp.In(this=node.this, query=exp.Subquery(this=inner)))
            alias = self._name("__q")
            comparison: exp.Expression = _against(node, exp.column("__x", table=alias))
            if isinstance(quant, exp.All):
                # a row where the comparison is not true (false or unknown) refutes ALL
                comparison = exp.Coalesce(this=exp.Not(this=exp.Paren(this=comparison)), expressions=[exp.true()])
            probe = (
                exp.select(exp.Literal.number(1))
                .from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias), columns=[exp.to_identifier("__x")])))
                .where(comparison)
            )
            exists = exp.Exists(this=probe)
            return exists if isinstance(quant, exp.Any) else exp.Not(this=exists)
        left_type = node.this.type if isinstance(node.this.type, exp.DataType) else None
        if left_type is not None and left_type.this in (_T.UNKNOWN, _T.NULL, _T.USERDEFINED):
            left_type = None
        if isinstance(inner, exp.Literal) and inner.is_string:
            # an untyped array literal ('{r,p}') or a parameter sent as text: its elements take
            # the other operand's type, as PostgreSQL resolves the unknown literal to T[]
            items = []
            for v in pgvalues.parse_flat_array(inner.name):
                if v is None:
                    items.append(exp.Null())
                elif left_type is not None and left_type.this not in _STRING_TYPES:
                    items.append(_cast(_string(v), left_type.sql("spark")))
                else:
                    items.append(_string(v))
            inner = exp.Array(expressions=items)
        elif isinstance(inner, exp.Null):
            # x = ANY(NULL) is NULL; Spark needs the array's type
            elem = left_type.sql("spark") if left_type is not None else "STRING"
            inner = _cast(exp.Null(), f"ARRAY<{elem}>")
        var = exp.to_identifier("__e")
        lam = exp.Lambda(this=_against(node, exp.column("__e")), expressions=[var])
        return _func("exists" if isinstance(quant, exp.Any) else "forall", inner, lam)

    @staticmethod
    def _check_grouping(select: exp.Select) -> None:
        """Aggregates without GROUP BY next to a bare column: PostgreSQL's 42803 wording."""
        if select.args.get("group") is not None:
            return
        has_agg = False
        bare: exp.Column | None = None

        def visit(node: exp.Expression, in_agg: bool) -> None:
            nonlocal has_agg, bare
            if isinstance(node, (exp.Subquery, exp.Select, exp.Window, exp.Exists, exp.Lambda)):
                return  # (a lambda's columns are its own parameters: the translator's array helpers)
            if isinstance(node, exp.AggFunc) or (isinstance(node, exp.Anonymous)
                                                  and node.name.lower() in _AGGREGATE_CALLS):
                has_agg = True
                in_agg = True
            if isinstance(node, (exp.Filter, exp.WithinGroup)):
                in_agg = True
            if isinstance(node, exp.Column) and not in_agg and bare is None and not isinstance(node.this, exp.Star):
                bare = node
            for child in node.iter_expressions():
                visit(child, in_agg)

        for proj in select.expressions:
            visit(proj, False)
        if has_agg and bare is not None:
            name = f"{bare.table}.{bare.name}" if bare.table else bare.name
            raise SqlError("42803", f'column "{name}" must appear in the GROUP BY clause or be used in an aggregate function')

    def _distinct_on(self, select: exp.Select) -> exp.Expression:
        distinct = select.args["distinct"]
        on = distinct.args["on"]
        keys = list(on.expressions) if isinstance(on, exp.Tuple) else [on]
        order = select.args.get("order")
        order_exprs = list(order.expressions) if order is not None else []
        aliases = {p.alias_or_name: p for p in select.expressions}

        def resolve(e: exp.Expression) -> exp.Expression:
            if isinstance(e, exp.Literal) and not e.is_string:
                idx = int(e.name) - 1
                proj = select.expressions[idx]
                return proj.this.copy() if isinstance(proj, exp.Alias) else proj.copy()
            if isinstance(e, exp.Column) and not e.table and e.name in aliases:
                proj = aliases[e.name]
                return proj.this.copy() if isinstance(proj, exp.Alias) else proj.copy()
            return e.copy()

        inner = select.copy()
        inner.set("distinct", None)
        inner.set("order", None)
        inner.set("limit", None)
        inner.set("offset", None)
        window = exp.Window(
            this=exp.RowNumber(),
            partition_by=[resolve(k) for k in keys],
            order=exp.Order(expressions=[
                exp.Ordered(this=resolve(o.this), desc=o.args.get("desc"), nulls_first=o.args.get("nulls_first"))
                for o in order_exprs
            ]) if order_exprs else None,
        )
        hidden = []
        for i, o in enumerate(order_exprs):
            hidden.append(exp.alias_(resolve(o.this), f"__o{i}"))
        inner.set("expressions", [*inner.expressions, *hidden, exp.alias_(window, "__rn")])
        outer_cols = [exp.column(p.alias_or_name) for p in select.expressions]
        outer = exp.select(*outer_cols).from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("__d"))))
        outer = outer.where(exp.EQ(this=exp.column("__rn"), expression=exp.Literal.number(1)))
        if order_exprs:
            outer.set("order", exp.Order(expressions=[
                exp.Ordered(this=exp.column(f"__o{i}"), desc=o.args.get("desc"), nulls_first=o.args.get("nulls_first"))
                for i, o in enumerate(order_exprs)
            ]))
        for key in ("limit", "offset"):
            if select.args.get(key) is not None:
                outer.set(key, select.args[key])
        for i, proj in enumerate(select.expressions):
            outer.expressions[i].meta.update(proj.meta)
            if isinstance(proj, exp.Alias):
                outer.expressions[i].meta.setdefault("pg_output", proj.this.meta.get("pg_output"))
        return outer

    # ---------------------------------------------------------------- generators back in

    def restore_generators(self, tree: exp.Expression) -> None:
        for table in list(tree.find_all(exp.Table)):
            name = table.name
            if name not in self.generators:
                continue
            generator = self.generators[name]
            alias = table.args.get("alias")
            if isinstance(generator, exp.Unnest):
                arrays = [self.rewrite(a.copy()) for a in generator.expressions]
                if len(arrays) != 1:
                    raise SqlError("0A000", "unnest() with several arrays is not supported")
                call = _func("explode", arrays[0])
            else:
                start = self.rewrite(generator.args["start"].copy())
                end = self.rewrite(generator.args["end"].copy())
                step = generator.args.get("step")
                step = self.rewrite(step.copy()) if step is not None else None
                if step is not None and isinstance(step, exp.Literal) and not step.is_string and float(step.name) == 0:
                    raise SqlError("22023", "step size cannot equal zero")
                spark_alias = exp.TableAlias(this=alias.this.copy(), columns=[c.copy() for c in alias.columns])
                elem_type = next(iter(self.schema[name].values()))
                ranged = _integer_range(start, end, step, elem_type, alias.columns[0].name, spark_alias)
                if ranged is not None:
                    table.replace(ranged)
                    continue
                call = _func("explode", self._series(start, end, step))
            # Spark's table-valued generator takes the alias as name(column).
            spark_alias = exp.TableAlias(this=alias.this.copy(), columns=[c.copy() for c in alias.columns])
            replacement = exp.Lateral(this=call, alias=spark_alias) if isinstance(table.parent, exp.Join) else exp.Table(this=call, alias=spark_alias)
            table.replace(replacement)


_RANGE_TYPES = {"INT": "INT", "BIGINT": "BIGINT"}
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _integer_constant(node: exp.Expression | None) -> int | None:
    """The value of an integer literal, with its minus signs; None for anything else."""
    if node is None:
        return None
    negated = negated_literal(node)
    if negated is not None:
        return negated
    if isinstance(node, exp.Literal) and not node.is_string:
        text = node.name.lstrip("-")
        if text.isascii() and text.isdigit():
            return int(node.name)
    return None


def _integer_range(start: exp.Expression, end: exp.Expression, step: exp.Expression | None, elem_type: str,
                   column: str, alias: exp.TableAlias) -> exp.Subquery | None:
    """``generate_series`` of integer constants as Spark's ``range``: rows are produced as they are
    consumed, in partitions, with no limit on their number. EXPLODE(SEQUENCE(...)) builds the whole
    array in one row, is capped at 2^31 - 16 elements, and its rows are buffered by whole-stage code
    generation (a 20M-row series filled the driver's heap and did not stop on cancel).
    None when the bounds are not integer constants of int or bigint (timestamps, numerics, columns of
    a lateral call): those keep EXPLODE(SEQUENCE(...))."""
    spark_type = _RANGE_TYPES.get(elem_type.upper())
    values = [_integer_constant(start), _integer_constant(end), 1 if step is None else _integer_constant(step)]
    if spark_type is None or any(v is None or not _LONG_MIN <= v <= _LONG_MAX for v in values):
        return None
    first, last, by = values
    stop = last + (1 if by > 0 else -1)  # PostgreSQL includes its end; range stops before it
    if not _LONG_MIN <= stop <= _LONG_MAX:
        return None
    series = exp.Table(this=_func("range", *[exp.Literal.number(v) for v in (first, stop, by)]))
    body = exp.select(exp.alias_(_cast(exp.column("id"), spark_type), column, quoted=True)).from_(series)
    return exp.Subquery(this=body, alias=alias)


def _set_output_aliases(tree: exp.Expression, names: list[str]) -> None:
    """Alias the outermost projections to unique Spark names; keep ORDER BY references valid."""
    select = _Translator.output_select(tree)
    used: dict[str, int] = {}
    renames: dict[str, str] = {}
    for i, proj in enumerate(list(select.expressions)):
        value = proj.this if isinstance(proj, exp.Alias) else proj
        iv = value.meta.get("pg_interval")
        if iv is not None and iv.months:
            # Spark cannot hand year-month/calendar intervals to Arrow: send PostgreSQL's text,
            # which the executor decodes for interval-typed columns.
            text = _string(format_interval(iv.months, iv.days, iv.micros))
            if isinstance(proj, exp.Alias):
                proj.set("this", text)
            else:
                proj = exp.alias_(text, names[i])
                select.expressions[i].replace(proj)
        base = names[i]
        key = base.lower()
        if key in used:
            used[key] += 1
            spark_name = f"{base}_{used[key]}"
            while spark_name.lower() in used:
                used[key] += 1
                spark_name = f"{base}_{used[key]}"
        else:
            spark_name = base
        used[spark_name.lower()] = used.get(spark_name.lower(), 1)
        old = proj.alias_or_name
        if isinstance(proj, exp.Alias):
            if old != spark_name:
                renames[old] = spark_name
            proj.set("alias", exp.to_identifier(spark_name, quoted=True))
        else:
            select.expressions[i].replace(exp.alias_(proj.copy(), spark_name, quoted=True))
    if not renames:
        return
    for holder in {id(select): select, id(tree): tree}.values():
        order = holder.args.get("order")
        if order is None:
            continue
        for col in order.find_all(exp.Column):
            if not col.table and col.name in renames:
                col.set("this", exp.to_identifier(renames[col.name], quoted=True))


# PostgreSQL's options that choose how much of its own executor's detail EXPLAIN prints; the plan
# shown is Spark's, which has none of it.
_EXPLAIN_DETAIL_OPTIONS = frozenset({"costs", "buffers", "timing", "summary", "settings", "wal", "generic_plan"})


def explain_options(text: str) -> tuple[bool, bool, str]:
    """(analyze, verbose, the statement) of the text after EXPLAIN: ``(ANALYZE [bool], VERBOSE
    [bool], ...)`` or the old ``ANALYZE`` / ``VERBOSE`` words, read from the one lexer's tokens."""
    toks = sqllex.scan(text)
    analyze = verbose = False
    i = 0
    if toks and toks[0].text == "(":
        close = sqllex.closing(toks, 0)
        if close is None:
            raise SqlError("42601", "syntax error at end of input")
        options: list[list[sqllex.Token]] = [[]]
        for t in toks[1:close]:
            if t.text == ",":
                options.append([])
            else:
                options[-1].append(t)
        for option in options:
            if not option:
                raise SqlError("42601", "syntax error in EXPLAIN options")
            word = option[0].lower
            on = len(option) < 2 or option[1].lower not in ("false", "off", "0")
            if word in ("analyze", "analyse"):
                analyze = on
            elif word == "verbose":
                verbose = on
            elif word == "format":
                if len(option) < 2 or option[1].lower != "text":
                    raise SqlError("0A000", "EXPLAIN output formats other than TEXT are not supported",
                                   hint="Leave out the FORMAT option: the plan is Spark's, as text.")
            elif word not in _EXPLAIN_DETAIL_OPTIONS:
                raise SqlError("42601", f'unrecognized EXPLAIN option "{word}"')
        i = close + 1
    while i < len(toks) and toks[i].kind == "word" and toks[i].lower in ("analyze", "analyse", "verbose"):
        if toks[i].lower.startswith("analy"):
            analyze = True
        else:
            verbose = True
        i += 1
    return analyze, verbose, text[toks[i].start:] if i < len(toks) else ""


def _explain(expression: exp.Command, resolver: TableResolver, params: Sequence[Any]) -> TranslatedQuery:
    text = expression.expression.name if isinstance(expression.expression, exp.Expression) else str(expression.expression)
    analyze, verbose, rest = explain_options(text)
    statements = parse_sql(rest)
    if len(statements) != 1:
        raise SqlError("42601", "EXPLAIN needs exactly one statement")
    inner = translate_query(statements[0], resolver, params)
    mode = "EXTENDED" if verbose else ("COST" if analyze else "FORMATTED")
    return TranslatedQuery(f"EXPLAIN {mode} {inner.spark_sql}", ["QUERY PLAN"], [ColumnType(TEXT)], inner.tables)


def _analysed(expression: exp.Expression, resolver: TableResolver,
              params: Sequence[Any]) -> tuple[_Translator, exp.Expression]:
    """A query with its parameters bound, relations prepared, names qualified and types
    annotated, its functions and operators checked: ready for the semantic rewrites."""
    use_session_zone(resolver)
    translator = _Translator(resolver, params)
    tree = translator.bind_params(expression.copy())
    tree = translator.prepare(tree)
    translator.mark_names(tree)
    translator.name_inner_columns(tree)
    tree = translator.qualify(tree)
    translator.check_functions(tree)
    translator.check_operators(tree)
    return translator, tree


# Spark's SQL parser takes seconds for an expression nested 400 levels deep and minutes past 500
# (measured: a 350-term sum 1.7 s, 400 terms 6.4 s, 600 terms over 8 minutes, and 1,000 terms
# FAILED_TO_PARSE_TOO_COMPLEX after 3 minutes, holding a core and the statement's thread).
SPARK_MAX_DEPTH = 400


def spark_text(tree: exp.Expression) -> str:
    """The Spark SQL of a translated tree; 54001 for one Spark's parser could not read in time."""
    if dialect.depth(tree) > SPARK_MAX_DEPTH:
        raise SqlError("54001", "stack depth limit exceeded",
                       hint=f"Spark reads expressions nested up to {SPARK_MAX_DEPTH} levels deep: write this one "
                            "with fewer levels (for example a sum of many terms as sum() over rows).")
    for literal in tree.find_all(exp.Literal):
        if literal.meta.get(NUMERIC_CONSTANT) and literal.name.isdigit():
            literal.set("this", literal.name + "BD")  # Spark's decimal literal (digits alone are an integer)
    return tree.sql(dialect="spark", identify=True, comments=False)


def translate_query(
    expression: exp.Expression, resolver: TableResolver, params: Sequence[Any] = (), exact_numeric: bool = False
) -> TranslatedQuery:
    """Translate one PostgreSQL query (SELECT / set operation / VALUES / EXPLAIN) for Spark.

    ``exact_numeric``: the result goes to a client, so numeric quotients, averages, roots,
    logarithms and powers in the select list also return their exact operands (hidden trailing
    columns, :attr:`TranslatedQuery.operands`) for the codec to give PostgreSQL's value and scale."""
    if isinstance(expression, exp.Command):
        if expression.name.upper() == "EXPLAIN":
            return _explain(expression, resolver, params)
        raise SqlError("0A000", f"{expression.name.upper()} is not supported as a query")
    if isinstance(expression, exp.Describe):
        raise SqlError("0A000", "DESCRIBE is not supported")
    if not isinstance(expression, (exp.Query, exp.Values)):
        raise SqlError("0A000", f"{expression.key.upper()} statement is not supported as a query")
    translator, tree = _analysed(expression, resolver, params)
    names, types = translator.output_columns(translator.output_select(tree))
    names = [translator.pg_label(name) for name in names]
    operands: dict[int, tuple[int, ...]] = {}
    if exact_numeric and isinstance(tree, exp.Union):
        tree, operands = _union_scales(tree, types)
    elif exact_numeric:
        operands = _exact_operands(tree, types)
    hidden = [f"__tg_operand_{k}" for k in range(sum(len(slots) for slots in operands.values()))]
    tree = translator.rewrite(tree)
    translator.restore_generators(tree)
    _evaluable_values(tree)
    _set_output_aliases(tree, names + hidden)
    spark_sql = spark_text(tree)
    pgfunctions.check_spark_sql(tree, spark_sql)
    return TranslatedQuery(spark_sql, names, types, translator.tables, operands,
                           functools.partial(_integer_operations, tree))


_INTEGER_TYPE_WORDS = {_T.TINYINT: "smallint", _T.SMALLINT: "smallint", _T.INT: "integer", _T.BIGINT: "bigint"}


def _integer_operations(tree: exp.Expression) -> dict[str, str]:
    """The Spark SQL text of each integer +, -, *, unary minus and abs in ``tree`` -> PostgreSQL's
    word for its type ("bigint"): an overflow's error gives the text of the operation that
    overflowed, not its type (TranslatedQuery.integer_ops)."""
    ops: dict[str, str] = {}
    for node in tree.find_all(exp.Add, exp.Sub, exp.Mul, exp.Neg, exp.Abs):
        word = _INTEGER_TYPE_WORDS.get(_dtype(node))
        if word is not None:
            ops.setdefault(node.sql(dialect="spark", identify=True, comments=False), word)
    return ops


def _evaluable_values(tree: exp.Expression) -> None:
    """A VALUES list whose rows hold one of the translator's checks (``raise_error``: a date out of
    range, a square root of a negative number ...) becomes ``SELECT ... UNION ALL SELECT ...``:
    Spark evaluates an inline table while analysing it and refuses what may raise
    (INVALID_INLINE_TABLE), so the statement failed with that refusal instead of the check's
    answer or PostgreSQL's error."""
    for values in list(tree.find_all(exp.Values)):
        if not any(isinstance(f, exp.Anonymous) and f.name.lower() == "raise_error"
                   for f in values.find_all(exp.Anonymous)):
            continue
        alias = values.args.get("alias")
        rows = [row.expressions if isinstance(row, exp.Tuple) else [row] for row in values.expressions]
        union: exp.Expression | None = None
        for row in rows:
            select = exp.Select(expressions=[e.copy() for e in row])
            union = select if union is None else exp.Union(this=union, expression=select, distinct=False)
        if union is None:
            continue
        values.replace(exp.Subquery(this=union, alias=alias.copy() if alias is not None else None))




def _numeric_power(node: exp.Pow) -> bool:
    """power(numeric, numeric) (an integer operand included); with a double precision operand
    PostgreSQL computes in double precision (power(1.5, 'Infinity'::float8) is Infinity)."""
    types = {_dtype(node.this), _dtype(node.expression)}
    return _T.DECIMAL in types and not types & _FLOAT_TYPES


def _exact_plan(node: exp.Expression) -> tuple[str, list[exp.Expression]] | None:
    """(pgvalues.numeric_exact op, operand expressions) of a numeric select-list value whose
    display scale PostgreSQL picks per value; None for anything else."""
    while isinstance(node, exp.Paren):
        node = node.this
    numeric = {_dtype(a) for a in node.iter_expressions()} if isinstance(node, (exp.Div, exp.Log, exp.Pow)) else set()
    if isinstance(node, exp.Div) and _dtype(node) == _T.DECIMAL and numeric <= _NUMERIC_OPERAND_TYPES:
        return "div", [node.this, node.expression]
    if isinstance(node, (exp.Sqrt, exp.Ln)) and _dtype(node.this) == _T.DECIMAL:
        return ("sqrt" if isinstance(node, exp.Sqrt) else "ln"), [node.this]
    if isinstance(node, (exp.Log, exp.Pow)) and _T.DECIMAL in numeric and numeric <= _NUMERIC_OPERAND_TYPES:
        if isinstance(node, exp.Log) and node.expression is None:
            return "log10", [node.this]
        return ("log" if isinstance(node, exp.Log) else "power"), [node.this, node.expression]
    base = node.this if isinstance(node, (exp.Window, exp.Filter)) else node
    if isinstance(base, exp.Filter):
        base = base.this
    if isinstance(base, exp.Avg) and _dtype(base.this) in _NUMERIC_OPERAND_TYPES:
        # avg is sum / count of the same values (PostgreSQL's int8_avg / numeric_avg), under the
        # same DISTINCT, FILTER and window
        parts = []
        for agg in (exp.Sum, exp.Count):
            whole = node.copy()
            avg = whole if isinstance(whole, exp.Avg) else whole.find(exp.Avg)
            value = _aggregate_value(avg.this)
            replacement = agg(this=avg.this)
            replacement.type = value.type if agg is exp.Sum and _dtype(value) == _T.DECIMAL \
                else exp.DataType.build("BIGINT")
            if avg is whole:
                whole = replacement
            else:
                avg.replace(replacement)
                whole.type = replacement.type
            parts.append(whole)
        return "div", parts
    return None


def _scale_expr(node: exp.Expression) -> exp.Expression | None:
    """An expression for the display scale of each value of a numeric expression whose scale is
    data dependent: coalesce / greatest / least return one argument's value with its scale (the
    first argument equal to the result, as PostgreSQL keeps the first of equal values)."""
    while isinstance(node, exp.Paren):
        node = node.this
    known = _pg_display_scale(node)
    if known is not None:
        return exp.Literal.number(known)
    if not isinstance(node, (exp.Coalesce, exp.Greatest, exp.Least)):
        return None
    args = [a for a in [node.this, *node.expressions] if not isinstance(a, exp.Null)]
    scales = [_pg_display_scale(a) for a in args]
    if any(sc is None for sc in scales):
        return None
    ifs = []
    for arg, scale in zip(args, scales):
        test = exp.Not(this=exp.Is(this=exp.paren(arg.copy()), expression=exp.Null())) if isinstance(node, exp.Coalesce) \
            else exp.EQ(this=exp.paren(arg.copy()), expression=exp.paren(node.copy()))
        ifs.append(exp.If(this=test, true=exp.Literal.number(scale)))
    return exp.Case(ifs=ifs, default=exp.Literal.number(0))


def _aggregated(select: exp.Select) -> bool:
    if select.args.get("group") or select.args.get("having"):
        return True
    for proj in select.expressions:
        for agg in proj.find_all(exp.AggFunc):
            if agg.find_ancestor(exp.Window, exp.Subquery, exp.Select) in (None, select):
                return True
    return False


def _valid_after_grouping(operand: exp.Expression, select: exp.Select) -> bool:
    """An operand may be selected beside the query's aggregates: it is a GROUP BY key, or each
    column it reads is inside an aggregate within it."""
    group = select.args.get("group")
    if group and operand.sql() in {k.sql() for k in group.expressions}:
        return True
    for col in operand.find_all(exp.Column):
        node = col.parent
        while node is not None and not isinstance(node, exp.AggFunc) and node is not operand:
            node = node.parent
        if not isinstance(node, exp.AggFunc):
            return False
    return True


def _union_scales(tree: exp.Union, types: list[ColumnType | None]
                  ) -> tuple[exp.Expression, dict[int, tuple[int, ...]]]:
    """A UNION whose branches give a numeric column different display scales: each row keeps the
    scale of the branch it came from, as PostgreSQL's values keep theirs. UNION ALL carries a
    literal scale per branch; UNION (distinct) groups the rows of a UNION ALL, a row found in
    several branches showing the first branch's scale (PostgreSQL keeps the first row it sees)."""
    branches: list[exp.Expression] = []
    pending: list[exp.Expression] = [tree]
    kinds = set()
    while pending:
        node = pending.pop()
        if isinstance(node, exp.Union):
            kinds.add(bool(node.args.get("distinct")))
            if node is not tree and any(node.args.get(k) for k in ("order", "limit", "offset")):
                return tree, {}
            pending += [node.expression, node.this]
        else:
            branches.append(node)
    if len(kinds) != 1 or not all(isinstance(b, exp.Select) and len(b.expressions) == len(types) for b in branches):
        return tree, {}
    mixed: dict[int, list[int]] = {}
    for i, ct in enumerate(types):
        if ct is None or ct.pg != NUMERIC:
            continue
        scales = [_pg_display_scale(b.expressions[i].this if isinstance(b.expressions[i], exp.Alias)
                                    else b.expressions[i]) for b in branches]
        if None not in scales and len(set(scales)) > 1:
            mixed[i] = scales  # type: ignore[assignment]
    if not mixed:
        return tree, {}
    for i in mixed:
        types[i] = ColumnType(NUMERIC, exact_op="scaled")
    if kinds == {False}:
        out: dict[int, tuple[int, ...]] = {}
        for i, scales in mixed.items():
            for branch, scale in zip(branches, scales):
                branch.append("expressions", exp.Literal.number(scale))
            out[i] = (len(branches[0].expressions) - 1,)
        return tree, out
    order = tree.args.get("order")
    if order is not None and not all(
            isinstance(o.this, exp.Literal) or (isinstance(o.this, exp.Column) and not o.this.table)
            for o in order.expressions):
        return tree, {}
    n = len(types)
    for k, branch in enumerate(branches):
        values = [p.this if isinstance(p, exp.Alias) else p for p in branch.expressions]
        branch.set("expressions", [exp.alias_(v, f"__tg_c{i}", quoted=True) for i, v in enumerate(values)]
                   + [exp.alias_(exp.Literal.number(scales[k]), f"__tg_s{i}", quoted=True) for i, scales in mixed.items()]
                   + [exp.alias_(exp.Literal.number(k), "__tg_b", quoted=True)])
    union: exp.Expression = branches[0]
    for branch in branches[1:]:
        union = exp.Union(this=union, expression=branch, distinct=False)
    columns = [exp.column(f"__tg_c{i}", table="__tg_u", quoted=True) for i in range(n)]
    outer = exp.Select(expressions=[c.copy() for c in columns])  # named for the client later
    outer = outer.from_(exp.Subquery(this=union, alias=exp.TableAlias(this=exp.to_identifier("__tg_u"))))
    outer.set("group", exp.Group(expressions=[c.copy() for c in columns]))
    out = {}
    for k, i in enumerate(mixed):
        outer.append("expressions", _func("min_by", exp.column(f"__tg_s{i}", table="__tg_u", quoted=True),
                                          exp.column("__tg_b", table="__tg_u", quoted=True)))
        out[i] = (n + k,)
    for key in ("order", "limit", "offset"):
        if tree.args.get(key) is not None:
            outer.set(key, tree.args[key])
    return outer, out


def _exact_operands(tree: exp.Expression, types: list[ColumnType | None]) -> dict[int, tuple[int, ...]]:
    """Append the exact operands of each per-value-scale numeric output column to the select list
    (trailing hidden columns) and mark the column's type; {column: operand columns}."""
    if not isinstance(tree, exp.Select) or tree.args.get("distinct") or len(tree.expressions) != len(types):
        return {}
    aggregated = _aggregated(tree)
    out: dict[int, tuple[int, ...]] = {}
    for i, proj in enumerate(list(tree.expressions)):
        value = proj.this if isinstance(proj, exp.Alias) else proj
        plan = _exact_plan(value)
        if plan is None and types[i] is not None and types[i].pg == NUMERIC and types[i].scale is None \
                and types[i].div_min_scale is None:
            scale = _scale_expr(value)
            plan = ("scaled", [scale]) if isinstance(scale, exp.Case) else None
        if plan is None:
            continue
        op, operands = plan
        if any(_volatile(e) for e in operands):
            continue
        if aggregated and not (isinstance(value, (exp.Avg, exp.Window, exp.Filter))
                               or all(_valid_after_grouping(e, tree) for e in operands)):
            continue
        # an operand's display scale; -1: each value's own (an unconstrained numeric column)
        known = [_pg_display_scale(e) if _dtype(e) == _T.DECIMAL else 0 for e in operands]
        scales = [-1 if scale is None else scale for scale in known]
        slots = []
        for e in operands:
            copy = e.copy()
            copy.type = e.type
            tree.append("expressions", copy)
            slots.append(len(tree.expressions) - 1)
        out[i] = tuple(slots)
        types[i] = ColumnType(NUMERIC, div_min_scale=max(max(scales), 0), exact_op=op,
                              op_scales=(scales[0], scales[1] if len(scales) > 1 else 0))
    return out


def translate_expression(
    expression: exp.Expression,
    columns: Sequence[tuple[str, ColumnType]] = (),
    params: Sequence[Any] = (),
    resolver: TableResolver | None = None,
    view_name: str = "__row",
) -> str:
    """Translate a scalar PostgreSQL expression over the columns of one relation.

    The result is Spark SQL usable in ``selectExpr``/``expr`` over a DataFrame with those
    columns (UPDATE SET values, WHERE conditions, DEFAULT expressions). Subqueries in it are
    resolved through ``resolver``.
    """
    return translate_row_expressions([expression], columns, params, resolver, view_name)[0][0]


def translate_row_expressions(
    expressions: Sequence[exp.Expression],
    columns: Sequence[tuple[str, ColumnType]],
    params: Sequence[Any] = (),
    resolver: TableResolver | None = None,
    view_name: str = "__row",
) -> list[tuple[str, ColumnType | None]]:
    """:func:`translate_expression` of several expressions over one row at once, each with its
    PostgreSQL type (None where the translator cannot tell). Columns may be qualified by
    ``view_name`` (an UPDATE's alias); the Spark SQL names them unqualified."""
    use_session_zone(resolver)
    translator = _Translator(resolver, params)
    translator.schema[view_name] = {_schema_key(name): _sqlglot_type(ct) for name, ct in columns}
    select = exp.Select(expressions=[exp.alias_(e.copy(), f"__value_{k}") for k, e in enumerate(expressions)]).from_(
        exp.Table(this=exp.to_identifier(view_name))
    )
    tree = translator.bind_params(select)
    for sub in list(tree.find_all(exp.Table)):
        if sub.name == view_name or not isinstance(sub.this, exp.Identifier):
            continue
        translator._resolve_table(sub, sub.db or None, sub.name, 0)
    tree = translator.qualify(tree)
    translator.check_functions(tree)
    translator.check_operators(tree)
    _, types = translator.output_columns(translator.output_select(tree))
    tree = translator.rewrite(tree)
    translator.restore_generators(tree)
    out: list[tuple[str, ColumnType | None]] = []
    for k, value in enumerate(translator.output_select(tree).expressions):
        value = value.this if isinstance(value, exp.Alias) else value
        for col in value.find_all(exp.Column):
            if col.table == view_name:
                col.set("table", None)
        spark_sql = spark_text(value)
        pgfunctions.check_spark_sql(value, spark_sql)
        out.append((spark_sql, types[k] if k < len(types) else None))
    return out


def translate_merge_parts(
    select: exp.Select, resolver: TableResolver, params: Sequence[Any] = ()
) -> tuple[str, list[tuple[str, ColumnType | None]]]:
    """The parts of a MERGE run by Delta's own command on Spark. ``select`` is ``SELECT <expressions>
    FROM <target> AS <alias> CROSS JOIN <source>``: returns the Spark SQL of the source relation
    (with its alias) and of each expression with its PostgreSQL type (None where unknown). The
    expressions keep their qualifiers (the target's alias, the source's), which the MERGE
    statement names the same way."""
    translator, tree = _analysed(select, resolver, params)
    _, types = translator.output_columns(translator.output_select(tree))
    tree = translator.rewrite(tree)
    translator.restore_generators(tree)
    _evaluable_values(tree)
    joins = tree.args.get("joins") or []
    if len(joins) != 1:
        raise SqlError("XX000", "MERGE source not found in its translation")
    source = joins[0].this
    source_sql = spark_text(source)
    pgfunctions.check_spark_sql(source, source_sql)
    out: list[tuple[str, ColumnType | None]] = []
    for k, value in enumerate(translator.output_select(tree).expressions):
        value = value.this if isinstance(value, exp.Alias) else value
        spark_sql = spark_text(value)
        pgfunctions.check_spark_sql(value, spark_sql)
        out.append((spark_sql, types[k] if k < len(types) else None))
    return source_sql, out


def check_functions(tree: exp.Expression) -> None:
    """42883 if ``tree`` (parsed PostgreSQL, not translated) calls a function clients may not
    call (engine.pgfunctions). For statements checked before they can be translated: column
    DEFAULT expressions at CREATE TABLE, flow queries at CREATE FLOW."""
    pgfunctions.check_calls(tree, _literal_arg_type)
