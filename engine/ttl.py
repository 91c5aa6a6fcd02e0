"""Time to live of a time-series table's rows: GreptimeDB's ``ttl`` table option, enforced.

A table WITH (ttl = '7d') keeps a row while its TIME INDEX is within ``ttl`` of now:

- **Visibility.** Every query reads the table through :func:`visible`, a filter on the time index
  against ``current_timestamp()``, which Spark evaluates once per query (so a cached view over a
  snapshot stays right as time passes, and the comparison folds to a literal that prunes Parquet
  row groups and files). A row is invisible from the moment it expires, cleaned up or not.
- **Clean-up.** :func:`expire` (run by engine/maintenance.py) removes expired rows from storage:
  a file whose time-index maximum (Delta log statistics) is before the horizon is removed whole,
  a file that straddles it is rewritten without its expired rows. The new files are written
  outside the table's lock; the lock is taken only for the commit, which re-checks that the files
  it replaces are still current (a writer that rewrote one meanwhile wins; the next pass retries).
- **Not a change.** The clean-up commit marks its actions ``dataChange = false`` (as compaction
  does), so the change data feed, and the flows and streaming readers that follow it, never see
  expiry as a delete: GreptimeDB's rule that a source's TTL does not delete its flows' results.
- ``'instant'``: rows are written (INSERT counts them, the change feed and streaming flows see
  them) and never visible to queries. Clean-up keeps them stored for ``instant_retention_s``
  (an hour by default), since a streaming flow re-evaluates the windows a micro-batch touched from
  the source's stored rows (engine/flows/streaming.py): a window reopened later than that counts
  only the rows still stored. ``'forever'`` is the default.

Durations are read as GreptimeDB (humantime) and PostgreSQL write them: ``'7d'``, ``'90 days'``,
``'1h 30m'``, ``'1h30m'``, ``'1month'`` / ``'1M'``, ``'2 weeks'``, ``'1 day 12:00:00'``,
``'P1DT2H'``. A month is 30.44 days and a year 365.25 days (humantime's fixed lengths, so a
ttl is one fixed duration).
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tidegate import pgvalues
from tidegate.errors import SqlError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from catalog.store import TableDef
    from engine.storage import TableStore

log = logging.getLogger(__name__)

OPTION = "ttl"
OPERATION = "TTL EXPIRE"  # the clean-up commits' operation in the Delta log (not a user's DELETE)
FOREVER = "forever"
INSTANT = "instant"
US = 1_000_000
_DAY_US = 86_400 * US
# humantime's fixed lengths (GreptimeDB parses ttl with it)
_MONTH_US = 2_630_016 * US  # 30.44 days
_YEAR_US = 31_557_600 * US  # 365.25 days
_UNIT_US = {"microsecond": 1, "millisecond": 1_000, "second": US, "minute": 60 * US, "hour": 3_600 * US,
            "day": _DAY_US, "week": 7 * _DAY_US, "month": _MONTH_US, "year": _YEAR_US,
            "decade": 10 * _YEAR_US, "century": 100 * _YEAR_US, "millennium": 1000 * _YEAR_US}
_TERM = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-zµ]+)\s*")


@dataclass(frozen=True)
class Ttl:
    """A table's ttl: ``micros`` None = forever, 0 = instant."""

    text: str
    micros: int | None

    @property
    def forever(self) -> bool:
        return self.micros is None

    @property
    def instant(self) -> bool:
        return self.micros == 0


NO_TTL = Ttl(FOREVER, None)


def _bad(value: str, why: str) -> SqlError:
    return SqlError("22023", f"invalid value for option ttl: {value!r} ({why})",
                    hint="Give a duration such as '7d', '90 days', '1h 30m' or '1month', or 'forever' or 'instant'.")


def parse(value: str) -> Ttl:
    """The ttl option's value -> :class:`Ttl`; 22023 naming the value when it is not one."""
    text = value.strip()
    word = text.lower()
    if word == FOREVER:
        return NO_TTL
    if word == INSTANT:
        return Ttl(INSTANT, 0)
    micros = duration_us(text)
    if micros is None:
        raise _bad(value, "not a duration")
    if micros <= 0:
        raise _bad(value, "a ttl must be longer than zero")
    return Ttl(text, micros)


def duration_us(text: str) -> int | None:
    pos, total, terms = 0, 0, 0
    while pos < len(text):  # humantime: number + unit terms, spaces optional ('1h30m', '7 days')
        m = _TERM.match(text, pos)
        if m is None:
            break
        raw_unit = m.group(2)
        unit = "month" if raw_unit == "M" else pgvalues.unit_name(raw_unit.replace("µ", "u"))
        if unit not in _UNIT_US:
            return None
        total += int(float(m.group(1)) * _UNIT_US[unit])
        terms += 1
        pos = m.end()
    if terms and pos == len(text):
        return total
    try:  # PostgreSQL interval input: '1 day 12:00:00', 'P1DT2H', '@ 3 hours'
        months, days, micros = pgvalues.parse_interval_fields(text)
    except SqlError:
        return None
    return months * _MONTH_US + days * _DAY_US + micros


def of(t: TableDef) -> Ttl:
    """``t``'s ttl (forever unless the option says otherwise)."""
    value = (t.options or {}).get(OPTION)
    return NO_TTL if value is None else parse(value)


def validate(options: dict[str, str], time_index: str | None, table: str) -> None:
    """Check the ttl of a CREATE TABLE / ALTER TABLE SET; the option keeps the text as written."""
    value = options.get(OPTION)
    if value is None:
        return
    ttl = parse(value)
    options[OPTION] = ttl.text
    if not ttl.forever and time_index is None:
        raise SqlError("22023", f'option ttl needs a TIME INDEX: table "{table}" has none, so its rows have no time to expire by',
                       hint="Add a TIME INDEX column to the table, or leave ttl out.")


def horizon_us(ttl: Ttl, now_us: int | None = None) -> int | None:
    """Rows whose time index is before this (epoch microseconds, UTC) have expired; None: none."""
    if ttl.forever:
        return None
    now = int(time.time() * US) if now_us is None else now_us
    return now - (ttl.micros or 0) if not ttl.instant else None


# -- reading ---------------------------------------------------------------------------------------

def visible(df: DataFrame, t: TableDef, ttl: Ttl | None = None) -> DataFrame:
    """``df`` (rows of ``t``) without its expired rows, judged against the query's own now
    (``ttl``: ``t``'s, when the caller has it already)."""
    ttl = of(t) if ttl is None else ttl
    if ttl.forever or not t.time_index:
        return df
    from pyspark.sql import functions as F

    if ttl.instant:
        return df.where(F.lit(False))
    column = t.time_index
    ctype = t.column(column).type.pg.name  # type: ignore[union-attr]
    cutoff_us = F.unix_micros(F.current_timestamp()) - F.lit(ttl.micros)
    if ctype == "timestamptz":
        bound = F.timestamp_micros(cutoff_us)
    elif ctype == "timestamp":  # naive UTC wall time, whatever the Spark session's zone
        bound = F.timestamp_add("MICROSECOND", cutoff_us, F.lit("1970-01-01 00:00:00").cast("timestamp_ntz"))
    else:  # date
        bound = F.date_from_unix_date(F.floor(cutoff_us / F.lit(_DAY_US)).cast("int"))
    return df.where(F.col(f"`{column.replace('`', '``')}`") >= bound)


# -- clean-up --------------------------------------------------------------------------------------

@dataclass
class Expired:
    files_removed: int = 0
    files_rewritten: int = 0
    rows_removed: int = 0


def _stat_us(text: str | None) -> int | None:
    """A timestamp/date statistic of the log ('2024-01-01 00:00:00.000' or '...Z' or a date) -> µs."""
    if text is None:
        return None
    s = str(text).replace("T", " ").rstrip("Z")
    try:
        d = datetime.fromisoformat(s)
    except ValueError:
        return None
    d = d.replace(tzinfo=timezone.utc) if d.tzinfo is None else d
    return int(d.timestamp()) * US + d.microsecond


def _modified_us(value: object) -> int | None:
    """An add action's modification time (a datetime, or epoch milliseconds) -> epoch µs."""
    if value is None:
        return None
    if isinstance(value, datetime):
        d = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return int(d.timestamp() * US)
    return int(value) * 1000


def _column_us(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_date(column.type):
        return pc.multiply(column.cast(pa.int32()).cast(pa.int64()), _DAY_US)
    return column.cast(pa.timestamp("us", tz=column.type.tz) if pa.types.is_timestamp(column.type) else column.type) \
        .cast(pa.int64())


def expire(store: TableStore, t: TableDef, now_us: int | None = None, *, rewrite: bool = True,
           instant_retention_us: int = 0) -> Expired:
    """Remove ``t``'s expired rows from storage (see the module doc); a no-op without a ttl.
    ``rewrite=False`` only drops wholly expired files (a log-only commit); an 'instant' table's
    files go once written ``instant_retention_us`` ago."""
    from engine import deltalog
    from engine.storage import FileEntry, action_path

    ttl = of(t)
    result = Expired()
    if ttl.forever or not t.time_index or not t.location:
        return result
    location = t.location
    column = t.time_index
    now = int(time.time() * US) if now_us is None else now_us
    horizon = horizon_us(ttl, now)
    actions = store.file_actions(location)
    if actions.num_rows == 0:
        return result
    written = [_modified_us(v) for v in actions.column("modification_time").to_pylist()]
    stat = f"max.{column}"
    maxes = actions.column(stat).to_pylist() if stat in actions.column_names else [None] * actions.num_rows
    mins_name = f"min.{column}"
    mins = actions.column(mins_name).to_pylist() if mins_name in actions.column_names else [None] * actions.num_rows
    paths = actions.column("path").to_pylist()
    sizes = actions.column("size_bytes").to_pylist()
    removes: list[FileEntry] = []
    adds: list[deltalog.DataFile] = []
    for path, size, lo, hi, at in zip(paths, sizes, mins, maxes, written):
        if ttl.instant:
            if at is None or at <= now - instant_retention_us:
                removes.append(FileEntry(path, int(size), 0))
            continue
        assert horizon is not None
        hi_us, lo_us = _stat_us(hi), _stat_us(lo)
        if hi_us is not None and hi_us < horizon:  # every row expired (stats are whole ms, rounded up)
            removes.append(FileEntry(path, int(size), 0))
            continue
        if (lo_us is not None and lo_us >= horizon) or not rewrite:
            continue  # nothing expired, or rewrites wait for their turn
        # straddles the horizon (or has no statistics): rewrite without the expired rows
        data = pq.read_table(action_path(location, path))
        times = _column_us(data.column(column))
        keep = pc.fill_null(pc.greater_equal(times, pa.scalar(horizon, pa.int64())), True)
        kept = data.filter(keep)
        gone = data.num_rows - kept.num_rows
        if gone == 0:
            continue
        removes.append(FileEntry(path, int(size), data.num_rows))
        result.rows_removed += gone
        if kept.num_rows:
            adds.append(deltalog.add_data_file(location, kept))
            result.files_rewritten += 1
    if not removes:
        return result
    wanted = {r.path for r in removes}
    with store.writing(location) as dt:
        current = set(pa.table(dt.get_add_actions(flatten=True)).column("path").to_pylist())
        if not wanted <= current or not deltalog.supports(dt):
            log.info("ttl clean-up of %s skipped: files changed under it (next pass retries)", t.qualified_name)
            return Expired()
        deltalog.commit(dt, location, adds=adds, removes=removes, operation=OPERATION, data_change=False,
                        parameters={"predicate": json.dumps(f"{column} expired (ttl {ttl.text})")},
                        metrics={"numRemovedFiles": len(removes), "numAddedFiles": len(adds)})
    result.files_removed = len(removes) - result.files_rewritten
    log.info("ttl clean-up of %s: %d files removed, %d rewritten", t.qualified_name,
             result.files_removed, result.files_rewritten)
    return result
