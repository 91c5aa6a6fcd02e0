"""Delta tables written with deltalake (delta-rs): layout, storage form, coercion and commits.

Layout: one Delta table per SQL table at ``<warehouse>/<schema oid>/<table oid>``, created with
``delta.enableChangeDataFeed=true``. Any Delta reader sees the same rows. Locations derive from
object ids, never from names, and every directory the store creates, replaces or removes is first
checked to lie strictly inside the warehouse (:meth:`TableStore.guarded`). Tables of data dirs
from before this layout (``<warehouse>/<schema name>/<table name>``) stay where they are.

Storage form: the Arrow form of :mod:`tidegate.pgtypes`, except for two types Delta lacks:

* ``time`` is stored as ``long`` microseconds since midnight (exact, orders correctly, and
  Spark 4.3 has no TIME type); queries see a bigint column that the executor turns back into
  ``time64[us]`` on output.
* ``interval`` is stored as a string in PostgreSQL's text form (IntervalStyle postgres, e.g.
  ``1 year 2 mons 3 days 04:05:06``); the executor turns it back into month_day_nano on output.

Commits: every statement's write is ONE Delta commit (append, merge or overwrite), made after the
statement has been fully validated, so a failed statement writes nothing.

* INSERT into a table with a TIME INDEX (and not ``append_mode``): a merge keyed on (primary
  key, time index) -- last write wins. INSERT into a PRIMARY KEY table: the keys are checked
  against the batch and the table (23505), then appended. Other tables: append.
* UPDATE / DELETE: Spark evaluates the PostgreSQL predicate over one snapshot and returns only
  the matched rows; they are written back with a delta-rs merge matched on the key (on every
  column, null-safe, for key-less tables), so only the files holding them are rewritten and the
  change data feed records update pre/post images and deletes. Key-less tables with array
  columns (not hashable for the merge) fall back to one overwrite commit of the whole table.
* ALTER TABLE DROP/RENAME COLUMN and ADD COLUMN with a DEFAULT rewrite the table in one
  overwrite commit (Parquet files carry column names; no column mapping in delta-rs).

An overwrite computed from version *v* is refused (40001) if another writer committed after
*v*. Idempotent writers (flows) pass ``app_id`` and ``app_version``: the commit records a Delta
app transaction, and :meth:`TableStore.app_version` reads the last one back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import threading
import time as _time
import uuid as uuidlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Transaction, WriterProperties, write_deltalake

from catalog.shared_locks import TABLE_NS, LockBusy, SharedLocks, table_key
from catalog.store import Catalog, ColumnDef, TableDef
from tidegate import pgvalues
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType
from tidegate.results import ResultField
from engine import deltalog, durability, functions, txnlog
from engine.deltalog import ROW_GROUP_ROWS, FileEntry
from engine.locks import VisibilityGate
from engine.txnlog import CommitHooks, DdlRecord, Journal, WriteOp

log = logging.getLogger("tidegate.storage")

CDF_CONFIG = {"delta.enableChangeDataFeed": "true"}

# Which columns' file statistics the table's writers (Spark's Delta connector, delta-rs) collect.
STATS_COLUMNS = "delta.dataSkippingStatsColumns"
NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
MAX_STATS_COLUMNS = 32  # Delta's default number of columns with statistics


def _costly_stats(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t) or pa.types.is_string_view(t)


def stats_properties(table: TableDef) -> dict[str, str]:
    """The table properties naming the columns whose statistics (min / max / null count per file)
    are collected: every column a key, constraint or index names, and the others unless they hold
    text or bytes, up to MAX_STATS_COLUMNS. Text statistics are the costly ones for Spark's writer
    (a 5M-row append: 5.9 s with them, 3.9 s without) and prune only where the text is a lookup
    key; the interactive path prunes by integer, date and time statistics."""
    keyed = set(table.primary_key) | ({table.time_index} if table.time_index else set())
    for con in table.constraints:  # UNIQUE and FOREIGN KEY
        keyed.update(con.get("columns") or ())
    for index in table.indexes:
        keyed.update(index.get("columns") or ())
    chosen = {c.name for c in table.columns if c.name in keyed}
    for c in table.columns:
        if len(chosen) >= MAX_STATS_COLUMNS:
            break
        if c.name not in keyed and not _costly_stats(storage_type(c.type)):
            chosen.add(c.name)
    names = [c.name for c in table.columns if c.name in chosen]
    if not names:  # an empty list is not a valid value: no column has statistics then
        return {NUM_INDEXED_COLS: "0"}
    return {STATS_COLUMNS: ",".join("`" + n.replace("`", "``") + "`" for n in names)}

# Spark splits a Parquet file only at row-group boundaries. delta-rs's default of 1Mi-row groups
# made a 1M-row table a single Spark task: one core, and no row handed on before all were read.
# 128Ki rows (a few MB for a narrow table) lets a scan use both cores and stream in pieces.
WRITER_PROPERTIES = WriterProperties(max_row_group_size=ROW_GROUP_ROWS, compression="SNAPPY")  # delta-rs' default codec


# -- storage form ------------------------------------------------------------------------------

def storage_type(t: ColumnType) -> pa.DataType:
    """The Arrow type a column of type ``t`` has inside Delta (see the module docstring)."""
    if t.is_array:
        return pa.list_(storage_type(t.element))
    if t.pg.name == "time":
        return pa.int64()
    if t.pg.name == "interval":
        return pa.string()
    return t.arrow()


def storage_schema(columns: Sequence[ColumnDef]) -> pa.Schema:
    return pa.schema([pa.field(c.name, storage_type(c.type), nullable=True) for c in columns])


# -- interval text -------------------------------------------------------------------------------

def parse_interval(text: str) -> tuple[int, int, int]:
    """PostgreSQL interval input -> (months, days, microseconds); 22007 when malformed."""
    return functions.parse_interval_fields(text)


def format_interval(months: int, days: int, us: int) -> str:
    """(months, days, microseconds) -> PostgreSQL's text form (IntervalStyle postgres)."""
    return functions.format_interval(months, days, us)


def interval_text_to_arrow(arr: pa.Array) -> pa.Array:
    """Stored interval text -> month_day_nano_interval (for results)."""
    out = []
    for v in arr.to_pylist():
        if v is None:
            out.append(None)
        else:
            mo, d, us = parse_interval(v)
            out.append(pa.MonthDayNano([mo, d, us * 1000]))
    return pa.array(out, type=pa.month_day_nano_interval())


# -- coercion to the storage form ----------------------------------------------------------------

_INT_RANGES = {n: (*pgvalues.INT_RANGES[n], pgvalues.INT_TYPE_WORDS[n]) for n in ("int2", "int4", "int8")}
_TYPE_WORD = {"int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
              "float8": "double precision", "numeric": "numeric", "bool": "boolean", "date": "date",
              "timestamp": "timestamp", "timestamptz": "timestamp with time zone", "time": "time",
              "interval": "interval", "uuid": "uuid", "json": "json", "jsonb": "json", "bytea": "bytea"}


def _invalid(t: ColumnType, value: Any) -> SqlError:
    word = _TYPE_WORD.get(t.pg.name, t.pg.sql_name)
    if t.pg.name in ("date", "timestamp", "timestamptz") and isinstance(value, str):
        return pgvalues.datetime_input_error(value, word)
    code = "22007" if t.pg.name in ("date", "timestamp", "timestamptz", "time", "interval") else "22P02"
    return SqlError(code, f'invalid input syntax for type {word}: "{value}"')


def _parse_timestamp(text: str, with_tz: bool) -> datetime:
    """PostgreSQL timestamp input; a timestamptz without an offset is local time in the session's
    TimeZone (``tidegate.pgvalues``)."""
    return pgvalues.parse_timestamp(text, with_tz)


def _parse_time_us(text: str) -> int:
    return pgvalues.parse_time(text)


def _time_us(v: Any) -> int:
    if isinstance(v, time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if isinstance(v, timedelta):
        return (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds
    if isinstance(v, int):
        return v
    return _parse_time_us(str(v))


def _bytea(v: Any) -> bytes:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    return pgvalues.parse_bytea(str(v))


def python_value(v: Any, t: ColumnType, column: str) -> Any:
    """One Python/text value -> the Python value of its storage form for column type ``t``."""
    if v is None:
        return None
    name = t.pg.name
    try:
        if t.is_array:
            items = pgvalues.parse_flat_array(v) if isinstance(v, str) else list(v)
            return [python_value(x, t.element, column) for x in items]
        if name in _INT_RANGES:
            lo, hi, word = _INT_RANGES[name]
            if isinstance(v, bool):
                raise SqlError("42804", f'column "{column}" is of type {word} but expression is of type boolean')
            if isinstance(v, str):
                return pgvalues.parse_int(v, name)
            elif isinstance(v, float):
                iv = int(round(v)) if v == v else None
                if iv is None:
                    raise SqlError("22003", f"{word} out of range")
            elif isinstance(v, Decimal):
                iv = int(v.quantize(Decimal(1), rounding="ROUND_HALF_UP", context=pgvalues.WIDE_DECIMAL))
            else:
                iv = int(v)
            if not lo <= iv <= hi:
                raise SqlError("22003", f"{word} out of range")
            return iv
        if name in ("float4", "float8"):
            if isinstance(v, str):
                return pgvalues.parse_float(v, real=name == "float4")
            return float(v)
        if name == "numeric":
            arrow = t.arrow()
            # a float8 as PostgreSQL converts it: 15 significant digits, the binary value rounded
            d = pgvalues.parse_numeric(v) if isinstance(v, str) else Decimal(format(v, ".15g")) if isinstance(v, float) else Decimal(v)
            pgvalues.refuse_non_finite_numeric(d)
            q = d.quantize(Decimal(1).scaleb(-arrow.scale), rounding="ROUND_HALF_UP", context=pgvalues.WIDE_DECIMAL)
            if t.precision is None and t.scale is None:
                pgvalues.check_unconstrained_numeric(d, q, v)
            if len(q.as_tuple().digits) - (-q.as_tuple().exponent if q.as_tuple().exponent < 0 else 0) > arrow.precision - arrow.scale and q != 0:
                if t.precision is not None:
                    raise SqlError("22003", "numeric field overflow",
                                   detail=f"A field with precision {t.precision}, scale {t.scale or 0} must round to an absolute value less than 10^{t.precision - (t.scale or 0)}.")
                raise SqlError("0A000", f'numeric value "{v}" has too many digits before the decimal point',
                               detail=f"numeric without a declared precision is stored with at most "
                                      f"{arrow.precision - arrow.scale} digits before the decimal point and "
                                      f"{arrow.scale} after it (a Delta Lake decimal)",
                               hint="Declare the column numeric(p, s) with fewer digits after the point, "
                                    "e.g. numeric(38, 0).")
            return q
        if name == "bool":
            if isinstance(v, bool):
                return v
            if isinstance(v, str):
                return pgvalues.parse_bool(v)
            if isinstance(v, int):
                raise SqlError("42804", f'column "{column}" is of type boolean but expression is of type integer')
            return bool(v)
        if name in ("text", "varchar", "bpchar", "name", "char"):
            s = v if isinstance(v, str) else _text_of(v)
            return _fit_string(s, t)
        if name == "bytea":
            return _bytea(v)
        if name in ("timestamp", "timestamptz", "date") and isinstance(v, (int, float, Decimal)):
            # PostgreSQL has no assignment cast from numbers to dates and times (a time-series
            # table's time index takes epoch integers, converted before this: executor._epoch_values)
            src = ("boolean" if isinstance(v, bool) else "integer" if isinstance(v, int) and -2**31 <= v < 2**31
                   else "bigint" if isinstance(v, int) else "numeric")
            raise SqlError("42804", f'column "{column}" is of type {t.sql()} but expression is of type {src}',
                           hint="You will need to rewrite or cast the expression.")
        if name == "date":
            if isinstance(v, datetime):
                return v.date()
            if isinstance(v, date):
                return v
            try:
                return pgvalues.parse_date(str(v))
            except ValueError:
                raise _invalid(t, v) from None
        if name in ("timestamp", "timestamptz"):
            with_tz = name == "timestamptz"
            if isinstance(v, datetime):
                if v.tzinfo is not None:
                    v = v.astimezone(timezone.utc)
                    return v if with_tz else v.replace(tzinfo=None)
                return pgvalues.localize(v) if with_tz else v  # wall time in the session zone
            if isinstance(v, date):
                d = datetime(v.year, v.month, v.day)
                return pgvalues.localize(d) if with_tz else d
            try:
                return _parse_timestamp(str(v), with_tz)
            except ValueError:
                raise _invalid(t, v) from None
        if name == "time":
            try:
                us = _time_us(v)
            except ValueError:
                raise _invalid(t, v) from None
            if not 0 <= us <= 86_400_000_000:
                raise SqlError("22008", f'date/time field value out of range: "{v}"')
            return us
        if name == "interval":
            if isinstance(v, timedelta):
                return format_interval(0, v.days, v.seconds * 1_000_000 + v.microseconds)
            if isinstance(v, pa.MonthDayNano) or (isinstance(v, tuple) and len(v) == 3):
                mo, d, ns = v
                return format_interval(mo, d, ns // 1000)
            return format_interval(*parse_interval(str(v)))
        if name in ("json", "jsonb"):
            s = v if isinstance(v, str) else json.dumps(v)
            if name == "jsonb":
                return pgvalues.jsonb_text(s)  # jsonb keeps its value, printed as jsonb prints it
            pgvalues.check_json(s)
            return s
        if name == "uuid":
            try:
                return str(v if isinstance(v, uuidlib.UUID) else uuidlib.UUID(str(v).strip()))
            except ValueError:
                raise _invalid(t, v) from None
        if name in ("oid", "regclass", "regtype", "regproc"):
            return int(v)
    except SqlError:
        raise
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        raise _invalid(t, v) from None
    return v


def _text_of(v: Any) -> str:
    """A value assigned to a text column, spelled as PostgreSQL's output function spells it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (datetime, time)):
        text = v.strftime("%Y-%m-%d %H:%M:%S" if isinstance(v, datetime) else "%H:%M:%S")
        if v.microsecond:
            text += f".{v.microsecond:06d}".rstrip("0")
        offset = v.utcoffset()
        if offset is not None:
            minutes = int(offset.total_seconds()) // 60
            sign = "-" if minutes < 0 else "+"
            hours, mins = divmod(abs(minutes), 60)
            text += f"{sign}{hours:02d}" + (f":{mins:02d}" if mins else "")
        return text
    if isinstance(v, (bytes, bytearray)):
        return "\\x" + bytes(v).hex()
    return str(v)


def _fit_string(s: str, t: ColumnType) -> str:
    name = t.pg.name
    n = t.length
    if n is not None and len(s) > n:
        if s[n:].strip(" ") == "":
            s = s[:n]
        else:
            word = "character varying" if name == "varchar" else "character"
            raise SqlError("22001", f"value too long for type {word}({n})")
    if name == "bpchar" and n is not None and len(s) < n:
        s = s.ljust(n)
    return s


def coerce_array(arr: pa.Array | pa.ChunkedArray, t: ColumnType, column: str) -> pa.Array:
    """An Arrow column -> the storage form of type ``t``, with PostgreSQL's errors.

    Vectorised when the input is already (castable to) the storage type; otherwise per value.
    time(p)/timestamp(p) values are rounded to p fractional digits, as PostgreSQL does.
    """
    return round_to_precision(_coerce_array(arr, t, column), t)


# PostgreSQL counts timestamps from 2000-01-01, and rounds half away from *that* zero.
_PG_EPOCH_US = 946_684_800_000_000


def round_to_precision(out: pa.Array, t: ColumnType) -> pa.Array:
    """A storage array of time(p)/timestamp(p) values rounded to p fractional digits as PostgreSQL
    rounds them (half away from zero, timestamps counted from 2000-01-01: 1999-12-31 23:59:59.5
    is 23:59:59 in timestamp(0)). Other types and p >= 6 are returned as they are."""
    if not (t.pg.name in ("timestamp", "timestamptz", "time") and not t.is_array and t.precision is not None
            and t.precision < 6 and out.null_count < len(out)):
        return out
    step = 10 ** (6 - t.precision)
    raw = out.cast(pa.int64()) if t.pg.name != "time" else out
    if t.pg.name != "time":
        raw = pc.subtract(raw, _PG_EPOCH_US)
    half = pc.if_else(pc.less(raw, 0), -(step // 2), step // 2)
    moved = pc.add(raw, half)
    # integer division truncates toward zero: away from zero on both sides
    rounded = pc.multiply(pc.divide(moved, step), step)
    if t.pg.name == "time":
        return rounded
    return pc.add(rounded, _PG_EPOCH_US).cast(out.type)


def _passes_through(t: ColumnType, src: pa.DataType) -> bool:
    """Whether :func:`_coerce_array` returns a column of Arrow type ``src`` as it is: strings into
    text, name or varchar without a length; a column already of ``t``'s storage type for
    integers, floats, boolean, date, timestamps, bytea and numeric."""
    name = t.pg.name
    if pa.types.is_string(src):
        return name in ("text", "name") or (name == "varchar" and t.length is None)
    return (not t.is_array and src == storage_type(t)
            and (name in _INT_RANGES or name in ("float4", "float8", "bool", "date", "timestamp", "timestamptz",
                                                 "bytea", "numeric")))


def stored_as_is(t: ColumnType, src: pa.DataType) -> bool:
    """Whether a column of Arrow type ``src`` already is ``t``'s storage form, no PostgreSQL rule
    to apply (:func:`coerce_array` would change nothing: no length to check, no precision to round
    to). What a writer that does not pass its rows through :func:`coerce_array` (Spark's) needs."""
    rounded = t.pg.name in ("timestamp", "timestamptz") and t.precision is not None and t.precision < 6
    return _passes_through(t, src) and not rounded


def _coerce_array(arr: pa.Array | pa.ChunkedArray, t: ColumnType, column: str) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    target = storage_type(t)
    src = arr.type
    name = t.pg.name
    if pa.types.is_null(src):
        return pa.nulls(len(arr), target)
    if name == "time" and pa.types.is_time(src):
        return pc.cast(pc.cast(arr, pa.time64("us")), pa.int64())
    if name == "interval" and (pa.types.is_interval(src) or pa.types.is_duration(src)):
        return pa.array([python_value(_mdn(v), t, column) for v in arr.to_pylist()], type=target)
    if _passes_through(t, src):
        return arr
    if name in ("text", "varchar", "bpchar", "json", "jsonb", "uuid", "name", "interval") and pa.types.is_string(src):
        if name == "varchar":
            lengths = pc.utf8_length(arr)
            mx = pc.max(lengths).as_py()
            if mx is None or mx <= t.length:
                return arr
    elif name in _INT_RANGES and pa.types.is_integer(src):
        lo, hi, word = _INT_RANGES[name]
        mn, mx = pc.min(arr).as_py(), pc.max(arr).as_py()
        if mn is not None and (mn < lo or mx > hi):
            raise SqlError("22003", f"{word} out of range")
        return pc.cast(arr, target)
    elif name in ("float4", "float8") and pa.types.is_decimal(src):
        # through the text, as PostgreSQL converts numeric: Arrow's decimal cast multiplies by a
        # rounded power of ten and missed the nearest double for 2% of values (0.06013928389552348
        # stored as 0.060139283895523483); parsing the digits rounds correctly
        return pc.cast(pc.cast(arr, pa.string()), target)
    elif name in ("float4", "float8") and (pa.types.is_integer(src) or pa.types.is_floating(src)):
        return pc.cast(arr, target, safe=False)
    elif name in ("timestamp", "timestamptz") and pa.types.is_timestamp(src):
        if src.tz is None and name == "timestamptz":
            return pgvalues.localize_array(arr)  # wall times in the session zone
        if src.tz is not None and name == "timestamp":
            return pc.cast(pc.cast(arr, pa.timestamp("us", tz="UTC")).cast(pa.int64()), pa.timestamp("us"))
        return pc.cast(arr, target)
    elif name == "numeric" and (pa.types.is_decimal(src) or pa.types.is_integer(src)):
        try:
            return pc.cast(arr, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    elif name == "date" and pa.types.is_date(src):
        return pc.cast(arr, target)
    elif name == "numeric" and pa.types.is_floating(src):  # real: 6 significant digits, float8: 15
        digits = 6 if pa.types.is_float32(src) else 15
        return pa.array([python_value(None if v is None else format(v, f".{digits}g"), t, column)
                         for v in arr.to_pylist()], type=target)
    elif name in ("text", "varchar", "bpchar") and pa.types.is_large_string(src):
        return coerce_array(pc.cast(arr, pa.string()), t, column)
    values = arr.to_pylist()
    if name == "interval" and pa.types.is_interval(src):
        values = [_mdn(v) for v in values]
    return pa.array([python_value(v, t, column) for v in values], type=target)


def _mdn(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, timedelta):
        return v
    return (v.months, v.days, v.nanoseconds)


def storage_to_result(arr: pa.Array | pa.ChunkedArray, t: ColumnType) -> pa.Array | pa.ChunkedArray:
    """A stored/Spark column -> the Arrow form of :mod:`tidegate.pgtypes` for results."""
    base = t.pg.name
    if base == "time" and pa.types.is_integer(arr.type):
        return pc.cast(pc.cast(arr, pa.int64()), pa.time64("us"))
    if base == "interval" and pa.types.is_string(arr.type):
        if isinstance(arr, pa.ChunkedArray):
            return pa.chunked_array([interval_text_to_arrow(c) for c in arr.chunks], type=pa.month_day_nano_interval())
        return interval_text_to_arrow(arr)
    return arr


# -- commits ------------------------------------------------------------------------------------

@dataclass
class Snapshot:
    """One version of one table as a query reads it."""

    location: str
    version: int
    files: list[str]


@dataclass
class CurrentRows:
    """A table version's rows, each tagged with the data file that holds it."""

    version: int
    rows: pa.Table
    files: list[FileEntry]


class ActionColumns(Mapping[str, list[Any]]):
    """A version's flattened add actions, column by column as Python lists, each converted when
    first asked for: a lookup reads the paths, row counts and its key's bounds, and converting
    every statistics column of every file at each commit was a fifth of a one-row UPDATE."""

    __slots__ = ("_table", "_lists", "_names")

    def __init__(self, table: pa.Table) -> None:
        self._table, self._lists = table, {}
        self._names = frozenset(table.column_names)  # a lookup asks for two per column it prunes by

    def __getitem__(self, name: str) -> list[Any]:
        got = self._lists.get(name)
        if got is None:
            got = self._lists[name] = self._table.column(name).to_pylist()  # KeyError if absent
        return got

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._table.column_names)

    def __len__(self) -> int:
        return self._table.num_columns


class TableStore:
    """Creates, reads and commits Delta tables; caches one DeltaTable per location."""

    def __init__(self, warehouse: Path, shared: SharedLocks | None = None) -> None:
        """``shared``: the locks of the gateways sharing this warehouse through a PostgreSQL
        catalog (catalog/shared_locks.py); None for the only gateway of an embedded catalog."""
        self.warehouse = Path(warehouse)
        self.shared = shared
        self._held = threading.local()  # location -> depth of this thread's write_lock
        self._tables: dict[str, DeltaTable] = {}
        self._stats: dict[str, tuple[Snapshot, ActionColumns]] = {}  # snapshot_with_stats
        # the flattened add actions of the version in _stats (rewrites by key find their files there)
        self._actions: dict[str, pa.Table] = {}
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()
        self.gate = VisibilityGate(shared)  # a multi-commit transaction becomes visible at once

    def location_for(self, schema_oid: int, table_oid: int) -> str:
        return str(self.warehouse.resolve() / str(int(schema_oid)) / str(int(table_oid)))

    def guarded(self, location: str) -> str:
        """``location`` resolved (symlinks too), refused unless it lies strictly inside the
        warehouse: the one check before any directory is created, replaced or removed."""
        root = os.path.realpath(self.warehouse)
        real = os.path.realpath(location)
        if real == root or os.path.commonpath([root, real]) != root:
            raise SqlError("XX000", f"refusing to touch {location!r}: it is not inside the warehouse {root!r}")
        return real

    def lock(self, location: str) -> threading.RLock:
        """The table's lock among this gateway's threads: its cached state (readers take it)."""
        with self._guard:
            return self._locks.setdefault(location, threading.RLock())

    @contextmanager
    def write_lock(self, location: str, *, wait: bool = True) -> Iterator[None]:
        """The table's lock for a writer: :meth:`lock`, and while the outermost of a thread's
        write locks on the table is held, the table's commit lock among every gateway of the
        catalog (catalog/shared_locks.py). Whatever checks a write's rules and commits it runs
        under it, so no other gateway commits in between. Without ``wait``, :class:`LockBusy`
        (55P03) when another thread or gateway holds it."""
        lock = self.lock(location)
        if not lock.acquire(blocking=wait):
            raise LockBusy()
        with ExitStack() as stack:
            stack.callback(lock.release)
            if self.shared is None:
                yield
                return
            held = self._held.__dict__
            depth = held.get(location, 0)
            if depth:
                held[location] = depth + 1
                try:
                    yield
                finally:
                    held[location] = depth
                return
            with self.shared.hold(TABLE_NS, table_key(location), wait=wait):
                held[location] = 1
                try:
                    yield
                finally:
                    del held[location]

    def _table(self, location: str) -> DeltaTable:
        with self._guard:
            dt = self._tables.get(location)
        if dt is None:
            dt = DeltaTable(location)
            with self._guard:
                self._tables[location] = dt
        elif "://" in location or os.path.exists(os.path.join(location, "_delta_log", f"{dt.version() + 1:020d}.json")):
            # Every commit writes the log entry of the next version: while it is absent the cached
            # table is the current one (a stat, where update_incremental lists the log: ~1 ms).
            dt.update_incremental()
        return dt

    @contextmanager
    def writing(self, location: str) -> Iterator[DeltaTable]:
        """The current table at ``location`` under its lock, for writers outside :meth:`apply`
        (flow sinks, compaction). Reuses the cached table: opening one fresh replays the log,
        ~25 ms per commit on a busy flow sink. A failed write drops the cached copy. What the
        writer committed is fsync'd before the block ends (engine/durability.py)."""
        with self.write_lock(location):
            dt = self._table(location)
            before = dt.version()
            try:
                yield dt
            except BaseException:
                self.forget(location)
                raise
            durability.sync_versions(location, before + 1, dt.version())

    def forget(self, location: str) -> None:
        with self._guard:
            self._tables.pop(location, None)
            self._stats.pop(location, None)
            self._actions.pop(location, None)

    # -- lifecycle ---------------------------------------------------------------------------

    def create(self, table: TableDef) -> str:
        """Create the Delta table for ``table``; returns its location."""
        if not table.location:
            raise ValueError(f"table {table.qualified_name} has no storage location")
        location = table.location
        if os.path.lexists(location):
            # Leftover of a table whose catalog entry is gone (e.g. crash between steps).
            shutil.rmtree(self.guarded(location))
        self.guarded(location)
        os.makedirs(os.path.dirname(location), exist_ok=True)
        description = table.comment
        DeltaTable.create(location, storage_schema(table.columns), name=table.name,
                          description=description, configuration={**CDF_CONFIG, **stats_properties(table)})
        durability.sync_versions(location, 0, 0)
        durability.fsync_dirs([os.path.dirname(location)])
        self.forget(location)
        return location

    def drop(self, location: str | None) -> None:
        if not location:
            return
        self.forget(location)
        try:
            real = self.guarded(location)
        except SqlError:
            # A location recorded by an older version outside the warehouse: never removed.
            log.warning("not removing table files at %s: outside the warehouse", location)
            return
        shutil.rmtree(real, ignore_errors=True)

    def drop_schema_dir(self, schema_oid: int) -> None:
        """Remove a dropped schema's directory if nothing is left in it."""
        path = self.warehouse / str(int(schema_oid))
        try:
            os.rmdir(self.guarded(str(path)))
        except OSError:
            pass

    # -- reads ---------------------------------------------------------------------------------

    def snapshot(self, location: str) -> Snapshot:
        with self.lock(location):
            dt = self._table(location)
            return Snapshot(location, dt.version(), local_files(dt))

    def snapshot_with_stats(self, location: str) -> tuple[Snapshot, ActionColumns]:
        """The current version's snapshot and its files' log statistics, of one version: a dict of
        ``get_add_actions(flatten=True)``'s columns (path, num_records, min.<c>, max.<c>, ...) as
        lists, kept until the next version.

        While the log entry of the next version is absent, the kept one is current: it is returned
        without the table's lock, which a writer holds for its whole commit (50 clients looking up
        keys spent a fifth of their time waiting for it)."""
        kept = self.current_stats(location)
        if kept is not None:
            return kept
        with self.lock(location):
            dt = self._table(location)
            version = dt.version()
            kept = self._stats.get(location)
            if kept is None or kept[0].version != version:
                actions = pa.table(dt.get_add_actions(flatten=True))
                kept = self._keep(location, version, actions, local_files(dt))
            return kept

    def _keep(self, location: str, version: int, actions: pa.Table, files: list[str]
              ) -> tuple[Snapshot, ActionColumns]:
        kept = (Snapshot(location, version, files), ActionColumns(actions))
        with self._guard:
            self._stats[location] = kept
            self._actions[location] = actions
        return kept

    def _current_actions(self, location: str) -> tuple[int, pa.Table] | None:
        """The current version and its flattened add actions when kept (:meth:`current_stats`)."""
        kept = self.current_stats(location)
        actions = self._actions.get(location)
        if kept is None or actions is None:
            return None
        return kept[0].version, actions

    def current_stats(self, location: str) -> tuple[Snapshot, ActionColumns] | None:
        """:meth:`snapshot_with_stats` when the kept one is current (no lock, no read), else None."""
        kept = self._stats.get(location)
        if kept is not None and "://" not in location and not os.path.exists(
                os.path.join(location, "_delta_log", f"{kept[0].version + 1:020d}.json")):
            return kept
        return None

    def version(self, location: str) -> int:
        with self.lock(location):
            return self._table(location).version()

    def read_arrow(self, location: str, columns: list[str] | None = None) -> pa.Table:
        with self.lock(location):
            return self._table(location).to_pyarrow_table(columns=columns)

    def current_rows(self, location: str, schema: pa.Schema, file_column: str) -> CurrentRows:
        """Every row of the current version in ``schema``, with ``file_column`` (int32): the index
        in ``files`` of the data file holding it. Files are read two at a time, outside the lock
        (data files never change; a file removed since stays until vacuum's retention)."""
        with self.lock(location):
            dt = self._table(location)
            version = dt.version()
            actions = pa.table(dt.get_add_actions(flatten=True)).select(["path", "size_bytes"])
        listed = list(zip(actions.column("path").to_pylist(), actions.column("size_bytes").to_pylist()))
        paths = [action_path(location, p) for p, _ in listed]
        index = {p: i for i, p in enumerate(paths)}
        dataset = pads.dataset(paths, schema=schema, format="parquet")

        def read(fragment: pads.ParquetFileFragment) -> pa.Table:
            part = fragment.to_table(schema=schema)
            i = pa.scalar(index[fragment.path], pa.int32())
            return part.append_column(pa.field(file_column, pa.int32()), pa.repeat(i, part.num_rows))

        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="tidegate-read") as pool:
            parts = list(pool.map(read, dataset.get_fragments()))
        counts = [0] * len(listed)
        for part in parts:
            if part.num_rows:
                counts[part.column(file_column)[0].as_py()] = part.num_rows
        files = [FileEntry(p, int(size), n) for (p, size), n in zip(listed, counts)]
        rows = pa.concat_tables(parts) if parts else schema.append(pa.field(file_column, pa.int32())).empty_table()
        return CurrentRows(version, rows, files)

    def existing_keys(self, location: str, keys: list[str], candidates: pa.Table) -> pa.Table:
        """Rows of the key columns that already exist among ``candidates`` (pruned by stats; on
        the kept add actions when current, as lookups are)."""
        with self.lock(location):
            current = self._current_actions(location)
            source = current[1] if current is not None else self._table(location)
            return _existing_keys(source, location, keys, candidates)

    def unique_clash(self, location: str, cols: list[str], data: pa.Table,
                     excluded: Sequence[pa.Table] = ()) -> dict[str, Any] | None:
        """The first NULL-free ``cols`` tuple of ``data`` the table already stores (see :func:`unique_clash`)."""
        with self.lock(location):
            dt = self._table(location)
        return unique_clash(dt, location, cols, data, excluded)

    def rows_with_keys(self, location: str, keys: list[str], candidates: pa.Table) -> pa.Table:
        """The current full rows whose key tuples occur in ``candidates``, in the candidates' order.

        The order matters to ``INSERT ... ON CONFLICT ... RETURNING``, which PostgreSQL reports in
        the order of the inserted rows.
        """
        with self.lock(location):
            ds = self._table(location).to_pyarrow_dataset()
        rows = ds.to_table(filter=_keys_filter(keys, candidates))
        if rows.num_rows == 0:
            return rows
        positions = candidates.select(keys).append_column(
            "__tg_pos", pa.array(range(candidates.num_rows), pa.int64()))
        wanted = positions.group_by(keys).aggregate([("__tg_pos", "min")])
        joined = rows.join(wanted, keys=keys, join_type="inner").sort_by("__tg_pos_min")
        return joined.select(rows.column_names)

    def file_actions(self, location: str) -> pa.Table:
        """The current data files with their log statistics (``get_add_actions(flatten=True)``),
        from the cached table: opening one fresh replays the log on every call."""
        with self.lock(location):
            return pa.table(self._table(location).get_add_actions(flatten=True))

    def changes(self, location: str, start: int, end: int, columns: list[str]) -> pa.Table:
        """The change data feed of versions ``start..end`` (inclusive), ``columns`` only."""
        with self.lock(location):
            reader = self._table(location).load_cdf(starting_version=start, ending_version=end, columns=columns)
        # The reader holds its own copy of the log segment: it is drained outside the lock, so
        # writers of the table are not held up by the read.
        return pa.table(reader.read_all())

    def app_version(self, location: str, app_id: str) -> int | None:
        """The last version an idempotent writer committed under ``app_id`` (None if never)."""
        with self.lock(location):
            return self._table(location).transaction_version(app_id)

    # -- writes --------------------------------------------------------------------------------

    def apply(self, op: WriteOp) -> int:
        """Commit ``op`` as one Delta commit; returns the new table version (or the current one)."""
        return self.apply_op(op)[0]

    def apply_op(self, op: WriteOp) -> tuple[int, WriteOp]:
        """:meth:`apply`, also returning the write as committed (ON CONFLICT DO NOTHING drops the
        rows whose key another commit stored meanwhile)."""
        location = op.table.location
        assert location, "table without a location"
        props = None
        if op.app_id is not None:
            props = CommitProperties(app_transactions=[Transaction(op.app_id, int(op.app_version or 0))])
        if op.kind in ("update", "delete") and op.data is not None and not isinstance(op.data, pa.Table):
            op = replace(op, data=op.data.read_all())
        with self.write_lock(location):
            if op.kind in ("update", "delete"):
                version = self._rewrite_current(op)
                if version is not None:
                    return version, op
            elif op.kind in ("append", "upsert"):
                done = self._append_current(op)
                if done is not None:
                    return done
            dt = self._table(location)
            if op.kind == "none":
                return dt.version(), op
            if op.kind == "add_columns":  # ALTER TABLE ADD COLUMN: the columns the table lacks
                have = {f.name for f in dt.schema().fields}
                missing = [c for c in op.table.columns if c.name not in have]
                before = dt.version()
                if missing:
                    self.add_columns(location, missing)
                    self._set_stats_properties(location, op.table)
                after = self._table(location).version()
                durability.sync_versions(location, before + 1, after)
                return after, op
            op = self.verified(dt, op)
            if op.skip_existing and isinstance(op.data, pa.Table) and not op.data.num_rows:
                return dt.version(), op
            before = dt.version()
            if op.kind == "append":
                write_deltalake(dt, op.data, mode="append", commit_properties=props,
                                writer_properties=WRITER_PROPERTIES)
            elif op.kind == "overwrite":
                write_deltalake(dt, op.data, mode="overwrite",
                                schema_mode="overwrite" if op.schema_change else None,
                                commit_properties=props, writer_properties=WRITER_PROPERTIES)
            elif op.kind == "upsert" and all_new(dt, location, op.keys, op.data):
                # Most rows of a time series are new; the lock makes the check and the append
                # one step for this gateway's writers.
                write_deltalake(dt, op.data, mode="append", commit_properties=props,
                                writer_properties=WRITER_PROPERTIES)
            elif op.kind in ("upsert", "merge"):
                data = op.data if isinstance(op.data, pa.Table) else op.data.read_all()
                if data.num_rows == 0:
                    return dt.version(), op
                # NULL keys only occur as a time-series table's tags (a NULL tag is one series):
                # matched null-safely then; otherwise the plain equality is the faster join.
                null_keys = any(data.column(k).null_count for k in op.keys)
                merger = dt.merge(data, predicate=key_match(op.keys, null_safe=null_keys), source_alias="s",
                                  target_alias="t", commit_properties=props, writer_properties=WRITER_PROPERTIES)
                if op.kind == "upsert":
                    merger = merger.when_matched_update_all().when_not_matched_insert_all()
                else:
                    merger = merger.when_matched_update(updates=op.updates).when_not_matched_insert_all()
                merger.execute()
            elif op.kind in ("update", "delete"):
                data = op.data if isinstance(op.data, pa.Table) else op.data.read_all()
                if data.num_rows == 0:
                    return dt.version(), op
                version = rewrite_by_keys(dt, location, op, data)
                if version is not None:
                    return version, op
                pred = key_match(op.keys, null_safe=op.null_safe,
                                 source_prefix="__tg_old_" if op.kind == "update" else "")
                merger = dt.merge(data, predicate=pred, source_alias="s", target_alias="t",
                                  commit_properties=props, writer_properties=WRITER_PROPERTIES)
                if op.kind == "update":
                    columns = [n for n in data.column_names if not n.startswith("__tg_old_")]
                    merger = merger.when_matched_update(updates={_q(c): f"s.{_q(c)}" for c in columns})
                else:
                    merger = merger.when_matched_delete()
                merger.execute()
            else:
                raise SqlError("XX000", f"unknown write kind {op.kind}")
            if op.schema_change:
                self.forget(location)
                after = self._set_stats_properties(location, op.table) or self._table(location).version()
            else:
                # write_deltalake/merge leave ``dt`` at the commit they made; reloading the table
                # from its log here cost ~50 ms per INSERT.
                after = dt.version()
            # delta-rs wrote the files and the entry without fsync: on disk before the statement
            # is acknowledged (engine/durability.py).
            durability.sync_versions(location, before + 1, after)
            return after, op

    def _rewrite_current(self, op: WriteOp) -> int | None:
        """An UPDATE / DELETE by key (:func:`rewrite_by_keys`) committed on the kept add actions of
        the current version, without bringing the cached DeltaTable up to date: delta-rs replays
        the log since its last checkpoint to read a new commit (2-10 ms, growing with the
        commits), and listing the add actions again cost as much. The kept actions then become
        the new version's (:meth:`_keep`). Applies when the actions of the current version are
        kept (the next version's log entry is absent), the statement read that version (nothing
        to re-check: :meth:`verified`), and there is no UNIQUE set to re-check; the cached table
        may be behind by this store's own rewrites, which change no schema, metadata or protocol.
        Returns the version committed (or the current one when no row matched), or None."""
        location = op.table.location or ""
        current = self._current_actions(location)
        dt = self._tables.get(location)
        if current is None or dt is None or op.base_version != current[0] or op.unique_sets \
                or op.schema_change or not isinstance(op.data, pa.Table):
            return None
        if op.data.num_rows == 0:
            return current[0]
        done = rewrite_by_keys(dt, location, op, op.data, current=current)
        if done is None:
            return None
        if isinstance(done, int):
            return done
        version, removes, adds, now = done
        gone = pa.array([r.path for r in removes], pa.string())
        actions = current[1]
        kept_rows = actions.filter(pc.invert(pc.is_in(actions.column("path"), value_set=gone)))
        added = _add_actions(adds, now, actions.schema)
        if added is None:  # a column of the actions this cannot fill: read the log next time
            self.forget(location)
            return version
        actions = pa.concat_tables([kept_rows, added]).combine_chunks()
        self._keep(location, version, actions,
                   [action_path(location, p) for p in actions.column("path").to_pylist()])
        return version

    def _append_current(self, op: WriteOp) -> tuple[int, WriteOp] | None:
        """A small append (INSERT ... VALUES, a short COPY) committed by tidegate's own writer on
        the kept add actions of the current version, as :meth:`_rewrite_current` commits by key:
        one Parquet file and one log entry, fsync'd in order (engine/durability.py), without
        delta-rs' writer, whose commit then brings its table up to date (21 of a one-row
        INSERT's 26 ms). A key rule is checked against the kept actions (the current version,
        under the table's lock). Applies to at most :data:`REWRITE_FILE_ROWS` rows in the
        table's own columns, without UNIQUE sets to re-check, on a table :mod:`engine.deltalog`
        writes. An upsert (a time-series table's INSERT) whose keys are all new is such an append
        (as :func:`all_new` decides for delta-rs); one that replaces a row is the merge's.
        A larger append into a PRIMARY KEY table (a COPY, INSERT ... SELECT collected) is written
        the same way as files of at most :data:`REWRITE_FILE_ROWS` rows, in one commit: the files a
        rewrite by key writes again, so a one-row UPDATE of a bulk-loaded table never rewrites a
        100,000-row file (delta-rs writes files of up to ~100 MB).
        Returns (version, the write as committed) or None for the delta-rs path."""
        location = op.table.location or ""
        data = op.data
        if op.schema_change or op.unique_sets or not isinstance(data, pa.Table) or data.num_rows == 0:
            return None
        if data.num_rows > REWRITE_FILE_ROWS and not (op.kind == "append" and (op.unique or op.skip_existing)):
            return None  # key-less or time-series bulk: delta-rs' larger files (rows are not rewritten by key)
        current = self._current_actions(location)
        if current is None:  # after a commit of delta-rs or another engine: read the log once
            self.snapshot_with_stats(location)
            current = self._current_actions(location)
        dt = self._tables.get(location)
        if current is None or dt is None or not deltalog.supports(dt):
            return None
        schema = storage_schema(op.table.columns)
        if data.schema.names != schema.names or [f.name for f in dt.schema().fields] != schema.names:
            return None
        try:
            data = data.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        op = replace(op, data=data)
        version, actions = current
        if op.kind == "upsert":
            if any(data.column(k).null_count for k in op.keys) \
                    or _existing_keys(actions, location, op.keys, data).num_rows:
                return None  # NULL tags match null-safely, stored keys are replaced: the merge
        elif op.unique or op.skip_existing:
            op = self._checked_keys(actions, op)
            if op.data.num_rows == 0:  # type: ignore[union-attr]
                return version, op
        pieces = _pieces(op.data)  # type: ignore[arg-type]
        added = _written(location, pieces)
        now = int(_time.time() * 1000)
        app = (op.app_id, int(op.app_version or 0)) if op.app_id is not None else None
        try:
            version = deltalog.commit(dt, location, adds=added, app_transaction=app, operation="WRITE",
                                      parameters={"mode": "Append"},
                                      metrics={"numFiles": len(added), "numOutputRows": sum(a.rows for a in added),
                                               "numOutputBytes": sum(a.size for a in added)},
                                      read_version=version, now=now)
        except deltalog.CommitConflict:  # another process took the version: the general path
            for a in added:
                os.unlink(os.path.join(location, a.path))
            return None
        if len(added) == 1:  # a bulk load is not kept: it would push the lookups' files out
            remember_file(action_path(location, added[0].path), op.data)  # type: ignore[arg-type]
        new = _add_actions(added, now, actions.schema)
        if new is None:
            self.forget(location)
        else:
            # one chunk: Arrow's kernels over a chunk per INSERT took 3 ms per lookup after 200
            actions = pa.concat_tables([actions, new]).combine_chunks()
            self._keep(location, version, actions,
                       [action_path(location, p) for p in actions.column("path").to_pylist()])
        return version, op

    def commit_all(self, ops: list[WriteOp], journal: Journal, ddl: DdlRecord | None = None,
                   catalog: Catalog | None = None, hooks: CommitHooks | None = None) -> None:
        """A transaction's writes (and DDL), all or none: checked together under every written
        table's lock (taken in location order), then journaled and applied (see
        :mod:`engine.txnlog`), visible to readers at once (:attr:`gate`). Writes that can share a
        Delta commit are merged first, so a transaction of inserts into one table (an
        executemany) is one commit and needs no journal.

        With ``ddl`` the catalog is held from the check of its changes until they are applied,
        so nothing changes a relation in between and recovery never replays over a newer change.
        With ``hooks`` (:class:`engine.txnlog.CommitHooks`) the commit is always journaled."""
        if ddl is not None:
            gone = {oid for oid, t in ddl.changes.relations.items() if t is None}
            ops = [op for op in ops if op.table.oid not in gone]  # writes to a table dropped with them
        ops = coalesce(ops)
        if not ops and ddl is None:
            return
        if len(ops) == 1 and ddl is None and hooks is None:
            self.apply(ops[0])
            return
        locations = sorted({op.table.location or "" for op in ops})
        with ExitStack() as held:
            held.enter_context(self.gate.committing())
            for location in locations:
                held.enter_context(self.write_lock(location))
            if ddl is not None:
                assert catalog is not None
                held.enter_context(catalog.exclusive())
            checked: list[WriteOp] = []
            freed: dict[str, pa.Table] = {}
            for op in ops:
                location = op.table.location or ""
                checked.append(self.verified(self._table(location), op, freed.get(location)))
                removed = _removed_keys(op)
                if removed is not None:
                    freed[location] = pa.concat_tables([freed[location], removed]) if location in freed else removed
            if ddl is not None:
                catalog.verify_changes(ddl.changes)
            if hooks is not None:
                hooks.check()
            txid = journal.begin(checked, ddl, hooks.note if hooks is not None else None)  # the commit point
            txnlog.apply_all(self, journal, txid, checked, ddl, catalog,
                             hooks.landed if hooks is not None else None)

    def verified(self, dt: DeltaTable, op: WriteOp, freed: pa.Table | None = None) -> WriteOp:
        """``op`` checked against what was committed since its statement read the table (the
        caller holds the table's lock, so nothing commits in between): an UPDATE/DELETE whose rows
        another commit changed or deleted fails with 40001 (never overwrites it); a unique append
        whose key now exists fails with 23505; ON CONFLICT DO NOTHING drops rows whose key now
        exists. ``freed``: key tuples an earlier write of the same transaction removes."""
        location = op.table.location or ""
        if op.kind == "overwrite" and op.base_version is not None and dt.version() != op.base_version:
            raise SqlError("40001", "could not serialize access due to concurrent update",
                           detail=f'table "{op.table.name}" changed while the statement ran')
        if op.kind in ("update", "delete", "upsert") and op.base_version is not None and dt.version() != op.base_version:
            if self._rows_changed(dt, op):
                raise SqlError("40001", "could not serialize access due to concurrent update",
                               detail=f'rows of table "{op.table.name}" were changed by another transaction '
                                      "after this statement read them",
                               hint="Run the transaction again.")
        if op.kind == "append" and (op.unique or op.skip_existing) and isinstance(op.data, pa.Table) \
                and op.data.num_rows:
            op = self._checked_keys(dt, op, freed)
        if op.kind in ("append", "update") and op.unique_sets and isinstance(op.data, pa.Table) and op.data.num_rows:
            excluded = [freed] if freed is not None and freed.num_rows else []
            if op.kind == "update":
                excluded.append(op.data.select([f"__tg_old_{k}" for k in op.keys]).rename_columns(op.keys))
            for name, cols in op.unique_sets:
                clash = unique_clash(dt, location, cols, op.data, excluded)
                if clash is not None:
                    raise SqlError("23505", f'duplicate key value violates unique constraint "{name}"',
                                   detail=f"{key_text(clash)} already exists.")
        return op

    @staticmethod
    def _checked_keys(source: DeltaTable | pa.Table, op: WriteOp, freed: pa.Table | None = None) -> WriteOp:
        """A PRIMARY KEY append (23505 for a stored key) or ON CONFLICT DO NOTHING (its rows with
        a stored key dropped), checked against ``source``: a table, or the flattened add actions
        of its current version."""
        assert isinstance(op.data, pa.Table)
        existing = _existing_keys(source, op.table.location or "", op.keys, op.data)
        if freed is not None and existing.num_rows and freed.num_rows:
            gone = freed.select(op.keys).group_by(op.keys).aggregate([])
            gone = gone.append_column("__tg_freed", pa.repeat(True, gone.num_rows))
            existing = existing.join(gone, keys=op.keys, join_type="left outer")
            existing = existing.filter(pc.is_null(existing.column("__tg_freed"))).select(op.keys)
        if existing.num_rows:
            if op.unique:
                raise SqlError("23505", f'duplicate key value violates unique constraint "{op.table.name}_pkey"',
                               detail=f"{key_text(existing.slice(0, 1).to_pylist()[0])} already exists.")
            hits = existing.append_column("__tg_hit", pa.repeat(True, existing.num_rows))
            joined = op.data.append_column("__tg_i", pa.array(range(op.data.num_rows), pa.int64())).join(
                hits, keys=op.keys, join_type="left outer")
            keep = pc.filter(joined.column("__tg_i"), pc.is_null(joined.column("__tg_hit"))).combine_chunks()
            op = replace(op, data=op.data.take(keep.sort()))
        return op

    def _rows_changed(self, dt: DeltaTable, op: WriteOp) -> bool:
        """Whether a commit after ``op.base_version`` updated or deleted a row ``op`` matched.
        The change feed of those commits tells (update pre-images and deletes); for key-less
        tables any such change counts, as their rows have no identity to compare."""
        feed = pa.table(dt.load_cdf(starting_version=op.base_version + 1, ending_version=dt.version()).read_all())
        if feed.num_rows == 0:
            return False
        # the feed comes with view types (string_view), which Arrow's filter and join do not take
        feed = feed.cast(pa.schema([pa.field(f.name, pa.string() if f.type == pa.string_view() else
                                             pa.binary() if f.type == pa.binary_view() else f.type)
                                    for f in feed.schema]))
        # an upsert computed from what it read (ON CONFLICT DO UPDATE in a block) also conflicts
        # with a row another transaction inserted under one of its keys
        kinds = ["update_preimage", "delete"] + (["insert"] if op.kind == "upsert" else [])
        gone = feed.filter(pc.is_in(feed.column("_change_type"), pa.array(kinds)))
        if gone.num_rows == 0 or op.null_safe:
            return gone.num_rows > 0
        data = op.data if isinstance(op.data, pa.Table) else None
        if data is None:
            return True
        prefix = "__tg_old_" if op.kind == "update" else ""
        mine = data.select([prefix + k for k in op.keys]).rename_columns(op.keys)
        mine = mine.group_by(op.keys).aggregate([])
        theirs = gone.select(op.keys)
        try:
            theirs = theirs.cast(mine.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return True
        return theirs.join(mine, keys=op.keys, join_type="inner").num_rows > 0

    def keep_stats_columns(self, table: TableDef) -> None:
        """Bring the table's statistics properties (:func:`stats_properties`) up to date after its
        keys or indexes changed; one commit (on disk when this returns), only when they differ."""
        if table.location and table.kind == "table":
            with self.write_lock(table.location):
                committed = self._set_stats_properties(table.location, table)
                if committed is not None:
                    durability.sync_versions(table.location, committed, committed)

    def _set_stats_properties(self, location: str, table: TableDef) -> int | None:
        """The commit of :meth:`keep_stats_columns` without its fsync (a write op syncs every
        version it made); returns the version committed, or None when nothing changed. The
        table's lock is held."""
        wanted = stats_properties(table)
        dt = self._table(location)
        config = dt.metadata().configuration
        if all(config.get(k) == v for k, v in wanted.items()):
            return None
        dt.alter.set_table_properties(wanted)
        self.forget(location)
        return self._table(location).version()

    def add_columns(self, location: str, columns: Sequence[ColumnDef]) -> None:
        from deltalake.schema import Field as DField

        with self.write_lock(location):
            dt = self._table(location)
            fields = []
            for c in columns:
                f = pa.field(c.name, storage_type(c.type), nullable=True)
                fields.append(DField.from_arrow(f) if hasattr(DField, "from_arrow") else f)
            dt.alter.add_columns(fields)
            self.forget(location)


def local_files(dt: DeltaTable) -> list[str]:
    """The table's data files as paths. ``file_uris()`` percent-encodes them (a space is ``%20``),
    which Spark and pyarrow take literally: under a data dir with a space no table was readable."""
    return [unquote(u) for u in dt.file_uris()]


def all_new(dt: DeltaTable, location: str, keys: list[str], data: Any) -> bool:
    """Whether ``data`` has rows and none has a key tuple ``dt`` already stores (then an upsert
    is an append, about 3x cheaper than a merge)."""
    if not isinstance(data, pa.Table) or data.num_rows == 0:
        return False
    if any(data.column(k).null_count for k in keys):
        return False  # the key join below never matches NULL tags: let the null-safe merge decide
    return _existing_keys(dt, location, keys, data).num_rows == 0


def _existing_keys(dt: DeltaTable | pa.Table, location: str, keys: list[str], candidates: pa.Table) -> pa.Table:
    wanted = candidates.select(keys)
    files = key_files(dt, location, keys, candidates)
    if not files:
        return wanted.slice(0, 0)
    # delta-rs writes text as string or as string_view, and pyarrow can neither compare nor filter
    # string_view: the key columns are read in the candidates' types and matched by the join.
    existing = pads.dataset(files, format="parquet", schema=wanted.schema).to_table(columns=keys)
    return existing.join(wanted.group_by(keys).aggregate([]), keys=keys, join_type="inner")


def non_null_keys(data: pa.Table, cols: list[str]) -> pa.Table:
    """``data``'s ``cols`` in the rows where none of them is NULL (NULLs are distinct in a UNIQUE)."""
    keys = data.select(cols)
    mask = None
    for c in cols:
        valid = pc.is_valid(keys.column(c))
        mask = valid if mask is None else pc.and_(mask, valid)
    return keys.filter(mask) if mask is not None else keys


def unique_clash(dt: DeltaTable, location: str, cols: list[str], data: pa.Table,
                 excluded: Sequence[pa.Table] = ()) -> dict[str, Any] | None:
    """The first ``cols`` value tuple of ``data`` (NULL-free) that a stored row of ``dt`` holds,
    ignoring stored rows matching a row of an ``excluded`` table on its columns (rows the same
    write or transaction removes); None when there is none."""
    wanted = non_null_keys(data, cols)
    if wanted.num_rows == 0:
        return None
    files = key_files(dt, location, cols, wanted)
    if not files:
        return None
    extra = [k for e in excluded for k in e.column_names if k not in cols]
    read = cols + list(dict.fromkeys(extra))
    schema = pa.schema([data.schema.field(k) if k in data.column_names else excluded_field(excluded, k) for k in read])
    stored = pads.dataset(files, format="parquet", schema=schema).to_table(columns=read)
    stored = stored.join(wanted.group_by(cols).aggregate([]), keys=cols, join_type="inner")
    for ex in excluded:
        if stored.num_rows == 0:
            break
        names = ex.column_names
        gone = ex.group_by(names).aggregate([])
        gone = gone.append_column("__tg_gone", pa.repeat(True, gone.num_rows))
        stored = stored.join(gone.cast(pa.schema([stored.schema.field(k) for k in names] + [gone.schema.field("__tg_gone")])),
                             keys=names, join_type="left outer")
        stored = stored.filter(pc.is_null(stored.column("__tg_gone"))).drop_columns(["__tg_gone"])
    return stored.select(cols).slice(0, 1).to_pylist()[0] if stored.num_rows else None


def excluded_field(excluded: Sequence[pa.Table], name: str) -> pa.Field:
    for e in excluded:
        if name in e.column_names:
            return e.schema.field(name)
    raise KeyError(name)


class _ColumnCache:
    """What was decoded or built from a column of a data file (the column, its key index), least
    recently used out past ``limit`` bytes (``nbytes`` of each). A Delta data file never changes
    once written, so an entry is valid as long as a version lists its file."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._entries: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Any:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: tuple[str, str], value: Any) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = value
            self.size += value.nbytes
            while self.size > self.limit and self._entries:
                _, old = self._entries.popitem(last=False)
                self.size -= old.nbytes


CACHE_BYTES = 1024 * 1024 * 1024  # Settings.interactive_cache_mb (configure_file_cache)
_CACHE = _ColumnCache(CACHE_BYTES)


def file_columns(path: str, schema: pa.Schema, names: list[str]) -> pa.Table:
    """``names`` of one data file (a column the file predates is NULLs, as Spark reads it), decoded
    once: the interactive path's reads and the rewrites by key (:func:`rewrite_by_keys`) keep them
    (:data:`CACHE_BYTES`, least recently used out)."""
    cached = {n: _CACHE.get((path, n)) for n in names}
    missing = [n for n, v in cached.items() if v is None]
    if missing:
        read = read_file_columns(path, schema, missing)
        for n in missing:
            cached[n] = _one_chunk(read.column(n))
            _CACHE.put((path, n), cached[n])
    return pa.table({n: cached[n] for n in names})


def read_file_columns(path: str, schema: pa.Schema, names: list[str]) -> pa.Table:
    """``names`` of the data file at ``path`` in ``schema``'s types; a column the file predates
    (ADD COLUMN) is NULLs, as Spark reads it. Read with the file's own reader: a dataset of one
    file cost 6.1 ms for a 32Ki-row file of four columns against 2.6 (a cold table's lookups and
    its background reads are that, per file). A file whose types differ from ``schema`` is read
    through a dataset, which converts them."""
    with pq.ParquetFile(path) as f:
        stored = f.schema_arrow
        present = [n for n in names if stored.get_field_index(n) >= 0]
        if any(stored.field(n).type != schema.field(n).type for n in present):
            return pads.dataset(path, schema=schema, format="parquet").to_table(columns=names)
        read = f.read(columns=present) if present else None
        rows = f.metadata.num_rows
    return pa.table({n: read.column(n) if n in present else pa.chunked_array([pa.nulls(rows, schema.field(n).type)])
                     for n in names}, schema=pa.schema([schema.field(n) for n in names]))


def _one_chunk(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """``column`` as one chunk, as the cache keeps it: Arrow's ``take`` on a column of several
    chunks concatenates them first, so a lookup's take of one row from a 1M-row file of eight
    row groups cost 3.4 ms instead of 0.03. A column too large for one chunk (string offsets past
    2 GiB) stays as it is."""
    if column.num_chunks <= 1:
        return column
    try:
        return pa.chunked_array([column.combine_chunks()], type=column.type)
    except (pa.ArrowInvalid, pa.ArrowCapacityError):
        return column


def columns_kept(path: str, names: list[str]) -> bool:
    """Whether :func:`file_columns` has every one of ``names`` of the file in memory."""
    return all(_CACHE.get((path, n)) is not None for n in names)


def kept_columns(path: str, names: list[str]) -> pa.Table | None:
    """:func:`file_columns` when every one of ``names`` is in memory (no read), else None."""
    cached = [_CACHE.get((path, n)) for n in names]
    if any(c is None for c in cached):
        return None
    return pa.table(dict(zip(names, cached)))


@dataclass(frozen=True)
class KeyIndex:
    """One data file's non-NULL values of an integer column, sorted, and their row numbers."""

    values: np.ndarray
    rows: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + self.rows.nbytes

    def rows_of(self, keys: Sequence[int]) -> np.ndarray:
        """Row numbers (ascending) whose value is one of ``keys``."""
        values = self.values
        if len(keys) == 1:  # a point lookup: no generator, set or concatenation
            lo, hi = values.searchsorted(keys[0], "left"), values.searchsorted(keys[0], "right")
            return self.rows[lo:hi] if hi - lo < 2 else np.sort(self.rows[lo:hi])
        parts = [self.rows[lo:hi] for lo, hi in ((values.searchsorted(k, "left"), values.searchsorted(k, "right"))
                                                 for k in set(keys)) if hi > lo]
        return np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)


INDEX_BYTES = CACHE_BYTES // 4
_INDEXES = _ColumnCache(INDEX_BYTES)


def configure_file_cache(limit: int) -> None:
    """Bytes of decoded columns kept (:func:`file_columns`); key indexes get a quarter more."""
    _CACHE.limit, _INDEXES.limit = limit, limit // 4


_PREFETCH = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tg-prefetch")
# Files waiting to be read, per (columns, key): one work item drains each queue. (One item per cold
# lookup, each walking its own list, left hundreds of items checking the cache file by file after a
# cold table's first lookups: 0.6 s of the GIL taken from the lookups that followed.)
_prefetch_queues: dict[tuple[tuple[str, ...], str | None], dict[str, pa.Schema]] = {}
_prefetch_lock = threading.Lock()


def _prefetch_missing(path: str, names: list[str], key: str | None) -> bool:
    return not columns_kept(path, names) or (key is not None and not key_index_kept(path, key))


def prefetch(paths: Sequence[str], schema: pa.Schema, names: list[str], key: str | None = None) -> None:
    """Decode ``names`` (and build ``key``'s index) of the data files at ``paths`` in the
    background, one file after another, while the cache has room for them: a table's first
    lookups pay one file's read, not one each. A file already queued is not queued again."""
    todo = [p for p in paths if _prefetch_missing(p, names, key)]
    if not todo:
        return
    queue_key = (tuple(names), key)
    with _prefetch_lock:
        queue = _prefetch_queues.get(queue_key)
        if queue is not None:  # a work item is draining this queue: it takes these files too
            for path in todo:
                queue.setdefault(path, schema)
            return
        queue = _prefetch_queues[queue_key] = dict.fromkeys(todo, schema)

    def next_file() -> tuple[str, pa.Schema] | None:
        with _prefetch_lock:
            if queue and _CACHE.size < _CACHE.limit * 0.9:  # else no room: what is kept is what lookups use
                path = next(iter(queue))  # in the order the files were listed
                return path, queue.pop(path)
            del _prefetch_queues[queue_key]  # with the lock held: a later lookup starts a new queue
            return None

    def work() -> None:
        try:
            while (item := next_file()) is not None:
                path, file_schema = item
                if not _prefetch_missing(path, names, key):  # read by a lookup meanwhile
                    continue
                try:
                    part = file_columns(path, file_schema, names)
                    if key is not None:
                        key_index(path, key, part.column(key))
                except Exception:  # noqa: BLE001 - gone since (vacuum) or unreadable: the lookup reports it
                    log.debug("prefetch of %s failed", path, exc_info=True)
        finally:  # after an unexpected error too
            with _prefetch_lock:
                if _prefetch_queues.get(queue_key) is queue:
                    del _prefetch_queues[queue_key]

    try:
        _PREFETCH.submit(work)
    except RuntimeError:  # the interpreter is shutting down
        with _prefetch_lock:
            _prefetch_queues.pop(queue_key, None)


def key_index(path: str, name: str, column: pa.ChunkedArray) -> KeyIndex:
    """The index of integer column ``name`` (values ``column``) of the data file at ``path``: built
    once (a data file never changes), least recently used out past :data:`INDEX_BYTES`. Lookups
    by key (engine.interactive) and rewrites by key find their rows with it."""
    index = _INDEXES.get((path, name))
    if index is not None:
        return index
    arr = column.combine_chunks()
    rows = np.arange(len(arr), dtype=np.int64)
    values = arr.fill_null(0).to_numpy(zero_copy_only=False)
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        rows, values = rows[valid], values[valid]
    order = np.argsort(values, kind="stable")
    index = KeyIndex(values[order], rows[order])
    _INDEXES.put((path, name), index)
    return index


def key_index_kept(path: str, name: str) -> bool:
    return kept_key_index(path, name) is not None


def kept_key_index(path: str, name: str) -> KeyIndex | None:
    """:func:`key_index` if it is built (no work), else None."""
    return _INDEXES.get((path, name))


def remember_file(path: str, table: pa.Table) -> None:
    """Keep the columns of a data file just written from ``table`` (its next reads are hits)."""
    for n in table.column_names:  # as they are: a rewrite's pieces are few chunks, and copying them costs the write
        _CACHE.put((path, n), table.column(n))


def key_files(dt: DeltaTable | pa.Table, location: str, keys: list[str], candidates: pa.Table) -> list[str]:
    """The data files of ``dt`` that may hold a key tuple of ``candidates``: files whose log
    statistics (min/max per column) rule out every candidate are skipped without being opened,
    which makes the usual case, new keys past everything stored, cost no scan at all."""
    paths = _key_actions(dt, keys, candidates).column("path").to_pylist()
    return [action_path(location, p) for p in paths]


def _key_actions(dt: DeltaTable | pa.Table, keys: Sequence[str], candidates: pa.Table) -> pa.Table:
    """The add actions (path, size_bytes, num_records, ...) of :func:`key_files`, from ``dt``'s
    log or the flattened add actions given."""
    actions = dt if isinstance(dt, pa.Table) else pa.table(dt.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return actions
    keep = pa.repeat(True, actions.num_rows)
    for k in keys:
        overlap = _stats_overlap(actions, k, candidates.column(k))
        if overlap is not None:
            keep = pc.and_(keep, overlap)
    return actions.filter(keep)


# Rows an UPDATE / DELETE by key may read to rewrite the files holding its keys; more: a merge.
REWRITE_MAX_ROWS = 2_000_000
# A file rewritten by key is written again as pieces of at most this many rows, two at a time: the
# cost of a one-row UPDATE is writing its file (about 10 ms for 100,000 rows of four columns), so a
# table's updated parts split into smaller files on their first rewrite, as a B-tree page splits, and
# later rewrites there write a quarter as much. Maintenance compacts small files to this size too.
REWRITE_FILE_ROWS = 32 * 1024
_REWRITE_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tg-rewrite")


def _pieces(table: pa.Table) -> list[pa.Table]:
    """``table`` cut into balanced slices of at most :data:`REWRITE_FILE_ROWS` rows."""
    n = -(-table.num_rows // REWRITE_FILE_ROWS)
    if n <= 1:
        return [table]
    bounds = [table.num_rows * i // n for i in range(n + 1)]
    return [table.slice(lo, hi - lo) for lo, hi in zip(bounds, bounds[1:])]


def _written(location: str, pieces: list[pa.Table]) -> list[deltalog.DataFile]:
    """``pieces`` written as new data files of the table, two at a time. On a failure every write
    is waited for and those written are removed (no log entry names them) before it is raised."""
    if len(pieces) == 1:
        return [deltalog.add_data_file(location, pieces[0])]
    writes = [_REWRITE_POOL.submit(deltalog.add_data_file, location, piece) for piece in pieces]
    done, failure = [], None
    for w in writes:
        try:
            done.append(w.result())
        except Exception as e:  # noqa: BLE001 - re-raised below, once the others are cleaned up
            failure = failure or e
    if failure is not None:
        for d in done:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(location, d.path))
        raise failure
    return done


def rewrite_by_keys(dt: DeltaTable, location: str, op: WriteOp, data: pa.Table,
                    current: tuple[int, pa.Table] | None = None
                    ) -> int | tuple[int, list[FileEntry], list[deltalog.DataFile], int] | None:
    """An UPDATE / DELETE of rows found by their key, committed as a rewrite of the data files
    holding them (:mod:`engine.deltalog`): each such file is replaced by one without the rows
    (DELETE) or with their new values (UPDATE), and the change data feed gets the rows' delete /
    update pre- and post-images, as a delta-rs merge writes them. The files are those the log
    statistics of the key columns cannot rule out; only the ones holding a key are rewritten.

    A merge reads every file of the table and costs about half a second on a million rows; this
    reads the candidate files. Returns the version committed (or the current one when no row
    matched), or None when it does not apply and the merge runs: keys matched NULL-safely (a
    time-series table's tags, key-less tables), a table :func:`engine.deltalog.supports` does not
    write, or more than :data:`REWRITE_MAX_ROWS` rows to read.

    ``current``: the version to commit on and its flattened add actions, kept by the store
    (``dt`` may be older: it gives the schema, metadata and protocol only). The commit then leaves
    ``dt`` as it is and returns (version, files removed, files added, commit time in ms), from
    which the store keeps the new version's actions (:meth:`TableStore._rewrite_current`)."""
    keys = list(op.keys)
    if op.null_safe or not keys or not deltalog.supports(dt):
        return None
    schema = storage_schema(op.table.columns)
    if [f.name for f in dt.schema().fields] != schema.names:
        return None
    prefix = "__tg_old_" if op.kind == "update" else ""
    wanted = data.select([prefix + k for k in keys]).rename_columns(keys)
    if any(wanted.column(k).null_count for k in keys):
        return None
    read_version = current[0] if current is not None else dt.version()
    actions = _key_actions(current[1] if current is not None else dt, keys, wanted)
    if actions.num_rows == 0:
        return read_version
    if any(n is None for n in actions.column("num_records").to_pylist()) \
            or pc.sum(actions.column("num_records")).as_py() > REWRITE_MAX_ROWS:
        return None
    key_schema = pa.schema([schema.field(k) for k in keys])
    wanted = wanted.cast(key_schema)
    changes = None
    if op.kind == "update":
        changes = data.select([prefix + k for k in keys] + schema.names)
        changes = changes.rename_columns(keys + [f"__tg_new_{c}" for c in schema.names]).cast(
            pa.schema(list(key_schema) + [schema.field(c).with_name(f"__tg_new_{c}") for c in schema.names]))
    # A few keys of one integer column (the usual statement): found with the files' key indexes and
    # paired in Python; Arrow's group-by and join cost about a millisecond each even for one row.
    few_int_keys: list[int] | None = None
    change_row: dict[int, int] = {}
    if len(keys) == 1 and wanted.num_rows <= 64 and pa.types.is_integer(key_schema.field(0).type):
        few_int_keys = list(dict.fromkeys(wanted.column(keys[0]).to_pylist()))
        if changes is not None:
            change_keys = changes.column(keys[0]).to_pylist()
            change_row = {k: i for i, k in enumerate(change_keys)}
            if len(change_row) != len(change_keys):
                return None  # a key with two new rows: the merge reports it
    else:
        if changes is not None and changes.group_by(keys).aggregate([]).num_rows != changes.num_rows:
            return None
        distinct = wanted.group_by(keys).aggregate([])
        marker = distinct.append_column("__tg_hit", pa.array([True] * distinct.num_rows, pa.bool_()))
    removes: list[FileEntry] = []
    pieces: list[pa.Table] = []
    adds: list[deltalog.DataFile] = []
    before: list[pa.Table] = []
    after: list[pa.Table] = []
    for path, size, rows in zip(actions.column("path").to_pylist(), actions.column("size_bytes").to_pylist(),
                                actions.column("num_records").to_pylist()):
        part = file_columns(action_path(location, path), schema, schema.names)
        if few_int_keys is not None:  # one integer key: its index (kept for the file's lookups too)
            hits = key_index(action_path(location, path), keys[0], part.column(keys[0])).rows_of(few_int_keys)
        else:
            numbered = part.select(keys).append_column("__tg_i", pa.array(np.arange(part.num_rows, dtype=np.int64)))
            hits = numbered.join(marker, keys=keys, join_type="inner").column("__tg_i").to_numpy()
        if len(hits) == 0:
            continue
        hits = np.sort(hits)
        old = part.take(pa.array(hits))
        kept = _without_rows(part, hits)
        if changes is not None:
            if few_int_keys is not None:
                paired = changes.take(pa.array([change_row[k] for k in old.column(keys[0]).to_pylist()
                                                if k in change_row], pa.int64()))
            else:
                paired = old.select(keys).join(changes, keys=keys, join_type="inner")
            new = pa.Table.from_arrays([paired.column(f"__tg_new_{c}") for c in schema.names], schema=schema)
            kept = pa.concat_tables([kept, new])
            after.append(new)
        before.append(old)
        removes.append(FileEntry(path, int(size), int(rows)))
        if kept.num_rows:
            pieces.extend(_pieces(kept))
    if not removes:
        return read_version
    cdc_write = None
    if dt.metadata().configuration.get("delta.enableChangeDataFeed") == "true":
        images = [(t, "delete" if op.kind == "delete" else "update_preimage") for t in before] + \
                 [(t, "update_postimage") for t in after]
        feed = pa.concat_tables([t.append_column(deltalog.CHANGE_TYPE, pa.array([kind] * t.num_rows, pa.string()))
                                 for t, kind in images])
        cdc_write = _REWRITE_POOL.submit(deltalog.add_cdc_file, location, feed)
    for piece, added in zip(pieces, _written(location, pieces)):
        remember_file(action_path(location, added.path), piece)
        adds.append(added)
    cdc = [cdc_write.result()] if cdc_write is not None else []
    count = sum(t.num_rows for t in before)
    app = (op.app_id, int(op.app_version or 0)) if op.app_id is not None else None
    now = int(_time.time() * 1000)
    try:
        version = deltalog.commit(dt, location, adds=adds, removes=removes, cdc=cdc, app_transaction=app,
                                  operation=op.kind.upper(),
                                  parameters={"predicate": "rows by key"},
                                  metrics={"numTargetRowsUpdated" if op.kind == "update" else "numTargetRowsDeleted": count,
                                           "numTargetFilesRemoved": len(removes), "numTargetFilesAdded": len(adds)},
                                  read_version=read_version if current is not None else None, now=now)
        return version if current is None else (version, removes, adds, now)
    except deltalog.CommitConflict:
        raise SqlError("40001", "could not serialize access due to concurrent update",
                       detail=f'table "{op.table.name}" was committed by another writer meanwhile',
                       hint="Run the transaction again.") from None


def _add_actions(adds: Sequence[deltalog.DataFile], now: int, schema: pa.Schema) -> pa.Table | None:
    """The rows ``DeltaTable.get_add_actions(flatten=True)`` gives for files this process added
    (their stats JSON read back with Arrow's casts: timestamps of the log are text), in
    ``schema``; None when ``schema`` has a column this does not know (partition values, tags)."""
    stats = [json.loads(a.stats) if a.stats else {} for a in adds]
    arrays = []
    for f in schema:
        name = f.name
        if name == "path":
            values: list[Any] = [a.path for a in adds]
        elif name == "size_bytes":
            values = [a.size for a in adds]
        elif name == "modification_time":
            values = [now] * len(adds)
        elif name == "num_records":
            values = [s.get("numRecords") for s in stats]
        elif name.startswith(("null_count.", "min.", "max.")):
            part, column = name.split(".", 1)
            group = {"null_count": "nullCount", "min": "minValues", "max": "maxValues"}[part]
            values = [s.get(group, {}).get(column) for s in stats]
        else:
            return None
        if all(v is None for v in values):
            arrays.append(pa.nulls(len(values), f.type))
        elif pa.types.is_timestamp(f.type) or pa.types.is_date(f.type):
            arrays.append(pa.array(values, pa.string()).cast(f.type))
        else:
            arrays.append(pa.array(values, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _without_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table`` without the rows numbered ``rows`` (ascending): a few are cut out as zero-copy
    slices (a one-row UPDATE spent 5 ms copying the rest of its file twice), many by a filter."""
    if len(rows) > 64:
        mask = np.ones(table.num_rows, dtype=bool)
        mask[rows] = False
        return table.filter(pa.array(mask))
    pieces, start = [], 0
    for r in rows.tolist():
        if r > start:
            pieces.append(table.slice(start, r - start))
        start = r + 1
    if start < table.num_rows:
        pieces.append(table.slice(start))
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


def _stats_overlap(actions: pa.Table, key: str, values: pa.ChunkedArray) -> pa.Array | None:
    """Per file, whether its [min, max] of ``key`` meets the range of ``values``; None when the
    statistics cannot decide (absent, a type whose statistics may be truncated, NULL keys)."""
    lo_name, hi_name = f"min.{key}", f"max.{key}"
    if lo_name not in actions.column_names or hi_name not in actions.column_names or values.null_count:
        return None
    t = values.type
    if not _ordered(t):
        return None  # strings may be truncated in the log; floats and decimals are left alone
    bounds = pc.min_max(values)
    lo, hi = bounds["min"], bounds["max"]
    if not (lo.is_valid and hi.is_valid):
        return None
    if pa.types.is_timestamp(t):
        # The log keeps timestamps at millisecond precision: widen the range by a millisecond.
        slack = pa.scalar(1000 if t.unit == "us" else 1_000_000 if t.unit == "ns" else 1, pa.int64())
        lo = pc.cast(pc.subtract(pc.cast(lo, pa.int64()), slack), t)
        hi = pc.cast(pc.add(pc.cast(hi, pa.int64()), slack), t)
    try:
        file_lo, file_hi = actions.column(lo_name), actions.column(hi_name)
        lo_s, hi_s = pc.cast(lo, file_hi.type, safe=False), pc.cast(hi, file_lo.type, safe=False)
        outside = pc.or_(pc.less(file_hi, lo_s), pc.greater(file_lo, hi_s))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    keep = pc.invert(pc.fill_null(outside, False))
    return keep.combine_chunks() if isinstance(keep, pa.ChunkedArray) else keep


def _ordered(t: pa.DataType) -> bool:
    """Types whose min/max statistics are exact and whose Arrow type all files share."""
    return pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)


def _keys_filter(keys: list[str], candidates: pa.Table) -> pc.Expression | None:
    """Rows whose key columns take values of ``candidates``. The min/max bounds let the scan skip
    files and row groups by their statistics (``isin`` alone is not checked against them)."""
    flt = None
    for k in keys:
        col = candidates.column(k).combine_chunks()
        ordered = _ordered(col.type)
        term = pc.field(k).isin(pc.unique(col))
        bounds = pc.min_max(col)
        lo, hi = bounds["min"], bounds["max"]
        if ordered and lo.is_valid and hi.is_valid and col.null_count == 0:
            term = (pc.field(k) >= lo) & (pc.field(k) <= hi) & term
        flt = term if flt is None else flt & term
    return flt


def key_match(keys: Sequence[str], *, null_safe: bool = True, source_prefix: str = "") -> str:
    """A merge predicate matching target ``t`` rows to source ``s`` rows on ``keys`` (the source's
    column for key ``k`` is ``source_prefix + k``).

    ``IS NOT DISTINCT FROM`` (parenthesised: delta-rs's parser binds it loosely) stays an equi-join
    for DataFusion; the spelled-out ``(t.k = s.k OR (t.k IS NULL AND s.k IS NULL))`` does not, and
    the merge became a nested-loop join, 4-5x slower on a 30k-row flow sink and growing with it.
    """
    op = "IS NOT DISTINCT FROM" if null_safe else "="
    return " AND ".join(f"(t.{_q(k)} {op} s.{_q(source_prefix + k)})" for k in keys)


def action_path(location: str, path: str) -> str:
    """The file-system path of a data file named by an add action (relative and percent-encoded
    in the log, per the Delta protocol)."""
    return path if "://" in path or os.path.isabs(path) else os.path.join(location, unquote(path))


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def coalesce(ops: list[WriteOp]) -> list[WriteOp]:
    """Consecutive writes of one table that one Delta commit can carry, merged: appends (of the
    same uniqueness), and upserts on the same keys (the last row of a key wins)."""
    out: list[WriteOp] = []
    for op in ops:
        prev = out[-1] if out else None
        if (prev is not None and prev.table.location == op.table.location and prev.kind == op.kind
                and op.kind in ("append", "upsert") and prev.keys == op.keys and prev.unique == op.unique
                and prev.unique_sets == op.unique_sets
                and prev.skip_existing == op.skip_existing and not prev.app_id and not op.app_id
                and isinstance(prev.data, pa.Table) and isinstance(op.data, pa.Table)):
            try:
                data = pa.concat_tables([prev.data, op.data.cast(prev.data.schema)])
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                out.append(op)
                continue
            if op.kind == "upsert":
                data = dedupe_last(data, op.keys)
            out[-1] = replace(prev, data=data)
        else:
            out.append(op)
    return out


def _removed_keys(op: WriteOp) -> pa.Table | None:
    """The key tuples a write takes out of its table (a DELETE's rows, an UPDATE's old keys)."""
    if not isinstance(op.data, pa.Table) or not op.keys or op.kind not in ("update", "delete"):
        return None
    prefix = "__tg_old_" if op.kind == "update" else ""
    return op.data.select([prefix + k for k in op.keys]).rename_columns(op.keys)


def dedupe_last(data: pa.Table, keys: list[str]) -> pa.Table:
    """Keep the last row of each key (last write wins within one statement)."""
    if data.num_rows <= 1:
        return data
    idx = pa.array(range(data.num_rows), pa.int64())
    with_idx = data.select(keys).append_column("__tg_idx", idx)
    last = with_idx.group_by(keys, use_threads=False).aggregate([("__tg_idx", "max")])
    if last.num_rows == data.num_rows:
        return data
    take = pc.sort_indices(last.column("__tg_idx_max"))
    return data.take(pc.take(last.column("__tg_idx_max"), take))


def duplicate_keys(data: pa.Table, keys: list[str]) -> pa.Table:
    """Key tuples occurring more than once in ``data``."""
    counts = data.select(keys).group_by(keys, use_threads=False).aggregate([([], "count_all")])
    return counts.filter(pc.greater(counts.column("count_all"), 1)).select(keys)


def key_text(row: dict[str, Any]) -> str:
    """PostgreSQL's 'Key (a, b)=(1, x)' detail body."""
    cols = ", ".join(row.keys())
    vals = ", ".join("null" if v is None else (v.isoformat(sep=" ") if isinstance(v, datetime) else str(v))
                     for v in row.values())
    return f"Key ({cols})=({vals})"


def convert_batches(batches: Iterator[pa.RecordBatch], fields: list[ResultField],
                     operands: dict[int, tuple[int, ...]] | None = None) -> Iterator[pa.RecordBatch]:
    """Spark/storage Arrow -> the pgtypes Arrow form, with the result's column names; a column with
    exact operands (ColumnType.exact_op) becomes the struct of its value and operands."""
    names = [f.name for f in fields]
    for batch in batches:
        arrays = []
        for i, (arr, f) in enumerate(zip(batch.columns, fields)):
            if operands and i in operands:
                parts = [arr] + [batch.column(k) for k in operands[i]]
                arrays.append(pa.StructArray.from_arrays(parts, names=["q", "a", "b"][:len(parts)]))
                continue
            arr = storage_to_result(arr, f.type)
            want = f.type.arrow() if f.type.pg.name not in ("unknown", "record", "_record", "void") else None
            if (want is not None and arr.type != want and not pa.types.is_null(arr.type)
                    and not (pa.types.is_decimal(arr.type) and pa.types.is_decimal(want))):
                try:
                    if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(want):
                        arr = arr.cast(pa.timestamp("us", tz=arr.type.tz)).cast(want) if (arr.type.tz is None) == (want.tz is None) else arr
                    elif not (pa.types.is_interval(want) and pa.types.is_duration(arr.type)):
                        arr = pc.cast(arr, want)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                    pass
            arrays.append(arr)
        yield pa.RecordBatch.from_arrays(arrays, names=names)
