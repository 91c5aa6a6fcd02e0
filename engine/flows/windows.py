"""Time windows: which windows a set of changed timestamps dirties, and their range predicates.

Times are handled as int64 microseconds since the Unix epoch (UTC), the storage form of
timestamp/timestamptz (date values are scaled from days). A window is the half-open range
``[start, end)`` of source times that fold into one value of the flow's time-window expression:

* ``date_bin(stride, col, origin)``: ``start = t - ((t - origin) mod stride)``, width ``stride``;
* ``date_trunc(unit, col)``: calendar truncation (UTC), ``end`` = the next unit boundary;
* the raw column: the point ``[t, t + 1 µs)``.

Re-evaluating the flow over source rows whose time lies in a union of whole windows yields
exactly those windows' output rows, so ranges may be merged (and gaps between them absorbed) as
long as every range starts and ends on window boundaries, which merging preserves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc

US = 1_000_000
DAY_US = 86_400 * US
_FIXED_UNITS = {"microsecond": 1, "millisecond": 1000, "second": US, "minute": 60 * US, "hour": 3600 * US,
                "day": DAY_US, "week": 7 * DAY_US}
CALENDAR_UNITS = ("month", "quarter", "year", "decade", "century", "millennium")
# Monday 1969-12-29: PostgreSQL's weeks start on Monday.
_WEEK_ORIGIN = -3 * DAY_US
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# A run's source filter stays readable: beyond this many ranges the closest ones are merged.
MAX_RANGES = 64


@dataclass(frozen=True)
class WindowFn:
    """The time-window expression of a flow's GROUP BY (or the raw time column)."""

    kind: str  # "date_bin" | "date_trunc" | "raw"
    stride_us: int = 0  # date_bin
    origin_us: int = 0  # date_bin
    unit: str = ""  # date_trunc

    def describe(self) -> str:
        if self.kind == "date_bin":
            return f"date_bin windows of {self.stride_us // US if self.stride_us % US == 0 else self.stride_us / US} s"
        if self.kind == "date_trunc":
            return f"date_trunc('{self.unit}') windows"
        return "time index points"

    def starts(self, times_us: pa.Array) -> list[int]:
        """The distinct window starts of ``times_us`` (int64 micros, nulls ignored), sorted."""
        arr = pc.drop_null(times_us)
        if len(arr) == 0:
            return []
        if self.kind == "raw":
            return sorted(pc.unique(arr).to_pylist())
        if self.kind == "date_bin":
            shifted = pc.subtract(arr, self.origin_us)
            stride = self.stride_us
            # floor division that is exact for negatives: t - ((t - o) mod s)
            q = pc.divide(shifted, stride)  # truncates toward zero
            q = pc.if_else(pc.less(pc.multiply(q, stride), shifted), q, pc.if_else(
                pc.equal(pc.multiply(q, stride), shifted), q, pc.subtract(q, 1)))
            starts = pc.add(pc.multiply(q, stride), self.origin_us)
            return sorted(pc.unique(starts).to_pylist())
        if self.unit in _FIXED_UNITS:
            width = _FIXED_UNITS[self.unit]
            origin = _WEEK_ORIGIN if self.unit == "week" else 0
            return WindowFn("date_bin", width, origin).starts(arr)
        days = WindowFn("date_bin", DAY_US, 0).starts(arr)
        return sorted({calendar_start(d, self.unit) for d in days})

    def end(self, start: int) -> int:
        if self.kind == "raw":
            return start + 1
        if self.kind == "date_bin":
            return start + self.stride_us
        if self.unit in _FIXED_UNITS:
            return start + _FIXED_UNITS[self.unit]
        return calendar_next(start, self.unit)

    def start_of(self, t_us: int) -> int:
        return self.starts(pa.array([t_us], pa.int64()))[0]


def _to_dt(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def _from_dt(d: datetime) -> int:
    delta = d - EPOCH
    return (delta.days * 86400 + delta.seconds) * US + delta.microseconds


def calendar_start(us: int, unit: str) -> int:
    d = _to_dt(us)
    if unit == "month":
        s = d.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "quarter":
        s = d.replace(month=(d.month - 1) // 3 * 3 + 1, day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "year":
        s = d.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "decade":
        s = d.replace(year=d.year // 10 * 10, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    elif unit == "century":
        s = d.replace(year=(d.year - 1) // 100 * 100 + 1, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    else:  # millennium
        s = d.replace(year=(d.year - 1) // 1000 * 1000 + 1, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    return _from_dt(s)


def calendar_next(start: int, unit: str) -> int:
    d = _to_dt(start)
    months = {"month": 1, "quarter": 3, "year": 12, "decade": 120, "century": 1200, "millennium": 12000}[unit]
    total = d.year * 12 + (d.month - 1) + months
    return _from_dt(d.replace(year=total // 12, month=total % 12 + 1))


def times_to_micros(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A timestamp / date column -> int64 microseconds since the epoch (UTC)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    t = arr.type
    if pa.types.is_timestamp(t):
        return pc.cast(pc.cast(arr, pa.timestamp("us", tz=t.tz)), pa.int64())
    if pa.types.is_date32(t):
        return pc.multiply(pc.cast(pc.cast(arr, pa.int32()), pa.int64()), DAY_US)
    if pa.types.is_date64(t):
        return pc.multiply(arr.view(pa.int64()), 1000)
    raise TypeError(f"not a time column: {t}")


Range = tuple[int, int | None]  # [lo, hi); hi None: unbounded


def merge_ranges(fn: WindowFn, starts: list[int], limit: int = MAX_RANGES) -> list[Range]:
    """Window starts -> sorted disjoint ranges of whole windows, at most ``limit`` of them."""
    ranges: list[list[int]] = []
    for s in sorted(starts):
        e = fn.end(s)
        if ranges and s <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], e)
        else:
            ranges.append([s, e])
    while len(ranges) > limit:
        gaps = sorted(range(len(ranges) - 1), key=lambda i: ranges[i + 1][0] - ranges[i][1])
        i = gaps[0]
        ranges[i][1] = ranges[i + 1][1]
        del ranges[i + 1]
    return [(a, b) for a, b in ranges]


def micros_text(us: int) -> str:
    """ISO text of a micros-since-epoch instant (UTC, no offset)."""
    return _to_dt(us).strftime("%Y-%m-%d %H:%M:%S.%f")


def micros_to_date(us: int, ceil: bool) -> date:
    days, rem = divmod(us, DAY_US)
    if ceil and rem:
        days += 1
    return date(1970, 1, 1) + timedelta(days=days)


def spark_time_literal(us: int, pg_type: str, ceil: bool = False) -> str:
    """The Spark SQL literal of the instant ``us`` (microseconds since the epoch, UTC) as a value of
    the PostgreSQL type ``pg_type`` in storage form (a date: the day holding it, or the next with
    ``ceil`` when it is not midnight)."""
    if pg_type == "date":
        return f"DATE'{micros_to_date(us, ceil).isoformat()}'"
    if pg_type == "timestamptz":
        return f"TIMESTAMP'{micros_text(us)}+00:00'"
    return f"TIMESTAMP_NTZ'{micros_text(us)}'"


def spark_predicate(column: str, pg_type: str, ranges: list[Range], qualifier: str | None = None) -> str:
    """A Spark SQL predicate selecting ``column`` (of ``qualifier``'s relation, when given) values
    inside ``ranges``."""
    col = "`" + column.replace("`", "``") + "`"
    if qualifier is not None:
        col = "`" + qualifier.replace("`", "``") + "`." + col

    def lit(us: int, ceil: bool = False) -> str:
        return spark_time_literal(us, pg_type, ceil)

    terms = []
    for lo, hi in ranges:
        lo_term = f"{col} >= {lit(lo, True)}"
        terms.append(lo_term if hi is None else f"({lo_term} AND {col} < {lit(hi, True)})")
    return " OR ".join(terms) if terms else "FALSE"


def delta_predicate(column: str, pg_type: str, ranges: list[Range], alias: str = "t") -> str:
    """The same selection as a DataFusion predicate on the sink (for delta-rs merge/delete)."""
    col = f'{alias}."{column}"' if alias else f'"{column}"'

    def lit(us: int, ceil: bool = False) -> str:
        if pg_type == "date":
            return f"CAST('{micros_to_date(us, ceil).isoformat()}' AS DATE)"
        if pg_type == "timestamptz":
            return f"arrow_cast('{micros_text(us).replace(' ', 'T')}Z', 'Timestamp(Microsecond, Some(\"UTC\"))')"
        return f"arrow_cast('{micros_text(us).replace(' ', 'T')}', 'Timestamp(Microsecond, None)')"

    terms = []
    for lo, hi in ranges:
        lo_term = f"{col} >= {lit(lo, True)}"
        terms.append(lo_term if hi is None else f"({lo_term} AND {col} < {lit(hi, True)})")
    return " OR ".join(terms) if terms else "FALSE"
