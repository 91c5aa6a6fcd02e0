"""Runs sqlness case files against a server and compares the output with the golden ``.result``.

Layout: ``<case_dir>/<env>/**/*.sql``. Every env gets one server (started by the runner with a
fresh data dir, or ``--dsn``) shared by all its cases; each case file runs in its own autocommit
session. Cases may run in parallel (``jobs``); a case that restarts the server
(``-- SQLNESS ARG restart=true``) runs alone, so no other case sees its session vanish.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, TextIO

import psycopg

from sqlness.case import (Case, CaseError, Env, Replace, Restart, Sleep, SortResult,
                          TemplateInterceptor, parse_case)
from sqlness.output import format_affected, format_error, format_table, text_adapters
from sqlness.server import (DEFAULT_SERVER_CMD, DEFAULT_SERVER_DSN, DEFAULT_START_TIMEOUT,
                            ExternalServer, ManagedServer, ServerError)

DEFAULT_CASE_DIR = Path(__file__).resolve().parent / "cases"
# Leading comments/whitespace, then COPY ... TO STDOUT (the only COPY a case file can feed).
_COPY_TO_STDOUT = re.compile(r"^(?:\s|--[^\n]*\n)*COPY\b.*\bTO\s+STDOUT\b", re.IGNORECASE | re.DOTALL)
CONNECT_TIMEOUT = 30


@dataclass
class RunnerConfig:
    case_dir: Path = DEFAULT_CASE_DIR
    envs: list[str] | None = None  # None: every env directory
    filter: str | None = None  # regex searched in the case path relative to its env dir
    jobs: int = 1
    fail_fast: bool = False
    update: bool = False
    dsn: str | None = None  # use a running server instead of starting one per env
    server_cmd: list[str] = field(default_factory=lambda: list(DEFAULT_SERVER_CMD))
    server_dsn: str = DEFAULT_SERVER_DSN
    start_timeout: float = DEFAULT_START_TIMEOUT
    statement_timeout: float | None = None  # cancel a statement after this many seconds
    keep_data: bool = False
    environ: Mapping[str, str] | None = None  # for ENV interceptors; default os.environ


@dataclass
class CaseOutcome:
    key: str  # "<env>/<case name>"
    passed: bool
    message: str = ""
    diff: str = ""
    seconds: float = 0.0


@dataclass
class RunSummary:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    runner_errors: list[str] = field(default_factory=list)
    outcomes: list[CaseOutcome] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.runner_errors:
            return 2
        return 1 if self.failed else 0

    @property
    def line(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"


class _RWLock:
    """Many shared holders or one exclusive holder (a case that restarts the server)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    def acquire(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._waiting_exclusive += 1
                self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
                self._waiting_exclusive -= 1
                self._exclusive = True
            else:
                self._cond.wait_for(lambda: not self._exclusive and self._waiting_exclusive == 0)
                self._shared += 1

    def release(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._exclusive = False
            else:
                self._shared -= 1
            self._cond.notify_all()


class _Session:
    """The case's connection; reopened after a restart or when the server dropped it."""

    def __init__(self, server: ExternalServer | ManagedServer, statement_timeout: float | None = None) -> None:
        self.server = server
        self.statement_timeout = statement_timeout
        self.conn: psycopg.Connection | None = None

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg.Error:
                pass
            self.conn = None

    def run(self, sql: str) -> str:
        if self.conn is None or self.conn.closed:
            try:
                self.conn = psycopg.connect(self.server.dsn, autocommit=True, context=text_adapters(),
                                            connect_timeout=CONNECT_TIMEOUT)
            except psycopg.Error as exc:
                self.conn = None
                return format_error(exc, connection_lost=True)
        conn = self.conn
        timer: threading.Timer | None = None
        if self.statement_timeout:
            # A cancel request makes the server fail the statement with 57014 (query_canceled).
            timer = threading.Timer(self.statement_timeout, self._cancel, args=(conn,))
            timer.daemon = True
            timer.start()
        try:
            cur = conn.cursor()
            if _COPY_TO_STDOUT.match(sql):
                return self._copy_out(cur, sql)
            # No parameters: psycopg sends a simple Query message, results arrive as text.
            cur.execute(sql)  # type: ignore[arg-type]
            parts = [self._render(cur)]
            while cur.nextset():
                parts.append(self._render(cur))
            return "\n\n".join(parts)
        except psycopg.Error as exc:
            lost = conn.closed or conn.broken
            if lost:
                self.close()
            return format_error(exc, connection_lost=lost)
        finally:
            if timer is not None:
                timer.cancel()

    @staticmethod
    def _cancel(conn: psycopg.Connection) -> None:
        try:
            conn.cancel_safe(timeout=10.0)
        except psycopg.Error:
            pass

    @staticmethod
    def _copy_out(cur: psycopg.Cursor, sql: str) -> str:
        """``COPY ... TO STDOUT``: the data exactly as the server streamed it, then the row count."""
        chunks: list[bytes] = []
        with cur.copy(sql) as copy:  # type: ignore[arg-type]
            for chunk in copy:
                chunks.append(bytes(chunk))
        data = b"".join(chunks).decode("utf-8", errors="backslashreplace").rstrip("\n")
        affected = f"Affected Rows: {max(cur.rowcount, 0)}"
        return f"{data}\n\n{affected}" if data else affected

    @staticmethod
    def _render(cur: psycopg.Cursor) -> str:
        if cur.description is None:
            return format_affected(cur.statusmessage)
        columns = [col.name for col in cur.description]
        return format_table(columns, cur.fetchall())


class Runner:
    """Discovers cases, starts servers, runs and compares; prints progress and a summary."""

    def __init__(self, config: RunnerConfig, out: TextIO | None = None) -> None:
        self.config = config
        self.out = out or sys.stdout
        self._print_lock = threading.Lock()
        self._stop = threading.Event()
        self._filter = re.compile(config.filter) if config.filter else None

    # discovery --------------------------------------------------------------------------------

    def env_names(self) -> list[str]:
        case_dir = self.config.case_dir
        if not case_dir.is_dir():
            raise ServerError(f"case directory {case_dir} does not exist")
        found = sorted(p.name for p in case_dir.iterdir()
                       if p.is_dir() and not p.name.startswith((".", "_")))
        if self.config.envs is None:
            return found
        unknown = [e for e in self.config.envs if e not in found]
        if unknown:
            raise ServerError(f"unknown env {', '.join(unknown)} (found: {', '.join(found) or 'none'})")
        return list(dict.fromkeys(self.config.envs))

    def case_files(self, env: str) -> list[tuple[str, Path]]:
        env_dir = self.config.case_dir / env
        cases = []
        for path in env_dir.rglob("*.sql"):
            if not path.is_file():
                continue
            rel = path.relative_to(env_dir).as_posix()
            name = rel[:-len(".sql")]
            if self._filter and not (self._filter.search(rel) or self._filter.search(name)):
                continue
            cases.append((name, path))
        return sorted(cases)

    # running ----------------------------------------------------------------------------------

    def run(self) -> RunSummary:
        summary = RunSummary()
        try:
            envs = self.env_names()
        except ServerError as exc:
            summary.runner_errors.append(str(exc))
            self._emit(f"ERROR {exc}")
            self._emit(summary.line)
            return summary
        for env in envs:
            if self._stop.is_set():
                summary.skipped += len(self.case_files(env))
                continue
            self._run_env(env, summary)
        if summary.skipped:
            self._emit(f"skipped {summary.skipped} case(s) after the first failure (--fail-fast)")
        self._emit(summary.line)
        return summary

    def _run_env(self, env: str, summary: RunSummary) -> None:
        cases: list[Case] = []
        for name, path in self.case_files(env):
            key = f"{env}/{name}"
            try:
                cases.append(parse_case(path, name))
            except (CaseError, OSError, UnicodeDecodeError) as exc:
                self._record(summary, CaseOutcome(key, False, message=str(exc)))
                summary.runner_errors.append(str(exc))
                if self.config.fail_fast:
                    self._stop.set()
        if not cases:
            return
        if self._stop.is_set():
            summary.skipped += len(cases)
            return
        if self.config.dsn:
            server: ExternalServer | ManagedServer = ExternalServer(self.config.dsn, self.config.start_timeout)
        else:
            server = ManagedServer(self.config.server_cmd, self.config.server_dsn, self.config.start_timeout,
                                   self.config.keep_data, label=env)
        try:
            try:
                server.start()
            except ServerError as exc:
                message = f"env {env}: {exc}"
                summary.runner_errors.append(message)
                self._emit(f"ERROR {message}")
                for case in cases:
                    self._record(summary, CaseOutcome(f"{env}/{case.name}", False, message="server not available"))
                return
            if isinstance(server, ManagedServer):
                self._emit(f"env {env}: server ready on port {server.port} (data dir {server.data_dir})")
            lock = _RWLock()

            def job(case: Case) -> None:
                if self._stop.is_set():
                    with self._print_lock:
                        summary.skipped += 1
                    return
                exclusive = case.needs_restart
                lock.acquire(exclusive)
                try:
                    outcome = self.run_case(env, case, server)
                finally:
                    lock.release(exclusive)
                self._record(summary, outcome)
                if not outcome.passed and self.config.fail_fast:
                    self._stop.set()

            if self.config.jobs <= 1:
                for case in cases:
                    job(case)
            else:
                with ThreadPoolExecutor(max_workers=self.config.jobs, thread_name_prefix="sqlness") as pool:
                    for future in [pool.submit(job, case) for case in cases]:
                        future.result()
        finally:
            server.stop()

    def run_case(self, env: str, case: Case, server: ExternalServer | ManagedServer) -> CaseOutcome:
        key = f"{env}/{case.name}"
        started = time.monotonic()
        if case.needs_restart and not server.can_restart:
            # Fail before the first statement so the case leaves nothing behind on the server.
            return CaseOutcome(key, False, message=f"{case.path}: ARG restart=true needs a server started "
                                                   "by the runner (not --dsn)")
        try:
            actual = self.execute_case(case, server)
        except (CaseError, ServerError) as exc:
            return CaseOutcome(key, False, message=str(exc), seconds=time.monotonic() - started)
        return self._compare(key, case, actual, time.monotonic() - started)

    def execute_case(self, case: Case, server: ExternalServer | ManagedServer) -> str:
        """Run every statement of the case in one session and return the case's output text."""
        environ = dict(self.config.environ if self.config.environ is not None else os.environ)
        session = _Session(server, self.config.statement_timeout)
        parts: list[str] = []
        try:
            for stmt in case.statements:
                sql = stmt.sql
                for icp in stmt.interceptors:
                    if isinstance(icp, Restart):
                        session.close()
                        try:
                            server.restart()
                        except ServerError as exc:
                            raise CaseError(case.path, stmt.line, f"restart failed: {exc}") from None
                    elif isinstance(icp, Sleep):
                        time.sleep(icp.seconds)
                    elif isinstance(icp, Env):
                        sql = icp.apply(sql, environ, case.path, stmt.line)
                    elif isinstance(icp, TemplateInterceptor):
                        sql = icp.apply(sql, case.path, stmt.line)
                result = session.run(sql)
                for icp in stmt.interceptors:
                    if isinstance(icp, (Replace, SortResult)):
                        result = icp.apply(result)
                parts.append(f"{stmt.display}\n\n{result}\n\n")
        finally:
            session.close()
        if case.trailing_comments:
            parts.append("\n".join(case.trailing_comments) + "\n")
        return "".join(parts)

    def _compare(self, key: str, case: Case, actual: str, seconds: float) -> CaseOutcome:
        result_path = case.result_path
        new_path = result_path.with_name(result_path.name + ".new")
        expected: str | None
        try:
            expected = result_path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            expected = None
        if expected == actual:
            new_path.unlink(missing_ok=True)
            return CaseOutcome(key, True, seconds=seconds)
        diff = "".join(_diff(expected or "", actual, str(result_path), str(new_path)))
        if self.config.update:
            _write(result_path, actual)
            new_path.unlink(missing_ok=True)
            verb = "created" if expected is None else "updated"
            return CaseOutcome(key, True, message=f"{verb} {result_path}", diff=diff, seconds=seconds)
        if expected is None:
            _write(result_path, actual)
            return CaseOutcome(key, False, message=f"{result_path} was missing; created it, review and rerun",
                               diff=diff, seconds=seconds)
        _write(new_path, actual)
        return CaseOutcome(key, False, message=f"output differs; actual output written to {new_path}",
                           diff=diff, seconds=seconds)

    # reporting --------------------------------------------------------------------------------

    def _record(self, summary: RunSummary, outcome: CaseOutcome) -> None:
        with self._print_lock:
            summary.outcomes.append(outcome)
            if outcome.passed:
                summary.passed += 1
            else:
                summary.failed += 1
            status = "PASS" if outcome.passed else "FAIL"
            lines = [f"{status} {outcome.key} ({outcome.seconds:.2f}s)"]
            if outcome.message:
                lines.append(f"  {outcome.message}")
            if outcome.diff:
                lines.append(outcome.diff.rstrip("\n"))
            self.out.write("\n".join(lines) + "\n")
            self.out.flush()

    def _emit(self, line: str) -> None:
        with self._print_lock:
            self.out.write(line + "\n")
            self.out.flush()


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


def _diff(expected: str, actual: str, from_name: str, to_name: str) -> list[str]:
    lines = difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                 fromfile=from_name, tofile=to_name)
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return out
