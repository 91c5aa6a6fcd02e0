"""The FLOW statements' grammar (GreptimeDB's), intervals and option validation.

sqlglot does not know these statements, so they are read with the quote-aware scanner of
:mod:`engine.ddl`; the flow's query itself is kept as text (normalised: keywords upper-cased,
whitespace collapsed, comments dropped) and parsed by the translator when the flow is planned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine import ddl
from engine.ddl import TokenReader
from engine.storage import parse_interval
from tidegate import sqllex
from tidegate.errors import SqlError
from tidegate.sqllex import Token

FLOW_TYPES = ("batching", "streaming")
# GreptimeDB's documented flow options. experimental_enable_incremental_read asks a batching flow
# to read only the source rows written since its last run; tidegate's batching flows already
# re-read only the time windows that changed (a flow without a usable time window recomputes, as
# GreptimeDB falls back to full-snapshot queries), so it is accepted, stored and shown, and changes
# nothing.
BOOLEAN_OPTIONS = ("defer_on_missing_source", "experimental_enable_incremental_read")
SUPPORTED_OPTIONS = ("defer_on_missing_source", "experimental_enable_incremental_read", "flow_type")
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
    where: str | None


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


def _flow_name(r: TokenReader) -> str:
    parts = r.qualified()
    if len(parts) > 3:
        raise r.error()
    # Flows are named per database; a qualifier (catalog or schema) is accepted and ignored.
    return parts[-1]


def parse(sql: str) -> FlowStatement:
    """Parse one FLOW statement; 42601 (with a position) on a syntax error."""
    r = TokenReader(sql)
    head = r.word()
    if head == "CREATE":
        return _parse_create(r)
    if head == "DROP":
        r.expect("DROP", "FLOW")
        if_exists = r.accept("IF", "EXISTS")
        name = _flow_name(r)
        r.done()
        return DropFlow(name, if_exists)
    if head == "SHOW":
        r.expect("SHOW")
        if r.accept("CREATE", "FLOW"):
            name = _flow_name(r)
            r.done()
            return ShowCreateFlow(name)
        if r.accept("FLOW", "STATUS"):
            like = None
            if r.accept("LIKE"):
                like = r.string()
            r.done()
            return ShowFlowStatus(like)
        r.expect("FLOWS")
        schema = None
        if r.word() in ("IN", "FROM"):
            r.i += 1
            schema = r.qualified()[-1]
        like = where = None
        if r.accept("LIKE"):
            like = r.string()
        elif r.accept("WHERE"):
            if r.at_end():
                raise r.error()
            where = sql[r.peek().start:r.toks[-1].end]
            r.i = len(r.toks)
        r.done()
        return ShowFlows(schema, like, where)
    if head == "ADMIN":
        r.expect("ADMIN", "FLUSH_FLOW")
        r.expect_text("(")
        name_tok = r.peek()
        if name_tok is None:
            raise r.error()
        if name_tok.kind == "str":
            name = r.string()
        else:
            name = r.ident()
        r.expect_text(")")
        r.done()
        name = name.split(".")[-1] if name_tok.kind == "str" and "." in name else name
        return FlushFlow(name, f"ADMIN FLUSH_FLOW('{name}')")
    if head == "COMMENT":
        r.expect("COMMENT", "ON", "FLOW")
        name = _flow_name(r)
        r.expect("IS")
        if r.accept("NULL"):
            comment = None
        else:
            comment = r.string()
        r.done()
        return CommentOnFlow(name, comment)
    raise r.error(r.peek())


def _parse_create(r: TokenReader) -> CreateFlow:
    r.expect("CREATE")
    or_replace = r.accept("OR", "REPLACE")
    r.expect("FLOW")
    if_not_exists = r.accept("IF", "NOT", "EXISTS")
    if or_replace and if_not_exists:
        raise SqlError("42601", "CREATE OR REPLACE FLOW cannot be combined with IF NOT EXISTS",
                       hint="Use either OR REPLACE (replace an existing flow) or IF NOT EXISTS (keep it).")
    name = _flow_name(r)
    r.expect("SINK", "TO")
    sink = r.qualified()
    if len(sink) > 3:
        raise r.error()
    if len(sink) == 3 and sink[0] != "tidegate":
        raise SqlError("0A000", f'cross-database references are not implemented: "{".".join(sink)}"')
    sink_schema = sink[-2] if len(sink) >= 2 else None
    stmt = CreateFlow(name, sink_schema, sink[-1], "", or_replace, if_not_exists)
    # Optional clauses, in this fixed order.
    if r.accept("EXPIRE", "AFTER"):
        stmt.expire_after = _interval_clause(r, "EXPIRE AFTER")
    if r.accept("EVAL", "INTERVAL"):
        stmt.eval_interval = _interval_clause(r, "EVAL INTERVAL")
    if r.accept("COMMENT"):
        stmt.comment = r.string()
    if r.accept("WITH"):
        stmt.options = _options(r)
    if r.word() != "AS":
        raise r.error()
    as_tok = r.peek()
    r.i += 1
    if r.at_end():
        raise r.error()
    stmt.query = normalise_query(r.sql[as_tok.end:r.toks[-1].end])
    return stmt


def _interval_clause(r: TokenReader, clause: str) -> int:
    r.accept("INTERVAL")
    t = r.peek()
    text = r.string()
    seconds = interval_seconds(text, clause, allow_months=False)
    if clause == "EVAL INTERVAL" and seconds <= 0:
        raise SqlError("22023", f"EVAL INTERVAL must be positive, got '{text}'", position=t.start + 1)
    if clause == "EXPIRE AFTER" and seconds < 0:
        raise SqlError("22023", f"EXPIRE AFTER must not be negative, got '{text}'", position=t.start + 1)
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


def _options(r: TokenReader) -> dict[str, str]:
    r.expect_text("(")
    out: dict[str, str] = {}
    if r.peek() is not None and r.peek().text == ")":
        r.i += 1
        return out
    while True:
        key_tok = r.peek()
        if key_tok is None:
            raise r.error()
        key = key_tok.value.lower() if key_tok.kind == "str" else r.ident()
        if key_tok.kind == "str":
            r.i += 1
        if r.peek() is not None and r.peek().text == "=":
            r.i += 1
        vt = r.peek()
        if vt is None or vt.text in (",", ")"):
            raise r.error()
        r.i += 1
        value = vt.value
        out[key] = _option_value(key, value)
        t = r.peek()
        if t is not None and t.text == ",":
            r.i += 1
            continue
        r.expect_text(")")
        return out


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
