"""Jobs: any statement run in the background, outliving its session and its gateway.

Statements (answered without Spark):

* ``SUBMIT JOB [name] [WITH (timeout = '30 min')] AS <statement>`` records a PENDING job and
  returns ``(job_id, status)`` at once. The job runs with the submitting session's user,
  database and settings (search_path, TimeZone, ...) as they were at submission.
* ``SHOW JOBS`` / ``INFORMATION_SCHEMA.JOBS``: one row per job; a job's statement text is shown
  only to its submitter and to superusers.
* ``FETCH JOB 'id'`` (or a job's name: the caller's most recent job of that name): a finished job's outcome: its rows (streamed from the stored result, with
  their original names and types), its command tag, or its error as the ErrorResponse. 55000
  while it has not finished or once its result expired (``job_result_ttl``).
* ``WAIT JOB 'id' [TIMEOUT '10 s']``: blocks until the job ends (NOTICE lines report progress),
  then returns its status row; on timeout the current row. A cancel stops the wait, not the job.
* ``CANCEL JOB 'id'``: stops the job's Spark work and returns its status row; a job cancelled
  before its commit point writes nothing.

Running: at most ``max_running_jobs`` jobs run at once, in submission order, each in its own
thread with its own engine session, its Spark jobs in the low-weight background pool (interactive
statements keep priority) and tagged ``tidegate-job-<id>`` so a cancel reaches all of them.

What a re-run may do (the job's *kind*, fixed at submission):

* ``transactional`` -- queries, DML, CREATE TABLE AS and the DDL a transaction block holds: run in
  a block whose COMMIT always goes through the commit journal with the job's note
  (:class:`engine.txnlog.CommitHooks`): the journal record is the commit point, and the job's row
  becomes SUCCEEDED before the record is removed, so after a crash either the record (completed
  by recovery, which then marks the job) or the row says the commit landed. A job found RUNNING
  after a crash without either committed nothing: it runs again.
* ``refresh`` -- REFRESH TABLE (run as ``REFRESH TABLE ... WAIT``): a refresh is resumable and
  commits once under its own application transaction; a re-run waits for the refresh the
  crash interrupted (resumed by the refresh recovery) and reports its outcome.
* ``once`` -- statements that are not transactional (flows, roles and grants, sequences,
  indexes, databases): run as in autocommit; if a crash interrupts one, it is not run again but
  ends FAILED saying so.

Ownership: a running job is held through a lease row (:mod:`catalog.jobs`), renewed by the
heartbeat; the fencing token is checked just before the commit point. With the embedded catalog
the data-dir lock makes this gateway the only one, so at start every job another process left
RUNNING is taken over at once; otherwise a job is taken over when its lease expired. Every gateway
of a PostgreSQL catalog runs jobs; a follower (catalog/active.py) leaves the jobs that need the
leading gateway (``refresh`` and ``once`` jobs: REFRESH TABLE, flow statements) to the leader.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from sqlglot import exp

from catalog import jobs as jobsmeta
from catalog import refresh as rmeta
from catalog.jobs import CANCELLED, FAILED, PENDING, RUNNING, SUCCEEDED, Job, LeaseLost
from catalog.store import TEMP_SCHEMA_PREFIX, _type_from_json, _type_to_json
from engine import events, ttl, txnlog
from tidegate import dialect, sqllex, statements
from tidegate.errors import SqlError
from tidegate.pgtypes import INT8, TEXT, TIMESTAMPTZ, ColumnType
from tidegate.results import CommandResult, ResultField, RowStream
from tidegate.session import SessionInfo
from tidegate.statements import Kind

if TYPE_CHECKING:
    from engine.executor import Engine, EngineSession

log = logging.getLogger("tidegate.jobs")

TRANSACTIONAL, REFRESH, ONCE = "transactional", "refresh", "once"
JOB_TAG_PREFIX = "tidegate-job-"
# A job's session gets a backend pid of its own (its temporary schema, its currval state).
_JOB_PID_BASE = 1_000_000_000
_OPTIONS = ("timeout",)

# Statements a job may not run: session state and transaction control belong to a connection,
# COPY and cursors to a client's stream, job statements to the client that waits on them.
_SESSION_WORDS = {"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE", "PREPARE",
                  "SET", "RESET", "DISCARD", "DEALLOCATE", "USE", "LISTEN", "UNLISTEN", "NOTIFY", "DECLARE",
                  "FETCH", "MOVE", "CLOSE", "EXECUTE", "LOCK"}
# SHOW forms the engine answers (anything else is a setting: a session statement).
_ENGINE_SHOW = {"TABLES", "CREATE", "FULL", "VIEWS", "COLUMNS", "INDEX", "INDEXES", "DATABASES", "SCHEMAS",
                "FLOWS", "REFRESH"}
# Statements a transaction block holds (their DDL is transactional); everything else runs once.
_TRANSACTIONAL_WORDS = {"SELECT", "WITH", "VALUES", "TABLE", "INSERT", "UPDATE", "DELETE", "MERGE", "TRUNCATE",
                        "EXPLAIN", "SHOW", "(", "UPSERT"}
_TRANSACTIONAL_DDL = {"TABLE", "VIEW", "SCHEMA", "TEMP", "TEMPORARY", "UNLOGGED", "OR"}

STATUS_COLUMNS: list[tuple[str, ColumnType]] = [
    (name, ColumnType(INT8) if ty == pa.int64() else ColumnType(TIMESTAMPTZ) if pa.types.is_timestamp(ty)
     else ColumnType(TEXT)) for name, ty in jobsmeta.JOBS_COLUMNS]
SUBMIT_COLUMNS = [ResultField("job_id", ColumnType(TEXT)), ResultField("status", ColumnType(TEXT))]


def _fields(columns: list[tuple[str, ColumnType]]) -> list[ResultField]:
    return [ResultField(n, t) for n, t in columns]


def _rows_of(tag: str) -> int | None:
    m = re.search(r"(\d+)$", tag)
    return int(m.group(1)) if m else None


@dataclass
class Submission:
    name: str | None
    timeout_text: str | None
    timeout_s: float | None
    statement: str
    kind: str


def parse_submit(node: dialect.SubmitJob) -> Submission:
    """``SUBMIT JOB [name] [WITH (option = value, ...)] AS <statement>``, as the dialect parsed it."""
    named = node.args.get("this")
    name = named.name if named is not None else None
    options: dict[str, str] = {}
    for prop in node.args.get("options") or []:
        key = prop.this.name.lower()
        if key not in _OPTIONS:
            raise SqlError("22023", f'unrecognized job option "{key}"',
                           hint="SUBMIT JOB accepts WITH (timeout = '<duration>').")
        options[key] = prop.args["value"].name
    statement = node.expression.name
    timeout_text = timeout_s = None
    if "timeout" in options:
        timeout_text = options["timeout"]
        micros = None if not timeout_text.strip() else (
            int(float(timeout_text) * 1_000_000) if re.fullmatch(r"\d+(\.\d+)?", timeout_text.strip())
            else ttl.duration_us(timeout_text))
        if micros is None or micros < 0:
            raise SqlError("22023", f"invalid value for job option timeout: {timeout_text!r}",
                           hint="Give a duration such as '30 min', '2h' or '90 s' (0: no limit).")
        timeout_s = micros / 1_000_000 or None  # 0 disables it, as statement_timeout = 0 does
    return Submission(name, timeout_text, timeout_s, statement, statement_kind(statement))


def statement_kind(statement: str) -> str:
    """How a job of ``statement`` runs and re-runs (module doc); 0A000 for what a job cannot run."""
    toks = sqllex.leading(statement)
    w = [t.upper for t in toks[:4]] + ["", "", "", ""]
    first = w[0]
    kind = statements.classify(statement).kind
    if first in _SESSION_WORDS or (first == "SHOW" and w[1] not in _ENGINE_SHOW):
        raise SqlError("0A000", f"{first} cannot run as a job: it belongs to a session",
                       hint="Run session statements and transaction control on your connection; a job "
                            "runs with the settings your session had when you submitted it.")
    if first == "COPY":
        raise SqlError("0A000", "COPY cannot run as a job: it streams to or from a client",
                       hint="Submit the query (SUBMIT JOB AS SELECT ...) and read it with FETCH JOB.")
    if kind is Kind.JOB and first != "FETCH":
        raise SqlError("0A000", f"{first} {w[1]} cannot run as a job")
    if kind is Kind.REFRESH and first == "REFRESH":
        return REFRESH
    if kind is Kind.FLOW:
        return ONCE
    if first in _TRANSACTIONAL_WORDS:
        return TRANSACTIONAL
    if first in ("CREATE", "ALTER", "DROP", "COMMENT"):
        if first == "COMMENT":
            return TRANSACTIONAL if w[2] in ("TABLE", "COLUMN", "VIEW", "SCHEMA") else ONCE
        if w[1] in _TRANSACTIONAL_DDL and "SEQUENCE" not in w[1:4]:
            return TRANSACTIONAL
    return ONCE


@dataclass
class _Running:
    job: Job
    token: int
    session: EngineSession | None = None
    thread: threading.Thread | None = None
    reason: str | None = None  # "cancel", "timeout", "shutdown", "lost": why it is being stopped
    landed: bool = False
    progress: str = "starting"
    rows_so_far: int = 0


class JobManager:
    """Submission, scheduling, running, recovery and results of jobs (one per engine)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.settings = engine.settings
        self.store = jobsmeta.store_for(engine.catalog)
        self.results_root = Path(engine.settings.data_dir) / "jobs"
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_s = float(getattr(engine.settings, "job_lease_s", 12.0))
        self.max_running = max(1, int(getattr(engine.settings, "max_running_jobs", 2)))
        self.result_ttl_s = ttl.duration_us(str(getattr(engine.settings, "job_result_ttl", "1 day"))) / 1e6
        # Catalog-only statements (pg_catalog, information_schema, constants) are answered by the
        # gateway's evaluator; the gateway hands it over (engine never imports the gateway).
        self.catalog_queries: Any = None
        self._running: dict[str, _Running] = {}
        self._guard = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._changed = threading.Condition()
        # Fault injection for crash tests: TIDEGATE_JOB_TEST_PAUSE="start:30,committed:30" sleeps
        # that many seconds when a job starts running and after its writes landed (before its
        # row says so).
        self._pauses = {k: float(v) for k, _, v in (p.partition(":") for p in
                        os.environ.get("TIDEGATE_JOB_TEST_PAUSE", "").split(",") if p)}

    @property
    def gateway(self) -> str:
        return self.engine.events.gateway or f"{self.settings.host}:{self.settings.port}"

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._recover()
        self._thread = threading.Thread(target=self._loop, name="tidegate-jobs", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        """Stop scheduling; running jobs are stopped and wait PENDING for the next start."""
        self._stop.set()
        self._wake.set()
        with self._guard:
            running = list(self._running.values())
        for run in running:
            self._interrupt(run, "shutdown")
        for run in running:
            if run.thread is not None:
                run.thread.join(timeout=10)

    def wake(self) -> None:
        """Look for work now (this gateway just took the lead: jobs only a leader runs)."""
        self._wake.set()

    def _recover(self) -> None:
        """Jobs a previous process left: commits recovery completed are SUCCEEDED; on an embedded
        catalog RUNNING jobs are taken over (its data-dir lock makes every other owner dead); on
        a shared one other gateways may be running them: taken over when their leases expire."""
        self._finish_recovered()
        if self.engine.slot.shared:
            return
        for job in self.store.with_status(RUNNING):
            self._take_over(job, "its gateway stopped")

    def _finish_recovered(self) -> None:
        """Jobs whose commit recovery completed are SUCCEEDED: at start, and when a running
        gateway completed a dead one's journal (engine.Engine.sweep_slots), before any job whose
        lease expired is taken over and run again."""
        notes = self.engine.recovered_notes
        while notes:
            note = notes.pop(0)
            job_id = note.get("job")
            if job_id:
                self.store.finish(job_id, SUCCEEDED, rows=note.get("rows"), tag=note.get("tag"),
                                  result=note.get("result"), result_expires=self._expiry(),
                                  progress="committed (completed after a restart)")
                self._finished_event(job_id)

    def _take_over(self, job: Job, why: str) -> None:
        # the interrupted run's temporary tables (its session's schema, named by the job's pid)
        self.engine.discard_temp_schema(f"{TEMP_SCHEMA_PREFIX}{_JOB_PID_BASE + job.number}")
        if job.cancel_requested:
            self.store.finish(job.job_id, CANCELLED, error_code="57014", error_message="job cancelled",
                              progress="cancelled")
            self._finished_event(job.job_id)
        elif job.kind == ONCE:
            first = " ".join(job.statement.split()[:2]).upper()
            self.store.finish(
                job.job_id, FAILED, error_code="57P02",
                error_message=f"the job was interrupted ({why}) while running {first}, which is not "
                              "transactional, so it was not run again: check whether it took effect, and "
                              "submit it again if it did not", progress="interrupted")
            self._finished_event(job.job_id)
        else:
            log.info("job %s is run again: %s", job.job_id, why)
            self.store.requeue(job.job_id, f"waiting to run again ({why})")
        self._wake.set()

    # -- the scheduler ------------------------------------------------------------------------

    def _loop(self) -> None:
        last_beat = 0.0
        last_sweep = 0.0
        while not self._stop.is_set():
            self._wake.wait(0.5)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                now = time.monotonic()
                if now - last_beat >= min(1.0, self.lease_s / 3):
                    last_beat = now
                    self._heartbeat()
                if now - last_sweep >= 5.0:
                    last_sweep = now
                    self._expire_results()
                self._fill_slots()
            except Exception:  # noqa: BLE001 - the scheduler outlives any one failure
                log.exception("job scheduler pass failed")

    def _heartbeat(self) -> None:
        """Renew this gateway's leases; act on cancels asked through the catalog; take over the
        RUNNING jobs whose owner's lease expired."""
        self.store.renew(self.owner, self.lease_s)
        self._finish_recovered()
        with self._guard:
            running = dict(self._running)
        for job_id in self.store.cancel_requests(list(running)):
            self._interrupt(running[job_id], "cancel")
        for run in running.values():
            if run.progress.startswith("running"):
                text = self._spark_progress(JOB_TAG_PREFIX + run.job.job_id)
                if text is not None and text != run.progress:
                    self._progress(run, text)
        leases = self.store.leases()
        now = time.time()

        def expired(job: Job) -> bool:
            lease = leases.get(jobsmeta.job_resource(job.job_id))
            return lease is None or lease[1] < now

        orphans = [job for job in self.store.with_status(RUNNING) if job.job_id not in running and expired(job)]
        if orphans:
            # A dead gateway's interrupted commits first: a job whose commit they complete has
            # run, and must not run again.
            self.engine.sweep_slots()
            self._finish_recovered()
        for job in orphans:
            current = self.store.get(job.job_id)
            if current is not None and current.status == RUNNING:
                self._take_over(current, "its gateway stopped renewing its lease")

    def _spark_progress(self, tag: str) -> str | None:
        """``running: Spark stage 12, 3 of 8 tasks done`` for the Spark jobs tagged ``tag``."""
        try:
            sc = self.engine.runtime.wait(0).sparkContext
            tracker = sc.statusTracker()
            job_ids = list(sc._jsc.sc().statusTracker().getJobIdsForTag(tag))  # noqa: SLF001
            parts = []
            for jid in sorted(job_ids):
                info = tracker.getJobInfo(jid)
                if info is None or info.status != "RUNNING":
                    continue
                for sid in sorted(info.stageIds):
                    stage = tracker.getStageInfo(sid)
                    if stage is not None and stage.numActiveTasks:
                        parts.append(f"Spark stage {sid}, {stage.numCompletedTasks} of {stage.numTasks} tasks done")
            return "running: " + "; ".join(parts) if parts else None
        except Exception:  # noqa: BLE001 - progress is best effort
            return None

    def _fill_slots(self) -> None:
        with self._guard:
            free = self.max_running - len(self._running)
        if free <= 0:
            return
        leading = self.engine.leading.is_set() or not self.engine.slot.shared
        for job in self.store.with_status(PENDING, limit=None if not leading else free):
            if free <= 0:
                break
            if job.kind != TRANSACTIONAL and not leading:
                continue  # REFRESH TABLE and flow statements run on the leading gateway
            token = self.store.claim(job.job_id, self.owner, self.gateway, self.lease_s)
            if token is None:
                continue
            claimed = self.store.get(job.job_id)
            assert claimed is not None
            run = _Running(claimed, token)
            run.thread = threading.Thread(target=self._run, args=(run,), name=f"tidegate-{job.job_id}", daemon=True)
            with self._guard:
                self._running[job.job_id] = run
            free -= 1
            run.thread.start()

    def _expire_results(self) -> None:
        for job in self.store.expire_results(datetime.now(timezone.utc)):
            shutil.rmtree(self.results_root / job.job_id, ignore_errors=True)

    def _expiry(self) -> datetime:
        return datetime.now(timezone.utc) + timedelta(seconds=self.result_ttl_s)

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # -- running one job ----------------------------------------------------------------------

    def _info(self, job: Job, run: _Running) -> SessionInfo:
        s = job.session

        def progress(text: str) -> None:
            self._progress(run, text)

        return SessionInfo(user=job.submitted_by, database=s.get("database", "tidegate"),
                           application_name=s.get("application_name", ""),
                           backend_pid=_JOB_PID_BASE + job.number, settings=dict(s.get("settings") or {}),
                           superuser=bool(s.get("superuser")), notice=progress)

    def _progress(self, run: _Running, text: str, rows: int | None = None) -> None:
        run.progress = text
        self.store.set_progress(run.job.job_id, text, rows)
        self._notify()

    def _run(self, run: _Running) -> None:
        job = run.job
        timer = None
        if job.timeout_s:
            timer = threading.Timer(job.timeout_s, self._interrupt, args=(run, "timeout"))
            timer.daemon = True
            timer.start()
        started = time.monotonic()
        self.engine.events.record(events.JOB_STARTED, object=job.name or job.job_id, user=job.submitted_by,
                                  payload={"job_id": job.job_id, "attempt": job.attempts, "gateway": self.gateway})
        try:
            self._execute_job(run)
        except Exception as exc:  # noqa: BLE001 - every outcome is recorded
            self._failed(run, exc)
        finally:
            if timer is not None:
                timer.cancel()
            with self._guard:
                self._running.pop(job.job_id, None)
            if run.session is not None:
                try:
                    run.session.close()
                except Exception:  # noqa: BLE001
                    log.debug("closing job session failed", exc_info=True)
            self._finished_event(job.job_id, time.monotonic() - started)
            self._wake.set()
            self._notify()

    def _execute_job(self, run: _Running) -> None:
        job = run.job
        info = self._info(job, run)
        statement = job.statement
        cq = self.catalog_queries
        if job.kind == TRANSACTIONAL and cq is not None and cq.handles(statement):
            self._progress(run, "running")
            result = cq.execute(statement, [], info)
            doc, rows = self._store_result(run, result)
            self._succeed(run, doc, rows)
            return
        spark = self.engine.runtime.wait(timeout=600)
        sc = spark.sparkContext
        tag = JOB_TAG_PREFIX + job.job_id
        from engine.spark import background_jobs

        session = run.session = self.engine.open_session()
        if run.reason:
            raise SqlError("57014", "canceling statement due to user request")
        sc.addJobTag(tag)
        try:
            with background_jobs(spark):
                self._progress(run, "running")
                time.sleep(self._pauses.get("start", 0))
                if job.kind == REFRESH:
                    self._run_refresh(run, session, info)
                    return
                if job.kind == ONCE:
                    result = session.execute(statement, [], info)
                    doc, rows = self._store_result(run, result)
                    self._succeed(run, doc, rows)
                    return
                session.begin()
                result = session.execute(statement, [], info)
                doc, rows = self._store_result(run, result)

                def check() -> None:  # under the tables' locks, just before the commit point
                    if run.reason:
                        raise SqlError("57014", "canceling statement due to user request")
                    try:
                        self.store.check_lease(jobsmeta.job_resource(job.job_id), self.owner, run.token)
                    except LeaseLost:
                        run.reason = "lost"
                        raise SqlError("57014", "the job's lease was lost to another gateway") from None

                def landed() -> None:  # the writes are in; the journal record still exists
                    run.landed = True
                    if self._pauses.get("committed"):
                        log.info("job %s: its writes landed; pausing", job.job_id)
                        time.sleep(self._pauses["committed"])
                    self._succeed(run, doc, rows)

                session.commit_hooks = txnlog.CommitHooks(
                    note={"job": job.job_id, "tag": doc.get("tag"), "rows": rows, "result": doc},
                    check=check, landed=landed)
                self._progress(run, "committing")
                session.commit()
                if not run.landed:  # nothing to write (a query, an UPDATE matching nothing)
                    if run.reason:
                        raise SqlError("57014", "canceling statement due to user request")
                    self._succeed(run, doc, rows)
        finally:
            sc.removeJobTag(tag)

    def _run_begun_refresh(self, run: _Running, begun: dict[str, int], info: SessionInfo) -> None:
        """An asynchronous REFRESH TABLE's job: run the refresh the statement began, or, when a
        previous process began it, wait for the refresh recovery to finish it."""
        refresh = self.engine.refresh
        oid, rid = int(begun["oid"]), int(begun["rid"])
        t = self.engine.catalog.relation_by_oid(oid)
        if t is None:
            raise SqlError("42P01", "the table of this refresh was dropped")
        st = refresh.state.get(oid)
        if st.refresh_id == rid and st.status == rmeta.REFRESHING and refresh.began_here(oid, rid):
            def notify(text: str) -> None:  # the refresh's steps: the job's progress and the log
                log.info("%s", text)
                self._progress(run, text)

            refresh.run_begun(t, rid, notify, user=run.job.submitted_by)
        else:
            self._await_refresh(run, oid)
        doc, rows = self._store_result(run, CommandResult("REFRESH TABLE"))
        self._succeed(run, doc, rows)

    def _await_refresh(self, run: _Running, oid: int) -> None:
        """Wait for the refresh of ``oid`` in flight (resumed by the refresh recovery) to end; its
        error is this job's."""
        self._progress(run, "waiting for the interrupted refresh to finish")
        state = rmeta.store_for(self.engine.catalog)
        while state.get(oid).status != rmeta.IDLE:
            if run.reason:
                raise SqlError("57014", "canceling statement due to user request")
            time.sleep(0.2)
        last = state.get(oid)
        if last.last_error and "skipped" not in last.last_error and "duplicate key" not in last.last_error:
            raise SqlError("XX000", f"the refresh failed: {last.last_error}")

    def _run_refresh(self, run: _Running, session: EngineSession, info: SessionInfo) -> None:
        begun = run.job.session.get("refresh")
        if begun:
            self._run_begun_refresh(run, begun, info)
            return
        node = dialect.parse_one(run.job.statement)
        sql = dialect.RefreshTable(this=node.this, wait=True).sql(dialect=dialect.Tidegate)
        try:
            result = session.execute(sql, [], info)
        except SqlError as e:
            if e.sqlstate != "55000" or "not in idle state" not in e.message or run.job.attempts <= 1:
                raise
            # A re-run after a crash: the refresh this job started is being resumed by the refresh
            # recovery; its outcome is this job's.
            target = self.engine.catalog.resolve_table(node.this.name, node.this.db or None, info.search_path)
            self._await_refresh(run, target.oid)
            result = CommandResult("REFRESH TABLE")
        doc, rows = self._store_result(run, result)
        self._succeed(run, doc, rows)

    def _store_result(self, run: _Running, result: RowStream | CommandResult) -> tuple[dict[str, Any], int | None]:
        """Write a job's outcome where FETCH JOB finds it: rows to ``<data-dir>/jobs/<id>/``
        (Arrow IPC, streamed), the tag and notices to the returned document."""
        if isinstance(result, CommandResult):
            doc: dict[str, Any] = {"tag": result.tag, "notices": list(result.notices)}
            rows = _rows_of(result.tag)
            if result.rows is not None:
                doc.update(self._write_rows(run, result.rows))
            return doc, rows
        doc = {"command": result.command}
        doc.update(self._write_rows(run, result))
        return doc, doc["row_count"]

    def _write_rows(self, run: _Running, stream: RowStream) -> dict[str, Any]:
        folder = self.results_root / run.job.job_id
        folder.mkdir(parents=True, exist_ok=True)
        name = f"result-{run.job.attempts}.arrows"
        fields = [{"name": f.name, "type": _type_to_json(f.type), "table_oid": f.table_oid,
                   "column_number": f.column_number} for f in stream.fields]
        count = 0
        writer = None
        last = time.monotonic()
        try:
            with open(folder / name, "wb") as sink:
                for batch in stream.batches:
                    if run.reason:
                        raise SqlError("57014", "canceling statement due to user request")
                    if writer is None:
                        writer = pa.ipc.new_stream(sink, batch.schema,
                                                   options=pa.ipc.IpcWriteOptions(compression="zstd"))
                    writer.write_batch(batch)
                    count += batch.num_rows
                    if time.monotonic() - last >= 1.0:
                        last = time.monotonic()
                        self._progress(run, f"storing the result: {count} rows", count)
                if writer is not None:
                    writer.close()
                sink.flush()
                os.fsync(sink.fileno())
        finally:
            stream.close()
        return {"fields": fields, "file": name if writer is not None else None, "row_count": count}

    def _succeed(self, run: _Running, doc: dict[str, Any], rows: int | None) -> None:
        self.store.finish(run.job.job_id, SUCCEEDED, rows=rows, tag=doc.get("tag") or doc.get("command"),
                          result=doc, result_expires=self._expiry(), progress="finished")

    def _failed(self, run: _Running, exc: Exception) -> None:
        job = run.job
        if run.session is not None:
            try:
                run.session.rollback()
            except Exception:  # noqa: BLE001
                log.debug("rollback of job %s failed", job.job_id, exc_info=True)
        err = exc if isinstance(exc, SqlError) else None
        if err is None:
            log.exception("job %s failed", job.job_id, exc_info=exc)
        reason = run.reason
        if reason == "shutdown":
            self.store.requeue(job.job_id, "waiting to run again (its gateway shut down)")
            return
        if reason == "lost":
            return  # another gateway owns it now
        if reason == "cancel":
            self.store.finish(job.job_id, CANCELLED, error_code="57014", error_message="job cancelled",
                              progress="cancelled")
            return
        if reason == "timeout":
            self.store.finish(job.job_id, FAILED, error_code="57014",
                              error_message=f"canceling statement due to statement timeout (job timeout "
                                            f"{job.timeout_text})", progress="timed out")
            return
        self.store.finish(job.job_id, FAILED, error_code=err.sqlstate if err else "XX000",
                          error_message=err.message if err else f"internal error: {type(exc).__name__}",
                          progress="failed")

    def _interrupt(self, run: _Running, reason: str) -> None:
        """Stop a running job's Spark work (thread-safe): its statement fails with 57014."""
        if run.reason is None:
            run.reason = reason
        session = run.session
        if session is not None:
            session.cancel()
        try:
            spark = self.engine.runtime.wait(0)
            spark.sparkContext.cancelJobsWithTag(JOB_TAG_PREFIX + run.job.job_id)
        except Exception:  # noqa: BLE001 - Spark not up or nothing running
            log.debug("cancel of job %s found no Spark work", run.job.job_id)

    def _finished_event(self, job_id: str, elapsed: float | None = None) -> None:
        job = self.store.get(job_id)
        if job is None or not job.finished:
            return
        kind = {SUCCEEDED: events.JOB_FINISHED, FAILED: events.JOB_FAILED, CANCELLED: events.JOB_CANCELLED}[job.status]
        payload: dict[str, Any] = {"job_id": job_id, "rows": job.rows}
        if elapsed is not None:
            payload["duration_ms"] = round(elapsed * 1000, 1)
        if job.error_code:
            payload["error"] = {"sqlstate": job.error_code, "message": job.error_message}
        self.engine.events.record(kind, object=job.name or job_id, user=job.submitted_by, payload=payload)

    # -- statements ---------------------------------------------------------------------------

    @staticmethod
    def _job_ref(node: exp.Expression, params: list[Any]) -> str:
        """The job named after ``FETCH|WAIT|CANCEL JOB``: a string literal, or a parameter ($n)
        for WAIT and CANCEL (whose result columns do not depend on it)."""
        ref = node.this
        if isinstance(ref, exp.Literal):
            return ref.name
        if isinstance(node, dialect.FetchJob):
            raise SqlError("0A000", "FETCH JOB takes the job id as a literal",
                           hint="Write FETCH JOB 'job-000042': its result columns are the job's, known only "
                                "from the id.")
        n = int(ref.name)
        if not 1 <= n <= len(params) or not isinstance(params[n - 1], str):
            raise SqlError("22023", f"parameter ${n} must be a job id (text)")
        return params[n - 1]

    def execute(self, node: exp.Expression, info: SessionInfo, session: EngineSession,
                params: list[Any] | None = None) -> RowStream | CommandResult:
        """A job statement (a tree of the dialect: SUBMIT, SHOW JOBS, FETCH / WAIT / CANCEL JOB)."""
        params = list(params or [])
        if isinstance(node, dialect.SubmitJob):
            if params:
                raise SqlError("0A000", "SUBMIT JOB does not take parameters",
                               hint="Write the values into the statement: the job runs it later, without a client "
                                    "to bind them.")
            return self.submit(node, info, session)
        if isinstance(node, dialect.ShowJobs):
            return self._status_stream(self.store.all(), info)
        job = self._job(self._job_ref(node, params), info)
        if isinstance(node, dialect.FetchJob):
            return self.fetch(job, info)
        if isinstance(node, dialect.CancelJob):
            return self.cancel(job, info)
        timeout_s = None
        timeout = node.args.get("timeout")
        if timeout is not None:
            text = timeout.name
            micros = int(float(text) * 1e6) if re.fullmatch(r"\d+(\.\d+)?", text.strip()) else ttl.duration_us(text)
            if micros is None or micros < 0:
                raise SqlError("22023", f"invalid WAIT JOB timeout: {text!r}",
                               hint="Give a duration such as '10 s' or '5 min'.")
            timeout_s = micros / 1e6
        return self.wait(job, info, session, timeout_s)

    def describe(self, node: exp.Expression, info: SessionInfo) -> list[ResultField] | None:
        if isinstance(node, dialect.SubmitJob):
            return SUBMIT_COLUMNS
        if not isinstance(node, dialect.FetchJob):
            return _fields(STATUS_COLUMNS)
        job = self._job(self._job_ref(node, []), info)
        self._check_access(job, info, "fetch")
        doc = self._fetchable(job)
        if "fields" not in doc:
            return None
        return [ResultField(f["name"], _type_from_json(f["type"]), f.get("table_oid", 0), f.get("column_number", 0))
                for f in doc["fields"]]

    def submit(self, node: dialect.SubmitJob, info: SessionInfo, session: EngineSession) -> RowStream:
        if session.in_block:
            raise SqlError("25001", "SUBMIT JOB cannot run inside a transaction block",
                           hint="A job runs on its own, after the block would have ended: submit it in "
                                "autocommit mode.")
        sub = parse_submit(node)
        if sub.timeout_text is None:  # the session's statement_timeout bounds its jobs too
            limit = info.settings.get("statement_timeout", "0")
            micros = ttl.duration_us(limit) if limit not in ("", "0") else None
            if micros:
                sub.timeout_text, sub.timeout_s = f"{limit} (statement_timeout)", micros / 1_000_000
        job = self._record(sub, info)
        return RowStream.from_table(SUBMIT_COLUMNS, pa.table({"job_id": [job.job_id], "status": [job.status]}))

    def submit_internal(self, statement: str, info: SessionInfo, *, refresh: tuple[int, int] | None = None) -> Job:
        """A job the server submits on a user's behalf: an asynchronous REFRESH TABLE, whose
        refresh ``(table oid, refresh id)`` the statement already began."""
        return self._record(Submission(None, None, None, statement, statement_kind(statement)), info,
                            {"refresh": {"oid": refresh[0], "rid": refresh[1]}} if refresh is not None else {})

    def _record(self, sub: Submission, info: SessionInfo, extra: dict[str, Any] | None = None) -> Job:
        """The PENDING row of a submission (with the session it runs with), its event, a wake-up."""
        session = {"database": info.database, "application_name": info.application_name,
                   "settings": dict(info.settings), "superuser": bool(info.superuser), **(extra or {})}
        job = self.store.submit(name=sub.name, statement=sub.statement, kind=sub.kind, user=info.user,
                                session=session, timeout_text=sub.timeout_text, timeout_s=sub.timeout_s)
        self.engine.events.record(events.JOB_SUBMITTED, object=job.name or job.job_id, user=info.user,
                                  payload={"job_id": job.job_id, "statement": sub.statement[:1000],
                                           "timeout": sub.timeout_text})
        self._wake.set()
        return job

    def _job(self, job_id: str, info: SessionInfo | None = None) -> Job:
        """A job by id or, failing that, the most recent job of that name the caller submitted
        (any user's for a superuser)."""
        job = self.store.get(job_id)
        if job is None and info is not None:
            superuser = bool(self.engine.catalog.roles.is_superuser(info))
            job = self.store.latest_named(job_id, None if superuser else info.user)
        if job is None:
            raise SqlError("42704", f'job "{job_id}" does not exist')
        return job

    def _may_see(self, job: Job, info: SessionInfo) -> bool:
        return job.submitted_by == info.user or bool(self.engine.catalog.roles.is_superuser(info))

    def _check_access(self, job: Job, info: SessionInfo, what: str) -> None:
        if not self._may_see(job, info):
            raise SqlError("42501", f'permission denied to {what} job "{job.job_id}"',
                           detail=f'Only the user who submitted it ("{job.submitted_by}") or a superuser may.')

    def _status_stream(self, jobs: list[Job], info: SessionInfo) -> RowStream:
        table = jobsmeta.rows_table(jobs, self.store.leases(), lambda j: self._may_see(j, info))
        return RowStream.from_table(_fields(STATUS_COLUMNS), table, command="SHOW")

    def _fetchable(self, job: Job) -> dict[str, Any]:
        """The stored outcome of a finished job (raising its error for a failed one)."""
        if job.status == FAILED:
            raise SqlError(job.error_code or "XX000", job.error_message or "the job failed",
                           detail=f"This is the error of job {job.job_id}.")
        if job.status == CANCELLED:
            raise SqlError("57014", f"job {job.job_id} was cancelled")
        if job.status != SUCCEEDED:
            shown = jobsmeta.shown_status(job, self.store.leases())
            raise SqlError("55000", f'job "{job.job_id}" is {shown}: it has no result yet',
                           hint=f"WAIT JOB '{job.job_id}' blocks until it ends.")
        if job.result_gone or (job.result_expires is not None and job.result_expires <= datetime.now(timezone.utc)):
            raise SqlError("55000", f'the result of job "{job.job_id}" expired at {job.result_expires:%Y-%m-%d %H:%M:%S} UTC',
                           detail="Job results are kept for job_result_ttl after the job ends.",
                           hint="Submit the statement again.")
        return job.result or {"tag": job.tag}

    def fetch(self, job: Job, info: SessionInfo) -> RowStream | CommandResult:
        self._check_access(job, info, "fetch")
        doc = self._fetchable(job)
        if "fields" not in doc:
            return CommandResult(doc.get("tag") or "", notices=_notices(doc))
        fields = [ResultField(f["name"], _type_from_json(f["type"]), f.get("table_oid", 0), f.get("column_number", 0))
                  for f in doc["fields"]]
        path = self.results_root / job.job_id / doc["file"] if doc.get("file") else None
        if path is not None and not path.exists():
            raise SqlError("55000", f'the result of job "{job.job_id}" is no longer stored',
                           hint="Submit the statement again.")
        def batches() -> Iterator[pa.RecordBatch]:
            if path is None:
                return
            with pa.OSFile(str(path), "rb") as source:
                yield from pa.ipc.open_stream(source)

        gen = batches()

        def close() -> None:  # the portal closed early: the file with it (never from a running pull)
            try:
                gen.close()
            except ValueError:
                pass

        stream = RowStream(fields, gen, close=close, command=doc.get("command", "SELECT"))
        if "tag" in doc:  # RETURNING rows of a DML job: its tag, then the rows
            return CommandResult(doc["tag"], rows=stream, notices=_notices(doc))
        return stream

    def cancel(self, job: Job, info: SessionInfo) -> RowStream:
        self._check_access(job, info, "cancel")
        status = self.store.request_cancel(job.job_id)
        if status == CANCELLED and job.status == PENDING:
            begun = job.session.get("refresh")
            if begun:  # the refresh its REFRESH TABLE began never ran: the table is idle again
                state = self.engine.refresh.state
                if state.get(int(begun["oid"])).refresh_id == int(begun["rid"]):
                    state.fail(int(begun["oid"]), f"refresh cancelled (job {job.job_id})")
            self._finished_event(job.job_id)
        with self._guard:
            run = self._running.get(job.job_id)
        if run is not None:
            self._interrupt(run, "cancel")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not self._finished(job.job_id):
                with self._changed:
                    self._changed.wait(0.05)
        return self._status_stream([self._job(job.job_id)], info)

    def _finished(self, job_id: str) -> bool:
        job = self.store.get(job_id)
        return job is None or job.finished or job.status == PENDING

    def wait(self, job: Job, info: SessionInfo, session: EngineSession, timeout_s: float | None) -> RowStream:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        interrupt = session._interrupt
        last_text = None
        last_sent = 0.0
        while True:
            current = self._job(job.job_id)
            if current.finished:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            text = f"job {current.job_id}: {jobsmeta.shown_status(current, self.store.leases())}" + (
                f", {current.progress}" if current.progress else "")
            if info.notice is not None and text != last_text and time.monotonic() - last_sent >= 1.0:
                info.notice(text)
                last_text, last_sent = text, time.monotonic()
            # A job of this gateway notifies at every progress step and at its end; one of another
            # gateway is polled. A cancel of this session is noticed within 0.1 s.
            step = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))
            with self._changed:
                self._changed.wait(step)
            if interrupt.is_set():
                raise SqlError("57014", "canceling statement due to user request",
                               detail=f"The wait stopped; job {job.job_id} goes on.")
        return self._status_stream([self._job(job.job_id)], info)


__all__ = ["JobManager", "parse_submit", "statement_kind"]


def _notices(doc: dict[str, Any]) -> list[str | tuple[str, str, str]]:
    """A stored result's notices: texts, or (severity, SQLSTATE, text), which JSON keeps as lists."""
    return [n if isinstance(n, str) else tuple(n) for n in doc.get("notices") or []]
