"""Jobs and their leases, in the catalog's database.

A job (``SUBMIT JOB ... AS <statement>``, :mod:`engine.jobs`) is a row of ``jobs``: what it runs,
the submitting session's settings, its status and outcome. Every job that runs is owned through a
row of ``leases`` (resource ``job:<job_id>``, owner, expiry, fencing token), never through process
memory: the owner renews the lease by heartbeat, another gateway may take a job whose lease
expired, and the owner checks its token before the job's commit point, so a gateway that lost a
job never commits for it.

Statuses: PENDING (waits for a slot), RUNNING, SUCCEEDED, FAILED, CANCELLED. UNKNOWN is never
stored: it is how a RUNNING job whose owner's lease expired is shown until some gateway takes it
over and establishes its outcome.

:func:`information_schema_rows` renders INFORMATION_SCHEMA.JOBS for the pg_catalog evaluator,
which finds the store of its catalog through :func:`store_for` (the catalog package never imports
the engine).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from catalog import live
from catalog.db import CatalogStore, shared_store
from tidegate import sqllex

PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED, UNKNOWN = (
    "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "UNKNOWN")
FINISHED = (SUCCEEDED, FAILED, CANCELLED)

JOBS_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("job_id", pa.string()), ("job_name", pa.string()), ("statement", pa.string()), ("status", pa.string()),
    ("submitted_by", pa.string()), ("gateway", pa.string()), ("created_time", pa.timestamp("us", tz="UTC")),
    ("started_time", pa.timestamp("us", tz="UTC")), ("finished_time", pa.timestamp("us", tz="UTC")),
    ("progress", pa.string()), ("rows", pa.int64()), ("error_code", pa.string()), ("error_message", pa.string()),
    ("timeout", pa.string()), ("attempts", pa.int64()), ("result_expires", pa.timestamp("us", tz="UTC")),
]

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL UNIQUE,
    name TEXT,
    statement TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    submitted_by TEXT NOT NULL,
    session TEXT NOT NULL,
    gateway TEXT,
    created_time TEXT NOT NULL, started_time TEXT, finished_time TEXT,
    progress TEXT, rows INTEGER, tag TEXT,
    error_code TEXT, error_message TEXT,
    timeout_text TEXT, timeout_s REAL,
    result TEXT, result_expires TEXT, result_gone INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, id);
CREATE TABLE IF NOT EXISTS leases (
    resource TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL,
    token INTEGER NOT NULL);
"""


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _dt(v: str | None) -> datetime | None:
    return datetime.fromisoformat(v) if v else None


def job_resource(job_id: str) -> str:
    return f"job:{job_id}"


@dataclass
class Job:
    """One row of ``jobs``."""

    number: int
    job_id: str
    name: str | None
    statement: str
    kind: str  # what a re-run may do: "transactional", "query", "refresh", "once" (engine.jobs)
    status: str
    submitted_by: str
    session: dict[str, Any]
    gateway: str | None
    created_time: datetime
    started_time: datetime | None
    finished_time: datetime | None
    progress: str | None
    rows: int | None
    tag: str | None
    error_code: str | None
    error_message: str | None
    timeout_text: str | None
    timeout_s: float | None
    result: dict[str, Any] | None
    result_expires: datetime | None
    result_gone: bool
    attempts: int
    cancel_requested: bool

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


_COLUMNS = ("id, job_id, name, statement, kind, status, submitted_by, session, gateway, created_time, started_time, "
            "finished_time, progress, rows, tag, error_code, error_message, timeout_text, timeout_s, result, "
            "result_expires, result_gone, attempts, cancel_requested")


def _job(row: tuple) -> Job:
    return Job(row[0], row[1], row[2], row[3], row[4], row[5], row[6], json.loads(row[7]), row[8],
               _dt(row[9]) or _now(), _dt(row[10]), _dt(row[11]), row[12], row[13], row[14], row[15], row[16],
               row[17], row[18], json.loads(row[19]) if row[19] else None, _dt(row[20]), bool(row[21]), row[22],
               bool(row[23]))


class LeaseLost(Exception):
    """The lease of a resource is no longer this owner's (expired and taken, or released)."""


def store_for(catalog: Any) -> JobStore:
    """The job store of ``catalog`` (one per catalog object, opened on first use)."""
    return shared_store(catalog, JobStore)


class JobStore(CatalogStore):
    """Thread-safe job records and leases; every change is its own durable transaction."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path, _SCHEMA_SQL)

    # -- jobs ---------------------------------------------------------------------------------

    def submit(self, *, name: str | None, statement: str, kind: str, user: str, session: dict[str, Any],
               timeout_text: str | None, timeout_s: float | None) -> Job:
        """A new PENDING job; its id (``job-000042``) is never used again."""
        with self.transaction():
            cur = self._conn.execute(
                "INSERT INTO jobs (job_id, name, statement, kind, status, submitted_by, session, created_time, "
                "timeout_text, timeout_s, progress) VALUES ('', ?, ?, ?, ?, ?, ?, ?, ?, ?, 'waiting for a slot') "
                "RETURNING id",
                (name, statement, kind, PENDING, user, json.dumps(session), _now().isoformat(), timeout_text,
                 timeout_s))
            number = int(cur.fetchone()[0])
            job_id = f"job-{number:06d}"
            self._conn.execute("UPDATE jobs SET job_id=? WHERE id=?", (job_id, number))
            # Read inside the transaction: the scheduler may start the job the moment it commits,
            # and SUBMIT reports the row it created (PENDING), not a later state.
            job = self.get(job_id)
        assert job is not None
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            row = self._conn.execute(f"SELECT {_COLUMNS} FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        return _job(row) if row else None

    def latest_named(self, name: str, user: str | None) -> Job | None:
        """The most recent job named ``name`` (of ``user``; any user's when None)."""
        sql = f"SELECT {_COLUMNS} FROM jobs WHERE name=?" + (" AND submitted_by=?" if user is not None else "")
        with self._lock:
            row = self._conn.execute(sql + " ORDER BY id DESC LIMIT 1",
                                     (name,) if user is None else (name, user)).fetchone()
        return _job(row) if row else None

    def all(self) -> list[Job]:
        with self._lock:
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM jobs ORDER BY id").fetchall()
        return [_job(r) for r in rows]

    def with_status(self, *statuses: str, limit: int | None = None) -> list[Job]:
        """Jobs in any of ``statuses``, oldest first (at most ``limit``; None: all)."""
        marks = ",".join("?" * len(statuses))
        sql = f"SELECT {_COLUMNS} FROM jobs WHERE status IN ({marks}) ORDER BY id"
        with self._lock:
            if limit is None:
                rows = self._conn.execute(sql, statuses).fetchall()
            else:
                rows = self._conn.execute(sql + " LIMIT ?", (*statuses, limit)).fetchall()
        return [_job(r) for r in rows]

    def claim(self, job_id: str, owner: str, gateway: str, lease_s: float) -> int | None:
        """Atomically move a PENDING job to RUNNING under a new lease; its fencing token, or None
        when the job is no longer PENDING (cancelled, or another gateway took it)."""
        with self.transaction():
            row = self._conn.execute("SELECT status, cancel_requested FROM jobs WHERE job_id=?", (job_id,)).fetchone()
            if row is None or row[0] != PENDING or row[1]:
                return None
            token = self._take_lease(job_resource(job_id), owner, lease_s)
            self._conn.execute(
                "UPDATE jobs SET status=?, gateway=?, started_time=?, attempts=attempts+1, progress='starting' "
                "WHERE job_id=?", (RUNNING, gateway, _now().isoformat(), job_id))
            return token

    def requeue(self, job_id: str, why: str) -> None:
        """A RUNNING job whose owner died goes back to PENDING (it will run again)."""
        with self.transaction():
            self._conn.execute("UPDATE jobs SET status=?, gateway=NULL, progress=? WHERE job_id=? AND status=?",
                               (PENDING, why, job_id, RUNNING))
            self._conn.execute("DELETE FROM leases WHERE resource=?", (job_resource(job_id),))

    def set_progress(self, job_id: str, text: str, rows: int | None = None) -> None:
        with self._lock:
            if rows is None:
                self._conn.execute("UPDATE jobs SET progress=? WHERE job_id=?", (text, job_id))
            else:
                self._conn.execute("UPDATE jobs SET progress=?, rows=? WHERE job_id=?", (text, rows, job_id))

    def finish(self, job_id: str, status: str, *, token: int | None = None, owner: str | None = None,
               rows: int | None = None, tag: str | None = None, error_code: str | None = None,
               error_message: str | None = None, result: dict[str, Any] | None = None,
               result_expires: datetime | None = None, progress: str | None = None) -> bool:
        """End a job (idempotent for the same outcome: a later call on a finished job changes
        nothing and returns False). With ``token`` the owner's lease must still be current."""
        with self.transaction():
            row = self._conn.execute("SELECT status FROM jobs WHERE job_id=?", (job_id,)).fetchone()
            if row is None or row[0] in FINISHED:
                return False
            if token is not None and owner is not None:
                self._check_lease(job_resource(job_id), owner, token)
            self._conn.execute(
                "UPDATE jobs SET status=?, finished_time=?, rows=COALESCE(?, rows), tag=?, error_code=?, "
                "error_message=?, result=?, result_expires=?, progress=? WHERE job_id=?",
                (status, _now().isoformat(), rows, tag, error_code, error_message,
                 json.dumps(result) if result is not None else None,
                 result_expires.isoformat() if result_expires else None, progress or status.lower(), job_id))
            self._conn.execute("DELETE FROM leases WHERE resource=?", (job_resource(job_id),))
            return True

    def request_cancel(self, job_id: str) -> str:
        """Ask a job to stop: a PENDING job is CANCELLED at once, a RUNNING one is flagged for its
        owner. Returns the status after the request."""
        with self.transaction():
            row = self._conn.execute("SELECT status FROM jobs WHERE job_id=?", (job_id,)).fetchone()
            if row is None:
                return ""
            if row[0] == PENDING:
                self._conn.execute("UPDATE jobs SET status=?, finished_time=?, cancel_requested=1, "
                                   "progress='cancelled before it started' WHERE job_id=?",
                                   (CANCELLED, _now().isoformat(), job_id))
                return CANCELLED
            if row[0] == RUNNING:
                self._conn.execute("UPDATE jobs SET cancel_requested=1 WHERE job_id=?", (job_id,))
            return row[0]

    def cancel_requests(self, job_ids: list[str]) -> list[str]:
        """Which of ``job_ids`` (RUNNING here) were asked to stop (by any gateway)."""
        if not job_ids:
            return []
        marks = ",".join("?" * len(job_ids))
        with self._lock:
            rows = self._conn.execute(f"SELECT job_id FROM jobs WHERE cancel_requested=1 AND job_id IN ({marks})",
                                      job_ids).fetchall()
        return [r[0] for r in rows]

    def expire_results(self, now: datetime) -> list[Job]:
        """Finished jobs whose stored result passed its expiry: marked gone, returned (the caller
        removes their files)."""
        with self.transaction():
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE result_gone=0 AND result_expires IS NOT NULL "
                "AND result_expires <= ?", (now.isoformat(),)).fetchall()
            for r in rows:
                self._conn.execute("UPDATE jobs SET result_gone=1 WHERE id=?", (r[0],))
        return [_job(r) for r in rows]

    # -- leases -------------------------------------------------------------------------------

    def _take_lease(self, resource: str, owner: str, lease_s: float) -> int:
        row = self._conn.execute("SELECT owner, expires, token FROM leases WHERE resource=?", (resource,)).fetchone()
        token = (row[2] if row else 0) + 1
        self._conn.execute("INSERT INTO leases (resource, owner, expires, token) VALUES (?, ?, ?, ?) ON CONFLICT (resource) "
                           "DO UPDATE SET owner = excluded.owner, expires = excluded.expires, token = excluded.token",
                           (resource, owner, time.time() + lease_s, token))
        return token

    def _check_lease(self, resource: str, owner: str, token: int) -> None:
        row = self._conn.execute("SELECT owner, token, expires FROM leases WHERE resource=?", (resource,)).fetchone()
        if row is None or row[0] != owner or row[1] != token:
            raise LeaseLost(f"the lease of {resource} is no longer held by {owner}")

    def check_lease(self, resource: str, owner: str, token: int) -> None:
        """Raise :class:`LeaseLost` unless ``owner`` still holds ``resource`` under ``token``."""
        with self._lock:
            self._check_lease(resource, owner, token)

    def renew(self, owner: str, lease_s: float) -> None:
        """Heartbeat: extend every lease ``owner`` holds."""
        with self._lock:
            self._conn.execute("UPDATE leases SET expires=? WHERE owner=?", (time.time() + lease_s, owner))

    def lease(self, resource: str) -> tuple[str, float, int] | None:
        with self._lock:
            row = self._conn.execute("SELECT owner, expires, token FROM leases WHERE resource=?", (resource,)).fetchone()
        return (row[0], row[1], row[2]) if row else None

    def leases(self) -> dict[str, tuple[str, float, int]]:
        with self._lock:
            rows = self._conn.execute("SELECT resource, owner, expires, token FROM leases").fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}


# -- INFORMATION_SCHEMA.JOBS ----------------------------------------------------------------------

def shown_status(job: Job, leases: dict[str, tuple[str, float, int]], now: float | None = None) -> str:
    """A RUNNING job whose lease expired is UNKNOWN until a gateway takes it over."""
    if job.status != RUNNING:
        return job.status
    lease = leases.get(job_resource(job.job_id))
    if lease is None or lease[1] < (now if now is not None else time.time()):
        return UNKNOWN
    return RUNNING


def job_values(job: Job, leases: dict[str, tuple[str, float, int]]) -> dict[str, Any]:
    """The INFORMATION_SCHEMA.JOBS row of ``job`` (statement included; callers hide it)."""
    return {
        "job_id": job.job_id, "job_name": job.name, "statement": job.statement,
        "status": shown_status(job, leases), "submitted_by": job.submitted_by, "gateway": job.gateway,
        "created_time": job.created_time, "started_time": job.started_time, "finished_time": job.finished_time,
        "progress": job.progress, "rows": job.rows, "error_code": job.error_code,
        "error_message": job.error_message, "timeout": job.timeout_text, "attempts": job.attempts,
        "result_expires": None if job.result_gone else job.result_expires,
    }


def rows_table(jobs: list[Job], leases: dict[str, tuple[str, float, int]], visible: Any = None) -> pa.Table:
    """INFORMATION_SCHEMA.JOBS rows; ``visible(job)`` False hides the statement text (NULL)."""
    cols: dict[str, list[Any]] = {n: [] for n, _ in JOBS_COLUMNS}
    for job in jobs:
        values = job_values(job, leases)
        if visible is not None and not visible(job):
            values["statement"] = None
        for k, v in values.items():
            cols[k].append(v)
    return pa.table({n: pa.array(cols[n], t) for n, t in JOBS_COLUMNS})


def information_schema_rows(catalog: Any) -> pa.Table:
    store = store_for(catalog)
    return rows_table(store.all(), store.leases())


def mentions_job_relations(sql: str) -> bool:
    """Whether a catalog query may read INFORMATION_SCHEMA.JOBS (rows change without a catalog
    version bump: reloaded per query and never cached)."""
    return "jobs" in sqllex.identifiers(sql)


def load_into_duckdb(con: Any, catalog: Any, *, create: bool = False) -> None:
    """Create (``create=True``) or refresh ``isx.jobs`` of the evaluator's DuckDB.

    The rows live in ``isx.tg_jobs_all``; ``isx.jobs`` is a view over them that shows a job's
    statement only to its submitter and to superusers (``tg_job_visible``)."""
    if create:
        live.create_tables(con, {"tg_jobs_all": rows_table([], {})})
        names = [n for n, _ in JOBS_COLUMNS]
        select = ", ".join("CASE WHEN tg_job_visible(submitted_by) THEN statement END AS statement"
                           if n == "statement" else n for n in names)
        con.execute(f"CREATE VIEW IF NOT EXISTS isx.jobs AS SELECT {select} FROM isx.tg_jobs_all")
        return
    live.replace_rows(con, {"tg_jobs_all": information_schema_rows(catalog)})
