"""Refreshable tables: ``REFRESH TABLE`` reloads a table from its source, atomically and resumably.

A table created ``WITH (connector = 'file' | 'postgres', refresh_mode = 'FULL_RELOAD', ...)`` mirrors
an external source. A refresh runs in three durable steps (state in :mod:`catalog.refresh`):

1. **load** -- Spark reads the source's current snapshot chunk by chunk (a group of files of a
   folder, or one key range of a PostgreSQL table read through Spark's JDBC source); every chunk
   is checked against the table's schema, kept in memory, written to
   ``<data-dir>/refresh/<table oid>/<refresh id>/`` as Parquet and recorded. A crash here resumes
   after the last recorded chunk when the source is unchanged (same files, sizes and mtimes), and
   restarts cleanly otherwise (a PostgreSQL source has no snapshot to resume against: it always
   restarts).
2. **diff** -- the snapshot is compared with the table's current rows (read meanwhile, each with
   the data file holding it): one full outer join on the primary key, null-safe comparison of every
   other column: new keys, changed rows with their pre-images, vanished keys.
3. **commit** -- ONE Delta commit (:mod:`engine.deltalog`) rewrites the files holding changed rows,
   or adopts the staged chunks as the table's files when nearly every file changes, with a change
   data feed of exactly the diff, recording the Delta app transaction ``tidegate-refresh-<oid>`` =
   refresh id. Readers see the old table until that commit; the change data feed (and every flow
   reading it) holds only the diff. A crash after the load redoes diff + commit unless the app
   transaction shows the commit landed, so the commit happens exactly once.

Large sources load on Spark instead (the table option ``spark_writes``; ``auto`` above
:data:`SPARK_RELOAD_BYTES` of files or :data:`SPARK_RELOAD_ROWS` source rows): the executors stage
the snapshot as Parquet and check it, and one Delta MERGE of the difference (an append into an
empty table) is the commit, with the same app transaction; no row passes through the gateway.

A failure (unreachable source, unreadable file, rows that break the schema, duplicate keys) leaves
the table unchanged; the status goes back to IDLE with ``last_error`` naming the file and line or
the source query. ``WITH (on_source_error = 'ignore')`` tolerates bad rows (skipped) and duplicate
keys (the last row of a key wins); the counts are reported in a NOTICE and in ``last_error``.

The file connector reads only under the setting ``file_connector_roots`` and never the server's
own files (:class:`FileAccess`), checked at CREATE TABLE and again at every refresh; only
superusers create connector tables (:func:`check_create_connector`).

Fault injection for crash tests: ``TIDEGATE_REFRESH_TEST_PAUSE="chunk:2,commit:5,committed:5"``
sleeps that many seconds after each chunk is read, before the commit and after it.
"""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import io
import json
import logging
import math
import os
import re
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import duckdb
from deltalake import DeltaTable
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sqlglot import exp

from catalog import refresh as rmeta
from catalog.store import DATABASE_NAME, TableDef
from engine import deltalog, durability, events, sparkwrite
from engine.ddl import check_match_pattern
from engine.errors import map_spark_error
from engine.storage import WRITER_PROPERTIES, CurrentRows
from tidegate.errors import SqlError
from tidegate.pgtypes import INT8, TEXT, TIMESTAMPTZ, ColumnType
from tidegate.results import CommandResult, ResultField, RowStream
from tidegate.session import SessionInfo
from tidegate import dialect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from engine.executor import Engine
    from tidegate.config import Settings

log = logging.getLogger(__name__)

PG_JDBC_JAR = "/usr/share/java/postgresql.jar"
DEFAULT_CHUNK_ROWS = 200_000
# Files are loaded in groups of about this many bytes, one Spark job per group: one job over four
# 8 MB files (two tasks of two files each) hands its rows over in 0.59 s, four one-file jobs two at
# a time in 0.78 s. A group is also the unit a resumed load skips.
DEFAULT_CHUNK_BYTES = 64 * 1024 * 1024
_EXAMPLES = 3
LOADERS = 2  # chunks staged at once
FILE_ROWS = 1_000_000  # rows per data file a refresh commit writes
_CORRUPT = "_tg_corrupt_record"
# A refresh loads on Spark (``spark_writes = 'auto'``) when its files exceed this many bytes or its
# PostgreSQL table this many rows: below, the collected path's in-memory diff and own commit are
# faster; above, its memory grows with the source, Spark's does not.
SPARK_RELOAD_BYTES = 64 * 1024 * 1024
SPARK_RELOAD_ROWS = 1_000_000
# Where a row came from (Spark packs a chunk's files into tasks by size, not by name): read when
# the last row of a duplicated key must win, which needs the rows in file and line order.
_PATH, _BLOCK = "_tg_file_path", "_tg_block_start"

Notify = Callable[[str], None]


# -- where the file connector may read -----------------------------------------------------------------

ROOTS_SETTING = "file_connector_roots (TIDEGATE_FILE_CONNECTOR_ROOTS)"
# Hadoop expands these in the paths handed to Spark: a file named '{..,x}' would read the parent.
_GLOB_CHARS = set("*?[]{}\\")


def check_create_connector(options: dict[str, str], superuser: bool, settings: Settings) -> None:
    """CREATE TABLE with a connector (options already validated by :func:`validate_options`): only
    superusers may create one, and a file connector's path must be one the server may read."""
    connector = options.get("connector")
    if connector is None:
        return
    if not superuser:
        raise SqlError("42501", f"must be superuser to create a table with connector '{connector}'")
    if connector == "file":
        FileAccess.from_settings(settings).resolve(options["path"])


def _within(path: str, folder: str) -> bool:
    """Whether the resolved ``path`` is the resolved ``folder`` or lies under it (by components)."""
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # one relative, or different drives
        return False


@dataclass(frozen=True)
class FileAccess:
    """Where refreshable tables with ``connector = 'file'`` may read: under the resolved
    ``file_connector_roots`` (none: nowhere), never the server's own files. Paths are resolved with
    symlinks and '..' before the comparison, so a link inside a root to a file outside is refused;
    a hard link to one of the server's own files is recognised by its inode."""

    roots: tuple[str, ...]
    forbidden: tuple[str, ...]  # resolved; never readable, nor anything under them
    forbidden_inodes: frozenset[tuple[int, int]] = frozenset()  # (st_dev, st_ino) of the server's files

    @classmethod
    def from_settings(cls, settings: Settings) -> FileAccess:
        roots = tuple(os.path.realpath(os.path.expanduser(r)) for r in settings.file_connector_roots)
        # The data dir (catalog, tables, staged chunks), the config file and TLS files (users'
        # passwords, the private key), and /proc (the process environment: TIDEGATE_USERS).
        files = [settings.config_file, settings.tls_cert, settings.tls_key, settings.catalog_path]
        own = [settings.data_dir, *files, "/proc"]
        inodes = set()
        for f in files:
            try:
                st = os.stat(f) if f else None
            except OSError:
                continue
            if st is not None:
                inodes.add((st.st_dev, st.st_ino))
        return cls(roots, tuple(os.path.realpath(p) for p in own if p), frozenset(inodes))

    def resolve(self, path: str, what: str = "path") -> str:
        """``path`` with symlinks and '..' resolved, if the file connector may read it; 42501 otherwise."""
        if not self.roots:
            raise SqlError("42501", f"permission denied for {what} '{path}': the file connector is disabled; list "
                                    f"the directories it may read in the setting {ROOTS_SETTING}")
        real = os.path.realpath(path)
        shown = f"'{path}'" + (f" (resolves to '{real}')" if real != os.path.abspath(path) else "")
        if any(_within(real, f) for f in self.forbidden) or self._inode(real) in self.forbidden_inodes:
            raise SqlError("42501", f"permission denied for {what} {shown}: the server's own files (its data "
                                    "directory, config file, TLS key and certificate) and /proc are never "
                                    f"readable by the file connector, whatever the setting {ROOTS_SETTING} allows")
        if not any(_within(real, r) for r in self.roots):
            raise SqlError("42501", f"permission denied for {what} {shown}: it is outside the directories the "
                                    f"file connector may read; add a directory holding it to the setting "
                                    f"{ROOTS_SETTING}")
        if _GLOB_CHARS & set(real):
            raise SqlError("42501", f"permission denied for {what} {shown}: Spark would read its name as a "
                                    f"pattern (it holds one of {''.join(sorted(_GLOB_CHARS))}); rename it or "
                                    "exclude it with match_pattern")
        return real

    @staticmethod
    def _inode(path: str) -> tuple[int, int] | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_dev, st.st_ino


# -- sources -----------------------------------------------------------------------------------------

class SourceError(Exception):
    """A refresh failure with its SQLSTATE; the message names the file/line or the source query."""

    def __init__(self, sqlstate: str, message: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message


@dataclass
class ChunkSpec:
    """One unit of loading: a group of files, or a key range of a PostgreSQL table."""

    label: str  # for messages: the file path(s) or the source query
    files: tuple[str, ...] = ()
    query: str | None = None


def _read_type(t: ColumnType) -> str:
    """The Spark type a source column is read as (text for types whose storage form Spark lacks)."""
    from engine.spark import spark_type_sql

    if t.is_array or t.pg.name in ("time", "interval", "uuid", "json", "jsonb", "bytea"):
        return "string"
    return spark_type_sql(t)


def _schema_ddl(cols: list[tuple[str, str]]) -> str:
    return ", ".join(f"`{n.replace('`', '``')}` {ty}" for n, ty in cols)


def _locate(paths: Sequence[str], record: str) -> str:
    """Where a malformed ``record`` starts: 'file F line N' (found by its text), or the files."""
    first = record.splitlines()[0] if record else record
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    if line.rstrip("\r\n") == first:
                        return f"{path} line {n}"
        except OSError:
            continue
    return ", ".join(paths)


class Source:
    """The source of one refreshable table: how to list its chunks and read one with Spark."""

    def __init__(self, table: TableDef, access: FileAccess) -> None:
        self.table = table
        self.access = access
        self.options = table.options
        self.connector = self.options.get("connector", "")
        self.tolerant = self.options.get("on_source_error", "fail").lower() == "ignore"
        self.chunk_rows = int(self.options.get("chunk_rows", DEFAULT_CHUNK_ROWS))
        self.chunk_bytes = int(self.options.get("chunk_bytes", DEFAULT_CHUNK_BYTES))

    # -- files ---------------------------------------------------------------------------------

    def _files(self) -> list[str]:
        """The source's files, resolved; checked at every refresh (links and folders change):
        the path and every matched file must be readable (:class:`FileAccess`), else 42501."""
        path = self.options["path"]
        pattern = self.options.get("match_pattern", "*")
        check_match_pattern(pattern)
        real = self.access.resolve(path)
        if os.path.isfile(real):
            return [real]
        if not os.path.isdir(real):
            raise SourceError("58P01", f"source path '{path}' does not exist")
        names = sorted(n for n in os.listdir(real) if fnmatch.fnmatch(n, pattern))
        return [self.access.resolve(os.path.join(real, n), "file") for n in names
                if os.path.isfile(os.path.join(real, n))]

    def fingerprint(self) -> str | None:
        """What identifies the source's snapshot for resuming (None: never resumable)."""
        if self.connector != "file":
            return None
        parts = []
        for f in self._files():
            st = os.stat(f)
            parts.append([f, st.st_size, st.st_mtime_ns])
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def chunks(self, spark: SparkSession) -> list[ChunkSpec]:
        if self.connector == "file":
            return self._file_chunks()
        return self._pg_chunks(spark)

    def _file_chunks(self) -> list[ChunkSpec]:
        """Consecutive files in groups of about ``chunk_bytes``; CSV files with a header only
        share a group when their headers are equal (the header decides the column order)."""
        groups: list[list[str]] = []
        size = 0
        header: str | None = None
        for f in self._files():
            fsize = os.path.getsize(f)
            fheader = self._header_line(f) if self._csv_header() else None
            if not groups or size + fsize > self.chunk_bytes or fheader != header:
                groups.append([])
                size = 0
            groups[-1].append(f)
            size += fsize
            header = fheader
        return [ChunkSpec(g[0] if len(g) == 1 else f"{g[0]} (+{len(g) - 1} more files)", files=tuple(g))
                for g in groups]

    def _csv_header(self) -> bool:
        return (self.options.get("encode", "CSV").upper() == "CSV"
                and self.options.get("encode.without_header", "false").lower() not in ("true", "1", "yes", "on"))

    @staticmethod
    def _header_line(path: str) -> str:
        try:
            with open(path, encoding="utf-8", newline="") as fh:
                return fh.readline().rstrip("\r\n")
        except OSError as exc:
            raise SourceError("58030", f"could not read file {path}: {exc.strerror}") from None

    def read(self, spark: SparkSession, chunk: ChunkSpec) -> tuple[pa.Table, list[str], int]:
        """Rows of ``chunk`` in the table's storage form, with messages about bad rows and their count."""
        from engine.storage import coerce_array, storage_schema

        cols = self.table.columns
        if self.connector == "file":
            df, has_corrupt = self._file_frame(spark, chunk.files, ordered=self.tolerant)
            where = f"file {chunk.label}"
        else:
            df, has_corrupt = self._jdbc_frame(spark, chunk.query or ""), False
            where = f"source query: {chunk.query}"
        try:
            raw = df.toArrow()
        except SourceError:
            raise
        except Exception as exc:  # noqa: BLE001 - every Spark/JDBC failure names the source
            raise SourceError("58030" if self.connector == "file" else "08001",
                              f"could not read {where}: {_first_line(exc)}") from None
        bad: list[str] = []
        nbad = 0
        if has_corrupt:
            corrupt = raw.column(_CORRUPT)
            mask = pc.is_valid(corrupt)
            nbad = pc.sum(mask).as_py() or 0
            if nbad:
                for rec in pc.filter(corrupt, mask).to_pylist()[:_EXAMPLES]:
                    bad.append(f"{_locate(chunk.files, rec)}: {rec.strip()[:200]!r} does not fit the table's columns")
                raw = raw.filter(pc.invert(mask))
            raw = raw.drop_columns([_CORRUPT])
        if _PATH in raw.column_names:
            raw = _in_file_order(raw, chunk.files)
        # Rows with a NULL key cannot be keyed, nor may a NOT NULL column hold one: schema-breaking.
        keys = set(self.table.primary_key)
        for c in cols:
            if c.name not in keys and not c.not_null:
                continue
            nulls = pc.is_null(raw.column(c.name))
            n = pc.sum(nulls).as_py() or 0
            if n:
                nbad += n
                what = "key column" if c.name in keys else "NOT NULL column"
                bad.append(f"{where}: {n} row{'s' if n > 1 else ''} with NULL in {what} {c.name}")
                raw = raw.filter(pc.invert(nulls))
        arrays = []
        for c in cols:
            try:
                arrays.append(coerce_array(raw.column(c.name), c.type, c.name))
            except SqlError as exc:
                raise SourceError(exc.sqlstate, f"{where}: column {c.name}: {exc.message}") from None
        return pa.Table.from_arrays(arrays, schema=storage_schema(cols)), bad, nbad

    def _file_frame(self, spark: SparkSession, paths: Sequence[str], ordered: bool = False) -> tuple[DataFrame, bool]:
        """The rows of ``paths`` as the table's columns (plus _CORRUPT for text formats; plus
        _ORDER_COLUMNS when ``ordered``: where each row came from, for file order)."""
        origin = [f"_metadata.file_path AS {_PATH}", f"_metadata.file_block_start AS {_BLOCK}"] if ordered else []
        enc = self.options.get("encode", "CSV").upper()
        cols = self.table.columns
        for path in paths:
            if not os.path.exists(path):
                raise SourceError("58P01", f"could not read file {path}: it no longer exists")
        if enc == "PARQUET":
            # Spark takes one file's schema for all (no mergeSchema): a file lacking a column would
            # read as NULLs. Every footer is checked first.
            for path in paths:
                try:
                    present = pq.read_schema(path).names
                except Exception as exc:  # noqa: BLE001
                    raise SourceError("58030", f"could not read file {path}: {_first_line(exc)}") from None
                missing = [c.name for c in cols if c.name not in present]
                if missing:
                    raise SourceError("42703", f"file {path}: column {missing[0]} is missing (file columns: {', '.join(present)})")
            try:
                df = spark.read.parquet(*paths)
            except Exception as exc:  # noqa: BLE001
                raise SourceError("58030", f"could not read file {paths[0]}: {_first_line(exc)}") from None
            exprs = [f"CAST(`{c.name}` AS {_read_type(c.type)}) AS `{c.name}`" for c in cols]
            return df.selectExpr(*exprs, *origin), False
        reader = spark.read.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", _CORRUPT)
        if enc == "JSON":
            fields = [(c.name, _read_type(c.type)) for c in cols] + [(_CORRUPT, "string")]
            return reader.schema(_schema_ddl(fields)).json(list(paths)).selectExpr("*", *origin), True
        delimiter = self.options.get("encode.delimiter", ",")
        header = self._csv_header()
        types = {c.name: _read_type(c.type) for c in cols}
        if header:
            # Files of one chunk share their header line (see _file_chunks).
            line = self._header_line(paths[0])
            first = next(csv.reader(io.StringIO(line), delimiter=delimiter), [])
            names = [h.strip() for h in first]
            missing = [c.name for c in cols if c.name not in names]
            if missing and first:
                raise SourceError("42703", f"file {paths[0]} line 1: header has no column {missing[0]} "
                                            f"(header: {delimiter.join(names)})")
            fields = [(h, types.get(h, "string")) for h in names]
        else:
            fields = [(c.name, types[c.name]) for c in cols]
        df = (reader.schema(_schema_ddl(fields + [(_CORRUPT, "string")]))
              .option("header", str(header).lower()).option("sep", delimiter)
              .option("enforceSchema", "true").csv(list(paths)))
        return df.selectExpr(*[f"`{c.name}`" for c in cols], _CORRUPT, *origin), True

    def frame(self, spark: SparkSession, chunks: Sequence[ChunkSpec]) -> tuple[DataFrame, bool]:
        """The whole snapshot as one frame for a load on Spark: the table's columns as read, then
        _CORRUPT for text formats (whether it is there: the bool), then _PATH: the file (a URI) or
        the source query each row came from, which bad-row messages name."""
        from pyspark.sql import functions as F  # noqa: N812

        frames = []
        has_corrupt = False
        for spec in chunks:
            if self.connector == "file":
                df, has_corrupt = self._file_frame(spark, spec.files, ordered=True)
                df = df.drop(_BLOCK)
            else:
                try:
                    df = self._jdbc_frame(spark, spec.query or "").withColumn(_PATH, F.lit(spec.query))
                except Exception as exc:  # noqa: BLE001 - the database refused or is unreachable
                    raise SourceError("08001", f"could not read source query: {spec.query}: {_first_line(exc)}") from None
            frames.append(df)
        out = frames[0]
        for df in frames[1:]:
            out = out.unionAll(df)
        return out, has_corrupt

    def large(self, spark: SparkSession) -> bool:
        """Whether the source is large enough to load on Spark under ``spark_writes = 'auto'``:
        its files exceed :data:`SPARK_RELOAD_BYTES`, or its PostgreSQL table counts
        :data:`SPARK_RELOAD_ROWS` rows (one query)."""
        if self.connector == "file":
            return sum(os.path.getsize(f) for f in self._files()) > SPARK_RELOAD_BYTES
        probe = f"SELECT count(*) AS n FROM {self._source_name()}"
        try:
            return int(self._jdbc_frame(spark, probe).collect()[0]["n"] or 0) >= SPARK_RELOAD_ROWS
        except Exception as exc:  # noqa: BLE001
            raise SourceError("08001", f"could not read source query: {probe}: {_first_line(exc)}") from None

    # -- PostgreSQL ------------------------------------------------------------------------------

    def _jdbc(self) -> tuple[str, dict[str, str]]:
        url = self.options["url"]
        props = {"driver": "org.postgresql.Driver"}
        if url.startswith("jdbc:"):
            jdbc = url
        else:
            u = urlparse(url)
            if u.scheme not in ("postgresql", "postgres"):
                raise SourceError("22023", f"invalid url '{url}': expected postgresql://user:password@host:port/database")
            jdbc = f"jdbc:postgresql://{u.hostname or 'localhost'}:{u.port or 5432}{u.path or '/postgres'}"
            if u.query:
                jdbc += "?" + u.query
            if u.username:
                props["user"] = unquote(u.username)
            if u.password:
                props["password"] = unquote(u.password)
        for opt, prop in (("username", "user"), ("user", "user"), ("password", "password")):
            if self.options.get(opt):
                props[prop] = self.options[opt]
        return jdbc, props

    def _source_name(self) -> str:
        parts = self.options["source_table"].split(".")
        return ".".join('"' + p.strip().strip('"').replace('"', '""') + '"' for p in parts)

    def _select(self, where: str = "") -> str:
        cols = ", ".join('"' + c.name.replace('"', '""') + '"' for c in self.table.columns)
        return f"SELECT {cols} FROM {self._source_name()}{where}"

    def _jdbc_frame(self, spark: SparkSession, query: str) -> DataFrame:
        jdbc, props = self._jdbc()
        reader = spark.read.format("jdbc").option("url", jdbc).option("query", query).option("fetchsize", "10000")
        for k, v in props.items():
            reader = reader.option(k, v)
        return reader.load()

    def _pg_chunks(self, spark: SparkSession) -> list[ChunkSpec]:
        """Key ranges of about ``chunk_rows`` rows when the key is one integer column; else one chunk."""
        keys = self.table.primary_key
        key_col = self.table.column(keys[0]) if len(keys) == 1 else None
        if key_col is None or key_col.type.pg.name not in ("int2", "int4", "int8"):
            q = self._select()
            return [ChunkSpec(q, query=q)]
        k = '"' + key_col.name.replace('"', '""') + '"'
        probe = f"SELECT count(*) AS n, min({k}) AS lo, max({k}) AS hi FROM {self._source_name()}"
        try:
            row = self._jdbc_frame(spark, probe).collect()[0]
        except Exception as exc:  # noqa: BLE001
            raise SourceError("08001", f"could not read source query: {probe}: {_first_line(exc)}") from None
        n, lo, hi = int(row["n"] or 0), row["lo"], row["hi"]
        if n <= self.chunk_rows or lo is None:
            q = self._select()
            return [ChunkSpec(q, query=q)]
        parts = math.ceil(n / self.chunk_rows)
        step = max(1, math.ceil((int(hi) - int(lo) + 1) / parts))
        out = []
        for i in range(parts):
            a = int(lo) + i * step
            cond = f" WHERE {k} >= {a}" + (f" AND {k} < {a + step}" if i < parts - 1 else "")
            q = self._select(cond)
            out.append(ChunkSpec(q, query=q))
        return out


def _in_file_order(raw: pa.Table, files: Sequence[str]) -> pa.Table:
    """``raw`` sorted by (file in ``files`` order, split of the file, row), without the origin columns."""
    rank = {os.path.abspath(f): i for i, f in enumerate(files)}
    paths = pc.unique(raw.column(_PATH))
    ranks = pa.array([rank.get(os.path.abspath(unquote(urlparse(p).path)), len(files)) for p in paths.to_pylist()],
                     pa.int32())
    keyed = pa.table({"file": pc.take(ranks, pc.index_in(raw.column(_PATH), paths)),
                      "block": raw.column(_BLOCK), "row": pa.array(range(raw.num_rows), pa.int64())})
    positions = pc.sort_indices(keyed, sort_keys=[("file", "ascending"), ("block", "ascending"), ("row", "ascending")])
    return raw.drop_columns([_PATH, _BLOCK]).take(positions)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("JVM stacktrace", "at ", "Traceback")):
            m = re.search(r"(?:Exception|Error): (.*)$", line)
            return (m.group(1) if m else line)[:300]
    return type(exc).__name__


# -- the diff ---------------------------------------------------------------------------------------

def _differs(a: pa.ChunkedArray, b: pa.ChunkedArray) -> pa.Array:
    """Row-wise null-safe 'is distinct from' of two columns of equal type."""
    try:
        ne = pc.fill_null(pc.not_equal(a, b), False)
        return pc.or_(ne, pc.xor(pc.is_null(a), pc.is_null(b)))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return pa.array([x != y for x, y in zip(a.to_pylist(), b.to_pylist())], pa.bool_())


# In the current rows handed to compute_diff: the index of the data file that holds the row.
FILE_COLUMN = "__tg_file"
_OP = "__tg_op"


@dataclass
class Diff:
    """What turns the table's current rows into the new snapshot."""

    inserted: pa.Table  # new rows whose key the table lacks
    updated: pa.Table  # new versions of the rows that changed
    preimages: pa.Table  # the current versions of those rows, in the same order
    deleted: pa.Table  # current rows whose key the source no longer has
    touched: list[int]  # FILE_COLUMN values of the files holding updated or deleted rows

    @property
    def counts(self) -> tuple[int, int, int]:
        return self.inserted.num_rows, self.updated.num_rows, self.deleted.num_rows

    def merge_source(self) -> pa.Table:
        """The changed rows with their op ('I', 'U', 'D'): the source of a delta-rs merge."""
        return pa.concat_tables([rows.append_column(_OP, pa.repeat(op, rows.num_rows).cast(pa.string()))
                                 for rows, op in ((self.inserted, "I"), (self.updated, "U"), (self.deleted, "D"))])

    def feed(self) -> pa.Table:
        """The change data feed of the diff: rows with their ``_change_type``."""
        from engine.deltalog import CHANGE_TYPE

        parts = ((self.inserted, "insert"), (self.preimages, "update_preimage"),
                 (self.updated, "update_postimage"), (self.deleted, "delete"))
        return pa.concat_tables([rows.append_column(CHANGE_TYPE, pa.repeat(kind, rows.num_rows).cast(pa.string()))
                                 for rows, kind in parts])


def compute_diff(new: pa.Table, cur: pa.Table, keys: list[str], join: Callable[..., pa.Table] | None = None) -> Diff:
    """The rows that turn ``cur`` into ``new`` (both keyed by ``keys``, unique; ``cur`` may carry
    FILE_COLUMN). One full outer join pairs every key's new and current row.

    DuckDB's parallel hash join finds them several times faster than Arrow's; types DuckDB cannot
    exchange with Arrow fall back to Arrow's join (``join`` forces one, for tests).
    """
    if join is None:
        try:
            return compute_diff(new, cur, keys, _join_duckdb)
        except (duckdb.Error, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            log.debug("refresh diff falls back to Arrow: %s", exc)
            return compute_diff(new, cur, keys, _join_arrow)
    schema = new.schema
    cur_schema = schema.append(pa.field(FILE_COLUMN, pa.int32())) if FILE_COLUMN in cur.column_names else schema
    wide = join(new, cur.select(cur_schema.names).cast(cur_schema), keys)
    ops = wide.column(_OP)

    def side(rows: pa.Table, prefix: str) -> pa.Table:
        return pa.Table.from_arrays([rows.column(f"{prefix}{i}").cast(f.type) for i, f in enumerate(schema)],
                                    schema=schema)

    updated = wide.filter(pc.equal(ops, "U"))
    deleted = wide.filter(pc.equal(ops, "D"))
    touched: list[int] = []
    if FILE_COLUMN in wide.column_names:
        files = pa.chunked_array(updated.column(FILE_COLUMN).chunks + deleted.column(FILE_COLUMN).chunks,
                                 pa.int32())
        touched = sorted(pc.unique(files).to_pylist())
    return Diff(side(wide.filter(pc.equal(ops, "I")), "n"), side(updated, "n"), side(updated, "c"),
                side(deleted, "c"), touched)


# Both joins return the "wide" form: n<i> / c<i> = column i of the new / current row (NULLs where
# that side has no row), FILE_COLUMN of the current row when given, and _OP, for the rows that
# differ only.

def _join_duckdb(new: pa.Table, cur: pa.Table, keys: list[str]) -> pa.Table:
    names = new.column_names
    others = [c for c in names if c not in keys]
    on = " AND ".join(f"n.{_q(k)} = c.{_q(k)}" for k in keys)
    changed = " OR ".join(f"n.{_q(c)} IS DISTINCT FROM c.{_q(c)}" for c in others) or "FALSE"
    k0 = _q(keys[0])  # key columns are never NULL: a NULL one means that side has no row
    cols = [f"n.{_q(c)} AS n{i}" for i, c in enumerate(names)] + [f"c.{_q(c)} AS c{i}" for i, c in enumerate(names)]
    if FILE_COLUMN in cur.column_names:
        cols.append(f"c.{FILE_COLUMN}")
    cols.append(f"CASE WHEN c.{k0} IS NULL THEN 'I' WHEN n.{k0} IS NULL THEN 'D' ELSE 'U' END AS {_OP}")
    con = duckdb.connect()
    try:
        con.register("new_rows", new)
        con.register("cur_rows", cur)
        return con.sql(f"SELECT {', '.join(cols)} FROM new_rows n FULL JOIN cur_rows c ON {on} "
                       f"WHERE c.{k0} IS NULL OR n.{k0} IS NULL OR ({changed})").to_arrow_table()
    finally:
        con.close()


def _join_arrow(new: pa.Table, cur: pa.Table, keys: list[str]) -> pa.Table:
    names = new.column_names
    others = [c for c in names if c not in keys]
    cur_r = cur.rename_columns([f"__cur_{c}" if c in others else c for c in cur.column_names]).append_column(
        "__tg_cur", pa.repeat(True, cur.num_rows))
    new_r = new.append_column("__tg_new", pa.repeat(True, new.num_rows))
    j = new_r.join(cur_r, keys=keys, join_type="full outer", use_threads=True)
    has_new, has_cur = pc.is_valid(j.column("__tg_new")), pc.is_valid(j.column("__tg_cur"))
    changed = pa.repeat(False, j.num_rows)
    for c in others:
        changed = pc.or_(changed, _differs(j.column(c), j.column(f"__cur_{c}")))
    op = pc.if_else(pc.invert(has_cur), "I", pc.if_else(pc.invert(has_new), "D", "U"))
    j = j.append_column(_OP, op).filter(pc.or_(pc.invert(pc.and_(has_new, has_cur)), changed))
    # Keys come out of Arrow's join coalesced: the same column serves both sides.
    arrays = [j.column(c) for c in names] + [j.column(c if c in keys else f"__cur_{c}") for c in names]
    labels = [f"n{i}" for i in range(len(names))] + [f"c{i}" for i in range(len(names))]
    if FILE_COLUMN in j.column_names:
        arrays.append(j.column(FILE_COLUMN))
        labels.append(FILE_COLUMN)
    return pa.Table.from_arrays(arrays + [j.column(_OP)], names=labels + [_OP])


def _rows_without(rows: pa.Table, files: list[int], keys_gone: pa.Table, keys: list[str]) -> pa.Table:
    """The rows of ``files`` (FILE_COLUMN values) whose key is not in ``keys_gone``, without
    FILE_COLUMN: what stays of the files a commit rewrites."""
    in_files = rows.filter(pc.is_in(rows.column(FILE_COLUMN), pa.array(files, pa.int32())))
    in_files = in_files.drop_columns([FILE_COLUMN])
    if keys_gone.num_rows == 0 or in_files.num_rows == 0:
        return in_files
    position = "__tg_position"
    numbered = in_files.select(keys).append_column(position, pa.array(range(in_files.num_rows), pa.int64()))
    stay = numbered.join(keys_gone, keys=keys, join_type="left anti", use_threads=True).column(position)
    return in_files.take(pc.take(stay, pc.sort_indices(stay)))  # in file order


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# -- the manager --------------------------------------------------------------------------------------

@dataclass
class _SparkLoad:
    """A refresh on Spark: its session and source frame (None: merge what an interrupted refresh
    staged)."""

    spark: SparkSession
    frame: DataFrame | None
    has_corrupt: bool = False
    connector: str = "file"


def _read_as_stored(frame: DataFrame, t: TableDef) -> bool:
    """Whether every column of ``t`` comes out of ``frame`` in its storage form, no PostgreSQL rule
    to apply (a varchar length, a timestamp precision): :func:`engine.storage.stored_as_is`."""
    from engine.spark import arrow_schema_of
    from engine.storage import stored_as_is

    schema = arrow_schema_of(frame)
    return all(stored_as_is(c.type, schema.field(c.name).type) for c in t.columns)


def _row_checks(t: TableDef, has_corrupt: bool) -> list[tuple[str, Any]]:
    """What makes a source row unfit, in the collected path's order: (what the message says,
    condition); each row is counted once, by the first that holds. A malformed line comes first
    (its columns are NULL), then a NULL key, then a NULL in a NOT NULL column."""
    from pyspark.sql import functions as F  # noqa: N812

    keys = set(t.primary_key)
    checks: list[tuple[str, Any]] = []
    fine = F.lit(True)
    if has_corrupt:
        corrupt = F.col(_CORRUPT).isNotNull()
        checks.append(("", corrupt))
        fine = ~corrupt
    for c in t.columns:
        if c.name in keys or c.not_null:
            null = F.col(sparkwrite.quoted(c.name)).isNull()
            checks.append((f"NULL in {'key column' if c.name in keys else 'NOT NULL column'} {c.name}", fine & null))
            fine = fine & ~null
    return checks


def _origin_path(uri: str) -> str:
    """A file Spark names by URI (``_metadata.file_path``) as a path."""
    return unquote(urlparse(uri).path)


def _source_failure(exc: BaseException, connector: str) -> SqlError | SourceError:
    err = map_spark_error(exc)
    if err.sqlstate == "57014":
        return err
    if connector == "file":
        return SourceError("58030", f"could not read the source files: {_first_line(exc)}")
    return SourceError("08001", f"could not read the source table: {_first_line(exc)}")


def _fsync_tree(folder: Path) -> None:
    """Every file under ``folder`` and the folder itself on disk (a staged snapshot a recovery
    merges must be whole)."""
    for root, _, files in os.walk(folder):
        for f in files:
            durability.fsync_file(os.path.join(root, f))
    durability.fsync_dirs([str(folder), str(folder.parent)])


class RefreshManager:
    """Runs refreshes (inline for WAIT, in a thread otherwise), recovers them after a crash and
    starts scheduled ones. One refresh per table at a time; different tables refresh at once."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.catalog = engine.catalog
        self.state = rmeta.store_for(engine.catalog)
        self.staging_root = Path(engine.settings.data_dir) / "refresh"
        self._threads: dict[int, threading.Thread] = {}
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._scheduler: threading.Thread | None = None
        self._next_due: dict[int, float] = {}
        self._pauses = _parse_pauses(os.environ.get("TIDEGATE_REFRESH_TEST_PAUSE", ""))
        # Refreshes a previous process left unfinished (read at start, before any statement runs):
        # only these are recovered, never one this process is running.
        self._interrupted: set[int] = set()
        self._begun: set[int] = set()  # tables whose refresh this process started
        self._begun_ids: set[tuple[int, int]] = set()  # (table oid, refresh id) this process began

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Recover interrupted refreshes (once Spark is up) and start the scheduler."""
        self._interrupted = {oid for oid, st in self.state.all().items() if st.status != rmeta.IDLE}
        self._scheduler = threading.Thread(target=self._run_scheduler, name="tidegate-refresh", daemon=True)
        self._scheduler.start()

    def shutdown(self) -> None:
        self._stop.set()

    # -- statements ---------------------------------------------------------------------------

    def check_create(self, options: dict[str, str], info: SessionInfo) -> None:
        """CREATE TABLE WITH (connector = ...): superusers only; a file path the server may read."""
        check_create_connector(options, self.catalog.roles.is_superuser(info), self.engine.settings)

    def execute(self, node: exp.Expression, info: SessionInfo) -> RowStream | CommandResult:
        """``REFRESH TABLE name [WAIT]`` / ``SHOW REFRESH STATUS`` (trees of the dialect)."""
        if isinstance(node, dialect.ShowRefreshStatus):
            return self.status_rows()
        self.engine.require_leader("REFRESH TABLE")  # it owns refreshes and their recovery
        name: exp.Table = node.this
        if isinstance(name.this, exp.Dot) or (name.catalog and name.catalog != DATABASE_NAME):
            raise SqlError("0A000", f'cross-database references are not implemented: "{name.sql(dialect=dialect.Tidegate)}"')
        parts = [name.db, name.name] if name.db else [name.name]
        wait = bool(node.args.get("wait"))
        schema = parts[-2] if len(parts) > 1 else None
        t = self.catalog.resolve_table(parts[-1], schema, info.search_path)
        if t.kind == "view":
            raise SqlError("42809", f"'{t.qualified_name}' is a view: only refreshable tables support REFRESH")
        # A reload replaces the table's rows: its owner's (or a superuser's) decision.
        self.catalog.roles.check_owner(info, "table", t.name, t.owner, schema=t.schema)
        if not rmeta.is_refreshable(t.options):
            raise SqlError("55000", f"Table '{t.qualified_name}' is not refreshable. Only tables created with "
                                    "refresh_mode = 'FULL_RELOAD' support REFRESH.")
        if not wait:  # a job (engine.jobs) runs it: SHOW JOBS, WAIT JOB and CANCEL JOB reach it
            rid = self._begin(t)
            try:
                job = self.engine.jobs.submit_internal(f"REFRESH TABLE {_q(t.schema)}.{_q(t.name)}", info,
                                                       refresh=(t.oid, rid))
            except BaseException:
                self.state.fail(t.oid, "the refresh could not be submitted as a job")
                raise
            return CommandResult("REFRESH TABLE", notices=[
                f"refresh {rid} of table '{t.qualified_name}' started as job {job.job_id}"])
        sent: list[str] = []

        def notify(text: str) -> None:
            if info.notice is not None:
                info.notice(text)
            else:
                sent.append(text)

        rid = self._begin(t)
        notify(f"refresh {rid} of table '{t.qualified_name}' started")
        self._run(t, rid, notify, raise_errors=True, user=info.user, trigger="REFRESH TABLE WAIT")
        return CommandResult("REFRESH TABLE", notices=sent)

    def status_rows(self) -> RowStream:
        table = rmeta.information_schema_rows(self.catalog)
        kinds = {pa.string(): TEXT, pa.int64(): INT8}
        fields = [ResultField(n, ColumnType(kinds.get(ty, TIMESTAMPTZ))) for n, ty in rmeta.REFRESH_TABLES_COLUMNS]
        return RowStream.from_table(fields, table, command="SHOW")

    # -- running ------------------------------------------------------------------------------

    def _begin(self, t: TableDef) -> int:
        with self._guard:
            rid = self.state.begin(t.oid, t.qualified_name)
            self._begun.add(t.oid)
            self._begun_ids.add((t.oid, rid))
            return rid

    def began_here(self, oid: int, rid: int) -> bool:
        """Whether this process began refresh ``rid`` of table ``oid`` (else the refresh recovery
        resumes it, if it is unfinished)."""
        with self._guard:
            return (oid, rid) in self._begun_ids

    def run_begun(self, t: TableDef, rid: int, notify: Notify, user: str | None) -> None:
        """Run the refresh an asynchronous REFRESH TABLE began, in its job's thread (errors raise)."""
        with self._guard:
            self._threads[t.oid] = threading.current_thread()
        try:
            self._run(t, rid, notify, raise_errors=True, user=user, trigger="REFRESH TABLE")
        finally:
            with self._guard:
                self._threads.pop(t.oid, None)

    def start_refresh(self, t: TableDef, resume: bool = False, *, user: str | None = None,
                      trigger: str = "schedule") -> int:
        """Start a refresh of ``t`` in a background thread; returns its id (55000 if busy).
        ``user`` and ``trigger`` (what started it) go to its events."""
        rid = self.state.get(t.oid).refresh_id if resume else self._begin(t)

        def body() -> None:
            try:
                self._run(t, rid, lambda text: log.info("%s", text), raise_errors=False, resume=resume,
                          user=user, trigger=trigger)
            finally:
                with self._guard:
                    self._threads.pop(t.oid, None)

        th = threading.Thread(target=body, name=f"tidegate-refresh-{t.oid}", daemon=True)
        with self._guard:
            self._threads[t.oid] = th
        th.start()
        return rid

    def _staging(self, t: TableDef, rid: int) -> Path:
        return self.staging_root / str(t.oid) / str(rid)

    def _event(self, type_: str, t: TableDef, rid: int, user: str | None, **payload: Any) -> None:
        self.engine.events.record(type_, object=t.qualified_name, user=user, payload={
            "table": t.qualified_name, "refresh_id": rid, "connector": t.options.get("connector"), **payload})

    def _run(self, t: TableDef, rid: int, notify: Notify, *, raise_errors: bool, resume: bool = False,
             user: str | None = None, trigger: str = "schedule") -> None:
        name = t.qualified_name
        started = time.monotonic()
        self._event(events.REFRESH_STARTED, t, rid, user, trigger=trigger, resume=resume)
        try:
            st = self.state.get(t.oid)
            warnings: list[str] = []
            on_spark = self._spark_load(t, st, rid, resume)
            if on_spark is not None:
                loaded, diff = self._run_on_spark(t, rid, on_spark, st, notify)
            else:
                rid, loaded, diff, warnings = self._run_collected(t, rid, st, notify, resume)
            warning = "; ".join(warnings) if warnings else None
            self.state.succeed(t.oid, loaded, diff[0], diff[1], diff[2], warning)
            self._event(events.REFRESH_FINISHED, t, rid, user, trigger=trigger, rows_loaded=loaded,
                        rows_inserted=diff[0], rows_updated=diff[1], rows_deleted=diff[2],
                        duration_s=round(time.monotonic() - started, 3), warning=warning)
            notify(f"refresh {rid} of table '{name}' finished: {loaded} rows loaded, {diff[0]} inserted, "
                   f"{diff[1]} updated, {diff[2]} deleted")
            shutil.rmtree(self.staging_root / str(t.oid), ignore_errors=True)
        except BaseException as exc:  # noqa: BLE001 - every failure leaves the table unchanged
            if self._stop.is_set():
                log.info("refresh of %s interrupted by shutdown; it resumes at the next start", name)
                return
            if isinstance(exc, SourceError):
                err = SqlError(exc.sqlstate, f"refresh of table '{name}' failed: {exc.message}")
            elif isinstance(exc, SqlError):
                err = SqlError(exc.sqlstate, f"refresh of table '{name}' failed: {exc.message}", detail=exc.detail)
            else:
                log.exception("refresh of %s failed", name)
                err = SqlError("XX000", f"refresh of table '{name}' failed: {_first_line(exc)}")
            self.state.fail(t.oid, err.message.split(": ", 1)[1] if ": " in err.message else err.message)
            self._event(events.REFRESH_FAILED, t, rid, user, trigger=trigger, error=err.message,
                        sqlstate=err.sqlstate, duration_s=round(time.monotonic() - started, 3))
            shutil.rmtree(self.staging_root / str(t.oid), ignore_errors=True)
            if raise_errors:
                raise err from None
            log.warning("%s", err.message)

    def _run_collected(self, t: TableDef, rid: int, st: rmeta.RefreshState, notify: Notify, resume: bool
                       ) -> tuple[int, int, tuple[int, int, int], list[str]]:
        """A refresh through the gateway: chunks loaded into memory and staged, the diff computed
        here, one commit of tidegate's own; returns (refresh id: a changed source restarts under
        a new one, rows loaded, counts, warnings)."""
        warnings: list[str] = []
        tables: dict[int, tuple[str, pa.Table]] = {}
        # Reading the table's current rows and writing the staged chunks overlap the load
        # and the diff: the commit waits for both, the FINISHING record for the writes.
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="tidegate-refresh-io") as io:
            current = io.submit(self._current_rows, t)
            if st.status == rmeta.FINISHING:
                loaded = st.staged_rows or 0
                staged: Callable[[], None] = lambda: None  # noqa: E731
            else:
                rid, loaded, warnings, tables, writes = self._load(t, rid, notify, resume, io)

                def staged() -> None:
                    for fut in writes:
                        fut.result()
                    self.state.finishing(t.oid, loaded)

            diff = self._commit(t, rid, notify, warnings, tables, current, staged)
        return rid, loaded, diff, warnings

    # -- loads on Spark ------------------------------------------------------------------------

    def _spark_load(self, t: TableDef, st: rmeta.RefreshState, rid: int, resume: bool) -> _SparkLoad | None:
        """The load of this refresh on Spark, or None for the collected path: the table option
        ``spark_writes`` (``off``; ``on``: whenever the table qualifies; ``auto``, the default:
        also when its source exceeds :data:`SPARK_RELOAD_BYTES` of files or
        :data:`SPARK_RELOAD_ROWS` rows). A table qualifies when a bad row fails the refresh
        (``on_source_error = 'fail'``) and every column is read in its storage form (no PostgreSQL
        conversion, :func:`_read_as_stored`). An interrupted refresh goes on the way it began."""
        stage = self._spark_stage(t, rid)
        if resume and st.status == rmeta.FINISHING and (stage / "_SUCCESS").exists():
            return _SparkLoad(self.engine.runtime.new_session(), None)
        mode = t.options.get("spark_writes", "auto").lower()
        if mode == "off" or self.options_tolerant(t) or not sparkwrite.spark_safe_names(t):
            return None
        if resume and self.state.chunks(t.oid, rid):
            return None  # collected chunks staged before the crash: the collected path resumes them
        spark = self.engine.runtime.new_session()
        source = Source(t, FileAccess.from_settings(self.engine.settings))
        if mode == "auto" and not source.large(spark):
            return None
        chunks = source.chunks(spark)
        if not chunks:
            return None
        frame, has_corrupt = source.frame(spark, chunks)
        if not _read_as_stored(frame, t):
            return None
        return _SparkLoad(spark, frame, has_corrupt, source.connector)

    def _spark_stage(self, t: TableDef, rid: int) -> Path:
        return self._staging(t, rid) / "spark"

    def _run_on_spark(self, t: TableDef, rid: int, load: _SparkLoad, st: rmeta.RefreshState, notify: Notify
                      ) -> tuple[int, tuple[int, int, int]]:
        """A refresh on Spark: the snapshot staged as Parquet by the executors and checked there
        (bad rows, duplicate keys), then one Delta MERGE applies the difference; no row passes
        through the gateway. Returns (rows loaded, counts)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F  # noqa: N812

        name = t.qualified_name
        stage = self._spark_stage(t, rid)
        if load.frame is None:
            loaded = st.staged_rows or 0
        else:
            shutil.rmtree(stage, ignore_errors=True)
            self.state.set_fingerprint(t.oid, "")  # a load on Spark restarts rather than resumes
            notify(f"refresh {rid} of table '{name}': loading the source on Spark")
            checks = _row_checks(t, load.has_corrupt)
            observed = Observation(f"tidegate_refresh_{t.oid}_{rid}")
            # Staged without the rows' origin (reading each file's name costs a third more): only a
            # failed check reads it, from the source again.
            frame = load.frame.drop(_PATH).observe(observed, F.count(F.lit(1)).alias("n"), *[
                F.count(F.when(cond, 1)).alias(f"bad{i}") for i, (_, cond) in enumerate(checks)])
            try:
                frame.write.mode("overwrite").parquet(str(stage))
            except Exception as exc:  # noqa: BLE001 - every Spark/JDBC failure names the source
                raise _source_failure(exc, load.connector) from None
            _fsync_tree(stage)
            found = observed.get
            loaded = found["n"]
            nbad = sum(found[f"bad{i}"] for i in range(len(checks)))
            if nbad:
                raise self._bad_rows(load.frame, load, checks, nbad)
            self._check_keys(t, load.spark, stage)
            self._pause("chunk")
            self.state.finishing(t.oid, loaded)
            notify(f"refresh {rid} of table '{name}': loaded {loaded} rows")
        return loaded, self._merge_on_spark(t, rid, load.spark, stage, notify)

    @staticmethod
    def _bad_rows(source: DataFrame, load: _SparkLoad, checks: list[tuple[str, Any]], nbad: int) -> SourceError:
        """22P02 for a snapshot holding ``nbad`` rows that do not fit, with the first examples as
        the collected path gives them: a malformed line by file and line, NULLs counted per file
        (or source query). ``source`` (the load's frame) is read again, with each row's origin,
        and kept on disk while it is queried: Spark fills the malformed-line column in only when a
        scan reads every column (a filter or an aggregate over a few of them finds no malformed
        line; its documented way round is to cache the parsed rows)."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F  # noqa: N812

        parsed = source.persist(StorageLevel.DISK_ONLY)
        try:
            counts = parsed.groupBy(_PATH).agg(*[
                F.count(F.when(cond, 1)).alias(f"bad{i}") for i, (_, cond) in enumerate(checks)]).collect()
            messages: list[str] = []
            if load.has_corrupt and any(r["bad0"] for r in counts):
                for r in parsed.where(F.col(_CORRUPT).isNotNull()).limit(_EXAMPLES).collect():
                    rec = r[_CORRUPT]
                    messages.append(f"{_locate([_origin_path(r[_PATH])], rec)}: {rec.strip()[:200]!r} does not "
                                    "fit the table's columns")
        finally:
            parsed.unpersist()
        for r in sorted(counts, key=lambda r: r[_PATH]):
            where = f"file {_origin_path(r[_PATH])}" if load.connector == "file" else f"source query: {r[_PATH]}"
            for i, (what, _) in enumerate(checks):
                n = r[f"bad{i}"]
                if what and n:
                    messages.append(f"{where}: {n} row{'s' if n > 1 else ''} with {what}")
        return SourceError("22P02", f"{nbad} source row{'s do' if nbad > 1 else ' does'} not fit the "
                                    f"table's schema; first: {'; '.join(messages[:_EXAMPLES])}")

    @staticmethod
    def _check_keys(t: TableDef, spark: SparkSession, stage: Path) -> None:
        """23505 when the staged snapshot holds a key twice (one job over the key columns)."""
        from pyspark.sql import functions as F  # noqa: N812

        from engine.storage import key_text

        key_columns = [F.col(sparkwrite.quoted(k)) for k in t.primary_key]
        repeated = (spark.read.parquet(str(stage)).select(*key_columns).groupBy(*key_columns).count()
                    .where(F.col("count") > 1).select(*key_columns))
        first = repeated.limit(_EXAMPLES).collect()
        if first:
            n = repeated.count()
            examples = ", ".join(key_text({k: r[k] for k in t.primary_key}) for r in first)
            raise SourceError("23505", f"{n} duplicate key{'s' if n > 1 else ''} in the source; first: {examples}")

    def _merge_on_spark(self, t: TableDef, rid: int, spark: SparkSession, stage: Path, notify: Notify
                        ) -> tuple[int, int, int]:
        """Apply the staged snapshot with Delta Lake's MERGE (:func:`engine.sparkwrite.reload_merge`),
        once: a commit of this refresh id already in the table (a crash after it) is not redone,
        its counts are read back from the table's history."""
        store = self.engine.store
        location = t.location or ""
        app_id = f"tidegate-refresh-{t.oid}"
        token = f"{app_id}/{rid}"
        if (store.app_version(location, app_id) or 0) >= rid:
            notify(f"refresh {rid} of table '{t.qualified_name}' was already committed")
            m = sparkwrite.commit_metrics(location, token) or {}
            inserted = m.get("numTargetRowsInserted", m.get("numOutputRows", 0))
            return inserted, m.get("numTargetRowsUpdated", 0), m.get("numTargetRowsDeleted", 0)
        staged = spark.read.parquet(str(stage))
        frame = sparkwrite.storage_frame(staged, t, {c.name: staged.columns.index(c.name) for c in t.columns}, {})
        self._pause("commit")
        try:
            with store.write_lock(location):
                if not DeltaTable(location).file_uris():
                    # An empty table (the first load): every row is new, and an append is what a
                    # MERGE would commit, without its join; the feed reads added files as inserts.
                    notify(f"refresh {rid} of table '{t.qualified_name}': appending the rows on Spark")
                    counts = sparkwrite.append(frame, location, app=(app_id, rid), token=token), 0, 0
                else:
                    notify(f"refresh {rid} of table '{t.qualified_name}': applying the difference with Delta "
                           "Lake's MERGE")
                    m = sparkwrite.reload_merge(spark, frame, t, app_id, rid, token)
                    counts = m.get("num_inserted_rows", 0), m.get("num_updated_rows", 0), m.get("num_deleted_rows", 0)
        except Exception as exc:  # noqa: BLE001 - a conflict is 40001, a cancel 57014
            raise map_spark_error(exc) from None
        finally:
            store.forget(location)  # Spark committed (or may have): the cached log is behind
        self._pause("committed")
        return counts

    def _load(self, t: TableDef, rid: int, notify: Notify, resume: bool, io: ThreadPoolExecutor
              ) -> tuple[int, int, list[str], dict[int, tuple[str, pa.Table]], list[Future[None]]]:
        """Read the source's snapshot chunk by chunk; returns (refresh id, rows, warnings, the
        chunks this run read by number: (staged file, rows), and the writes staging them)."""
        spark = self.engine.runtime.new_session()
        source = Source(t, FileAccess.from_settings(self.engine.settings))
        fp = source.fingerprint()
        done: dict[int, rmeta.Chunk] = {}
        if resume:
            st = self.state.get(t.oid)
            if fp is not None and st.fingerprint == fp:
                done = {c.chunk: c for c in self.state.chunks(t.oid, rid) if os.path.exists(c.file)}
                notify(f"refresh {rid} of table '{t.qualified_name}' resumes after {len(done)} staged chunk(s)")
            else:
                shutil.rmtree(self._staging(t, rid), ignore_errors=True)
                rid = self.state.restart(t.oid, fp)
                notify(f"refresh of table '{t.qualified_name}' restarts as refresh {rid}: the source changed")
        else:
            self.state.set_fingerprint(t.oid, fp or "")
        stage = self._staging(t, rid)
        stage.mkdir(parents=True, exist_ok=True)
        chunks = source.chunks(spark)
        total = staged_rows = sum(c.rows for c in done.values())  # rows read / rows staged
        bad_msgs: list[str] = []
        bad_total = 0
        progress = threading.Lock()
        landed = list(done)  # chunks staged so far; progress messages count them in landing order
        tables: dict[int, tuple[str, pa.Table]] = {}
        writes: list[Future[None]] = []

        def read_chunk(n: int, spec: ChunkSpec) -> None:
            nonlocal total, bad_total
            data, bad, nbad = source.read(spark, spec)
            with progress:
                bad_total += nbad
                bad_msgs.extend(bad)
                if nbad and not source.tolerant:
                    raise SourceError("22P02", f"{nbad} source row{'s do' if nbad > 1 else ' does'} not fit the "
                                               f"table's schema; first: {'; '.join(bad_msgs[:_EXAMPLES])}")
                path = str(stage / f"chunk-{n:05d}.parquet")
                tables[n] = (path, data)
                total += data.num_rows
                writes.append(io.submit(stage_chunk, n, path, data))
            self._pause("chunk")

        def stage_chunk(n: int, path: str, data: pa.Table) -> None:
            nonlocal staged_rows
            # Staged as the table's data files are written: the commit may adopt them as they are.
            deltalog.write_parquet(data, path)
            self.state.record_chunk(t.oid, rid, rmeta.Chunk(n, data.num_rows, path))
            with progress:
                landed.append(n)
                staged_rows += data.num_rows
                count, rows = len(landed), staged_rows
            notify(f"refresh {rid} of table '{t.qualified_name}': loaded chunk {count}/{len(chunks)}, {rows} rows")

        # Chunks load LOADERS at a time (one Spark job each); each is recorded once its staged file
        # is written, so a resume skips exactly the staged ones.
        todo = [(n, spec) for n, spec in enumerate(chunks) if n not in done]
        with ThreadPoolExecutor(max_workers=LOADERS, thread_name_prefix="tidegate-refresh-load") as pool:
            futures = [pool.submit(read_chunk, n, spec) for n, spec in todo]
            try:
                for fut in futures:
                    fut.result()
            finally:
                for fut in futures:
                    fut.cancel()  # after a failure, chunks not yet started are not loaded
        warnings = []
        if bad_total:
            warnings.append(f"{bad_total} source row{'s' if bad_total > 1 else ''} skipped (on_source_error = 'ignore'); first: "
                            + "; ".join(bad_msgs[:_EXAMPLES]))
            notify(warnings[-1])
        return rid, total, warnings, tables, writes

    def _staged(self, t: TableDef, rid: int, read: dict[int, tuple[str, pa.Table]]) -> list[tuple[str, pa.Table]]:
        """Every chunk of the snapshot in order, (staged file, rows): those this run read from
        memory, those of an earlier run from their staged files."""
        from engine.storage import storage_schema

        schema = storage_schema(t.columns)
        chunks = dict(read)
        for c in self.state.chunks(t.oid, rid):
            if c.chunk not in chunks:
                chunks[c.chunk] = (c.file, pq.read_table(c.file).cast(schema))
        return [chunks[n] for n in sorted(chunks)]

    def _current_rows(self, t: TableDef) -> CurrentRows:
        from engine.storage import storage_schema

        return self.engine.store.current_rows(t.location or "", storage_schema(t.columns), FILE_COLUMN)

    def _commit(self, t: TableDef, rid: int, notify: Notify, warnings: list[str],
                read: dict[int, tuple[str, pa.Table]], current: Future[CurrentRows],
                staged: Callable[[], None]) -> tuple[int, int, int]:
        """Diff the snapshot against the table and apply it in one Delta commit (once); ``staged``
        returns once every chunk is staged and the load recorded as finished."""
        from engine.storage import dedupe_last, duplicate_keys, key_text, storage_schema

        store = self.engine.store
        location = t.location or ""
        app_id = f"tidegate-refresh-{t.oid}"
        if (store.app_version(location, app_id) or 0) >= rid:
            notify(f"refresh {rid} of table '{t.qualified_name}' was already committed")
            return self.state.pending(t.oid)
        chunks = self._staged(t, rid, read)
        new = pa.concat_tables([rows for _, rows in chunks]) if chunks else storage_schema(t.columns).empty_table()
        keys = t.primary_key
        dups = duplicate_keys(new, keys)
        if dups.num_rows:
            if not self.options_tolerant(t):
                examples = ", ".join(key_text(r) for r in dups.slice(0, _EXAMPLES).to_pylist())
                raise SourceError("23505", f"{dups.num_rows} duplicate key{'s' if dups.num_rows > 1 else ''} in the "
                                           f"source; first: {examples}")
            warnings.append(f"{dups.num_rows} duplicate key{'s' if dups.num_rows > 1 else ''} in the source; "
                            "the last row of each key is kept")
            notify(warnings[-1])
            new = dedupe_last(new, keys)
            chunks = []  # the staged files no longer are the snapshot
        notify(f"refresh {rid} of table '{t.qualified_name}': computing the difference")
        for attempt in range(5):
            cur = current.result() if attempt == 0 else self._current_rows(t)
            diff = compute_diff(new, cur.rows, keys)
            staged()
            self.state.set_pending(t.oid, *diff.counts)
            self._pause("commit")
            with store.writing(location) as dt:
                if dt.version() != cur.version:
                    continue  # a writer committed meanwhile: diff again
                if deltalog.supports(dt) and [f.name for f in dt.schema().fields] == new.column_names:
                    try:
                        self._commit_files(dt, t, rid, app_id, new, chunks, cur, diff)
                    except deltalog.CommitConflict:
                        continue  # another process took the version: diff again
                else:
                    self._commit_merge(dt, rid, app_id, new, keys, diff)
            self._pause("committed")
            return diff.counts
        raise SqlError("40001", "could not serialize access due to concurrent update",
                       detail=f"table '{t.qualified_name}' kept changing while the refresh committed")

    @staticmethod
    def _commit_files(dt: DeltaTable, t: TableDef, rid: int, app_id: str, new: pa.Table, chunks: list[tuple[str, pa.Table]],
                      cur: CurrentRows, diff: Diff) -> None:
        """Apply ``diff`` with file actions and its own change data feed (:mod:`engine.deltalog`).

        Either the touched files are rewritten without their changed rows, plus one file of new
        and updated rows (what a merge does), or, when that would rewrite at least half the table
        anyway (a random 1% of changes touches every file), the staged chunks become the table's
        files as they are and every current file is removed: nothing is written twice.
        """
        location = t.location or ""
        inserted, updated, deleted = diff.counts
        touched_rows = sum(cur.files[i].rows for i in diff.touched)
        rewrite_rows = touched_rows - deleted + inserted
        adds: list[deltalog.DataFile] = []
        if chunks and new.num_rows and 2 * rewrite_rows >= new.num_rows:
            removes = cur.files
            adds = [deltalog.add_data_file(location, rows, source=path) for path, rows in chunks if rows.num_rows]
        else:
            removes = [cur.files[i] for i in diff.touched]
            kept = _rows_without(cur.rows, diff.touched, pa.concat_tables([diff.updated.select(t.primary_key),
                                                                           diff.deleted.select(t.primary_key)]),
                                 t.primary_key)
            written = pa.concat_tables([kept.cast(new.schema), diff.inserted, diff.updated])
            for start in range(0, written.num_rows, FILE_ROWS):
                adds.append(deltalog.add_data_file(location, written.slice(start, FILE_ROWS)))
        # Without removes the added files are exactly the inserts, which is what a reader of the
        # feed derives from them; with removes the feed must be spelled out.
        cdc = [deltalog.add_cdc_file(location, diff.feed())] if removes else []
        deltalog.commit(dt, location, adds=adds,
                        removes=removes, cdc=cdc,
                        app_transaction=(app_id, rid), operation="REFRESH",
                        parameters={"table": t.qualified_name, "refreshId": rid},
                        metrics={"num_target_rows_inserted": inserted, "num_target_rows_updated": updated,
                                 "num_target_rows_deleted": deleted, "num_added_files": len(adds),
                                 "num_removed_files": len(removes)})

    @staticmethod
    def _commit_merge(dt: DeltaTable, rid: int, app_id: str, new: pa.Table, keys: list[str], diff: Diff) -> None:
        """Apply ``diff`` with a delta-rs merge (tables :mod:`engine.deltalog` does not write)."""
        from deltalake import CommitProperties, Transaction, write_deltalake

        from engine.storage import key_match

        props = CommitProperties(app_transactions=[Transaction(app_id, rid)])
        if diff.counts == (0, 0, 0):
            # Nothing changed: record the refresh id with an empty append (no data, no CDF rows).
            write_deltalake(dt, new.schema.empty_table(), mode="append", commit_properties=props,
                            writer_properties=WRITER_PROPERTIES)
            return
        names = new.column_names
        others = [c for c in names if c not in keys]
        merger = dt.merge(diff.merge_source(), predicate=key_match(keys, null_safe=False), source_alias="s",
                          target_alias="t", commit_properties=props, writer_properties=WRITER_PROPERTIES)
        if others:
            merger = merger.when_matched_update(updates={_q(c): f"s.{_q(c)}" for c in others},
                                                predicate=f"s.{_OP} = 'U'")
        merger = merger.when_matched_delete(predicate=f"s.{_OP} = 'D'")
        merger = merger.when_not_matched_insert(updates={_q(c): f"s.{_q(c)}" for c in names},
                                                predicate=f"s.{_OP} = 'I'")
        merger.execute()

    @staticmethod
    def options_tolerant(t: TableDef) -> bool:
        return t.options.get("on_source_error", "fail").lower() == "ignore"

    def _pause(self, point: str) -> None:
        seconds = self._pauses.get(point)
        if seconds:
            time.sleep(seconds)

    # -- recovery and schedule ------------------------------------------------------------------

    def _recover(self) -> None:
        tables = {t.oid: t for t in self.catalog.list_tables(kind="table")}
        for oid, st in self.state.all().items():
            t = tables.get(oid)
            if t is None or not rmeta.is_refreshable(t.options):
                self.state.forget(oid)
                shutil.rmtree(self.staging_root / str(oid), ignore_errors=True)
                continue
            if st.status != rmeta.IDLE and oid in self._interrupted:
                with self._guard:
                    if oid in self._threads or oid in self._begun:
                        continue
                log.info("resuming refresh %s of %s (%s)", st.refresh_id, t.qualified_name, st.status)
                self.start_refresh(t, resume=True, trigger="recovery")

    def _run_scheduler(self) -> None:
        try:
            self.engine.runtime.wait(600)
        except SqlError:
            return
        try:
            self._recover()
        except Exception:  # noqa: BLE001 - keep scheduling
            log.exception("refresh recovery failed")
        while not self._stop.wait(0.5):
            try:
                self._tick()
            except Exception:  # noqa: BLE001 - keep scheduling
                log.exception("refresh scheduler tick failed")

    def _tick(self) -> None:
        now = time.monotonic()
        seen = set()
        for t in self.catalog.list_tables(kind="table"):
            interval = t.options.get("refresh_interval_sec")
            if not interval or not rmeta.is_refreshable(t.options):
                continue
            seen.add(t.oid)
            due = self._next_due.setdefault(t.oid, now + int(interval))
            if now < due:
                continue
            self._next_due[t.oid] = now + int(interval)
            with self._guard:
                busy = t.oid in self._threads
            if busy or self.state.get(t.oid).status != rmeta.IDLE:
                self.state.skip_tick(t.oid)
                continue
            try:
                self.start_refresh(t)
            except SqlError:
                self.state.skip_tick(t.oid)
        for oid in list(self._next_due):
            if oid not in seen:
                del self._next_due[oid]

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait for the background refreshes running now (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._guard:
                threads = list(self._threads.values())
            if not threads:
                return
            threads[0].join(max(0.0, deadline - time.monotonic()))


def _parse_pauses(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in text.split(","):
        if ":" in part:
            k, v = part.split(":", 1)
            try:
                out[k.strip()] = float(v)
            except ValueError:
                continue
    return out
