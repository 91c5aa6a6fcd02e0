"""Row statements: INSERT (the in-process fast path for constant VALUES, and sources run on
Spark), UPDATE, DELETE and COPY FROM, with their rules (types, NOT NULL, keys, defaults,
RETURNING). MERGE (engine.merge) shares the helpers at the end of this module.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from catalog.store import ColumnDef, TableDef
from engine import constraints, ddl, pgoperators, spark as sparkmod, sparkwrite, ttl
from engine.resolver import node_name, param_index, StatementResolver
from engine import interactive
from engine.storage import (coerce_array, convert_batches, dedupe_last, duplicate_keys, key_text, python_value,
                            round_to_precision, storage_schema, storage_to_result, storage_type, WriteOp)
from tidegate import dialect, pgvalues, sqllex
from tidegate.dialect import Tidegate
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType, lookup_type_name, TEXT
from tidegate.results import CommandResult, CopyTarget, ResultField, RowStream
from tidegate.session import SessionInfo


class DmlStatements:
    """The dml statements of :class:`engine.executor.EngineSession` (a mixin: ``self`` is the session)."""

    def _eval_default_text(self, text: str, ctx: dict[str, Any]) -> Any:
        tree = _parse_default(text)
        return const_eval(tree, [], ctx)

    def _default_value(self, c: ColumnDef, ctx: dict[str, Any], info: SessionInfo) -> Any:
        if c.default is None:
            return None
        try:
            return self._eval_default_text(c.default, ctx)
        except NotConstant:
            pass
        self.engine.runtime.wait()

        def work() -> Any:
            tree = self._parse_one(f"SELECT {c.default}")
            tq, _ = self._translate(tree, [], info)
            table = sparkmod.collect_arrow(self.spark.sql(tq.spark_sql))
            return table.column(0)[0].as_py()

        return self._run(work, c.default)

    # -- INSERT ------------------------------------------------------------------------------

    def _insert_fast(self, sql: str, params: list[Any], info: SessionInfo) -> CommandResult | None:
        """INSERT INTO t [(cols)] VALUES (constants), ... without sqlglot or Spark."""
        ins = _read_fast_insert(sql, params)
        if ins is None:
            return None
        rows = ins.rows
        t, target_cols = self._fast_insert_target(ins, info)
        width = len(target_cols)
        for r in rows:
            if len(r) > width:
                raise SqlError("42601", "INSERT has more expressions than target columns")
            if len(r) < width and ins.columns is not None:
                raise SqlError("42601", "INSERT has more target columns than expressions")
        ctx = self._eval_context(info)
        columns_values: dict[str, list[Any]] = {c.name: [] for c in target_cols}
        for r in rows:
            for k, c in enumerate(target_cols):
                v = r[k] if k < len(r) else _DEFAULT
                if isinstance(v, _TypedLiteral):
                    if not v.fits(c.type):
                        return None
                    v = v.value
                columns_values[c.name].append(v)
        data = self._build_rows(t, columns_values, len(rows), ctx, info)
        op = self._plan_insert(t, data, None, info)
        self._write(op)
        return CommandResult(f"INSERT 0 {data.num_rows}")

    def _describe_insert_fast(self, sql: str, param_types: Sequence[ColumnType | None],
                              info: SessionInfo) -> list[ColumnType] | None:
        """Parameter types of an INSERT that :meth:`_insert_fast` can run, without sqlglot.

        Drivers Parse and Describe every INSERT they send (psycopg, JDBC), so a large VALUES
        list would otherwise be parsed by sqlglot once per statement just to learn "no rows".
        A parameter takes the type of the column it is inserted into, as in PostgreSQL.
        """
        highest = sqllex.max_param_index(sql)
        markers = [_ParamMarker(k) for k in range(1, highest + 1)]
        try:
            ins = _read_fast_insert(sql, markers)
            if ins is None:
                return None
            _, target_cols = self._fast_insert_target(ins, info)
        except SqlError:
            return None  # the slow path reports it with PostgreSQL's wording
        rows = ins.rows
        inferred: dict[int, ColumnType] = {}
        for row in rows:
            for c, v in zip(target_cols, row):
                if isinstance(v, _ParamMarker):
                    inferred.setdefault(v.number, c.type)
            if any(isinstance(v, _ParamMarker) for v in row[len(target_cols):]):
                return None
        used = max(inferred, default=0)
        if set(inferred) != set(range(1, used + 1)):
            return None  # gaps in the numbering: leave the details to the full analysis
        return fill_params(param_types, inferred, used)

    def _fast_insert_target(self, ins: _FastInsert, info: SessionInfo) -> tuple[TableDef, list[ColumnDef]]:
        """The table and target columns of a fast INSERT."""
        name, schema, cols = ins.name, ins.schema, ins.columns
        t = self.catalog.resolve_table(name, schema, info.search_path)
        if t.kind == "view":
            raise SqlError("42809", f'cannot insert into view "{t.name}"')
        if t.kind == "sequence":
            raise SqlError("42809", f'cannot change sequence "{t.name}"')
        self.catalog.roles.check_table(info, t, "INSERT")
        return t, target_columns(t, cols)

    def _build_rows(self, t: TableDef, values: dict[str, list[Any] | pa.Array], n: int, ctx: dict[str, Any],
                    info: SessionInfo) -> pa.Table:
        """Full storage-form rows of ``t`` from given column values, defaults for the rest."""
        arrays = []
        overriding = self._overriding
        for c in t.columns:
            given = values.get(c.name)
            if given is not None and c.name == t.time_index:
                given = _epoch_values(given, c)
            if c.identity is not None and given is not None:
                explicit = (not isinstance(given, list)) or any(v is not _DEFAULT for v in given)
                if explicit and overriding == "user":
                    given = None if not isinstance(given, list) else [_DEFAULT] * len(given)
                elif explicit and c.identity == "a" and overriding != "system":
                    raise SqlError("428C9", f'cannot insert a non-DEFAULT value into column "{c.name}"',
                                   detail=f'Column "{c.name}" is an identity column defined as GENERATED ALWAYS.',
                                   hint="Use OVERRIDING SYSTEM VALUE to override.")
            seq = self._default_sequence(c, info) if c.default is not None and (
                given is None or (isinstance(given, list) and any(v is _DEFAULT for v in given))) else None
            if seq is not None:  # nextval() per row: the rows' values reserved in one transaction
                if given is None:
                    arr = fast_array(self._next_values(seq, n, info), c)
                else:
                    fresh = iter(self._next_values(seq, sum(1 for v in given if v is _DEFAULT), info))
                    arr = fast_array([next(fresh) if v is _DEFAULT else v for v in given], c)
                arrays.append(arr)
                continue
            if given is None:
                dv = python_value(self._default_value(c, ctx, info), c.type, c.name) if c.default is not None else None
                arr = pa.array([dv] * n, type=storage_type(c.type)) if dv is not None else pa.nulls(n, storage_type(c.type))
            elif isinstance(given, list):
                if any(v is _DEFAULT for v in given):
                    dv = self._default_value(c, ctx, info) if c.default is not None else None
                    given = [dv if v is _DEFAULT else v for v in given]
                arr = fast_array(given, c)
            else:
                arr = coerce_array(given, c.type, c.name)
            arrays.append(round_to_precision(arr, c.type))  # literals and defaults too, as PostgreSQL
        table = pa.Table.from_arrays(arrays, schema=storage_schema(t.columns))
        self._check_not_null(t, table)
        return table

    def _not_null_error(self, t: TableDef, c: ColumnDef, columns: Sequence[pa.Array | pa.ChunkedArray]) -> SqlError:
        """23502 with PostgreSQL's detail: the first failing row, all of its columns."""
        idx = pc.index(pc.is_null(columns[t.columns.index(c)]), True).as_py()
        values = [columns[i][idx].as_py() for i in range(len(columns))]
        shown = ", ".join("null" if v is None else _text_of_value(v, col.type) for v, col in zip(values, t.columns))
        return SqlError("23502", f'null value in column "{c.name}" of relation "{t.name}" violates not-null constraint',
                        detail=f"Failing row contains ({shown}).")

    def _check_not_null(self, t: TableDef, data: pa.Table | pa.RecordBatch) -> None:
        for i, c in enumerate(t.columns):
            if c.not_null and data.column(i).null_count:
                raise self._not_null_error(t, c, data.columns)

    def _keys(self, t: TableDef) -> list[str]:
        if t.time_index:
            return list(dict.fromkeys(t.primary_key + [t.time_index]))
        return list(t.primary_key)

    def _append_mode(self, t: TableDef) -> bool:
        return t.options.get("append_mode", "false").lower() == "true"

    def _plan_insert(self, t: TableDef, data: pa.Table, on_conflict: exp.OnConflict | None,
                     info: SessionInfo | None = None) -> WriteOp:
        """The write for inserting ``data`` under ``t``'s key semantics and ON CONFLICT."""
        keys = self._keys(t)
        uniques = t.unique_sets()
        info = info or SessionInfo()
        if uniques or any(c["type"] == "f" for c in t.constraints):
            if on_conflict is not None:
                self._refuse_conflict_with_constraints(t, on_conflict, keys)
            constraints.check_unique(self, t, data, info)
            constraints.check_references(self, t, data, info)
        if not keys or (t.time_index and self._append_mode(t)):
            if on_conflict is not None and not keys:
                raise SqlError("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
            return WriteOp(t, "append", data, unique_sets=uniques)
        if t.time_index and on_conflict is None:
            return WriteOp(t, "upsert", dedupe_last(data, keys), keys=keys)
        # Unique keys (PostgreSQL semantics).
        if on_conflict is None:
            dups = duplicate_keys(data, keys)
            if dups.num_rows:
                raise self._unique_error(t, dups.slice(0, 1).to_pylist()[0])
            existing = self.store.existing_keys(t.location, keys, data)
            taken = self._keys_in_transaction(t, keys, existing, data)
            if taken:
                raise self._unique_error(t, dict(zip(keys, taken[0])))
            # checked again when it commits, against what others committed meanwhile
            return WriteOp(t, "append", data, keys=keys, unique=True, unique_sets=uniques)
        conflict_cols = conflict_columns(on_conflict)
        if conflict_cols and sorted(conflict_cols) != sorted(keys):
            raise SqlError("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
        if on_conflict.args.get("constraint") is not None:
            cname = node_name(on_conflict.args["constraint"])
            if cname != f"{t.name}_pkey":
                raise SqlError("42704", f'constraint "{cname}" for table "{t.name}" does not exist')
        if does_nothing(on_conflict):
            # Keep the first of in-batch duplicates, then drop rows whose key exists.
            positions = pa.array(range(data.num_rows), pa.int64())
            firsts = data.select(keys).append_column("__tg_i", positions).group_by(keys, use_threads=False).aggregate(
                [("__tg_i", "min")]).column("__tg_i_min").combine_chunks()
            data = data.take(firsts.sort())
            existing = self.store.existing_keys(t.location, keys, data)
            if existing.num_rows:
                hits = existing.append_column("__tg_hit", pa.repeat(True, existing.num_rows))
                joined = data.select(keys).append_column("__tg_i", pa.array(range(data.num_rows), pa.int64())).join(
                    hits, keys=keys, join_type="left outer")
                keep = pc.filter(joined.column("__tg_i"), pc.is_null(joined.column("__tg_hit"))).combine_chunks()
                data = data.take(keep.sort())
            if uniques:  # the rows left after skipping PRIMARY KEY conflicts must not break a UNIQUE
                constraints.check_unique(self, t, data, info)
            return WriteOp(t, "append", data, keys=keys, skip_existing=True, unique_sets=uniques)
        dups = duplicate_keys(data, keys)
        if dups.num_rows:
            raise SqlError("21000", "ON CONFLICT DO UPDATE command cannot affect row a second time",
                           hint="Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
        updates = {}
        for assignment in on_conflict.expressions or []:
            target = node_name(assignment.this.this if isinstance(assignment.this, exp.Column) else assignment.this)
            if t.column(target) is None:
                raise SqlError("42703", f'column "{target}" of relation "{t.name}" does not exist')
            updates[target] = _datafusion_expr(assignment.expression, t)
        if on_conflict.args.get("where") is not None:
            raise SqlError("0A000", "ON CONFLICT DO UPDATE ... WHERE is not supported")
        return WriteOp(t, "merge", data, keys=keys, updates=updates)

    def _refuse_conflict_with_constraints(self, t: TableDef, on_conflict: exp.OnConflict, keys: list[str]) -> None:
        """ON CONFLICT on a table with UNIQUE constraints: only ``ON CONFLICT (primary key) DO NOTHING``."""
        cols = conflict_columns(on_conflict)
        nothing = does_nothing(on_conflict)
        cname = node_name(on_conflict.args["constraint"]) if on_conflict.args.get("constraint") is not None else None
        for name, ucols in t.unique_sets():
            if (cols and sorted(cols) == sorted(ucols)) or cname == name:
                raise SqlError("0A000", f'ON CONFLICT on unique constraint "{name}" is not supported',
                               hint="ON CONFLICT works on the PRIMARY KEY; make the unique columns the primary key, "
                                    "or check for the row before inserting.")
        if not (keys and nothing and (sorted(cols) == sorted(keys) or cname == f"{t.name}_pkey")):
            raise SqlError("0A000", f'ON CONFLICT on table "{t.name}", which has UNIQUE constraints, supports only '
                                    "ON CONFLICT (primary key columns) DO NOTHING",
                           hint="Name the primary key columns as the conflict target and use DO NOTHING, or drop "
                                "the UNIQUE constraints.")

    def _keys_in_transaction(self, t: TableDef, keys: list[str], committed: pa.Table,
                             candidates: pa.Table) -> list[tuple]:
        """Which key tuples of ``candidates`` the table holds as this transaction sees it: the
        ``committed`` ones it has not deleted or updated away, and those its own writes added."""
        ops = self._pending_ops(t)
        present = {tuple(r.values()) for r in committed.select(keys).to_pylist()}
        wanted = {tuple(r.values()) for r in candidates.select(keys).to_pylist()}
        if ops:
            for op in ops:
                data = op.data if isinstance(op.data, pa.Table) else None
                if data is None:
                    continue
                if op.kind == "overwrite":
                    present = set()
                if op.kind in ("delete", "update") and op.keys == keys:
                    prefix = "__tg_old_" if op.kind == "update" else ""
                    present -= {tuple(r.values()) for r in data.select([prefix + k for k in keys]).to_pylist()}
                if op.kind in ("append", "upsert", "update", "merge", "overwrite"):
                    added = {tuple(r.values()) for r in data.select(keys).to_pylist()}
                    present |= added & wanted
        return sorted(present & wanted, key=lambda k: [str(v) for v in k])

    def _unique_error(self, t: TableDef, row: dict[str, Any]) -> SqlError:
        return SqlError("23505", f'duplicate key value violates unique constraint "{t.name}_pkey"',
                        detail=f"{key_text(row)} already exists.")

    def _insert(self, tree: exp.Insert, params: list[Any], info: SessionInfo) -> CommandResult:
        target = tree.this
        cols: list[str] | None = None
        if isinstance(target, exp.Schema):
            cols = [node_name(e) for e in target.expressions]
            target = target.this
        t = self._resolve_target(target, info)
        conflict = tree.args.get("conflict")
        self.catalog.roles.check_table(info, t, "INSERT", *(
            ["UPDATE"] if conflict is not None and "UPDATE" in str(conflict.args.get("action") or "").upper() else []),
            *(["SELECT"] if tree.args.get("returning") is not None else []))
        target_cols = target_columns(t, cols)
        source = tree.expression
        ctx = self._eval_context(info)
        data: pa.Table | None = None
        if isinstance(source, exp.Values):
            rows = []
            try:
                for tup in source.expressions:
                    items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
                    rows.append([_DEFAULT if is_default(e) else const_eval(e, params, ctx) for e in items])
                values: dict[str, Any] = {c.name: [] for c in target_cols}
                for r in rows:
                    if len(r) > len(target_cols):
                        raise SqlError("42601", "INSERT has more expressions than target columns")
                    if len(r) < len(target_cols) and cols is not None:
                        raise SqlError("42601", "INSERT has more target columns than expressions")
                    for k, c in enumerate(target_cols):
                        values[c.name].append(r[k] if k < len(r) else _DEFAULT)
                data = self._build_rows(t, values, len(rows), ctx, info)
            except NotConstant:
                data = None
        conflict = tree.args.get("conflict")
        if data is None:
            if source is None:
                data = self._build_rows(t, {}, 1, ctx, info)
            else:
                # a large result of a blind append is written by Spark (engine.sparkwrite)
                skipping = conflict is not None and self._does_nothing_on_key(t, conflict)
                on_spark = (self._pending is None and tree.args.get("returning") is None
                            and ((conflict is None and (sparkwrite.blind_append_target(t) or sparkwrite.upsert_target(t)))
                                 or ((conflict is None or skipping) and sparkwrite.keyed_append_target(t))))
                got = self._insert_source_via_spark(t, target_cols, source, params, info, ctx, on_spark, skipping)
                if isinstance(got, int):
                    return CommandResult(f"INSERT 0 {got}")
                data = got
        # ON CONFLICT decides from what is stored: it holds the table's write lock as UPDATE does, so
        # a racing upsert of the same key waits and then sees this one (the right count, no lost update).
        with self._rewriting(t) if conflict is not None else nullcontext():
            op = self._plan_insert(t, data, conflict, info)
            rows_written = op.data.num_rows if isinstance(op.data, pa.Table) else 0
            stored = self._write(op)
        if stored is not None and op.skip_existing:
            rows_written = stored
        returning = tree.args.get("returning")
        result_rows = None
        if returning is not None:
            affected = op.data
            if op.kind == "merge" and self._pending is None and isinstance(op.data, pa.Table) and op.data.num_rows:
                affected = self.store.rows_with_keys(t.location, op.keys, op.data)
            elif op.kind == "merge" and self._pending:
                # the rows the upsert leaves: computed now (reading the table does it)
                position = len(self._pending) - 1
                self.engine.runtime.wait()
                self._run(lambda: self.table_view(t, StatementResolver(self, info)))
                affected = self._pending[position].data
            result_rows = self._returning(t, affected, returning, params, info)
        return CommandResult(f"INSERT 0 {rows_written}", rows=result_rows)

    def _does_nothing_on_key(self, t: TableDef, conflict: exp.OnConflict) -> bool:
        """Whether ``conflict`` is ``ON CONFLICT [(the primary key)] DO NOTHING`` (other forms, and
        their errors, are the collected path's: :meth:`_plan_insert`)."""
        named = conflict_columns(conflict)
        others = any(conflict.args.get(a) for a in ("constraint", "where", "index_predicate", "expressions", "duplicate"))
        return does_nothing(conflict) and not others and (not named or sorted(named) == sorted(self._keys(t)))

    def _insert_source_via_spark(self, t: TableDef, target_cols: list[ColumnDef], source: exp.Expression,
                                 params: list[Any], info: SessionInfo, ctx: dict[str, Any],
                                 on_spark: bool = False, skip_existing: bool = False) -> pa.Table | int:
        """The rows ``source`` computes, in ``t``'s storage form; or, with ``on_spark`` and a large
        result that needs no conversion, the count of rows Spark wrote (engine.sparkwrite);
        ``skip_existing``: ON CONFLICT DO NOTHING on the primary key."""
        refuse_sequence_functions(source)
        if isinstance(source, exp.Values) and any(is_default(e) for tup in source.expressions for e in tup.expressions):
            raise SqlError("0A000", "DEFAULT mixed with non-constant expressions in VALUES is not supported")
        unknown: set[int] = set()  # VALUES columns of string literals and NULLs only: PostgreSQL's unknown type
        if isinstance(source, exp.Values):
            rows = [row.expressions if isinstance(row, exp.Tuple) else [row] for row in source.expressions]
            unknown = {k for k in range(len(target_cols))
                       if all(k < len(r) and (isinstance(r[k], exp.Null) or (isinstance(r[k], exp.Literal)
                                                                           and r[k].is_string)) for r in rows)}
            source = _typed_values(source, target_cols)
        self.engine.runtime.wait()

        def work() -> tuple[pa.Table, list[ColumnType | None]] | int:
            tq, _ = self._translate(source, params, info)
            df = self.spark.sql(tq.spark_sql)
            if on_spark and not unknown:
                frame = self._spark_append_frame(t, target_cols, df, list(tq.output_types or []), ctx, info)
                written = self._write_on_spark(t, frame, skip_existing) if frame is not None else None
                if written is not None:
                    return written
            table = sparkmod.collect_arrow(df)
            return table, list(tq.output_types or [None] * table.num_columns)

        got = self._run(work)
        if isinstance(got, int):
            return got
        result, types = got
        if result.num_columns > len(target_cols):
            raise SqlError("42601", "INSERT has more expressions than target columns")
        values: dict[str, Any] = {}
        for i, c in enumerate(target_cols[:result.num_columns]):
            src_type = types[i] if i < len(types) and i not in unknown else None
            if not (c.name == t.time_index and src_type is not None and _epoch_scale(c) is not None
                    and src_type.pg.name in ("int2", "int4", "int8")):  # epoch integers: _build_rows
                _check_assignable(c, src_type)
            col = result.column(i)
            if src_type is not None:
                col = storage_to_result(col, src_type)
            values[c.name] = col
        return self._build_rows(t, values, result.num_rows, ctx, info)

    def _write_on_spark(self, t: TableDef, frame: Any, skip_existing: bool) -> int | None:
        """Insert ``frame`` (``t``'s storage rows) with the Spark writer ``t``'s rules need;
        returns the rows written, or None when the rows must be collected (a PRIMARY KEY check
        over a plan that is not deterministic). Keyed writes hold the table's lock: this gateway's
        own inserts check their keys and append under it, and Delta counts neither a blind append
        beside a MERGE nor one beside another append as a conflict."""
        if sparkwrite.blind_append_target(t):
            return sparkwrite.append(frame, t.location or "")
        keys = self._keys(t)
        if not (sparkwrite.upsert_target(t) or skip_existing or sparkwrite.deterministic(frame)):
            return None
        with self.store.write_lock(t.location or ""):
            if sparkwrite.upsert_target(t):
                return sparkwrite.upsert(self.spark, frame, t, keys)
            if skip_existing:
                return sparkwrite.append_skipping_existing(self.spark, frame, t, keys)
            done = sparkwrite.append_new_keys(self.spark, frame, t, keys)
        if isinstance(done, dict):
            raise self._unique_error(t, done)
        return done

    def _spark_append_frame(self, t: TableDef, target_cols: list[ColumnDef], df: Any,
                            types: list[ColumnType | None], ctx: dict[str, Any], info: SessionInfo) -> Any:
        """``df`` as ``t``'s storage rows for a Spark append, or None when the collected path must
        write it: a small result, a column whose value needs a conversion, a default per row."""
        if len(df.columns) != len(target_cols):
            return None  # too many expressions (42601) or too few: the collected path reports and fills
        for c, src in zip(target_cols, sparkwrite.result_types(df, types)):
            if c.identity is not None or not sparkwrite.same_storage(src, c.type):
                return None
        if not sparkwrite.worth_writing_on_spark(df, info):
            return None
        given = {c.name: i for i, c in enumerate(target_cols)}
        filled: dict[str, sparkwrite.Filled] = {}
        for c in t.columns:
            if c.name in given:
                continue
            if c.identity is not None or (c.default is not None and self._default_sequence(c, info) is not None):
                return None
            try:  # a default Spark would compute (now(), random()) keeps the collected path
                value = None if c.default is None else python_value(self._eval_default_text(c.default, ctx),
                                                                       c.type, c.name)
            except NotConstant:
                return None
            fill = sparkwrite.literal_default(value)
            if fill is None:
                return None
            filled[c.name] = fill
        return sparkwrite.storage_frame(df, t, given, filled)

    def _returning(self, t: TableDef, data: pa.Table | None, returning: exp.Returning, params: list[Any],
                   info: SessionInfo) -> RowStream:
        """Evaluate RETURNING over the affected rows (storage form ``data``)."""
        data = data if isinstance(data, pa.Table) else storage_schema(t.columns).empty_table()
        exprs = returning.expressions
        for e in exprs:
            for table in (tb for q in e.find_all(exp.Select) for tb in q.find_all(exp.Table)):
                if isinstance(table.this, exp.Identifier) and node_name(table.this) == t.name \
                        and (not table.db or node_name(table.args["db"]) == t.schema):
                    # the affected rows stand for the table here; PostgreSQL's subquery reads the
                    # whole table as it was before the statement
                    raise SqlError("0A000", f'a subquery in RETURNING that reads the target table "{t.name}" '
                                   "is not supported",
                                   hint="Read the table in a statement of its own before this one, in the same "
                                        "transaction.")
        simple: list[tuple[str, int]] = []
        for e in exprs:
            if isinstance(e, exp.Star):
                simple.extend((c.name, i) for i, c in enumerate(t.columns))
                continue
            node = e.this if isinstance(e, exp.Alias) else e
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                name = node_name(node.this)
                idx = next((i for i, c in enumerate(t.columns) if c.name == name), None)
                if idx is None:
                    raise SqlError("42703", f'column "{name}" does not exist')
                simple.append((e.alias_or_name if isinstance(e, exp.Alias) else name, idx))
                continue
            if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
                simple.extend((c.name, i) for i, c in enumerate(t.columns))
                continue
            simple = []
            break
        else:
            fields = [ResultField(n, t.columns[i].type) for n, i in simple]
            arrays = [storage_to_result(data.column(i), t.columns[i].type) for _, i in simple]
            table = pa.Table.from_arrays(arrays, names=[f"c{k}" for k in range(len(arrays))]) if arrays else pa.table({})
            return RowStream(fields, convert_batches(iter(table.to_batches()), fields))
        # General expressions: evaluate on Spark over the affected rows registered as the table.
        from engine.translate import ResolvedRelation

        self.engine.runtime.wait()

        def work() -> RowStream:
            view = f"tg_returning_{self.id}_{next(view_ids)}"
            schema = sparkmod.spark_schema_ddl([(c.name, c.type) for c in t.columns])
            from pyspark.sql.types import _parse_datatype_string

            sdf = (self.spark.createDataFrame(data, schema=_parse_datatype_string(schema)) if data.num_rows
                   else self._empty_frame(t))
            sdf.createOrReplaceTempView(view)
            rel = ResolvedRelation(t.schema, t.name, view, [(c.name, c.type) for c in t.columns], None)
            resolver = StatementResolver(self, info, overrides={t.name: rel, f"{t.schema}.{t.name}": rel})
            select = exp.Select(expressions=[e.copy() for e in exprs]).from_(exp.Table(this=exp.to_identifier(t.name)))
            tq, _ = self._translate(select, params, info, resolver)
            df = self.spark.sql(tq.spark_sql)
            stream = self._rowstream(df, tq.output_names, tq.output_types, tq.spark_sql)
            batches = list(stream.batches)  # materialised: the temp view is dropped next
            self.spark.catalog.dropTempView(view)
            return RowStream(stream.fields, iter(batches))

        return self._run(work)

    # -- UPDATE / DELETE ---------------------------------------------------------------------

    def _scan_with_flag(self, t: TableDef, alias: str, where: exp.Expression | None, extra: list[exp.Expression],
                        params: list[Any], info: SessionInfo, matched_only: bool,
                        joined: list[exp.Expression] | None = None) -> tuple[pa.Table, int]:
        """Rows of ``t`` (storage form) + ``__tg_m`` (the WHERE holds) + ``extra`` values, from one
        snapshot; with ``matched_only`` just the rows the WHERE selects. Returns (rows, version).

        ``joined``: the FROM items of UPDATE ... FROM / USING items of DELETE ... USING. The WHERE
        then joins them with the target; each target row comes back once, with the values of its
        first join partner (PostgreSQL uses one partner, which one unspecified)."""
        if joined:
            outer = _joined_scan(t, alias, where, extra, joined)
        else:
            flag = exp.func("COALESCE", _where_operand(where), exp.false()) if where is not None else exp.true()
            inner = exp.Select(expressions=[exp.Star(), exp.alias_(flag, "__tg_m")]).from_(
                exp.Table(this=exp.to_identifier(t.name), db=exp.to_identifier(t.schema),
                          alias=exp.TableAlias(this=exp.to_identifier(alias))))
            outer_exprs: list[exp.Expression] = [exp.column(c.name, quoted=True) for c in t.columns]
            outer_exprs.append(exp.column("__tg_m"))
            for k, e in enumerate(extra):
                value = e.copy() if matched_only else exp.Case(ifs=[exp.If(this=exp.column("__tg_m"), true=e.copy())])
                outer_exprs.append(exp.alias_(value, f"__tg_new_{k}"))
            outer = exp.Select(expressions=outer_exprs).from_(
                exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias))))
            if matched_only:
                outer = outer.where(exp.column("__tg_m"))
        self.engine.runtime.wait()

        def work() -> tuple[pa.Table, int]:
            tq, resolver = self._translate(outer, params, info)
            table = sparkmod.collect_arrow(self.spark.sql(tq.spark_sql))
            snap = resolver.snapshots.get(t.location)
            version = snap.version if snap else self.store.version(t.location)
            n = len(t.columns)
            cols = [table.column(i) for i in range(table.num_columns)]
            for i, c in enumerate(t.columns):
                if cols[i].type != storage_type(c.type):
                    cols[i] = coerce_array(cols[i], c.type, c.name)
            if tq.output_types:
                for i in range(n + 1, table.num_columns):
                    ty = tq.output_types[i] if i < len(tq.output_types) else None
                    if ty is not None:
                        cols[i] = storage_to_result(cols[i], ty)
            out = pa.Table.from_arrays(cols, names=table.column_names)
            if joined:  # one row per target row (its row id is the last column)
                out = _first_per_key(out, out.column_names[-1]).drop_columns([out.column_names[-1]])
            return out, version

        return self._run(work)

    def _scan_by_lookup(self, t: TableDef, target: exp.Expression, where: exp.Where | None,
                        sets: list[tuple[ColumnDef, exp.Expression]], params: list[Any],
                        info: SessionInfo) -> tuple[pa.Table, int] | None:
        """:meth:`_scan_with_flag`'s matched rows (``matched_only``) read by the interactive path
        (engine/interactive.py) instead of Spark, when the WHERE is one that path answers and
        every SET value is a constant or a parameter (stored by the column's assignment rules,
        as INSERT stores it); None: Spark scans."""
        if where is None or not interactive.enabled(info):
            return None
        values: list[Any] = []
        for c, e in sets:
            value = _constant_value(e, params)
            if value is _NOT_CONSTANT:
                return None
            values.append(fast_array([value], c))  # the value's errors, matched rows or not
        select = exp.Select(expressions=[exp.Star()]).from_(target.copy()).where(where.this.copy())
        lookup = interactive.shape(self, select, info)
        plan = interactive.bind(self, lookup, params) if lookup is not None else None
        if plan is None:
            return None
        found = interactive.rows(plan)
        count = found.num_rows
        columns = [found.column(c.name) for c in t.columns] + [pa.repeat(True, count)]
        columns += [pa.repeat(v[0], count) for v in values]
        names = [c.name for c in t.columns] + ["__tg_m"] + [f"__tg_new_{k}" for k in range(len(values))]
        return pa.Table.from_arrays(columns, names=names), plan.snapshot.version

    def _match_columns(self, t: TableDef) -> list[str] | None:
        """Columns identifying a row for a merge: the key, else every column (None: not hashable)."""
        keys = self._keys(t)
        if keys:
            return keys
        if any(c.type.is_array for c in t.columns):
            return None
        return [c.name for c in t.columns]

    def _update(self, tree: exp.Update, params: list[Any], info: SessionInfo) -> CommandResult:
        """UPDATE: Spark evaluates WHERE and SET over one snapshot; the changed rows are merged back
        (delta-rs merge matched on the key, or on all old values for key-less tables), so only the
        files holding them are rewritten and the change feed records update pre/post images."""
        t = self._resolve_target(tree.this, info)
        tree = name_target_columns(tree, t)
        reads = tree.args.get("where") is not None or tree.args.get("returning") is not None or any(
            eq.expression.find(exp.Column) is not None for eq in tree.expressions)
        self.catalog.roles.check_table(info, t, "UPDATE", *(["SELECT"] if reads else []))
        with self._rewriting(t):
            return self._retrying(self._update_rows, tree, t, params, info)

    def _update_rows(self, tree: exp.Update, t: TableDef, params: list[Any], info: SessionInfo) -> CommandResult:
        target = tree.this
        alias = target.alias or t.name
        sets = set_targets(t, tree.expressions)
        where = tree.args.get("where")
        match_cols = self._match_columns(t)
        matched_only = match_cols is not None
        joined = _from_items(tree.args.get("from_") or tree.args.get("from"))
        if joined and tree.args.get("returning") is not None:
            raise _returning_with_join("UPDATE ... FROM")
        if joined and not matched_only:
            raise SqlError("0A000", f'UPDATE ... FROM on "{t.name}" is not supported: it has no primary key and '
                           "array columns, so its rows cannot be told apart",
                           hint="Add a PRIMARY KEY, or update with a WHERE ... IN (subquery) instead of FROM.")
        scanned = None
        if matched_only and not joined and tree.args.get("returning") is None:
            scanned = self._scan_by_lookup(t, target, where, sets, params, info)
        if scanned is None and not joined and tree.args.get("returning") is None:
            done = self._rewrite_on_spark("UPDATE", t, alias, where, sets, params, info)
            if done is not None:
                return CommandResult(f"UPDATE {done}")
        table, version = scanned or self._scan_with_flag(t, alias, where.this if where is not None else None,
                                                         [exp.null() if is_default(e) else e for _, e in sets],
                                                         params, info, matched_only, joined)
        n = len(t.columns)
        mask = (pc.fill_null(table.column(n).combine_chunks(), False) if table.num_rows
                else pa.array([], pa.bool_()))
        old = table.select(list(range(n))).combine_chunks()
        if not matched_only:
            old_matched = old.filter(mask)
        else:
            old_matched = old
        count = old_matched.num_rows
        ctx = {"now": datetime.now(timezone.utc)}
        new_cols = [old_matched.column(i) for i in range(n)]
        for k, (c, e) in enumerate(sets):
            idx = t.columns.index(c)
            seq = self._default_sequence(c, info) if is_default(e) else None
            if seq is not None:  # SET col = DEFAULT of a sequence: a value per row
                new_cols[idx] = fast_array(self._next_values(seq, count, info), c)
            elif is_default(e):
                dv = python_value(self._default_value(c, ctx, info), c.type, c.name)
                new_cols[idx] = pa.array([dv] * count, type=storage_type(c.type))
            else:
                raw = table.column(n + 1 + k)
                raw = raw.filter(mask) if not matched_only else raw
                new_cols[idx] = coerce_array(raw, c.type, c.name)
        new = pa.Table.from_arrays(new_cols, schema=storage_schema(t.columns))
        if count:
            self._check_not_null(t, new)
            changed = {c.name for c, _ in sets}
            constraints.check_unique(self, t, new, info, moving=old_matched, changed=changed)
            constraints.check_references(self, t, new, info, changed=changed)
            constraints.check_referenced(self, t, old_matched, info, remaining=new)
            keys = self._keys(t)
            if keys and any(c.name in keys for c, _ in sets):
                dups = duplicate_keys(new, keys)
                if dups.num_rows:
                    raise self._unique_error(t, dups.slice(0, 1).to_pylist()[0])
                clash = self.store.existing_keys(t.location, keys, new)
                if clash.num_rows:
                    moved = old_matched.select(keys).append_column("__tg_moved", pa.repeat(True, count))
                    clash = clash.join(moved, keys=keys, join_type="left outer")
                    clash = clash.filter(pc.is_null(clash.column("__tg_moved")))
                    if clash.num_rows:
                        raise self._unique_error(t, clash.select(keys).slice(0, 1).to_pylist()[0])
            if match_cols is None:
                full = [pc.if_else(mask, _scatter(new.column(i).combine_chunks(), mask, storage_type(c.type)),
                                   old.column(i)) for i, c in enumerate(t.columns)]
                data = pa.Table.from_arrays(full, schema=storage_schema(t.columns))
                self._write(WriteOp(t, "overwrite", data, base_version=version))
            else:
                source = new
                for m in match_cols:
                    source = source.append_column(f"__tg_old_{m}", old_matched.column(m))
                if not self._keys(t):
                    source = dedupe_last(source, [f"__tg_old_{m}" for m in match_cols])
                # null-safe: key-less tables, and a time-series table's tags (NULL is a tag value)
                self._write(WriteOp(t, "update", source, keys=match_cols, null_safe=not self._keys(t) or bool(t.time_index),
                                    base_version=version,
                                    unique_sets=[u for u in t.unique_sets() if changed & set(u[1])]))
        result_rows = None
        if tree.args.get("returning") is not None:
            result_rows = self._returning(t, new, tree.args["returning"], params, info)
        return CommandResult(f"UPDATE {count}", rows=result_rows)

    def _spark_rewritable(self, t: TableDef, info: SessionInfo) -> set[str] | None:
        """The columns an UPDATE / MERGE on Spark may not set (keys, UNIQUE), or None when no
        statement may change ``t`` there: ``tidegate.spark_writes = off``, inside a transaction block, a TTL, constraints to check
        (FOREIGN KEY, CHECK, UNIQUE constraint) or a foreign key referencing it, a column name
        Delta's commands cannot take."""
        if info.settings.get(sparkwrite.SETTING, "auto") == "off" or self._pending is not None \
                or t.kind != "table" or not t.location or t.constraints or not ttl.of(t).forever \
                or not sparkwrite.spark_safe_names(t) or constraints.referencing(self, t):
            return None
        return set(self._keys(t)) | {c for _, cols in t.unique_sets() for c in cols}

    def _rewrite_on_spark(self, kind: str, t: TableDef, alias: str, where: exp.Where | None,
                          sets: list[tuple[ColumnDef, exp.Expression]], params: list[Any],
                          info: SessionInfo) -> int | None:
        """An UPDATE or DELETE run by Delta Lake's own command on Spark (engine.sparkwrite.rewrite):
        the rows it changes never pass through the gateway. Returns the rows changed, or None when
        the collected path must run it: inside a transaction block; a table with a TTL, a FOREIGN
        KEY, or one referenced by one; SET of a key, UNIQUE, identity or DEFAULT column; a
        subquery; a value that needs one of PostgreSQL's conversions; a non-deterministic value;
        a small table or few rows to change (``tidegate.spark_writes``: ``auto`` goes to Spark
        for a table over 8 MB of which a million rows or more match)."""
        guarded = self._spark_rewritable(t, info)
        if guarded is None or any(c.name in guarded or c.identity is not None or is_default(e) for c, e in sets):
            return None
        condition = where.this if where is not None else None
        expressions = [e for _, e in sets] + ([condition] if condition is not None else [])
        if sparkwrite.has_subquery(expressions):
            return None
        self.engine.runtime.wait()

        def work() -> int | None:
            from engine.translate import translate_row_expressions

            resolver = StatementResolver(self, info)
            with self.store.gate.reading():
                rows = self.spark.table(self.table_view(t, resolver))
            auto = info.settings.get(sparkwrite.SETTING, "auto") == "auto"
            if not sparkwrite.worth_writing_on_spark(rows, info):
                return None  # off; or auto and a small table
            columns = [(c.name, c.type) for c in t.columns]
            translated = translate_row_expressions(expressions, columns, params, resolver, view_name=alias)
            computed = rows.selectExpr(*[sql for sql, _ in translated]) if translated else rows
            types = sparkwrite.stored_types(computed, [ty for _, ty in translated])
            if types is None:
                return None
            assignments = [sparkwrite.assignment(c, e, value_sql, value_type)
                           for (c, e), (value_sql, _), value_type in zip(sets, translated, types)]
            if None in assignments:
                return None
            condition_sql = translated[-1][0] if condition is not None else None
            if auto and not sparkwrite.enough_rows_to_rewrite(rows, condition_sql):
                return None
            return sparkwrite.rewrite(self.spark, t, kind, condition_sql, assignments)

        return self._run(work)

    def _delete(self, tree: exp.Delete, params: list[Any], info: SessionInfo) -> CommandResult:
        """DELETE: Spark finds the rows over one snapshot; they are removed by a delta-rs merge
        matched on the key (or on all values for key-less tables): only their files change."""
        t = self._resolve_target(tree.this, info)
        tree = name_target_columns(tree, t)
        reads = tree.args.get("where") is not None or tree.args.get("returning") is not None
        self.catalog.roles.check_table(info, t, "DELETE", *(["SELECT"] if reads else []))
        with self._rewriting(t):
            return self._retrying(self._delete_rows, tree, t, params, info)

    def _delete_rows(self, tree: exp.Delete, t: TableDef, params: list[Any], info: SessionInfo) -> CommandResult:
        target = tree.this
        alias = target.alias or t.name
        where = tree.args.get("where")
        returning = tree.args.get("returning")
        joined = list(tree.args.get("using") or [])
        if where is None and returning is None and not joined and not self._pending_ops(t) \
                and not constraints.referencing(self, t) and ttl.of(t).forever:
            base = self.store.version(t.location)
            count = self._row_count(t)
            if count:
                self._write(WriteOp(t, "overwrite", storage_schema(t.columns).empty_table(), base_version=base))
            return CommandResult(f"DELETE {count}")
        match_cols = self._match_columns(t)
        matched_only = match_cols is not None
        if joined and returning is not None:
            raise _returning_with_join("DELETE ... USING")
        if joined and not matched_only:
            raise SqlError("0A000", f'DELETE ... USING on "{t.name}" is not supported: it has no primary key and '
                           "array columns, so its rows cannot be told apart",
                           hint="Add a PRIMARY KEY, or delete with a WHERE ... IN (subquery) instead of USING.")
        scanned = None
        if matched_only and not joined and returning is None:
            scanned = self._scan_by_lookup(t, target, where, [], params, info)
        if scanned is None and not joined and returning is None:
            done = self._rewrite_on_spark("DELETE", t, alias, where, [], params, info)
            if done is not None:
                return CommandResult(f"DELETE {done}")
        table, version = scanned or self._scan_with_flag(t, alias, where.this if where is not None else None, [],
                                                         params, info, matched_only, joined)
        n = len(t.columns)
        rows_all = table.select(list(range(n))).combine_chunks()
        mask = (pc.fill_null(table.column(n).combine_chunks(), False) if table.num_rows
                else pa.array([], pa.bool_()))
        deleted = rows_all if matched_only else rows_all.filter(mask)
        count = deleted.num_rows
        if count:
            constraints.check_referenced(self, t, deleted, info)
            if match_cols is None:
                self._write(WriteOp(t, "overwrite", rows_all.filter(pc.invert(mask)), base_version=version))
            else:
                source = deleted.select(match_cols)
                source = dedupe_last(source, match_cols)
                # null-safe: key-less tables, and a time-series table's tags (NULL is a tag value)
                self._write(WriteOp(t, "delete", source, keys=match_cols, null_safe=not self._keys(t) or bool(t.time_index),
                                    base_version=version))
        result_rows = None
        if returning is not None:
            result_rows = self._returning(t, deleted, returning, params, info)
        return CommandResult(f"DELETE {count}", rows=result_rows)

    # -- COPY --------------------------------------------------------------------------------

    def copy_target(self, sql: str, info: SessionInfo | None = None) -> CopyTarget:
        info = info or SessionInfo()
        self._interrupt.clear()  # a cancel sent before this began is not for it
        toks = sqllex.scan(sql)
        parts, i = sqllex.split_ident_chain(toks, 1) if toks and toks[0].is_word("copy") else ([], 0)
        cols: list[str] | None = None
        if i < len(toks) and toks[i].text == "(":
            listed = sqllex.name_list(toks, i)
            parts, cols, i = (parts, [t.ident or "" for t in listed[0]], listed[1]) if listed else ([], None, i)
        if not 1 <= len(parts) <= 2 or i + 1 >= len(toks) or not (toks[i].is_word("from") and toks[i + 1].is_word("stdin")):
            raise SqlError("0A000", "only COPY table [(columns)] FROM STDIN is supported here")
        schema, name = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
        t = self.catalog.resolve_table(name, schema, info.search_path)
        if t.kind == "view":
            raise SqlError("42809", f'cannot copy to view "{t.name}"')
        if t.kind == "sequence":
            raise SqlError("42809", f'cannot copy to sequence "{t.name}"')
        self.catalog.roles.check_table(info, t, "INSERT")
        target_cols = target_columns(t, cols)
        return CopyTarget(t.schema, t.name, [ResultField(c.name, c.type, t.oid, t.columns.index(c) + 1) for c in target_cols])

    def copy_from(self, target: CopyTarget, batches: Iterator[pa.RecordBatch], info: SessionInfo | None = None) -> int:
        """Write the client's rows in ONE commit; if ``batches`` raises, nothing is committed."""
        info = info or SessionInfo()
        self._interrupt.clear()  # a cancel sent before this began is not for it
        t = self.catalog.get_table(target.schema, target.table)
        if t is None:
            raise SqlError("42P01", f'relation "{target.table}" does not exist')
        ctx = self._eval_context(info)
        given = [f.name for f in target.fields]
        for name in given:
            if t.column(name) is None:
                raise SqlError("42703", f'column "{name}" of relation "{t.name}" does not exist')
        # Constant defaults for the columns the client does not send, computed once.
        fills: dict[str, Any] = {}
        sequences: dict[str, TableDef] = {}
        with pgvalues.use_session_zone(info.timezone):
            for c in t.columns:
                if c.name not in given:
                    seq = self._default_sequence(c, info)
                    if seq is not None:
                        sequences[c.name] = seq
                        continue
                    fills[c.name] = python_value(self._default_value(c, ctx, info), c.type, c.name) if c.default is not None else None
        schema = storage_schema(t.columns)
        counter = [0]

        def convert() -> Iterator[pa.RecordBatch]:
            for batch in batches:
                n = batch.num_rows
                if n == 0:
                    continue
                arrays = []
                with pgvalues.use_session_zone(info.timezone):  # may run on the writer's thread
                    for c in t.columns:
                        if c.name in given:
                            arr = coerce_array(batch.column(given.index(c.name)), c.type, c.name)
                        elif c.name in sequences:  # a block of values per batch, one SQLite transaction
                            arr = fast_array(self._next_values(sequences[c.name], n, info), c)
                        else:
                            v = fills[c.name]
                            arr = pa.nulls(n, storage_type(c.type)) if v is None else pa.array([v] * n, type=storage_type(c.type))
                        arrays.append(arr)
                out = pa.RecordBatch.from_arrays(arrays, schema=schema)
                self._check_not_null(t, out)
                counter[0] += n
                yield out

        keys = self._keys(t)
        needs_whole = (bool(keys) and not (t.time_index and self._append_mode(t))) or bool(t.constraints) \
            or any(i["unique"] for i in t.indexes)
        if needs_whole or self._pending is not None:
            data = pa.Table.from_batches(list(convert()), schema=schema)
            if data.num_rows == 0:
                return 0
            op = self._plan_insert(t, data, None, info)
            self._write(op)
            return data.num_rows
        failure: list[BaseException] = []

        def guarded() -> Iterator[pa.RecordBatch]:
            try:
                yield from convert()
            except BaseException as exc:
                failure.append(exc)
                raise

        reader = pa.RecordBatchReader.from_batches(schema, guarded())
        try:
            self.store.apply(WriteOp(t, "append", reader))
        except Exception:
            if failure:  # the client's data or our validation failed: report that, not the writer's wrapper
                raise failure[0] from None
            raise
        return counter[0]

    # -- describe ----------------------------------------------------------------------------


# Temp view names are unique across sessions: a pooled Spark session keeps its views.
view_ids = itertools.count(1)


class NotConstant(Exception):
    """An expression the Python evaluator cannot fold (it needs Spark)."""


_DEFAULT = object()  # the DEFAULT keyword in a VALUES row


def _where_operand(where: exp.Expression) -> exp.Expression:
    """An UPDATE's or DELETE's WHERE condition where the scan computes it as a column: still
    checked as PostgreSQL checks a WHERE (42804 for a non-boolean, a literal read as boolean)."""
    operand = exp.paren(where.copy())
    operand.meta[pgoperators.BOOLEAN_CONTEXT] = "WHERE"
    return operand


def _first_per_key(data: pa.Table, key: str) -> pa.Table:
    """The first row of each value of column ``key``, in their original order."""
    if data.num_rows <= 1:
        return data
    positions = pa.array(range(data.num_rows), pa.int64())
    firsts = pa.table({key: data.column(key), "__tg_i": positions}).group_by(key, use_threads=False).aggregate(
        [("__tg_i", "min")]).column("__tg_i_min").combine_chunks()
    return data.take(firsts.sort()) if len(firsts) != data.num_rows else data


def set_targets(t: TableDef, assignments: list[exp.Expression]) -> list[tuple[ColumnDef, exp.Expression]]:
    """The ``SET col = expr, ...`` of UPDATE and MERGE's UPDATE, checked as PostgreSQL checks it."""
    sets: list[tuple[ColumnDef, exp.Expression]] = []
    for eq in assignments:
        col_node = eq.this
        name = node_name(col_node.this if isinstance(col_node, exp.Column) else col_node)
        c = t.column(name)
        if c is None:
            raise SqlError("42703", f'column "{name}" of relation "{t.name}" does not exist')
        if any(c is prev for prev, _ in sets):
            raise SqlError("42601", f'multiple assignments to same column "{name}"')
        if c.identity == "a" and not is_default(eq.expression):
            raise SqlError("428C9", f'column "{name}" can only be updated to DEFAULT',
                           detail=f'Column "{name}" is an identity column defined as GENERATED ALWAYS.')
        sets.append((c, eq.expression))
    return sets


def _returning_with_join(statement: str) -> SqlError:
    return SqlError("0A000", f"RETURNING in {statement} is not supported",
                    hint="Run the statement without RETURNING, then SELECT the rows it changed.")


def _from_items(from_: exp.Expression | None) -> list[exp.Expression]:
    """The items of UPDATE's FROM clause (a From node: the first item carries the rest as joins)."""
    if from_ is None:
        return []
    first = from_.this.copy()
    joins = first.args.get("joins") or []
    first.set("joins", None)
    return [first, *joins]


def row_id_column() -> exp.Expression:
    """A per-row id Spark assigns while it scans (unique within one query): tells rows apart."""
    from engine.pgfunctions import INTERNAL

    node = exp.Anonymous(this="monotonically_increasing_id", expressions=[])
    node.meta[INTERNAL] = True
    return node


def name_target_columns(tree: exp.Expression, t: TableDef) -> exp.Expression:
    """Prepare an UPDATE / DELETE / MERGE tree for the rewrites that build its scans: unquoted
    names folded to lower case as PostgreSQL folds them (an alias written ``DBT_INTERNAL_DEST``
    is ``dbt_internal_dest``), and target columns written with the table's qualified name
    (``s.t.col``, ``"db"."s"."t".col``) referred to by the table's own name, the one the scans
    give it. Without an alias PostgreSQL lets either form name the target."""
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
    tree = normalize_identifiers(tree, dialect=Tidegate)
    target = tree.this
    if isinstance(target, exp.Table) and not target.alias:
        for col in tree.find_all(exp.Column):
            if col.args.get("db") is not None and col.table == t.name and col.text("db") == t.schema:
                col.set("db", None)
                col.set("catalog", None)
    return tree


def _joined_scan(t: TableDef, alias: str, where: exp.Expression | None, extra: list[exp.Expression],
                 joined: list[exp.Expression]) -> exp.Select:
    """SELECT target columns, TRUE, extra values, row id FROM (target + row id) AS alias, joined...
    WHERE where: the target rows UPDATE ... FROM / DELETE ... USING act on, once per join partner."""
    target = exp.Subquery(
        this=exp.Select(expressions=[exp.Star(), exp.alias_(row_id_column(), "__tg_rid")]).from_(
            exp.Table(this=exp.to_identifier(t.name), db=exp.to_identifier(t.schema))),
        alias=exp.TableAlias(this=exp.to_identifier(alias)))
    exprs: list[exp.Expression] = [exp.column(c.name, table=alias, quoted=True) for c in t.columns]
    exprs.append(exp.alias_(exp.true(), "__tg_m"))
    exprs.extend(exp.alias_(e.copy(), f"__tg_new_{k}") for k, e in enumerate(extra))
    exprs.append(exp.alias_(exp.column("__tg_rid", table=alias), "__tg_rid"))
    select = exp.Select(expressions=exprs).from_(target)
    joins = []
    for item in joined:
        joins.append(item.copy() if isinstance(item, exp.Join) else exp.Join(this=item.copy()))
    select.set("joins", joins)
    if where is not None:
        select = select.where(where.copy())
    return select


def is_default(e: exp.Expression) -> bool:
    return (isinstance(e, exp.Var) and e.name.upper() == "DEFAULT") or (
        isinstance(e, exp.Column) and not e.table and isinstance(e.this, exp.Identifier)
        and not e.this.quoted and e.this.this.upper() == "DEFAULT")


def fill_params(given: Sequence[ColumnType | None], inferred: dict[int, ColumnType], count: int = 0) -> list[ColumnType]:
    size = max(len(given), count)
    out = []
    for i in range(size):
        t = given[i] if i < len(given) else None
        out.append(t if t is not None else inferred.get(i + 1, ColumnType(TEXT)))
    return out


def _epoch_scale(c: ColumnDef) -> tuple[int, int] | None:
    """GreptimeDB's unit for an integer written to a timestamp TIME INDEX column, as (multiplier,
    divisor) to microseconds: TIMESTAMP(0) seconds, TIMESTAMP / TIMESTAMP(1..3) milliseconds (its
    default precision), (4..6) microseconds, (7..9) nanoseconds. None: not a timestamp column."""
    if c.type.is_array or c.type.pg.name not in ("timestamp", "timestamptz"):
        return None
    p = c.type.precision
    if p == 0:
        return 1_000_000, 1
    if p is None or p <= 3:
        return 1_000, 1
    if p <= 6:
        return 1, 1
    return 1, 1_000


def _epoch_values(given: list[Any] | pa.Array | pa.ChunkedArray, c: ColumnDef) -> list[Any] | pa.Array:
    """A time-series table's time index takes integers as epoch values in its unit
    (:func:`_epoch_scale`); everything else is left to PostgreSQL's input rules. Nanoseconds are
    rounded (half up) to the microseconds Delta stores."""
    scale = _epoch_scale(c)
    if scale is None:
        return given
    mul, div = scale
    tz = timezone.utc if c.type.pg.name == "timestamptz" else None

    def micros(v: int) -> int:
        return v * mul if div == 1 else (v + div // 2) // div

    if isinstance(given, list):
        if not any(type(v) is int for v in given):
            return given
        out = []
        for v in given:
            if type(v) is int:  # not bool
                try:
                    v = datetime(1970, 1, 1, tzinfo=tz) + timedelta(microseconds=micros(v))
                except OverflowError:
                    raise SqlError("22008", "timestamp out of range",
                                   detail=f'{v} is not an epoch value column "{c.name}" can hold.') from None
            out.append(v)
        return out
    if not pa.types.is_integer(given.type):
        return given
    us = [None if v is None else micros(v) for v in given.to_pylist()]
    try:
        arr = pa.array(us, pa.int64())
        return arr.cast(pa.timestamp("us", tz="UTC" if tz else None))
    except (OverflowError, pa.ArrowInvalid):
        raise SqlError("22008", "timestamp out of range") from None


def _check_assignable(c: ColumnDef, src: ColumnType | None) -> None:
    """PostgreSQL refuses assigning a typed text expression to a non-text column (42804)."""
    if src is None:
        return
    target = c.type.pg.name
    text_like = ("text", "varchar", "bpchar", "name")
    if src.pg.name in text_like and target not in text_like + ("json", "jsonb", "uuid", "interval", "unknown"):
        raise SqlError("42804", f'column "{c.name}" is of type {c.type.sql()} but expression is of type {src.sql()}',
                       hint="You will need to rewrite or cast the expression.")
    numeric = ("int2", "int4", "int8", "float4", "float8", "numeric")
    if src.pg.name in numeric and target in ("bool", "date", "timestamp", "timestamptz", "time", "bytea"):
        raise SqlError("42804", f'column "{c.name}" is of type {c.type.sql()} but expression is of type {src.sql()}',
                       hint="You will need to rewrite or cast the expression.")


def _scatter(values: pa.Array, mask: pa.Array, typ: pa.DataType) -> pa.Array:
    """Place ``values`` (one per true in ``mask``) at the true positions; nulls elsewhere."""
    if not len(values):
        return pa.nulls(len(mask), typ)
    ordinal = pc.subtract(pc.cumulative_sum(pc.cast(mask, pa.int64())), 1)
    return pc.take(values, pc.if_else(mask, ordinal, pa.scalar(None, pa.int64())))


# The types a VALUES row's string literal is read as before Spark unifies the rows (without a
# scale: the assignment checks it). Text, intervals, times, json ... stay strings: their storage
# form is read from the text by _build_rows.
_VALUES_CASTS = {"int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real",
                 "float8": "double precision", "numeric": "numeric", "bool": "boolean", "date": "date",
                 "timestamp": "timestamp", "timestamptz": "timestamptz"}


def target_columns(t: TableDef, cols: list[str] | None) -> list[ColumnDef]:
    """The columns an INSERT names (all of ``t``'s when none): 42703 for an unknown one, 42701 twice."""
    if cols is None:
        return list(t.columns)
    out = []
    seen = set()
    for name in cols:
        c = t.column(name)
        if c is None:
            raise SqlError("42703", f'column "{name}" of relation "{t.name}" does not exist')
        if name in seen:
            raise SqlError("42701", f'column "{name}" specified more than once')
        seen.add(name)
        out.append(c)
    return out


def _typed_values(values: exp.Values, columns: list[ColumnDef]) -> exp.Values:
    """INSERT ... VALUES: each row's string literals take their target column's type, as
    PostgreSQL assigns every row to the target columns (a row ``('2024-01-01 00:00+00')`` beside a
    row ``(timestamptz '...' + interval '5 s')`` is two timestamptz values, not text and a timestamp)."""
    values = values.copy()
    for row in values.expressions:
        items = row.expressions if isinstance(row, exp.Tuple) else [row]
        for e, c in zip(items, columns):
            name = _VALUES_CASTS.get(c.type.pg.name) if not c.type.is_array else None
            constant = e.this if isinstance(e, exp.Neg) else e
            if name is not None and isinstance(e, exp.Literal) and e.is_string:
                e.replace(exp.Cast(this=e.copy(), to=exp.DataType.build(name, dialect=Tidegate)))
            elif c.type.pg.name in ("float4", "float8") and isinstance(constant, exp.Literal) \
                    and not constant.is_string and not constant.name.isdigit():
                # 3.4e38 into a float column is that float (PostgreSQL's assignment cast), not a numeric
                e.replace(exp.Cast(this=e.copy(), to=exp.DataType.build(name, dialect=Tidegate)))
    return values


def fast_array(values: list[Any], c: ColumnDef) -> pa.Array:
    """Literal texts/Python values -> the storage array of ``c`` (vectorised for the common types)."""
    t = c.type
    name = t.pg.name
    if not t.is_array and name in ("int2", "int4", "int8", "float4", "float8") and all(type(v) is str or v is None for v in values):
        arr = pgvalues.cast_number_texts(pa.array(values, pa.string()),
                                         pa.int64() if name.startswith("int") else pa.float64())
        if arr is not None:
            try:
                return coerce_array(arr, t, c.name)
            except SqlError:
                pass  # out of the column's range: the value's own input error, below
    if not t.is_array and name in ("int2", "int4", "int8") and all(type(v) is int or v is None for v in values):
        try:
            return coerce_array(pa.array(values, pa.int64()), t, c.name)
        except OverflowError:
            pass
    if not t.is_array and name == "text" and all(type(v) is str or v is None for v in values):
        return pa.array(values, pa.string())
    if not t.is_array and name in ("timestamp", "timestamptz") and all(type(v) is str or v is None for v in values):
        try:
            arr = pc.cast(pa.array(values, pa.string()), pa.timestamp("us"))
            return coerce_array(arr, t, c.name)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    return pa.array([python_value(v, t, c.name) for v in values], type=storage_type(t))


# CAST('s' AS REGCLASS) as sqlglot renders a DEFAULT's regclass literal
_SEQ_FUNCTIONS = frozenset({"nextval", "currval", "setval", "lastval"})


def conflict_columns(on_conflict: exp.OnConflict) -> list[str]:
    """The columns named by ``ON CONFLICT (a, b)`` ([] without a list)."""
    return [node_name(e.this.this if isinstance(e, exp.Ordered) else e.this if isinstance(e, exp.Column) else e)
            for e in (on_conflict.args.get("conflict_keys") or [])]


def does_nothing(on_conflict: exp.OnConflict) -> bool:
    action = on_conflict.args.get("action")
    return bool(on_conflict.args.get("nothing")) or (action is not None and "NOTHING" in action.name.upper())


def refuse_sequence_functions(tree: exp.Expression) -> None:
    """Sequence functions run in constant queries, INSERT ... VALUES and column defaults; not
    inside queries Spark evaluates (they would need a round trip per row)."""
    for node in tree.find_all(exp.Anonymous):
        if node.name.lower() in _SEQ_FUNCTIONS:
            raise SqlError("0A000", f"{node.name.lower()}() in a query that reads tables (or computes with it) is not supported",
                           hint=f"Call it alone (SELECT {node.name.lower()}(...)), in INSERT ... VALUES, or as a column DEFAULT.")


@dataclass
class _FastInsert:
    """``INSERT INTO [schema.]name [(columns)] VALUES (literals), ...`` as read from its tokens."""

    schema: str | None
    name: str
    columns: list[str] | None
    rows: list[list[Any]]


def _read_fast_insert(sql: str, params: list[Any]) -> _FastInsert | None:
    """The literal rows of a plain ``INSERT ... VALUES``; None if anything else appears (the full
    path then reads the statement). Literals: numbers (signed), strings (E'', U&'', N'' too),
    ``TYPE 'text'``, ``literal::type``, NULL / TRUE / FALSE / DEFAULT, and ``$n``."""
    take = functools.partial(next, sqllex.iter_tokens(sql, significant=True), None)
    first, second = take(), take()
    if first is None or second is None or not first.is_word("insert") or not second.is_word("into"):
        return None
    names = []
    t = take()
    while t is not None and t.ident is not None and len(names) < 2:
        names.append(t.ident)
        t = take()
        if t is None or t.text != ".":
            break
        t = take()
    if not names or t is None:
        return None
    columns = None
    if t.text == "(":
        columns = []
        while (t := take()) is not None and t.ident is not None:
            columns.append(t.ident)
            t = take()
            if t is None or t.text != ",":
                break
        if t is None or t.text != ")":
            return None
        t = take()
    if t is None or not t.is_word("values"):
        return None
    rows = _scan_values(sql, t.end, params)
    if rows is None:
        return None
    return _FastInsert(names[0] if len(names) == 2 else None, names[-1], columns, rows)


def _scan_values(sql: str, pos: int, params: list[Any]) -> list[list[Any]] | None:
    """Rows of literal VALUES starting at ``pos`` (a value per match of the lexer's
    :data:`tidegate.sqllex.LITERAL`); None if anything else appears."""
    rows: list[list[Any]] = []
    n = len(sql)
    match = sqllex.LITERAL.match
    while True:
        while pos < n and sql[pos].isspace():
            pos += 1
        if pos >= n or sql[pos] != "(":
            return None
        pos += 1
        row: list[Any] = []
        while True:
            m = match(sql, pos)
            if not m:
                return None
            pos = m.end()
            value: Any
            text = m.group("s") or m.group("ts")
            if text is not None:
                value = sqllex.string_value(text)
            elif m.group("n") is not None:
                value = _number(m.group("n"))
            elif m.group("w") is not None:
                w = m.group("w").lower()
                value = None if w == "null" else True if w == "true" else False if w == "false" else _DEFAULT
            else:
                if m.group("c") is not None:
                    return None  # a cast parameter: its type comes from the cast, the full analysis knows it
                k = int(m.group("p"))
                if not 1 <= k <= len(params):
                    raise SqlError("42P02", f"there is no parameter ${k}")
                value = params[k - 1]
            spelled = [name for name in (m.group("t"), m.group("c")) if name is not None]
            if spelled:
                if value is _DEFAULT:
                    return None
                value = _TypedLiteral(spelled, value)
                if value.pg is None:
                    return None
            row.append(value)
            if pos < n and sql[pos] == ",":
                pos += 1
                continue
            if pos < n and sql[pos] == ")":
                pos += 1
                break
            return None
        rows.append(row)
        while pos < n and sql[pos].isspace():
            pos += 1
        if pos < n and sql[pos] == ",":
            pos += 1
            continue
        rest = sql[pos:].strip()
        if rest in ("", ";"):
            return rows
        return None


class _TypedLiteral:
    """``TYPE 'text'`` or ``literal::type`` in a fast INSERT: stored as is when the column has that type."""

    __slots__ = ("pg", "value")

    def __init__(self, spelled: list[str], value: Any) -> None:
        types = {lookup_type_name(name) for name in spelled}
        self.pg = types.pop() if len(types) == 1 else None  # TYPE 'x'::other: leave it to the full path
        self.value = value

    def fits(self, column: ColumnType) -> bool:
        """Whether storing the literal's text in ``column`` means what PostgreSQL's cast would."""
        if column.is_array or self.pg is None:
            return False
        names = {self.pg.name, column.pg.name}
        return len(names) == 1 or names == {"timestamp", "timestamptz"}


class _ParamMarker:
    """Stands in for parameter $number while an INSERT is described (its value is not known yet)."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number


_NOT_CONSTANT = object()


def _constant_value(node: exp.Expression, params: list[Any]) -> Any:
    """A SET value that is a constant or a parameter, as :func:`fast_array` stores it (the form a
    fast INSERT reads); _NOT_CONSTANT for anything else (an expression, DEFAULT, a cast)."""
    n = param_index(node)
    if n is not None:
        return params[n - 1] if 1 <= n <= len(params) else _NOT_CONSTANT
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else _number(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return _number("-" + node.this.this)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    return _NOT_CONSTANT


def _number(text: str) -> int | Decimal:
    """A numeric literal as PostgreSQL types it: integer when it has no point/exponent, else numeric."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return Decimal(text)


def _text_of_value(v: Any, t: ColumnType) -> str:
    if isinstance(v, datetime):
        return v.isoformat(sep=" ").replace("+00:00", "+00")
    if isinstance(v, bool):
        return "t" if v else "f"
    if t.pg.name == "time" and isinstance(v, int):
        return _micros_to_time(v).isoformat()
    return str(v)


_DEFAULT_CACHE: dict[str, exp.Expression] = {}


def _parse_default(text: str) -> exp.Expression:
    tree = _DEFAULT_CACHE.get(text)
    if tree is None:
        tree = dialect.parse_one(f"SELECT {text}").expressions[0]
        _DEFAULT_CACHE[text] = tree
    return tree


_NOW_FUNCS = {"NOW", "CURRENT_TIMESTAMP", "TRANSACTION_TIMESTAMP", "STATEMENT_TIMESTAMP", "CLOCK_TIMESTAMP", "LOCALTIMESTAMP"}


def const_eval(e: exp.Expression, params: Sequence[Any], ctx: dict[str, Any]) -> Any:
    """Fold a constant expression in Python; NotConstant when it needs Spark."""
    if isinstance(e, exp.Paren):
        return const_eval(e.this, params, ctx)
    if isinstance(e, exp.Literal):
        return e.this if e.is_string else _number(e.this)
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Boolean):
        return bool(e.this)
    if isinstance(e, exp.Neg):
        v = const_eval(e.this, params, ctx)
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            return -v
        raise NotConstant()
    if isinstance(e, (exp.Parameter, exp.Placeholder)):
        k = param_index(e)
        if k is None or not 1 <= k <= len(params):
            raise SqlError("42P02", f"there is no parameter ${k}")
        return params[k - 1]
    if isinstance(e, (exp.CurrentTimestamp,)) or (isinstance(e, exp.Anonymous) and e.name.upper() in _NOW_FUNCS and not e.expressions):
        return ctx.setdefault("now", datetime.now(timezone.utc))
    if isinstance(e, exp.CurrentDate):
        return ctx.setdefault("now", datetime.now(timezone.utc)).date()
    if isinstance(e, (exp.Cast, exp.TryCast)):
        inner = const_eval(e.this, params, ctx)
        to = ddl.type_from_sqlglot(e.to)
        value = python_value(inner, to, "?")
        if to.pg.name == "time" and value is not None:
            return _micros_to_time(value)
        return value
    if isinstance(e, exp.Array):
        return [const_eval(x, params, ctx) for x in e.expressions]
    if isinstance(e, exp.Anonymous) and e.name.lower() in _SEQ_FUNCTIONS and "sequences" in ctx:
        args = []
        for a in e.expressions:
            if isinstance(a, exp.Cast) and a.to.sql("postgres").lower() in ("regclass", "text", "varchar"):
                a = a.this  # 'name'::regclass: the name (resolved by the call)
            args.append(const_eval(a, params, ctx))
        return ctx["sequences"](e.name, args)
    raise NotConstant()


def _micros_to_time(us: int) -> Any:
    from datetime import time as dtime

    if us >= 86_400_000_000:
        us = 86_400_000_000 - 1
    s, frac = divmod(us, 1_000_000)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return dtime(h, m, sec, frac)


def _datafusion_expr(e: exp.Expression, t: TableDef) -> str:
    """ON CONFLICT DO UPDATE SET expression -> DataFusion SQL over target ``t`` and source ``s``."""
    tree = exp.Paren(this=e.copy())
    for col in list(tree.find_all(exp.Column)):
        qualifier = col.table.lower() if col.table else ""
        name = node_name(col.this)
        if t.column(name) is None:
            raise SqlError("42703", f'column "{name}" does not exist')
        alias = "s" if qualifier == "excluded" else "t"
        col.replace(exp.column(name, table=alias, quoted=True))
    if any(isinstance(n, (exp.Subquery, exp.Select)) for n in tree.walk()):
        raise SqlError("0A000", "subqueries in ON CONFLICT DO UPDATE are not supported")
    return tree.sql("postgres")
