"""Relation-free queries computed in the gateway (issue 23): ``SELECT $1::bigint + 1``.

A ``SELECT`` with no ``FROM`` whose every output is built from

* integer literals (an ``int4`` when it fits, else ``int8``; a minus sign before one is part of
  the constant, as in PostgreSQL's grammar), string literals, ``TRUE`` / ``FALSE``, ``NULL``;
* parameters cast to a type (``$1::bigint``, ``CAST($1 AS text)``);
* casts to ``smallint`` / ``integer`` / ``bigint``, ``boolean``, ``text`` / ``varchar`` (no length)
  between those types, as PostgreSQL allows them (a string read by the type's input rules);
* the integer operators ``+ - * / %`` and unary minus (result of the wider operand type;
  ``pgvalues.int_arith``), comparisons of integers, booleans (any) and text (``=`` / ``<>``:
  byte equality, which no collation changes), ``AND`` / ``OR`` / ``NOT``, ``IS [NOT] NULL``,
  ``||`` of text with text, integers or booleans

is analysed once per text (types, names, parameter types) and evaluated here for every Execute,
with PostgreSQL's value rules (``tidegate.pgvalues``). Operands are evaluated left to right, and
``AND`` / ``OR`` stop at the first false / true operand as PostgreSQL's constant folding does
(``false AND 1/0 = 1`` is false, ``1/0 = 1 AND false`` is 22012). Anything
else, and any parameter value whose Python type is not the one its cast reads, goes to Spark
(``engine.translate``), which gives PostgreSQL's answer or error. ``SET tidegate.interactive =
off`` sends these queries to Spark as well.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from sqlglot import exp

from engine.resolver import param_index
from engine.translate import negated_literal, pg_output_name
from tidegate import pgvalues
from tidegate.pgtypes import BOOL, INT2, INT4, INT8, TEXT, VARCHAR, ColumnType
from tidegate.results import ResultField, RowStream

_INTS = ("int2", "int4", "int8")
_WIDTH = {"int2": 0, "int4": 1, "int8": 2}
_CASTS = {exp.DataType.Type.SMALLINT: "int2", exp.DataType.Type.INT: "int4", exp.DataType.Type.BIGINT: "int8",
          exp.DataType.Type.BOOLEAN: "bool", exp.DataType.Type.TEXT: "text", exp.DataType.Type.VARCHAR: "varchar"}
_COLUMN_TYPES = {name: ColumnType(t) for name, t in (("int2", INT2), ("int4", INT4), ("int8", INT8), ("bool", BOOL),
                                                     ("text", TEXT), ("varchar", VARCHAR),
                                                     ("unknown", TEXT))}  # an unknown output is text, as in PostgreSQL
_ARROW = {"int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "bool": pa.bool_(), "text": pa.string(),
          "varchar": pa.string(), "unknown": pa.string()}
_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_COMPARE = {exp.EQ: lambda a, b: a == b, exp.NEQ: lambda a, b: a != b, exp.LT: lambda a, b: a < b,
            exp.LTE: lambda a, b: a <= b, exp.GT: lambda a, b: a > b, exp.GTE: lambda a, b: a >= b}
_ALLOWED_ARGS = {"expressions"}

Fn = Callable[[list[Any]], Any]


class _NotHere(Exception):
    """Spark computes it."""


@dataclass(frozen=True)
class Constant:
    """A relation-free query this module evaluates: one function of the parameters per output."""

    fields: list[ResultField]
    types: list[str]
    outputs: list[Fn]
    params: dict[int, ColumnType]  # $n -> the type its cast gives it (Describe)


def _text_of(value: Any, typ: str) -> str:
    """A value's text output (what ``::text`` and ``||`` give)."""
    if typ == "bool":
        return "true" if value else "false"
    return str(value)


def _cast(fn: Fn, source: str, target: str) -> Fn:
    if source == target or (source in ("text", "varchar") and target in ("text", "varchar")):
        return fn
    if source in ("unknown", "text", "varchar"):
        if target in _INTS or target == "bool":
            return lambda p: None if (v := fn(p)) is None else _input(v, target)
        return fn  # text
    if source in _INTS and target in _INTS:
        return lambda p: None if (v := fn(p)) is None else pgvalues.int_in_range(v, target)
    if target in ("text", "varchar"):  # an integer or boolean's output
        return lambda p: None if (v := fn(p)) is None else _text_of(v, source)
    raise _NotHere  # int <-> bool and the rest: Spark's translation holds PostgreSQL's rules


def _input(text: str, target: str) -> Any:
    """A string read as a value of ``target`` (its input function)."""
    if target in _INTS:
        return pgvalues.parse_int(text, target)
    return pgvalues.parse_bool(text) if target == "bool" else text


def _param(n: int, target: str) -> Fn:
    """``$n::target``: the bound value (:func:`run` reads strings by the type's input rules first)."""
    index = n - 1

    def read(p: list[Any]) -> Any:
        v = p[index]
        if type(v) is int and target in _INTS:  # a value the client typed: the cast's range
            return pgvalues.int_in_range(v, target)
        if type(v) in (int, bool) and target in ("text", "varchar"):
            return _text_of(v, "bool" if type(v) is bool else "int8")
        return v

    return read


def _compile(node: exp.Expression, params: dict[int, ColumnType]) -> tuple[str, Fn]:
    """(type, function of the parameter values) of ``node``; _NotHere when it is not evaluated here."""
    if isinstance(node, exp.Paren):
        return _compile(node.this, params)
    if isinstance(node, exp.Literal):
        text = node.this
        if node.is_string:
            return "unknown", lambda p: text
        if not (text.isascii() and text.isdigit()):
            raise _NotHere  # numeric and float literals
        value = int(text)
        return _int_constant(value)
    folded = negated_literal(node)
    if folded is not None:
        return _int_constant(folded)
    if isinstance(node, exp.Boolean):
        value = bool(node.this)
        return "bool", lambda p: value
    if isinstance(node, exp.Null):
        return "unknown", lambda p: None
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
        to = node.to
        target = _CASTS.get(to.this) if isinstance(to, exp.DataType) else None
        if target is None or to.expressions or node.args.get("format"):
            raise _NotHere
        n = param_index(node.this)
        if n is not None:
            known = params.get(n)
            if known is not None and known.pg.name != _COLUMN_TYPES[target].pg.name:
                raise _NotHere  # one parameter cast to two types: PostgreSQL's inference decides
            params[n] = _COLUMN_TYPES[target]
            return target, _param(n, target)
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Literal) and inner.is_string:
            # a string literal is read when the statement is parsed (before anything is computed)
            value = _input(inner.this, target)
            return target, lambda p: value
        source, fn = _compile(node.this, params)
        return target, _cast(fn, source, target)
    if isinstance(node, exp.Neg):
        typ, fn = _compile(node.this, params)
        if typ not in _INTS:
            raise _NotHere
        return typ, lambda p: None if (v := fn(p)) is None else pgvalues.int_in_range(-v, typ)
    if type(node) in _ARITH:
        op = _ARITH[type(node)]
        (lt, lf), (rt, rf) = _compile(node.this, params), _compile(node.expression, params)
        typ = _operand_type(lt, rt, _INTS, node)
        if typ not in _INTS:
            raise _NotHere

        def arith(p: list[Any]) -> Any:
            a, b = lf(p), rf(p)
            return None if a is None or b is None else pgvalues.int_arith(op, a, b, typ)

        return typ, arith
    if type(node) in _COMPARE:
        compare = _COMPARE[type(node)]
        (lt, lf), (rt, rf) = _compile(node.this, params), _compile(node.expression, params)
        typ = _operand_type(lt, rt, (*_INTS, "bool", "text", "varchar"), node)
        if typ in ("text", "varchar") and type(node) not in (exp.EQ, exp.NEQ):
            raise _NotHere  # ordering of text follows a collation: Spark's path
        if typ == "unknown" and not (_is_null(node.this) or _is_null(node.expression)):
            raise _NotHere  # 'a' = 'b': PostgreSQL reads both as text; Spark's path

        def cmp(p: list[Any]) -> Any:
            a, b = lf(p), rf(p)
            return None if a is None or b is None else compare(a, b)

        return "bool", cmp
    if isinstance(node, (exp.And, exp.Or)):
        (lt, lf), (rt, rf) = _compile(node.this, params), _compile(node.expression, params)
        if not {lt, rt} <= {"bool"} | ({"unknown"} if _is_null(node.this) or _is_null(node.expression) else set()):
            raise _NotHere
        is_and = isinstance(node, exp.And)

        def logic(p: list[Any]) -> Any:
            a = lf(p)
            if a is (not is_and):  # false AND ..., true OR ...: the rest is not evaluated
                return a
            b = rf(p)
            if b is (not is_and):
                return b
            return None if a is None or b is None else is_and

        return "bool", logic
    if isinstance(node, exp.Not):
        typ, fn = _compile(node.this, params)
        if typ != "bool" and not _is_null(node.this):
            raise _NotHere
        return "bool", lambda p: None if (v := fn(p)) is None else not v
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        _, fn = _compile(node.this, params)
        negate = bool(node.args.get("negate"))
        return "bool", lambda p: (fn(p) is None) != negate
    if isinstance(node, exp.DPipe):  # PostgreSQL's ||: NULL with a NULL operand
        (lt, lf), (rt, rf) = _compile(node.this, params), _compile(node.expression, params)
        texts = ("text", "varchar", "unknown")
        if not (lt in texts or rt in texts) or not {lt, rt} <= {*texts, *_INTS, "bool"}:
            raise _NotHere

        def concat(p: list[Any]) -> Any:
            a, b = lf(p), rf(p)
            return None if a is None or b is None else _text_of(a, lt) + _text_of(b, rt)

        return "text", concat
    raise _NotHere


def _int_constant(value: int) -> tuple[str, Fn]:
    if -(2**31) <= value < 2**31:
        return "int4", lambda p: value
    if -(2**63) <= value < 2**63:
        return "int8", lambda p: value
    raise _NotHere  # numeric


def _is_null(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Null)


def _operand_type(lt: str, rt: str, allowed: tuple[str, ...], node: exp.Binary | None = None) -> str:
    """The type both operands are compared or computed in: the wider integer; an unknown NULL
    takes the other operand's type. A string literal operand of another type than text (``1 +
    '5'``, ``n = '7'``) is left to Spark's path, which resolves the operator as PostgreSQL does."""
    texts = ("text", "varchar")
    if node is not None and ((lt == "unknown" and rt not in texts and not _is_null(node.this))
                             or (rt == "unknown" and lt not in texts and not _is_null(node.expression))):
        raise _NotHere  # (against text, a string literal is that text)
    if lt == "unknown":
        lt = rt
    if rt == "unknown":
        rt = lt
    if lt in _INTS and rt in _INTS:
        return lt if _WIDTH[lt] >= _WIDTH[rt] else rt
    if lt == rt or {lt, rt} == {"text", "varchar"}:
        if lt not in allowed and lt != "unknown":
            raise _NotHere
        return lt
    raise _NotHere


def _analyse(tree: exp.Select) -> Constant | None:
    if set(k for k, v in tree.args.items() if v) - _ALLOWED_ARGS or not tree.expressions:
        return None
    params: dict[int, ColumnType] = {}
    fields, types, outputs = [], [], []
    try:
        for item in tree.expressions:
            node = item.this if isinstance(item, exp.Alias) else item
            if isinstance(node, exp.Star):
                return None
            typ, fn = _compile(node, params)
            fields.append(ResultField(pg_output_name(item), _COLUMN_TYPES[typ]))
            types.append(typ)
            outputs.append(fn)
    except _NotHere:
        return None
    return Constant(fields, types, outputs, params)


_CACHE: OrderedDict[str, Constant | None] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 512


def cached(sql: str) -> Constant | None | bool:
    """The analysis kept for ``sql``: a Constant, None (not one), or False (not analysed yet)."""
    with _CACHE_LOCK:
        return _CACHE.get(sql, False)


def accepts(const: Constant, params: list[Any]) -> bool:
    """Whether every parameter ``const`` reads is a value :func:`run` evaluates (else run gives None)."""
    for n, t in const.params.items():
        if n > len(params):
            return False
        v = params[n - 1]
        if v is None or isinstance(v, str):
            continue
        name = t.pg.name
        if not ((name in _INTS and type(v) is int) or (name == "bool" and type(v) is bool)
                or (name in ("text", "varchar") and type(v) in (int, bool))):
            return False
    return True


def shape(tree: exp.Expression, sql: str | None = None) -> Constant | None:
    """The constant query ``tree`` is, or None when Spark computes it. With ``sql``, the analysis is
    kept for the text's next Executes (it depends on nothing but the text)."""
    if sql is not None:
        with _CACHE_LOCK:
            if sql in _CACHE:
                _CACHE.move_to_end(sql)
                return _CACHE[sql]
    # a query reading a relation is kept as "not one" too: the gateway asks of every Execute
    const = _analyse(tree) if isinstance(tree, exp.Select) and tree.args.get("from_") is None else None
    if sql is not None:
        with _CACHE_LOCK:
            _CACHE[sql] = const
            if len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return const


def run(const: Constant, params: list[Any]) -> RowStream | None:
    """The one row of ``const`` with ``params``; None when a parameter's value is not one this
    module reads (Spark computes it). PostgreSQL's errors are raised as SqlError."""
    if not accepts(const, params):
        return None
    bound = list(params)
    for n, t in sorted(const.params.items()):  # strings are read at Bind, in parameter order
        v = bound[n - 1]
        if isinstance(v, str):
            bound[n - 1] = _input(v, t.pg.name)
    values = [fn(bound) for fn in const.outputs]  # left to right, as constant folding goes
    # the Arrow types are the announced fields' (no conversion)
    batch = pa.RecordBatch.from_arrays([pa.array([v], _ARROW[t]) for v, t in zip(values, const.types)],
                                       names=[f.name for f in const.fields])
    return RowStream(const.fields, iter((batch,)), command="SELECT", size=batch.num_rows)


def explain(const: Constant) -> list[str]:
    return ["Result (computed in the gateway, no table read)",
            "  Output: " + ", ".join(f.name for f in const.fields)]


__all__ = ["Constant", "accepts", "cached", "explain", "run", "shape"]
