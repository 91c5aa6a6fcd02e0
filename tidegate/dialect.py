"""tidegate's SQL dialect: the one way client SQL becomes a tree, in every layer.

- :class:`Tokenizer`: every text is lexed by :mod:`tidegate.sqllex` (PostgreSQL's lexical rules:
  ``E''`` / ``U&''`` / dollar quotes, nested comments, non-ASCII identifiers, operators cut as
  PostgreSQL cuts them) and nothing else; its tokens become the token stream sqlglot's parser
  reads. sqlglot's own character scanner never runs on a client's text.
- :class:`Parser`: sqlglot's PostgreSQL grammar, where it is more lenient than PostgreSQL made
  strict (reserved keywords as names, ``UPDATE t SET``, ``INSERT INTO t``), with PostgreSQL's
  select-list labels and literal binding, and tidegate's own statements parsed into typed trees
  (:class:`TidegateStatement`: GreptimeDB's flows and ADMIN, RisingWave's REFRESH TABLE, jobs)
  and GreptimeDB's CREATE TABLE clauses into parts of sqlglot's ``exp.Create``.
- :class:`Generator`: writes every tree back (text in, text out; ``tests/test_dialect.py``).
- :class:`Tidegate`: the dialect, with PostgreSQL's result types for the expressions sqlglot types
  otherwise; :func:`parse` / :func:`parse_one`, with PostgreSQL's 42601 (and its position) and
  54001 for a statement nested deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import ParseError, TokenError
from sqlglot.parsers.postgres import PostgresParser
from sqlglot.tokens import Token as GlotToken
from sqlglot.tokens import TokenType

from tidegate import pg_keywords, sqllex
from tidegate.errors import SqlError

def _operator_keys(keywords: dict[str, TokenType], single: dict[str, TokenType]) -> dict[str, TokenType]:
    ops = {k: v for k, v in single.items() if k not in ("'", '"', "`", "$")}
    ops.update({k: v for k, v in keywords.items() if k and not any(c.isalnum() or c in " _" for c in k)})
    return ops  # a keyword wins over a single character: sqlglot reads "~" as RLIKE


class LexError(TokenError):
    """Text the one lexer refuses, with PostgreSQL's error: a TokenError, as sqlglot's own callers
    expect of a tokenizer (they fall back to reading a name that does not lex as a plain name)."""

    def __init__(self, error: SqlError) -> None:
        super().__init__(error.message)
        self.error = error


class Tokenizer(Postgres.Tokenizer):
    """sqlglot's PostgreSQL token stream, made from :func:`tidegate.sqllex.tokenize`'s tokens."""

    def tokenize(self, sql: str) -> list[GlotToken]:
        try:
            return glot_tokens(sql)
        except SqlError as e:
            raise LexError(e) from None


_KEYWORDS = Postgres.Tokenizer.KEYWORDS
_SINGLE = Postgres.Tokenizer.SINGLE_TOKENS
_OPERATORS = _operator_keys(_KEYWORDS, _SINGLE)
_OPERATOR_MAX = max(len(k) for k in _OPERATORS)
# keywords of several words ("ORDER BY", "DOUBLE PRECISION"), by their first word
_PHRASES: dict[str, list[tuple[str, ...]]] = {}
for _key in _KEYWORDS:
    if " " in _key and all(w.replace("_", "").isalnum() for w in _key.split(" ")):
        _words = tuple(_key.split(" "))
        _PHRASES.setdefault(_words[0], []).append(_words)
for _list in _PHRASES.values():
    _list.sort(key=len, reverse=True)
_STRING_PREFIX = {"e": TokenType.BYTE_STRING, "b": TokenType.BIT_STRING, "x": TokenType.HEX_STRING,
                  "n": TokenType.NATIONAL_STRING}


class _Out:
    """The sqlglot tokens being made, with sqlglot's line and column (of a token's last character)."""

    __slots__ = ("sql", "tokens", "_lines")

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.tokens: list[GlotToken] = []
        self._lines: list[int] | None = None

    def add(self, token_type: TokenType, text: str, start: int, end: int) -> None:
        """``end`` exclusive, as sqllex gives it (sqlglot's is inclusive)."""
        last = max(start, end - 1)
        if self._lines is None:
            self._lines = [i for i, c in enumerate(self.sql) if c == "\n"] if "\n" in self.sql else []
        line = bisect_right(self._lines, last - 1) if self._lines else 0
        col = last - (self._lines[line - 1] if line else -1)
        self.tokens.append(GlotToken(token_type, text, line + 1, col, start, last, []))

    def last_type(self) -> TokenType | None:
        return self.tokens[-1].token_type if self.tokens else None


def glot_tokens(sql: str) -> list[GlotToken]:
    """sqlglot's tokens for ``sql``, from the one lexer's; 42601 (PostgreSQL's wording) on text the
    lexer refuses. Comments are dropped: they never reach the SQL the engine generates. Unlike
    sqlglot's own tokenizer, the words after a command word (SHOW, EXPLAIN, FETCH, REFRESH, ...)
    stay tokens: tidegate's statements begin with some of them (:meth:`Parser._parse_statement`
    reads the others as sqlglot did)."""
    lexed = sqllex.tokenize(sql)
    out = _Out(sql)
    i, n = 0, len(lexed)
    while i < n:
        t = lexed[i]
        kind = t.kind
        if kind in ("ws", "comment"):
            i += 1
            continue
        if kind == "word":
            i = _word(lexed, i, out)
            continue
        if kind == "num":
            if t.text.startswith("."):  # sqlglot reads .5 as a dot and a number (the parser makes 0.5)
                out.add(TokenType.DOT, ".", t.start, t.start + 1)
                out.add(TokenType.NUMBER, t.text[1:], t.start + 1, t.end)
            else:
                out.add(TokenType.NUMBER, t.text, t.start, t.end)
        elif kind == "str":
            _string(t, out)
        elif kind == "qid":
            out.add(TokenType.IDENTIFIER, t.ident or "", t.start, t.end)
        elif kind == "param":
            out.add(TokenType.PARAMETER, "$", t.start, t.start + 1)
            out.add(TokenType.NUMBER, t.text[1:], t.start + 1, t.end)
        elif kind == "cast":
            out.add(TokenType.DCOLON, "::", t.start, t.end)
        elif kind == "op":
            _operator(t, out)
        else:  # punct
            text = t.text
            if text == "..":
                out.add(TokenType.DOT, ".", t.start, t.start + 1)
                out.add(TokenType.DOT, ".", t.start + 1, t.end)
            elif text == ":=":
                out.add(_KEYWORDS[":="], text, t.start, t.end)
            else:
                out.add(_SINGLE[text], text, t.start, t.end)
        i += 1
    return out.tokens


def _word(lexed: list[sqllex.Token], i: int, out: _Out) -> int:
    """One word, or a keyword of several words separated by white space only (``ORDER BY``)."""
    t = lexed[i]
    upper = t.text.upper()
    for phrase in _PHRASES.get(upper, ()):
        j, k = i, 1
        while k < len(phrase) and j + 2 < len(lexed) and lexed[j + 1].kind == "ws" \
                and lexed[j + 2].kind == "word" and lexed[j + 2].text.upper() == phrase[k]:
            j += 2
            k += 1
        if k == len(phrase):
            out.add(_KEYWORDS[" ".join(phrase)], " ".join(phrase), t.start, lexed[j].end)
            return j + 1
    token_type = TokenType.VAR if out.last_type() == TokenType.PARAMETER else _KEYWORDS.get(upper, TokenType.VAR)
    out.add(token_type, t.text, t.start, t.end)
    return i + 1


def _string(t: sqllex.Token, out: _Out) -> None:
    text = t.text
    head = text[0]
    if head == "'":
        out.add(TokenType.STRING, t.value, t.start, t.end)
    elif head == "$":
        out.add(TokenType.HEREDOC_STRING, t.value, t.start, t.end)
    elif head in "uU":  # U&'...': the escapes are read by the parser (with its UESCAPE)
        out.add(TokenType.UNICODE_STRING, sqllex.unicode_body(text), t.start, t.end)
    elif head in "eE":
        out.add(TokenType.BYTE_STRING, t.value, t.start, t.end)
    else:
        out.add(_STRING_PREFIX[head.lower()], t.value, t.start, t.end)


def _operator(t: sqllex.Token, out: _Out) -> None:
    """An operator as sqlglot knows it, or cut into the longest pieces it knows (``!~``: ``!`` ``~``)."""
    text, pos = t.text, 0
    while pos < len(text):
        for size in range(min(_OPERATOR_MAX, len(text) - pos), 0, -1):
            piece = text[pos:pos + size]
            token_type = _OPERATORS.get(piece)
            if token_type is not None:
                out.add(token_type, piece, t.start + pos, t.start + pos + size)
                pos += size
                break
        else:  # pragma: no cover - every operator character is one of sqlglot's single tokens
            raise AssertionError(f"operator character {text[pos]!r}")


# ------------------------------------------------------------------ tidegate's own statements
#
# Parsed by the dialect like any statement, into typed trees the engine routes by their class:
# GreptimeDB's flows and ADMIN, RisingWave's REFRESH TABLE, tidegate's jobs. (The GreptimeDB
# clauses of CREATE TABLE are properties and constraints of sqlglot's own exp.Create.)


class TidegateStatement(exp.Expression):
    """A statement of tidegate's own grammar."""


class CreateFlow(TidegateStatement):
    """``CREATE [OR REPLACE] FLOW [IF NOT EXISTS] name SINK TO table [EXPIRE AFTER 'i'] [EVAL
    INTERVAL 'i'] [COMMENT 'c'] [WITH (k = v, ...)] AS query``; ``query_sql``: the query as written."""

    arg_types = {"this": True, "sink": True, "expression": True, "query_sql": True, "replace": False,
                 "exists": False, "expire_after": False, "eval_interval": False, "comment": False,
                 "options": False}


class DropFlow(TidegateStatement):
    arg_types = {"this": True, "exists": False}


class ShowFlows(TidegateStatement):
    """``SHOW FLOWS [IN | FROM schema] [LIKE 'pattern' | WHERE condition]``."""

    arg_types = {"db": False, "like": False, "where": False}


class ShowCreateFlow(TidegateStatement):
    arg_types = {"this": True}


class ShowFlowStatus(TidegateStatement):
    arg_types = {"like": False}


class CommentOnFlow(TidegateStatement):
    """``COMMENT ON FLOW name IS 'text' | NULL``."""

    arg_types = {"this": True, "expression": True}


class Admin(TidegateStatement):
    """GreptimeDB's ``ADMIN function(args)``: ``this`` is the call."""

    arg_types = {"this": True}


class RefreshTable(TidegateStatement):
    """``REFRESH TABLE name [WAIT]``."""

    arg_types = {"this": True, "wait": False}


class ShowRefreshStatus(TidegateStatement):
    arg_types: dict[str, bool] = {}


class SubmitJob(TidegateStatement):
    """``SUBMIT JOB [name] [WITH (option = value, ...)] AS statement``: ``expression`` is the
    statement's text, which the job runs later through the dialect like any statement."""

    arg_types = {"this": False, "options": False, "expression": True}


class ShowJobs(TidegateStatement):
    arg_types: dict[str, bool] = {}


class FetchJob(TidegateStatement):
    """``FETCH JOB 'id'``: ``this`` a string literal (or a parameter, which is refused: the result
    columns are the job's)."""

    arg_types = {"this": True}


class WaitJob(TidegateStatement):
    """``WAIT JOB 'id' | $n [TIMEOUT 'duration']``."""

    arg_types = {"this": True, "timeout": False}


class CancelJob(TidegateStatement):
    arg_types = {"this": True}


# GreptimeDB's clauses of CREATE TABLE, and PostgreSQL's that sqlglot does not read: parts of
# sqlglot's own exp.Create (column constraints, schema elements and table properties).


class TimeIndexColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``ts timestamp TIME INDEX``, or the table element ``TIME INDEX (ts)``."""

    arg_types = {"expressions": False}


class IdentityColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(sequence options)]``: ``this`` is True for
    ALWAYS; ``options`` the sequence options' text, read as CREATE SEQUENCE reads its own."""

    arg_types = {"this": True, "options": False}


class OptionsProperty(exp.Property):
    """``WITH (key [= value], ...)``: the table's options (GreptimeDB's ttl, append_mode, a
    refreshable table's connector settings)."""

    arg_types = {"expressions": True}


class FormatEncodeProperty(exp.Property):
    """``FORMAT PLAIN ENCODE CSV [(key = value, ...)]`` of a refreshable table (RisingWave's)."""

    arg_types = {"this": True, "encode": True, "options": False}


class PartitionOnColumnsProperty(exp.Property):
    """GreptimeDB's ``PARTITION ON COLUMNS (cols) (rules)``."""

    arg_types = {"expressions": True, "rules": False}


class OnCommitDropProperty(exp.Property):
    """``ON COMMIT DROP`` of a temporary table (sqlglot reads PRESERVE ROWS and DELETE ROWS only)."""

    arg_types: dict[str, bool] = {}


# ------------------------------------------------------------------ the parser

# PostgreSQL's reserved keywords sqlglot reads as plain words (names, unless quoted): never a bare
# name there. (CAST, USER and CURRENT_ROLE are read as the functions they are.)
_RESERVED_WORDS = frozenset(w for w, category in pg_keywords.CATEGORY.items() if category == "R") - {
    "cast", "user", "current_role"}
# Statements sqlglot keeps as text (a command word and the rest as one string)
_COMMAND_TOKENS = Postgres.Tokenizer.COMMANDS
_TEXT_TOKENS = {TokenType.STRING, TokenType.BYTE_STRING, TokenType.HEREDOC_STRING, TokenType.NATIONAL_STRING}
_JOB_REFERENCE_TOKENS = _TEXT_TOKENS | {TokenType.PARAMETER}



_T = exp.DataType.Type
INTEGER_TYPES = {_T.TINYINT, _T.SMALLINT, _T.INT, _T.BIGINT}
FLOAT_TYPES = {_T.FLOAT, _T.DOUBLE}
NUMERIC_OPERAND_TYPES = INTEGER_TYPES | {_T.DECIMAL}

def _date_bin_call(args: list) -> exp.Expression:
    if len(args) not in (2, 3):
        return exp.Anonymous(this="date_bin", expressions=args)  # refused with 42883 by check_functions
    node = exp.DateBin(this=args[0], expression=args[1])
    if len(args) == 3:
        node.set("unit", args[2])
    return node


# PostgreSQL's column labels (gram.y ColLabel / BareColLabel, pg_get_keywords().barelabel): any
# keyword may follow AS; without AS these keywords are never a label ...
_PG_AS_ONLY_LABELS = pg_keywords.REQUIRES_AS
# ... and these reserved keywords are bare labels, which sqlglot would not take as an alias (the
# ones it has tokens of its own for, and every reserved word :meth:`Parser._parse_id_var` refuses).
_PG_RESERVED_BARE_LABELS = frozenset(
    "alter cross distinct drop else inner insert join lateral only outer revoke rollback select "
    "tablesample then using values variadic when".split()) | (_RESERVED_WORDS - _PG_AS_ONLY_LABELS)
# What may follow a bare label in a select list.
_AFTER_LABEL = frozenset({"SENTINEL", "COMMA", "FROM", "R_PAREN", "SEMICOLON", "INTO", "UNION", "EXCEPT", "INTERSECT",
                          "WHERE", "GROUP_BY", "ORDER_BY", "LIMIT", "HAVING", "WINDOW", "OFFSET", "FETCH"})


class Parser(PostgresParser):
    _pg_projection = False
    # PostgreSQL has no lambdas: f(j -> 'k') is json's -> inside a call (sqlglot read a lambda);
    # => stays the named-argument arrow (make_interval(days => 1))
    LAMBDAS = {k: v for k, v in PostgresParser.LAMBDAS.items() if k != TokenType.ARROW}
    # U&'d\0061t' [UESCAPE '!']: its value, as a plain string (no evaluator has to know the form;
    # Spark's parser did not: 42601)
    PRIMARY_PARSERS = {**PostgresParser.PRIMARY_PARSERS,
                       TokenType.UNICODE_STRING: lambda self, token: self._unicode_string(token)}

    def _unicode_string(self, token: GlotToken) -> exp.Expression:
        escape = self._parse_string() if self._match_text_seq("UESCAPE") else None
        value = sqllex.unicode_value(token.text, escape.name if isinstance(escape, exp.Literal) else "\\")
        return self.expression(exp.Literal(this=value, is_string=True), token)

    # -- PostgreSQL's grammar where sqlglot's is more lenient -----------------------------------

    def _parse_id_var(self, any_token: bool = True, tokens: Any = None) -> Any:
        """A name: never one of PostgreSQL's reserved keywords written bare (``FROM t GROUP``, ``FROM
        t AS order`` are syntax errors there), but after a dot (``t.order``) and as a select-list
        label after AS (:meth:`_parse_alias`)."""
        curr = self._curr
        if curr and curr.token_type == TokenType.VAR and curr.text.lower() in _RESERVED_WORDS \
                and not (self._prev and self._prev.token_type == TokenType.DOT):
            return None
        return super()._parse_id_var(any_token=any_token, tokens=tokens)

    def raise_error(self, message: str, token: Any = None) -> None:
        token = token or self._curr or self._prev
        if token and token.token_type == TokenType.VAR and token.text.upper() in ("ORDER", "GROUP"):
            # PostgreSQL reads ORDER / GROUP as the start of ORDER BY / GROUP BY and reports the
            # token after it ("ORDER id": at "id"; "FROM t GROUP": at the end of input)
            later = [t for t in self._tokens if t.start > token.start]
            token = later[0] if later else GlotToken(TokenType.STRING, "", token.line, token.col,
                                                     len(self.sql), len(self.sql))
        super().raise_error(message, token)

    def _parse_insert(self) -> Any:
        insert = super()._parse_insert()
        if isinstance(insert, exp.Insert) and insert.expression is None and not insert.args.get("default"):
            self.raise_error("Expecting VALUES, a query or DEFAULT VALUES")  # INSERT INTO t: nothing to insert
        return insert

    def _parse_update(self) -> exp.Update:
        update = super()._parse_update()
        if not update.expressions:
            self.raise_error("Expecting SET column = value")  # UPDATE t SET: nothing to set
        return update

    def _parse_projections(self) -> Any:
        saved, self._pg_projection = getattr(self, "_pg_projection", False), True
        try:
            return super()._parse_projections()
        finally:
            self._pg_projection = saved

    def _parse_select(self, *args: Any, **kwargs: Any) -> Any:
        # a nested query's clauses are not the select list around it
        saved, self._pg_projection = getattr(self, "_pg_projection", False), False
        try:
            return super()._parse_select(*args, **kwargs)
        finally:
            self._pg_projection = saved

    def _parse_alias(self, this: Any, explicit: bool = False) -> Any:
        """Select-list labels as PostgreSQL reads them (keywords after AS; bare labels)."""
        curr = self._curr
        if not getattr(self, "_pg_projection", False) or this is None or curr is None or curr.token_type in (
                TokenType.IDENTIFIER, TokenType.STRING):
            return super()._parse_alias(this, explicit)
        word = curr.text.lower()
        if curr.token_type == TokenType.ALIAS and self._next is not None \
                and (self._next.token_type not in (TokenType.IDENTIFIER, TokenType.STRING, TokenType.VAR)
                     or self._next.text.lower() in _RESERVED_WORDS) \
                and self._next.text.isidentifier():
            # AS <any keyword>
            self._advance(2)
            return self.expression(exp.Alias(this=this, alias=exp.to_identifier(self._prev.text.lower())))
        if word in _PG_AS_ONLY_LABELS and curr.token_type != TokenType.ALIAS:
            return this
        if word in _PG_RESERVED_BARE_LABELS:
            after = self._next
            if after is None or after.token_type.name in _AFTER_LABEL:
                self._advance()
                return self.expression(exp.Alias(this=this, alias=exp.to_identifier(word)))
        return super()._parse_alias(this, explicit)

    # date_part() must stay distinguishable from EXTRACT (different result type and name).
    FUNCTION_PARSERS = {k: v for k, v in PostgresParser.FUNCTION_PARSERS.items() if k != "DATE_PART"}
    # to_char templates are translated by engine.functions.to_char_format (AM/PM, FM, quoting).
    FUNCTIONS = {k: v for k, v in PostgresParser.FUNCTIONS.items() if k != "TO_CHAR"}
    # date_bin(stride, source, origin): sqlglot's DateBin turns a third argument that is a string
    # or a column into a unit name ('2021-07-01 00:00:00' became an unquoted word); keep it as the
    # expression written (the translator reads the origin under "unit").
    FUNCTIONS["DATE_BIN"] = lambda args: _date_bin_call(args)

    # PostgreSQL reads ``timestamp '2024-07-01'::timestamptz`` as (timestamp '2024-07-01')::timestamptz:
    # the type name binds to its string before any ``::``. sqlglot applies the ``::`` to the bare
    # string first (timestamp ('2024-07-01'::timestamptz)); the operators after the literal are
    # deferred here until the typed literal is built.
    _defer_literal_ops = False

    def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False) -> Any:
        saved = self._defer_literal_ops
        self._defer_literal_ops = True
        self._deferred = False
        try:
            result = super()._parse_type(parse_interval=parse_interval, fallback_to_identifier=fallback_to_identifier)
        finally:
            self._defer_literal_ops = saved
        if self._deferred:
            self._deferred = False
            return self._parse_column_ops(result)
        return result

    def _parse_is(self, this: Any) -> Any:
        """``a IS NULL || b`` is ``(a IS NULL) || b`` in PostgreSQL: the postfix test is complete
        and the operator applies to its result (sqlglot's ``||`` binds tighter, so it stopped)."""
        result = super()._parse_is(this)
        while result is not None and self._match(TokenType.DPIPE):
            result = self.expression(exp.DPipe(this=exp.paren(result, copy=False), expression=self._parse_term(),
                                               safe=not self.dialect.STRICT_STRING_CONCAT))
        return result

    def _parse_is_rhs(self, distinct: bool = False) -> Any:
        if not distinct and self._match_set((TokenType.TRUE, TokenType.FALSE)):  # IS TRUE || x: not TRUE || x
            return self.expression(exp.Boolean(this=self._prev.token_type == TokenType.TRUE))
        return super()._parse_is_rhs(distinct)

    def _parse_column_ops(self, this: Any) -> Any:
        if self._defer_literal_ops and isinstance(this, exp.Literal) and self._prev is not None \
                and self._index >= 2 and self._tokens[self._index - 2].token_type in self.TYPE_TOKENS:
            self._defer_literal_ops = False
            self._deferred = True
            return this
        return super()._parse_column_ops(this)

    # Other dialects write a sum of intervals as INTERVAL '1' DAY [+] '2' HOUR, which sqlglot reads
    # as such; PostgreSQL has no such form: ``interval '1 day' + 1`` is interval + integer (an
    # error) and ``interval '1 day' + '1'`` is interval + unknown. The interval ends at its span.
    _span_ends: list[int] | None = None

    def _parse_interval(self, require_interval: bool = True, parse_function_unit: bool = True) -> Any:
        outer = self._span_ends
        self._span_ends = ends = []
        try:
            result = super()._parse_interval(require_interval=require_interval,
                                             parse_function_unit=parse_function_unit)
        finally:
            self._span_ends = outer
        if isinstance(result, exp.Add) and isinstance(result.this, exp.Interval) and ends:
            self._retreat(ends[0])
            return result.this
        return result

    def _parse_interval_span(self, this: exp.Expression, parse_function_unit: bool = True) -> exp.Interval:
        # sqlglot keeps only the first "<n> <unit>" of '3 days 04:05:06': keep the whole text then.
        interval = super()._parse_interval_span(this, parse_function_unit=parse_function_unit)
        if self._span_ends is not None:
            self._span_ends.append(self._index)
        if this is not None and this.is_string and interval.this is not this:
            text = this.name
            parts = exp.INTERVAL_STRING_RE.findall(text)
            if len(parts) == 1 and not exp.INTERVAL_STRING_RE.fullmatch(text):
                interval.set("this", this)
                interval.set("unit", None)
                interval.set("fraction_in_string", None)
        return interval


    # -- tidegate's statements ---------------------------------------------------------------

    def _parse_statement(self) -> Any:
        if not self._curr:
            return None
        parse = self._tidegate_statement()
        if parse is not None:
            return parse(self)
        if self._curr.token_type in _COMMAND_TOKENS:
            return self._parse_command_text()
        return super()._parse_statement()

    def _word(self, k: int = 0) -> str:
        """The word ``k`` tokens ahead, upper-cased ('' for strings, quoted names and the end)."""
        j = self._index + k
        if j >= len(self._tokens):
            return ""
        tok = self._tokens[j]
        return "" if tok.token_type in self.TEXT_MATCH_EXCLUDED_TOKENS or tok.token_type == TokenType.IDENTIFIER \
            else tok.text.upper()

    def _tidegate_statement(self) -> Callable[[Parser], exp.Expression] | None:
        first, second, third = self._word(0), self._word(1), self._word(2)
        if first == "CREATE" and (second == "FLOW" or (second, third, self._word(3)) == ("OR", "REPLACE", "FLOW")):
            return Parser._parse_create_flow
        if first == "DROP" and second == "FLOW":
            return Parser._parse_drop_flow
        if first == "SHOW":
            if second in ("FLOWS", "FLOW") or (second, third) == ("CREATE", "FLOW"):
                return Parser._parse_show_flows
            if (second, third) == ("REFRESH", "STATUS"):
                return Parser._parse_show_refresh_status
            if second == "JOBS":
                return Parser._parse_show_jobs
        if first == "ADMIN":
            return Parser._parse_admin
        if first == "COMMENT" and (second, third) == ("ON", "FLOW"):
            return Parser._parse_comment_on_flow
        if first == "REFRESH" and second == "TABLE":
            return Parser._parse_refresh_table
        if second == "JOB":
            if first == "SUBMIT":
                return Parser._parse_submit_job
            if first in ("WAIT", "CANCEL"):
                return Parser._parse_job_command
            nxt = self._tokens[self._index + 2] if self._index + 2 < len(self._tokens) else None
            if first == "FETCH" and nxt is not None and nxt.token_type in _JOB_REFERENCE_TOKENS:
                return Parser._parse_job_command  # (FETCH job: a cursor named job)
        return None

    def _parse_command_text(self) -> exp.Command:
        """A statement sqlglot keeps as text (SHOW, EXPLAIN, FETCH, ...): the command word and the
        rest as one string, as sqlglot's own tokenizer gives it."""
        start = self._curr
        self._advance()
        rest = ""
        if self._curr:
            while self._curr:
                self._advance()
            rest = self.sql[start.end + 1:self._prev.end + 1].strip()
        return self.expression(exp.Command(this=start.text.upper(),
                                           expression=exp.Literal.string(rest) if rest else None))

    def _expect(self, *words: str) -> None:
        for word in words:  # the error names the first token that is not the word
            if not self._match_text_seq(word):
                self.raise_error(f"Expecting {word}")

    def _parse_name(self) -> exp.Table:
        """A possibly qualified name (``f``, ``s.f``, ``db.s.f``)."""
        name = self._parse_table_parts()
        if not isinstance(name, exp.Table) or not name.name:
            self.raise_error("Expecting a name")
        return name

    def _parse_text(self, required: bool = True) -> exp.Literal | None:
        """A string literal of any spelling ('', E'', $$, N'') as a string Literal."""
        if self._match_set(_TEXT_TOKENS):
            return self.expression(exp.Literal.string(self._prev.text), token=self._prev)
        if required:
            self.raise_error("Expecting a string")
        return None

    def _parse_options(self) -> list[exp.Property]:
        """``( key [= value], ... )``: keys are names or strings; a value is one string, word or
        (signed) number, and a key alone is set to 'true'."""
        self._match_l_paren()
        options: list[exp.Property] = []
        while not self._match(TokenType.R_PAREN):
            if options:
                self._match(TokenType.COMMA) or self.raise_error("Expecting , or )")
            if not self._curr or self._curr.token_type in (TokenType.COMMA, TokenType.R_PAREN):
                self.raise_error("Expecting an option name")
            key = self._curr
            self._advance()
            name = key.text if key.token_type in _TEXT_TOKENS or key.token_type == TokenType.IDENTIFIER \
                else key.text.lower()
            if self._curr and self._curr.token_type in (TokenType.COMMA, TokenType.R_PAREN):
                value = exp.Literal.string("true")  # WITH (key): a flag set
            else:
                self._match(TokenType.EQ)
                if not self._curr or self._curr.token_type in (TokenType.COMMA, TokenType.R_PAREN):
                    self.raise_error("Expecting an option value")
                token = self._curr
                self._advance()
                text = token.text
                if token.token_type in (TokenType.DASH, TokenType.PLUS) and self._curr \
                        and self._curr.token_type == TokenType.NUMBER:  # a signed number
                    text = ("-" if token.token_type == TokenType.DASH else "") + self._curr.text
                    self._advance()
                value = self.expression(exp.Literal.string(text), token=token)
            options.append(self.expression(exp.Property(this=exp.Literal.string(name), value=value), token=key))
        return options

    def _parse_like_pattern(self) -> exp.Literal | None:
        return self._parse_text() if self._match(TokenType.LIKE) else None

    def _parse_create_flow(self) -> CreateFlow:
        self._advance()  # CREATE
        replace = self._match_text_seq("OR", "REPLACE")
        self._advance()  # FLOW
        exists = self._match_text_seq("IF", "NOT", "EXISTS")
        if replace and exists:
            raise SqlError("42601", "CREATE OR REPLACE FLOW cannot be combined with IF NOT EXISTS",
                           hint="Use either OR REPLACE (replace an existing flow) or IF NOT EXISTS (keep it).")
        name = self._parse_name()
        self._expect("SINK", "TO")
        sink = self._parse_name()
        expire = self._parse_flow_interval("EXPIRE", "AFTER")
        every = self._parse_flow_interval("EVAL", "INTERVAL")
        comment = self._parse_text() if self._match_text_seq("COMMENT") else None
        options = self._parse_options() if self._match(TokenType.WITH) else None
        if not self._match(TokenType.ALIAS):
            self.raise_error("Expecting AS")
        start = self._curr
        query = self._parse_select(nested=True)
        if not isinstance(query, exp.Query):
            self.raise_error("Expecting a query")
        return self.expression(CreateFlow(
            this=name, sink=sink, expression=query, query_sql=self._find_sql(start, self._prev),
            replace=replace, exists=exists, expire_after=expire, eval_interval=every, comment=comment,
            options=options))

    def _parse_flow_interval(self, *clause: str) -> exp.Literal | None:
        """``EXPIRE AFTER [INTERVAL] 'text'`` / ``EVAL INTERVAL [INTERVAL] 'text'``."""
        if not self._match_text_seq(*clause):
            return None
        self._match(TokenType.INTERVAL)
        return self._parse_text()

    def _parse_drop_flow(self) -> DropFlow:
        self._advance(2)  # DROP FLOW
        exists = self._match_text_seq("IF", "EXISTS")
        return self.expression(DropFlow(this=self._parse_name(), exists=exists))

    def _parse_show_flows(self) -> exp.Expression:
        self._advance()  # SHOW
        if self._match_text_seq("CREATE", "FLOW"):
            return self.expression(ShowCreateFlow(this=self._parse_name()))
        if self._match_text_seq("FLOW", "STATUS"):
            return self.expression(ShowFlowStatus(like=self._parse_like_pattern()))
        self._expect("FLOWS")
        db = self._parse_name() if self._match_set((TokenType.IN, TokenType.FROM)) else None
        like = self._parse_like_pattern()
        where = None
        if like is None and self._match(TokenType.WHERE):
            where = self._parse_assignment()
            if where is None:
                self.raise_error("Expecting a condition")
        return self.expression(ShowFlows(db=db, like=like, where=where))

    def _parse_comment_on_flow(self) -> CommentOnFlow:
        self._advance(3)  # COMMENT ON FLOW
        name = self._parse_name()
        self._expect("IS")
        text = exp.Null() if self._match(TokenType.NULL) else self._parse_text()
        return self.expression(CommentOnFlow(this=name, expression=text))

    def _parse_admin(self) -> Admin:
        self._advance()  # ADMIN
        call = self._parse_function()
        if not isinstance(call, exp.Func):
            self.raise_error("Expecting a function call: ADMIN function(arguments)")
        return self.expression(Admin(this=call))

    def _parse_refresh_table(self) -> RefreshTable:
        self._advance(2)  # REFRESH TABLE
        name = self._parse_name()
        return self.expression(RefreshTable(this=name, wait=self._match_text_seq("WAIT")))

    def _parse_show_refresh_status(self) -> ShowRefreshStatus:
        self._advance(3)
        return self.expression(ShowRefreshStatus())

    def _parse_show_jobs(self) -> ShowJobs:
        self._advance(2)
        return self.expression(ShowJobs())

    def _parse_submit_job(self) -> SubmitJob:
        self._advance(2)  # SUBMIT JOB
        name = None
        if self._curr and self._curr.token_type not in (TokenType.WITH, TokenType.ALIAS):
            name = self._parse_text(required=False) or self._parse_id_var(any_token=False)
            if name is None:
                self.raise_error("Expecting a job name, WITH or AS")
        options = self._parse_options() if self._match(TokenType.WITH) else None
        if not self._match(TokenType.ALIAS):
            self.raise_error("Expecting AS")
        if not self._curr:
            self.raise_error("Expecting a statement")
        start = self._curr
        while self._curr:  # the job runs this text later, through the dialect like any statement
            self._advance()
        return self.expression(SubmitJob(this=name, options=options,
                                         expression=exp.Literal.string(self._find_sql(start, self._prev))))

    def _parse_job_command(self) -> exp.Expression:
        verb = self._curr.text.upper()
        self._advance(2)  # FETCH | WAIT | CANCEL JOB
        if self._match_set(_TEXT_TOKENS, advance=False):
            job = self._parse_text()
        else:
            job = self._parse_placeholder()
            if not isinstance(job, exp.Parameter):
                self.raise_error("Expecting a job id: a string literal")
        if verb == "FETCH":
            return self.expression(FetchJob(this=job))
        if verb == "CANCEL":
            return self.expression(CancelJob(this=job))
        timeout = None
        if self._match_text_seq("TIMEOUT"):
            if self._match(TokenType.NUMBER):
                timeout = self.expression(exp.Literal.number(self._prev.text), token=self._prev)
            else:
                timeout = self._parse_text()
        return self.expression(WaitJob(this=job, timeout=timeout))

    # -- CREATE TABLE: GreptimeDB's clauses and PostgreSQL's that sqlglot lacks ------------------

    CONSTRAINT_PARSERS = {**PostgresParser.CONSTRAINT_PARSERS,
                          "TIME": lambda self: self._parse_time_index(),
                          "GENERATED": lambda self: self._parse_generated_identity()}
    SCHEMA_UNNAMED_CONSTRAINTS = {*PostgresParser.SCHEMA_UNNAMED_CONSTRAINTS, "TIME"}
    PROPERTY_PARSERS = {**PostgresParser.PROPERTY_PARSERS,
                        "FORMAT": lambda self: self._parse_format_encode(),
                        "PARTITION": lambda self: self._parse_partition_on_columns(),
                        "ON": lambda self: self._parse_on_commit_drop()}

    def _parse_as_command(self, start: GlotToken) -> exp.Command:
        """sqlglot keeps a statement it cannot read as text; a CREATE TABLE it cannot read is
        PostgreSQL's 42601 at the first token it could not read, never a statement passed on."""
        if start.token_type == TokenType.CREATE and self._curr and \
                "TABLE" in [self._tokens[k].text.upper() for k in range(1, min(4, len(self._tokens)))]:
            self.raise_error("Unexpected token")
        return super()._parse_as_command(start)

    def _parse_time_index(self) -> TimeIndexColumnConstraint | None:
        if not self._match_text_seq("INDEX"):
            self._retreat(self._index - 1)  # "time": a column's name or type
            return None
        columns = self._parse_wrapped_id_vars() if self._match(TokenType.L_PAREN, advance=False) else None
        return self.expression(TimeIndexColumnConstraint(expressions=columns))

    def _parse_generated_identity(self) -> exp.Expression:
        index = self._index
        always = not self._match_text_seq("BY", "DEFAULT")
        if not (always and self._match_text_seq("ALWAYS", "AS", "IDENTITY")) and \
                not (not always and self._match_text_seq("AS", "IDENTITY")):
            self._retreat(index)
            return self._parse_generated_as_identity()  # sqlglot's: generated (computed) columns
        options = None
        if self._match(TokenType.L_PAREN):
            start, depth = self._curr, 1
            while self._curr and depth:
                depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(self._curr.token_type, 0)
                self._advance()
            if depth:
                self.raise_error("Expecting )")
            last = self._tokens[self._index - 2]
            options = self.sql[start.start:last.end + 1] if last is not start or start.token_type != TokenType.R_PAREN \
                else ""
        return self.expression(IdentityColumnConstraint(this=always, options=options))

    def _parse_with_property(self) -> Any:
        if self._match(TokenType.L_PAREN, advance=False) and self._next.text.upper() != "SYSTEM_VERSIONING":
            return self.expression(OptionsProperty(expressions=self._parse_options()))
        return super()._parse_with_property()

    def _parse_format_encode(self) -> exp.Expression:
        if self._match(TokenType.EQ, advance=False):
            return self._parse_property_assignment(exp.FileFormatProperty)
        fmt = self._parse_var(any_token=True, upper=True)
        self._expect("ENCODE")
        encode = self._parse_var(any_token=True, upper=True)
        options = self._parse_options() if self._match(TokenType.L_PAREN, advance=False) else None
        return self.expression(FormatEncodeProperty(this=fmt, encode=encode, options=options))

    def _parse_partition_on_columns(self) -> exp.Expression | None:
        if not self._match_text_seq("ON", "COLUMNS"):
            return self._parse_partitioned_of()
        columns = self._parse_wrapped_id_vars()
        rules = self._parse_wrapped_csv(self._parse_assignment) if self._match(TokenType.L_PAREN, advance=False) \
            else None
        return self.expression(PartitionOnColumnsProperty(expressions=columns, rules=rules))

    def _parse_on_commit_drop(self) -> exp.Expression | None:
        if self._match_text_seq("COMMIT", "DROP"):
            return self.expression(OnCommitDropProperty())
        return self._parse_on_property()

# Meta key of an integer-valued numeric constant written out in digits (engine.translate): numeric,
# though it looks like an integer.
NUMERIC_CONSTANT = "pg_numeric"


def _annotate_literal(annotator: Any, literal: exp.Literal) -> exp.Literal:
    """PostgreSQL literal typing: 2.5 is numeric (not double); big integers are bigint; a
    numeric written with an exponent (``1e10``, kept as digits: NUMERIC_CONSTANT) is numeric."""
    if literal.is_string:
        annotator._set_type(literal, exp.DataType.Type.VARCHAR)
    else:
        text = literal.name
        if re.fullmatch(r"\d+", text) and not literal.meta.get(NUMERIC_CONSTANT):
            value = int(text)
            kind = "INT" if value < 2**31 else ("BIGINT" if value < 2**63 else "DECIMAL")
            annotator._set_type(literal, exp.DataType.build(kind))
        else:
            annotator._set_type(literal, exp.DataType.build("DECIMAL"))
    literal.meta["nonnull"] = True
    return literal


def negated_literal(node: exp.Expression) -> int | None:
    """The value of minus signs before an integer literal (parentheses between them allowed), which
    PostgreSQL's grammar folds into the constant: ``-2147483648`` and ``-(2147483648)`` are
    integers, ``-(-2147483648)`` a bigint. None: ``node`` is not one."""
    sign = 1
    seen = False
    while isinstance(node, (exp.Neg, exp.Paren)):
        if isinstance(node, exp.Neg):
            sign, seen = -sign, True
        node = node.this
    if not seen or not isinstance(node, exp.Literal) or node.is_string:
        return None
    text = node.name
    return sign * int(text) if text.isascii() and text.isdigit() else None


def _annotate_neg(annotator: Any, node: exp.Neg) -> exp.Neg:
    """A negated integer literal is typed by its value, as PostgreSQL folds it (:func:`negated_literal`):
    ``-2147483648 / -1`` overflows integer as in PostgreSQL."""
    annotator._annotate_by_args(node, "this")
    value = negated_literal(node)
    if value is not None:
        kind = "INT" if -(2**31) <= value < 2**31 else ("BIGINT" if -(2**63) <= value < 2**63 else "DECIMAL")
        annotator._set_type(node, exp.DataType.build(kind))
    return node


def _annotate_sum(annotator: Any, node: exp.Sum) -> exp.Sum:
    """PostgreSQL's sum() result types: smallint and integer sum to bigint, bigint and numeric to
    numeric (sqlglot keeps the argument's type, which made ``x / sum(x)`` an integer division)."""
    annotator._annotate_by_args(node, "this", "expressions", promote=True)
    arg = node.this.type.this if isinstance(node.this.type, exp.DataType) else None
    if arg in (exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT):
        annotator._set_type(node, exp.DataType.Type.BIGINT)
    elif arg == exp.DataType.Type.BIGINT:
        annotator._set_type(node, exp.DataType.Type.DECIMAL)
    return node


# PostgreSQL's string functions and || return text; sqlglot says varchar, which a view or subquery
# then passed on as "character varying" (a CREATE TABLE AS over a view typed its columns wrongly).
_TEXT_RESULTS = {kind: {**meta, "returns": exp.DataType.Type.TEXT}
                 for kind, meta in Postgres.EXPRESSION_METADATA.items()
                 if meta.get("returns") == exp.DataType.Type.VARCHAR}


ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


def _float_arithmetic(kind: type[exp.Expression]) -> Callable[[Any, exp.Expression], exp.Expression]:
    """PostgreSQL's result type when a float takes part: arithmetic is double precision unless both
    operands are real (real op integer / numeric resolves to the float8 operator); coalesce /
    greatest / least are real when their floats are, else double. sqlglot lets a numeric(p,s)
    operand win over the float."""
    base = Postgres.EXPRESSION_METADATA[kind]["annotator"]

    def annotate(annotator: Any, node: exp.Expression) -> exp.Expression:
        node = base(annotator, node)
        if isinstance(node, exp.Binary):
            # an untyped string literal takes the integer operand's type (PostgreSQL's unknown):
            # 1 + '5' is an integer
            for lit, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(lit, exp.Literal) and lit.is_string and isinstance(other.type, exp.DataType) \
                        and other.type.this in INTEGER_TYPES:
                    annotator._set_type(node, other.type.copy())
                    return node
        operands = (node.left, node.right) if isinstance(node, exp.Binary) else \
            [a for a in [node.this, *node.expressions] if not isinstance(a, exp.Null)]
        kinds = [o.type.this if isinstance(o.type, exp.DataType) else None for o in operands]
        if set(kinds) <= FLOAT_TYPES | NUMERIC_OPERAND_TYPES and set(kinds) & FLOAT_TYPES:
            real = exp.DataType.Type.DOUBLE not in kinds and (
                not isinstance(node, exp.Binary) or kinds == [exp.DataType.Type.FLOAT, exp.DataType.Type.FLOAT])
            annotator._set_type(node, exp.DataType.Type.FLOAT if real else exp.DataType.Type.DOUBLE)
        return node

    return annotate


def _annotate_trunc(annotator: Any, node: exp.Expression) -> exp.Expression:
    """date_trunc(unit, timestamp[tz]) has its argument's type (sqlglot leaves it unknown, and a
    date_trunc of a date_trunc of a timestamp was then read as a timestamptz)."""
    base = Postgres.EXPRESSION_METADATA.get(type(node), {}).get("annotator")
    node = base(annotator, node) if base else node
    arg = node.this.type if isinstance(node.this, (exp.TimestampTrunc, exp.Column, exp.Cast)) else None
    if isinstance(arg, exp.DataType) and arg.this in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ,
                                                       exp.DataType.Type.TIMESTAMPNTZ):
        annotator._set_type(node, arg)
    elif node.type is None:
        annotator._set_type(node, exp.DataType.Type.UNKNOWN)
    return node


# ------------------------------------------------------------------ writing them back


def _option_key(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_.]*", name) else exp.Literal.string(name).sql(dialect=Postgres)


def _options_sql(gen: Any, options: list[exp.Property] | None) -> str:
    if options is None:
        return ""
    inner = ", ".join(f"{_option_key(p.this.name)} = {gen.sql(p, 'value')}" for p in options)
    return f" WITH ({inner})"


def _clause(gen: Any, node: exp.Expression, key: str, words: str) -> str:
    value = node.args.get(key)
    return f" {words} {gen.sql(value)}" if value is not None else ""


def _create_flow_sql(gen: Any, e: CreateFlow) -> str:
    head = "CREATE OR REPLACE FLOW " if e.args.get("replace") else "CREATE FLOW "
    if e.args.get("exists"):
        head += "IF NOT EXISTS "
    return (f"{head}{gen.sql(e, 'this')} SINK TO {gen.sql(e, 'sink')}"
            f"{_clause(gen, e, 'expire_after', 'EXPIRE AFTER')}{_clause(gen, e, 'eval_interval', 'EVAL INTERVAL')}"
            f"{_clause(gen, e, 'comment', 'COMMENT')}{_options_sql(gen, e.args.get('options'))}"
            f" AS {gen.sql(e, 'expression')}")


def _show_flows_sql(gen: Any, e: ShowFlows) -> str:
    return (f"SHOW FLOWS{_clause(gen, e, 'db', 'IN')}{_clause(gen, e, 'like', 'LIKE')}"
            f"{_clause(gen, e, 'where', 'WHERE')}")


def _wait_job_sql(gen: Any, e: WaitJob) -> str:
    return f"WAIT JOB {gen.sql(e, 'this')}{_clause(gen, e, 'timeout', 'TIMEOUT')}"


def _submit_job_sql(gen: Any, e: SubmitJob) -> str:
    name = f" {gen.sql(e, 'this')}" if e.args.get("this") is not None else ""
    return f"SUBMIT JOB{name}{_options_sql(gen, e.args.get('options'))} AS {e.expression.name}"


def _time_index_sql(gen: Any, e: TimeIndexColumnConstraint) -> str:
    columns = e.expressions
    return "TIME INDEX" + (f" ({gen.expressions(e, flat=True)})" if columns else "")


def _identity_sql(gen: Any, e: IdentityColumnConstraint) -> str:
    options = e.args.get("options")
    return (f"GENERATED {'ALWAYS' if e.this else 'BY DEFAULT'} AS IDENTITY"
            + (f" ({options})" if options is not None else ""))


def _format_encode_sql(gen: Any, e: FormatEncodeProperty) -> str:
    options = _options_sql(gen, e.args.get("options"))
    return f"FORMAT {gen.sql(e, 'this')} ENCODE {gen.sql(e, 'encode')}{options[len(' WITH'):]}"


def _partition_on_columns_sql(gen: Any, e: PartitionOnColumnsProperty) -> str:
    rules = e.args.get("rules")
    return (f"PARTITION ON COLUMNS ({gen.expressions(e, flat=True)})"
            + (f" ({', '.join(gen.sql(r) for r in rules)})" if rules else ""))


class Generator(Postgres.Generator):
    """PostgreSQL as sqlglot writes it, and tidegate's statements (text in, text out)."""

    # columns as written: sqlglot writes SERIAL as an identity column, which PostgreSQL's is not
    TRANSFORMS = {
        **{kind: f for kind, f in Postgres.Generator.TRANSFORMS.items() if kind is not exp.ColumnDef},
        CreateFlow: _create_flow_sql,
        DropFlow: lambda gen, e: f"DROP FLOW {'IF EXISTS ' if e.args.get('exists') else ''}{gen.sql(e, 'this')}",
        ShowFlows: _show_flows_sql,
        ShowCreateFlow: lambda gen, e: f"SHOW CREATE FLOW {gen.sql(e, 'this')}",
        ShowFlowStatus: lambda gen, e: f"SHOW FLOW STATUS{_clause(gen, e, 'like', 'LIKE')}",
        CommentOnFlow: lambda gen, e: f"COMMENT ON FLOW {gen.sql(e, 'this')} IS {gen.sql(e, 'expression')}",
        Admin: lambda gen, e: f"ADMIN {gen.sql(e, 'this')}",
        RefreshTable: lambda gen, e: f"REFRESH TABLE {gen.sql(e, 'this')}{' WAIT' if e.args.get('wait') else ''}",
        ShowRefreshStatus: lambda gen, e: "SHOW REFRESH STATUS",
        SubmitJob: _submit_job_sql,
        ShowJobs: lambda gen, e: "SHOW JOBS",
        FetchJob: lambda gen, e: f"FETCH JOB {gen.sql(e, 'this')}",
        WaitJob: _wait_job_sql,
        CancelJob: lambda gen, e: f"CANCEL JOB {gen.sql(e, 'this')}",
        TimeIndexColumnConstraint: _time_index_sql,
        IdentityColumnConstraint: _identity_sql,
        OptionsProperty: lambda gen, e: _options_sql(gen, e.expressions).lstrip(),
        FormatEncodeProperty: _format_encode_sql,
        PartitionOnColumnsProperty: _partition_on_columns_sql,
        OnCommitDropProperty: lambda gen, e: "ON COMMIT DROP",
    }
    def schemacommentproperty_sql(self, expression: exp.SchemaCommentProperty) -> str:
        return f"COMMENT {self.sql(expression, 'this')}"  # GreptimeDB's table comment

    PROPERTIES_LOCATION = {
        **Postgres.Generator.PROPERTIES_LOCATION,
        **{kind: exp.Properties.Location.POST_SCHEMA
           for kind in (OptionsProperty, FormatEncodeProperty, PartitionOnColumnsProperty, OnCommitDropProperty)},
    }


class Tidegate(Postgres):
    """PostgreSQL as sqlglot reads it, lexed by the one lexer, remembering the function names the
    user wrote, with PostgreSQL's result types for the expressions sqlglot types otherwise."""

    ORIGINAL_NAME_META_KEY = "pg_name"
    # An array subscript stays as written, counted from 1 as PostgreSQL counts: sqlglot moved it
    # to 0 only where it could type the index while parsing (a constant, not a column or $n),
    # so the same tree held both.
    INDEX_OFFSET = 0
    Tokenizer = Tokenizer
    Parser = Parser
    Generator = Generator
    EXPRESSION_METADATA = {**Postgres.EXPRESSION_METADATA, **_TEXT_RESULTS,
                           exp.Literal: {"annotator": _annotate_literal}, exp.Neg: {"annotator": _annotate_neg},
                           exp.Sum: {"annotator": _annotate_sum},
                           **{kind: {"annotator": _float_arithmetic(kind)}
                              for kind in (*ARITHMETIC, exp.Coalesce, exp.Greatest, exp.Least)},
                           exp.TimestampTrunc: {"annotator": _annotate_trunc}}



# ------------------------------------------------------------------ parsing

def _offset_of(sql: str, line: int, col: int) -> int:
    """1-based character offset of (line, col) in ``sql`` (both 1-based)."""
    lines = sql.split("\n")
    offset = sum(len(lines[i]) + 1 for i in range(min(line - 1, len(lines))))
    return offset + col


# How deep a statement's tree may nest (PostgreSQL answers 3,000 nested parentheses and a sum of
# 3,000 terms, and refuses one of 5,000 with 54001 at its default max_stack_depth), and the
# interpreter's limits that let every pass over such a tree recurse that deep (allow_deep_statements).
MAX_DEPTH = 4_000
RECURSION_LIMIT = 100_000
THREAD_STACK_BYTES = 256 * 1024 * 1024


def too_deep() -> SqlError:
    return SqlError("54001", "stack depth limit exceeded",
                    hint=f"Write the expression with fewer nested levels: tidegate reads up to {MAX_DEPTH:,}.")


def allow_deep_statements() -> None:
    """Raise the interpreter's recursion limit and the stack of the threads started from now on
    (the server's composition root calls it before any thread starts), so that statements up to
    :data:`MAX_DEPTH` levels deep are parsed, translated and written back."""
    import sys
    import threading

    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    threading.stack_size(THREAD_STACK_BYTES)


def depth(tree: exp.Expression) -> int:
    """How many levels deep ``tree`` nests (without recursing)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node.iter_expressions())
    return deepest


def parse(sql: str) -> list[exp.Expression]:
    """Parse PostgreSQL text into statements; syntax errors become 42601 with a position, a tree
    deeper than :data:`MAX_DEPTH` PostgreSQL's 54001."""
    try:
        statements = sqlglot.parse(sql, read=Tidegate)
    except RecursionError:
        raise too_deep() from None
    except ParseError as err:
        info = err.errors[0] if err.errors else {}
        token = (info.get("highlight") or "").strip()
        line, col = info.get("line"), info.get("col")
        position = None
        if line and col:
            position = max(1, _offset_of(sql, line, col) - max(len(token), 1) + 1)
        first = re.match(r"\s*([A-Za-z_]+)", sql)
        known = {
            "select", "with", "values", "insert", "update", "delete", "create", "drop", "alter",
            "explain", "table", "show", "set", "begin", "commit", "rollback", "copy", "truncate",
            "start", "end", "reset", "discard", "deallocate", "prepare", "execute", "grant",
            "revoke", "comment", "analyze", "vacuum", "listen", "notify", "lock", "merge", "admin",
            "describe", "desc", "use", "abort", "savepoint", "release", "declare", "fetch", "close",
            "submit", "wait", "cancel", "refresh",
        }
        if first and first.group(1).lower() not in known:
            raise SqlError("42601", f'syntax error at or near "{first.group(1)}"', position=first.start(1) + 1) from None
        unexpected = (info.get("description") or "").startswith("Invalid expression / Unexpected token")
        if token and not unexpected and not (info.get("end_context") or "").strip() and sql.rstrip().endswith(token):
            raise SqlError("42601", "syntax error at end of input", position=len(sql.rstrip()) + 1) from None
        if not token:
            raise SqlError("42601", "syntax error at end of input", position=len(sql) + 1) from None
        raise SqlError("42601", f'syntax error at or near "{token}"', position=position) from None
    except LexError as err:
        raise err.error from None
    if any(depth(s) > MAX_DEPTH for s in statements if s is not None):
        raise too_deep()
    return [_unqualify_types(s) for s in statements if s is not None]


def _unqualify_types(tree: exp.Expression) -> exp.Expression:
    """``x::pg_catalog.int4`` (drivers qualify type names, e.g. asyncpg) -> ``x::int4``."""
    for dt in list(tree.find_all(exp.DataType)):
        kind = dt.args.get("kind")
        if dt.this == exp.DataType.Type.USERDEFINED and isinstance(kind, exp.Dot) \
                and kind.this.name.lower() == "pg_catalog":
            try:
                dt.replace(exp.DataType.build(kind.expression.name, dialect=Tidegate))
            except ParseError:
                continue
    return tree


def parse_one(sql: str) -> exp.Expression:
    """The one statement of ``sql`` (42601 when it holds none or several)."""
    trees = [t for t in parse(sql) if t is not None]
    if len(trees) != 1:
        raise SqlError("42601", "cannot execute several statements at once" if trees else "empty statement")
    return trees[0]
