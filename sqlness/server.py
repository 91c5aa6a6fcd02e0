"""Servers the runner talks to: one it starts (and can restart) per env, or an external DSN.

The start command is configurable so the runner is not tied to tidegate: ``{port}`` and
``{data_dir}`` in its arguments are replaced by a free port and the env's fresh data directory.
A server is ready when its port accepts TCP connections and ``SELECT 1`` answers; the generous
default timeout covers a gateway whose Spark backend is still starting.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

DEFAULT_SERVER_CMD: list[str] = [
    sys.executable, "-m", "tidegate", "serve", "--host", "127.0.0.1", "--port", "{port}",
    "--data-dir", "{data_dir}",
]
DEFAULT_SERVER_DSN = "host=127.0.0.1 port={port} user=tidegate dbname=tidegate"
# Environment of a started server: the refresh cases load files kept in the case tree, which is
# the one directory tidegate's file connector may read here.
DEFAULT_SERVER_ENV: dict[str, str] = {
    "TIDEGATE_FILE_CONNECTOR_ROOTS": str(Path(__file__).resolve().parent / "cases" / "standalone" / "refresh" / "data"),
}
DEFAULT_START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0


class ServerError(Exception):
    """The server could not be started, did not become ready, or cannot do what a case asks."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _fill(template: str, port: int, data_dir: Path) -> str:
    # Plain replacement, not str.format: arguments may legitimately contain braces (JSON, globs).
    return template.replace("{port}", str(port)).replace("{data_dir}", str(data_dir))


class ExternalServer:
    """A server somebody else runs (``--dsn``); it cannot be restarted by the runner."""

    def __init__(self, dsn: str, start_timeout: float = DEFAULT_START_TIMEOUT) -> None:
        self.dsn = dsn
        self.start_timeout = start_timeout

    @property
    def can_restart(self) -> bool:
        return False

    def start(self) -> None:
        wait_ready(self.dsn, None, self.start_timeout, lambda: "")

    def restart(self) -> None:
        raise ServerError("ARG restart=true needs a server started by the runner (not --dsn)")

    def stop(self) -> None:
        return None


class ManagedServer:
    """A server process the runner starts with a fresh data dir and stops at the end of its env."""

    def __init__(self, command: list[str], dsn_template: str = DEFAULT_SERVER_DSN,
                 start_timeout: float = DEFAULT_START_TIMEOUT, keep_data: bool = False,
                 label: str = "server", env: dict[str, str] | None = None) -> None:
        self.command = list(command)
        self.env = dict(DEFAULT_SERVER_ENV if env is None else env)
        self.dsn_template = dsn_template
        self.start_timeout = start_timeout
        self.keep_data = keep_data
        self.label = label
        self.root = Path(tempfile.mkdtemp(prefix=f"sqlness-{label}-"))
        self.data_dir = self.root / "data"
        self.log_path = self.root / "server.log"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def can_restart(self) -> bool:
        return True

    @property
    def dsn(self) -> str:
        return _fill(self.dsn_template, self.port, self.data_dir)

    @property
    def argv(self) -> list[str]:
        return [_fill(arg, self.port, self.data_dir) for arg in self.command]

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            raise ServerError(f"{self.label}: already running")
        log = open(self.log_path, "ab")
        try:
            log.write(f"--- sqlness: starting {' '.join(self.argv)}\n".encode())
            log.flush()
            # A new session, so stop() can reach helper processes (a JVM, a wrapped postgres).
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, **self.env})
        except OSError as exc:
            raise ServerError(f"{self.label}: cannot run {self.argv[0]!r}: {exc}") from None
        finally:
            log.close()
        try:
            wait_ready(self.dsn, self.proc, self.start_timeout, self.log_tail)
        except ServerError:
            self.stop(remove=False)
            raise

    def stop(self, remove: bool | None = None) -> None:
        """Stop the process (SIGTERM, then SIGKILL for the whole group after a grace period)."""
        proc = self.proc
        if proc is not None:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            self.proc = None
        if remove is None:
            remove = not self.keep_data
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)

    def restart(self) -> None:
        """Stop and start again on the same port and data directory."""
        self.stop(remove=False)
        self.start()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def wait_ready(dsn: str, proc: subprocess.Popen[bytes] | None, timeout: float, log_tail) -> None:
    """Poll until the server answers ``SELECT 1``; fail early if its process exits."""
    deadline = time.monotonic() + timeout
    params = conninfo_to_dict(dsn)
    host = str(params.get("host", "127.0.0.1"))
    port = int(params.get("port", 5432))
    last_error = "no answer"
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ServerError(f"server exited with code {proc.returncode} during start:\n{log_tail()}")
        try:
            if not host.startswith("/"):
                with socket.create_connection((host, port), timeout=1.0):
                    pass
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                conn.execute("SELECT 1").fetchone()
            return
        except (OSError, psycopg.Error) as exc:
            last_error = str(exc).strip() or type(exc).__name__
            time.sleep(0.2)
    raise ServerError(f"server at {host}:{port} not ready after {timeout:.0f}s ({last_error}):\n{log_tail()}")
