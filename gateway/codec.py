"""Wire codecs: Arrow columns <-> PostgreSQL text/binary values, and parameter decoding.

Results are encoded a column at a time with pyarrow.compute / numpy (no per-row Python on the hot
path for ints, floats, text, bool, dates, timestamps, numerics, intervals): each column becomes an
Arrow binary array of encoded values, and rows are assembled by one ``binary_join_element_wise``
call whose output buffer *is* the concatenated DataRow messages. Variable-length slices are
gathered through string_view arrays built with numpy (Arrow compacts them in C++). Rare shapes
(BC/infinite dates, float ties, struct/map columns, nested arrays in binary) fall back to small
per-value Python functions applied only to the rows that need them.

Text output follows PostgreSQL 15 output functions byte for byte (DateStyle ISO, IntervalStyle
postgres, extra_float_digits 1); binary output follows the ``*send`` functions. When a column's
Arrow type does not match its announced PostgreSQL type it is converted first (int32 sent as
int8, string typed jsonb, ...); a type with no sensible conversion is printed as its Arrow type's
own PostgreSQL form.

Public API:
  encode_data_rows(batch, fields, formats, timezone=) -> bytes   all DataRow messages of a batch
  encode_text_column / encode_binary_column(arr, ctype, timezone=) -> pa.Array of encoded values
  assemble_rows(columns, datarow=) -> bytes                       DataRows or binary COPY tuples
  decode_param(ctype, fmt, data, timezone=) -> Python value       Bind parameters
  parse_text_value / parse_binary_value                           one value, text / binary
  text_to_arrow(strings, ctype, timezone=) -> pa.Array            PostgreSQL text -> Arrow (COPY)
  Interval(months, days, microseconds)                            decoded interval values

decode_param returns None, bool, int, float, Decimal, str (text, json, uuid), bytes, date, time,
datetime (tz-aware UTC for timestamptz), timedelta for intervals without months (Interval when
months are present; its str() is PostgreSQL's interval text), or lists for arrays. PostgreSQL's infinite
dates/timestamps become date.max/min and datetime.max/min.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json as _json
import math
import re
import struct
import uuid as _uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tidegate.errors import SqlError
from tidegate.pgvalues import (ARROW_ZONES_END_US, BOOL_FALSE, BOOL_TRUE, cast_number_texts, check_json, jsonb_text,
                               datetime_input_error, infinity_refused, numeric_at_scale, numeric_exact, own_scale,
                               parse_bool, parse_bytea, parse_date, parse_flat_array, parse_float, parse_int,
                               parse_interval_fields, parse_numeric, parse_time, parse_timestamp, spark_zone, zone_info,
                               zone_offset_at, WIDE_DECIMAL)
from tidegate.pgtypes import UNCONSTRAINED_NUMERIC, ColumnType
from tidegate.results import ResultField

__all__ = [
    "Interval",
    "encode_data_rows",
    "encode_text_column",
    "encode_binary_column",
    "assemble_rows",
    "decode_param",
    "parse_text_value",
    "text_to_arrow",
    "python_to_arrow",
    "parse_binary_value",
    "parse_interval",
    "format_interval",
    "numeric_send",
    "numeric_recv",
    "array_send",
]

# 2000-01-01, PostgreSQL's binary epoch, relative to the Unix epoch.
PG_EPOCH_DAYS = 10957
PG_EPOCH_US = PG_EPOCH_DAYS * 86_400_000_000
_US_PER_DAY = 86_400_000_000
# Arrow's casts format years 1..9999 like PostgreSQL; anything else takes the Python path.
_MIN_DAYS = -719162  # 0001-01-01
_MAX_DAYS = 2932896  # 9999-12-31
_MIN_US = _MIN_DAYS * _US_PER_DAY
_MAX_US = (_MAX_DAYS + 1) * _US_PER_DAY
# PostgreSQL's +/-infinity timestamps and dates.
_TS_INF = 2**63 - 1
_TS_NINF = -(2**63)
_DATE_INF = 2**31 - 1
_DATE_NINF = -(2**31)

_TEXT_LIKE = {"text", "varchar", "bpchar", "name", "char", "json", "jsonb", "unknown", "uuid"}
_INT_TYPES = {"int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64(), "oid": pa.int64(),
              "regclass": pa.int64(), "regtype": pa.int64(), "regproc": pa.int64()}
# Binary widths of the integer-like types on the wire (oid/reg* are uint32 in PostgreSQL).
_INT_WIRE = {"int2": ">i2", "int4": ">i4", "int8": ">i8", "oid": ">u4", "regclass": ">u4",
             "regtype": ">u4", "regproc": ">u4"}


@dataclass(frozen=True)
class Interval:
    """A PostgreSQL interval: months, days and microseconds are independent fields."""

    months: int = 0
    days: int = 0
    microseconds: int = 0

    def to_arrow(self) -> pa.MonthDayNano:
        return pa.MonthDayNano([self.months, self.days, self.microseconds * 1000])

    def __str__(self) -> str:
        """PostgreSQL's text form, so code that renders parameters as literals gets valid input."""
        return format_interval(self.months, self.days, self.microseconds)


# --------------------------------------------------------------------------------------------
# small helpers


def _normalize(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous, non-dictionary, non-extension array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if isinstance(arr.type, pa.ExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _is_stringish(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binaryish(t: pa.DataType) -> bool:
    return (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t))


def _is_list(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def _with_nulls(values: pa.Array, like: pa.Array) -> pa.Array:
    """``values`` with the nulls of ``like`` (values built without a validity bitmap)."""
    if like.null_count == 0:
        return values
    return pc.if_else(pc.is_valid(like), values, pa.scalar(None, values.type))


def _to_np(arr: pa.Array, fill: Any = 0) -> np.ndarray:
    if arr.null_count:
        arr = arr.fill_null(fill)
    return arr.to_numpy(zero_copy_only=False)


def _fixed_to_binary(values: np.ndarray, width: int, like: pa.Array) -> pa.Array:
    """Big-endian fixed-width values (numpy) -> Arrow binary array with ``like``'s nulls."""
    n = len(like)
    buf = pa.py_buffer(np.ascontiguousarray(values))
    fsb = pa.Array.from_buffers(pa.binary(width), n, [None, buf])
    return _with_nulls(fsb.cast(pa.binary()), like)


def _replace_rows(arr: pa.Array, mask: np.ndarray, values: list[Any]) -> pa.Array:
    """Replace the rows where ``mask`` is true with ``values`` (in order)."""
    if not mask.any():
        return arr
    return pc.replace_with_mask(arr, pa.array(mask), pa.array(values, arr.type))


def _binary_offsets(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets[n+1], data) of a binary/string array, offsets relative to ``data``."""
    n = len(arr)
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int32, count=n + 1, offset=arr.offset * 4)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offs, data


_HEX = np.frombuffer(b"".join(f"{i:02x}".encode() for i in range(256)), np.uint8).reshape(256, 2)


# --------------------------------------------------------------------------------------------
# text output: per-value formatting used by the slow paths


def _float_digits(s: str) -> tuple[str, int] | None:
    """(significant digits, decimal exponent of the first digit) of a finite float string."""
    s = s.lstrip("+-")
    mant, _, exp = s.lower().partition("e")
    e = int(exp) if exp else 0
    ip, _, fp = mant.partition(".")
    allds = ip + fp
    digits = allds.lstrip("0")
    if not digits:
        return None
    lead = len(allds) - len(digits)
    return digits.rstrip("0"), e + len(ip) - 1 - lead


def _avoid_ties(s: str, value: float, float4: bool) -> str:
    """PostgreSQL's Ryu never prints a shortest string lying exactly halfway to a neighbour float
    (Arrow's shortest formatting may); then the next longer correctly rounded string is used."""
    from fractions import Fraction

    if not math.isfinite(value) or value == 0:
        return s
    if float4:
        f = np.float32(value)
        with np.errstate(over="ignore"):
            up, dn = float(np.nextafter(f, np.float32(np.inf))), float(np.nextafter(f, np.float32(-np.inf)))
    else:
        up, dn = math.nextafter(value, math.inf), math.nextafter(value, -math.inf)
    if not math.isfinite(up):
        up = None
    if not math.isfinite(dn):
        dn = None
    exact = Fraction(value)
    if up is None or dn is None:
        gap = exact - Fraction(dn) if up is None else Fraction(up) - exact
        up_f, dn_f = (exact + gap, Fraction(dn)) if up is None else (Fraction(up), exact - gap)
    else:
        up_f, dn_f = Fraction(up), Fraction(dn)
    hi, lo = (exact + up_f) / 2, (exact + dn_f) / 2
    cand = Fraction(decimal.Decimal(s))
    if cand != hi and cand != lo:
        return s
    parsed = _float_digits(s)
    k = len(parsed[0]) if parsed else 1
    for k in range(k + 1, 18):
        cs = f"{value:.{k - 1}e}"
        c = Fraction(decimal.Decimal(cs))
        if min(lo, hi) < c < max(lo, hi):
            return cs
    return repr(value)


def _pg_float_text(s: str, float4: bool, value: float | None = None) -> str:
    """Reformat a shortest-round-trip float string (any notation) in PostgreSQL's layout."""
    if value is not None and (abs(value) >= (2.0**21 if float4 else 2.0**53)):
        s = _avoid_ties(s, value, float4)
    if s in ("inf", "+inf", "infinity"):
        return "Infinity"
    if s in ("-inf", "-infinity"):
        return "-Infinity"
    if s == "nan" or s == "-nan":
        return "NaN"
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    mant, _, exp = s.partition("e")
    e = int(exp) if exp else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    lead = len(ip + fp) - len((ip + fp).lstrip("0"))
    if not digits:
        return "-0" if neg else "0"
    e10 = e + len(ip) - 1 - lead
    digits = digits.rstrip("0")
    sign = "-" if neg else ""
    if e10 < -4 or e10 >= (6 if float4 else 15):
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{m}e{'-' if e10 < 0 else '+'}{abs(e10):02d}"
    if e10 >= 0:
        if len(digits) <= e10 + 1:
            return sign + digits + "0" * (e10 + 1 - len(digits))
        return sign + digits[: e10 + 1] + "." + digits[e10 + 1:]
    return sign + "0." + "0" * (-e10 - 1) + digits


def _civil_from_days(z: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (astronomical year) from days since 1970-01-01 (H. Hinnant)."""
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def _fmt_date(days: int) -> tuple[str, bool]:
    y, m, d = _civil_from_days(days)
    bc = y <= 0
    return f"{(1 - y) if bc else y:04d}-{m:02d}-{d:02d}", bc


def _fmt_seconds(us: int) -> str:
    """SS[.ffffff] with trailing fractional zeros removed (PostgreSQL's AppendSeconds)."""
    sec, frac = divmod(us, 1_000_000)
    out = f"{sec:02d}"
    if frac:
        out += ("." + f"{frac:06d}").rstrip("0")
    return out


def _fmt_time(us: int) -> str:
    h, rem = divmod(us, 3_600_000_000)
    mi, rem = divmod(rem, 60_000_000)
    return f"{h:02d}:{mi:02d}:{_fmt_seconds(rem)}"


def _fmt_offset(secs: int) -> str:
    sign = "-" if secs < 0 else "+"
    secs = abs(secs)
    h, rem = divmod(secs, 3600)
    mi, s = divmod(rem, 60)
    out = f"{sign}{h:02d}"
    if mi or s:
        out += f":{mi:02d}"
    if s:
        out += f":{s:02d}"
    return out


def _fmt_timestamp_us(local_us: int, offset: int | None) -> str:
    """A timestamp (local wall clock µs since 1970) as PostgreSQL prints it, BC included."""
    if local_us == _TS_INF:
        return "infinity"
    if local_us == _TS_NINF:
        return "-infinity"
    days, tod = divmod(local_us, _US_PER_DAY)
    date, bc = _fmt_date(days)
    out = f"{date} {_fmt_time(tod)}"
    if offset is not None:
        out += _fmt_offset(offset)
    return out + (" BC" if bc else "")


def _fmt_date_days(days: int) -> str:
    if days == _DATE_INF:
        return "infinity"
    if days == _DATE_NINF:
        return "-infinity"
    date, bc = _fmt_date(days)
    return date + (" BC" if bc else "")


def _trunc_div(a: int, b: int) -> tuple[int, int]:
    """C-style division (toward zero) and remainder with the dividend's sign."""
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return q, a - q * b


def format_interval(months: int, days: int, us: int) -> str:
    """IntervalStyle 'postgres' output (PostgreSQL's EncodeInterval)."""
    years, mons = _trunc_div(months, 12)
    parts: list[str] = []
    is_before = False
    is_zero = True
    for value, unit in ((years, "year"), (mons, "mon"), (days, "day")):
        if value == 0:
            continue
        parts.append(f"{'+' if is_before and value > 0 else ''}{value} {unit}{'' if value == 1 else 's'}")
        is_before = value < 0
        is_zero = False
    hours, rem = _trunc_div(us, 3_600_000_000)
    mins, rem = _trunc_div(rem, 60_000_000)
    if is_zero or us != 0:
        minus = us < 0
        sign = "-" if minus else ("+" if is_before else "")
        parts.append(f"{sign}{abs(hours):02d}:{abs(mins):02d}:{_fmt_seconds(abs(rem))}")
    return " ".join(parts)


def _interval_fields(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(months int32, days int32, microseconds int64) of an interval-ish Arrow array."""
    t = arr.type
    n = len(arr)
    if pa.types.is_interval(t):
        buf = arr.buffers()[1]
        rec = np.frombuffer(buf, dtype=np.dtype([("m", "<i4"), ("d", "<i4"), ("ns", "<i8")]),
                            count=n, offset=arr.offset * 16)
        ns = rec["ns"].astype(np.int64)
        us = np.where(ns < 0, -((-ns) // 1000), ns // 1000)
        return rec["m"].astype(np.int64), rec["d"].astype(np.int64), us
    if pa.types.is_duration(t):
        us = _to_np(arr.cast(pa.duration("us"), safe=False).cast(pa.int64()))
        # Like PostgreSQL's timestamp subtraction (justify_hours): whole days, remainder time.
        days = np.where(us < 0, -((-us) // _US_PER_DAY), us // _US_PER_DAY)
        return np.zeros(n, np.int64), days, us - days * _US_PER_DAY
    if pa.types.is_integer(t):  # a bare month count (year-month intervals)
        return _to_np(arr.cast(pa.int64())), np.zeros(n, np.int64), np.zeros(n, np.int64)
    raise SqlError("42804", f"cannot send Arrow type {t} as interval")


def _numeric_text_py(d: decimal.Decimal, scale: int | None) -> str:
    if d.is_nan():
        return "NaN"
    if d.is_infinite():
        return "Infinity" if d > 0 else "-Infinity"
    if scale is not None:
        d = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP, context=WIDE_DECIMAL)
        s = format(d, "f")
    else:
        s = format(d, "f")
        if "." in s:
            s = s.rstrip("0").rstrip(".")
    if s.startswith("-") and not s.strip("-0."):
        s = s[1:]
    return s


# --------------------------------------------------------------------------------------------
# text output: column encoders


def _jsonb_printed(arr: pa.Array) -> pa.Array:
    """JSON text Spark computed (ColumnType.exact_op "jsonb": compact, its own key order) as
    jsonb prints it: keys ordered as jsonb orders them, PostgreSQL's spacing."""
    return pa.array([None if v is None else jsonb_text(v) for v in arr.to_pylist()], pa.string())


def encode_text_column(arr: pa.Array | pa.ChunkedArray, ctype: ColumnType, *, timezone: str = "UTC") -> pa.Array:
    """PostgreSQL text output of every value of ``arr`` as a ``pa.string()`` array (nulls kept)."""
    arr = _normalize(arr)
    if ctype.exact_op == "jsonb" and _is_stringish(arr.type):
        arr = _jsonb_printed(arr)
    t = arr.type
    name = ctype.pg.name
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.string())
    if ctype.is_array:
        if _is_list(t):
            return _text_array(arr, ctype.element, timezone)
        return _text_natural(arr, timezone)
    if name == "bool":
        if pa.types.is_boolean(t):
            return pc.if_else(arr, "t", "f")
        return _text_natural(arr, timezone)
    if name in _INT_TYPES:
        if pa.types.is_integer(t):
            return pc.cast(arr, pa.string())
        if pa.types.is_boolean(t):
            return pc.if_else(arr, "1", "0")
        if pa.types.is_decimal(t) or pa.types.is_floating(t):
            rounded = pc.round(arr, round_mode="half_towards_infinity")
            return pc.cast(pc.cast(rounded, _INT_TYPES[name]), pa.string())
        return _text_natural(arr, timezone)
    if name in ("float4", "float8"):
        if pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_decimal(t):
            target = pa.float32() if name == "float4" else pa.float64()
            return _text_float(arr.cast(target, safe=False) if t != target else arr, name == "float4")
        return _text_natural(arr, timezone)
    if name == "numeric":
        return _text_numeric(arr, ctype, timezone)
    if name in _TEXT_LIKE:
        if _is_stringish(t):
            return arr.cast(pa.string()) if not pa.types.is_string(t) else arr
        if name == "uuid" and _is_binaryish(t):
            return _text_uuid_from_bytes(arr)
        if _is_binaryish(t):
            return arr.cast(pa.binary()).cast(pa.string())
        return _text_natural(arr, timezone)
    if name == "bytea":
        if _is_binaryish(t) or _is_stringish(t):
            return _text_bytea(arr)
        return _text_natural(arr, timezone)
    if name == "date":
        if pa.types.is_date(t) or pa.types.is_timestamp(t):
            return _text_date(arr)
        return _text_natural(arr, timezone)
    if name == "time":
        if pa.types.is_time(t):
            return _text_time(arr)
        return _text_natural(arr, timezone)
    if name in ("timestamp", "timestamptz"):
        if pa.types.is_timestamp(t) or pa.types.is_date(t):
            return _text_timestamp(arr, name == "timestamptz", timezone)
        return _text_natural(arr, timezone)
    if name == "interval":
        if pa.types.is_interval(t) or pa.types.is_duration(t):
            return _text_interval(arr)
        return _text_natural(arr, timezone)
    return _text_natural(arr, timezone)


def _natural_type(t: pa.DataType) -> ColumnType:
    from tidegate.pgtypes import pg_type_for_arrow

    return pg_type_for_arrow(t)


_RECORD_QUOTED = re.compile(r'[",\\()\s]')


def _record_field(text: str | None) -> str:
    """One field of record_out: empty for NULL; quoted (\" and \\ doubled) when empty or when it
    holds a quote, backslash, parenthesis, comma or white space."""
    if text is None:
        return ""
    if text == "" or _RECORD_QUOTED.search(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '""') + '"'
    return text


def _field_type(t: pa.DataType) -> ColumnType:
    """A row value's field type from its Arrow type: a decimal prints at its scale (a numeric(p,s)
    column's), except at the unconstrained numeric's storage scale (printed shortest)."""
    natural = _natural_type(t)
    if pa.types.is_decimal(t) and (t.precision, t.scale) != UNCONSTRAINED_NUMERIC:
        return ColumnType(natural.pg, scale=t.scale)
    return natural


def _text_record(arr: pa.Array, timezone: str) -> pa.Array:
    """A row value (an Arrow struct) as PostgreSQL's record_out prints it: ``(1,"a b",)``."""
    fields = [encode_text_column(arr.field(i), _field_type(arr.type.field(i).type), timezone=timezone).to_pylist()
              for i in range(arr.type.num_fields)]
    valid = arr.is_valid().to_pylist()
    return pa.array([("(" + ",".join(_record_field(f[r]) for f in fields) + ")") if valid[r] else None
                     for r in range(len(arr))], pa.string())


def _text_natural(arr: pa.Array, timezone: str) -> pa.Array:
    """Text of a column whose Arrow type does not fit its declared type: use the Arrow type's own."""
    natural = _natural_type(arr.type)
    if pa.types.is_struct(arr.type):
        return _text_record(arr, timezone)
    if pa.types.is_map(arr.type):
        return pa.array([None if v is None else _json.dumps(v, default=str) for v in arr.to_pylist()], pa.string())
    if natural.pg.name == "text" and not _is_stringish(arr.type):
        try:
            return pc.cast(arr, pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return pa.array([None if v is None else str(v) for v in arr.to_pylist()], pa.string())
    return encode_text_column(arr, natural, timezone=timezone)


def _text_float(arr: pa.Array, float4: bool) -> pa.Array:
    s = pc.cast(arr, pa.string())
    vals = _to_np(arr, 1.0)
    absv = np.abs(vals)
    if float4:
        hi, lo = np.float32(1e6), np.float32(1e-4)
    else:
        hi, lo = 1e15, 1e-4
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(vals)
        need = ~finite | ((absv != 0) & ((absv >= hi) | (absv < lo)))
    arrow_exp = pc.fill_null(pc.match_substring(s, "e"), False).to_numpy(zero_copy_only=False)
    need = need | arrow_exp
    if arr.null_count:
        need &= pc.is_valid(arr).to_numpy(zero_copy_only=False)
    if need.any():
        idx = np.flatnonzero(need)
        fixed = [_pg_float_text(t, float4, float(v)) for t, v in zip(s.take(pa.array(idx)).to_pylist(), vals[idx])]
        s = _replace_rows(s, need, fixed)
    return s


def _div_scales(arr: pa.Array, min_scale: int) -> np.ndarray:
    """PostgreSQL's select_div_scale per quotient: 16 significant digits past the quotient's
    base-10000 weight, never fewer than the operands' display scale (numeric.c).

    The weight is read from the quotient itself, which is the operands' estimate except when the
    leading base-10000 digits of dividend and divisor are equal (PostgreSQL then keeps 4 more)."""
    vals = np.abs(pc.fill_null(arr.cast(pa.float64(), safe=False), 0.0).to_numpy(zero_copy_only=False))
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.floor(np.log10(vals) / 4)
    weight = np.where(np.isfinite(weight) & (vals > 0), weight, -1)
    return np.clip(np.maximum(16 - 4 * weight, min_scale), 0, 1000).astype(np.int64)


def _text_numeric_div(arr: pa.Array, min_scale: int) -> pa.Array:
    """Text of a division/avg result at PostgreSQL's per-value display scale."""
    if pa.types.is_floating(arr.type):
        arr = pa.array([None if v is None or math.isnan(v) or math.isinf(v) else decimal.Decimal(repr(v))
                        for v in arr.to_pylist()], pa.decimal128(38, 18))
    scales = _div_scales(arr, min_scale)
    out: list[str | None] = [None] * len(arr)
    for sc in np.unique(scales):
        idx = np.flatnonzero(scales == sc)
        sub = arr.take(pa.array(idx))
        if pa.types.is_decimal(sub.type) and sub.type.scale < sc and pa.types.is_decimal128(sub.type):
            sub = sub.cast(pa.decimal256(76, int(sc)))  # room for the padding zeros
        _, texts = _decimal_fixed_text(sub, int(sc))
        for i, text in zip(idx.tolist(), texts.to_pylist()):
            out[i] = text
    return pa.array(out, pa.string())


def _text_numeric_exact(arr: pa.StructArray, ctype: ColumnType) -> pa.Array:
    """Text of a per-value-scale numeric result (ColumnType.exact_op) from its exact operands; the
    engine's value ``q`` decides NULL and is the fallback (an operand out of the exact rules' domain)."""
    q = arr.field("q")
    if ctype.exact_op == "scaled":  # the value at the scale its row carries
        return pa.array([None if v is None or sc is None else format(numeric_at_scale(decimal.Decimal(v), sc), "f")
                         for v, sc in zip(q.to_pylist(), arr.field("a").to_pylist())], pa.string())
    a = arr.field("a").to_pylist()
    b = arr.field("b").to_pylist() if arr.type.num_fields > 2 else [None] * len(arr)
    plain = ColumnType(ctype.pg, div_min_scale=ctype.div_min_scale if ctype.exact_op == "div" else None)
    fallback: list[str | None] | None = None
    out: list[str | None] = []
    scale_a, scale_b = ctype.op_scales
    for i, present in enumerate(q.is_valid().to_pylist()):
        if not present:
            out.append(None)
            continue
        x, y = a[i], b[i]
        value = None
        if x is not None and (y is not None or arr.type.num_fields == 2):
            x = decimal.Decimal(x)
            y = decimal.Decimal(y) if y is not None else None
            try:
                value = numeric_exact(ctype.exact_op or "", x, y,
                                      own_scale(x) if scale_a < 0 else scale_a,
                                      own_scale(y) if y is not None and scale_b < 0 else max(scale_b, 0))
            except (ArithmeticError, ValueError, SqlError):
                value = None  # the engine's own value (its errors were raised when it was computed)
        if value is None:
            if fallback is None:
                fallback = _text_numeric(q, plain, "UTC").to_pylist()
            out.append(fallback[i])
        else:
            out.append(format(value, "f"))
    return pa.array(out, pa.string())


def _text_numeric(arr: pa.Array, ctype: ColumnType, timezone: str) -> pa.Array:
    t = arr.type
    if pa.types.is_struct(t) and ctype.exact_op:
        return _text_numeric_exact(arr, ctype)
    if ctype.div_min_scale is not None and ctype.precision is None and (pa.types.is_decimal(t) or pa.types.is_floating(t)):
        return _text_numeric_div(arr, ctype.div_min_scale)
    scale = ctype.scale  # numeric(p,s), or a display scale the translator derived (precision None)
    if pa.types.is_integer(t):
        s = pc.cast(arr, pa.string())
        if scale:
            s = pc.binary_join_element_wise(s, "." + "0" * scale, "")
        return s
    if pa.types.is_floating(t):
        vals = arr.to_pylist()
        out = []
        for v in vals:
            if v is None:
                out.append(None)
            elif math.isnan(v) or math.isinf(v):
                out.append("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
            else:
                out.append(_numeric_text_py(decimal.Decimal(repr(v)), scale))
        return pa.array(out, pa.string())
    if not pa.types.is_decimal(t):
        return _text_natural(arr, timezone)
    arr, s = _decimal_fixed_text(arr, scale)
    if scale is None and arr.type.scale > 0:
        s = pc.replace_substring_regex(s, r"\.?0+$", "")
        s = pc.if_else(pc.equal(s, "-0"), "0", s)
    return s


def _decimal_fixed_text(arr: pa.Array, scale: int | None) -> tuple[pa.Array, pa.Array]:
    """(decimal array at the column's scale, its text with exactly ``scale`` fractional digits)."""
    t = arr.type
    if t.scale < 0:  # negative scales (never produced by Spark) are widened to integers
        arr = arr.cast(pa.decimal128(38, 0) if pa.types.is_decimal128(t) else pa.decimal256(76, 0))
        t = arr.type
    if scale is not None and t.scale != scale:
        arr = pc.round(arr, ndigits=scale, round_mode="half_towards_infinity")
        arr = arr.cast(pa.decimal128(38, scale) if pa.types.is_decimal128(t) else pa.decimal256(76, scale), safe=False)
        t = arr.type
    s = pc.cast(arr, pa.string())
    # Arrow prints zero and small magnitudes in scientific notation ("0E-18", "1.0E-10").
    sci = pc.fill_null(pc.match_substring(s, "E"), False)
    if pc.any(sci).as_py():
        zero_text = "0" + ("." + "0" * t.scale if t.scale > 0 else "")
        s = pc.if_else(pc.and_(sci, pc.starts_with(s, "0E")), zero_text, s)
        sci_np = pc.fill_null(pc.match_substring(s, "E"), False).to_numpy(zero_copy_only=False)
        if sci_np.any():
            idx = np.flatnonzero(sci_np)
            fixed = [_numeric_text_py(v, t.scale) for v in arr.take(pa.array(idx)).to_pylist()]
            s = _replace_rows(s, sci_np, fixed)
    return arr, s


def _text_bytea(arr: pa.Array) -> pa.Array:
    if not pa.types.is_binary(arr.type):
        arr = arr.cast(pa.binary())
    offs, data = _binary_offsets(arr)
    data = data[offs[0]:offs[-1]]
    hexed = _HEX[data].reshape(-1)
    new_offs = ((offs - offs[0]) * 2).astype(np.int32)
    hexarr = pa.Array.from_buffers(pa.string(), len(arr), [None, pa.py_buffer(new_offs), pa.py_buffer(hexed)])
    return _with_nulls(pc.binary_join_element_wise("\\x", hexarr, ""), arr)


def _text_uuid_from_bytes(arr: pa.Array) -> pa.Array:
    return pa.array([None if v is None else str(_uuid.UUID(bytes=v)) for v in arr.cast(pa.binary()).to_pylist()],
                    pa.string())


def _text_date(arr: pa.Array) -> pa.Array:
    if pa.types.is_timestamp(arr.type):
        arr = arr.cast(pa.timestamp("us")).cast(pa.date32())
    elif not pa.types.is_date32(arr.type):
        arr = arr.cast(pa.date32())
    days = _to_np(arr.cast(pa.int32()), 0).astype(np.int64)
    odd = (days < _MIN_DAYS) | (days > _MAX_DAYS)
    if not odd.any():
        return pc.cast(arr, pa.string())
    if arr.null_count:
        odd &= pc.is_valid(arr).to_numpy(zero_copy_only=False)
    safe = pa.Array.from_buffers(pa.date32(), len(arr), [None, pa.py_buffer(np.where(odd, 0, days).astype(np.int32))])
    s = _with_nulls(pc.cast(safe, pa.string()), arr)
    return _replace_rows(s, odd, [_fmt_date_days(int(d)) for d in days[odd]])


def _strip_fraction(s: pa.Array) -> pa.Array:
    return pc.replace_substring_regex(s, r"\.?0+$", "")


def _trim_fraction_fixed(s: pa.Array, us: np.ndarray) -> pa.Array:
    """Drop the trailing zeros of '.ffffff' from fixed-width strings ending in it.

    ``us`` holds the values in microseconds. The kept length of each string is computed with
    numpy and each row's prefix cut from the fixed-width block (:func:`_row_slices`), which is
    several times faster than a regex replace.
    """
    n = len(s)
    offs, data = _binary_offsets(s)
    if n == 0:
        return s
    width = int(offs[1] - offs[0])
    if width < 12 or int(offs[-1] - offs[0]) != n * width or not np.all(np.diff(offs) == width):
        return _strip_fraction(s)
    frac = np.mod(us, 1_000_000)
    keep = np.full(n, width, np.int32)
    for k in (10, 100, 1000, 10000, 100000):
        keep -= (frac % k == 0)
    keep = np.where(frac == 0, width - 7, keep).astype(np.int32)
    start = int(offs[0])
    block = data[start:start + n * width].reshape(n, width)
    return _row_slices(block, None, keep, pa.string())


def _text_time(arr: pa.Array) -> pa.Array:
    if arr.type != pa.time64("us"):
        arr = arr.cast(pa.time64("us"), safe=False)
    us = _to_np(arr.cast(pa.int64()))
    midnight = us == _US_PER_DAY  # 24:00:00, which PostgreSQL's time holds and Arrow cannot print
    plain = pa.Array.from_buffers(pa.time64("us"), len(arr), [None, pa.py_buffer(np.where(midnight, 0, us).astype(np.int64))])
    text = _trim_fraction_fixed(pc.cast(plain, pa.string()), us)
    if midnight.any():
        text = pc.if_else(pa.array(midnight), pa.scalar("24:00:00"), text)
    return _with_nulls(text, arr)


@lru_cache(maxsize=64)
def _zone(name: str) -> _dt.tzinfo | None:
    """The session TimeZone as tzinfo (None: UTC), read as PostgreSQL reads it (tidegate.pgvalues:
    '-7' is hours east, POSIX 'UTC+5' / '<-07>+07' hours west)."""
    tz = zone_info(name)
    if tz is _dt.timezone.utc or (isinstance(tz, _dt.timezone) and not tz.utcoffset(None)):
        return None
    return tz


@lru_cache(maxsize=64)
def _arrow_zone(name: str) -> str:
    """The session TimeZone as an Arrow time zone (an IANA key or a fixed '+HH:MM')."""
    return spark_zone(name)


def _zone_local(utc_us: np.ndarray, zone: _dt.tzinfo, timezone: str) -> tuple[np.ndarray, np.ndarray]:
    """(local wall-clock µs, UTC offset in seconds) of UTC instants in the session zone; Arrow
    computes the years it knows the zone's rules for (before ``ARROW_ZONES_END_US``), zoneinfo
    the others (each value once)."""
    in_range = (utc_us >= _MIN_US + _US_PER_DAY) & (utc_us < ARROW_ZONES_END_US)
    try:
        safe = pa.array(np.where(in_range, utc_us, 0)).cast(pa.timestamp("us", tz="UTC"))
        local = pc.local_timestamp(safe.cast(pa.timestamp("us", tz=_arrow_zone(timezone))))
        local_us = np.where(in_range, local.cast(pa.int64()).to_numpy(), utc_us)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # A zone name Arrow's tz database lacks: let zoneinfo resolve each row below.
        in_range = np.zeros(len(utc_us), bool)
        local_us = utc_us.copy()
    offsets = ((local_us - utc_us) // 1_000_000).astype(np.int64)
    for i in np.flatnonzero(~in_range):
        u = int(utc_us[i])
        if u in (_TS_INF, _TS_NINF):
            continue
        off = zone_offset_at(u, zone)
        offsets[i] = off
        local_us[i] = u + off * 1_000_000
    return local_us, offsets


def _text_timestamp(arr: pa.Array, with_tz: bool, timezone: str) -> pa.Array:
    t = arr.type
    if pa.types.is_date(t):
        arr = arr.cast(pa.timestamp("us"))
        t = arr.type
    tz_in = t.tz
    if t.unit != "us":
        arr = arr.cast(pa.timestamp("us", tz=tz_in), safe=False)
    utc_us = _to_np(arr.cast(pa.int64()))
    zone = _zone(timezone)
    if tz_in is None and not with_tz:
        local_us = utc_us  # naive wall clock as is
        offsets = None
    elif zone is None:
        local_us = utc_us
        offsets = None
    else:
        local_us, offsets = _zone_local(utc_us, zone, timezone)
    valid = pc.is_valid(arr).to_numpy(zero_copy_only=False) if arr.null_count else None
    odd = (local_us < _MIN_US) | (local_us >= _MAX_US)
    naive = pa.Array.from_buffers(pa.timestamp("us"), len(arr),
                                  [None, pa.py_buffer(np.where(odd, 0, local_us).astype(np.int64))])
    s = _trim_fraction_fixed(pc.cast(naive, pa.string()), local_us)
    if with_tz:
        if offsets is None:
            s = pc.binary_join_element_wise(s, "+00", "")
        else:
            uniq, inverse = np.unique(offsets, return_inverse=True)
            suffix = pa.array([_fmt_offset(int(o)) for o in uniq], pa.string()).take(pa.array(inverse.astype(np.int32)))
            s = pc.binary_join_element_wise(s, suffix, "")
    if odd.any():
        if valid is not None:
            odd &= valid
        idx = np.flatnonzero(odd)
        fixed = [_fmt_timestamp_us(int(local_us[i]), (int(offsets[i]) if offsets is not None else 0) if with_tz else None)
                 for i in idx]
        s = _replace_rows(s, odd, fixed)
    return _with_nulls(s, arr)


def _pick(cond: np.ndarray, yes: str, no: str) -> pa.Array | str:
    """A string column choosing between two constants (a scalar when all rows agree)."""
    if cond.all():
        return yes
    if not cond.any():
        return no
    return pc.if_else(pa.array(cond), yes, no)


def _text_interval(arr: pa.Array) -> pa.Array:
    """IntervalStyle 'postgres' text built column-wise (same rules as :func:`format_interval`)."""
    months, days, us = _interval_fields(arr)
    n = len(months)
    if n == 0:
        return pa.array([], pa.string())
    years = np.where(months < 0, -((-months) // 12), months // 12)
    mons = months - years * 12
    pieces: list[pa.Array] = []
    is_before = np.zeros(n, bool)
    is_zero = np.ones(n, bool)
    for value, unit in ((years, "year"), (mons, "mon"), (days, "day")):
        present = value != 0
        if not present.any():
            continue
        sign = _pick(is_before & (value > 0), "+", "")
        sep = _pick(is_zero, "", " ")
        suffix = _pick(value == 1, " " + unit, " " + unit + "s")
        text = pc.binary_join_element_wise(sep, sign, pc.cast(pa.array(value), pa.string()), suffix, "")
        pieces.append(pc.if_else(pa.array(present), text, ""))
        is_before = np.where(present, value < 0, is_before)
        is_zero &= ~present
    has_time = is_zero | (us != 0)
    if has_time.any():
        mag = np.abs(us)
        hours = mag // 3_600_000_000
        mins = (mag // 60_000_000) % 60
        secs = (mag // 1_000_000) % 60
        frac = mag % 1_000_000
        sign = pc.if_else(pa.array(us < 0), "-", _pick(is_before, "+", ""))
        sep = _pick(is_zero, "", " ")

        def two(v: np.ndarray) -> pa.Array:
            return pc.utf8_lpad(pc.cast(pa.array(v), pa.string()), width=2, padding="0")

        has_frac = frac != 0
        if has_frac.any():
            frac_txt = pc.replace_substring_regex(
                pc.utf8_slice_codeunits(pc.cast(pa.array(frac + 1_000_000), pa.string()), 1), "0+$", "")
            frac_txt = pc.if_else(pa.array(has_frac), pc.binary_join_element_wise(".", frac_txt, ""), "")
        else:
            frac_txt = ""
        text = pc.binary_join_element_wise(sep, sign, two(hours), ":", two(mins), ":", two(secs), frac_txt, "")
        pieces.append(pc.if_else(pa.array(has_time), text, ""))
    out = pc.binary_join_element_wise(*pieces, "") if len(pieces) > 1 else pieces[0]
    return _with_nulls(out, arr)


_NEEDS_QUOTE = r'^$|[{}",\\\s]|^[Nn][Uu][Ll][Ll]$'


def _text_array(arr: pa.Array, elem: ColumnType, timezone: str) -> pa.Array:
    """'{a,b,NULL}' with array_out's quoting, built column-wise from the flattened elements."""
    if pa.types.is_fixed_size_list(arr.type) or pa.types.is_list_view(arr.type) or pa.types.is_large_list_view(arr.type):
        arr = arr.cast(pa.list_(arr.type.value_type))
    offs = arr.offsets.to_numpy()
    start, end = int(offs[0]), int(offs[-1])
    values = arr.values.slice(start, end - start)
    if _is_list(_normalize(values).type):
        enc = _text_array(_normalize(values), elem, timezone)  # nested: inner arrays unquoted
    else:
        enc = encode_text_column(values, elem, timezone=timezone)
        need = pc.match_substring_regex(enc, _NEEDS_QUOTE)
        quoted = pc.binary_join_element_wise('"', pc.replace_substring_regex(enc, r'(["\\])', r"\\\1"), '"', "")
        enc = pc.if_else(need, quoted, enc)
    enc = pc.fill_null(enc, "NULL")
    rel = (offs - start).astype(np.int32 if pa.types.is_list(arr.type) else np.int64)
    list_type = pa.list_(pa.string()) if pa.types.is_list(arr.type) else pa.large_list(pa.string())
    lists = pa.Array.from_buffers(list_type, len(arr), [None, pa.py_buffer(rel)], children=[enc])
    joined = pc.binary_join(lists, ",")
    return _with_nulls(pc.binary_join_element_wise("{", joined, "}", ""), arr)


# --------------------------------------------------------------------------------------------
# binary output


def encode_binary_column(arr: pa.Array | pa.ChunkedArray, ctype: ColumnType, *, timezone: str = "UTC") -> pa.Array:
    """PostgreSQL binary (send function) form of every value as a ``pa.binary()`` array."""
    arr = _normalize(arr)
    if ctype.exact_op == "jsonb" and _is_stringish(arr.type):
        arr = _jsonb_printed(arr)
    t = arr.type
    n = len(arr)
    name = ctype.pg.name
    if pa.types.is_null(t):
        return pa.nulls(n, pa.binary())
    if _is_stringish(t) and (ctype.is_array or name not in _TEXT_LIKE and name != "bytea"):
        # Values carried as their PostgreSQL text (e.g. intervals stored as text): parse them so
        # the binary form is the type's, not the text's bytes.
        arr = text_to_arrow(arr, ctype, timezone=timezone)
        t = arr.type
    if ctype.is_array:
        if _is_list(t):
            return _binary_array(arr, ctype.element, timezone)
        return _binary_natural(arr, timezone)
    if name == "bool":
        if not pa.types.is_boolean(t):
            return _binary_natural(arr, timezone)
        return _fixed_to_binary(_to_np(arr, False).astype(np.uint8), 1, arr)
    if name in _INT_TYPES:
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t)):
            return _binary_natural(arr, timezone)
        if not pa.types.is_integer(t):
            arr = pc.cast(pc.round(arr, round_mode="half_towards_infinity") if not pa.types.is_boolean(t) else arr, pa.int64())
        wire = _INT_WIRE[name]
        return _fixed_to_binary(_to_np(arr).astype(np.int64).astype(wire), int(wire[-1]), arr)
    if name in ("float4", "float8"):
        if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_decimal(t)):
            return _binary_natural(arr, timezone)
        target = pa.float32() if name == "float4" else pa.float64()
        if t != target:
            arr = arr.cast(target, safe=False)
        return _fixed_to_binary(_to_np(arr, 0.0).astype(">f4" if name == "float4" else ">f8"), 4 if name == "float4" else 8, arr)
    if name in _TEXT_LIKE:
        if name == "uuid":
            return _binary_uuid(arr)
        if _is_stringish(t) or _is_binaryish(t):
            out = arr.cast(pa.binary())
        else:
            out = encode_text_column(arr, _natural_type(t), timezone=timezone).cast(pa.binary())
        if name == "jsonb":
            out = _with_nulls(pc.binary_join_element_wise(b"\x01", out, b""), out)
        return out
    if name == "bytea":
        if _is_stringish(t) or _is_binaryish(t):
            return arr.cast(pa.binary())
        return _binary_natural(arr, timezone)
    if name == "date":
        if pa.types.is_timestamp(t):
            arr = arr.cast(pa.timestamp("us")).cast(pa.date32())
        elif not pa.types.is_date(t):
            return _binary_natural(arr, timezone)
        days = _to_np(arr.cast(pa.date32()).cast(pa.int32())).astype(np.int64)
        special = (days == _DATE_INF) | (days == _DATE_NINF)
        out = np.where(special, days, days - PG_EPOCH_DAYS)
        return _fixed_to_binary(out.astype(">i4"), 4, arr)
    if name == "time":
        if not pa.types.is_time(t):
            return _binary_natural(arr, timezone)
        us = _to_np(arr.cast(pa.time64("us"), safe=False).cast(pa.int64()))
        return _fixed_to_binary(us.astype(">i8"), 8, arr)
    if name in ("timestamp", "timestamptz"):
        if pa.types.is_date(t):
            arr = arr.cast(pa.timestamp("us"))
        elif not pa.types.is_timestamp(t):
            return _binary_natural(arr, timezone)
        us = _to_np(arr.cast(pa.timestamp("us", tz=arr.type.tz), safe=False).cast(pa.int64()))
        if name == "timestamp" and arr.type.tz is not None:
            zone = _zone(timezone)
            if zone is not None:
                us = np.where(np.isin(us, (_TS_INF, _TS_NINF)), us, _zone_local(us, zone, timezone)[0])
        special = (us == _TS_INF) | (us == _TS_NINF)
        out = np.where(special, us, us - PG_EPOCH_US)
        return _fixed_to_binary(out.astype(">i8"), 8, arr)
    if name == "interval":
        if not (pa.types.is_interval(t) or pa.types.is_duration(t)):
            return _binary_natural(arr, timezone)
        months, days, us = _interval_fields(arr)
        rec = np.empty(n, dtype=np.dtype([("us", ">i8"), ("d", ">i4"), ("m", ">i4")]))
        rec["us"], rec["d"], rec["m"] = us, days, months
        return _fixed_to_binary(rec, 16, arr)
    if name == "numeric":
        return _binary_numeric(arr, ctype)
    return _binary_natural(arr, timezone)


def _binary_record(arr: pa.Array, timezone: str) -> pa.Array:
    """A row value as record_send writes it: the field count, then per field its type's oid, its
    length (-1: NULL) and its binary form."""
    kinds = [_natural_type(arr.type.field(i).type) for i in range(arr.type.num_fields)]
    fields = [encode_binary_column(arr.field(i), kinds[i], timezone=timezone).to_pylist()
              for i in range(arr.type.num_fields)]
    valid = arr.is_valid().to_pylist()
    out: list[bytes | None] = []
    for r in range(len(arr)):
        if not valid[r]:
            out.append(None)
            continue
        parts = [struct.pack(">i", len(fields))]
        for kind, values in zip(kinds, fields):
            value = values[r]
            parts.append(struct.pack(">Ii", kind.pg.oid, -1 if value is None else len(value)))
            if value is not None:
                parts.append(value)
        out.append(b"".join(parts))
    return pa.array(out, pa.binary())


def _binary_natural(arr: pa.Array, timezone: str) -> pa.Array:
    natural = _natural_type(arr.type)
    if pa.types.is_struct(arr.type):
        return _binary_record(arr, timezone)
    if pa.types.is_map(arr.type) or natural.pg.name == "text":
        return _text_natural(arr, timezone).cast(pa.binary())
    return encode_binary_column(arr, natural, timezone=timezone)


def _binary_uuid(arr: pa.Array) -> pa.Array:
    if _is_binaryish(arr.type):
        return arr.cast(pa.binary())
    out: list[bytes | None] = []
    for v in arr.cast(pa.string()).to_pylist():
        if v is None:
            out.append(None)
            continue
        try:
            out.append(_uuid.UUID(v).bytes)
        except ValueError:
            raise SqlError("22P02", f'invalid input syntax for type uuid: "{v}"') from None
    return pa.array(out, pa.binary())


def numeric_send(d: decimal.Decimal, dscale: int | None = None) -> bytes:
    """PostgreSQL's numeric_send: ndigits, weight, sign, dscale, base-10000 digits."""
    if d.is_nan():
        return struct.pack(">hhHh", 0, 0, 0xC000, 0)
    if d.is_infinite():
        return struct.pack(">hhHh", 0, 0, 0xD000 if d > 0 else 0xF000, 0)
    sign, digs, exp = d.as_tuple()
    if dscale is None:
        dscale = max(0, -exp)
    ds = "".join(map(str, digs)).lstrip("0")
    if not ds:
        return struct.pack(">hhHh", 0, 0, 0, dscale)
    exp = int(exp)
    # Place digits so that the decimal point falls on a 4-digit group boundary.
    int_len = len(ds) + exp  # digits before the point (may be <= 0)
    pad_left = (-int_len) % 4
    s = "0" * pad_left + ds
    int_groups = (int_len + pad_left) // 4
    s += "0" * ((-len(s)) % 4)
    groups = [int(s[i:i + 4]) for i in range(0, len(s), 4)]
    weight = int_groups - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    return struct.pack(f">hhHh{len(groups)}H", len(groups), weight, 0x4000 if sign else 0, dscale, *groups)


def _binary_numeric(arr: pa.Array, ctype: ColumnType) -> pa.Array:
    """numeric_send, vectorised over the fixed-point text of a decimal column.

    Right-aligned digits put the decimal point in one column of a digit matrix; numpy folds it
    into base-10000 groups, and each row's message is a slice of a per-row block.
    """
    t = arr.type
    scale = ctype.scale  # numeric(p,s), or a display scale the translator derived (precision None)
    if (ctype.div_min_scale is not None and ctype.precision is None and (pa.types.is_decimal(t) or pa.types.is_floating(t))) \
            or (pa.types.is_struct(t) and ctype.exact_op):
        return _binary_numeric_py(_text_numeric(arr, ctype, "UTC"), ColumnType(ctype.pg))
    if pa.types.is_integer(t):
        arr = arr.cast(pa.decimal128(38, 0)) if scale is None else arr.cast(pa.decimal128(38, 0)).cast(
            pa.decimal128(38, scale), safe=False)
        t = arr.type
    if not pa.types.is_decimal(t):
        texts = _text_numeric(arr, ctype, "UTC") if pa.types.is_floating(t) else encode_text_column(arr, _natural_type(t))
        return _binary_numeric_py(texts, ctype)
    n = len(arr)
    if n == 0:
        return pa.array([], pa.binary())
    if pa.types.is_decimal128(t) and t.precision <= 18 and 0 <= t.scale <= _SMALL_NUMERIC_MAX_SCALE \
            and scale in (None, t.scale):
        return _binary_numeric_small(arr, scale)
    arr, texts = _decimal_fixed_text(arr, scale)
    s_digits = arr.type.scale
    texts = pc.fill_null(texts, "0" + ("." + "0" * s_digits if s_digits else ""))
    neg = pc.starts_with(texts, "-").to_numpy(zero_copy_only=False)
    body = pc.utf8_ltrim(texts, characters="-")
    width = int(pc.max(pc.binary_length(body)).as_py())
    body = pc.utf8_lpad(body, width=width, padding="0")
    offs, data = _binary_offsets(body)
    mat = data[offs[0]:offs[0] + n * width].reshape(n, width)
    if s_digits:
        int_d, frac_d = mat[:, :width - s_digits - 1], mat[:, width - s_digits:]
    else:
        int_d, frac_d = mat, mat[:, :0]
    ipad, fpad = (-int_d.shape[1]) % 4, (-frac_d.shape[1]) % 4
    digits = np.concatenate([np.full((n, ipad), 48, np.uint8), int_d, frac_d, np.full((n, fpad), 48, np.uint8)], axis=1)
    digits = (digits - 48).astype(np.uint16)
    groups = digits[:, 0::4] * 1000 + digits[:, 1::4] * 100 + digits[:, 2::4] * 10 + digits[:, 3::4]
    if scale is None and s_digits:
        # unconstrained: dscale is the number of significant fractional digits (text drops zeros)
        nz = frac_d != 48
        dscale = np.where(nz.any(axis=1), s_digits - nz[:, ::-1].argmax(axis=1), 0)
    else:
        dscale = np.full(n, s_digits)
    return _numeric_messages(groups, (int_d.shape[1] + ipad) // 4, neg, dscale, arr)


# Decimals of up to 18 digits whose fraction, padded to whole base-10000 groups, fits in uint64
# (10^(scale + pad) <= 10^16) are sent from their unscaled integers, without text.
_SMALL_NUMERIC_MAX_SCALE = 16


def _binary_numeric_small(arr: pa.Array, scale: int | None) -> pa.Array:
    """numeric_send for a decimal128 of precision <= 18: the base-10000 groups are computed from
    the unscaled integers (the low 64 bits of each value hold it whole), as numpy arithmetic."""
    t = arr.type
    n, s = len(arr), t.scale
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * (arr.offset + n))
    raw = words[2 * arr.offset::2]  # little-endian: the low word of each 128-bit value
    if arr.null_count:
        raw = np.where(pc.is_valid(arr).to_numpy(zero_copy_only=False), raw, 0)
    neg = raw < 0
    u = np.abs(raw).astype(np.uint64)
    pad = (-s) % 4
    whole, frac = np.divmod(u, np.uint64(10 ** s))
    int_groups, frac_groups = (t.precision - s + 3) // 4, (s + pad) // 4
    if n and int(whole.max()) >= 10 ** (4 * int_groups):  # a value wider than its declared precision
        int_groups = (19 - s + 3) // 4
    groups = np.empty((n, int_groups + frac_groups), np.uint16)
    rest = whole
    for k in range(int_groups - 1, -1, -1):
        rest, groups[:, k] = np.divmod(rest, np.uint64(10000))
    rest = frac * np.uint64(10 ** pad)
    for k in range(int_groups + frac_groups - 1, int_groups - 1, -1):
        rest, groups[:, k] = np.divmod(rest, np.uint64(10000))
    if scale is None and s:
        # unconstrained: dscale is the number of significant fractional digits
        dscale = np.full(n, s)
        for k in range(s - 1, 0, -1):  # k digits suffice when 10^(s-k) divides the fraction
            dscale = np.where(frac % np.uint64(10 ** (s - k)) == 0, k, dscale)
        dscale = np.where(frac == 0, 0, dscale)
    else:
        dscale = np.full(n, s)
    return _numeric_messages(groups, int_groups, neg, dscale, arr)


def _numeric_messages(groups: np.ndarray, int_groups: int, neg: np.ndarray, dscale: np.ndarray,
                      like: pa.Array) -> pa.Array:
    """numeric_send messages from each row's base-10000 digit groups (``int_groups`` of them
    before the decimal point): leading and trailing zero groups are dropped, as PostgreSQL does.

    Each row's block is 8 spare bytes and its groups; the header goes just before the row's first
    non-zero group, and the message is the block's slice from there."""
    n, g = groups.shape
    nonzero = groups != 0
    first = nonzero.argmax(axis=1)  # 0 for a zero (no non-zero group)
    anynz = nonzero[np.arange(n), first]
    ndigits = np.where(anynz, g - nonzero[:, ::-1].argmax(axis=1) - first, 0)
    weight = np.where(anynz, int_groups - 1 - first, 0)
    sign = np.where(neg & anynz, 0x4000, 0)
    out = np.empty((n, 8 + 2 * g), np.uint8)
    out[:, 8:] = groups.astype(">u2").view(np.uint8).reshape(n, 2 * g)
    hdr = np.empty(n, dtype=np.dtype([("nd", ">i2"), ("w", ">i2"), ("s", ">u2"), ("ds", ">i2")]))
    hdr["nd"], hdr["w"], hdr["s"], hdr["ds"] = ndigits, weight, sign, dscale
    hb = hdr.view(np.uint8).reshape(n, 8)
    out[:, :8] = hb  # right for rows without leading zero groups; the others' is written below
    for f in range(1, g):  # rows by their count of leading zero groups
        rows = first == f
        if rows.any():
            out[rows, 2 * f:2 * f + 8] = hb[rows]
    return _with_nulls(_row_slices(out, 2 * first, 8 + 2 * ndigits), like)


def _row_slices(rows: np.ndarray, starts: np.ndarray | None, lengths: np.ndarray,
                out_type: pa.DataType = pa.binary()) -> pa.Array:
    """``rows[i, starts[i]:starts[i] + lengths[i]]`` (``starts`` None: from 0) for each row of the
    uint8 matrix ``rows``, as a binary (or string) array: one boolean compaction, no per-row work
    in Python."""
    n, width = rows.shape
    small = np.uint8 if width < 256 else np.int64  # narrow comparisons over the n x width matrix
    col = np.arange(width, dtype=small)[None, :]
    if starts is None:
        keep = col < lengths.astype(small)[:, None]
    else:
        keep = (col >= starts.astype(small)[:, None]) & (col < (starts + lengths).astype(small)[:, None])
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = pa.py_buffer(rows[keep])
    if offsets[-1] >= 2 ** 31:
        large = pa.large_string() if pa.types.is_string(out_type) else pa.large_binary()
        return pa.Array.from_buffers(large, n, [None, pa.py_buffer(offsets), data])
    return pa.Array.from_buffers(out_type, n, [None, pa.py_buffer(offsets.astype(np.int32)), data])


def _binary_numeric_py(texts: pa.Array, ctype: ColumnType) -> pa.Array:
    scale = ctype.scale  # numeric(p,s), or a display scale the translator derived (precision None)
    out: list[bytes | None] = []
    cache: dict[str, bytes] = {}
    for s in texts.to_pylist():
        if s is None:
            out.append(None)
            continue
        b = cache.get(s)
        if b is None:
            d = decimal.Decimal(s)
            b = numeric_send(d, scale if scale is not None and d.is_finite() else None)
            if len(cache) < 65536:
                cache[s] = b
        out.append(b)
    return pa.array(out, pa.binary())


def _binary_array(arr: pa.Array, elem: ColumnType, timezone: str) -> pa.Array:
    """array_send for one-dimensional arrays (ndim, hasnull, elemtype, dim, lbound, elements)."""
    if not pa.types.is_list(arr.type) and not pa.types.is_large_list(arr.type):
        arr = arr.cast(pa.list_(arr.type.value_type))
    values_type = _normalize(arr.values).type
    if _is_list(values_type):
        return _binary_array_nested(arr, elem, timezone)
    offs = arr.offsets.to_numpy().astype(np.int64)
    start, end = int(offs[0]), int(offs[-1])
    values = arr.values.slice(start, end - start)
    enc = encode_binary_column(values, elem, timezone=timezone)
    eo, _ = _binary_offsets(enc)
    elen = np.diff(eo).astype(np.int64)
    evalid = pc.is_valid(enc).to_numpy(zero_copy_only=False)
    elen = np.where(evalid, elen, -1)
    prefixed = pc.binary_join_element_wise(_fixed_to_binary(elen.astype(">i4"), 4, pa.nulls(len(elen), pa.int8()).fill_null(0)),
                                           enc, b"", null_handling="replace", null_replacement=b"")
    rel = (offs - start).astype(np.int32)
    lists = pa.Array.from_buffers(pa.list_(pa.binary()), len(arr), [None, pa.py_buffer(rel)], children=[prefixed])
    body = pc.binary_join(lists, b"")
    counts = np.diff(offs)
    has_null = np.zeros(len(arr), np.int32)
    if not evalid.all():
        nulls_per = np.add.reduceat(np.concatenate([(~evalid).astype(np.int64), [0]]), rel[:-1]) if len(rel) > 1 else np.zeros(0)
        has_null = np.where(counts > 0, (nulls_per[: len(arr)] > 0).astype(np.int32), 0)
    elem_oid = elem.pg.oid
    hdr = np.empty(len(arr), dtype=np.dtype([("ndim", ">i4"), ("hasnull", ">i4"), ("oid", ">u4"), ("dim", ">i4"), ("lb", ">i4")]))
    hdr["ndim"], hdr["hasnull"], hdr["oid"], hdr["dim"], hdr["lb"] = 1, has_null, elem_oid, counts, 1
    full = pc.binary_join_element_wise(_fixed_to_binary(hdr, 20, pa.nulls(len(arr), pa.int8()).fill_null(0)), body, b"")
    empty_hdr = struct.pack(">iiI", 0, 0, elem_oid)
    full = pc.if_else(pa.array(counts == 0), pa.scalar(empty_hdr, pa.binary()), full)
    return _with_nulls(full, arr)


def _binary_array_nested(arr: pa.Array, elem: ColumnType, timezone: str) -> pa.Array:
    """Multi-dimensional (rectangular) arrays; rare, so per value in Python."""
    out: list[bytes | None] = []
    for v in arr.to_pylist():
        out.append(None if v is None else array_send(v, elem, timezone))
    return pa.array(out, pa.binary())


def array_send(value: list, elem: ColumnType, timezone: str = "UTC") -> bytes:
    """Binary form of a (possibly nested, rectangular) Python list."""
    dims: list[int] = []
    probe: Any = value
    while isinstance(probe, list):
        dims.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    if not value or 0 in dims:
        return struct.pack(">iiI", 0, 0, elem.pg.oid)
    flat: list[Any] = []

    def walk(v: Any, depth: int) -> None:
        if depth == len(dims):
            flat.append(v)
            return
        if not isinstance(v, list) or len(v) != dims[depth]:
            raise SqlError("2202E", "multidimensional arrays must have array expressions with matching dimensions")
        for x in v:
            walk(x, depth + 1)

    walk(value, 0)
    enc = encode_binary_column(python_to_arrow(flat, elem), elem, timezone=timezone).to_pylist()
    head = struct.pack(">iiI", len(dims), int(any(e is None for e in enc)), elem.pg.oid)
    head += b"".join(struct.pack(">ii", d, 1) for d in dims)
    body = b"".join(struct.pack(">i", -1) if e is None else struct.pack(">i", len(e)) + e for e in enc)
    return head + body


# --------------------------------------------------------------------------------------------
# row assembly


_ROW_CHUNK = 131072


def assemble_rows(columns: list[pa.Array], *, datarow: bool = True) -> bytes:
    """Concatenate per-row [header] + per column (int32 length | -1) + bytes.

    ``datarow``: prefix each row with 'D' + int32 message length + int16 column count (DataRow);
    otherwise only the int16 count (a binary COPY tuple).
    """
    if not columns:
        return b""
    n = len(columns[0])
    if n == 0:
        return b""
    if n <= _FEW_ROWS:
        return _assemble_few(columns, n, datarow)
    parts: list[bytes] = []
    for lo in range(0, n, _ROW_CHUNK):
        hi = min(n, lo + _ROW_CHUNK)
        cols = [c.slice(lo, hi - lo) if (lo or hi < n) else c for c in columns]
        parts.append(_assemble_chunk(cols, hi - lo, datarow))
    return parts[0] if len(parts) == 1 else b"".join(parts)


# Up to this many rows, the framing is built in Python: Arrow's kernels cost more per call than
# a few rows' bytes (a one-row answer: about 60 us instead of 300).
_FEW_ROWS = 16
_NULL_FIELD = struct.pack(">i", -1)


def _assemble_few(columns: list[pa.Array], n: int, datarow: bool) -> bytes:
    return _frame_few([_pylist_bytes(c) for c in columns], n, datarow)


def _pylist_bytes(col: pa.Array) -> list[bytes | None]:
    return [v.encode() if isinstance(v, str) else v for v in col.to_pylist()]


def _frame_few(values: list[list[bytes | None]], n: int, datarow: bool) -> bytes:
    count = struct.pack(">h", len(values))
    out: list[bytes] = []
    for r in range(n):
        fields = [count]
        for col in values:
            v = col[r]
            fields.append(_NULL_FIELD if v is None else struct.pack(">i", len(v)) + v)
        body = b"".join(fields)
        out.append(b"D" + struct.pack(">i", len(body) + 4) + body if datarow else body)
    return b"".join(out)


# -- a few rows, value by value ----------------------------------------------------------------
# Up to _FEW_ROWS rows, the common (Arrow type, column type) pairs are encoded value by value in
# Python: the column encoders above cost tens of Arrow calls per column whatever the row count
# (a one-row numeric: about 100 us; here 5). Each rule gives the column encoder's bytes exactly
# (tests/test_codec.py compares them on generated values); any other pair uses the column encoder.

_PACK_INT = {"int2": struct.Struct(">h").pack, "int4": struct.Struct(">i").pack, "int8": struct.Struct(">q").pack}
_PACK_FLOAT = {"float4": (pa.float32(), struct.Struct(">f").pack), "float8": (pa.float64(), struct.Struct(">d").pack)}


def _few_values(arr: pa.Array, ctype: ColumnType, binary: bool, timezone: str) -> list[bytes | None] | None:
    """The encoded values of a short column computed one by one, or None: not a pair this knows."""
    t = arr.type
    name = ctype.pg.name
    if ctype.is_array or isinstance(arr, pa.ChunkedArray):
        return None
    if name in _PACK_INT and pa.types.is_integer(t):
        if not binary:
            return [None if v is None else str(v).encode() for v in arr.to_pylist()]
        if t != _INT_TYPES[name]:
            return None
        pack = _PACK_INT[name]
        return [None if v is None else pack(v) for v in arr.to_pylist()]
    if name == "bool" and pa.types.is_boolean(t):
        yes, no = (b"\x01", b"\x00") if binary else (b"t", b"f")
        return [None if v is None else (yes if v else no) for v in arr.to_pylist()]
    if name in _TEXT_LIKE and name != "uuid" and (pa.types.is_string(t) or pa.types.is_large_string(t)):
        prefix = b"\x01" if binary and name == "jsonb" else b""
        printed = jsonb_text if ctype.exact_op == "jsonb" else str
        return [None if v is None else prefix + printed(v).encode() for v in arr.to_pylist()]
    if binary and name in _PACK_FLOAT and _PACK_FLOAT[name][0] == t:
        pack = _PACK_FLOAT[name][1]
        return [None if v is None else pack(v) for v in arr.to_pylist()]
    if name == "numeric" and pa.types.is_decimal128(t) and t.scale >= 0 and ctype.exact_op is None \
            and ctype.div_min_scale is None and ctype.scale in (None, t.scale):
        return [None if d is None else _few_numeric(d, ctype.scale, binary) for d in arr.to_pylist()]
    if name == "date" and pa.types.is_date32(t):
        days = arr.cast(pa.int32()).to_pylist()
        if binary:
            return [None if d is None else _PACK_INT["int4"](d if d in (_DATE_INF, _DATE_NINF) else d - PG_EPOCH_DAYS) for d in days]
        return [None if d is None else _fmt_date_days(d).encode() for d in days]
    if name in ("timestamp", "timestamptz") and pa.types.is_timestamp(t) and t.unit == "us" \
            and (t.tz is None or name == "timestamptz"):
        utc = arr.cast(pa.int64()).to_pylist()
        if binary:
            return [None if u is None else _PACK_INT["int8"](u if u in (_TS_INF, _TS_NINF) else u - PG_EPOCH_US) for u in utc]
        if name == "timestamp":
            return [None if u is None else _fmt_timestamp_us(u, None).encode() for u in utc]
        zone = _zone(timezone)
        return [None if u is None else _few_timestamptz_text(u, zone) for u in utc]
    return None


def _few_numeric(d: decimal.Decimal, scale: int | None, binary: bool) -> bytes:
    """``d`` carries the column's scale (the caller checked that the Arrow type has it)."""
    text = format(d, "f")  # fixed point at d's own exponent: no rounding, no context precision
    if scale is None and "." in text:  # unconstrained: only the significant fractional digits
        text = text.rstrip("0").rstrip(".")
    if not binary:
        return text.encode()
    return numeric_send(d, len(text) - text.index(".") - 1 if "." in text else 0)


def _few_timestamptz_text(us: int, zone: _dt.tzinfo | None) -> bytes:
    if us in (_TS_INF, _TS_NINF):
        return _fmt_timestamp_us(us, None).encode()
    offset = 0 if zone is None else zone_offset_at(us, zone)
    return _fmt_timestamp_us(us + offset * 1_000_000, offset).encode()


def _assemble_chunk(columns: list[pa.Array], n: int, datarow: bool) -> bytes:
    pieces: list[pa.Array] = []
    total = np.full(n, 2 + 4 * len(columns), np.int64)
    ones = pa.array(np.zeros(n, np.int8))
    for col in columns:
        if not pa.types.is_binary(col.type):
            col = col.cast(pa.binary())
        offs, _ = _binary_offsets(col)
        lens = np.diff(offs).astype(np.int64)
        if col.null_count:
            valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
            lens = np.where(valid, lens, -1)
            total += np.where(valid, lens, 0)
        else:
            total += lens
        pieces.append(_fixed_to_binary(lens.astype(">i4"), 4, ones))
        pieces.append(col)
    if datarow:
        hdr = np.empty(n, dtype=np.dtype([("t", "u1"), ("len", ">i4"), ("nc", ">i2")]))
        hdr["t"], hdr["len"], hdr["nc"] = ord("D"), total + 4, len(columns)
        head = _fixed_to_binary(hdr, 7, ones)
    else:
        head = pa.scalar(struct.pack(">h", len(columns)), pa.binary())
    joined = pc.binary_join_element_wise(head, *pieces, b"", null_handling="replace", null_replacement=b"")
    return _array_bytes(joined)


def _array_bytes(arr: pa.Array) -> bytes:
    """The concatenated values of a binary/string array, as one bytes object."""
    offs, _ = _binary_offsets(arr)
    start, end = int(offs[0]), int(offs[-1])
    buf = arr.buffers()[2]
    if buf is None or end == start:
        return b""
    return buf.slice(start, end - start).to_pybytes()


def encode_data_rows(batch: pa.RecordBatch, fields: list[ResultField], formats: list[int], *,
                     timezone: str = "UTC") -> bytes:
    """All DataRow messages for ``batch``, ready to write to the socket.

    ``formats[i]`` is 0 (text) or 1 (binary) for column i; ``fields[i].type`` is the type the
    RowDescription announced, and the Arrow column is converted to it when the two differ.
    """
    n = batch.num_rows
    if n == 0:
        return b""
    if n <= _FEW_ROWS and fields:
        values = []
        for i, f in enumerate(fields):
            col = batch.column(i)
            few = _few_values(col, f.type, formats[i] == 1, timezone)
            if few is None:
                enc = encode_binary_column if formats[i] == 1 else encode_text_column
                few = _pylist_bytes(enc(col, f.type, timezone=timezone))
            values.append(few)
        return _frame_few(values, n, True)
    cols: list[pa.Array] = []
    for i, f in enumerate(fields):
        col = batch.column(i)
        if formats[i] == 1:
            cols.append(encode_binary_column(col, f.type, timezone=timezone))
        else:
            cols.append(encode_text_column(col, f.type, timezone=timezone))
    if not fields:
        return struct.pack(">cih", b"D", 6, 0) * batch.num_rows
    return assemble_rows(cols, datarow=True)


# --------------------------------------------------------------------------------------------
# parameter / value decoding (text)

_ERR_TYPE_NAMES = {
    "int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real", "float8": "double precision",
    "numeric": "numeric", "bool": "boolean", "uuid": "uuid", "json": "json", "jsonb": "json",
    "date": "date", "time": "time", "timestamp": "timestamp", "timestamptz": "timestamp with time zone",
    "interval": "interval", "oid": "oid", "bytea": "bytea",
}
_DATETIME_TYPES = {"date", "time", "timestamp", "timestamptz", "interval"}


def _syntax(ctype_name: str, s: str) -> SqlError:
    if ctype_name in ("date", "timestamp", "timestamptz"):
        return datetime_input_error(s, _ERR_TYPE_NAMES.get(ctype_name, ctype_name))
    code = "22007" if ctype_name in _DATETIME_TYPES else "22P02"
    return SqlError(code, f'invalid input syntax for type {_ERR_TYPE_NAMES.get(ctype_name, ctype_name)}: "{s}"')


def _parse_numeric(ctype: ColumnType, s: str) -> decimal.Decimal:
    d = parse_numeric(s)
    if ctype.precision is not None and d.is_finite():
        scale = ctype.scale or 0
        with decimal.localcontext() as ctx:
            ctx.prec = 1000
            d = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
        if len(d.as_tuple().digits) - (scale if d != 0 else 0) > ctype.precision - scale and d.adjusted() >= ctype.precision - scale:
            raise SqlError("22003", "numeric field overflow",
                           detail=f"A field with precision {ctype.precision}, scale {scale} must round to an absolute value less than 10^{ctype.precision - scale}.")
    return d


def _days_to_date(days: int) -> _dt.date:
    return _dt.date(1970, 1, 1) + _dt.timedelta(days=days)


_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_TZ = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _us_to_datetime(us: int, with_tz: bool) -> _dt.datetime:
    base = _EPOCH_TZ if with_tz else _EPOCH
    if us == _TS_INF:
        return _dt.datetime.max.replace(tzinfo=_dt.timezone.utc) if with_tz else _dt.datetime.max
    if us == _TS_NINF:
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc) if with_tz else _dt.datetime.min
    try:
        return base + _dt.timedelta(microseconds=us)
    except OverflowError:
        raise SqlError("22008", "timestamp out of range") from None


def parse_interval(s: str) -> Interval:
    """PostgreSQL interval input: '1 day 02:03:04', '1 year 2 mons', '@ 1 day ago', ISO 'P1DT2H'
    (tidegate.pgvalues: the one parser of codec, casts and storage)."""
    try:
        return Interval(*parse_interval_fields(s))
    except SqlError as exc:
        if exc.sqlstate == "22007":
            raise _syntax("interval", s) from None
        raise


def _parse_uuid(s: str) -> str:
    t = s.strip()
    if t.startswith("{") and t.endswith("}"):
        t = t[1:-1]
    hexd = t.replace("-", "")
    if len(hexd) != 32 or not re.fullmatch(r"[0-9a-fA-F]{32}", hexd) or not re.fullmatch(
            r"[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|"
            r"([0-9a-fA-F]{4}-?){7}[0-9a-fA-F]{4}", t):
        raise _syntax("uuid", s)
    return str(_uuid.UUID(hexd))


def _parse_json(name: str, s: str) -> str:
    if name == "jsonb":
        return jsonb_text(s)
    check_json(s)
    return s


def parse_text_value(ctype: ColumnType, s: str, *, timezone: str = "UTC") -> Any:
    """A value from PostgreSQL text input syntax, as the Python value the engine binds."""
    name = ctype.pg.name
    if ctype.is_array:
        elem = ctype.element

        def conv(v: Any) -> Any:
            if isinstance(v, list):
                return [conv(x) for x in v]
            return None if v is None else parse_text_value(elem, v, timezone=timezone)

        return conv(parse_flat_array(s))  # tables and Spark values hold one dimension
    if name in _INT_TYPES:
        return parse_int(s, name)
    if name in ("float4", "float8"):
        return parse_float(s, real=name == "float4")
    if name == "numeric":
        return _parse_numeric(ctype, s)
    if name == "bool":
        return parse_bool(s)
    if name == "bytea":
        return parse_bytea(s)
    if name == "date":  # tidegate.pgvalues: the SQL path's rules, the session zone for 'today'
        try:
            return parse_date(s, timezone)
        except ValueError:
            raise datetime_input_error(s, "date") from None
    if name == "time":
        us = parse_time(s)
        if us == _US_PER_DAY:
            return _dt.time(23, 59, 59, 999999)
        return (_dt.datetime.min + _dt.timedelta(microseconds=us)).time()
    if name in ("timestamp", "timestamptz"):
        try:
            return parse_timestamp(s, name == "timestamptz", timezone)
        except ValueError:
            raise datetime_input_error(s, _ERR_TYPE_NAMES.get(name, name)) from None
    if name == "interval":
        return parse_interval(s)
    if name == "uuid":
        return _parse_uuid(s)
    if name in ("json", "jsonb"):
        return _parse_json(name, s)
    if name in ("varchar", "bpchar") and ctype.length is not None:
        return _check_length(ctype, s)
    return s


def _check_length(ctype: ColumnType, s: str) -> str:
    n = ctype.length or 0
    if len(s) > n:
        if s[n:].strip(" ") == "":
            s = s[:n]
        else:
            what = "character varying" if ctype.pg.name == "varchar" else "character"
            raise SqlError("22001", f"value too long for type {what}({n})")
    if ctype.pg.name == "bpchar":
        s = s.ljust(n)
    return s


# --------------------------------------------------------------------------------------------
# parameter decoding (binary)


def _bin_error(name: str) -> SqlError:
    return SqlError("22P03", f"incorrect binary data format for type {_ERR_TYPE_NAMES.get(name, name)}")


def parse_binary_value(ctype: ColumnType, data: bytes, *, timezone: str = "UTC") -> Any:
    """A value from its PostgreSQL binary (receive function) form."""
    name = ctype.pg.name
    fixed = {"bool": "?", "int2": ">h", "int4": ">i", "int8": ">q", "float4": ">f", "float8": ">d",
             "oid": ">I", "regclass": ">I", "regtype": ">I", "regproc": ">I"}
    try:
        if ctype.is_array:
            return _array_recv(ctype.element, data, timezone)
        if name in fixed:
            fmt = fixed[name]
            if len(data) != struct.calcsize(fmt):
                raise _bin_error(name)
            return struct.unpack(fmt, data)[0]
        if name in ("text", "varchar", "bpchar", "name", "char", "json", "unknown"):
            return data.decode("utf-8")
        if name == "jsonb":
            if not data or data[0] != 1:
                raise SqlError("22P03", f"unsupported jsonb version number {data[0] if data else 0}")
            return data[1:].decode("utf-8")
        if name == "bytea":
            return bytes(data)
        if name == "uuid":
            if len(data) != 16:
                raise _bin_error(name)
            return str(_uuid.UUID(bytes=bytes(data)))
        if name == "date":
            (v,) = struct.unpack(">i", data)
            if v in (_DATE_INF, _DATE_NINF):
                raise infinity_refused("date")
            return _days_to_date(v + PG_EPOCH_DAYS)
        if name == "time":
            (v,) = struct.unpack(">q", data)
            return (_dt.datetime.min + _dt.timedelta(microseconds=min(v, _US_PER_DAY - 1))).time()
        if name in ("timestamp", "timestamptz"):
            (v,) = struct.unpack(">q", data)
            if v in (_TS_INF, _TS_NINF):
                raise infinity_refused("timestamp")
            return _us_to_datetime(v + PG_EPOCH_US, name == "timestamptz")
        if name == "interval":
            us, days, months = struct.unpack(">qii", data)
            return Interval(months, days, us)
        if name == "numeric":
            return numeric_recv(data)
    except (struct.error, UnicodeDecodeError, OverflowError):
        raise _bin_error(name) from None
    raise SqlError("0A000", f"binary format for type {ctype.sql()} is not supported")


def numeric_recv(data: bytes) -> decimal.Decimal:
    ndigits, weight, sign, dscale = struct.unpack_from(">hhHh", data)
    if sign == 0xC000:
        return decimal.Decimal("NaN")
    if sign == 0xD000:
        return decimal.Decimal("Infinity")
    if sign == 0xF000:
        return decimal.Decimal("-Infinity")
    if sign not in (0, 0x4000) or len(data) != 8 + 2 * ndigits:
        raise _bin_error("numeric")
    digits = struct.unpack_from(f">{ndigits}H", data, 8)
    value = 0
    for dg in digits:
        if dg >= 10000:
            raise _bin_error("numeric")
        value = value * 10000 + dg
    exp = (weight - ndigits + 1) * 4
    d = decimal.Decimal(value).scaleb(exp) if value else decimal.Decimal(0)
    with decimal.localcontext() as ctx:
        ctx.prec = 1000
        d = d.quantize(decimal.Decimal(1).scaleb(-dscale))
    return -d if sign == 0x4000 else d


def _array_recv(elem: ColumnType, data: bytes, timezone: str) -> list:
    ndim, _hasnull, _oid = struct.unpack_from(">iiI", data)
    if ndim == 0:
        return []
    if ndim < 0 or ndim > 6:
        raise SqlError("22P03", f"invalid number of dimensions: {ndim}")
    dims = [struct.unpack_from(">ii", data, 12 + 8 * i)[0] for i in range(ndim)]
    pos = 12 + 8 * ndim
    flat: list[Any] = []
    total = math.prod(dims)
    for _ in range(total):
        (ln,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if ln < 0:
            flat.append(None)
        else:
            flat.append(parse_binary_value(elem, data[pos:pos + ln], timezone=timezone))
            pos += ln
    if pos != len(data):
        raise SqlError("22P03", "incorrect binary data format in array")
    for d in reversed(dims[1:]):
        flat = [flat[i:i + d] for i in range(0, len(flat), d)]
    return flat


def decode_param(type: ColumnType, fmt: int, data: bytes | None, *, timezone: str = "UTC") -> Any:
    """A Bind parameter as a Python value (see the module docstring for the mapping)."""
    if data is None:
        return None
    if fmt == 1:
        value = parse_binary_value(type, bytes(data), timezone=timezone)
    else:
        try:
            s = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise SqlError("22021", 'invalid byte sequence for encoding "UTF8"') from None
        if "\x00" in s:
            raise SqlError("22021", 'invalid byte sequence for encoding "UTF8": 0x00')
        value = parse_text_value(type, s, timezone=timezone)
    return _bind_form(value)


def _bind_form(value: Any) -> Any:
    """Intervals without months become timedelta (the engine's parameter contract); others stay Interval."""
    if isinstance(value, Interval):
        if value.months == 0:
            try:
                return _dt.timedelta(days=value.days, microseconds=value.microseconds)
            except OverflowError:
                return value
        return value
    if isinstance(value, list):
        return [_bind_form(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# Python values / text columns -> Arrow (COPY FROM and tests)


def python_to_arrow(values: list[Any], ctype: ColumnType) -> pa.Array:
    """Arrow array of ``ctype.arrow()`` from decoded Python values."""
    target = ctype.arrow()
    return pa.array([_py_for_arrow(v, ctype) for v in values], target)


def _py_for_arrow(v: Any, ctype: ColumnType) -> Any:
    if v is None:
        return None
    if ctype.is_array:
        return [_py_for_arrow(x, ctype.element) for x in v]
    if isinstance(v, Interval):
        return v.to_arrow()
    if isinstance(v, decimal.Decimal) and not v.is_finite():
        raise SqlError("0A000", f"cannot store numeric value {v} (NaN/Infinity) in column of type {ctype.sql()}")
    return v


def text_to_arrow(strings: pa.Array, ctype: ColumnType, *, timezone: str = "UTC") -> pa.Array:
    """Convert a column of PostgreSQL text-form values (nulls already resolved) to ``ctype.arrow()``.

    Vectorised casts for the common types; a value Arrow rejects sends the column through the
    per-value PostgreSQL parser, which either accepts the PostgreSQL-only spelling or raises the
    PostgreSQL error for the first bad value (attribute ``row_index`` set on the SqlError).
    """
    strings = _normalize(strings)
    if not pa.types.is_string(strings.type):
        strings = strings.cast(pa.string())
    name = ctype.pg.name
    target = ctype.arrow()
    try:
        if name in _INT_TYPES or name in ("float4", "float8") or name == "numeric":
            out = cast_number_texts(strings, target)
            if out is None:
                raise pa.ArrowInvalid("not a plain number")
            return out
        if name == "bool":
            low = pc.utf8_lower(pc.utf8_trim_whitespace(strings))
            is_t = pc.is_in(low, pa.array(sorted(BOOL_TRUE)))
            is_f = pc.is_in(low, pa.array(sorted(BOOL_FALSE)))
            ok = pc.or_(pc.or_(is_t, is_f), pc.is_null(strings))
            if not pc.all(ok).as_py():
                raise pa.ArrowInvalid("bad bool")
            return _with_nulls(is_t, strings)
        if name in ("text", "name", "char", "unknown"):
            return strings
        if name in ("varchar", "bpchar"):
            if ctype.length is None:
                return strings
            n = ctype.length
            if (pc.max(pc.utf8_length(strings)).as_py() or 0) > n:
                raise pa.ArrowInvalid("too long")
            return pc.utf8_rpad(strings, width=n) if name == "bpchar" else strings
        if name == "date":
            return pc.cast(strings, target)
        if name == "timestamp":
            return pc.cast(strings, target)
        if name == "timestamptz":
            return pc.cast(strings, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    return _text_to_arrow_slow(strings, ctype, timezone)


def _text_to_arrow_slow(strings: pa.Array, ctype: ColumnType, timezone: str) -> pa.Array:
    name = ctype.pg.name
    out: list[Any] = []
    for i, s in enumerate(strings.to_pylist()):
        if s is None:
            out.append(None)
            continue
        try:
            if name == "time":
                out.append(parse_time(s))
                continue
            out.append(_py_for_arrow(parse_text_value(ctype, s, timezone=timezone), ctype))
        except SqlError as e:
            e.row_index = i  # type: ignore[attr-defined]
            e.bad_value = s  # type: ignore[attr-defined]
            raise
    target = ctype.arrow()
    if name == "time":
        return pa.array(out, pa.int64()).cast(target)
    try:
        return pa.array(out, target)
    except (pa.ArrowInvalid, OverflowError) as e:
        raise SqlError("22003", f"value out of range for type {ctype.sql()}: {e}") from None
