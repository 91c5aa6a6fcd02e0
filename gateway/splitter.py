"""Split a Query string into statements the way PostgreSQL's lexer sees them.

Semicolons inside '...' (with '' escapes), E'...' (backslash escapes), "..." identifiers,
$tag$...$tag$ dollar quotes, -- line comments and nested /* */ comments do not end a statement.
A regex jumps between the interesting characters so multi-megabyte INSERTs split quickly.

Identifiers follow PostgreSQL's lexer rules here, once for every later reader of the text: a
zero-length quoted identifier ("") is a syntax error (42601), and an identifier longer than
NAMEDATALEN-1 = 63 bytes is truncated to 63 bytes (at a character boundary) with a NOTICE
(42622), so ``CREATE TABLE <64 chars>`` and ``SELECT ... FROM <its first 63>`` meet.

GreptimeDB's (MySQL's) backtick-quoted identifiers (`` `log` ``, with ```` `` ```` for a backtick) are
rewritten here to PostgreSQL's ``"log"``: a backtick is no token of PostgreSQL's own grammar (no
operator uses it), so every later reader sees one spelling of a quoted identifier, case kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tidegate.errors import SqlError

_SPECIAL = re.compile(r"""'|"|`|\$|/\*|--|;""")
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$")
_PARAM = re.compile(r"\$([0-9]+)")
_BLOCK = re.compile(r"/\*|\*/")
_IDENT_CHAR = re.compile(r"[A-Za-z0-9_$\u0080-\uffff]")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*|\"(?:[^\"]|\"\")*\"|\S")
# Unquoted words that may exceed 63 bytes (21 characters of up to 3 bytes each, at the least).
_LONG_WORD = re.compile(r"(?<![\w$])[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]{20,}")
NAMEDATALEN = 64


def truncate_identifier(name: str) -> str:
    """``name`` cut to NAMEDATALEN-1 bytes of UTF-8, never inside a character."""
    raw = name.encode("utf-8")
    if len(raw) < NAMEDATALEN:
        return name
    return raw[:NAMEDATALEN - 1].decode("utf-8", errors="ignore")


def _truncation_notice(original: str, truncated: str) -> str:
    return f'identifier "{original}" will be truncated to "{truncated}"'


@dataclass(frozen=True)
class Statement:
    """One statement: its text (no trailing ';') and where it starts in the Query string."""

    text: str
    offset: int  # 0-based character offset of ``text`` in the original string
    max_param: int = 0  # highest $n referenced outside quotes/comments
    notices: tuple[str, ...] = ()  # NOTICE texts of the lexer (42622 identifier truncation)


def _skip_block_comment(sql: str, pos: int) -> int:
    """``pos`` is just after '/*'; return the index after the matching '*/' (nesting counts)."""
    depth = 1
    while depth:
        m = _BLOCK.search(sql, pos)
        if m is None:
            raise SqlError("42601", "unterminated /* comment", position=pos - 1)
        depth += 1 if m.group() == "/*" else -1
        pos = m.end()
    return pos


def _skip_quoted(sql: str, pos: int, quote: str, backslash: bool) -> int:
    """``pos`` is just after the opening quote; return the index after the closing one."""
    n = len(sql)
    while True:
        end = sql.find(quote, pos)
        if end < 0:
            what = "quoted identifier" if quote in '"`' else "quoted string"
            raise SqlError("42601", f"unterminated {what} at or near \"{sql[pos - 1:pos + 20]}\"", position=pos)
        if backslash:
            # count the backslashes right before the quote: odd means it is escaped
            k = end - 1
            while k >= pos and sql[k] == "\\":
                k -= 1
            if (end - 1 - k) % 2 == 1:
                pos = end + 1
                continue
        if end + 1 < n and sql[end + 1] == quote:
            pos = end + 2
            continue
        return end + 1


Edit = tuple[int, int, str, str]  # (start, end, replacement, NOTICE text)


def _long_words(sql: str, lo: int, hi: int, edits: list[Edit]) -> None:
    """Truncations of the unquoted identifiers between ``lo`` and ``hi`` (outside quotes)."""
    for w in _LONG_WORD.finditer(sql, lo, hi):
        word = w.group()
        cut = truncate_identifier(word.lower())
        if cut != word.lower():
            edits.append((w.start(), w.end(), cut, _truncation_notice(word.lower(), cut)))


def _scan(sql: str, edits: list[Edit] | None = None) -> tuple[list[tuple[int, int]], list[int]]:
    """Statement (start, end) spans and per-span max $n; identifier truncations go to ``edits``."""
    spans: list[tuple[int, int]] = []
    params: list[int] = []
    start = 0
    pos = 0
    cur_max = 0
    n = len(sql)
    while pos < n:
        m = _SPECIAL.search(sql, pos)
        if m is None:
            break
        tok = m.group()
        i = m.start()
        if edits is not None and i > pos:
            _long_words(sql, pos, i, edits)
        if tok == ";":
            spans.append((start, i))
            params.append(cur_max)
            cur_max = 0
            start = pos = i + 1
        elif tok == "'":
            backslash = i > 0 and sql[i - 1] in "eE" and (i < 2 or not _IDENT_CHAR.match(sql[i - 2]))
            pos = _skip_quoted(sql, i + 1, "'", backslash)
        elif tok == '"':
            pos = _skip_quoted(sql, i + 1, '"', False)
            if edits is not None:
                _quoted_identifier(sql, i, pos, edits)
        elif tok == "`":
            pos = _skip_quoted(sql, i + 1, "`", False)
            if edits is not None:
                _backtick_identifier(sql, i, pos, edits)
        elif tok == "--":
            nl = sql.find("\n", i)
            pos = n if nl < 0 else nl + 1
        elif tok == "/*":
            pos = _skip_block_comment(sql, i + 2)
        else:  # '$'
            if i > 0 and _IDENT_CHAR.match(sql[i - 1]):
                pos = i + 1  # part of an identifier such as a$b
                continue
            pm = _PARAM.match(sql, i)
            if pm:
                cur_max = max(cur_max, int(pm.group(1)))
                pos = pm.end()
                continue
            dm = _DOLLAR_TAG.match(sql, i)
            if dm:
                delim = dm.group()
                end = sql.find(delim, dm.end())
                if end < 0:
                    raise SqlError("42601", f"unterminated dollar-quoted string at or near \"{delim}\"",
                                   position=i + 1)
                pos = end + len(delim)
            else:
                pos = i + 1
    if edits is not None and pos < n:
        _long_words(sql, pos, n, edits)
    spans.append((start, n))
    params.append(cur_max)
    return spans, params


def _quoted_identifier(sql: str, start: int, end: int, edits: list[Edit]) -> None:
    name = sql[start + 1:end - 1].replace('""', '"')
    if not name:
        raise SqlError("42601", 'zero-length delimited identifier at or near """"', position=start + 1)
    cut = truncate_identifier(name)
    if cut != name:
        edits.append((start, end, '"' + cut.replace('"', '""') + '"', _truncation_notice(name, cut)))


def _backtick_identifier(sql: str, start: int, end: int, edits: list[Edit]) -> None:
    """`name` -> "name" (``""`` for a double quote inside), truncated like any identifier."""
    name = sql[start + 1:end - 1].replace("``", "`")
    if not name:
        raise SqlError("42601", "zero-length delimited identifier at or near \"``\"", position=start + 1)
    cut = truncate_identifier(name)
    notice = _truncation_notice(name, cut) if cut != name else ""
    edits.append((start, end, '"' + cut.replace('"', '""') + '"', notice))


def strip_leading(sql: str, pos: int = 0) -> int:
    """Index of the first character that is neither whitespace nor inside a comment."""
    n = len(sql)
    while pos < n:
        c = sql[pos]
        if c.isspace():
            pos += 1
        elif sql.startswith("--", pos):
            nl = sql.find("\n", pos)
            pos = n if nl < 0 else nl + 1
        elif sql.startswith("/*", pos):
            pos = _skip_block_comment(sql, pos + 2)
        else:
            break
    return pos


@lru_cache(maxsize=4096)
def _split_cached(sql: str) -> tuple[Statement, ...]:
    return tuple(_split(sql))


def _split(sql: str) -> list[Statement]:
    edits: list[Edit] = []
    spans, params = _scan(sql, edits)
    out: list[Statement] = []
    for (s, e), mp in zip(spans, params):
        body_start = strip_leading(sql, s)
        if body_start >= e:
            continue  # empty or comment-only
        text = sql[body_start:e].rstrip()
        mine = [ed for ed in edits if body_start <= ed[0] < e]
        for ed_start, ed_end, replacement, _ in reversed(mine):
            text = text[:ed_start - body_start] + replacement + text[ed_end - body_start:]
        out.append(Statement(text, body_start, mp, tuple(ed[3] for ed in mine if ed[3])))
    return out


def split_statements(sql: str) -> list[Statement]:
    """Non-empty statements of ``sql`` in order; [] means an empty query. Raises 42601 on unterminated quotes."""
    if len(sql) <= 8192:
        return list(_split_cached(sql))
    return _split(sql)


def max_param_index(sql: str) -> int:
    """Highest ``$n`` placeholder in ``sql`` outside quotes and comments."""
    _, params = _scan(sql)
    return max(params) if params else 0


def words(sql: str, limit: int = 6) -> list[str]:
    """The first ``limit`` tokens, comments skipped, words lower-cased (quoted identifiers kept as written)."""
    out: list[str] = []
    pos = strip_leading(sql)
    n = len(sql)
    while pos < n and len(out) < limit:
        m = _WORD.match(sql, pos)
        if m is None:
            break
        tok = m.group()
        out.append(tok if tok.startswith('"') else tok.lower())
        pos = strip_leading(sql, m.end())
    return out
