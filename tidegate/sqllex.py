"""The one SQL lexer: PostgreSQL's lexical rules, used by every layer that reads SQL text.

Every reader of a client's SQL (the gateway's statement splitter and session statements, the
catalog's pg_catalog rewriter, the engine's DDL, flow, job and refresh readers) lexes it here, so
they agree on what a token is:

- ``'...'`` strings with ``''`` escapes; ``E'...'`` with backslash escapes (``\\n``, ``\\t``,
  ``\\b``, ``\\f``, ``\\r``, octal ``\\ooo``, ``\\xhh``, ``\\uXXXX``, ``\\UXXXXXXXX``);
  ``U&'...'`` with ``\\XXXX`` / ``\\+XXXXXX`` escapes; ``B'...'``, ``X'...'``, ``N'...'``; strings
  continued over a newline (``'a'`` newline ``'b'`` is ``'ab'``); ``$tag$...$tag$`` dollar quotes;
- ``"..."`` identifiers (``U&"..."`` too) and GreptimeDB's (MySQL's) `` `...` ``;
- identifiers with non-ASCII letters (``données``), ``$`` inside identifiers (``a$b``), ``$n``
  parameters;
- ``--`` line comments and nested ``/* /* */ */`` comments; operators cut where a comment starts,
  and a trailing ``+`` / ``-`` dropped from a multi-character operator as PostgreSQL does.

Two entry points share those rules (the same quote, comment and dollar-quote scanners):
:func:`split_statements` jumps between the characters that matter, so a multi-megabyte INSERT splits
quickly, and applies the identifier rules once for every later reader (a zero-length quoted
identifier is 42601; an identifier longer than NAMEDATALEN-1 = 63 bytes is truncated with a NOTICE,
42622; `` `name` `` becomes ``"name"``); :func:`tokenize` gives every token with its kind, text and
offsets.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from tidegate.errors import SqlError

NAMEDATALEN = 64

# ------------------------------------------------------------------ shared scanners


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


def _skip_dollar(sql: str, i: int) -> int | None:
    """``sql[i]`` is '$' at a token start: the index after a ``$tag$...$tag$`` string, or None."""
    dm = _DOLLAR_TAG.match(sql, i)
    if dm is None:
        return None
    delim = dm.group()
    end = sql.find(delim, dm.end())
    if end < 0:
        raise SqlError("42601", f"unterminated dollar-quoted string at or near \"{delim}\"", position=i + 1)
    return end + len(delim)


def _is_estring_start(sql: str, i: int) -> bool:
    """Whether the quote at ``i`` opens an E'' string (an ``E`` that is a token of its own before it)."""
    return i > 0 and sql[i - 1] in "eE" and (i < 2 or not _IDENT_CHAR.match(sql[i - 2]))


_BLOCK = re.compile(r"/\*|\*/")
_IDENT_START = r"A-Za-z_\u0080-\U0010ffff"
_IDENT_CONT = r"A-Za-z0-9_$\u0080-\U0010ffff"
_TAG_CONT = r"A-Za-z0-9_\u0080-\U0010ffff"  # a dollar quote's tag holds no '$'
_DOLLAR_TAG = re.compile(rf"\$([{_IDENT_START}][{_TAG_CONT}]*)?\$")
_PARAM = re.compile(r"\$([0-9]+)")
_IDENT_CHAR = re.compile(rf"[{_IDENT_CONT}]")

# ------------------------------------------------------------------ tokens

# One pass over the text: every token kind PostgreSQL has, quoted ones included (a dollar quote by
# its tag). Text this pattern cannot take (an unterminated quote, a stray '$') and nested
# comments go through the careful scanners above, which report 42601 where PostgreSQL does.
_P_WORD = rf"[{_IDENT_START}][{_IDENT_CONT}]*"
_P_NUM = r"(?:[0-9]+(?:\.(?!\.)[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_P_ESTR = r"[eE]'(?:[^'\\]|\\.|'')*'"
_P_STR = r"(?:[bBxXnN]|[uU]&)?'(?:[^']|'')*'"
_P_DOLLAR = rf"\$(?P<tag>(?:[{_IDENT_START}][{_TAG_CONT}]*)?)\$.*?\$(?P=tag)\$"
_P_PARAM = r"\$[0-9]+"
_TOKEN = re.compile(
    rf"""\s*(?:
     (?P<comment>--[^\n]*)
    |(?P<str>{_P_ESTR}|{_P_STR}|{_P_DOLLAR})
    |(?P<qid>(?:[uU]&)?"(?:[^"]|"")*"|`(?:[^`]|``)*`)
    |(?P<num>{_P_NUM})
    |(?P<word>{_P_WORD})
    |(?P<param>{_P_PARAM})
    |(?P<cast>::)
    |(?P<block>/\*)
    |(?P<op>[~!@#^&|?+\-*/%<>=]+)
    |(?P<punct>\.\.|:=|[(),;.\[\]:{{}}]))
    """,
    re.X | re.S,
)
# One literal of a VALUES row, with the tokens' own patterns (what bulk INSERTs are made of, read a
# value per match): a string ('', E'', N'', U&''), ``TYPE 'text'``, a signed number, NULL / TRUE /
# FALSE / DEFAULT, or ``$n``; then an optional ``::type`` (one word). Anything else (comments,
# expressions, continued strings) does not match: the statement's full reader takes it.
LITERAL = re.compile(
    rf"""\s*(?:
     (?P<s>{_P_ESTR}|(?:[nN]|[uU]&)?'(?:[^']|'')*')
    |(?P<t>{_P_WORD})\s*(?P<ts>{_P_ESTR}|'(?:[^']|'')*')
    |(?P<n>[+-]?{_P_NUM})
    |(?P<w>(?i:null|true|false|default))(?![{_IDENT_CONT}])
    |\$(?P<p>[0-9]+)
    )\s*(?:::\s*(?P<c>{_P_WORD})\s*)?""",
    re.X,
)
_SPACE = " \t\n\r\f\v"
_CONTINUATION = re.compile(r"[ \t\f\r]*\n\s*'")  # 'a' <newline> 'b' is one string 'ab'
_QUOTED = re.compile(r"""[eEbBxXnN]?'|[uU]&['"]|"|`|\$""")  # what the careful scanners take


@dataclass(slots=True)
class Token:
    """One token: ``kind`` is one of ws comment str qid param num word cast op punct; ``text`` is
    exactly as written; ``start``/``end`` are offsets in the lexed text. Every string literal
    ('', E'', U&'', B'', X'', N'', $$) is kind ``str``: :attr:`value` is its value."""

    kind: str
    text: str
    start: int = 0
    end: int = 0

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def upper(self) -> str:
        """Upper-cased when a word (keywords compared as PostgreSQL does), else the text."""
        return self.text.upper() if self.kind == "word" else self.text

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words

    @property
    def ident(self) -> str | None:
        """The identifier this token names (folded to lower case unless quoted), or None."""
        if self.kind == "word":
            return self.text.lower()
        if self.kind == "qid":
            return identifier_value(self.text)
        return None

    @property
    def value(self) -> str:
        """A string literal's value (escapes decoded); other tokens' text."""
        return string_value(self.text) if self.kind == "str" else self.text


def tokenize(sql: str) -> list[Token]:
    """Every token of ``sql`` in order (whitespace and comments included). Raises 42601 on text
    PostgreSQL's lexer refuses (unterminated quotes or comments, a stray character)."""
    return list(iter_tokens(sql))


def iter_tokens(sql: str, pos: int = 0, *, significant: bool = False) -> Iterator[Token]:
    """The tokens of ``sql`` from ``pos`` on, lexed as they are asked for; with ``significant``,
    whitespace and comments are skipped."""
    n = len(sql)
    match = _TOKEN.match
    while pos < n:
        m = match(sql, pos)  # whitespace, then one token
        if m is None:
            start = pos
            while start < n and sql[start].isspace():
                start += 1
            kind = None
        else:
            kind = m.lastgroup
            start, end = m.start(kind), m.end()
            if kind == "word" and end - start == 1 and sql[start] in "eEbBxXnN" and sql[end:end + 1] == "'":
                kind = None  # E'...', B'...' the pattern could not close: unterminated
        if start > pos and not significant:
            yield Token("ws", sql[pos:start], pos, start)
        if start == n:
            return
        if kind is None or kind == "block":
            end = _careful_end(sql, start)
            kind = "comment" if kind == "block" else ("qid" if sql[end - 1] in '"`' else "str")
        elif kind == "str":
            if end < n and sql[end] in _SPACE and sql[end - 1] == "'":
                end = _continued(sql, start, end)
        elif kind == "op" and end - start > 1:
            end = start + _operator_length(sql[start:end])
        if not significant or kind != "comment":
            yield Token(kind, sql[start:end], start, end)
        pos = end


def _careful_end(sql: str, pos: int) -> int:
    """End of the token at ``pos`` that the one-pass pattern could not take: a nested comment, or
    text PostgreSQL refuses (42601 with its wording)."""
    if sql.startswith("/*", pos):
        return _skip_block_comment(sql, pos + 2)
    q = _QUOTED.match(sql, pos)
    end = _quoted_end(sql, pos, q.group()) if q is not None else None
    if end is None:
        raise SqlError("42601", f'syntax error at or near "{sql[pos]}"', position=pos + 1)
    return end


def _continued(sql: str, start: int, end: int) -> int:
    """End of a string literal continued over newlines (``'a'`` newline ``'b'``) from ``end``."""
    e_string = sql[start] in "eE"
    while True:
        c = _CONTINUATION.match(sql, end)
        if c is None:
            return end
        end = _skip_quoted(sql, c.end(), "'", e_string)


def _quoted_end(sql: str, pos: int, start: str) -> int | None:
    """End of the quoted token that ``start`` opens at ``pos``; None when it opens none."""
    if start == "$":
        if _PARAM.match(sql, pos):
            return None
        return _skip_dollar(sql, pos)
    if start[-1] in '"`':
        return _skip_quoted(sql, pos + len(start), start[-1], False)
    return _continued(sql, pos, _skip_quoted(sql, pos + len(start), "'", start[0] in "eE"))


def _operator_length(op: str) -> int:
    """How much of a run of operator characters PostgreSQL takes as one operator."""
    for cut in ("--", "/*"):
        k = op.find(cut, 1)
        if k > 0:
            op = op[:k]
    if len(op) > 1 and op[-1] in "+-" and not any(c in "~!@#^&|`?%" for c in op):
        op = op.rstrip("+-") or op[0]
    return len(op)


def closing(tokens: list[Token], i: int) -> int | None:
    """Index of the ``)`` / ``]`` that closes the bracket at ``tokens[i]``; None when unclosed."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].text in ("(", "["):
            depth += 1
        elif tokens[j].text in (")", "]"):
            depth -= 1
            if depth == 0:
                return j
    return None


def name_list(tokens: list[Token], i: int) -> tuple[list[Token], int] | None:
    """The identifiers of ``( a, "B", c )`` opening at ``tokens[i]`` and the index after it; None
    when anything else is written there."""
    close = closing(tokens, i)
    if close is None or tokens[i].text != "(":
        return None
    inner = tokens[i + 1:close]
    if len(inner) % 2 == 0 or any(t.ident is None for t in inner[::2]) or any(t.text != "," for t in inner[1::2]):
        return None
    return inner[::2], close + 1


def scan(sql: str) -> list[Token]:
    """The significant tokens of ``sql`` (whitespace and comments dropped)."""
    return list(iter_tokens(sql, significant=True))


def split_ident_chain(tokens: list[Token], start: int) -> tuple[list[str], int]:
    """Read ``a.b.c`` (words or quoted identifiers) from significant tokens; returns parts, next index."""
    parts: list[str] = []
    i = start
    while i < len(tokens) and tokens[i].ident is not None:
        parts.append(tokens[i].ident or "")
        if i + 2 < len(tokens) and tokens[i + 1].text == "." and tokens[i + 2].ident is not None:
            i += 2
            continue
        i += 1
        break
    return parts, i


# ------------------------------------------------------------------ literal values

_E_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)
_E_SIMPLE = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_U_ESCAPE = re.compile(r"\\(?:\\|([0-9A-Fa-f]{4})|\+([0-9A-Fa-f]{6}))")
_PIECE = re.compile(r"'((?:[^']|'')*)'")


def _code_point(value: int) -> str:
    if not 0 < value <= 0x10FFFF or 0xD800 <= value <= 0xDFFF:
        raise SqlError("22P05" if value == 0 else "22021", "invalid Unicode escape value")
    return chr(value)


def _e_escape(m: re.Match) -> str:
    octal, hexa, u4, u8, other = m.groups()
    if octal is not None:
        return chr(int(octal, 8) & 0xFF)
    if hexa is not None:
        return chr(int(hexa, 16))
    if u4 is not None or u8 is not None:
        return _code_point(int(u4 or u8, 16))
    return _E_SIMPLE.get(other, other)


def unicode_value(body: str, escape: str = "\\") -> str:
    """The value of a ``U&'...'`` literal's body with its escape character (``UESCAPE '!'``):
    ``\\XXXX``, ``\\+XXXXXX`` and a doubled escape character."""
    if escape == "\\":
        pattern = _U_ESCAPE
    elif len(escape) != 1 or escape in "0123456789abcdefABCDEF+'\" \t\n\r":
        raise SqlError("22025", "invalid Unicode escape character")
    else:
        e = re.escape(escape)
        pattern = re.compile(f"{e}(?:{e}|([0-9A-Fa-f]{{4}})|\\+([0-9A-Fa-f]{{6}}))")
    if escape in pattern.sub("", body):
        raise SqlError("22025", "invalid Unicode escape",
                       hint=f"Unicode escapes must be {escape}XXXX or {escape}+XXXXXX.")
    return pattern.sub(lambda m: escape if m.group() == escape * 2 else _code_point(int(m.group(1) or m.group(2), 16)),
                       body)


def string_value(text: str) -> str:
    """The value of a string literal as written (``'..'``, ``E'..'``, ``U&'..'``, ``B''``, ``X''``,
    ``N''``, ``$tag$..$tag$``, continued over newlines)."""
    if text[0] == "'" and text.count("'") == 2:
        return text[1:-1]  # the common case: no quote inside, not continued
    if text.startswith("$"):
        k = text.index("$", 1) + 1
        return text[k:-k]
    head = text[0]
    if head in "uU" and text[1:2] == "&":
        return unicode_value("".join(p.replace("''", "'") for p in _PIECE.findall(text[2:])))
    body = text[1:] if head in "eEbBxXnN" else text
    if head in "eE":
        # pieces of an E'' string: a backslash-escaped quote is part of the body
        pieces = re.findall(r"'((?:[^'\\]|\\.|'')*)'", body, re.S)
        return "".join(_E_ESCAPE.sub(_e_escape, p.replace("''", "'")) if "\\" in p else p.replace("''", "'")
                       for p in pieces)
    return "".join(p.replace("''", "'") for p in _PIECE.findall(body))


def unicode_body(text: str) -> str:
    """The body of a ``U&'...'`` literal, its quotes undoubled and its escapes left for UESCAPE."""
    return "".join(p.replace("''", "'") for p in _PIECE.findall(text[2:]))


def identifier_value(text: str) -> str:
    """The name a quoted identifier token spells (``"a""b"``, ``U&"d\\0061t"``, `` `x` ``)."""
    if text[0] == "`":
        return text[1:-1].replace("``", "`")
    if text[0] in "uU":
        return unicode_value(text[3:-1].replace('""', '"'))
    return text[1:-1].replace('""', '"')


# ------------------------------------------------------------------ statements


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


_SPECIAL = re.compile(r"""'|"|`|\$|/\*|--|;""")
# Unquoted words that may exceed 63 bytes (21 characters of up to 3 bytes each, at the least).
_LONG_WORD = re.compile(r"(?<![\w$])[A-Za-z_\u0080-\U0010ffff][\w$\u0080-\U0010ffff]{20,}")

Edit = tuple[int, int, str, str]  # (start, end, replacement, NOTICE text)


def _long_words(sql: str, lo: int, hi: int, edits: list[Edit]) -> None:
    """Truncations of the unquoted identifiers between ``lo`` and ``hi`` (outside quotes)."""
    for w in _LONG_WORD.finditer(sql, lo, hi):
        word = w.group()
        cut = truncate_identifier(word.lower())
        if cut != word.lower():
            edits.append((w.start(), w.end(), cut, _truncation_notice(word.lower(), cut)))


def _scan_statements(sql: str, edits: list[Edit] | None = None) -> tuple[list[tuple[int, int]], list[int]]:
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
            pos = _skip_quoted(sql, i + 1, "'", _is_estring_start(sql, i))
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
            end = _skip_dollar(sql, i)
            pos = i + 1 if end is None else end
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
    spans, params = _scan_statements(sql, edits)
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
    _, params = _scan_statements(sql)
    return max(params) if params else 0


@lru_cache(maxsize=1024)
def identifiers(sql: str) -> frozenset[str]:
    """Every name ``sql`` spells (words and quoted identifiers, folded as PostgreSQL folds them);
    empty when the lexer refuses the text. Cached: catalog queries ask it several times."""
    try:
        return frozenset(t.ident for t in iter_tokens(sql, significant=True) if t.ident is not None)
    except SqlError:
        return frozenset()


def leading(sql: str, limit: int = 8) -> list[Token]:
    """The first ``limit`` significant tokens (what routes a statement), lexed no further; stops
    early at text the lexer refuses (the statement's own reader reports that)."""
    out: list[Token] = []
    try:
        for t in iter_tokens(sql, significant=True):
            if len(out) >= limit:
                break
            out.append(t)
    except SqlError:
        pass
    return out


def words(sql: str, limit: int = 6) -> list[str]:
    """The first ``limit`` significant tokens as text: words lower-cased, anything else as written
    (quoted identifiers keep their quotes)."""
    return [t.text.lower() if t.kind == "word" else t.text for t in leading(sql, limit)]
