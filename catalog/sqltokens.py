"""A PostgreSQL lexer just precise enough to rewrite catalog queries for DuckDB and to read them.

DuckDB's parser is PostgreSQL's, so catalog queries are handed to it nearly verbatim; what
differs (``::regclass``, ``OPERATOR(pg_catalog.~)``, ``COLLATE pg_catalog.default``, the
``pg_catalog.`` qualifier, session keywords like ``current_user``) is rewritten at the token
level, which keeps the client's text, quoting and spacing intact elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN_RE = re.compile(
    r"""
     (?P<ws>\s+)
    |(?P<comment>--[^\n]*|/\*.*?\*/)
    |(?P<str>[eE]'(?:[^'\\]|\\.|'')*'|[bBxXnN]?'(?:[^']|'')*'(?:\s*\n\s*'(?:[^']|'')*')*)
    |(?P<dollar>\$(?P<tag>[A-Za-z_][A-Za-z_0-9]*|)\$.*?\$(?P=tag)\$)
    |(?P<qid>"(?:[^"]|"")*"|`(?:[^`]|``)*`)
    |(?P<param>\$\d+)
    |(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<word>[A-Za-z_\u0080-\uffff][A-Za-z_0-9$\u0080-\uffff]*)
    |(?P<cast>::)
    |(?P<op>[~!@#%^&|?+\-*/<>=]+)
    |(?P<punct>[(),;.\[\]:{}])
    """,
    re.S | re.X,
)


@dataclass(frozen=True)
class Token:
    kind: str  # ws comment str dollar qid param num word cast op punct
    text: str

    @property
    def lower(self) -> str:
        return self.text.lower()

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words

    @property
    def ident(self) -> str | None:
        """The identifier this token names (case-folded unless quoted), or None."""
        if self.kind == "word":
            return self.text.lower()
        if self.kind == "qid":  # "name", or GreptimeDB's `name` (the splitter rewrites those first)
            if self.text[0] == "`":
                return self.text[1:-1].replace("``", "`")
            return self.text[1:-1].replace('""', '"')
        return None


def tokenize(sql: str) -> list[Token]:
    """Split SQL into tokens; raises ValueError on text it cannot lex (an unterminated quote)."""
    out: list[Token] = []
    pos = 0
    n = len(sql)
    while pos < n:
        m = _TOKEN_RE.match(sql, pos)
        if m is None:
            raise ValueError(pos)
        kind = m.lastgroup
        if kind == "tag":
            kind = "dollar"
        out.append(Token(kind or "punct", m.group(0)))
        pos = m.end()
    return out


def significant(tokens: list[Token]) -> list[Token]:
    return [t for t in tokens if t.kind not in ("ws", "comment")]


def string_value(tok: Token) -> str:
    """The value of a string literal token ('..', E'..', $$..$$)."""
    text = tok.text
    if tok.kind == "dollar":
        end = text.index("$", 1) + 1
        return text[end:-end]
    if text[0] in "eE":
        body = text[2:-1].replace("''", "'")
        return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(m.group(1), m.group(1)), body)
    if text[0] in "bBxXnN":
        text = text[1:]
    parts = re.findall(r"'((?:[^']|'')*)'", text)
    return "".join(p.replace("''", "'") for p in parts)


def split_ident_chain(tokens: list[Token], start: int) -> tuple[list[str], int]:
    """Read ``a.b.c`` (words or quoted identifiers) from significant tokens; returns parts, next index."""
    parts: list[str] = []
    i = start
    while i < len(tokens) and tokens[i].ident is not None:
        parts.append(tokens[i].ident or "")
        if i + 1 < len(tokens) and tokens[i + 1].text == "." and i + 2 < len(tokens) and tokens[i + 2].ident is not None:
            i += 2
            continue
        i += 1
        break
    return parts, i
