"""A throwaway local PostgreSQL 15 server: the oracle for "what would PostgreSQL answer".

Started from Debian's binaries in a temporary directory on a free port; when running as root the
server runs as the ``postgres`` system user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bin_dir() -> str | None:
    for path in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(path, "postgres")):
            return path
    return None


@dataclass
class PostgresServer:
    port: int
    datadir: str
    proc: subprocess.Popen

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.datadir, ignore_errors=True)


def start_postgres() -> PostgresServer:
    bindir = postgres_bin_dir()
    if bindir is None:
        raise RuntimeError("PostgreSQL server binaries not found; run .ci/run or apt-get install postgresql")
    datadir = tempfile.mkdtemp(prefix="tidegate-pg-")
    as_root = os.geteuid() == 0
    if as_root:
        shutil.chown(datadir, "postgres", "postgres")

    def run_as_pg(argv: list[str], **kw) -> subprocess.Popen:
        if as_root:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        return subprocess.Popen(argv, **kw)

    init = run_as_pg([f"{bindir}/initdb", "-D", datadir, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                      "--locale=C.UTF-8"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = init.communicate(timeout=120)
    if init.returncode != 0:
        raise RuntimeError(f"initdb failed: {err.decode()}")
    port = free_port()
    proc = run_as_pg([f"{bindir}/postgres", "-D", datadir, "-p", str(port), "-h", "127.0.0.1",
                      "-k", datadir, "-c", "fsync=off", "-c", "max_connections=300",
                      "-c", "timezone=UTC"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        raise RuntimeError("PostgreSQL did not start")
    # The socket accepts before the server is ready for queries; wait for a real answer.
    for _ in range(100):
        r = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-tAc", "select 1"],
                           capture_output=True, text=True)
        if r.stdout.strip() == "1":
            break
        time.sleep(0.1)
    return PostgresServer(port, datadir, proc)
