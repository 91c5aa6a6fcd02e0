"""Gateway slots (catalog/slots.py): what each gateway of a shared PostgreSQL catalog keeps apart
from the others, and what a gateway that died leaves to the others.

Real processes hold slots on a real PostgreSQL 15 catalog database and are killed with SIGKILL;
the commit journal they leave is completed by another process's table store, on Delta tables on
disk.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from catalog import slots
from catalog.slots import GatewaySlot
from catalog.store import Catalog, ColumnDef, TableDef
from engine import txnlog
from engine.storage import TableStore, storage_schema
from engine.txnlog import Journal, WriteOp
from tests.catalog_db import create_database
from tidegate.config import Settings
from tidegate.pgtypes import TYPES_BY_NAME, ColumnType

_names = itertools.count()
_SPAWN = multiprocessing.get_context("spawn")


def _catalog_url(pg_oracle) -> str:
    return create_database(pg_oracle.url, f"tg_slots_{next(_names)}_{int(time.time() * 1000) % 10**9}")


def _hold_slot(url: str, out) -> None:
    """A gateway's slot, held until the process is killed."""
    slot = GatewaySlot(url).take()
    out.put(slot.number)
    time.sleep(600)


def _holder(url: str) -> tuple[multiprocessing.Process, int]:
    out = _SPAWN.Queue()
    p = _SPAWN.Process(target=_hold_slot, args=(url, out), daemon=True)
    p.start()
    return p, out.get(timeout=60)


def _kill(p: multiprocessing.Process) -> None:
    os.kill(p.pid, signal.SIGKILL)
    p.join(timeout=30)


def test_each_gateway_takes_the_lowest_free_slot_and_a_dead_ones_is_free_again(pg_oracle) -> None:
    url = _catalog_url(pg_oracle)
    first, n0 = _holder(url)
    second, n1 = _holder(url)
    assert (n0, n1) == (0, 1)
    mine = GatewaySlot(url).take()
    assert mine.number == 2
    _kill(first)
    deadline = time.monotonic() + 10  # until the database has ended the dead process's session
    while (again := GatewaySlot(url).take()).number != 0:
        assert again.number == 3 and time.monotonic() < deadline
        again.release()
        time.sleep(0.05)
    for s in (mine, again):
        s.release()
    _kill(second)
    assert GatewaySlot("/tmp/some/catalog.sqlite").take().number == 0  # the embedded catalog: one gateway


def test_slots_name_their_journal_application_id_and_backend_pids() -> None:
    assert slots.journal_dir("/d", 0) == Path("/d/txn") and slots.journal_dir("/d", 3) == Path("/d/txn-3")
    assert slots.app_id(0) == txnlog.APP_ID and slots.app_id(3) == "tidegate-txn-3"
    ranges = [slots.pid_range(n) for n in range(slots.MAX_SLOTS)]
    assert all(a.stop <= b.start for a, b in zip(ranges, ranges[1:]))  # disjoint
    assert ranges[-1].stop <= 10**9  # below jobs' sessions' pids
    assert all(slots.slot_of_pid(r.start) == n == slots.slot_of_pid(r.stop - 1) for n, r in enumerate(ranges))
    assert slots.slot_of_pid(10**9 + 5) is None


def _table(warehouse: Path, name: str, oid: int) -> TableDef:
    return TableDef("public", name, [ColumnDef("id", ColumnType(TYPES_BY_NAME["int8"]), not_null=True)],
                    location=str(warehouse.resolve() / "2200" / str(oid)), oid=oid)


def _rows(t: TableDef, ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())}, schema=storage_schema(t.columns))


def _commit_and_die(url: str, data_dir: str, tables: tuple[TableDef, TableDef], out) -> None:
    """A gateway of slot 1 commits a transaction over two tables and is killed between its two
    Delta commits (the journal's test pause holds it there)."""
    slot = GatewaySlot(url).take()
    out.put(slot.number)
    store = TableStore(Path(data_dir) / "warehouse")
    journal = Journal(slots.journal_dir(data_dir, slot.number), slots.app_id(slot.number))
    a, b = tables
    os.environ["TIDEGATE_TXN_TEST_PAUSE"] = "600"
    store.commit_all([WriteOp(a, "append", _rows(a, [1, 2])), WriteOp(b, "append", _rows(b, [3]))], journal)


def test_a_dead_gateways_interrupted_commit_is_completed_by_another(pg_oracle, tmp_path: Path) -> None:
    """Slot 1's gateway dies (SIGKILL) after the first of its transaction's two commits; while
    its slot looks held nothing touches its journal, once free another gateway's sweep completes
    the transaction (the second commit, once) under slot 1's application id."""
    url = _catalog_url(pg_oracle)
    data_dir = tmp_path / "data"
    catalog = Catalog(url)
    warehouse = data_dir / "warehouse"
    a, b = _table(warehouse, "a", catalog.next_oid()), _table(warehouse, "b", catalog.next_oid())
    for t in (a, b):
        catalog.create_table(t)
        TableStore(warehouse).create(t)
    mine = GatewaySlot(url).take()
    assert mine.number == 0
    out = _SPAWN.Queue()
    p = _SPAWN.Process(target=_commit_and_die, args=(url, str(data_dir), (a, b), out), daemon=True)
    p.start()
    assert out.get(timeout=60) == 1
    deadline = time.monotonic() + 120
    while DeltaTable(a.location).version() == 0:  # the first commit landed: the second waits
        assert time.monotonic() < deadline
        time.sleep(0.1)
    store = TableStore(warehouse)

    def recover(n: int) -> None:
        txnlog.recover(store, Journal(slots.journal_dir(data_dir, n), slots.app_id(n)), catalog)

    assert mine.sweep([1], recover) == []  # alive: its journal is its own
    assert DeltaTable(b.location).to_pyarrow_table().num_rows == 0
    _kill(p)
    deadline = time.monotonic() + 10  # the database ends the dead process's session (and its slot)
    while (swept := mine.sweep(slots.journal_slots(data_dir), recover)) != [1]:
        assert swept == [] and time.monotonic() < deadline
        time.sleep(0.05)
    assert sorted(DeltaTable(a.location).to_pyarrow_table().column("id").to_pylist()) == [1, 2]
    assert DeltaTable(b.location).to_pyarrow_table().column("id").to_pylist() == [3]
    assert DeltaTable(b.location).transaction_version(slots.app_id(1)) is not None
    assert DeltaTable(b.location).transaction_version(slots.app_id(0)) is None
    assert not list(slots.journal_dir(data_dir, 1).glob("*.json"))
    assert mine.sweep(slots.journal_slots(data_dir), recover) == [1]  # nothing left: completes nothing twice
    assert DeltaTable(b.location).to_pyarrow_table().num_rows == 1
    mine.release()
    catalog.close()


def test_a_starting_gateway_drops_the_temporary_schemas_of_dead_gateways_only(pg_oracle, tmp_path: Path) -> None:
    """Temporary schemas (pg_temp_<backend pid>) of a live gateway's sessions survive another
    gateway's start; those of its own slot's previous holder go at start, those of a slot whose
    gateway dies later at the next sweep."""
    from engine import Engine

    url = _catalog_url(pg_oracle)
    catalog = Catalog(url)
    other, n = _holder(url)
    assert n == 0
    theirs = f"pg_temp_{slots.pid_range(0).start + 7}"
    leftover = f"pg_temp_{slots.pid_range(1).start + 7}"  # slot 1's gateway died before
    for name in (theirs, leftover):
        catalog.create_temp_schema(name)
    settings = Settings(data_dir=tmp_path / "data", catalog=url, spark_master="local[1]", maintenance_interval_s=0)
    engine = Engine(settings, catalog)
    try:
        assert engine.slot.number == 1
        names = {s.name for s in catalog.temp_schemas()}
        assert theirs in names and leftover not in names
        _kill(other)
        deadline = time.monotonic() + 10  # until the database has ended the dead process's session
        while (swept := engine.sweep_slots()) != [0]:
            assert swept == [] and time.monotonic() < deadline
            time.sleep(0.05)
        assert theirs not in {s.name for s in catalog.temp_schemas()}
    finally:
        engine.shutdown()
        catalog.close()


def test_a_gateway_finds_where_the_holder_of_a_slot_listens(pg_oracle) -> None:
    """What forwards a cancel request: the address a slot's gateway recorded (a wildcard host
    replaced by the address the catalog database sees), and nothing for a slot nobody holds."""
    url = _catalog_url(pg_oracle)
    first, second = GatewaySlot(url).take(), GatewaySlot(url).take()
    assert second.address_of(first.number) is None  # not listening yet
    first.update("0.0.0.0:6432")
    second.update("db-gw-2.internal:6433")
    assert second.address_of(first.number) == ("127.0.0.1", 6432)
    assert first.address_of(second.number) == ("db-gw-2.internal", 6433)
    first.release()
    deadline = time.monotonic() + 10
    while second.address_of(0) is not None:  # the database ends the closed session's backend
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second.release()


def test_sweeps_of_one_gateway_never_recover_a_slot_at_once(pg_oracle) -> None:
    """The job scheduler and the periodic sweep may sweep together: an advisory lock is
    re-entrant within its session, so without the process's own serialisation both would take
    the dead slot and complete its journal at the same time."""
    import threading

    url = _catalog_url(pg_oracle)
    mine = GatewaySlot(url).take()
    running, most, calls = [0], [0], []
    guard = threading.Lock()

    def recover(n: int) -> None:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.3)
        calls.append(n)
        with guard:
            running[0] -= 1

    threads = [threading.Thread(target=mine.sweep, args=([1], recover)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert calls == [1, 1, 1] and most[0] == 1
    mine.release()
