"""What a backend (catalog evaluator, engine) hands the gateway for one statement.

Rows travel as Arrow record batches; the gateway encodes them to DataRow text/binary column by
column. A backend never sees the wire; the gateway never sees Spark.

Blocking contract: ``RowStream.batches`` is a *blocking* iterator (it may wait on Spark); the
gateway pulls it from a worker thread, one batch at a time, so results stream in bounded memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from tidegate.pgtypes import ColumnType


@dataclass(frozen=True)
class ResultField:
    """One column of a RowDescription."""

    name: str
    type: ColumnType
    table_oid: int = 0
    column_number: int = 0


@dataclass
class RowStream:
    """A result set: its columns, then its rows as Arrow batches whose columns match ``fields``.

    ``close`` releases the producer early (portal closed, client gone, cancel); it must be safe to
    call more than once and from any thread.
    """

    fields: list[ResultField]
    batches: Iterator[pa.RecordBatch]
    close: Callable[[], None] = lambda: None
    command: str = "SELECT"  # tag is f"{command} {row_count}"; "SELECT", "SHOW" (PG uses "SHOW"), ...
    # The number of rows when all are already computed in memory (reading them costs only their
    # encoding: the gateway may encode a few on its event loop); None for a stream still running.
    size: int | None = None

    @classmethod
    def from_table(cls, fields: list[ResultField], table: pa.Table, command: str = "SELECT") -> RowStream:
        return cls(fields, iter(table.to_batches()), command=command)


@dataclass
class CommandResult:
    """A finished statement: its command tag, optional RETURNING rows, and notices to send first."""

    tag: str  # exact PostgreSQL tag, e.g. "INSERT 0 3", "CREATE TABLE", "UPDATE 2"
    rows: RowStream | None = None  # RETURNING rows (the tag's count still comes from ``tag``)
    # sent before the tag: a text is a NOTICE, else (severity, SQLSTATE, text): VACUUM's INFO / WARNING
    notices: list[str | tuple[str, str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class CopyTarget:
    """A parsed ``COPY table [(cols)] FROM STDIN`` with the fields the client must send."""

    schema: str
    table: str
    fields: list[ResultField]  # the columns the client sends, in order


Result = RowStream | CommandResult
