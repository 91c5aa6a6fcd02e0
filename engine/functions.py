"""Pure helpers for PostgreSQL value syntaxes the translator turns into Spark literals.

PostgreSQL accepts interval text (``'1 day 2 hours'``, ``'01:30:00'``, ``'2 mons'``) and array
text (``'{1,2,"a b"}'``) wherever a literal of those types is cast; Spark has no parser for
either, so they are decoded here into plain Python values (intervals by tidegate.pgvalues, the
parser the codec and storage use too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tidegate import pgvalues
from tidegate.errors import SqlError
from tidegate.pgvalues import parse_interval_fields

@dataclass(frozen=True)
class PgInterval:
    """PostgreSQL's interval representation: months, days and microseconds kept apart."""

    months: int = 0
    days: int = 0
    micros: int = 0

    @property
    def total_micros(self) -> int:
        """Day-time length, counting a day as 24 hours (exact in UTC)."""
        return self.days * 86_400_000_000 + self.micros


def parse_interval(text: str) -> PgInterval:
    """PostgreSQL interval input (tidegate.pgvalues: the one parser of codec, casts and storage)."""
    return PgInterval(*parse_interval_fields(text))


# PostgreSQL to_char() template patterns -> Java DateTimeFormatter patterns: only those whose
# output is the same (Java's MMMM is not PostgreSQL's blank-padded "Month", nor MMM its upper-case
# "MON"). Longest first where one is a prefix of another. Numeric patterns are case-insensitive
# in PostgreSQL ('yyyy-mm-dd' works as 'YYYY-MM-DD').
_TO_CHAR_TOKENS: list[tuple[str, str]] = [
    ("HH24", "HH"), ("hh24", "HH"), ("HH12", "hh"), ("hh12", "hh"), ("HH", "hh"), ("hh", "hh"),
    ("MI", "mm"), ("mi", "mm"), ("SS", "ss"), ("ss", "ss"), ("MS", "SSS"), ("ms", "SSS"), ("US", "SSSSSS"), ("us", "SSSSSS"),
    ("YYYY", "yyyy"), ("yyyy", "yyyy"), ("YY", "yy"), ("yy", "yy"),
    ("Mon", "MMM"), ("MM", "MM"), ("mm", "MM"), ("DDD", "DDD"), ("ddd", "DDD"), ("DD", "dd"), ("dd", "dd"),
    ("Dy", "EEE"), ("AM", "a"), ("PM", "a"), ("TZ", "z"), ("Q", "Q"),
]
# Letters that start a PostgreSQL template pattern: one not translated above is refused rather than
# printed as a literal letter (PostgreSQL would format it). Other letters are literal text.
_PATTERN_LETTERS = frozenset("ABCDFHIJMOPQRSTUWYabcdfhijmopqrstuwy")


def to_char_format(pattern: str) -> str | None:
    """Translate a to_char() date/time template into a Spark date_format pattern.

    Returns None when the template uses something without a faithful Spark equivalent (the
    caller then reports 0A000 rather than formatting differently).
    """
    out: list[str] = []
    literal: list[str] = []  # literal text, quoted as one run (Java reads '' inside quotes as ')

    def flush() -> None:
        if literal:
            text = "".join(literal)
            out.append("'" + text.replace("'", "''") + "'")
            literal.clear()

    i = 0
    while i < len(pattern):
        if pattern[i] == '"':
            end = pattern.find('"', i + 1)
            if end < 0:
                return None
            literal.append(pattern[i + 1 : end])
            i = end + 1
            continue
        if pattern.startswith("FM", i) or pattern.startswith(("SSSS", "ssss"), i):
            return None
        for token, java in _TO_CHAR_TOKENS:
            if pattern.startswith(token, i):
                flush()
                out.append(java)
                i += len(token)
                break
        else:
            ch = pattern[i]
            if ch in _PATTERN_LETTERS:
                return None
            if ch.isalpha() or ch == "'":
                literal.append(ch)
            else:
                flush()
                out.append(ch)
            i += 1
    flush()
    return "".join(out)


def similar_to_regex(pattern: str, escape: str | None = "\\") -> str:
    """PostgreSQL SIMILAR TO pattern -> an anchored Java regular expression."""
    out: list[str] = []
    i = 0
    in_bracket = False
    while i < len(pattern):
        ch = pattern[i]
        if escape and ch == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if in_bracket:
            out.append(ch)
            if ch == "]":
                in_bracket = False
        elif ch == "[":
            in_bracket = True
            out.append(ch)
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        elif ch in "|*+?{}()":
            out.append(ch)
        elif ch == ".":
            out.append("\\.")
        elif ch in "^$\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
        i += 1
    return "^(?s:" + "".join(out) + ")$"


def pg_regex_flags(flags: str) -> tuple[bool, str]:
    """regexp_replace/regexp_match flags -> (global, inline Java flags prefix)."""
    global_ = False
    inline = ""
    for ch in flags:
        if ch == "g":
            global_ = True
        elif ch == "i":
            inline += "i"
        elif ch == "c":
            continue
        elif ch in "nm":
            inline += "m"
        elif ch == "s":
            inline += "s"
        elif ch == "x":
            inline += "x"
        else:
            raise SqlError("22023", f'invalid regular expression option: "{ch}"')
    return global_, (f"(?{inline})" if inline else "")


def format_interval(months: int, days: int, micros: int) -> str:
    """PostgreSQL's default (``postgres`` IntervalStyle) text of an interval value."""
    return pgvalues.format_interval(months, days, micros)
