"""Start a real tidegate gateway as a subprocess (``python -m tidegate serve``) for end-to-end tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.pgoracle import free_port

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class TidegateServer:
    port: int
    data_dir: Path
    proc: subprocess.Popen
    log: list[str] = field(default_factory=list)
    host: str = "127.0.0.1"

    @property
    def dsn(self) -> str:
        return f"host={self.host} port={self.port} user=tidegate dbname=tidegate"

    @property
    def url(self) -> str:
        return f"postgresql://tidegate@{self.host}:{self.port}/tidegate"

    def wait_for_spark(self, timeout: float = 180.0) -> None:
        """Block until a statement that needs Spark succeeds (the gateway answers before Spark is up)."""
        import psycopg

        deadline = time.time() + timeout
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while True:
                try:
                    conn.execute("SELECT count(*) FROM (VALUES (1)) AS v(x) CROSS JOIN information_schema.schemata s WHERE false")
                    conn.execute("CREATE TABLE IF NOT EXISTS __tidegate_probe (x int)")
                    conn.execute("SELECT count(*) FROM __tidegate_probe").fetchone()
                    conn.execute("DROP TABLE __tidegate_probe")
                    return
                except psycopg.Error:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.5)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def kill9(self) -> None:
        self.stop(signal.SIGKILL)

    def wait_for_line(self, prefix: str, timeout: float = 60.0) -> float:
        """Block until the gateway printed a line starting with ``prefix``; seconds waited."""
        started = time.monotonic()
        while not any(line.startswith(prefix) for line in list(self.log)):
            if self.proc.poll() is not None:
                raise RuntimeError("tidegate exited:\n" + "\n".join(self.log[-50:]))
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"tidegate never said {prefix!r}:\n" + "\n".join(self.log[-50:]))
            time.sleep(0.02)
        return time.monotonic() - started

    def wait_listening(self, timeout: float = 60.0) -> float:
        """Block until the gateway accepts connections; seconds waited."""
        started = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("tidegate exited:\n" + "\n".join(self.log[-50:]))
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    return time.monotonic() - started
            except OSError:
                if time.monotonic() - started > timeout:
                    raise RuntimeError("tidegate did not accept connections:\n" + "\n".join(self.log[-50:]))
                time.sleep(0.02)


def start_tidegate(data_dir: Path | str | None = None, port: int | None = None,
                   extra_args: list[str] | None = None, env: dict[str, str] | None = None,
                   timeout: float = 30.0, file_roots: list[Path | str] | None = None) -> TidegateServer:
    """Start the gateway and return once it accepts connections (Spark may still be starting).

    ``file_roots`` are the directories refreshable tables with ``connector = 'file'`` may read
    (``TIDEGATE_FILE_CONNECTOR_ROOTS``; one given in ``env`` wins). By default, the folder holding
    the data dir when it is a folder of its own (pytest's base temp dir for the shared gateway, a
    test's tmp_path): source files sit beside the data dir, which the gateway never reads; never
    '/', the system temp dir or the home dir. ``[]`` sets none (a config file may).
    """
    data_dir = Path(data_dir or Path(tempfile.mkdtemp(prefix="tidegate-test-")) / "data")
    port = port or free_port()
    argv = [sys.executable, "-m", "tidegate", "serve", "--host", "127.0.0.1", "--port", str(port),
            "--data-dir", str(data_dir), "--spark-conf", "spark.sql.shuffle.partitions=2"] + (extra_args or [])
    proc_env = {**os.environ, **(env or {})}
    if "TIDEGATE_FILE_CONNECTOR_ROOTS" not in (env or {}):
        if file_roots is None:
            parent = data_dir.resolve().parent
            too_broad = (Path("/"), Path(tempfile.gettempdir()).resolve(), Path.home().resolve())
            file_roots = [] if parent in too_broad else [parent]
        if file_roots:
            proc_env["TIDEGATE_FILE_CONNECTOR_ROOTS"] = ",".join(str(r) for r in file_roots)
        else:
            proc_env.pop("TIDEGATE_FILE_CONNECTOR_ROOTS", None)
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=proc_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    server = TidegateServer(port, data_dir, proc)

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            server.log.append(line.rstrip("\n"))
            if len(server.log) > 5000:
                del server.log[:1000]

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("tidegate exited during start:\n" + "\n".join(server.log[-50:]))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.05)
    server.stop()
    raise RuntimeError("tidegate did not accept connections:\n" + "\n".join(server.log[-50:]))
