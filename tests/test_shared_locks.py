"""Gateways sharing one warehouse through a PostgreSQL catalog: their table stores serialise
commits to a table and make multi-commit transactions visible at once across processes.

Each test runs several real OS processes, each with its own TableStore (delta-rs, Delta tables on
disk) and its own connections to a real PostgreSQL 15 catalog database: what two gateway processes
do to one table, without the parts of a gateway that are not under test.
"""

from __future__ import annotations

import itertools
import multiprocessing
import random
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from catalog.shared_locks import SharedLocks
from catalog.store import ColumnDef, TableDef
from engine.storage import TableStore, storage_schema
from engine.txnlog import Journal, WriteOp
from tests.catalog_db import create_database
from tidegate.errors import SqlError
from tidegate.pgtypes import TYPES_BY_NAME, ColumnType

_names = itertools.count()
_SPAWN = multiprocessing.get_context("spawn")


def _table(warehouse: Path, name: str, oid: int) -> TableDef:
    return TableDef("public", name, [ColumnDef("id", ColumnType(TYPES_BY_NAME["int8"]), not_null=True),
                                     ColumnDef("w", ColumnType(TYPES_BY_NAME["int8"]))],
                    primary_key=["id"], location=str(warehouse.resolve() / "2200" / str(oid)), oid=oid)


def _rows(t: TableDef, ids: list[int], writer: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "w": pa.array([writer] * len(ids), pa.int64())},
                    schema=storage_schema(t.columns))


def _insert_keys(url: str, warehouse: str, t: TableDef, writer: int, keys: list[int], out) -> None:
    """A writer process: inserts each key of ``keys`` on its own (a PRIMARY KEY append, checked
    at commit); reports the keys whose insert succeeded."""
    store = TableStore(Path(warehouse), SharedLocks(url))
    stored, refused = [], 0
    for k in keys:
        try:
            store.apply(WriteOp(t, "append", _rows(t, [k], writer), keys=["id"], unique=True))
            stored.append(k)
        except SqlError as exc:
            assert exc.sqlstate == "23505", exc.message
            refused += 1
    out.put((writer, stored, refused))


def _run_all(work: list[tuple]) -> list:
    """Run each (function, args) in a process of its own at once; what each put on its queue
    (the queue is its last argument), once every one exited cleanly."""
    out = _SPAWN.Queue()
    procs = [_SPAWN.Process(target=fn, args=(*args, out)) for fn, args in work]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


def _shared_catalog(pg_oracle) -> str:
    return create_database(pg_oracle.url, f"tg_locks_{next(_names)}_{int(time.time() * 1000) % 10**9}")


def test_one_primary_key_stored_once_across_processes(pg_oracle, tmp_path: Path) -> None:
    """Four writer processes insert overlapping keys into one PRIMARY KEY table: each key is
    stored once, by the one writer told it succeeded; every other attempt was refused with 23505."""
    url = _shared_catalog(pg_oracle)
    warehouse = tmp_path / "warehouse"
    t = _table(warehouse, "k", 16400)
    TableStore(warehouse).create(t)
    rng = random.Random(7)
    plans = [rng.sample(range(60), 40) for _ in range(4)]
    results = _run_all([(_insert_keys, (url, str(warehouse), t, w, keys)) for w, keys in enumerate(plans)])
    stored = pa.table(DeltaTable(t.location).to_pyarrow_table()).to_pylist()
    ids = [r["id"] for r in stored]
    assert len(ids) == len(set(ids)), f"duplicate keys: {sorted(i for i in ids if ids.count(i) > 1)}"
    told = {k: w for w, keys, _ in results for k in keys}
    assert sum(len(keys) for _, keys, _ in results) == len(told)  # no key acknowledged twice
    assert {r["id"]: r["w"] for r in stored} == told
    assert set(told) == set().union(*plans)
    assert sum(refused for _, _, refused in results) == sum(map(len, plans)) - len(told)


def _transfer(url: str, warehouse: str, tables: tuple[TableDef, TableDef], rounds: int, out) -> None:
    """A committer process: each transaction appends one row to each of two tables (two Delta
    commits, journaled)."""
    store = TableStore(Path(warehouse), SharedLocks(url))
    journal = Journal(Path(warehouse).parent / f"txn-{random.random()}")
    a, b = tables
    for i in range(rounds):
        store.commit_all([WriteOp(a, "append", _rows(a, [i], 0)), WriteOp(b, "append", _rows(b, [i], 0))], journal)
    out.put(("committer", rounds))


def _watch(url: str, warehouse: str, tables: tuple[TableDef, TableDef], seconds: float, out) -> None:
    """A reader process: pins both tables' versions under the gate, as a statement resolving
    them does, and counts the rows of each at those versions."""
    store = TableStore(Path(warehouse), SharedLocks(url))
    a, b = tables
    torn, reads = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with store.gate.reading():
            va, vb = store.snapshot(a.location).version, store.snapshot(b.location).version
        na = sum(DeltaTable(a.location, version=va).get_add_actions(flatten=True).column("num_records").to_pylist())
        nb = sum(DeltaTable(b.location, version=vb).get_add_actions(flatten=True).column("num_records").to_pylist())
        reads += 1
        if na != nb:
            torn.append((va, na, vb, nb))
    out.put(("reader", reads, torn))


def test_a_transaction_over_two_tables_is_seen_whole_by_another_process(pg_oracle, tmp_path: Path) -> None:
    """One process commits transactions of two commits each (one row into each of two tables);
    two other processes read both tables again and again: none ever sees one table's row of a
    transaction without the other's."""
    url = _shared_catalog(pg_oracle)
    warehouse = tmp_path / "warehouse"
    a, b = _table(warehouse, "a", 16410), _table(warehouse, "b", 16411)
    for t in (a, b):
        TableStore(warehouse).create(t)
    results = _run_all([(_watch, (url, str(warehouse), (a, b), 25.0))] * 2
                       + [(_transfer, (url, str(warehouse), (a, b), 60))])
    readers = [r for r in results if r[0] == "reader"]
    assert all(r[1] > 20 for r in readers), readers  # the readers did read while commits went on
    assert [r[2] for r in readers] == [[], []]
    assert DeltaTable(a.location).to_pyarrow_table().num_rows == 60
    assert DeltaTable(b.location).to_pyarrow_table().num_rows == 60


def test_a_lock_another_gateway_holds_is_not_taken(pg_oracle, tmp_path: Path) -> None:
    """VACUUM (SKIP_LOCKED)'s try: a table's write lock held by one process is busy for another
    (55P03), and free again once released; an unreachable catalog database fails with 58030."""
    url = _shared_catalog(pg_oracle)
    warehouse = tmp_path / "warehouse"
    t = _table(warehouse, "v", 16420)
    TableStore(warehouse).create(t)
    mine, theirs = TableStore(warehouse, SharedLocks(url)), TableStore(warehouse, SharedLocks(url))
    with mine.write_lock(t.location):
        with mine.write_lock(t.location, wait=False):  # re-entrant within the holder
            pass
        with pytest.raises(SqlError) as busy:
            with theirs.write_lock(t.location, wait=False):
                pass
        assert busy.value.sqlstate == "55P03"
    with theirs.write_lock(t.location, wait=False):
        pass
    gone = TableStore(warehouse, SharedLocks("postgresql://nobody@127.0.0.1:1/none"))
    with pytest.raises(SqlError) as down:
        gone.apply(WriteOp(t, "append", _rows(t, [1], 9), keys=["id"], unique=True))
    assert down.value.sqlstate == "58030"
    assert DeltaTable(t.location).to_pyarrow_table().num_rows == 0


def test_transaction_table_locks_are_held_across_gateways(pg_oracle) -> None:
    """TableLocks of two gateways (two TableLocks on separate connections: two database sessions):
    a table one transaction holds makes the other's writer wait until it ends; NOWAIT is 55P03; a
    cancel stops the wait (57014); two transactions taking two tables in opposite orders through
    different gateways end in 40P01 for one of them, and the other goes on."""
    import threading

    from engine.locks import TableLocks

    url = _shared_catalog(pg_oracle)
    one, other = TableLocks(SharedLocks(url)), TableLocks(SharedLocks(url))
    never = lambda: False  # noqa: E731
    one.acquire(1, "/w/a", "a", never)
    with pytest.raises(SqlError) as busy:
        other.acquire(2, "/w/a", "a", never, nowait=True)
    assert (busy.value.sqlstate, busy.value.message) == ("55P03", 'could not obtain lock on row in relation "a"')
    got = threading.Event()
    waiter = threading.Thread(target=lambda: (other.acquire(2, "/w/a", "a", never), got.set()))
    waiter.start()
    assert not got.wait(1.0), "took a table another gateway's transaction holds"
    one.release_all(1)
    assert got.wait(10), "the waiter never got the table once it was released"
    waiter.join()

    cancel = threading.Event()
    failed: list[SqlError] = []

    def cancelled_wait() -> None:
        try:
            one.acquire(3, "/w/a", "a", cancel.is_set)
        except SqlError as exc:
            failed.append(exc)

    waiter = threading.Thread(target=cancelled_wait)
    waiter.start()
    time.sleep(0.5)
    cancel.set()
    waiter.join(5)
    assert [e.sqlstate for e in failed] == ["57014"] and not waiter.is_alive()
    other.release_all(2)
    one.acquire(3, "/w/a", "a", never)  # free after the cancelled wait: nothing was left held
    one.release_all(3)

    one.acquire(4, "/w/x", "x", never)
    other.acquire(5, "/w/y", "y", never)
    outcomes: dict[int, str] = {}

    def cross(locks: TableLocks, owner: int, location: str) -> None:
        try:
            locks.acquire(owner, location, location, never)
            outcomes[owner] = "ok"
        except SqlError as exc:
            outcomes[owner] = exc.sqlstate
            locks.release_all(owner)  # the transaction aborts: its locks go

    crossing = [threading.Thread(target=cross, args=(one, 4, "/w/y")),
                threading.Thread(target=cross, args=(other, 5, "/w/x"))]
    for t in crossing:
        t.start()
    for t in crossing:
        t.join(30)
    assert sorted(outcomes.values()) == ["40P01", "ok"], outcomes
    one.release_all(4)
    other.release_all(5)
