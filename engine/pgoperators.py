"""PostgreSQL's arithmetic and comparison operators over the built-in scalar types.

Spark resolves ``date + date``, ``interval '1 day' + 1``, ``true + 1`` or ``'abc'::text > 1``
by its own rules: some fail with Spark's wording (42804 ``DATATYPE_MISMATCH``), some answer
something PostgreSQL never would (an interval plus one second, a text compared as a number).
PostgreSQL has no such operators and says so before running anything: 42883 ``operator does
not exist: date + date``. :func:`check_operators` walks a qualified, type-annotated query and
raises that for every operator whose operand types have no PostgreSQL operator.

Operand types are PostgreSQL type names, computed bottom-up here rather than taken from
sqlglot's annotation where the two differ: sqlglot types ``date - date`` as a date (PostgreSQL:
integer) and ``1.5`` as a double (PostgreSQL: numeric). Where the PostgreSQL type of an operand
is not known for sure (most function calls, untyped string literals, NULL, arrays, columns of
derived tables typed from such expressions), the operator is not checked: this module only ever
refuses what PostgreSQL refuses. The same typing refuses the text functions (``length``,
``upper``, ``substr``...) over numbers, dates and booleans, which PostgreSQL does not cast to
text implicitly (``length(42)`` is 42883; Spark answered 2).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator

from sqlglot import exp

from engine.pgfunctions import call_arguments, undefined_function, written_name
from tidegate.errors import SqlError

_T = exp.DataType.Type
PARAMETER = "pg_param"  # meta of the literal a bound parameter ($n) became (engine.translate.bind_params)
# meta of an expression a rewrite moved out of the clause that requires a boolean (an UPDATE's
# WHERE computed as a column): the clause's name, for boolean_operands
BOOLEAN_CONTEXT = "pg_boolean_context"

SMALLINT, INTEGER, BIGINT, NUMERIC = "smallint", "integer", "bigint", "numeric"
REAL, DOUBLE = "real", "double precision"
DATE, TIME, INTERVAL = "date", "time without time zone", "interval"
TIMESTAMP, TIMESTAMPTZ = "timestamp without time zone", "timestamp with time zone"
TEXT, BOOLEAN = "text", "boolean"

# Numeric types in PostgreSQL's implicit-cast order: an operator over two of them works on the wider.
_NUMERIC_ORDER = (SMALLINT, INTEGER, BIGINT, NUMERIC, REAL, DOUBLE)
_NUMBERS = frozenset(_NUMERIC_ORDER)
_FLOATS = frozenset({REAL, DOUBLE})
_POINTS = frozenset({DATE, TIMESTAMP, TIMESTAMPTZ})  # date -> timestamp -> timestamptz implicitly
_TEXTS = frozenset({TEXT, "character varying", "character"})

_NAMES: dict[exp.DataType.Type, str] = {
    _T.SMALLINT: SMALLINT, _T.TINYINT: SMALLINT, _T.INT: INTEGER, _T.BIGINT: BIGINT,
    _T.DECIMAL: NUMERIC, _T.FLOAT: REAL, _T.DOUBLE: DOUBLE,
    _T.DATE: DATE, _T.TIME: TIME, _T.INTERVAL: INTERVAL,
    _T.TIMESTAMP: TIMESTAMP, _T.TIMESTAMPNTZ: TIMESTAMP, _T.DATETIME: TIMESTAMP,
    _T.TIMESTAMPTZ: TIMESTAMPTZ, _T.TIMESTAMPLTZ: TIMESTAMPTZ,
    _T.TEXT: TEXT, _T.VARCHAR: "character varying", _T.CHAR: "character", _T.BOOLEAN: BOOLEAN,
}

ARITHMETIC: dict[type, str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}
_COMPARISON: dict[type, str] = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
# Comparable families: two operands compare when they are in the same one.
_FAMILIES = (_NUMBERS, _TEXTS, _POINTS, frozenset({TIME}), frozenset({INTERVAL}), frozenset({BOOLEAN}))

# Functions PostgreSQL has for text only: a number, date or boolean does not cast to text
# implicitly, so length(42) is 42883 (Spark would answer 2).
TEXT_FUNCTIONS = frozenset({"length", "char_length", "character_length", "upper", "lower", "initcap", "substr",
                            "substring", "ltrim", "rtrim", "btrim", "replace", "left", "right", "reverse", "lpad",
                            "rpad", "strpos", "split_part", "starts_with", "md5", "ascii"})

HINT = "No operator matches the given name and argument types. You might need to add explicit type casts."


def _wider(left: str, right: str) -> str:
    if REAL in (left, right) and left != right:
        return DOUBLE  # real with any other number is computed in double precision
    return max(left, right, key=_NUMERIC_ORDER.index)


def _point(left: str, right: str) -> str:
    return TIMESTAMPTZ if TIMESTAMPTZ in (left, right) else TIMESTAMP


def arithmetic_result(op: str, left: str, right: str) -> str | None:
    """The type of ``left op right`` in PostgreSQL, or None when it has no such operator. A time
    converts implicitly to an interval where no operator takes the time itself (``ts + t``,
    ``t * 2``); see :func:`time_as_interval`."""
    exact = _arithmetic(op, left, right)
    if exact is not None or TIME not in (left, right):
        return exact
    return _arithmetic(op, INTERVAL if left == TIME else left, INTERVAL if right == TIME else right)


def time_as_interval(op: str, left: str, right: str) -> bool:
    """True when ``left op right`` takes a time operand as an interval (its implicit cast)."""
    return _arithmetic(op, left, right) is None and arithmetic_result(op, left, right) is not None


def _arithmetic(op: str, left: str, right: str) -> str | None:  # noqa: C901 - PostgreSQL's operator table
    pair = (left, right)
    if left in _NUMBERS and right in _NUMBERS:
        if op == "%" and (left in _FLOATS or right in _FLOATS):
            return None
        return _wider(left, right)
    small_int = {SMALLINT, INTEGER}
    if op == "+":
        for a, b in (pair, pair[::-1]):
            if a == DATE and b in small_int:
                return DATE
            if a == DATE and b in (INTERVAL, TIME):
                return TIMESTAMP
            if a in (TIMESTAMP, TIMESTAMPTZ) and b == INTERVAL:
                return a
            if a == TIME and b == INTERVAL:
                return TIME
        return INTERVAL if pair == (INTERVAL, INTERVAL) else None
    if op == "-":
        if pair == (DATE, DATE):
            return INTEGER
        if left == DATE and right in small_int:
            return DATE
        if left in _POINTS and right in _POINTS:
            return INTERVAL
        if left in _POINTS and right == INTERVAL:
            return TIMESTAMP if left == DATE else left
        if left == TIME and right in (TIME, INTERVAL):
            return INTERVAL if right == TIME else TIME
        return INTERVAL if pair == (INTERVAL, INTERVAL) else None
    if op == "*" and INTERVAL in pair and (left in _NUMBERS or right in _NUMBERS):
        return INTERVAL
    if op == "/" and left == INTERVAL and right in _NUMBERS:
        return INTERVAL
    return None


def comparable(left: str, right: str) -> bool:
    if {left, right} == {TIME, INTERVAL}:
        return True  # the time compared as an interval
    return any(left in family and right in family for family in _FAMILIES)


def _literal_type(node: exp.Literal) -> str | None:
    if node.is_string:
        return None  # PostgreSQL's 'unknown': it takes the other operand's type
    text = node.name
    if any(c in text for c in ".eE"):
        return NUMERIC
    value = abs(int(text))
    return INTEGER if value < 2**31 else BIGINT if value < 2**63 else NUMERIC


class _Typer:
    def __init__(self, trusted: Callable[[exp.Column], bool],
                 defining: Callable[[exp.Column], exp.Expression | None] = lambda col: None) -> None:
        self.trusted = trusted  # a stored table's column: its declared type
        self.defining = defining  # a derived table's column: the expression its query gives it
        self.types: dict[int, str | None] = {}

    def of(self, node: exp.Expression) -> str | None:  # noqa: C901 - one case per node kind
        key = id(node)
        if key in self.types:
            return self.types[key]
        out: str | None = None
        if node.meta.get(PARAMETER):
            pass  # a bound parameter: its value's Spark form, not the type the client declared
        elif isinstance(node, exp.Paren):
            out = self.of(node.this)
        elif isinstance(node, exp.Literal):
            out = _literal_type(node)
        elif isinstance(node, (exp.Boolean, exp.Predicate, exp.Not, exp.And, exp.Or)) and not isinstance(
                node, exp.SubqueryPredicate):
            out = BOOLEAN  # comparisons, IS, IN, LIKE, NOT, AND, OR (not the ANY/ALL operand of one)
        elif isinstance(node, exp.DPipe):
            out = self._concatenation(node)
        elif isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select) and len(node.this.expressions) == 1:
            item = node.this.expressions[0]  # a scalar subquery: its one column's type
            out = self.of(item.this if isinstance(item, exp.Alias) else item)
        elif isinstance(node, exp.Neg):
            inner = self.of(node.this)
            out = inner if inner in _NUMBERS or inner == INTERVAL else None
        elif type(node) in ARITHMETIC:
            left, right = self.of(node.this), self.of(node.expression)
            if left is not None and right is not None:
                out = arithmetic_result(ARITHMETIC[type(node)], left, right)
        elif isinstance(node, exp.Cast):
            out = _NAMES.get(node.to.this) if isinstance(node.to, exp.DataType) else None
        elif isinstance(node, exp.Interval):
            out = INTERVAL
        elif isinstance(node, exp.CurrentDate):
            out = DATE
        elif isinstance(node, exp.CurrentTimestamp):
            out = TIMESTAMPTZ
        elif isinstance(node, exp.Count):
            out = BIGINT
        elif isinstance(node, (exp.Min, exp.Max)):
            out = self.of(node.this)
        elif isinstance(node, exp.Column):
            if self.trusted(node):
                t = node.type
                out = _NAMES.get(t.this) if isinstance(t, exp.DataType) else None
            else:
                definition = self.defining(node)
                if definition is not None:
                    self.types[key] = None  # (a cycle cannot type itself)
                    out = self.of(definition)
        self.types[key] = out
        return out

    def _concatenation(self, node: exp.DPipe) -> str | None:
        """``||`` is text concatenation when one side is text (or both are string literals) and
        the other a scalar: PostgreSQL's textcat / anytextcat. Arrays, jsonb and bytea have
        their own ``||``; an operand of a type not known here leaves the result unknown."""
        sides = [node.this, node.expression]
        kinds = [self.of(side) for side in sides]
        literal = [_string_literal(side) for side in sides]
        if any(k in _TEXTS or lit for k, lit in zip(kinds, literal)) \
                and all(k in _SCALARS or lit for k, lit in zip(kinds, literal)):
            return TEXT
        return None


def _string_literal(node: exp.Expression) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Literal) and node.is_string


_SCALARS = frozenset(_NAMES.values())


def boolean_operands(tree: exp.Expression) -> Iterator[tuple[str, exp.Expression]]:
    """Every operand PostgreSQL requires to be boolean, with the construct its 42804 names:
    ``argument of WHERE must be type boolean, not type integer``."""
    for node in tree.walk():
        if node.meta.get(BOOLEAN_CONTEXT):
            yield node.meta[BOOLEAN_CONTEXT], node
        if isinstance(node, exp.Not):
            yield "NOT", node.this
        elif isinstance(node, (exp.And, exp.Or)):
            name = "AND" if isinstance(node, exp.And) else "OR"
            yield name, node.this
            yield name, node.expression
        elif isinstance(node, exp.Where):
            yield ("FILTER" if isinstance(node.parent, exp.Filter) else "WHERE"), node.this
        elif isinstance(node, exp.Having):
            yield "HAVING", node.this
        elif isinstance(node, exp.Join) and node.args.get("on") is not None:
            yield "JOIN/ON", node.args["on"]
        elif isinstance(node, exp.Case) and node.this is None:  # (CASE x WHEN v compares x = v)
            for branch in node.args.get("ifs") or []:
                yield "CASE/WHEN", branch.this
        elif isinstance(node, exp.Is) and isinstance(node.expression, exp.Boolean):
            negated = "NOT " if isinstance(node.parent, exp.Not) else ""  # (x IS NOT TRUE is NOT (x IS TRUE))
            yield f"IS {negated}{'TRUE' if node.expression.this else 'FALSE'}", node.this


def check_boolean_operands(tree: exp.Expression, type_of: Callable[[exp.Expression], str | None]) -> None:
    """42804 for an operand of NOT / AND / OR / WHERE / HAVING / JOIN ON / CASE WHEN / IS TRUE
    whose type is known and not boolean: Spark casts a text or a number to boolean there and
    answers (``true AND 1``, ``NOT ('t' || 'rue')``), PostgreSQL refuses before running."""
    for name, operand in boolean_operands(tree):
        kind = type_of(operand)
        if kind is not None and kind != BOOLEAN:
            raise SqlError("42804", f"argument of {name} must be type boolean, not type {kind}")


def check_operators(tree: exp.Expression, base_tables: Collection[str]) -> Callable[[exp.Expression], str | None]:
    """42883 for an arithmetic or comparison operator PostgreSQL does not have for its operands.

    ``tree`` is qualified and type-annotated; ``base_tables`` names the stored tables in it
    (only their columns' types are taken as declared: a derived table's column carries
    sqlglot's guess for the expression behind it). Returns the PostgreSQL type (name) of a node
    of ``tree`` where it is known, for the translator to correct sqlglot's guess with."""
    ctes = {cte.alias_or_name: cte for cte in tree.find_all(exp.CTE)}

    def source_of(col: exp.Column) -> exp.Expression | None:
        # The relation the column's qualifier names in its own query (or, correlated, an outer one).
        select = col.find_ancestor(exp.Select)
        while select is not None:
            from_ = select.args.get("from_") or select.args.get("from")
            sources = ([from_.this] if from_ is not None else []) + [j.this for j in select.args.get("joins") or []]
            for source in sources:
                if source.alias_or_name == col.table:
                    return source
            select = select.find_ancestor(exp.Select)
        return None

    def trusted(col: exp.Column) -> bool:
        # a stored table's column has its declared type
        source = source_of(col)
        return isinstance(source, exp.Table) and source.name in base_tables and source.name not in ctes

    def defining(col: exp.Column) -> exp.Expression | None:
        # a derived table's (or a CTE's) column: the expression of its query's output of that name
        source = source_of(col)
        query = source.this if isinstance(source, exp.Subquery) else (
            ctes[source.name].this if isinstance(source, exp.Table) and source.name in ctes else None)
        if not isinstance(query, exp.Select):
            return None  # a set operation's column type comes from all its branches: not followed
        for item in query.expressions:
            if item.alias_or_name == col.name:
                return item.this if isinstance(item, exp.Alias) else item
        return None

    typer = _Typer(trusted, defining)
    check_boolean_operands(tree, typer.of)
    for node in tree.walk(bfs=False):
        name = written_name(node)
        if name in TEXT_FUNCTIONS:
            args = call_arguments(node)
            first = typer.of(args[0]) if args else None
            if first is not None and first not in _TEXTS:
                raise undefined_function(name, [typer.of(a) or "unknown" for a in args])
        elif name == "log" and len(call_arguments(node)) == 2:
            # log(b, x) exists for numeric only: a float argument does not cast to numeric implicitly
            args = call_arguments(node)
            kinds = [typer.of(a) for a in args]
            if any(k in _FLOATS for k in kinds):
                raise undefined_function(name, [k or "unknown" for k in kinds])
        if isinstance(node, exp.Nullif):  # nullif(a, b) compares a = b
            left, right = typer.of(node.this), typer.of(node.expression)
            if left is not None and right is not None and not comparable(left, right):
                raise SqlError("42883", f"operator does not exist: {left} = {right}", hint=HINT)
            continue
        if isinstance(node, exp.Coalesce):  # its arguments must resolve to one type
            kinds = [typer.of(a) for a in [node.this, *node.expressions]]
            known = [k for k in kinds if k is not None]
            for k in known[1:]:
                if not comparable(known[0], k):
                    raise SqlError("42804", f"COALESCE types {known[0]} and {k} cannot be matched")
            continue
        op = ARITHMETIC.get(type(node)) or _COMPARISON.get(type(node))
        if op is None:
            continue
        assert isinstance(node, exp.Binary)
        left, right = typer.of(node.this), typer.of(node.expression)
        if left is None or right is None:
            continue
        if op == "+" and left == right == TIME:
            raise SqlError("42725", f"operator is not unique: {left} + {right}",
                           hint="Could not choose a best candidate operator. You might need to add explicit type casts.")
        ok = comparable(left, right) if type(node) in _COMPARISON else arithmetic_result(op, left, right) is not None
        if not ok:
            raise SqlError("42883", f"operator does not exist: {left} {op} {right}", hint=HINT)
    return typer.of
