"""The data-dir lock: one gateway per data directory.

Two gateways on one data dir would both write the catalog and the Delta tables, run the same
flows against one checkpoint and serve stale caches. ``DataDirLock(data_dir).acquire()`` takes an
exclusive ``flock`` on ``<data_dir>/tidegate.lock`` and keeps the file open for the life of the
lock; the kernel drops the flock when the process dies (kill -9 included), so the lock of a dead
gateway is taken over by the next one without any stale-lock guessing. The holder writes its pid,
start time, host name and listen address into the file (fsync'd), which is how a refused gateway
can say who holds the directory. A clean :meth:`DataDirLock.release` empties the file, so content
found by the next holder means its predecessor died without releasing (logged at INFO).

A refused :meth:`acquire` changes nothing in the data dir: the file is opened without truncation
and nothing is written unless the flock is ours.

The gateways of one PostgreSQL catalog share their data directory (catalog/active.py): each takes
the flock *shared* (``acquire(shared=True)``), which keeps out a gateway of an embedded catalog (an
exclusive holder) and is refused while one holds it. Shared holders leave the file's content
alone; a refused exclusive taker says the directory is held by a PostgreSQL catalog's gateways.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import socket
import time
from datetime import datetime, timezone
from pathlib import Path

log = logging.getLogger(__name__)

LOCK_FILE = "tidegate.lock"
# The holder writes its content right after taking the flock; a reader that finds the file empty
# meanwhile tries again for this long before reporting an unknown holder.
_CONTENT_WAIT_S = 1.0
_FIELDS = ("pid", "started", "host", "listen", "data_dir")


class DataDirLockError(Exception):
    """The data-dir lock could not be taken."""


class DataDirInUse(DataDirLockError):
    """Another process (usually another gateway) holds the data dir."""

    def __init__(self, data_dir: Path, holder: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.holder = holder
        super().__init__(f"data directory {data_dir} is in use by another gateway ({describe_holder(holder)}); "
                         "stop it first")


def describe_holder(holder: dict[str, str]) -> str:
    """'pid 1234, started ..., host h, listening on 127.0.0.1:5433' from a lock file's content."""
    if holder.get("shared"):
        return "shared by the gateways of a PostgreSQL catalog"
    if not holder.get("pid"):
        return "holder unknown: the lock file names no process"
    parts = [f"pid {holder['pid']}"]
    if holder.get("host") and holder["host"] != socket.gethostname():
        parts[0] += f" on host {holder['host']}"
    if holder.get("started"):
        parts.append(f"started {holder['started']}")
    if holder.get("listen"):
        parts.append(f"listening on {holder['listen']}")
    return ", ".join(parts)


def parse_holder(text: str) -> dict[str, str]:
    """The ``key=value`` lines of a lock file (unknown keys kept, malformed lines ignored; the
    first of a repeated key wins, see DataDirLock._write)."""
    holder: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            holder.setdefault(key.strip(), value.strip())
    return holder


def read_holder(data_dir: Path | str) -> dict[str, str]:
    """What the lock file of ``data_dir`` says about its holder ({} if nothing)."""
    try:
        return parse_holder((Path(data_dir) / LOCK_FILE).read_text(errors="replace"))
    except FileNotFoundError:
        return {}


class DataDirLock:
    """An exclusive, process-lifetime lock on a data directory (see the module docstring).

    ``acquire`` creates the data dir if it is missing, raises :class:`DataDirInUse` when another
    process holds it (with the holder's lock-file content) and :class:`DataDirLockError` when the
    lock file cannot be opened. The lock is per open file, so a second ``DataDirLock`` on the same
    dir is refused in the same process too.
    """

    def __init__(self, data_dir: Path | str) -> None:
        self.data_dir = Path(os.path.abspath(data_dir))
        self.path = self.data_dir / LOCK_FILE
        self._fd: int | None = None
        self._content: dict[str, str] = {}
        self.shared = False

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, listen: str = "", shared: bool = False) -> DataDirLock:
        """Take the lock, or raise. ``listen`` (host:port) is written for a refused gateway to show.
        ``shared``: one of the gateways of a PostgreSQL catalog."""
        if self._fd is not None:
            return self
        self.shared = shared
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            # No O_TRUNC: a refused acquire must leave the holder's content alone. os.open's fds are
            # not inherited by exec'd children (PEP 446), so Spark's JVM never holds the lock.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise DataDirLockError(f"cannot lock data directory {self.data_dir}: {e}") from e
        try:
            holder = self._lock_or_holder(fd)
        except BaseException:
            os.close(fd)
            raise
        if holder is not None:
            os.close(fd)
            raise DataDirInUse(self.data_dir, holder)
        self._fd = fd
        if self.shared:
            return self  # the file names the exclusive holder only
        try:
            previous = parse_holder(os.pread(fd, 4096, 0).decode(errors="replace"))
            if previous.get("pid"):
                log.info("taking over data directory %s from pid %s (started %s), which exited without "
                         "releasing it", self.data_dir, previous["pid"], previous.get("started") or "?")
            self._content = {
                "pid": str(os.getpid()),
                "started": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
                "host": socket.gethostname(),
                "listen": listen,
                "data_dir": str(self.data_dir),
            }
            os.ftruncate(fd, 0)  # a reader meanwhile sees no holder and waits, never the dead one
            self._write()
            if created:
                _fsync_dir(self.data_dir)
        except BaseException:
            self.release()
            raise
        return self

    def _lock_or_holder(self, fd: int) -> dict[str, str] | None:
        """None once the flock is ours; else the holder's content (waiting briefly for a holder
        that has the flock but has not written its content yet)."""
        deadline = time.monotonic() + _CONTENT_WAIT_S
        while True:
            if self._try_flock(fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX):
                return None
            if not self.shared and self._held_shared():
                return {"shared": "1"}
            holder = parse_holder(os.pread(fd, 4096, 0).decode(errors="replace"))
            if holder.get("pid") or time.monotonic() >= deadline:
                return holder
            time.sleep(0.05)

    def _try_flock(self, fd: int, mode: int) -> bool:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise DataDirLockError(f"cannot lock data directory {self.data_dir}: {e}") from e
            return False

    def _held_shared(self) -> bool:
        """Whether the holders hold the flock shared (a shared one is granted to a new file)."""
        try:
            probe = os.open(self.path, os.O_RDONLY)
        except OSError:
            return False
        try:
            if self._try_flock(probe, fcntl.LOCK_SH):
                fcntl.flock(probe, fcntl.LOCK_UN)
                return True
            return False
        finally:
            os.close(probe)

    def update(self, listen: str) -> None:
        """Record the address actually bound (known only after the socket is, e.g. with port 0)."""
        if self._fd is None or self.shared:
            return
        self._content["listen"] = listen
        self._write()

    def _write(self) -> None:
        """Overwrite, then cut: a reader sees the old content or the new, never an empty file (a
        longer old content's tail, left for an instant, cannot override: the first key wins)."""
        assert self._fd is not None
        data = "".join(f"{k}={self._content.get(k, '')}\n" for k in _FIELDS).encode()
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))
        os.fsync(self._fd)

    def release(self) -> None:
        """Empty the file (a clean exit) and drop the flock; the file itself stays."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if not self.shared:
                os.ftruncate(fd, 0)
            os.fsync(fd)
        except OSError:
            log.warning("could not clear %s", self.path, exc_info=True)
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> DataDirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
