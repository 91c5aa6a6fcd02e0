"""Writes on Spark: rows a query computes are appended by Delta Lake's own Spark connector.

``INSERT INTO t SELECT ...`` and ``CREATE TABLE t AS SELECT ...`` used to collect the query's rows
into the gateway and write them with delta-rs: one Python process held them all (and Spark's
``spark.driver.maxResultSize`` refused results past 512 MB). When the optimizer expects a result
larger than :data:`SPARK_WRITE_BYTES`, the executors write the rows as Delta files and the driver
commits them (``DataFrame.write.format("delta").mode("append")``): the rows never pass through
the gateway's Python process, and on a cluster the writing scales with the executors.

Blind appends go this way (:func:`blind_append_target`): tables without PRIMARY KEY, UNIQUE or
FOREIGN KEY constraints (time-series tables in append mode), whose inserts read nothing of the
table, so Delta's optimistic concurrency lets them commit beside this gateway's delta-rs writers
(both follow the log's put-if-absent protocol on the same table). Each source column must already
have its target column's type (:func:`same_storage`): the rows are in storage form, cast to the
exact Delta type, and NOT NULL is checked on the executors with PostgreSQL's 23502. Anything else
(a key to check, a conversion PostgreSQL does by its own rules, a per-row default, RETURNING,
ON CONFLICT, a transaction block) keeps the collected path.

Inserts into a time-series table (an upsert: the last write of a key wins) go the same way as one
Delta MERGE (:func:`upsert`), inserts into a PRIMARY KEY table as an append after one job has
found no key stored or repeated (:func:`append_new_keys`), and ``ON CONFLICT DO NOTHING`` as an
append of the rows whose key is new (:func:`append_skipping_existing`), under the table's lock here.

UPDATE and DELETE over a large table run as Delta Lake's own commands (:func:`rewrite`): Delta finds
the files holding matched rows, rewrites only those on the executors, records the change feed
(update pre/post images, deletes: what flows read) and checks its read against commits made
meanwhile. They go this way when nothing but Delta's command is needed: no key, UNIQUE or FOREIGN
KEY to check for the columns set, no TTL (its hidden rows must stay unmatched), no subquery, values
of their column's exact type (or NULL), deterministic expressions (Delta refuses others), and
outside a transaction block (engine.dml ``_rewrite_on_spark``).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from catalog.store import ColumnDef, TableDef
from engine import durability
from engine.errors import RAISED_QUOTE
from engine.spark import arrow_schema_of, estimated_bytes, spark_type_sql
from tidegate.pgtypes import ColumnType, pg_type_for_arrow
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# A query whose optimizer size estimate (its files' bytes for a scan) exceeds this is written on
# Spark; smaller results are collected and written by delta-rs, which commits in milliseconds
# where a Spark write job takes a few hundred.
SPARK_WRITE_BYTES = 8 * 1024 * 1024
# An UPDATE/DELETE matching fewer rows is collected: 1% of a 10M-row table (100k rows) took 4.8 s
# collected and 10.5 s as Delta's UPDATE (bench/writes.py); the collected path's memory grows with
# the rows it changes (and the files delta-rs rewrites), Delta's does not.
SPARK_REWRITE_ROWS = 1_000_000
SETTING = "tidegate.spark_writes"  # the session setting that chooses (gateway/gucs.py)
# Rows per data file Spark writes: one Parquet row group (engine.deltalog.ROW_GROUP_ROWS), as
# delta-rs' bulk writes make them, so the interactive reader's per-file key index and row groups
# look alike; a rewrite by key splits such a file (engine.storage.REWRITE_FILE_ROWS).
FILE_ROWS = 128 * 1024
# An append's source read in Spark's default splits of 128 MB, not the 16 MB the gateway's queries
# use (engine.spark: their partitions' results come back to the driver; an append's never do).
# 20M rows (bigint, text, double, timestamp) appended in one local session: 13.1-13.2 s at 128 MB,
# 14.6-15.2 s at 16 MB.
WRITE_SPLITS = {"spark.sql.files.maxPartitionBytes": "128m"}
_OP = "__tg_op"  # a refresh's difference: what each row is (reload_merge)
# Casts Spark makes as PostgreSQL's assignment does: exact integer widening, integers and float4 to
# the nearest float (IEEE round to nearest in both), a string literal (unknown) or a varchar of any
# length into text (the same characters; char(n) is not: its padding goes).
_WIDENING = {("int2", "int4"), ("int2", "int8"), ("int4", "int8"), ("float4", "float8"), ("unknown", "text"),
             ("varchar", "text")} | {
    (i, f) for i in ("int2", "int4", "int8") for f in ("float4", "float8")}
_LITERAL_TYPES = (bool, int, float, str, Decimal, bytes, date)  # no datetime: Spark reads it in a zone


def worth_writing_on_spark(df: DataFrame, info: SessionInfo) -> bool:
    """The session's ``tidegate.spark_writes``: ``on``, ``off``, or ``auto`` (the default): a
    result the optimizer expects to exceed :data:`SPARK_WRITE_BYTES`."""
    mode = info.settings.get(SETTING, "auto")
    if mode != "auto":
        return mode == "on"
    size = estimated_bytes(df)
    return size is not None and size > SPARK_WRITE_BYTES


def enough_rows_to_rewrite(rows: DataFrame, condition_sql: str | None) -> bool:
    """Whether at least :data:`SPARK_REWRITE_ROWS` rows of ``rows`` (a table) match
    ``condition_sql``: the ``auto`` choice of an UPDATE/DELETE on Spark, once the table is over
    :data:`SPARK_WRITE_BYTES` (one Spark job, over the condition's columns only)."""
    matched = rows.where(condition_sql) if condition_sql is not None else rows
    return matched.count() >= SPARK_REWRITE_ROWS


def result_types(df: DataFrame, types: list[ColumnType | None]) -> list[ColumnType]:
    """The PostgreSQL type of each of ``df``'s columns: the translator's, else the one its Arrow
    type maps to (what the collected path takes from the collected rows' schema)."""
    schema = arrow_schema_of(df)
    return [types[i] if i < len(types) and types[i] is not None else pg_type_for_arrow(f.type)
            for i, f in enumerate(schema)]


def stored_types(frame: DataFrame, types: list[ColumnType | None]) -> list[ColumnType] | None:
    """The PostgreSQL type of each of ``frame``'s computed columns (see :func:`result_types`), or
    None when its plan is not deterministic (``random()``, ``clock_timestamp()``: Delta's UPDATE,
    DELETE and MERGE refuse them)."""
    return result_types(frame, types) if deterministic(frame) else None


def assignment(column: ColumnDef, written: Any, value_sql: str, value_type: ColumnType) -> Assignment | None:
    """``SET column = <written>`` for a Delta command, or None when the value needs one of
    PostgreSQL's assignment conversions (the collected path's); a NULL is stored as NULL whatever
    the column's type."""
    if not isinstance(written, exp.Null) and not same_storage(value_type, column.type):
        return None
    return Assignment(column, value_sql)


def has_subquery(expressions: list[Any]) -> bool:
    """Whether a subquery is in one of ``expressions`` (Delta's commands refuse them in conditions)."""
    return any(e.find(exp.Subquery, exp.Select, exp.Exists) is not None for e in expressions)


def spark_safe_names(t: TableDef) -> bool:
    """Whether Delta's UPDATE / DELETE / MERGE can take ``t``'s column names: with a backtick in
    one they fail inside Delta (INVALID_ATTRIBUTE_NAME_SYNTAX on its own plan), so such tables
    keep the collected path."""
    return not any("`" in c.name for c in t.columns)


def _only_key_rules(t: TableDef) -> bool:
    """Whether ``t`` is a stored table with no UNIQUE, CHECK or FOREIGN KEY (its key aside)."""
    return t.kind == "table" and bool(t.location) and not t.constraints and not t.unique_sets()


def blind_append_target(t: TableDef) -> bool:
    """Whether an insert into ``t`` is a blind append: no key, unique set or reference to check."""
    if not _only_key_rules(t):
        return False
    if t.time_index:
        return not t.primary_key and t.options.get("append_mode", "false").lower() == "true"
    return not t.primary_key


def upsert_target(t: TableDef) -> bool:
    """Whether ``t`` is a time-series table whose inserts are upserts (not append mode) with
    nothing else to check: no UNIQUE, CHECK or FOREIGN KEY (its key is its tags and time index)."""
    return _only_key_rules(t) and bool(t.time_index) and t.options.get("append_mode", "false").lower() != "true"


def keyed_append_target(t: TableDef) -> bool:
    """Whether ``t`` is an ordinary table whose only rule for an insert is its PRIMARY KEY."""
    return _only_key_rules(t) and bool(t.primary_key) and not t.time_index


def deterministic(frame: DataFrame) -> bool:
    """Whether ``frame``'s plan gives the same rows each time it runs (no ``random()``)."""
    return bool(frame._jdf.queryExecution().analyzed().deterministic())


def same_storage(source: ColumnType, target: ColumnType) -> bool:
    """Whether a value of ``source`` is stored as ``target`` stores it with no PostgreSQL rule in
    between (the same type and modifiers, or a widening integer/float cast)."""
    if source.exact_op is not None or source.div_min_scale is not None:
        return False
    if (source.pg.name, target.pg.name) in _WIDENING:
        return True
    return (source.pg.oid, source.length, source.precision, source.scale) == \
        (target.pg.oid, target.length, target.precision, target.scale)


@dataclass(frozen=True)
class Filled:
    """A target column the query does not give: its one default value (None: NULL), or the Spark
    SQL of a constant (``sql``: a time literal, which a Python value would put in Spark's zone)."""

    value: Any
    sql: str | None = None


def literal_default(value: Any) -> Filled | None:
    """A default value Spark can take as a literal, or None (the collected path handles it)."""
    if isinstance(value, datetime):  # a date subclass
        return None
    return Filled(value) if value is None or isinstance(value, _LITERAL_TYPES) else None


def storage_frame(df: DataFrame, t: TableDef, given: dict[str, int], filled: dict[str, Filled]) -> DataFrame:
    """``df``'s rows as ``t`` stores them: every column of ``t`` by name, cast to its Delta type;
    ``given`` maps a column to the position of the ``df`` column holding it, ``filled`` gives the
    others. A NULL in a NOT NULL column fails the job with PostgreSQL's 23502."""
    from pyspark.sql import functions as F  # noqa: N812

    source = df.columns
    out = []
    for c in t.columns:
        if c.name in given:
            value = F.col(quoted(source[given[c.name]]))
        elif filled[c.name].sql is not None:
            value = F.expr(filled[c.name].sql)
        else:
            value = F.lit(filled[c.name].value)
        value = value.cast(spark_type_sql(c.type))
        if c.not_null:
            value = F.when(value.isNull(), F.raise_error(F.lit(_not_null_message(t, c)))).otherwise(value)
        out.append(value.alias(c.name))
    return df.select(*out)


def _not_null_message(t: TableDef, c: ColumnDef) -> str:
    q = RAISED_QUOTE
    return (f"tidegate-sqlstate:23502:null value in column {q}{c.name}{q} of relation {q}{t.name}{q} "
            "violates not-null constraint")


def quoted(name: str) -> str:
    """``name`` as a Spark SQL identifier (backticks doubled: a client's name cannot end it)."""
    return "`" + name.replace("`", "``") + "`"


def append(frame: DataFrame, location: str, *, app: tuple[str, int] | None = None, token: str | None = None) -> int:
    """Append ``frame`` (see :func:`storage_frame`) to the Delta table at ``location`` as one
    commit; returns the rows written. Nothing is visible unless the commit succeeds: a failed or
    cancelled job leaves only unreferenced files (VACUUM removes them). ``app``: the commit's app
    transaction (id, version), as an idempotent writer records it; ``token``: its user metadata."""
    token = token or f"tidegate-append-{uuid.uuid4()}"
    confs = dict(WRITE_SPLITS)
    if app is not None:
        confs.update({"spark.databricks.delta.write.txnAppId": app[0], "spark.databricks.delta.write.txnVersion": str(app[1])})
    with durability.synced(location), _confs(frame.sparkSession, confs):
        (frame.write.format("delta").mode("append")
         .option("maxRecordsPerFile", FILE_ROWS)
         .option("userMetadata", token)
         .save(location))
    # The commit's own metrics, found by the token (other writers may have committed since).
    metrics = commit_metrics(location, token)
    if metrics is None:
        raise RuntimeError(f"the append to {location} committed but its log entry was not found")
    return metrics.get("numOutputRows", 0)


def append_new_keys(spark: Any, frame: DataFrame, t: TableDef, keys: list[str]) -> int | dict[str, Any]:
    """Append ``frame`` (see :func:`storage_frame`; deterministic: it runs twice) to the PRIMARY
    KEY table ``t`` when none of its keys is stored or repeated among its rows; else the first
    such key (a dict: the caller's 23505, as PostgreSQL reports it). One job counts the keys of
    both (a NULL key fails there with 23502 first, as in PostgreSQL), the second appends. The
    caller holds the table's lock: this gateway's other writers of keys check at commit under it."""
    from pyspark.sql import functions as F  # noqa: N812

    columns = [F.col(quoted(k)) for k in keys]
    stored = spark.read.format("delta").load(t.location).select(*columns)
    clash = (frame.select(*columns).unionAll(stored).groupBy(*columns).count()
             .where(F.col("count") > 1).select(*columns).limit(1).toArrow())
    if clash.num_rows:
        return clash.to_pylist()[0]
    return append(frame, t.location or "")


def repeated_key(rows: DataFrame, keys: list[str]) -> bool:
    """Whether two of ``rows`` have one non-NULL key (one job; a NULL key is left to the write's
    NOT NULL check, as PostgreSQL reports it)."""
    from pyspark.sql import functions as F  # noqa: N812

    columns = [F.col(quoted(k)) for k in keys]
    present = rows.select(*columns).where(" AND ".join(f"{quoted(k)} IS NOT NULL" for k in keys))
    return bool(present.groupBy(*columns).count().where(F.col("count") > 1).limit(1).count())


def _one_row_per_key(frame: DataFrame, keys: list[str], last: bool) -> DataFrame:
    """``frame`` with one row per key: the first or the last in the order Spark's partitions give,
    which is the order the collected path's rows have."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    position, rank = "__tg_position", "__tg_rank"
    order = F.col(position).desc() if last else F.col(position)
    window = Window.partitionBy(*[F.col(quoted(k)) for k in keys]).orderBy(order)
    return (frame.withColumn(position, F.monotonically_increasing_id())
            .withColumn(rank, F.row_number().over(window))
            .where(F.col(rank) == 1).drop(position, rank))


def append_skipping_existing(spark: Any, frame: DataFrame, t: TableDef, keys: list[str]) -> int:
    """``INSERT ... ON CONFLICT DO NOTHING`` into the PRIMARY KEY table ``t``: of the rows one key
    has in ``frame``, the first (in Spark's partition order, the collected path's) is kept, as
    PostgreSQL inserts it and then skips the others; rows whose key is stored are dropped; the rest
    are appended (one job). Returns the rows inserted. The caller holds the table's lock."""
    from pyspark.sql import functions as F  # noqa: N812

    stored = spark.read.format("delta").load(t.location).select(*[F.col(quoted(k)) for k in keys])
    rows = (_one_row_per_key(frame, keys, last=False).join(stored, keys, "left_anti")
            .select(*[F.col(quoted(c.name)) for c in t.columns]))
    return append(rows, t.location or "")


def upsert(spark: Any, frame: DataFrame, t: TableDef, keys: list[str]) -> int:
    """Insert ``frame`` (see :func:`storage_frame`) into the time-series table ``t`` as GreptimeDB
    does: a row replaces the stored row of its key (``keys``: the tags, NULL tags alike, and the
    time index), and of the rows one key has in ``frame`` the last wins, as on the collected path
    (engine.storage.dedupe_last: the order Spark's partitions give, which is the order the
    collected rows have). One Delta MERGE (:func:`merge`) on the table's current version; returns
    the rows written (inserted and replaced), the count the collected path reports."""
    source = f"tg_upsert_rows_{uuid.uuid4().hex}"
    _one_row_per_key(frame, keys, last=True).createOrReplaceTempView(source)
    try:
        on = " AND ".join(f"t.{quoted(k)} <=> s.{quoted(k)}" for k in keys)
        every = tuple(Assignment(c, f"s.{quoted(c.name)}") for c in t.columns)
        return merge(spark, t, "t", f"{quoted(source)} AS s", on,
                     [MergeClause(True, "update", None, every), MergeClause(False, "insert", None, every)])
    finally:
        spark.catalog.dropTempView(source)


@dataclass(frozen=True)
class Assignment:
    """``SET column = value`` of an UPDATE on Spark: the column and its value's Spark SQL."""

    column: ColumnDef
    value_sql: str


def rewrite(spark: Any, t: TableDef, kind: str, condition_sql: str | None,
            assignments: list[Assignment] = ()) -> int:
    """UPDATE (``kind`` "UPDATE") or DELETE the rows of ``t`` where ``condition_sql`` holds (all
    rows when None) with Delta Lake's own command, on a temp view over the table's current version;
    returns the rows it changed. Delta rewrites only the files holding such rows, records their
    change feed (update pre/post images, deletes) and checks its read against commits made
    meanwhile (a conflict is ``DELTA_CONCURRENT_*``: 40001, engine.errors). Values are cast to the
    columns' Delta types; NULL into a NOT NULL column fails with 23502 and changes nothing."""
    view = f"tg_rewrite_{uuid.uuid4().hex}"
    spark.read.format("delta").load(t.location).createOrReplaceTempView(view)
    try:
        where = f" WHERE {condition_sql}" if condition_sql is not None else ""
        if kind == "UPDATE":
            sets = ", ".join(f"{quoted(a.column.name)} = {_stored_value(t, a)}" for a in assignments)
            statement = f"UPDATE {quoted(view)} SET {sets}{where}"
        else:
            statement = f"DELETE FROM {quoted(view)}{where}"
        with durability.synced(t.location or ""):
            return int(spark.sql(statement).collect()[0][0])
    finally:
        spark.catalog.dropTempView(view)


def _stored_value(t: TableDef, a: Assignment) -> str:
    value = f"CAST(({a.value_sql}) AS {spark_type_sql(a.column.type)})"
    if a.column.not_null:  # coalesce evaluates the value once (random() stays one value)
        message = exp.Literal.string(_not_null_message(t, a.column)).sql(dialect="spark")
        value = f"coalesce({value}, raise_error({message}))"
    return value


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause of a MERGE on Spark: ``action`` "update", "delete" or "insert", its
    condition's Spark SQL (None: always) and, for update and insert, the columns it sets;
    ``by_source``: ``WHEN NOT MATCHED BY SOURCE`` (target rows no source row matches)."""

    matched: bool
    action: str
    condition_sql: str | None
    assignments: tuple[Assignment, ...] = ()
    by_source: bool = False


def merge(spark: Any, t: TableDef, alias: str, source_sql: str, on_sql: str, clauses: list[MergeClause]) -> int:
    """MERGE INTO ``t`` (as ``alias``) USING the relation ``source_sql`` ON ``on_sql`` with Delta
    Lake's own command; returns the rows inserted, updated and deleted. Delta applies the first
    clause whose condition holds, as PostgreSQL does; a target row two source rows change fails
    (21000, engine.errors) and changes nothing. Files, change feed and conflicts as :func:`rewrite`."""
    return _merge_metrics(spark, t, alias, source_sql, on_sql, clauses)["num_affected_rows"]


def _merge_metrics(spark: Any, t: TableDef, alias: str, source_sql: str, on_sql: str,
                   clauses: list[MergeClause]) -> dict[str, int]:
    """:func:`merge`, returning Delta's counts (``num_affected_rows``, ``num_updated_rows``,
    ``num_deleted_rows``, ``num_inserted_rows``)."""
    view = f"tg_merge_{uuid.uuid4().hex}"
    spark.read.format("delta").load(t.location).createOrReplaceTempView(view)
    try:
        whens = []
        for c in clauses:
            head = "WHEN NOT MATCHED BY SOURCE" if c.by_source else "WHEN MATCHED" if c.matched else "WHEN NOT MATCHED"
            if c.condition_sql is not None:
                head += f" AND ({c.condition_sql})"
            if c.action == "delete":
                whens.append(f"{head} THEN DELETE")
            elif c.action == "update":
                sets = ", ".join(f"{quoted(a.column.name)} = {_stored_value(t, a)}" for a in c.assignments)
                whens.append(f"{head} THEN UPDATE SET {sets}")
            else:
                names = ", ".join(quoted(a.column.name) for a in c.assignments)
                values = ", ".join(_stored_value(t, a) for a in c.assignments)
                whens.append(f"{head} THEN INSERT ({names}) VALUES ({values})")
        statement = (f"MERGE INTO {quoted(view)} AS {quoted(alias)} USING {source_sql} ON {on_sql} "
                     + " ".join(whens))
        with durability.synced(t.location or ""):
            row = spark.sql(statement).collect()[0].asDict()
        return {k: int(v or 0) for k, v in row.items()}
    finally:
        spark.catalog.dropTempView(view)


def sink_merge(spark: Any, frame: DataFrame, t: TableDef, keys: list[str], delete_sql: str | None,
               keep_unmatched: bool, app_id: str, version: int) -> tuple[int, int]:
    """A batching flow's sink commit on Spark (engine.flows.batch), the collected one's twin: the
    rows of ``frame`` (see :func:`storage_frame`; the last of a key wins) replace the sink rows of
    their key (``keys``, NULLs alike) or are added, and unless ``keep_unmatched`` the sink rows no
    new row matches are deleted (those where ``delete_sql`` holds, over alias ``t``, when given:
    the re-evaluated windows). One Delta MERGE carrying the app transaction (``app_id``,
    ``version``): Delta skips it when that version of the app already committed, and records it
    for the next replay check. Returns (rows written, rows deleted)."""
    source = f"tg_sink_rows_{uuid.uuid4().hex}"
    _one_row_per_key(frame, keys, last=True).createOrReplaceTempView(source)
    try:
        on = " AND ".join(f"t.{quoted(k)} <=> s.{quoted(k)}" for k in keys)
        every = tuple(Assignment(c, f"s.{quoted(c.name)}") for c in t.columns)
        clauses = [MergeClause(True, "update", None, every), MergeClause(False, "insert", None, every)]
        if not keep_unmatched:
            clauses.append(MergeClause(False, "delete", delete_sql, by_source=True))
        txn = {"spark.databricks.delta.write.txnAppId": app_id, "spark.databricks.delta.write.txnVersion": str(version)}
        with _confs(spark, txn):
            counts = _merge_metrics(spark, t, "t", f"{quoted(source)} AS s", on, clauses)
        return counts.get("num_updated_rows", 0) + counts.get("num_inserted_rows", 0), counts.get("num_deleted_rows", 0)
    finally:
        spark.catalog.dropTempView(source)


def reload_merge(spark: Any, frame: DataFrame, t: TableDef, app_id: str, version: int, token: str) -> dict[str, int]:
    """A refresh's commit on Spark (engine.refresh): the table ``t`` made equal to ``frame`` (its
    storage form; one row per key, no NULL key) with one Delta MERGE of the difference. Its source
    is a full outer join of ``frame`` with the table on the PRIMARY KEY keeping new keys ('I'),
    stored keys the snapshot lacks ('D') and rows whose other columns differ, null-safe ('U'), so
    Delta rewrites only the files holding changed rows and its change feed holds exactly the
    difference. (A MERGE of the whole snapshot with ``WHEN NOT MATCHED BY SOURCE THEN DELETE``
    rewrote every file even when nothing changed, with no change files: a feed reader saw every
    row deleted and inserted again.) The commit carries the app transaction (``app_id``,
    ``version``) and ``token`` as its user metadata (how a recovery finds its counts,
    :func:`commit_metrics`). Returns Delta's counts (``num_inserted_rows``, ``num_updated_rows``,
    ``num_deleted_rows``)."""
    keys = t.primary_key
    others = [c for c in t.columns if c.name not in keys]
    snapshot, stored = f"tg_reload_rows_{uuid.uuid4().hex}", f"tg_reload_table_{uuid.uuid4().hex}"
    frame.createOrReplaceTempView(snapshot)
    spark.read.format("delta").load(t.location).createOrReplaceTempView(stored)
    try:
        first = quoted(keys[0])
        joined = " AND ".join(f"n.{quoted(k)} = o.{quoted(k)}" for k in keys)
        changed = " AND ".join(f"n.{quoted(c.name)} <=> o.{quoted(c.name)}" for c in others) or "true"
        columns = ", ".join([f"coalesce(n.{quoted(k)}, o.{quoted(k)}) AS {quoted(k)}" for k in keys]
                            + [f"n.{quoted(c.name)} AS {quoted(c.name)}" for c in others])
        source = (f"(SELECT {columns}, CASE WHEN o.{first} IS NULL THEN 'I' WHEN n.{first} IS NULL THEN 'D' "
                  f"ELSE 'U' END AS {_OP} FROM {quoted(snapshot)} AS n FULL OUTER JOIN {quoted(stored)} AS o "
                  f"ON {joined} WHERE o.{first} IS NULL OR n.{first} IS NULL OR NOT ({changed})) AS s")
        on = " AND ".join(f"t.{quoted(k)} = s.{quoted(k)}" for k in keys)
        clauses = []
        if others:
            clauses.append(MergeClause(True, "update", f"s.{_OP} = 'U'",
                                       tuple(Assignment(c, f"s.{quoted(c.name)}") for c in others)))
        clauses += [MergeClause(True, "delete", f"s.{_OP} = 'D'"),
                    MergeClause(False, "insert", f"s.{_OP} = 'I'",
                                tuple(Assignment(c, f"s.{quoted(c.name)}") for c in t.columns))]
        confs = {"spark.databricks.delta.write.txnAppId": app_id, "spark.databricks.delta.write.txnVersion": str(version),
                 "spark.databricks.delta.commitInfo.userMetadata": token}
        with _confs(spark, confs):
            return _merge_metrics(spark, t, "t", source, on, clauses)
    finally:
        spark.catalog.dropTempView(snapshot)
        spark.catalog.dropTempView(stored)


def commit_metrics(location: str, token: str) -> dict[str, int] | None:
    """The operation metrics of the commit whose user metadata is ``token`` among the table's last
    100 commits, or None."""
    from deltalake import DeltaTable

    for entry in DeltaTable(location).history(100):
        if entry.get("userMetadata") == token:
            return {k: int(v) for k, v in (entry.get("operationMetrics") or {}).items()
                    if isinstance(v, int) or (isinstance(v, str) and v.isdigit())}
    return None


@contextlib.contextmanager
def _confs(spark: Any, confs: dict[str, str]) -> Iterator[None]:
    """``confs`` set on ``spark`` (a session of its own: its conf is no other statement's) inside
    the block, the previous values back after it."""
    saved = {k: spark.conf.get(k, None) for k in confs}
    try:
        for k, value in confs.items():
            spark.conf.set(k, value)
        yield
    finally:
        for k, value in saved.items():
            if value is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, value)


def _delta_table(spark: Any, location: str) -> Any:
    """Delta's Scala ``DeltaTable`` of ``location``: SQL on a path (delta.`...`) is off for clients
    (spark.sql.runSQLOnFiles, engine.spark), and OPTIMIZE / VACUUM take no temp view."""
    return spark._jvm.io.delta.tables.DeltaTable.forPath(spark._jsparkSession, location)


def optimize(spark: Any, location: str, target_bytes: int, *, full: bool) -> dict[str, int]:
    """Delta Lake's OPTIMIZE of the table at ``location``: its files under ``target_bytes`` (half
    of it unless ``full``) binned into files of about ``target_bytes``, written by the executors,
    one commit that changes no row (readers of any version see the same rows; a concurrent
    rewrite of the same files makes the later commit fail, Delta's optimistic concurrency).
    Returns Delta's metrics (``numFilesRemoved``, ``numFilesAdded``, ...)."""
    from pyspark.sql import DataFrame

    confs = {"spark.databricks.delta.optimize.maxFileSize": str(target_bytes),
             "spark.databricks.delta.optimize.minFileSize": str(target_bytes if full else target_bytes // 2)}
    with _confs(spark, confs), durability.synced(location):
        row = DataFrame(_delta_table(spark, location).optimize().executeCompaction(), spark).collect()[0]
    return {k: int(v) for k, v in row["metrics"].asDict().items() if isinstance(v, int)}


def vacuum(spark: Any, location: str, hours: float) -> None:
    """Delta Lake's VACUUM of the table at ``location``: the files no version within ``hours``
    needs are deleted (listed by the executors)."""
    from pyspark.sql import DataFrame

    confs = {"spark.databricks.delta.retentionDurationCheck.enabled": "false",
             # Delta's VACUUM lists the table's directories in this many tasks: Spark's 10,000 took
             # 18 s for one directory on 2 cores
             "spark.sql.sources.parallelPartitionDiscovery.parallelism": "8"}
    with _confs(spark, confs), durability.synced(location):
        DataFrame(_delta_table(spark, location).vacuum(float(hours)), spark).collect()
