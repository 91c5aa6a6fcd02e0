"""Statement classification and the routing of backend work (catalog evaluator vs engine).

The protocol code (:mod:`gateway.connection`) sees one :class:`BackendSession` per connection
and never imports the engine; :class:`RoutedBackend` wires the real catalog and engine and is the
only place that knows both. Classification is by leading keywords and is cached per SQL text, so
the per-statement path stays cheap.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any, Protocol

import pyarrow as pa

from gateway import gucs
from tidegate import sqllex, statements
from tidegate.config import Settings
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType
from tidegate.results import CopyTarget, Result, ResultField
from tidegate.session import SessionInfo
from tidegate.sqllex import words
from tidegate.statements import Kind as StatementKind

log = logging.getLogger(__name__)


class BackendSession(Protocol):
    """What a connection needs from the backends: EngineSession's contract (docs/DESIGN.md)."""

    def execute(self, sql: str, params: Sequence[Any], info: SessionInfo) -> Result: ...
    def describe(self, sql: str, param_types: Sequence[ColumnType | None],
                 info: SessionInfo) -> tuple[list[ColumnType], list[ResultField] | None]: ...
    def copy_target(self, sql: str, info: SessionInfo) -> CopyTarget: ...
    def copy_from(self, target: CopyTarget, batches: Iterator[pa.RecordBatch], info: SessionInfo) -> int: ...
    def begin(self) -> None: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...
    # cheap enough to run on the event loop, in this session (executed with ``params``, or described)
    def inline(self, sql: str, info: SessionInfo | None = None, params: Sequence[Any] | None = None) -> bool: ...
    # the statement's result if it is ready at once (no wait, no I/O: run on the event loop), else
    # None: execute it
    def answer_now(self, sql: str, params: Sequence[Any], info: SessionInfo) -> Result | None: ...


class Backend(Protocol):
    def start(self) -> None: ...
    def open_session(self) -> BackendSession: ...
    def shutdown(self) -> None: ...


# ----------------------------------------------------------------------------- classification


class Kind(Enum):
    EMPTY = "empty"
    BEGIN = "begin"
    COMMIT = "commit"
    ROLLBACK = "rollback"
    SESSION = "session"  # SET/RESET/SHOW guc/DISCARD/DEALLOCATE -> gucs
    SET_CONFIG = "set_config"  # SELECT set_config('x','y',b) with literal args
    COPY_FROM = "copy_from"
    COPY_TO = "copy_to"
    SAVEPOINT = "savepoint"
    RELEASE = "release"
    ROLLBACK_TO = "rollback_to"
    DECLARE = "declare"  # DECLARE c CURSOR FOR query: a named portal
    FETCH = "fetch"  # FETCH / MOVE on a portal
    CLOSE = "close"  # CLOSE c / CLOSE ALL
    UNSUPPORTED = "unsupported"
    BACKEND = "backend"


@dataclass(frozen=True)
class Classified:
    kind: Kind
    command: str  # first keyword, upper-case (for messages: "cannot execute INSERT in a read-only transaction")
    is_dml: bool = False  # row-changing: starts an implicit transaction in a batch
    is_write: bool = False  # refused in read-only transactions
    tx_modes: dict[str, str] = field(default_factory=dict)  # BEGIN ISOLATION LEVEL ... options
    unsupported: str = ""  # message for Kind.UNSUPPORTED


@lru_cache(maxsize=8192)
def classify(sql: str) -> Classified:
    """Kind of one statement (text without the trailing ';'). Cached: called for every statement."""
    w = words(sql, 4)
    if not w:
        return Classified(Kind.EMPTY, "")
    head = w[0]
    cmd = head.upper()
    if head == "begin" or (head == "start" and w[1:2] == ["transaction"]):
        toks = gucs.tokenize(sql)[1 if head == "begin" else 2:]
        if toks and toks[0].text in ("work", "transaction"):
            toks = toks[1:]
        return Classified(Kind.BEGIN, "BEGIN", tx_modes=gucs.parse_tx_modes(toks))
    if head in ("commit", "end"):
        if w[1:2] == ["prepared"]:
            return Classified(Kind.UNSUPPORTED, cmd, unsupported="COMMIT PREPARED is not supported")
        if "chain" in [t.lower() for t in words(sql, 6)] and "no" not in words(sql, 6):
            return Classified(Kind.UNSUPPORTED, cmd, unsupported="COMMIT AND CHAIN is not supported")
        return Classified(Kind.COMMIT, "COMMIT")
    if head in ("rollback", "abort"):
        if w[1:2] == ["prepared"]:
            return Classified(Kind.UNSUPPORTED, cmd, unsupported="ROLLBACK PREPARED is not supported")
        if "to" in w[1:3]:
            return Classified(Kind.ROLLBACK_TO, "ROLLBACK")
        return Classified(Kind.ROLLBACK, "ROLLBACK")
    if head == "savepoint":
        return Classified(Kind.SAVEPOINT, cmd)
    if head == "release":
        return Classified(Kind.RELEASE, cmd)
    if head == "declare":
        return Classified(Kind.DECLARE, cmd)
    statement = statements.classify(sql)
    if statement.kind is StatementKind.JOB:  # FETCH JOB 'id' / $1 is the engine's, not a cursor's
        return Classified(Kind.BACKEND, cmd)
    if head in ("fetch", "move"):
        return Classified(Kind.FETCH, cmd)
    if head == "close":
        return Classified(Kind.CLOSE, cmd)
    if head in ("set", "reset", "discard", "deallocate", "unlisten", "use"):  # USE db: GreptimeDB's SET search_path
        return Classified(Kind.SESSION, cmd)
    if head == "listen" or head == "notify":
        return Classified(Kind.UNSUPPORTED, cmd, unsupported=f"{cmd} is not supported")
    if head == "select" and gucs.is_advisory_unlock_all(sql):
        return Classified(Kind.SESSION, cmd)
    if head == "show" and gucs.is_session_show(w):
        return Classified(Kind.SESSION, cmd)
    if head == "select" and "set_config" in sql.lower() and gucs.match_set_config(sql):
        return Classified(Kind.SET_CONFIG, cmd)
    if head == "copy":
        opts = parse_copy(sql)
        return Classified(Kind.COPY_FROM if opts.direction == "from" else Kind.COPY_TO, "COPY",
                          is_dml=opts.direction == "from", is_write=opts.direction == "from")
    return Classified(Kind.BACKEND, cmd, is_dml=statement.is_dml, is_write=statement.is_write)


# ----------------------------------------------------------------------------- cursors and savepoints

@dataclass(frozen=True)
class Declare:
    name: str
    query: str
    query_offset: int  # where the query starts in the DECLARE text
    hold: bool
    scroll: bool


def _statement_tokens(sql: str, what: str) -> list[sqllex.Token]:
    """The significant tokens of a cursor or savepoint statement, without a trailing ';'."""
    toks = sqllex.scan(sql)
    while toks and toks[-1].text == ";":
        toks.pop()
    if not toks:
        raise SqlError("42601", f"syntax error in {what}")
    return toks


def _name_at(toks: list[sqllex.Token], i: int, what: str) -> str:
    """The identifier that must end the statement at ``toks[i]``."""
    if i != len(toks) - 1 or toks[i].ident is None:
        raise SqlError("42601", f"syntax error in {what}")
    return toks[i].ident or ""


def parse_declare(sql: str) -> Declare:
    """``DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE] [[NO] SCROLL] CURSOR [WITH[OUT] HOLD] FOR query``."""
    what = "DECLARE CURSOR"
    toks = _statement_tokens(sql, what)
    if len(toks) < 5 or not toks[0].is_word("declare") or toks[1].ident is None:
        raise SqlError("42601", f"syntax error in {what}")
    i, scroll = 2, False
    while i < len(toks) and not toks[i].is_word("cursor"):
        if toks[i].is_word("binary", "insensitive", "asensitive"):
            i += 1
        elif toks[i].is_word("scroll"):
            scroll, i = True, i + 1
        elif toks[i].is_word("no") and i + 1 < len(toks) and toks[i + 1].is_word("scroll"):
            scroll, i = False, i + 2
        else:
            raise SqlError("42601", f"syntax error in {what}")
    i += 1  # CURSOR
    hold = False
    if i + 1 < len(toks) and toks[i].is_word("with", "without") and toks[i + 1].is_word("hold"):
        hold, i = toks[i].is_word("with"), i + 2
    if i + 1 >= len(toks) or not toks[i].is_word("for"):
        raise SqlError("42601", f"syntax error in {what}")
    start = toks[i + 1].start
    return Declare(toks[1].ident or "", sql[start:toks[-1].end], start, hold, scroll)


def parse_fetch(sql: str) -> tuple[str, str, int | None]:
    """(verb, cursor name, count) for FETCH/MOVE on a cursor that only scans forward; count None = ALL."""
    verb, name, kind, count = parse_fetch_motion(sql)
    if kind == "forward" and (count is None or count > 0):
        return verb, name, count
    raise SqlError("55000", "cursor can only scan forward",
                   hint="Declare it with SCROLL option to enable backward scan.")


_FIXED_MOTIONS = {"next": ("forward", 1), "prior": ("backward", 1), "first": ("absolute", 1),
                  "last": ("absolute", -1), "all": ("forward", None)}


def parse_fetch_motion(sql: str) -> tuple[str, str, str, int | None]:
    """(verb, cursor name, kind, count) of FETCH/MOVE: kind "forward" / "backward" (count rows,
    None = ALL; may be 0 or negative as written), "absolute" / "relative" (count = the position)."""
    what = "FETCH/MOVE"
    toks = _statement_tokens(sql, what)
    if not toks[0].is_word("fetch", "move") or len(toks) < 2:
        raise SqlError("42601", f"syntax error in {what}")
    verb = toks[0].lower
    i = 1

    def signed() -> int | None:
        nonlocal i
        sign = 1
        if i < len(toks) and toks[i].text in ("+", "-"):
            sign, i = (-1 if toks[i].text == "-" else 1), i + 1
        if i < len(toks) and toks[i].kind == "num" and toks[i].text.isdigit():
            i += 1
            return sign * int(toks[i - 1].text)
        return None

    kind, count = "forward", 1
    if len(toks) > 2:  # a direction precedes the name (FETCH name alone is NEXT)
        head = toks[1].lower if toks[1].kind == "word" else ""
        if head in _FIXED_MOTIONS:
            (kind, count), i = _FIXED_MOTIONS[head], 2
        elif head in ("absolute", "relative"):
            i = 2
            count = signed()
            if count is None:
                raise SqlError("42601", f"syntax error in {what}")
            kind = head
        elif head in ("forward", "backward"):
            kind, i = head, 2
            if i < len(toks) and toks[i].is_word("all"):
                count, i = None, i + 1
            else:
                count = signed()
                if count is None:
                    count = 1
        else:
            count = signed()
            if count is None:
                count = 1
    if i < len(toks) - 1 and toks[i].is_word("from", "in"):
        i += 1
    return verb, _name_at(toks, i, what), kind, count


def scroll_motion(kind: str, count: int | None, pos: int, total: int) -> tuple[range, int]:
    """PostgreSQL's cursor motion over ``total`` materialised rows from position ``pos`` (0: before
    the first row, 1..total: on that row, total + 1: after the last): the 0-based row indexes a
    FETCH returns (in order) and the new position."""
    if kind == "absolute":
        target = count if count >= 0 else total + 1 + count
        if target <= 0:
            return range(0), 0
        if target > total:
            return range(0), total + 1
        return range(target - 1, target), target
    if kind == "relative":
        if count == 0:
            return (range(pos - 1, pos) if 1 <= pos <= total else range(0)), pos
        target = pos + count
        if target < 1:
            return range(0), 0
        if target > total:
            return range(0), total + 1
        return range(target - 1, target), target
    if count is not None and count < 0:
        kind, count = ("backward" if kind == "forward" else "forward"), -count
    if count == 0:  # FORWARD 0 / BACKWARD 0: the current row again
        return (range(pos - 1, pos) if 1 <= pos <= total else range(0)), pos
    if kind == "forward":
        first = pos  # 0-based index of the next row
        last = total if count is None else min(total, pos + count)
        rows = range(first, max(first, last))
        moved = len(rows)
        return rows, pos + moved if count is not None and moved == count else total + 1
    # backward: rows pos-1, pos-2, ... (1-based) -> 0-based pos-2 down
    start = min(pos, total + 1) - 1  # 1-based row before the current position
    stop = 0 if count is None else max(0, start - count)
    rows = range(start - 1, stop - 1, -1)
    moved = len(rows)
    return rows, (start - moved + 1) if count is not None and moved == count else 0


def parse_close(sql: str) -> str | None:
    """Cursor name of CLOSE, or None for CLOSE ALL."""
    toks = _statement_tokens(sql, "CLOSE")
    if len(toks) == 2 and toks[0].is_word("close") and toks[1].is_word("all"):
        return None
    if not toks[0].is_word("close"):
        raise SqlError("42601", "syntax error in CLOSE")
    return _name_at(toks, 1, "CLOSE")


def parse_savepoint_name(sql: str) -> str:
    """The name in ``SAVEPOINT x``, ``RELEASE [SAVEPOINT] x``, ``ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] x``."""
    what = "savepoint statement"
    toks = _statement_tokens(sql, what)
    i = 1
    if toks[0].is_word("release"):
        i += 1 if len(toks) > 2 and toks[1].is_word("savepoint") else 0
    elif toks[0].is_word("rollback", "abort"):
        i += 1 if len(toks) > 1 and toks[1].is_word("work", "transaction") else 0
        if i >= len(toks) or not toks[i].is_word("to"):
            raise SqlError("42601", f"syntax error in {what}")
        i += 1
        i += 1 if len(toks) > i + 1 and toks[i].is_word("savepoint") else 0
    elif not toks[0].is_word("savepoint"):
        raise SqlError("42601", f"syntax error in {what}")
    return _name_at(toks, i, what)


# ----------------------------------------------------------------------------- COPY statements


@dataclass(frozen=True)
class CopyOptions:
    direction: str  # "from" | "to"
    relation: str  # table name as written (may be qualified/quoted); "" for COPY (query)
    columns: tuple[str, ...]  # column names as written
    query: str  # COPY (query) TO ...
    format: str = "text"  # text | csv | binary
    delimiter: str = "\t"
    null: str = "\\N"
    header: bool = False
    quote: str = '"'
    escape: str = '"'

    def select_sql(self) -> str:
        """The query whose rows COPY ... TO STDOUT sends."""
        if self.query:
            return self.query
        cols = ", ".join(self.columns) if self.columns else "*"
        return f"SELECT {cols} FROM {self.relation}"


def _closing(toks: list[sqllex.Token], i: int) -> int:
    """Index of the ')' that closes the '(' at ``toks[i]``."""
    close = sqllex.closing(toks, i)
    if close is None:
        raise SqlError("42601", "syntax error at end of input")
    return close


def parse_copy(sql: str) -> CopyOptions:
    """Parse ``COPY ... FROM STDIN`` / ``COPY ... TO STDOUT`` with new- and old-style options."""
    toks = sqllex.scan(sql)
    while toks and toks[-1].text == ";":
        toks.pop()
    relation, columns, query = "", (), ""
    i = 1  # after COPY
    binary_prefix = i < len(toks) and toks[i].is_word("binary")
    i += binary_prefix
    if i >= len(toks):
        raise SqlError("42601", "syntax error at end of input", position=len(sql) + 1)
    if toks[i].text == "(":
        close = _closing(toks, i)
        query = sql[toks[i].end:toks[close].start].strip()
        i = close + 1
    else:
        parts, end = sqllex.split_ident_chain(toks, i)
        if not parts or len(parts) > 3:
            raise SqlError("42601", f'syntax error at or near "{toks[i].text}"', position=toks[i].start + 1)
        relation = sql[toks[i].start:toks[end - 1].end]
        i = end
        if i < len(toks) and toks[i].text == "(":
            listed = sqllex.name_list(toks, i)
            if listed is None:
                close = _closing(toks, i)
                inner = toks[i + 1:close]
                bad = next((t for k, t in enumerate(inner) if (t.ident is None if k % 2 == 0 else t.text != ",")), None)
                if bad is None or len(inner) % 2 == 0:  # a list that ends in a comma, or an empty one
                    bad = inner[0] if inner else toks[close]
                raise SqlError("42601", f'syntax error at or near "{bad.text}"', position=bad.start + 1)
            columns = tuple(t.text for t in listed[0])
            i = listed[1]
    pos = toks[i].start if i < len(toks) else len(sql)
    toks = gucs.tokenize(sql[pos:])
    if len(toks) < 2 or toks[0].text not in ("from", "to"):
        near = toks[0].text if toks else "end of input"
        raise SqlError("42601", f'syntax error at or near "{near}"')
    direction = toks[0].text
    target = toks[1]
    if query and direction == "from":
        raise SqlError("42601", 'syntax error at or near "FROM"')
    if target.kind == "str" or target.text == "program":
        raise SqlError("0A000", f"COPY {direction.upper()} a file or program is not supported",
                       hint=f"Use COPY ... {direction.upper()} {'STDIN' if direction == 'from' else 'STDOUT'}"
                            " and send the data through the client.")
    want = "stdin" if direction == "from" else "stdout"
    if target.text != want:
        raise SqlError("42601", f'syntax error at or near "{target.text}"')
    opts: dict[str, Any] = {"format": "binary" if binary_prefix else "text"}
    rest = toks[2:]
    if rest and rest[0].text == "where":
        raise SqlError("0A000", "COPY FROM with WHERE is not supported")
    if rest and rest[0].text == "with":
        rest = rest[1:]
    if rest and rest[0].kind == "punct" and rest[0].text == "(":
        _parse_new_options(rest, opts)
    else:
        _parse_old_options(rest, opts)
    fmt = opts["format"]
    if fmt not in ("text", "csv", "binary"):
        raise SqlError("22023", f'COPY format "{fmt}" not recognized')
    csv = fmt == "csv"
    delimiter = opts.get("delimiter", "," if csv else "\t")
    null = opts.get("null", "" if csv else "\\N")
    quote = opts.get("quote", '"')
    escape = opts.get("escape", quote)
    if fmt == "binary" and ({"delimiter", "null", "quote", "escape"} & opts.keys()):
        bad = sorted({"delimiter", "null", "quote", "escape"} & opts.keys())[0].upper()
        raise SqlError("42601", f"cannot specify {bad} in BINARY mode")
    if not csv and ("quote" in opts or "escape" in opts):
        raise SqlError("0A000", f"COPY {'quote' if 'quote' in opts else 'escape'} available only in CSV mode")
    if len(delimiter.encode()) != 1:
        raise SqlError("22023", "COPY delimiter must be a single one-byte character")
    if delimiter in ("\r", "\n"):
        raise SqlError("22023", "COPY delimiter cannot be newline or carriage return")
    if csv and (len(quote.encode()) != 1 or len(escape.encode()) != 1):
        raise SqlError("22023", "COPY quote must be a single one-byte character")
    if csv and delimiter == quote:
        raise SqlError("22023", "COPY delimiter and quote must be different")
    return CopyOptions(direction, relation, columns, query, fmt, delimiter, null, bool(opts.get("header")),
                       quote, escape)


def _refuse_forced(option: str) -> None:
    raise SqlError("0A000", f"COPY {option} is not supported",
                   hint="Send the CSV without FORCE options: empty unquoted fields are NULL, quoted ones are "
                        "empty strings; on output, values are quoted only where CSV needs it.")


def _opt_bool(name: str, tok: gucs.Tok | None) -> bool:
    if tok is None:
        return True
    v = tok.text.lower()
    if v in ("true", "on", "1", "yes"):
        return True
    if v in ("false", "off", "0", "no"):
        return False
    if v == "match" and name == "header":
        return True
    raise SqlError("22023", f"{name} requires a Boolean value")


def _parse_new_options(toks: list[gucs.Tok], opts: dict[str, Any]) -> None:
    i = 1
    n = len(toks)
    while i < n:
        t = toks[i]
        if t.kind == "punct" and t.text == ")":
            if i != n - 1:
                raise SqlError("42601", f'syntax error at or near "{toks[i + 1].text}"')
            return
        if t.kind == "punct" and t.text == ",":
            i += 1
            continue
        name = t.text.lower()
        arg = toks[i + 1] if i + 1 < n and not (toks[i + 1].kind == "punct" and toks[i + 1].text in ",)") else None
        i += 2 if arg is not None else 1
        if name in ("force_quote", "force_not_null", "force_null"):
            _refuse_forced(name.replace("_", " ").upper())
        if name in opts and name != "format" or (name == "format" and "format_set" in opts):
            raise SqlError("42601", "conflicting or redundant options")
        if name == "format":
            if arg is None:
                raise SqlError("42601", "syntax error at or near \")\"")
            opts["format"] = arg.text.lower()
            opts["format_set"] = True
        elif name == "header":
            opts["header"] = _opt_bool("header", arg)
        elif name in ("delimiter", "null", "quote", "escape", "encoding"):
            if arg is None or arg.kind != "str":
                raise SqlError("42601", f"{name} requires a string value" if arg is None else
                               f'syntax error at or near "{arg.text}"')
            if name == "encoding":
                gucs._encoding("encoding", arg.text)
            else:
                opts[name] = arg.text
        elif name == "freeze":
            _opt_bool("freeze", arg)  # rows are visible to every later statement when COPY ends: nothing to freeze
        else:
            raise SqlError("42601", f'option "{name}" not recognized')
    raise SqlError("42601", "syntax error at end of input")


def _parse_old_options(toks: list[gucs.Tok], opts: dict[str, Any]) -> None:
    i = 0
    n = len(toks)

    def string_arg() -> str:
        nonlocal i
        if i < n and toks[i].text == "as":
            i += 1
        if i >= n or toks[i].kind != "str":
            raise SqlError("42601", "syntax error at or near " + (f'"{toks[i].text}"' if i < n else "end of input"))
        i += 1
        return toks[i - 1].text

    while i < n:
        w = toks[i].text.lower()
        i += 1
        if w == "binary":
            opts["format"] = "binary"
        elif w == "csv":
            opts["format"] = "csv"
        elif w == "header":
            opts["header"] = True
        elif w in ("delimiter", "null", "quote", "escape"):
            opts[w] = string_arg()
        elif w == "force":
            _refuse_forced("FORCE " + " ".join(t.text.upper() for t in toks[i:i + 2] if t.kind == "word"))
        elif w == "oids":
            raise SqlError("0A000", "COPY OIDS is not supported")
        else:
            raise SqlError("42601", f'syntax error at or near "{toks[i - 1].text}"')


# ----------------------------------------------------------------------------- parameter types

_COMPARISONS = {"=", "<>", "!=", "<", ">", "<=", ">="}


def infer_more_params(sql: str, types: list[ColumnType], given: Sequence[ColumnType | None], catalog: Any,
                      info: SessionInfo) -> list[ColumnType]:
    """Parameter types PostgreSQL infers where the engine reported text (unknown): ``LIMIT $1``,
    ``OFFSET $1``, ``FETCH FIRST $1 ROWS`` are bigint; ``col = ANY($1)`` is an array of col's type.
    Drivers that encode by the described types (asyncpg) need them. Types the client sent stay."""
    from tidegate.pgtypes import TYPES_BY_NAME

    try:
        toks = sqllex.scan(sql)
    except SqlError:
        return types
    tables: list[Any] | None = None

    def column_type(name: str) -> ColumnType | None:
        nonlocal tables
        if tables is None:
            tables = []
            for k, t in enumerate(toks[:-1]):
                if t.is_word("from", "join") and toks[k + 1].ident is not None:
                    parts, _ = sqllex.split_ident_chain(toks, k + 1)
                    try:
                        tables.append(catalog.resolve_table(parts[-1], parts[-2] if len(parts) > 1 else None,
                                                            info.search_path))
                    except Exception:  # noqa: BLE001 - not a table of the catalog: no inference
                        continue
        found = {c.type for t in tables for c in t.columns if c.name == name}
        return found.pop() if len(found) == 1 else None

    out = list(types)
    for k, t in enumerate(toks):
        if t.kind != "param":
            continue
        n = int(t.text[1:]) - 1
        if n >= len(out) or out[n].pg.name != "text" or (n < len(given) and given[n] is not None):
            continue
        if k + 1 < len(toks) and toks[k + 1].kind == "cast":
            continue
        prev = toks[k - 1] if k else None
        if prev is not None and (prev.is_word("limit", "offset") or (
                prev.is_word("first", "next") and k >= 2 and toks[k - 2].is_word("fetch"))):
            out[n] = ColumnType(TYPES_BY_NAME["int8"])
        elif catalog is not None and k >= 4 and prev is not None and prev.text == "(" \
                and toks[k - 2].is_word("any", "all", "some") and toks[k - 3].text in _COMPARISONS \
                and toks[k - 4].ident is not None and k + 1 < len(toks) and toks[k + 1].text == ")":
            ct = column_type(toks[k - 4].ident or "")
            if ct is not None and not ct.is_array and ct.pg.array_oid:
                out[n] = ct.array_of()
    return out


# ----------------------------------------------------------------------------- routing


class RoutedSession:
    """One connection's view of the backends: catalog evaluator for pg_catalog/constant queries,
    engine for everything else. Engine transactions begin lazily, at the first statement that
    reaches the engine, so catalog-only transactions (drivers wrap every SELECT in BEGIN) cost nothing.
    """

    def __init__(self, backend: RoutedBackend) -> None:
        self._backend = backend
        self._engine_session: Any = None
        self._lock = threading.Lock()
        self._tx_wanted = False
        self._tx_open = False
        # ((id of the block's catalog view or the catalog, own temporary schema), its CatalogQueries, the view)
        self._block_queries: tuple[Any, Any, Any] | None = None
        self._pid: int | None = None  # the connection's backend pid (its currval/lastval state)

    @property
    def engine(self) -> Any:
        if self._engine_session is None:
            with self._lock:
                if self._engine_session is None:
                    self._engine_session = self._backend.engine.open_session()
        return self._engine_session

    def _engine_for_statement(self) -> Any:
        eng = self.engine
        if self._tx_wanted and not self._tx_open:
            eng.begin()
            self._tx_open = True
        return eng

    def inline(self, sql: str, info: SessionInfo | None = None, params: Sequence[Any] | None = None) -> bool:
        if self._backend.is_constant(sql):
            return True
        # a query the engine computes in the gateway (engine.scalar), once the session is open
        eng = self._engine_session
        return eng is not None and info is not None and eng.computes_in_gateway(sql, params, info)

    def answer_now(self, sql: str, params: Sequence[Any], info: SessionInfo) -> Result | None:
        eng = self._engine_session
        if eng is None or self._tx_wanted:  # a block's first statement opens it: execute
            return None
        return eng.answer_now(sql, params, info)

    @property
    def reads_own_writes(self) -> bool:
        """Whether statements in an engine transaction see its pending writes (then implicit
        transactions span reads too, as in PostgreSQL)."""
        return bool(getattr(self.engine, "reads_own_writes", False))

    def _catalog_queries(self) -> Any:
        """Catalog queries answer from the catalog as this session sees it: inside a block that
        ran DDL, with that DDL (a mirror of its own, built when first asked)."""
        view = getattr(self._engine_session, "catalog_in_block", None) if self._tx_open else None
        # A session with temporary tables sees its own temporary schema (the shared mirror shows none).
        own = getattr(self._engine_session, "temp_schema", None)
        if view is None and own is None:
            self._block_queries = None
            return self._backend.queries
        base = view if view is not None else getattr(self._backend, "catalog", None)
        if base is None:
            return self._backend.queries
        if self._block_queries is None or self._block_queries[0] != (id(base), own):
            from catalog.pgcatalog import CatalogQueries
            from catalog.txn import SessionView

            self._block_queries = ((id(base), own), CatalogQueries(SessionView(base, own), warm=False), base)
        return self._block_queries[1]

    def _fresh(self) -> None:
        """A statement starts: it sees what other gateways of a shared catalog changed before."""
        catalog = getattr(self._backend, "catalog", None)
        if catalog is not None:
            catalog.fresh()

    def execute(self, sql: str, params: Sequence[Any], info: SessionInfo) -> Result:
        self._pid = info.backend_pid
        self._fresh()
        if self._backend.catalog_handles(sql):
            return self._catalog_queries().execute(sql, params, info)
        return self._engine_for_statement().execute(sql, params, info)

    def describe(self, sql: str, param_types: Sequence[ColumnType | None],
                 info: SessionInfo) -> tuple[list[ColumnType], list[ResultField] | None]:
        self._fresh()
        if self._backend.catalog_handles(sql):
            return self._catalog_queries().describe(sql, param_types, info)
        from catalog.pgcatalog import typed_param_columns

        types, fields = self.engine.describe(sql, param_types, info)
        if any(t.pg.name == "text" for t in types):
            types = infer_more_params(sql, list(types), param_types, getattr(self._backend, "catalog", None), info)
        return types, typed_param_columns(sql, fields, param_types)

    def copy_target(self, sql: str, info: SessionInfo) -> CopyTarget:
        self._fresh()
        return self.engine.copy_target(sql, info)

    def copy_from(self, target: CopyTarget, batches: Iterator[pa.RecordBatch], info: SessionInfo) -> int:
        return self._engine_for_statement().copy_from(target, batches, info)

    def begin(self) -> None:
        self._tx_wanted = True

    def commit(self) -> None:
        self._tx_wanted = False
        if self._tx_open:
            self._tx_open = False
            self._engine_session.commit()

    def rollback(self) -> None:
        self._tx_wanted = False
        if self._tx_open:
            self._tx_open = False
            self._engine_session.rollback()

    def discard_temp(self) -> None:
        """DISCARD TEMP / DISCARD ALL: drop the session's temporary relations (inside a block, as
        the block's DDL)."""
        if getattr(self._engine_session, "temp_schema", None) is not None:
            self._engine_for_statement().discard_temp()

    def discard_plans(self) -> None:
        """DISCARD PLANS / DISCARD ALL: forget the query translations the session kept."""
        if self._engine_session is not None:
            self._engine_session.discard_plans()

    def cancel(self) -> None:
        if self._engine_session is not None:
            self._engine_session.cancel()

    def close(self) -> None:
        sequences = getattr(getattr(self._backend, "catalog", None), "sequences", None)
        if sequences is not None and self._pid is not None:
            sequences.end_session(self._pid)  # currval/lastval are the connection's
        if self._engine_session is not None:
            try:
                if self._tx_open:
                    self._engine_session.rollback()
            finally:
                self._tx_open = False
                self._engine_session.close()


# Constant SELECTs cheap enough to answer on the event loop: literals, parameters and a few
# session functions, each optionally cast and aliased. Anything else (set-returning functions,
# pg_sleep, relations) runs in the worker pool like every other backend call.
_CHEAP_FUNCTIONS = {"version", "current_schema", "current_database", "current_user", "session_user",
                    "pg_backend_pid", "current_setting", "now", "current_timestamp", "inet_server_port"}


def _literal_at(toks: list[sqllex.Token], i: int) -> int | None:
    """Index after a literal (signed number, string, NULL/TRUE/FALSE, $n) at ``i``, else None."""
    if i < len(toks) and toks[i].text in ("+", "-"):
        i += 1
        return i + 1 if i < len(toks) and toks[i].kind == "num" else None
    if i < len(toks) and (toks[i].kind in ("num", "str", "param") or toks[i].is_word("null", "true", "false")):
        return i + 1
    return None


def _cheap_item_at(toks: list[sqllex.Token], i: int) -> int | None:
    """Index after one cheap select item at ``i`` (literal or session function, ``::type``, ``AS x``)."""
    end = _literal_at(toks, i)
    if end is None:
        if i + 2 < len(toks) and toks[i].is_word("pg_catalog") and toks[i + 1].text == ".":
            i += 2
        if i >= len(toks) or not toks[i].is_word(*_CHEAP_FUNCTIONS):
            return None
        end = i + 1
        if end < len(toks) and toks[end].text == "(":
            end += 1
            while end < len(toks) and toks[end].text != ")":
                nxt = _literal_at(toks, end)
                if nxt is None:
                    return None
                end = nxt + (1 if nxt < len(toks) and toks[nxt].text == "," else 0)
            end += 1
    if end < len(toks) and toks[end].kind == "cast":
        end += 1
        if end >= len(toks) or toks[end].kind != "word":
            return None
        while end < len(toks) and toks[end].kind == "word" and not toks[end].is_word("as"):
            end += 1
    if end < len(toks) and toks[end].is_word("as"):
        if end + 1 >= len(toks) or toks[end + 1].ident is None:
            return None
        end += 2
    return end


def is_cheap_constant(sql: str) -> bool:
    """``SELECT`` of cheap items only (see :func:`_cheap_item_at`)."""
    toks = [t for t in sqllex.leading(sql, 64) if t.text != ";"]
    if len(toks) < 2 or len(toks) == 64 or not toks[0].is_word("select"):
        return False
    i = 1
    while True:
        i = _cheap_item_at(toks, i)
        if i is None:
            return False
        if i == len(toks):
            return True
        if toks[i].text != ",":
            return False
        i += 1


def _fence_this_gateway(reason: str) -> None:
    """This gateway may no longer hold its slot or the catalog's lead (catalog.active, catalog.slots):
    it exits at once, before another gateway can take them over, leaving what it was doing as
    kill -9 would (recovered by the gateway that takes over) rather than commit anything more."""
    logging.shutdown()
    os._exit(3)


class RoutedBackend:
    """The real backends of a server: the catalog, its pg_catalog evaluator, and the Spark engine."""

    def __init__(self, settings: Settings) -> None:
        from catalog.active import CatalogInUse, CatalogLock
        from catalog.db import is_postgres
        from catalog.lock import DataDirLock
        from catalog.pgcatalog import CatalogQueries
        from catalog.slots import GatewaySlot
        from catalog.store import Catalog
        from engine import Engine, SparkRuntime

        listen = f"{settings.host}:{settings.port}"
        runtime = SparkRuntime(settings)
        # The data-dir lock comes before anything touches the data dir (catalog, Spark's files,
        # flows' checkpoints): a gateway of an embedded catalog takes it exclusively, and a second
        # backend on the same dir raises catalog.lock.DataDirInUse having changed nothing; the
        # gateways of a PostgreSQL catalog share it (all serve) and one of them leads the
        # catalog's background work (catalog.active). Held until shutdown(), or death.
        shared = is_postgres(settings.catalog_target)
        self.data_dir_lock = DataDirLock(settings.data_dir).acquire(listen=listen, shared=shared)
        self.catalog_lock: CatalogLock | None = None
        self.leads_at_start = not shared
        self.slot: GatewaySlot | None = None
        try:
            if shared:
                self.catalog_lock = CatalogLock(settings.catalog_target)
                try:
                    self.catalog_lock.acquire(listen, on_lost=_fence_this_gateway)
                    self.leads_at_start = True
                except CatalogInUse as exc:
                    print(f"tidegate follower: the catalog's flows, refreshes and maintenance are led by "
                          f"{exc.holder}; serving statements and jobs, and taking the lead when it goes",
                          flush=True)
            settings.data_dir.mkdir(parents=True, exist_ok=True)
            self.settings = settings
            self.catalog = Catalog(settings.catalog_target, shared=shared)
            self.catalog.bind_data_dir(settings.data_dir)
            # this gateway's journal, Delta application id and backend pids (catalog.slots)
            self.slot = GatewaySlot(settings.catalog_target).take(on_lost=_fence_this_gateway)
            # Sessions' temporary schemas are not in the shared mirror (see _catalog_queries).
            from catalog.txn import SessionView

            self.queries = CatalogQueries(SessionView(self.catalog, None))
            self.engine = Engine(settings, self.catalog, runtime, self.slot)
            self.engine.jobs.catalog_queries = self.queries  # jobs of catalog-only statements
            if shared:
                from catalog.active import leader_of

                self.engine.leader_name = lambda: leader_of(self.catalog)
            with self.engine.starting():
                self.catalog.roles.sync_configured([(u.name, u.superuser) for u in settings.users])
        except BaseException:
            catalog = getattr(self, "catalog", None)
            if catalog is not None:
                catalog.close()
            if self.slot is not None:
                self.slot.release()
            if self.catalog_lock is not None:
                self.catalog_lock.release()
            self.data_dir_lock.release()
            raise
        self._handles = lru_cache(maxsize=8192)(self._handles_uncached)
        self._constant = lru_cache(maxsize=8192)(self._constant_uncached)
        self._started: float | None = None  # monotonic time of start() (gateway.stopped's uptime)

    def peer_address(self, slot: int) -> tuple[str, int] | None:
        """Where the gateway of ``slot`` (catalog.slots) listens, for a cancel request it owns."""
        return self.slot.address_of(slot) if self.slot is not None else None

    def _handles_uncached(self, sql: str) -> bool:
        return bool(self.queries.handles(sql))

    def _constant_uncached(self, sql: str) -> bool:
        return len(sql) < 512 and is_cheap_constant(sql) and self.catalog_handles(sql)

    def catalog_handles(self, sql: str) -> bool:
        return self._handles(sql)

    def is_constant(self, sql: str) -> bool:
        """Constant SELECTs (no FROM) answered by the evaluator in microseconds: run on the event loop."""
        return self._constant(sql)

    def start(self, listen: str | None = None) -> None:
        """Start the engine (Spark in the background); ``listen``: the bound host:port, the
        ``gateway`` column of the events this gateway records."""
        from tidegate import __version__

        from catalog.active import this_gateway

        self._started = time.monotonic()
        this_gateway(listen or f"{self.settings.host}:{self.settings.port}")
        if self.slot is not None:
            self.slot.update(listen or f"{self.settings.host}:{self.settings.port}")
        if listen:
            self.engine.events.gateway = listen
        if not self.leads_at_start and self.catalog_lock is not None:
            threading.Thread(target=self._follow, args=(listen or "",), name="tidegate-follower", daemon=True).start()
        s = self.settings
        self.record_event("gateway.started", payload={
            "version": __version__, "pid": os.getpid(), "listen": listen or f"{s.host}:{s.port}",
            "data_dir": str(s.data_dir), "settings": {
                "spark_master": s.spark_master, "tls": bool(s.tls_cert), "users": len(s.users),
                "max_connections": s.max_connections, "flow_workers": s.flow_workers,
                "file_connector_roots": len(s.file_connector_roots), "events_ttl": s.events_ttl,
                "events_flush_interval_s": s.events_flush_interval_s, "events_batch_size": s.events_batch_size,
                "events_queue_size": s.events_queue_size}})
        self.engine.start(lead=self.leads_at_start)

    def _follow(self, listen: str) -> None:
        """A follower's wait for the catalog's lead; then it leads (catalog.active)."""
        assert self.catalog_lock is not None
        self.catalog_lock.acquire(listen or f"{self.settings.host}:{self.settings.port}",
                                  on_lost=_fence_this_gateway, follow=lambda holder: None)
        if not self.catalog_lock.leading:
            return  # shutting down
        print("tidegate leader: took the lead of the catalog's flows, refreshes and maintenance", flush=True)
        log.warning("this gateway took the lead of the catalog's background work")
        self.record_event("gateway.leading", payload={"listen": listen})
        self.engine.lead()

    def record_event(self, type: str, *, object: str | None = None, user: str | None = None,
                     payload: dict[str, Any] | None = None) -> None:
        """Record an event in tidegate_private.events (engine.events.EventRecorder.record): returns
        at once, never raises; safe on the event loop."""
        self.engine.events.record(type, object=object, user=user, payload=payload)

    def role_verifier(self, user: str) -> tuple[bytes, bytes, bytes, int] | None:
        """The SCRAM verifier of a role created with a PASSWORD (see gateway.auth); whether it may
        log in is :meth:`login`'s question, asked after the password, as PostgreSQL does."""
        from catalog.roles import parse_verifier

        role = self.catalog.roles.get(user)
        return parse_verifier(role.verifier) if role is not None else None

    def login(self, user: str, trusted: bool) -> bool:
        """May ``user`` log in, and as a superuser? A trusted (loopback, no users configured) name
        that is no role is a superuser, as the initdb user of a trust-mode PostgreSQL is."""
        role = self.catalog.roles.get(user)
        if role is None:
            if trusted:
                return True
            raise SqlError("28000", f'role "{user}" does not exist', severity="FATAL")
        if not role.login:
            raise SqlError("28000", f'role "{user}" is not permitted to log in', severity="FATAL")
        return role.superuser

    def open_session(self) -> RoutedSession:
        return RoutedSession(self)

    def shutdown(self) -> None:
        if self.catalog_lock is not None and not self.catalog_lock.leading:
            self.catalog_lock.release()  # a follower stops waiting for the lead first
        try:
            from tidegate import __version__

            started = self._started
            self.record_event("gateway.stopped", payload={
                "version": __version__, "uptime_s": round(time.monotonic() - started, 1) if started else None,
                "events_dropped": self.engine.events.dropped})
            self.engine.shutdown()  # commits the queued events, this one included
            close = getattr(self.catalog, "close", None)
            if close is not None:
                close()
        finally:
            if self.slot is not None:
                self.slot.release()
            if self.catalog_lock is not None:
                self.catalog_lock.release()
            self.data_dir_lock.release()  # last: a gateway started next may use the dir at once
