"""Pure helpers for PostgreSQL value syntaxes the translator turns into Spark literals.

PostgreSQL accepts interval text (``'1 day 2 hours'``, ``'01:30:00'``, ``'2 mons'``) and array
text (``'{1,2,"a b"}'``) wherever a literal of those types is cast; Spark has no parser for
either, so they are decoded here into plain Python values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from tidegate.errors import SqlError

_UNIT_ALIASES: dict[str, str] = {}
for _canon, _names in {
    "microsecond": ("microsecond", "microseconds", "us", "usec", "usecs", "useconds"),
    "millisecond": ("millisecond", "milliseconds", "ms", "msec", "msecs", "mseconds"),
    "second": ("second", "seconds", "s", "sec", "secs"),
    "minute": ("minute", "minutes", "m", "min", "mins"),
    "hour": ("hour", "hours", "h", "hr", "hrs"),
    "day": ("day", "days", "d"),
    "week": ("week", "weeks", "w"),
    "month": ("month", "months", "mon", "mons"),
    "year": ("year", "years", "y", "yr", "yrs"),
    "decade": ("decade", "decades", "dec", "decs"),
    "century": ("century", "centuries", "c", "cent"),
    "millennium": ("millennium", "millennia", "mil", "mils"),
}.items():
    for _n in _names:
        _UNIT_ALIASES[_n] = _canon

_MICROS = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
}
_MONTHS = {"month": 1, "year": 12, "decade": 120, "century": 1200, "millennium": 12000}


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


def _bad_interval(text: str) -> SqlError:
    return SqlError("22007", f'invalid input syntax for type interval: "{text}"')


def parse_interval(text: str) -> PgInterval:
    """Parse PostgreSQL interval input (postgres style, ``hh:mm:ss`` parts, ``@ ... ago``)."""
    raw = text
    s = text.strip().lower()
    if not s:
        raise _bad_interval(raw)
    ago = False
    if s.startswith("@"):
        s = s[1:].strip()
    if s.endswith(" ago"):
        ago = True
        s = s[:-4].strip()
    months = days = 0
    micros = Decimal(0)
    tokens = s.replace(",", " ").split()
    i = 0
    try:
        while i < len(tokens):
            tok = tokens[i]
            if ":" in tok:
                sign = -1 if tok.startswith("-") else 1
                parts = tok.lstrip("+-").split(":")
                if len(parts) == 2:
                    h, m, sec = parts[0], parts[1], "0"
                elif len(parts) == 3:
                    h, m, sec = parts
                else:
                    raise _bad_interval(raw)
                micros += sign * (
                    Decimal(h) * _MICROS["hour"] + Decimal(m) * _MICROS["minute"] + Decimal(sec) * _MICROS["second"]
                )
                i += 1
                continue
            match = re.fullmatch(r"([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)([a-z]*)", tok)
            if not match:
                raise _bad_interval(raw)
            number = Decimal(match.group(1))
            unit_text = match.group(2)
            if not unit_text:
                if i + 1 < len(tokens) and re.fullmatch(r"[a-z]+", tokens[i + 1]):
                    unit_text = tokens[i + 1]
                    i += 1
                else:
                    unit_text = "second"
            unit = _UNIT_ALIASES.get(unit_text)
            if unit is None:
                raise _bad_interval(raw)
            if unit in _MONTHS:
                whole = number * _MONTHS[unit]
                months += int(whole)
                frac_months = whole - int(whole)
                if frac_months:
                    extra_days = frac_months * 30
                    days += int(extra_days)
                    micros += (extra_days - int(extra_days)) * 86_400_000_000
            elif unit == "week":
                whole = number * 7
                days += int(whole)
                micros += (whole - int(whole)) * 86_400_000_000
            elif unit == "day":
                days += int(number)
                micros += (number - int(number)) * 86_400_000_000
            else:
                micros += number * _MICROS[unit]
            i += 1
    except InvalidOperation as exc:
        raise _bad_interval(raw) from exc
    total_micros = int(micros.to_integral_value())
    if ago:
        return PgInterval(-months, -days, -total_micros)
    return PgInterval(months, days, total_micros)


def parse_array_text(text: str) -> list[str | None]:
    """Split one-dimensional PostgreSQL array text (``{1,2,"a,b",NULL}``) into element texts."""
    s = text.strip()
    if not (s.startswith("{") and s.endswith("}")):
        raise SqlError("22P02", f'malformed array literal: "{text}"', detail='Array value must start with "{" or dimension information.')
    body = s[1:-1]
    items: list[str | None] = []
    if not body.strip():
        return items
    i = 0
    n = len(body)
    while i <= n:
        while i < n and body[i].isspace():
            i += 1
        if i < n and body[i] == '"':
            i += 1
            buf = []
            while i < n and body[i] != '"':
                if body[i] == "\\" and i + 1 < n:
                    i += 1
                buf.append(body[i])
                i += 1
            i += 1
            items.append("".join(buf))
            while i < n and body[i] != ",":
                i += 1
        else:
            start = i
            while i < n and body[i] != ",":
                if body[i] in "{}":
                    raise SqlError("0A000", "multidimensional array literals are not supported")
                i += 1
            value = body[start:i].strip()
            items.append(None if value.upper() == "NULL" else value)
        i += 1
    return items


# PostgreSQL to_char() template patterns -> Java DateTimeFormatter patterns (the common ones).
_TO_CHAR_TOKENS: list[tuple[str, str]] = [
    ("HH24", "HH"),
    ("HH12", "hh"),
    ("HH", "hh"),
    ("MI", "mm"),
    ("SS", "ss"),
    ("MS", "SSS"),
    ("US", "SSSSSS"),
    ("YYYY", "yyyy"),
    ("YY", "yy"),
    ("MONTH", "MMMM"),
    ("Month", "MMMM"),
    ("MON", "MMM"),
    ("Mon", "MMM"),
    ("MM", "MM"),
    ("DDD", "DDD"),
    ("DD", "dd"),
    ("DAY", "EEEE"),
    ("Day", "EEEE"),
    ("DY", "EEE"),
    ("Dy", "EEE"),
    ("AM", "a"),
    ("PM", "a"),
    ("TZ", "z"),
]


def to_char_format(pattern: str) -> str | None:
    """Translate a to_char() date/time template into a Spark date_format pattern.

    Returns None when the template uses something without a faithful Spark equivalent (the
    caller then reports 0A000 rather than formatting differently).
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == '"':
            end = pattern.find('"', i + 1)
            if end < 0:
                return None
            literal = pattern[i + 1 : end]
            out.append("'" + literal.replace("'", "''") + "'" if literal else "")
            i = end + 1
            continue
        if pattern.startswith("FM", i):
            return None
        for token, java in _TO_CHAR_TOKENS:
            if pattern.startswith(token, i):
                out.append(java)
                i += len(token)
                break
        else:
            ch = pattern[i]
            if ch.isalpha():
                out.append("'" + ch + "'")
            elif ch == "'":
                out.append("''")
            else:
                out.append(ch)
            i += 1
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
    """PostgreSQL's default (``postgres`` IntervalStyle) text of an interval value.

    Like PostgreSQL's EncodeInterval: a field after a negative one shows an explicit ``+``.
    """
    parts: list[str] = []
    is_before = False
    sign = -1 if months < 0 else 1
    years, mons = divmod(abs(months), 12)
    for value, unit in ((sign * years, "year"), (sign * mons, "mon"), (days, "day")):
        if value:
            plus = "+" if is_before and value > 0 else ""
            parts.append(f"{plus}{value} {unit}{'s' if value != 1 else ''}")  # PostgreSQL: "-1 days"
            is_before = value < 0
    if micros or not parts:
        neg = micros < 0
        total = abs(micros)
        hours, rem = divmod(total, 3_600_000_000)
        minutes, rem = divmod(rem, 60_000_000)
        seconds, frac = divmod(rem, 1_000_000)
        text = f"{'-' if neg else ('+' if is_before else '')}{hours:02d}:{minutes:02d}:{seconds:02d}"
        if frac:
            text += f".{frac:06d}".rstrip("0")
        parts.append(text)
    return " ".join(parts)
