"""The data-dir lock (catalog/lock.py): one gateway per data directory.

Unit tests hold the lock in a helper process; the end-to-end tests start real gateways
(``python -m tidegate serve``) and never wait for Spark: a refused gateway exits before touching
anything, and a gateway answers ``SELECT 1`` and DDL before Spark is up.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from catalog.lock import LOCK_FILE, DataDirInUse, DataDirLock, read_holder
from tests.pgoracle import free_port
from tests.tidegate_server import REPO_ROOT, TidegateServer, start_tidegate

HOLD = """
import sys
from catalog.lock import DataDirLock
DataDirLock(sys.argv[1]).acquire(listen="127.0.0.1:6543")
print("locked", flush=True)
sys.stdin.read()
"""

# A holder that has the flock but wrote nothing (as if it died between flock and write; it cannot).
HOLD_EMPTY = """
import fcntl, os, sys
fd = os.open(os.path.join(sys.argv[1], "tidegate.lock"), os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.read()
"""


def hold(data_dir: Path, script: str = HOLD) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", script, str(data_dir)], cwd=REPO_ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


@pytest.fixture()
def holders() -> Iterator[list[subprocess.Popen]]:
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def kill9(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def snapshot(root: Path) -> dict[str, tuple[bool, int, int]]:
    """Every entry under ``root`` (root included): is-dir, size, mtime in ns."""
    out = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = path.lstat()
        out[str(path.relative_to(root))] = (path.is_dir(), st.st_size, st.st_mtime_ns)
    return out


def serve(data_dir: Path, port: int, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``tidegate serve`` expecting it to exit by itself (refused)."""
    argv = [sys.executable, "-m", "tidegate", "serve", "--host", "127.0.0.1", "--port", str(port),
            "--data-dir", str(data_dir)]
    return subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# -- the lock module ------------------------------------------------------------------------------

def test_lock_held_by_another_process_is_refused_and_untouched(tmp_path: Path, holders) -> None:
    data = tmp_path / "data"
    holders.append(proc := hold(data))
    before = snapshot(data)
    content = (data / LOCK_FILE).read_bytes()
    with pytest.raises(DataDirInUse) as err:
        DataDirLock(data).acquire(listen="127.0.0.1:1")
    assert err.value.holder["pid"] == str(proc.pid)
    assert str(err.value) == (
        f"data directory {data} is in use by another gateway (pid {proc.pid}, started "
        f"{err.value.holder['started']}, listening on 127.0.0.1:6543); stop it first")
    assert snapshot(data) == before and (data / LOCK_FILE).read_bytes() == content
    assert read_holder(data)["listen"] == "127.0.0.1:6543"


def test_lock_of_a_killed_holder_is_taken_over(tmp_path: Path, holders, caplog) -> None:
    caplog.set_level(logging.INFO, logger="catalog.lock")
    data = tmp_path / "data"
    holders.append(proc := hold(data))
    kill9(proc)  # the kernel drops the flock; the file still names the dead pid
    assert read_holder(data)["pid"] == str(proc.pid)
    lock = DataDirLock(data).acquire(listen="127.0.0.1:2")
    try:
        assert lock.held
        holder = read_holder(data)
        assert (holder["pid"], holder["listen"], holder["data_dir"]) == (str(os.getpid()), "127.0.0.1:2", str(data))
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", holder["started"])
        took = [r.getMessage() for r in caplog.records if "taking over" in r.getMessage()]
        assert len(took) == 1 and f"from pid {proc.pid} " in took[0]
        lock.update(listen="127.0.0.1:3")
        assert read_holder(data)["listen"] == "127.0.0.1:3"
        # Now another process is refused, naming this one.
        out = subprocess.run([sys.executable, "-c", HOLD, str(data)], cwd=REPO_ROOT, capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert out.returncode != 0 and f"(pid {os.getpid()}, started " in out.stderr
    finally:
        lock.release()
    # A clean release empties the file: the next holder has nothing to take over.
    assert (data / LOCK_FILE).read_bytes() == b""
    caplog.clear()
    with DataDirLock(data):
        assert not [r for r in caplog.records if "taking over" in r.getMessage()]


def test_second_lock_in_the_same_process_is_refused(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path).acquire()
    try:
        with pytest.raises(DataDirInUse, match=rf"\(pid {os.getpid()}, started "):
            DataDirLock(tmp_path).acquire()
        assert first.acquire() is first  # re-acquiring one's own lock is a no-op
    finally:
        first.release()
    DataDirLock(tmp_path).acquire().release()  # released: free again


HOLD_SHARED = """
import sys
from catalog.lock import DataDirLock
DataDirLock(sys.argv[1]).acquire(listen="127.0.0.1:6544", shared=True)
print("locked", flush=True)
sys.stdin.read()
"""


def test_gateways_of_a_postgresql_catalog_share_the_lock(tmp_path: Path, holders) -> None:
    """Shared holders (the gateways of a PostgreSQL catalog) coexist and keep out an exclusive
    one (an embedded catalog's gateway), which names them; an exclusive holder keeps them out;
    shared holders leave the file's content alone."""
    data = tmp_path / "data"
    holders.append(hold(data, HOLD_SHARED))
    mine = DataDirLock(data).acquire(listen="127.0.0.1:1", shared=True)  # a second gateway of the catalog
    try:
        assert mine.held and (data / LOCK_FILE).read_bytes() == b""
        with pytest.raises(DataDirInUse) as err:
            DataDirLock(data).acquire(listen="127.0.0.1:2")
        assert str(err.value) == (f"data directory {data} is in use by another gateway (shared by the gateways "
                                  "of a PostgreSQL catalog); stop it first")
    finally:
        mine.release()
    kill9(holders[0])
    exclusive = DataDirLock(data).acquire(listen="127.0.0.1:3")
    try:
        with pytest.raises(DataDirInUse) as err:
            DataDirLock(data).acquire(listen="127.0.0.1:4", shared=True)
        assert err.value.holder["listen"] == "127.0.0.1:3"
    finally:
        exclusive.release()


def test_update_never_shows_a_reader_an_empty_file(tmp_path: Path) -> None:
    """The gateway rewrites the listen address right after binding, when clients (and refused
    gateways) may already read the file."""
    import threading

    lock = DataDirLock(tmp_path).acquire(listen="127.0.0.1:0")
    done = threading.Event()
    seen: list[dict[str, str]] = []

    def read() -> None:
        while not done.is_set():
            seen.append(read_holder(tmp_path))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(300):
            lock.update(listen=f"127.0.0.1:{'5' * (1 + i % 5)}")  # longer and shorter contents
    finally:
        done.set()
        reader.join()
        lock.release()
    assert seen and all(h.get("pid") == str(os.getpid())
                        and re.fullmatch(r"127\.0\.0\.1:(0|5{1,5})", h.get("listen", "")) for h in seen)


def test_holder_that_wrote_nothing_is_reported_unknown(tmp_path: Path, holders) -> None:
    holders.append(hold(tmp_path, HOLD_EMPTY))
    with pytest.raises(DataDirInUse, match="holder unknown"):
        DataDirLock(tmp_path).acquire()
    assert (tmp_path / LOCK_FILE).read_bytes() == b""


def test_refused_gateway_changes_nothing(tmp_path: Path, holders) -> None:
    """The lock comes before the catalog, Spark's files and the socket: nothing is created."""
    data = tmp_path / "data"
    holders.append(proc := hold(data))
    before = snapshot(data)
    content = (data / LOCK_FILE).read_bytes()
    port = free_port()
    out = serve(data, port)
    assert out.returncode == 1, out.stderr
    assert (f"tidegate: data directory {data} is in use by another gateway (pid {proc.pid}, started "
            in out.stderr), out.stderr
    assert "listening on 127.0.0.1:6543); stop it first" in out.stderr
    assert "tidegate listening" not in out.stdout
    assert snapshot(data) == before and (data / LOCK_FILE).read_bytes() == content
    assert sorted(p.name for p in data.iterdir()) == [LOCK_FILE]  # no catalog.sqlite, spark/, flows/
    assert not listening(port)


# -- real gateways --------------------------------------------------------------------------------

@pytest.fixture()
def gateways() -> Iterator[list[TidegateServer]]:
    started: list[TidegateServer] = []
    yield started
    for gw in started:
        gw.kill9()


def test_second_gateway_on_the_same_data_dir_exits(tmp_path: Path, gateways) -> None:
    data = tmp_path / "data"
    gateways.append(first := start_tidegate(data))
    holder = read_holder(data)
    assert holder["pid"] == str(first.proc.pid) and holder["listen"] == f"127.0.0.1:{first.port}"
    content = (data / LOCK_FILE).read_bytes()
    port = free_port()
    out = serve(data, port)
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        f"tidegate: data directory {data} is in use by another gateway (pid {first.proc.pid}, started "
        f"{holder['started']}, listening on 127.0.0.1:{first.port}); stop it first")
    assert not listening(port)
    assert (data / LOCK_FILE).read_bytes() == content
    with psycopg.connect(first.dsn, autocommit=True) as conn:  # the first one is unharmed
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_gateway_after_kill9_and_after_sigterm(tmp_path: Path, gateways) -> None:
    data = tmp_path / "data"
    gateways.append(first := start_tidegate(data))
    first.kill9()
    gateways.append(second := start_tidegate(data))  # no wait: the kernel dropped the dead one's flock
    assert read_holder(data)["pid"] == str(second.proc.pid)
    with psycopg.connect(second.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        conn.execute("CREATE TABLE after_kill9 (id int PRIMARY KEY, v text)")
        assert conn.execute("SELECT count(*) FROM information_schema.tables "
                            "WHERE table_name = 'after_kill9'").fetchone() == (1,)
    took = [line for line in second.log if "taking over data directory" in line]
    assert len(took) == 1 and f"from pid {first.proc.pid} " in took[0] and " INFO " in took[0], second.log

    second.stop()  # SIGTERM: graceful, the lock released (and its file emptied)
    assert second.proc.returncode == 0, second.log
    assert (data / LOCK_FILE).read_bytes() == b""
    gateways.append(third := start_tidegate(data))
    assert read_holder(data)["pid"] == str(third.proc.pid)
    with psycopg.connect(third.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM information_schema.tables "
                            "WHERE table_name = 'after_kill9'").fetchone() == (1,)
    assert not [line for line in third.log if "taking over" in line]
