"""The FLOW statements (GreptimeDB's), their intervals and options checked.

The dialect (:mod:`tidegate.dialect`) parses them into its trees (``CreateFlow``, ``DropFlow``,
``ShowFlows``, ...); :func:`statement` checks a tree's clauses and gives the statement the engine
runs. The flow's query is kept as text (normalised: keywords upper-cased, whitespace collapsed,
comments dropped), as SHOW CREATE FLOW prints it and the flow's runs parse it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from catalog.store import DATABASE_NAME
from engine.storage import parse_interval
from tidegate import dialect, sqllex
from tidegate.dialect import Tidegate
from tidegate.errors import SqlError
from tidegate.sqllex import Token

FLOW_TYPES = ("batching", "streaming")
# GreptimeDB's documented flow options. experimental_enable_incremental_read asks a batching flow
# to read only the source rows written since its last run; tidegate's batching flows already
# re-read only the time windows that changed (a flow without a usable time window recomputes, as
# GreptimeDB falls back to full-snapshot queries), so it is accepted, stored and shown, and changes
# nothing.
BOOLEAN_OPTIONS = ("defer_on_missing_source", "experimental_enable_incremental_read")
# tidegate's own: which writer commits a flow's sink, as the session setting tidegate.spark_writes
# chooses for statements: 'auto' (Spark for a result the optimizer expects over 8 MB, or a
# streaming micro-batch of over 100,000 rows; delta-rs in the gateway otherwise), 'on', 'off'.
# Without flow_type it makes the flow batching (engine.flows.statements._mode_rule).
SPARK_WRITES = ("auto", "on", "off")
SUPPORTED_OPTIONS = ("defer_on_missing_source", "experimental_enable_incremental_read", "flow_type", "spark_writes")
_TRUE = {"true", "t", "on", "yes", "1"}
_FALSE = {"false", "f", "off", "no", "0"}


# -- statements ----------------------------------------------------------------------------------

@dataclass
class CreateFlow:
    name: str
    sink_schema: str | None
    sink_table: str
    query: str  # normalised text
    or_replace: bool = False
    if_not_exists: bool = False
    expire_after: int | None = None
    eval_interval: int | None = None
    comment: str | None = None
    options: dict[str, str] = field(default_factory=dict)  # validated, values normalised

    @property
    def defer_on_missing_source(self) -> bool:
        return self.options.get("defer_on_missing_source") == "true"


@dataclass
class DropFlow:
    name: str
    if_exists: bool


@dataclass
class ShowFlows:
    schema: str | None
    like: str | None
    where: exp.Expression | None  # a condition on the listed rows


@dataclass
class ShowCreateFlow:
    name: str


@dataclass
class ShowFlowStatus:
    like: str | None


@dataclass
class FlushFlow:
    name: str
    call_text: str  # "ADMIN FLUSH_FLOW('name')": the result column's name


@dataclass
class CommentOnFlow:
    name: str
    comment: str | None


FlowStatement = CreateFlow | DropFlow | ShowFlows | ShowCreateFlow | ShowFlowStatus | FlushFlow | CommentOnFlow


def _flow_name(name: exp.Table) -> str:
    # Flows are named per database (GreptimeDB's): a qualifier names this database's catalog or
    # one of its schemas, and the flow is found by its own name.
    if name.catalog and name.catalog != DATABASE_NAME:
        raise SqlError("0A000", f'cross-database references are not implemented: "{name.sql(dialect=Tidegate)}"')
    if isinstance(name.this, exp.Dot):
        raise SqlError("42601", f"improper qualified name (too many dotted names): {name.sql(dialect=Tidegate)}")
    return name.name


def parse(sql: str) -> FlowStatement:
    """One FLOW statement's text, parsed by the dialect (tests and tools; the engine hands
    :func:`statement` the tree it parsed)."""
    return statement(dialect.parse_one(sql))


def statement(node: exp.Expression) -> FlowStatement:
    """The flow statement a tree of the dialect (:mod:`tidegate.dialect`) asks for, its clauses
    checked: intervals in seconds, options validated and normalised."""
    if isinstance(node, dialect.CreateFlow):
        return _create(node)
    if isinstance(node, dialect.DropFlow):
        return DropFlow(_flow_name(node.this), bool(node.args.get("exists")))
    if isinstance(node, dialect.ShowFlows):
        db = node.args.get("db")
        like = node.args.get("like")
        return ShowFlows(db.name if db is not None else None, like.name if like is not None else None,
                         node.args.get("where"))
    if isinstance(node, dialect.ShowCreateFlow):
        return ShowCreateFlow(_flow_name(node.this))
    if isinstance(node, dialect.ShowFlowStatus):
        like = node.args.get("like")
        return ShowFlowStatus(like.name if like is not None else None)
    if isinstance(node, dialect.Admin):
        return _admin(node.this)
    if isinstance(node, dialect.CommentOnFlow):
        text = node.expression
        return CommentOnFlow(_flow_name(node.this), None if isinstance(text, exp.Null) else text.name)
    raise SqlError("0A000", f"{type(node).__name__} is not a flow statement")


# GreptimeDB's administration functions (ADMIN fn(...)) and what tidegate does instead
_ADMIN_ELSEWHERE = {
    "flush_table": "a table's writes are durable when its statement returns: there is nothing to flush",
    "compact_table": "run VACUUM table: it compacts the table's small files",
    "compact_region": "run VACUUM table: it compacts the table's small files",
    "flush_region": "a table's writes are durable when its statement returns: there is nothing to flush",
    "migrate_region": "a table is one Delta table on the shared warehouse: it has no regions to move",
}


def _admin(call: exp.Func) -> FlushFlow:
    name = (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()
    args = call.expressions if isinstance(call, exp.Anonymous) else list(call.iter_expressions())
    if name != "flush_flow":
        why = _ADMIN_ELSEWHERE.get(name)
        raise SqlError("0A000", f"ADMIN {name}() is not supported" + (f": {why}" if why else ""),
                       hint="ADMIN FLUSH_FLOW('flow') is the ADMIN function tidegate runs.")
    if len(args) != 1 or not isinstance(args[0], (exp.Literal, exp.Column)) or \
            (isinstance(args[0], exp.Literal) and not args[0].is_string):
        raise SqlError("42601", "ADMIN FLUSH_FLOW takes the flow's name: ADMIN FLUSH_FLOW('flow')")
    arg = args[0]
    name = arg.name.split(".")[-1] if isinstance(arg, exp.Literal) else arg.name
    return FlushFlow(name, f"ADMIN FLUSH_FLOW('{name}')")


def _create(node: dialect.CreateFlow) -> CreateFlow:
    sink = node.args["sink"]
    if isinstance(sink.this, exp.Dot):
        raise SqlError("42601", f"improper qualified name (too many dotted names): {sink.sql(dialect=Tidegate)}")
    if sink.catalog and sink.catalog != DATABASE_NAME:
        raise SqlError("0A000", f'cross-database references are not implemented: "{sink.sql(dialect=Tidegate)}"')
    stmt = CreateFlow(_flow_name(node.this), sink.db or None, sink.name, normalise_query(node.args["query_sql"]),
                      bool(node.args.get("replace")), bool(node.args.get("exists")))
    expire, every = node.args.get("expire_after"), node.args.get("eval_interval")
    if expire is not None:
        stmt.expire_after = _interval_clause(expire, "EXPIRE AFTER")
    if every is not None:
        stmt.eval_interval = _interval_clause(every, "EVAL INTERVAL")
    comment = node.args.get("comment")
    stmt.comment = comment.name if comment is not None else None
    stmt.options = {p.this.name.lower(): _option_value(p.this.name.lower(), p.args["value"].name)
                    for p in node.args.get("options") or []}
    return stmt


def _interval_clause(literal: exp.Literal, clause: str) -> int:
    text = literal.name
    seconds = interval_seconds(text, clause, allow_months=False)
    position = literal.meta.get("start")
    position = position + 1 if isinstance(position, int) else None
    if clause == "EVAL INTERVAL" and seconds <= 0:
        raise SqlError("22023", f"EVAL INTERVAL must be positive, got '{text}'", position=position)
    if clause == "EXPIRE AFTER" and seconds < 0:
        raise SqlError("22023", f"EXPIRE AFTER must not be negative, got '{text}'", position=position)
    return seconds


def interval_seconds(text: str, clause: str = "interval", *, allow_months: bool = False) -> int:
    """``'5 minutes'``, ``'300 s'``, ``'1m'``, ``'2 days 1h 2 min'`` -> whole seconds.

    Months and years have no fixed length in seconds and are rejected (22023).
    """
    cleaned = text.strip()
    try:
        months, days, micros = parse_interval(cleaned)
    except SqlError:
        raise SqlError("22007", f'invalid {clause} interval: "{text}"',
                       hint="Write it like '5 minutes', '300 s', '1m' or '2 days 1h 2 min'.") from None
    if months and not allow_months:
        raise SqlError("22023", f"{clause} cannot use months or years: \"{text}\"",
                       hint="Months have no fixed length; write the interval in days, hours, minutes or seconds.")
    total_us = days * 86_400_000_000 + micros
    return int(round(total_us / 1_000_000))


def _option_value(key: str, value: str) -> str:
    if key not in SUPPORTED_OPTIONS:
        raise SqlError("22023", f'unrecognized flow option "{key}"; supported options: {", ".join(SUPPORTED_OPTIONS)}')
    if key in BOOLEAN_OPTIONS:
        low = value.strip().lower()
        if low in _TRUE:
            return "true"
        if low in _FALSE:
            return "false"
        raise SqlError("22023", f'invalid value for flow option "{key}": "{value}" (expected true or false)')
    low = value.strip().lower()
    if key == "spark_writes":
        if low not in SPARK_WRITES:
            raise SqlError("22023", f'invalid value for flow option "spark_writes": "{value}" (expected \'auto\', '
                                    "'on' or 'off')")
        return low
    if low not in FLOW_TYPES:
        raise SqlError("22023", f'invalid value for flow option "flow_type": "{value}" (expected \'batching\' or \'streaming\')')
    return low


# -- query normalisation ---------------------------------------------------------------------------

_KEYWORDS = {
    "select", "from", "where", "group", "by", "order", "having", "as", "and", "or", "not", "in", "is", "null",
    "join", "left", "right", "inner", "outer", "full", "cross", "on", "using", "distinct", "case", "when",
    "then", "else", "end", "limit", "offset", "union", "all", "intersect", "except", "interval", "between",
    "like", "ilike", "with", "cast", "true", "false", "asc", "desc", "nulls", "first", "last", "exists",
    "any", "some", "over", "partition", "filter", "within", "values", "lateral", "natural", "rows", "range",
    "preceding", "following", "unbounded", "current", "row", "similar", "escape", "recursive", "fetch",
    "next", "only", "window", "semi", "anti",
}
# Keywords that are also function names when a parenthesis follows: kept as written.
_FUNCTION_WORDS = {"left", "right"}


def normalise_query(text: str) -> str:
    """The flow query as SHOW CREATE FLOW prints it: keywords upper-cased (not names or function
    names), one space between tokens except around ``.``, ``::`` and inside parentheses, comments
    dropped. The result parses to the same query."""
    toks = sqllex.scan(text)
    while toks and toks[-1].text == ";":
        toks.pop()
    out: list[str] = []
    prev: Token | None = None
    for k, t in enumerate(toks):
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        piece = t.text
        if t.kind == "word" and t.text.lower() in _KEYWORDS and not (
                t.text.lower() in _FUNCTION_WORDS and nxt is not None and nxt.text == "("):
            piece = t.text.upper()
        if prev is not None and _space_between(prev, t):
            out.append(" ")
        out.append(piece)
        prev = t
    return "".join(out)


def _space_between(a: Token, b: Token) -> bool:
    if a.text in (".", "::", "(", "[") or b.text in (".", "::", ")", ",", "]", "[", ";"):
        return False
    if b.text == "(" and a.kind in ("word", "qid"):
        low = a.text.lower()
        # a function call (count(*), CAST(...)) hugs its parenthesis; clause keywords do not
        return low in _KEYWORDS and low not in _FUNCTION_WORDS and low != "cast"
    return True
