"""A Spark Python streaming data source over a Delta table's change data feed.

``spark.readStream.format("tidegate_cdf").schema(<table columns + change columns>)
.option("path", <delta location>).load()`` streams every row change of one Delta table:

* offsets are Delta versions (``{"version": n}``: every commit up to ``n`` is read); a new query
  starts at ``-1``, so its first micro-batch is the *backfill*: the snapshot at the latest version,
  all rows as ``insert``;
* later micro-batches read the versions ``(start, end]`` with delta-rs' change data feed
  (``DeltaTable.load_cdf``): ``insert``, ``delete``, ``update_preimage`` and ``update_postimage``
  rows, with ``_commit_version``;
* ``read`` yields Arrow record batches cast to the query's schema (no per-row Python objects).

Offsets live in the query's checkpoint, so a restarted query resumes at the first version it has
not committed. The module imports nothing of tidegate: Spark pickles the reader by value into
its Python workers (see :func:`register`), which then only need pyarrow and deltalake.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

NAME = "tidegate_cdf"
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
INSERT_TYPES = ("insert", "update_postimage")
DELETE_TYPES = ("delete", "update_preimage")
# A backfill reads the snapshot's files in this many partitions at most.
BACKFILL_PARTITIONS = 2


class SnapshotPartition(InputPartition):
    """Files of one snapshot version, read as inserts (the backfill)."""

    def __init__(self, path: str, version: int, files: list[str]) -> None:
        super().__init__((path, version))
        self.path = path
        self.version = version
        self.files = files


class ChangesPartition(InputPartition):
    """The change data feed of versions ``first..last`` (inclusive)."""

    def __init__(self, path: str, first: int, last: int) -> None:
        super().__init__((path, first, last))
        self.path = path
        self.first = first
        self.last = last


# Python workers are reused across tasks: keeping each table open saves replaying its log for
# every micro-batch (20-40 ms of CPU on a table with a commit every 100 ms; the CDF read is 3 ms).
_TABLES: dict[str, Any] = {}
_TABLES_MAX = 64


def _cached_table(path: str, version: int) -> Any:
    """The Delta table at ``path``, brought up to at least ``version``."""
    from deltalake import DeltaTable

    dt = _TABLES.get(path)
    if dt is None:
        if len(_TABLES) >= _TABLES_MAX:
            _TABLES.clear()
        dt = _TABLES[path] = DeltaTable(path)
    elif dt.version() < version:
        dt.update_incremental()
    return dt


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, prefers_large_types=False)


def _conform(table: pa.Table, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """``table``'s columns in ``target``'s order and types, as record batches."""
    arrays = []
    for f in target:
        if f.name in table.column_names:
            col = table.column(f.name)
            if col.type != f.type:
                col = col.cast(f.type)
            arrays.append(col)
        else:
            arrays.append(pa.nulls(table.num_rows, f.type))
    out = pa.Table.from_arrays(arrays, schema=target)
    yield from out.to_batches(max_chunksize=65536)


class CdfStreamReader(DataSourceStreamReader):
    """Offsets are Delta versions of the table at ``path``."""

    def __init__(self, path: str, schema: StructType) -> None:
        self.path = path
        self.schema = schema
        self._table: Any = None

    def _latest_version(self) -> int:
        from deltalake import DeltaTable

        if self._table is None:
            self._table = DeltaTable(self.path)
        else:
            self._table.update_incremental()
        return int(self._table.version())

    def initialOffset(self) -> dict:
        return {"version": -1}

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        return {"version": self._latest_version()}

    def reportLatestOffset(self) -> dict | None:
        return {"version": self._latest_version()}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        lo, hi = int(start["version"]), int(end["version"])
        if hi <= lo:
            return []
        if lo < 0:
            from deltalake import DeltaTable

            from engine.storage import local_files

            files = local_files(DeltaTable(self.path, version=hi))
            if not files:
                return []
            n = min(BACKFILL_PARTITIONS, len(files))
            return [SnapshotPartition(self.path, hi, files[i::n]) for i in range(n)]
        return [ChangesPartition(self.path, lo + 1, hi)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        target = _arrow_schema(self.schema)
        data_cols = [f.name for f in target if f.name not in (CHANGE_TYPE, COMMIT_VERSION)]
        if isinstance(partition, SnapshotPartition):
            import pyarrow.dataset as ds
            import pyarrow.parquet as pq

            # Files written before an ALTER TABLE ... ADD COLUMN lack the column (NULL in them);
            # a dataset takes its schema from one file, so it is given the union of them all,
            # and a column no file has yet is NULL in every one.
            schema = pa.unify_schemas([pq.read_schema(f) for f in partition.files], promote_options="permissive")
            for c in data_cols:
                if c not in schema.names:
                    schema = schema.append(target.field(c))
            table = ds.dataset(partition.files, format="parquet", schema=schema).to_table(columns=data_cols)
            n = table.num_rows
            table = table.append_column(CHANGE_TYPE, pa.array(["insert"] * n, pa.string()))
            table = table.append_column(COMMIT_VERSION, pa.array([partition.version] * n, pa.int64()))
            yield from _conform(table, target)
            return
        assert isinstance(partition, ChangesPartition)
        reader = _cached_table(partition.path, partition.last).load_cdf(
            starting_version=partition.first, ending_version=partition.last)
        table = pa.table(reader.read_all())
        if table.num_rows == 0:
            return
        yield from _conform(table, target)

    def commit(self, end: dict) -> None:
        """Nothing to release: the Delta log is the buffer."""


class CdfSource(DataSource):
    """``format("tidegate_cdf")``; options: ``path`` (the Delta table's location)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType | str:
        raise ValueError("the tidegate_cdf source needs an explicit schema (the table's columns, "
                         f"{CHANGE_TYPE} string, {COMMIT_VERSION} bigint)")

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        path = self.options.get("path")
        if not path:
            raise ValueError("the tidegate_cdf source needs the option 'path'")
        return CdfStreamReader(path, schema)


def register(spark: Any) -> None:
    """Register the source with ``spark`` (a session's data source registry)."""
    spark.dataSource.register(CdfSource)


__all__ = ["CHANGE_TYPE", "COMMIT_VERSION", "DELETE_TYPES", "INSERT_TYPES", "NAME", "CdfSource", "register"]
