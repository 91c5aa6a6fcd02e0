"""VACUUM: a table's upkeep on demand, as PostgreSQL's VACUUM is (issue 22: OPTIMIZE and VACUUM).

A Delta table's upkeep is what background maintenance does every pass (engine.maintenance):
compaction of its small files and removal of the files no version within the retention
(``vacuum_retention_hours``) needs. ``VACUUM [table, ...]`` runs that now for the tables named
(every table the user may vacuum when none is), and reports when it has finished, like PostgreSQL's:

- ``FULL`` compacts every file under the compaction target, not only when there are small ones;
- ``VERBOSE`` reports each table (INFO), ``SKIP_LOCKED`` skips a table another statement of this
  gateway is writing;
- a table the user does not own is skipped with PostgreSQL's WARNING, a view too; a missing one
  is 42P01; inside a transaction block 25001;
- FREEZE, ANALYZE, INDEX_CLEANUP, PROCESS_TOAST, TRUNCATE, PARALLEL and DISABLE_PAGE_SKIPPING
  concern PostgreSQL's heap and planner statistics, which a Delta table has not: 0A000 names them.

Large tables (their files over engine.sparkwrite.SPARK_WRITE_BYTES, or ``tidegate.spark_writes =
on``) are done on Spark by Delta Lake's own ``OPTIMIZE`` and ``VACUUM`` (the compaction's files
written by the executors); the others by delta-rs in the gateway, as background maintenance does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from catalog.shared_locks import LockBusy
from catalog.store import DATABASE_NAME, TableDef, is_temp_schema
from engine import sparkwrite
from engine.maintenance import TARGET_FILE_ROWS
from tidegate import sqllex
from tidegate.errors import SqlError
from tidegate.results import CommandResult
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from engine.executor import EngineSession

_BOOLEAN_OPTIONS = ("FULL", "VERBOSE", "SKIP_LOCKED")
_HEAP_OPTIONS = ("FREEZE", "ANALYZE", "INDEX_CLEANUP", "PROCESS_TOAST", "TRUNCATE", "PARALLEL",
                 "DISABLE_PAGE_SKIPPING")


@dataclass
class Vacuum:
    full: bool = False
    verbose: bool = False
    skip_locked: bool = False
    tables: list[tuple[str | None, str]] = field(default_factory=list)


def parse(sql: str) -> Vacuum:
    """``VACUUM [(option [value], ...)] | [FULL] [FREEZE] [VERBOSE] [ANALYZE] [table [, ...]]``."""
    toks = sqllex.scan(sql)
    if toks and toks[-1].text == ";":
        toks = toks[:-1]
    v = Vacuum()
    i = 1
    if i < len(toks) and toks[i].text == "(":
        i = _options(toks, i + 1, v)
    else:
        while i < len(toks) and toks[i].kind == "word" and toks[i].upper in ("FULL", "FREEZE", "VERBOSE", "ANALYZE"):
            _set(v, toks[i].upper, True)
            i += 1
    while i < len(toks):
        parts, j = sqllex.split_ident_chain(toks, i)
        if not parts:
            raise _syntax(toks, i)
        if len(parts) > 3:
            raise SqlError("42601", f"improper qualified name (too many dotted names): {'.'.join(parts)}")
        if len(parts) == 3:  # database.schema.table: this database only, as in PostgreSQL
            if parts[0] != DATABASE_NAME:
                raise SqlError("0A000", f'cross-database references are not implemented: "{".".join(parts)}"')
            parts = parts[1:]
        if j < len(toks) and toks[j].text == "(":
            raise SqlError("0A000", "a column list in VACUUM is only for ANALYZE, which tidegate does not do",
                           hint="Name the table without columns.")
        v.tables.append((parts[0], parts[1]) if len(parts) == 2 else (None, parts[0]))
        if j == len(toks):
            break
        if toks[j].text != ",":
            raise _syntax(toks, j)
        i = j + 1
        if i == len(toks):
            raise _syntax(toks, i)
    return v


def _options(toks: list[sqllex.Token], i: int, v: Vacuum) -> int:
    while i < len(toks):
        if toks[i].kind != "word":
            raise _syntax(toks, i)
        name = toks[i].upper
        i += 1
        value: Any = True
        if i < len(toks) and toks[i].text not in (",", ")"):
            value = _boolean(toks[i], name)
            i += 1
        _set(v, name, value)
        if i < len(toks) and toks[i].text == ",":
            i += 1
            continue
        if i < len(toks) and toks[i].text == ")":
            return i + 1
        break
    raise SqlError("42601", "syntax error at end of input")


def _boolean(tok: sqllex.Token, name: str) -> Any:
    text = (tok.value if tok.kind == "str" else tok.text).lower()
    if text in ("true", "on", "1", "yes"):
        return True
    if text in ("false", "off", "0", "no"):
        return False
    if name in _HEAP_OPTIONS:
        return text
    raise SqlError("42601", f"{name.lower()} requires a Boolean value")


def _set(v: Vacuum, name: str, value: Any) -> None:
    if name in _HEAP_OPTIONS:
        if value is False:
            return  # asking for less of what a Delta table does not have is asking for nothing
        raise SqlError("0A000", f"VACUUM option {name} does not apply to tidegate's tables",
                       detail="Delta tables have no heap to freeze or truncate, no indexes to clean and "
                              "no planner statistics to collect.",
                       hint="Leave the option out: VACUUM compacts the table's files and removes the "
                            "ones no version needs.")
    if name not in _BOOLEAN_OPTIONS:
        raise SqlError("42601", f'unrecognized VACUUM option "{name.lower()}"')
    setattr(v, name.lower(), bool(value))


def _syntax(toks: list[sqllex.Token], i: int) -> SqlError:
    if i >= len(toks):
        return SqlError("42601", "syntax error at end of input")
    return SqlError("42601", f'syntax error at or near "{toks[i].text}"')


def execute(session: EngineSession, sql: str, info: SessionInfo) -> CommandResult:
    v = parse(sql)
    if session.in_block:
        raise SqlError("25001", "VACUUM cannot run inside a transaction block")
    catalog = session.catalog
    if v.tables:
        targets = []
        for schema, name in v.tables:
            if schema is not None and catalog.get_schema(schema) is None:
                raise SqlError("3F000", f'schema "{schema}" does not exist')
            targets.append(catalog.resolve_table(name, schema, info.search_path))
    else:
        targets = [t for t in catalog.list_tables(kind="table")
                   if (not is_temp_schema(t.schema) or t.schema == info.temp_schema) and _owned(catalog, info, t)]
    notices: list[tuple[str, str, str]] = []
    for t in targets:
        if t.kind != "table" or not t.location:
            notices.append(("WARNING", "01000", f'skipping "{t.name}" --- cannot vacuum non-tables or special system tables'))
            continue
        if not _owned(catalog, info, t):
            notices.append(("WARNING", "01000", f'skipping "{t.name}" --- only table or database owner can vacuum it'))
            continue
        done = _vacuum_table(session, t, v, info)
        if done is None:
            notices.append(("WARNING", "01000", f'skipping vacuum of "{t.name}" --- lock not available'))
        elif v.verbose:
            notices.append(("INFO", "00000", f'vacuuming "{catalog.database}.{t.schema}.{t.name}"'))
            notices.append(("INFO", "00000", f'"{t.name}": {done}'))
    return CommandResult("VACUUM", notices=notices)


def _owned(catalog: Any, info: SessionInfo, t: TableDef) -> bool:
    try:
        catalog.roles.check_owner(info, "table", t.name, t.owner, schema=t.schema)
    except SqlError:
        return False
    return True


def _vacuum_table(session: EngineSession, t: TableDef, v: Vacuum, info: SessionInfo) -> str | None:
    """Compact and vacuum ``t``; what was done (VERBOSE), or None when skipped (SKIP_LOCKED)."""
    location = t.location or ""
    try:
        with session.store.write_lock(location, wait=not v.skip_locked):
            return _vacuum_locked(session, location, v, info)
    except LockBusy:
        return None


def _vacuum_locked(session: EngineSession, location: str, v: Vacuum, info: SessionInfo) -> str:
    """:func:`_vacuum_table` under the table's write lock."""
    store = session.store
    hours = session.engine.settings.vacuum_retention_hours
    sizes = store.file_actions(location).column("size_bytes").to_pylist()
    if _on_spark(sizes, info):
        return _on_spark_now(session, location, v.full, hours)
    maintenance = session.engine.maintenance
    small, _ = maintenance.small_files(location)
    compacted = maintenance.compact(location) if small > 1 or (v.full and len(sizes) > 1) else 0
    removed = maintenance.vacuum(location)
    return (f"{compacted} data files compacted, {removed} files no version needs removed (delta-rs); "
            f"files of about {TARGET_FILE_ROWS} rows are the target")


def _on_spark(sizes: list[int], info: SessionInfo) -> bool:
    """``tidegate.spark_writes``: ``on``, ``off``, or ``auto``: the table's files (``sizes``)
    exceed :data:`engine.sparkwrite.SPARK_WRITE_BYTES`."""
    mode = info.settings.get(sparkwrite.SETTING, "auto")
    if mode != "auto":
        return mode == "on"
    return sum(sizes) > sparkwrite.SPARK_WRITE_BYTES


def _on_spark_now(session: EngineSession, location: str, full: bool, hours: float) -> str:
    """Delta Lake's OPTIMIZE (bins of about TARGET_FILE_ROWS rows' bytes; FULL: every file under
    that, else those under half) and VACUUM with the gateway's retention, on Spark."""
    _, target = session.engine.maintenance.small_files(location)
    metrics = session._run(lambda: sparkwrite.optimize(session.spark, location, target, full=full))
    session._run(lambda: sparkwrite.vacuum(session.spark, location, hours))
    session.store.forget(location)  # Spark committed: the cached log is behind
    return (f"{metrics['numFilesRemoved']} data files compacted into {metrics['numFilesAdded']}, "
            "files no version needs removed (Delta Lake's OPTIMIZE and VACUUM on Spark)")
