"""PostgreSQL value rules shared by every layer: interval input, timestamp input, time zones.

One parser per syntax, used by the wire codec (gateway/codec.py), the translator's casts and
literals (engine/functions.py, engine/translate.py) and storage coercion (engine/storage.py), so
that a value means the same whichever path reads it.

- :func:`parse_interval_fields` reads PostgreSQL interval input (IntervalStyle ``postgres``
  input rules): ``'1 year 2 mons'``, ``'-1 2:03:04'`` (-1 days +02:03:04: the day count's sign
  does not carry to the clock), ``'@ 1 hour ago'``, ``'1-2'`` (years-months), ``'1.5 weeks'``
  (fractions spill into the smaller fields as PostgreSQL's AdjustFract* do) and ISO 8601
  ``'P1Y2M3DT4H5M6S'`` / ``'P0001-02-03T04:05:06'``.
- :func:`parse_timestamp` reads timestamp / timestamptz input; a timestamptz without an explicit
  offset or zone is local time in the session's TimeZone.
- :func:`parse_float` / :func:`check_json` read float4/float8 and json/jsonb input (22P02 for
  malformed text, 22003 for a float out of range); :func:`unit_name` reads the unit names
  PostgreSQL's DecodeUnits knows (interval input, date_trunc).
- :func:`zone_info` / :func:`spark_zone` turn a TimeZone setting into a ``ZoneInfo`` / a zone id
  Spark accepts.
- :data:`session_zone` is the TimeZone of the statement running in this thread/context
  (``with use_session_zone(info.timezone): ...``); value parsers that are not given a zone read it.
"""

from __future__ import annotations

from typing import Any

import contextlib
import functools
import json
import math
import re
import struct
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import date, datetime, timedelta, timezone, tzinfo
import decimal
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tidegate.errors import SqlError

# -- time zones --------------------------------------------------------------------------------

session_zone: ContextVar[str] = ContextVar("tidegate_session_zone", default="UTC")


@contextlib.contextmanager
def use_session_zone(zone: str | None) -> Iterator[None]:
    """Run a block with ``zone`` as the session TimeZone value parsers default to."""
    token = session_zone.set(zone or "UTC")
    try:
        yield
    finally:
        session_zone.reset(token)


_OFFSET_ZONE = re.compile(r"^(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$", re.I)


def _offset_zone(name: str, iso_sign: bool) -> timezone | None:
    m = _OFFSET_ZONE.match(name.strip())
    if not m:
        return None
    sign = 1 if m.group(1) == "+" else -1
    if not iso_sign:
        sign = -sign  # POSIX: 'UTC+5' is five hours WEST of Greenwich
    delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0), seconds=int(m.group(4) or 0))
    if delta > timedelta(hours=15):
        return None
    return timezone(sign * delta)


def zone_info(name: str | None, numeric_east: bool = True) -> ZoneInfo | timezone:
    """The tzinfo of a PostgreSQL TimeZone setting, read as PostgreSQL reads it.

    An IANA name or UTC/GMT; a plain number is hours EAST of Greenwich (``SET TIME ZONE -7``,
    stored by the gateway as ``'<-07>+07'``); any other offset spelling is a POSIX zone, hours
    WEST of Greenwich (``'UTC+5'``, ``'+05:30'``, the offset after ``<...>``). Unknown names fall
    back to UTC (the gateway refuses them at SET). ``numeric_east=False``: a plain number is a
    POSIX zone too, as in ``AT TIME ZONE '-7'``.
    """
    key = (name or "UTC").strip()
    if key.upper() in ("UTC", "GMT", "Z", "ZULU", "UCT", "UNIVERSAL", "ETC/UTC", "ETC/GMT"):
        return timezone.utc
    if numeric_east and re.fullmatch(r"[+-]?\d+(?:\.\d+)?", key):
        hours = Decimal(key)
        if abs(hours) <= 15:
            return timezone(timedelta(seconds=int(hours * 3600)))
    posix = re.fullmatch(r"<[^>]*>(.*)", key)
    body = posix.group(1) if posix else key
    if body[:3].upper() in ("UTC", "GMT"):
        body = body[3:]
    if body and body[0] in "+-":
        off = _offset_zone(body, iso_sign=False)
        if off is not None:
            return off
    if key and key[0].isdigit():
        off = _offset_zone("+" + key, iso_sign=False)
        if off is not None:
            return off
    for candidate in dict.fromkeys((key, key.title(), key.upper())):
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    return timezone.utc


def known_zone(name: str, numeric_east: bool = True) -> bool:
    """Whether ``name`` is a time zone :func:`zone_info` understands (not its UTC fallback)."""
    if zone_info(name, numeric_east) is not timezone.utc:
        return True
    return name.strip().upper() in ("UTC", "GMT", "Z", "ZULU", "UCT", "UNIVERSAL", "ETC/UTC", "ETC/GMT") or \
        bool(re.fullmatch(r"(?:UTC|GMT)?[+-]?0+(?::?00)*", name.strip(), re.I))


def spark_zone(name: str | None, numeric_east: bool = True) -> str:
    """A zone id Spark's ``spark.sql.session.timeZone`` accepts for a PostgreSQL TimeZone value."""
    tz = zone_info(name, numeric_east)
    if isinstance(tz, ZoneInfo):
        return tz.key
    off = tz.utcoffset(None)
    if not off:
        return "UTC"
    total = int(off.total_seconds())
    sign = "+" if total >= 0 else "-"
    h, rem = divmod(abs(total), 3600)
    m, s = divmod(rem, 60)
    return f"{sign}{h:02d}:{m:02d}" + (f":{s:02d}" if s else "")


def localize(naive: datetime, zone: str | None = None) -> datetime:
    """Local wall time in ``zone`` (default: the session's) -> an aware UTC datetime.

    Like PostgreSQL: a time in a DST gap is read with the offset before the transition
    (02:30 on a spring-forward night becomes 03:30 daylight time); an ambiguous time (the
    repeated hour in autumn) is read as standard time, the later of the two instants.
    """
    tz = zone_info(session_zone.get() if zone is None else zone)
    if not isinstance(tz, ZoneInfo):
        return naive.replace(tzinfo=tz).astimezone(timezone.utc)
    early = naive.replace(tzinfo=tz, fold=0)
    late = naive.replace(tzinfo=tz, fold=1)
    off_early, off_late = early.utcoffset(), late.utcoffset()
    if off_early == off_late:
        return early.astimezone(timezone.utc)
    # a gap: fold=0 uses the offset before the transition; ambiguous: take standard time (fold=1 in autumn)
    roundtrip = early.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None)
    if roundtrip != naive:  # nonexistent local time
        return (naive - off_early).replace(tzinfo=timezone.utc) if off_early is not None else early
    chosen = early if early.dst() == timedelta(0) else late
    return chosen.astimezone(timezone.utc)


# -- timestamps ----------------------------------------------------------------------------------

_TS_TAIL_OFFSET = re.compile(r"(?:\s*|(?<=\d))([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$")
_TS_TAIL_NAME = re.compile(r"\s+([A-Za-z][A-Za-z0-9_/+-]*)$")


_clock_use = threading.local()


def clock_reads() -> int:
    """How many values this thread has read from the clock ('now', 'today', 'tomorrow',
    'yesterday'): a translation that read one holds that moment's value and is not kept for a
    later statement (engine.plans)."""
    return getattr(_clock_use, "reads", 0)


def parse_timestamp(text: str, with_tz: bool, zone: str | None = None) -> datetime:
    """PostgreSQL timestamp input -> datetime (aware UTC for timestamptz, naive for timestamp).

    ISO forms (``2024-01-01 00:00:00[.ffffff]``, ``T`` separator), an optional offset (``+05``,
    ``-04:00``, ``Z``) or zone name (``UTC``, ``America/New_York``) at the end, and the special
    words now/today/tomorrow/yesterday/epoch. Without an offset a timestamptz is local time in
    ``zone`` (default: the session's TimeZone); a timestamp ignores any offset, as PostgreSQL
    does. Raises ValueError when the text is not a timestamp.
    """
    zone = session_zone.get() if zone is None else zone
    s = text.strip()
    refuse_bc(s)
    low = s.lower()
    if low in ("infinity", "+infinity", "-infinity"):
        raise infinity_refused("timestamp")
    if low in ("now", "today", "tomorrow", "yesterday"):
        _clock_use.reads = clock_reads() + 1
        now_utc = datetime.now(timezone.utc)
        tz = zone_info(zone)
        local = now_utc.astimezone(tz).replace(tzinfo=None)
        if low != "now":
            local = datetime.combine(local.date(), datetime.min.time())
            local += timedelta(days={"today": 0, "tomorrow": 1, "yesterday": -1}[low])
        if low == "now":
            return now_utc if with_tz else local
        return localize(local, zone) if with_tz else local
    if low == "epoch":
        return datetime(1970, 1, 1, tzinfo=timezone.utc) if with_tz else datetime(1970, 1, 1)
    body = s
    offset: timezone | ZoneInfo | None = None
    if body[-1:] in ("Z", "z") and len(body) > 10:
        body, offset = body[:-1], timezone.utc
    else:
        m = _TS_TAIL_OFFSET.search(body)
        if m and len(body[:m.start()].strip()) >= 10 and ":" in body[:m.start()] + "x:" and _date_prefix(body[:m.start()]):
            sign = 1 if m.group(1) == "+" else -1
            delta = timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0), seconds=int(m.group(4) or 0))
            offset = timezone(sign * delta)
            body = body[:m.start()]
        else:
            n = _TS_TAIL_NAME.search(body)
            if n and _date_prefix(body[:n.start()]) and not re.fullmatch(r"(?i)am|pm|bc|ad", n.group(1)):
                name = n.group(1)
                tz = zone_info(name)
                if tz is timezone.utc and name.upper() not in ("UTC", "GMT", "Z", "ZULU", "UCT", "UNIVERSAL"):
                    raise ValueError(f"unknown time zone {name}")
                offset = tz
                body = body[:n.start()]
    body = _expand_compact_date(body.strip())
    if "T" in body[8:12] or "t" in body[8:12]:
        body = body[:10] + " " + body[11:]
    naive = _parse_naive(body)
    if not with_tz:
        return naive
    if offset is None:
        return localize(naive, zone)
    if isinstance(offset, ZoneInfo):
        return localize(naive, offset.key)
    return naive.replace(tzinfo=offset).astimezone(timezone.utc)


def infinity_refused(type_word: str) -> SqlError:
    return SqlError("0A000", f"{type_word} infinity is not supported",
                    detail=f"{type_word}s are stored as Spark / Delta Lake {type_word}s, which have no infinity",
                    hint="Use a NULL or a far date such as 9999-12-31.")


_COMPACT_DATE = re.compile(r"(\d{4})(\d{2})(\d{2})(?=$|[\sTt])")


def _expand_compact_date(s: str) -> str:
    """PostgreSQL's undelimited ISO date (``20240101``, ``20240101 12:00``) as ``2024-01-01``."""
    m = _COMPACT_DATE.match(s)
    return f"{m.group(1)}-{m.group(2)}-{m.group(3)}{s[8:]}" if m else s


def _date_prefix(s: str) -> bool:
    return bool(re.match(r"\s*(?:\d{4,}-\d{1,2}-\d{1,2}|\d{8}(?=$|[\sTt]))", s))


def _parse_naive(body: str) -> datetime:
    m = re.fullmatch(r"(\d{4,})-(\d{1,2})-(\d{1,2})(?:\s+(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d+))?)?)?", body)
    if not m:
        raise ValueError(body)
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hh, mi, ss = int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0)
    frac = m.group(7) or ""
    us = 0
    if frac:
        us = int((Decimal("0." + frac) * 1_000_000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    extra = timedelta(0)
    if hh == 24 and mi == 0 and ss == 0 and us == 0:
        hh, extra = 0, timedelta(days=1)
    if ss == 60:
        ss, extra = 0, extra + timedelta(minutes=1)
    return datetime(y, mo, d, hh, mi, ss) + extra + timedelta(microseconds=us)


def refuse_bc(text: str) -> None:
    """0A000 for a date of the years before the Common Era ('4713-01-01 BC'): Spark and Delta
    store years 1 to 9999, and reading the text without its era would give an AD date."""
    if re.search(r"\bBC\s*$", text, re.I):
        raise SqlError("0A000", f'dates before the Common Era are not supported: "{text.strip()}"',
                       hint="Spark and Delta Lake store proleptic Gregorian dates of years 1 to 9999.")


def datetime_input_error(text: str, type_word: str) -> SqlError:
    """PostgreSQL's error for date/time text that could not be read: 22008 when it is well formed
    but a field is out of range ('2024-02-30', '2024-01-01 25:00'), else 22007."""
    m = re.fullmatch(r"\s*(\d{4,})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.\d+)?)?)?"
                     r"(?:\s*(?:[+-]\d{1,2}(?::?\d{2})?|Z|UTC))?\s*", text)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        hh, mi, ss = int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0)
        try:
            date(y, mo, d)
            ok = hh <= 24 and mi < 60 and ss <= 60
        except ValueError:
            ok = False
        if not ok:
            return SqlError("22008", f'date/time field value out of range: "{text}"')
    if _OTHER_DATE_ORDER.match(text):
        return SqlError("0A000", f'date/time input other than ISO 8601 is not supported: "{text}"',
                        hint="Write dates as YYYY-MM-DD (PostgreSQL's DateStyle ISO), e.g. 2024-01-05.")
    return SqlError("22007", f'invalid input syntax for type {type_word}: "{text}"')


# Dates PostgreSQL reads in its DateStyle's field order or with month names ('01-02-03',
# '1/2/2024', 'Jan 5 2024', '5 January 2024'); tidegate reads ISO 8601 only.
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
_OTHER_DATE_ORDER = re.compile(
    rf"\s*(?:\d{{1,2}}[-/.]\d{{1,2}}[-/.]\d{{1,4}}|\d{{4}}/\d{{1,2}}/\d{{1,2}}|\d{{1,2}}/\d{{1,2}}"
    rf"|(?:\d{{1,2}}\s*)?(?:{_MONTHS})[a-z]*\.?[\s,-]+\d|\d{{4}}-(?:{_MONTHS}))", re.I)


def parse_date(text: str, zone: str | None = None) -> date:
    """PostgreSQL date input: ISO (``2024-01-01``, ``20240101``), epoch / now / today / tomorrow /
    yesterday (in ``zone``, default the session's TimeZone); a time part, if any, must be a valid
    time and is ignored, as PostgreSQL's date input does. Raises ValueError when the text is no
    date; infinity and BC dates are refused (0A000: Spark and Delta store years 1 to 9999)."""
    s = text.strip()
    refuse_bc(s)
    low = s.lower()
    if low in ("infinity", "+infinity", "-infinity"):
        raise infinity_refused("date")
    if low in ("epoch", "now", "today", "tomorrow", "yesterday"):
        return parse_timestamp(s, False, zone).date()
    m = re.fullmatch(r"(\d{4,})-(\d{1,2})-(\d{1,2})", _expand_compact_date(s))
    if m:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    return parse_timestamp(s, False, zone).date()  # with a time part (and maybe a zone)


# -- intervals -----------------------------------------------------------------------------------

_UNITS: dict[str, str] = {}
for _canon, _names in {
    "microsecond": ("microsecond", "microseconds", "us", "usec", "usecs", "useconds", "usecond"),
    "millisecond": ("millisecond", "milliseconds", "ms", "msec", "msecs", "mseconds", "msecond"),
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
        _UNITS[_n] = _canon

# date_trunc / extract fields that are no interval unit
_FIELD_UNITS = {"quarter": "quarter", "qtr": "quarter"}


def unit_name(name: str) -> str | None:
    """The unit a PostgreSQL unit name denotes ('mins' -> minute, 'qtr' -> quarter), or None."""
    key = name.lower()
    return _UNITS.get(key) or _FIELD_UNITS.get(key)


_US = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000,
       "millisecond": 1_000, "microsecond": 1}
_YEARS = {"year": 1, "decade": 10, "century": 100, "millennium": 1000}


class _Acc:
    """PostgreSQL's struct pg_tm + fsec while an interval is decoded (fractions spill down)."""

    def __init__(self) -> None:
        self.months = 0
        self.days = 0
        self.us = Decimal(0)

    def frac_seconds(self, frac: Decimal, scale: int) -> None:
        self.us += frac * scale * 1_000_000

    def frac_days(self, frac: Decimal, scale: int) -> None:
        whole = int(frac * scale)
        self.days += whole
        self.frac_seconds(frac * scale - whole, 86_400)

    def add(self, unit: str, value: Decimal) -> None:
        whole = int(value)
        frac = value - whole
        if unit in _YEARS:
            self.months += whole * 12 * _YEARS[unit] + int((frac * 12 * _YEARS[unit]).to_integral_value(ROUND_HALF_EVEN))
        elif unit == "month":
            self.months += whole
            self.frac_days(frac, 30)
        elif unit == "week":
            self.days += whole * 7
            self.frac_days(frac, 7)
        elif unit == "day":
            self.days += whole
            self.frac_seconds(frac, 86_400)
        else:
            self.us += value * _US[unit]

    def result(self) -> tuple[int, int, int]:
        return self.months, self.days, int(self.us.to_integral_value(ROUND_HALF_EVEN))


def _bad(text: str) -> SqlError:
    return SqlError("22007", f'invalid input syntax for type interval: "{text}"')


def _clock(tok: str) -> Decimal | None:
    """'[-]h:mm[:ss[.f]]' (or 'mm:ss.f') -> signed microseconds; None if not a clock."""
    m = re.fullmatch(r"([+-]?)(\d+):(\d+)(?::(\d+(?:\.\d*)?))?|([+-]?)(\d+):(\d+\.\d*)", tok)
    if not m:
        return None
    if m.group(6) is not None:  # minutes:seconds.fraction
        sign = -1 if m.group(5) == "-" else 1
        us = Decimal(m.group(6)) * 60_000_000 + Decimal(m.group(7)) * 1_000_000
    else:
        sign = -1 if m.group(1) == "-" else 1
        us = Decimal(m.group(2)) * 3_600_000_000 + Decimal(m.group(3)) * 60_000_000
        if m.group(4):
            us += Decimal(m.group(4)) * 1_000_000
    return sign * us


_ISO_DATE_PART = re.compile(r"([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)([YMWD])")
_ISO_TIME_PART = re.compile(r"([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)([HMS])")


def _iso_interval(raw: str, s: str) -> tuple[int, int, int]:
    acc = _Acc()
    body = s[1:]
    date_part, _, time_part = body.partition("T")
    if not body or (not date_part and not _ and not time_part):
        raise _bad(raw)
    m = re.fullmatch(r"(\d+)-(\d+)-(\d+)", date_part)
    if m:  # alternative format P0001-02-03T04:05:06
        acc.add("year", Decimal(m.group(1)))
        acc.add("month", Decimal(m.group(2)))
        acc.add("day", Decimal(m.group(3)))
    else:
        pos = 0
        for pm in _ISO_DATE_PART.finditer(date_part):
            if pm.start() != pos:
                raise _bad(raw)
            pos = pm.end()
            acc.add({"Y": "year", "M": "month", "W": "week", "D": "day"}[pm.group(2)], Decimal(pm.group(1)))
        if pos != len(date_part):
            raise _bad(raw)
    if time_part:
        us = _clock(time_part)
        if us is not None:
            acc.us += us
        else:
            pos = 0
            for pm in _ISO_TIME_PART.finditer(time_part):
                if pm.start() != pos:
                    raise _bad(raw)
                pos = pm.end()
                acc.add({"H": "hour", "M": "minute", "S": "second"}[pm.group(2)], Decimal(pm.group(1)))
            if pos != len(time_part):
                raise _bad(raw)
    return acc.result()


_FIELD = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))([a-z]*)$")


# extract(field FROM interval): the display scale of each field's numeric result
INTERVAL_PART_SCALES = {"microsecond": 0, "millisecond": 3, "second": 6, "minute": 0, "hour": 0, "day": 0,
                        "month": 0, "quarter": 0, "year": 0, "decade": 0, "century": 0, "millennium": 0,
                        "epoch": 6}


def interval_part(months: int, days: int, micros: int, field: str) -> Decimal:
    """``extract(field FROM interval)`` (``field``: "epoch" or a name :func:`unit_name` gives),
    as PostgreSQL 15's interval_part: the value's months,
    days and microseconds split into fields with C's truncating division (a year is 12 months;
    hours are not carried into days); epoch counts a year as 365.25 days and a month as 30."""
    year, month = _c_div(months, 12), months - 12 * _c_div(months, 12)
    hour = _c_div(micros, 3_600_000_000)
    rest = micros - hour * 3_600_000_000
    minute = _c_div(rest, 60_000_000)
    usecs = rest - minute * 60_000_000  # seconds and their fraction, in microseconds
    if field == "epoch":
        seconds = (1461 * year + 120 * month + 4 * days) * 21600
        return (Decimal(seconds * 1_000_000 + micros) / 1_000_000).quantize(Decimal("0.000001"))
    values = {"microsecond": Decimal(usecs), "millisecond": (Decimal(usecs) / 1000).quantize(Decimal("0.001")),
              "second": (Decimal(usecs) / 1_000_000).quantize(Decimal("0.000001")), "minute": Decimal(minute),
              "hour": Decimal(hour), "day": Decimal(days), "month": Decimal(month),
              "quarter": Decimal(_c_div(month, 3) + 1), "year": Decimal(year), "decade": Decimal(_c_div(year, 10)),
              "century": Decimal(_c_div(year, 100)), "millennium": Decimal(_c_div(year, 1000))}
    if field not in values:
        raise SqlError("0A000", f'unit "{field}" not supported for type interval')
    return values[field]


def parse_interval_fields(text: str) -> tuple[int, int, int]:
    """PostgreSQL interval input -> (months, days, microseconds); 22007 when malformed.

    Fields are read right to left as PostgreSQL's DecodeInterval does: a number without a unit
    is seconds when it is the last field and days when a clock (``h:mm``) or an hour count
    follows it; each unit may appear once.
    """
    raw = text
    s = text.strip()
    if not s:
        raise _bad(raw)
    if s[0] in "Pp" and len(s) > 1 and s[1:2].upper() in "0123456789T.+-":
        try:
            return _iso_interval(raw, s.upper())
        except (InvalidOperation, ValueError):
            raise _bad(raw) from None
    s = s.lower().replace(",", " ")
    ago = False
    if s.startswith("@"):
        s = s[1:]
    tokens = s.split()
    if tokens and tokens[-1] == "ago":
        ago = True
        tokens = tokens[:-1]
    if not tokens:
        raise _bad(raw)
    # split "1day" / "2h" into number + unit; keep clocks and years-months whole
    fields: list[str] = []
    for tok in tokens:
        m = _FIELD.fullmatch(tok)
        if m and m.group(2):
            fields.extend([m.group(1), m.group(2)])
        else:
            fields.append(tok)
    acc = _Acc()
    seen: set[str] = set()
    pending: str | None = None  # the unit the next field to the left gets; "" = none allowed
    rightmost = True
    waiting = False  # a unit word still waits for its number
    try:
        for tok in reversed(fields):
            if tok in _UNITS:
                if waiting:
                    raise _bad(raw)
                pending = _UNITS[tok]
                waiting = True
                rightmost = False
                continue
            if waiting and not re.fullmatch(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)", tok):
                raise _bad(raw)
            waiting = False
            clock = _clock(tok)
            if clock is not None:
                if "clock" in seen or seen & {"hour", "minute", "second"}:
                    raise _bad(raw)
                seen.add("clock")
                acc.us += clock
                pending = "day"
                rightmost = False
                continue
            ym = re.fullmatch(r"([+-]?)(\d+)-(\d+)", tok)
            if ym:  # SQL years-months
                if "year" in seen or "month" in seen:
                    raise _bad(raw)
                seen.update(("year", "month"))
                sign = -1 if ym.group(1) == "-" else 1
                acc.months += sign * (int(ym.group(2)) * 12 + int(ym.group(3)))
                pending = ""
                rightmost = False
                continue
            if not re.fullmatch(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)", tok):
                raise _bad(raw)
            unit = pending if pending is not None else ("second" if rightmost else "")
            if not unit:
                raise _bad(raw)
            if unit in seen or (unit in ("hour", "minute", "second") and "clock" in seen):
                raise _bad(raw)
            seen.add(unit)
            acc.add(unit, Decimal(tok))
            pending = "day" if unit == "hour" else ""
            rightmost = False
        if waiting:
            raise _bad(raw)  # a unit with no number before it
    except InvalidOperation:
        raise _bad(raw) from None
    months, days, us = acc.result()
    if ago:
        months, days, us = -months, -days, -us
    if abs(us) >= 2**63 or abs(days) >= 2**31 or abs(months) >= 2**31:
        raise SqlError("22015", "interval field value out of range")
    return months, days, us


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


def localize_array(arr, zone: str | None = None):
    """Naive Arrow timestamps (local wall times in ``zone``, default the session's) -> UTC
    timestamps, with :func:`localize`'s DST rules (gap: offset before the transition; repeated
    hour: standard time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    arr = pc.cast(arr, pa.timestamp("us"))
    name = session_zone.get() if zone is None else zone
    tz = zone_info(name)
    utc = pa.timestamp("us", tz="UTC")
    if tz is timezone.utc:
        return arr.cast(utc)
    if not isinstance(tz, ZoneInfo):
        shift = int(tz.utcoffset(None).total_seconds() * 1_000_000)
        return pc.subtract(arr.cast(pa.int64()), shift).cast(utc)
    late = pc.fill_null(pc.greater_equal(arr, pa.scalar(ARROW_ZONES_END, pa.timestamp("us"))), False)
    if not pc.any(late).as_py():
        try:
            return pc.assume_timezone(arr, tz.key, ambiguous="raise", nonexistent="raise").cast(utc)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
            pass  # a zone Arrow lacks, a gap or a repeated hour: each value below
    return pa.array([None if v is None else _localize_us(v, tz.key) for v in arr.cast(pa.int64()).to_pylist()],
                    type=pa.int64()).cast(utc)


_EPOCH_NAIVE = datetime(1970, 1, 1)
# Arrow's time zone kernels read only a zone's listed transitions, which end in 2037: later
# instants get the last listed offset (no summer time), where PostgreSQL (and zoneinfo) extend the
# zone's rule. From this instant on (wall time or UTC), offsets are zoneinfo's.
ARROW_ZONES_END = datetime(2037, 1, 1)
ARROW_ZONES_END_US = (ARROW_ZONES_END - _EPOCH_NAIVE) // timedelta(microseconds=1)
_DATETIME_US = ((datetime.min - _EPOCH_NAIVE) // timedelta(microseconds=1) + 86_400_000_000,
                (datetime.max - _EPOCH_NAIVE) // timedelta(microseconds=1) - 86_400_000_000)


_US_PER_400_YEARS = 146_097 * 86_400_000_000  # the Gregorian calendar repeats, weekdays too


def _in_datetime_range(us: int) -> int:
    """An instant in Python's years 1..9999 with the same zone offset as ``us`` (µs since 1970):
    later ones moved back by whole 400-year cycles (a zone's rule repeats with the calendar),
    earlier ones clamped to year 1 (before any rule: the zone's first offset)."""
    if us > _DATETIME_US[1]:
        us -= -(-(us - _DATETIME_US[1]) // _US_PER_400_YEARS) * _US_PER_400_YEARS
    return max(us, _DATETIME_US[0])


def zone_offset_at(utc_us: int, tz: tzinfo) -> int:
    """The UTC offset, in seconds, of zone ``tz`` at an instant (µs since 1970, any year)."""
    probe = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=_in_datetime_range(utc_us))
    return int(probe.astimezone(tz).utcoffset().total_seconds())


def _localize_us(local_us: int, zone: str) -> int:
    """:func:`localize` of a wall time in µs since 1970 (any year) -> UTC µs."""
    naive = _EPOCH_NAIVE + timedelta(microseconds=_in_datetime_range(local_us))
    offset = naive - localize(naive, zone).replace(tzinfo=None)
    return local_us - offset // timedelta(microseconds=1)


# -- floats and json -------------------------------------------------------------------------------

_FLOAT_SPECIAL = {"infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf, "inf": math.inf,
                  "+inf": math.inf, "-inf": -math.inf, "nan": math.nan, "+nan": math.nan, "-nan": math.nan}
_FLOAT_RE = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*\Z")
# strtod's hexadecimal floats, which float8in accepts: 0x10, -0X1.8p3
_HEX_FLOAT_RE = re.compile(r"\s*[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?\s*\Z")

# -- text input of integers, booleans and numerics (the codec, casts and storage read alike) ------

INT_RANGES = {"int2": (-(2**15), 2**15 - 1), "int4": (-(2**31), 2**31 - 1), "int8": (-(2**63), 2**63 - 1),
              "oid": (-(2**31), 2**32 - 1), "regclass": (0, 2**32 - 1), "regtype": (0, 2**32 - 1),
              "regproc": (0, 2**32 - 1)}
INT_TYPE_WORDS = {"int2": "smallint", "int4": "integer", "int8": "bigint", "oid": "oid", "regclass": "regclass",
                  "regtype": "regtype", "regproc": "regproc"}
_INT_RE = re.compile(r"\s*([+-]?)([0-9]+)\s*\Z")  # PostgreSQL 15: decimal digits only
BOOL_TRUE = frozenset({"t", "tr", "tru", "true", "y", "ye", "yes", "on", "1"})
BOOL_FALSE = frozenset({"f", "fa", "fal", "fals", "false", "n", "no", "of", "off", "0"})


def cast_number_texts(texts, arrow_type):
    """A pyarrow string array of integer / float / numeric input cast to ``arrow_type`` in one
    vectorised step when every value is a plain PostgreSQL spelling (Arrow's own casts also read
    ``0x1F``, ``1_000`` and overflow to infinity); None when some value needs the per-value rules
    (:func:`parse_int`, :func:`parse_float`, :func:`parse_numeric`), which give PostgreSQL's answer
    or error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pattern = _PLAIN_INTEGER if pa.types.is_integer(arrow_type) else _PLAIN_NUMBER
    if not pc.all(pc.match_substring_regex(texts, pattern)).as_py():
        return None
    try:
        out = pc.cast(texts, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if pa.types.is_floating(arrow_type) and pc.any(pc.is_inf(out)).as_py():
        return None
    return out


_PLAIN_INTEGER = r"^[+-]?[0-9]+$"
_PLAIN_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"


def parse_int(text: str, type_name: str = "int8") -> int:
    """int2 / int4 / int8 (oid, reg*) input: 22P02 for anything but optionally signed decimal
    digits within white space, 22003 past the type's range."""
    m = _INT_RE.match(text)
    word = INT_TYPE_WORDS.get(type_name, type_name)
    if not m:
        raise SqlError("22P02", f'invalid input syntax for type {word}: "{text}"')
    value = int(m.group(2)) * (-1 if m.group(1) == "-" else 1)
    lo, hi = INT_RANGES.get(type_name, INT_RANGES["int8"])
    if not lo <= value <= hi:
        raise SqlError("22003", f'value "{text}" is out of range for type {word}')
    return value


def int_in_range(value: int, type_name: str) -> int:
    """An integer result or cast of type int2 / int4 / int8: 22003 past its range."""
    lo, hi = INT_RANGES[type_name]
    if not lo <= value <= hi:
        raise SqlError("22003", f"{INT_TYPE_WORDS[type_name]} out of range")
    return value


def int_arith(op: str, a: int, b: int, type_name: str) -> int:
    """PostgreSQL's integer operators (+ - * / %) of result type ``type_name``: division truncates
    toward zero, the remainder takes the dividend's sign, x % -1 is 0 for every x, a zero divisor
    is 22012 and a result past the type's range 22003."""
    if op in ("/", "%"):
        if b == 0:
            raise SqlError("22012", "division by zero")
        if op == "%":
            return abs(a) % abs(b) * (1 if a >= 0 else -1)
        q = abs(a) // abs(b)
        value = q if (a >= 0) == (b >= 0) else -q
    elif op == "+":
        value = a + b
    elif op == "-":
        value = a - b
    elif op == "*":
        value = a * b
    else:
        raise ValueError(op)
    return int_in_range(value, type_name)


def parse_bool(text: str) -> bool:
    """boolean input: any unique prefix of true / false / yes / no, on / off, 1 / 0, any case,
    within white space."""
    key = text.strip().lower()
    if key in BOOL_TRUE:
        return True
    if key in BOOL_FALSE:
        return False
    raise SqlError("22P02", f'invalid input syntax for type boolean: "{text}"')


def parse_numeric(text: str) -> Decimal:
    """numeric input (unconstrained): digits with an optional point and exponent, NaN and the
    infinities (which tidegate's columns then refuse); '1e5' has scale 0, as in PostgreSQL."""
    key = text.strip().lower()
    if key == "nan":
        return Decimal("NaN")
    if key in ("infinity", "+infinity", "inf", "+inf"):
        return Decimal("Infinity")
    if key in ("-infinity", "-inf"):
        return Decimal("-Infinity")
    if not _FLOAT_RE.match(text):  # the same digits as float8's decimal form
        raise SqlError("22P02", f'invalid input syntax for type numeric: "{text}"')
    value = Decimal(text.strip())
    if value and value.adjusted() >= 131072:  # PostgreSQL's limit of digits before the point
        raise SqlError("22003", "value overflows numeric format")
    if value.as_tuple().exponent > 0:
        value = value.quantize(Decimal(1), context=_context(value.adjusted() + 2, decimal.ROUND_HALF_EVEN))
    return value


def like_regex(pattern: str) -> re.Pattern[str]:
    """A LIKE pattern as a regular expression: ``%`` any text, ``_`` one character, a backslash
    takes the next character literally (PostgreSQL's default escape)."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("^" + "".join(out) + "$", re.S)


def _malformed_array(text: str, detail: str) -> SqlError:
    return SqlError("22P02", f'malformed array literal: "{text}"', detail=detail)


def parse_array(text: str) -> list:
    """PostgreSQL array input (``{1,"a,b",NULL,{2}}``, optionally after ``[1:2]=`` bounds) as
    nested lists of element texts (None for NULL): array_in's rules, for the codec, casts and
    storage alike. Sub-arrays must have matching dimensions."""
    s = text.strip()
    bounds: list[tuple[int, int]] = []
    if s.startswith("["):  # explicit bounds '[1:2]={...}'
        m = re.match(r"((?:\[\s*[+-]?\d+\s*(?::\s*[+-]?\d+\s*)?\])+)\s*=", s)
        if m is None:
            raise _malformed_array(text, '"[" must introduce explicitly-specified array dimensions.')
        for lo, hi in re.findall(r"\[\s*([+-]?\d+)\s*(?::\s*([+-]?\d+)\s*)?\]", m.group(1)):
            bounds.append((int(lo), int(hi)) if hi else (1, int(lo)))
        if any(lo != 1 for lo, _ in bounds):
            raise SqlError("0A000", "array lower bounds other than 1 are not supported",
                           hint="tidegate's arrays start at 1: write the elements without dimensions.")
        s = s[m.end():].strip()
    if not s.startswith("{"):
        raise _malformed_array(text, 'Array value must start with "{" or dimension information.')
    pos, n = 0, len(s)

    def level() -> list:
        nonlocal pos
        pos += 1  # '{'
        items: list = []
        expect_item = True
        while True:
            while pos < n and s[pos].isspace():
                pos += 1
            if pos >= n:
                raise _malformed_array(text, "Unexpected end of input.")
            c = s[pos]
            if c == "}":
                if expect_item and items:
                    raise _malformed_array(text, 'Unexpected "}" character.')
                pos += 1
                return items
            if not expect_item:
                if c != ",":
                    raise _malformed_array(text, "Unexpected array element.")
                expect_item, pos = True, pos + 1
                continue
            if c == ",":
                raise _malformed_array(text, 'Unexpected "," character.')
            if c == "{":
                items.append(level())
            elif c == '"':
                pos += 1
                buf = []
                while True:
                    if pos >= n:
                        raise _malformed_array(text, "Unexpected end of input.")
                    ch = s[pos]
                    if ch == "\\" and pos + 1 < n:
                        buf.append(s[pos + 1])
                        pos += 2
                    elif ch == '"':
                        pos += 1
                        break
                    else:
                        buf.append(ch)
                        pos += 1
                items.append("".join(buf))
            else:
                buf, escaped = [], False
                while pos < n and s[pos] not in ",}":
                    ch = s[pos]
                    if ch in '{"':
                        raise _malformed_array(text, f'Unexpected "{ch}" character.')
                    if ch == "\\" and pos + 1 < n:
                        buf.append(s[pos + 1])
                        escaped, pos = True, pos + 2
                    else:
                        buf.append(ch)
                        pos += 1
                element = "".join(buf).strip()
                items.append(None if element.upper() == "NULL" and not escaped else element)
            expect_item = False

    result = level()
    if s[pos:].strip():
        raise _malformed_array(text, "Junk after closing right brace.")
    _check_dimensions(text, result)
    if bounds and (len(bounds) != len(_shape(result)) or any(
            hi - lo + 1 != n for (lo, hi), n in zip(bounds, _shape(result)))):
        raise _malformed_array(text, "Specified array dimensions do not match array contents.")
    return result


def _check_dimensions(text: str, items: list) -> None:
    nested = [isinstance(x, list) for x in items]
    if any(nested) and not all(nested):
        raise _malformed_array(text, "Multidimensional arrays must have sub-arrays with matching dimensions.")
    if any(nested):
        shapes = {_shape(x) for x in items}
        if len(shapes) > 1 or not all(items):
            raise _malformed_array(text, "Multidimensional arrays must have sub-arrays with matching dimensions.")
        for x in items:
            _check_dimensions(text, x)


def _shape(items: list) -> tuple[int, ...]:
    return (len(items),) + (_shape(items[0]) if items and isinstance(items[0], list) else ())


def parse_flat_array(text: str) -> list[str | None]:
    """A one-dimensional array's element texts (:func:`parse_array`); multidimensional input is
    refused with 0A000 where only one dimension is supported."""
    items = parse_array(text)
    if any(isinstance(x, list) for x in items):
        raise SqlError("0A000", "multidimensional array literals are not supported here",
                       hint="Use a one-dimensional array.")
    return items


def parse_bytea(s: str) -> bytes:
    """bytea text input: hex (``\\x0102``) or escape format (``a\\001\\\\``); 22023 / 22P02 when malformed."""
    if s.startswith("\\x"):
        body = "".join(s[2:].split())
        try:
            return bytes.fromhex(body)
        except ValueError:
            bad = next((c for c in body if c not in "0123456789abcdefABCDEF"), body[-1:])
            if len(body) % 2 and all(c in "0123456789abcdefABCDEF" for c in body):
                raise SqlError("22023", "invalid hexadecimal data: odd number of digits") from None
            raise SqlError("22023", f'invalid hexadecimal digit: "{bad}"') from None
    out = bytearray()
    i = 0
    b = s.encode()
    while i < len(b):
        c = b[i]
        if c != 0x5C:
            out.append(c)
            i += 1
        elif b[i + 1:i + 2] == b"\\":
            out.append(0x5C)
            i += 2
        elif len(b) >= i + 4 and all(0x30 <= x <= 0x37 for x in b[i + 1:i + 4]):
            out.append(int(b[i + 1:i + 4], 8))
            i += 4
        else:
            raise SqlError("22P02", f'invalid input syntax for type bytea: "{s}"')
    return bytes(out)


# The relative change rounding an unconstrained numeric to its stored scale may make.
_NUMERIC_KEPT = Decimal("1e-15")


def refuse_non_finite_numeric(value: Decimal) -> None:
    """0A000 for numeric NaN / infinity: Spark and Delta Lake decimals have neither."""
    if not value.is_finite():
        raise SqlError("0A000", "numeric NaN and infinity are not supported",
                       detail="numeric values are stored as Spark / Delta Lake decimals, which have neither",
                       hint="Use double precision for NaN and infinity.")


def check_unconstrained_numeric(given: Decimal, stored: Decimal, text: object) -> None:
    """0A000 when storing ``given`` as ``stored`` (an unconstrained numeric rounded to the scale a
    Delta decimal keeps) would make it another number: PostgreSQL keeps every digit. Rounding is
    kept while it changes the value less than a double's precision would (1/3 computed to 37
    digits is stored to 18); 1e-30 (-> 0) or 1.5e-18 (-> 2e-18) are refused."""
    if abs(stored - given) > abs(given) * _NUMERIC_KEPT:
        raise SqlError("0A000", f'numeric value "{text}" has too many digits after the decimal point',
                       detail="numeric without a declared scale is stored with 18 digits after the decimal point "
                              "(a Delta Lake decimal)",
                       hint="Declare the column numeric(p, s) to round to s digits, as PostgreSQL does, or round the value.")


def parse_float(text: str, real: bool = False) -> float:
    """float8 (or float4, ``real``) input as PostgreSQL reads it: 22P02 for malformed text,
    22003 for a value beyond the type's range or one that underflows to zero."""
    name = "real" if real else "double precision"
    key = text.strip().lower()
    if key in _FLOAT_SPECIAL:
        return _FLOAT_SPECIAL[key]
    if _HEX_FLOAT_RE.match(text):
        body = text.strip()
        value = float.fromhex(body if re.search(r"[pP]", body) else body + "p0")
        underflow = False
    elif not _FLOAT_RE.match(text):
        raise SqlError("22P02", f'invalid input syntax for type {name}: "{text}"')
    else:
        value = float(text)
        underflow = value == 0 and re.search(r"[1-9]", text.split("e")[0].split("E")[0]) is not None
    if real:
        try:
            rounded = struct.unpack("f", struct.pack("f", value))[0]
        except OverflowError:
            rounded = math.inf
        underflow = underflow or (rounded == 0 and value != 0)
        value = rounded
    if math.isinf(value) or underflow:
        raise SqlError("22003", f'"{text.strip()}" is out of range for type {name}')
    return value


def _reject_constant(name: str) -> None:
    raise ValueError(name)  # NaN, Infinity: Python's json accepts them, JSON does not


_TIME_RE = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?")
_TIME_ZONE_SUFFIX = re.compile(r"\s*(?:Z|UTC|GMT|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)\Z", re.I)
DAY_US = 86_400_000_000  # 24:00:00, the largest time PostgreSQL takes


def parse_time(text: str) -> int:
    """time input as PostgreSQL reads it, in microseconds after midnight: ``HH:MM[:SS[.f]]``, a
    zone after it ignored (time without time zone), a fraction rounded to microseconds, second 60
    and 24:00:00 itself taken (0 .. DAY_US). 22007 for malformed text, 22008 for a field out of
    range."""
    stripped = text.strip()
    m = _TIME_RE.match(stripped)
    if m and m.end() < len(stripped) and _TIME_ZONE_SUFFIX.fullmatch(stripped[m.end():]):
        stripped = stripped[:m.end()]
    m = _TIME_RE.fullmatch(stripped)
    if not m:
        raise SqlError("22007", f'invalid input syntax for type time: "{text}"')
    h, mi, sec, frac = m.groups()
    hh, mm, ss = int(h), int(mi), int(sec or 0)
    us = int(((frac or "") + "000000")[:6]) if frac else 0
    if frac and len(frac) > 6 and frac[6] >= "5":
        us += 1
    total = ((hh * 60 + mm) * 60 + ss) * 1_000_000 + us
    if mm > 59 or ss > 60 or hh > 24 or total > DAY_US:
        raise SqlError("22008", f'date/time field value out of range: "{text}"')
    return total


def check_json(text: str) -> None:
    """json / jsonb input: 22P02 unless ``text`` is one JSON value."""
    _json_document(text)


class _JsonObject(list):
    """A JSON object's (key, value) pairs, in the order written."""


def _json_document(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=Decimal, parse_int=Decimal,
                          object_pairs_hook=_JsonObject)
    except (ValueError, RecursionError):
        raise SqlError("22P02", "invalid input syntax for type json", detail=f'Token "{text[:40]}" is invalid.') from None


def jsonb_text(text: str) -> str:
    """jsonb input as jsonb prints it (PostgreSQL's jsonb_out): an object's keys shorter first, then
    by their bytes, a key written twice keeping its last value; ``", "`` and ``": "`` between
    items; numbers as numeric prints them (``1.50``, ``1e2`` is 100); strings escaped as
    escape_json escapes them, other characters as they are. 22P02 for text that is no JSON value."""
    out: list[str] = []
    _jsonb_write(_json_document(text), out)
    return "".join(out)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def json_quote(value: str) -> str:
    """A JSON string as PostgreSQL's escape_json writes it."""
    return '"' + "".join(_JSON_ESCAPES.get(c) or (f"\\u{ord(c):04x}" if c < " " else c) for c in value) + '"'


def _jsonb_write(value: Any, out: list[str]) -> None:
    if isinstance(value, _JsonObject):
        last = {key: item for key, item in value}  # a key written twice keeps its last value
        keys = sorted(last, key=lambda k: (len(k.encode("utf-8")), k.encode("utf-8")))
        out.append("{")
        for k, key in enumerate(keys):
            out.append(", " if k else "")
            out.append(json_quote(key))
            out.append(": ")
            _jsonb_write(last[key], out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for k, item in enumerate(value):
            out.append(", " if k else "")
            _jsonb_write(item, out)
        out.append("]")
    elif isinstance(value, str):
        out.append(json_quote(value))
    elif isinstance(value, Decimal):
        out.append(format(value.copy_abs() if not value else value, "f"))
    else:
        out.append("null" if value is None else "true" if value is True else "false")


# -- numeric results whose display scale PostgreSQL chooses per value ---------------------------
# numeric.c picks the scale of a quotient, square root or logarithm from the operands' leading
# base-10000 digits (NUMERIC_MIN_SIG_DIGITS = 16 significant digits, never fewer than an operand's
# display scale) and rounds half away from zero. Spark computes these in double precision or at a
# fixed decimal scale; the wire codec recomputes the client's value here from the exact operands.

_MIN_SIG_DIGITS = 16
_MAX_DISPLAY_SCALE = 1000


def _nbase_weight(value: Decimal) -> tuple[int, int]:
    """(weight, first digit) of |value| in PostgreSQL's base-10000 representation; (0, 0) for zero."""
    if not value:
        return 0, 0
    value = abs(value)
    weight = value.adjusted() // 4
    return weight, int(value.scaleb(-4 * weight))


def _display_scale(rscale: int, *scales: int) -> int:
    return min(max(rscale, 0, *scales), _MAX_DISPLAY_SCALE)


# Decimal arithmetic with room for any numeric a client may send (the default context keeps 28
# digits: quantizing 1e30 was an InvalidOperation)
WIDE_DECIMAL = decimal.Context(prec=1000, Emin=-9999999, Emax=9999999)


@functools.lru_cache(maxsize=4096)
def _context(prec: int, rounding: str) -> decimal.Context:
    return decimal.Context(prec=prec, rounding=rounding, Emin=-9999999, Emax=9999999)


@functools.lru_cache(maxsize=2048)
def _quantum(scale: int) -> Decimal:
    return Decimal(1).scaleb(-scale)


def own_scale(value: Decimal) -> int:
    """The display scale of an unconstrained numeric value: its digits after trailing zeros."""
    return max(-value.normalize().as_tuple().exponent, 0) if value else 0


def numeric_at_scale(value: Decimal, scale: int) -> Decimal:
    """``value`` shown at display scale ``scale`` (rounded half away from zero when shorter)."""
    return _rounded(value, scale)


def _rounded(value: Decimal, scale: int) -> Decimal:
    ctx = _context(max(value.adjusted(), 0) + scale + 5, decimal.ROUND_HALF_UP)
    rounded = value.quantize(_quantum(scale), context=ctx)
    return rounded if rounded else rounded.copy_abs()  # numeric has no negative zero


def numeric_div(a: Decimal, b: Decimal, min_scale: int = 0) -> Decimal:
    """a / b as PostgreSQL's numeric_div (select_div_scale; ``min_scale`` is the operands' larger
    display scale), rounded in integer arithmetic. b is non-zero (the engine raised 22012 otherwise)."""
    w1, f1 = _nbase_weight(a)
    w2, f2 = _nbase_weight(b)
    qweight = w1 - w2 - (1 if f1 <= f2 else 0)
    scale = _display_scale(_MIN_SIG_DIGITS - qweight * 4, min_scale)
    na, da = a.as_integer_ratio()
    nb, db = b.as_integer_ratio()
    num, den = abs(na) * db * 10 ** scale, da * abs(nb)
    q, r = divmod(num, den)
    if 2 * r >= den:  # half away from zero
        q += 1
    negative = (na < 0) != (nb < 0) and q != 0
    return Decimal(f"{'-' if negative else ''}{q}E-{scale}")


def numeric_sqrt(a: Decimal, min_scale: int = 0) -> Decimal:
    """sqrt(a) as numeric_sqrt: 16 significant digits past the root's weight. a >= 0."""
    weight, _ = _nbase_weight(a)
    scale = _display_scale(_MIN_SIG_DIGITS - (2 * weight + 1), min_scale)
    ctx = decimal.Context(prec=max(a.adjusted() // 2 + 2, 0) + scale + 12, Emin=-999999, Emax=999999)
    return _rounded(ctx.sqrt(a), scale)


def _ln_dweight(a: Decimal) -> int:
    """estimate_ln_dweight: the decimal weight of ln(a), as numeric.c estimates it."""
    if a <= 0:
        return 0
    if Decimal("0.9") <= a <= Decimal("1.1"):
        x = a - 1
        return x.adjusted() if x else 0
    weight, first = _nbase_weight(a)
    digits, dweight = first, weight * 4
    rest = a.scaleb(-4 * weight) - first  # the fraction after the first base-10000 digit
    if rest:
        digits = digits * 10000 + int(rest.scaleb(4))
        dweight -= 4
    ln = math.log(digits) + dweight * 2.302585092994046
    return int(math.log10(abs(ln))) if ln else 0


def _ln_context(scale: int, dweight: int) -> decimal.Context:
    return decimal.Context(prec=max(dweight, 0) + scale + 20, Emin=-999999, Emax=999999)


def numeric_ln(a: Decimal, min_scale: int = 0) -> Decimal:
    """ln(a) as numeric_ln. a > 0."""
    dweight = _ln_dweight(a)
    scale = _display_scale(_MIN_SIG_DIGITS - dweight, min_scale)
    return _rounded(_ln_context(scale, dweight).ln(a), scale)


def numeric_log(base: Decimal, a: Decimal, base_scale: int = 0, min_scale: int = 0) -> Decimal:
    """log(base, a) as numeric_log (log(a) and log10(a) are log(10, a)). base, a > 0, base <> 1."""
    dweight = _ln_dweight(a) - _ln_dweight(base)
    scale = _display_scale(_MIN_SIG_DIGITS - dweight, base_scale, min_scale)
    ctx = _ln_context(scale + 10, abs(dweight) + 10)
    return _rounded(ctx.divide(ctx.ln(a), ctx.ln(base)), scale)


def numeric_power_int(base: Decimal, exponent: int, min_scale: int = 0) -> Decimal:
    """base ^ exponent for an integral exponent within int4, as PostgreSQL 15's power_var_int: at
    least 16 fractional digits (``min_scale`` is the base's display scale), 22003 beyond numeric's
    range, a zero once the result is below the last kept digit. 0 ^ negative is the caller's error."""
    scale = _display_scale(_MIN_SIG_DIGITS, min_scale)
    if exponent == 0 or not base:
        return _rounded(Decimal(1 if exponent == 0 else 0), scale)
    weight, first = _nbase_weight(base)
    digits, p = first, weight * 4
    rest = abs(base).scaleb(-4 * weight) - first
    for _ in range(3):  # numeric.c reads base-10000 digits while they are within 16 decimal ones
        if not rest:
            break
        rest = rest.scaleb(4)
        digits, p, rest = digits * 10000 + int(rest), p - 4, rest - int(rest)
    f = exponent * (math.log10(digits) + p)  # about log10 of the result
    if f > 3 * 32767 * 4:
        raise SqlError("22003", "value overflows numeric format")
    if f + 1 < -scale:
        return _rounded(Decimal(0), scale)
    ctx = decimal.Context(prec=max(int(f), 0) + scale + 20, Emin=-9999999, Emax=9999999)
    result = ctx.power(base, exponent)
    if result.adjusted() > 32767 * 4:
        raise SqlError("22003", "value overflows numeric format")
    return _rounded(result, scale)


def numeric_power(base: Decimal, exponent: Decimal, base_scale: int = 0, exponent_scale: int = 0) -> Decimal:
    """base ^ exponent as PostgreSQL 15's numeric_power: an integral exponent within int4 by
    repeated multiplication, any other as exp(exponent * ln(base)) with 16 significant digits.
    The caller has raised 0 ^ negative and negative ^ non-integer (2201F)."""
    if exponent == exponent.to_integral_value() and -2**31 <= exponent < 2**31:
        return numeric_power_int(base, int(exponent), base_scale)
    scale_floor = max(base_scale, exponent_scale)
    if not base:
        return _rounded(Decimal(0), _display_scale(_MIN_SIG_DIGITS, scale_floor))
    ctx = decimal.Context(prec=60, Emin=-999999, Emax=999999)
    ln_num = ctx.multiply(ctx.ln(base), exponent)
    val = float(ln_num)
    if abs(val) > 2000 * 3:  # NUMERIC_MAX_RESULT_SCALE * 3
        if val > 0:
            raise SqlError("22003", "value overflows numeric format")
        return _rounded(Decimal(0), _MAX_DISPLAY_SCALE)
    val *= 0.434294481903252  # about the decimal weight of the result
    scale = _display_scale(_MIN_SIG_DIGITS - int(val), scale_floor)
    wide = decimal.Context(prec=max(int(val), 0) + scale + 20, Emin=-999999, Emax=999999)
    return _rounded(wide.exp(wide.multiply(wide.ln(base), exponent)), scale)


def numeric_exact(op: str, a: Decimal, b: Decimal | None, scale_a: int, scale_b: int = 0) -> Decimal:
    """One of PostgreSQL's per-value-scale numeric results from its exact operands: ``div``
    (a / b, also avg as sum / count), ``sqrt``, ``ln``, ``log10`` (of a), ``log`` (base a of b)
    and ``power`` (a ^ b); ``scale_a`` / ``scale_b`` are the operands' display scales."""
    if op == "div":
        return numeric_div(a, b, max(scale_a, scale_b))
    if op == "sqrt":
        return numeric_sqrt(a, scale_a)
    if op == "ln":
        return numeric_ln(a, scale_a)
    if op == "log10":
        return numeric_log(Decimal(10), a, 0, scale_a)
    if op == "log":
        return numeric_log(a, b, scale_a, scale_b)
    if op == "power":
        return numeric_power(a, b, scale_a, scale_b)
    raise ValueError(op)


# -- interval arithmetic PostgreSQL names (justify_hours / justify_days / justify_interval)

_DAY_US = 86_400_000_000
_MONTH_DAYS = 30


def _c_div(a: int, b: int) -> int:
    """C's integer division, which truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _agree(whole: int, rest: int, unit: int) -> tuple[int, int]:
    """A remainder of the other sign than its whole borrows one unit from it (1 day -3 hours is
    21 hours), as PostgreSQL's justify functions make the fields' signs agree."""
    if whole > 0 and rest < 0:
        return whole - 1, rest + unit
    if whole < 0 and rest > 0:
        return whole + 1, rest - unit
    return whole, rest


def justify_hours(months: int, days: int, micros: int) -> tuple[int, int, int]:
    """Whole 24-hour periods of the time part moved to days (PostgreSQL's interval_justify_hours)."""
    whole = _c_div(micros, _DAY_US)
    days, micros = _agree(days + whole, micros - whole * _DAY_US, _DAY_US)
    return months, days, micros


def justify_days(months: int, days: int, micros: int) -> tuple[int, int, int]:
    """Whole 30-day periods moved to months (PostgreSQL's interval_justify_days)."""
    whole = _c_div(days, _MONTH_DAYS)
    months, days = _agree(months + whole, days - whole * _MONTH_DAYS, _MONTH_DAYS)
    return months, days, micros


def _tsround(value: float) -> float:
    """PostgreSQL's TSROUND: to the microsecond, as its interval arithmetic rounds fractions."""
    return round(value * 1_000_000.0) / 1_000_000.0


def interval_scale(months: int, days: int, micros: int, factor: float, divide: bool = False) -> tuple[int, int, int]:
    """``interval * factor`` (``/ factor`` with ``divide``), as PostgreSQL 15's interval_mul /
    interval_div: whole months and days multiplied apart, their fractions cascaded down (a month
    is 30 days, a day 24 hours), never up; 22012 for a division by zero, 22008 out of range."""
    if divide and factor == 0:
        raise SqlError("22012", "division by zero")

    def times(x: float) -> float:
        return x / factor if divide else x * factor

    whole_months, whole_days = times(months), times(days)
    if math.isnan(whole_months) or math.isnan(whole_days) or not (-2**31 <= whole_months <= 2**31 - 1) \
            or not (-2**31 <= whole_days <= 2**31 - 1):
        raise SqlError("22008", "interval out of range")
    new_months, new_days = int(whole_months), int(whole_days)
    month_days = _tsround((times(months) - new_months) * _MONTH_DAYS)
    seconds = _tsround((times(days) - new_days + month_days - int(month_days)) * 86400)
    if abs(seconds) >= 86400:
        new_days += int(seconds / 86400)
        seconds -= int(seconds / 86400) * 86400
    new_days += int(month_days)
    new_micros = round(times(micros) + seconds * 1_000_000)
    if not -2**63 <= new_micros < 2**63:
        raise SqlError("22008", "interval out of range")
    return new_months, new_days, int(new_micros)


def interval_span(months: int, days: int, micros: int) -> int:
    """The key PostgreSQL compares intervals by (interval_cmp_value): a month is 30 days, a day 24
    hours, so '1 month' = '30 days' and '1 day' = '24 hours'."""
    return micros + (days + months * _MONTH_DAYS) * _DAY_US


def justify_interval(months: int, days: int, micros: int) -> tuple[int, int, int]:
    """Both, with the signs made to agree (PostgreSQL's interval_justify_interval)."""
    if (days > 0 and micros > 0) or (days < 0 and micros < 0):
        whole = _c_div(days, _MONTH_DAYS)
        days, months = days - whole * _MONTH_DAYS, months + whole
    whole = _c_div(micros, _DAY_US)
    micros, days = micros - whole * _DAY_US, days + whole
    whole = _c_div(days, _MONTH_DAYS)
    days, months = days - whole * _MONTH_DAYS, months + whole
    if months > 0 and (days < 0 or (days == 0 and micros < 0)):
        days, months = days + _MONTH_DAYS, months - 1
    elif months < 0 and (days > 0 or (days == 0 and micros > 0)):
        days, months = days - _MONTH_DAYS, months + 1
    days, micros = _agree(days, micros, _DAY_US)
    return months, days, micros
