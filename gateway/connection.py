"""One client connection: startup, authentication and the protocol 3.0 state machine.

Responses are accumulated in an output buffer and written at ReadyForQuery / Flush (or when the
buffer grows), so a pipelined extended-protocol batch costs one socket write. Backend calls run in
the server's thread pool; rows are pulled one Arrow batch at a time and written with ``drain()``,
so a large result never sits in memory whole.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import queue
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from gateway import gucs
from gateway.codec import decode_param, encode_data_rows
from gateway.copyfmt import CopyDecoder, CopyEncoder
from gateway import messages as m
from gateway.auth import MAX_AUTH_MESSAGE
from gateway.dispatch import (BackendSession, Classified, Kind, classify, parse_close, parse_copy, parse_declare,
                              parse_fetch, parse_fetch_motion, parse_savepoint_name, scroll_motion)
from gateway.messages import ProtocolError
from tidegate.sqllex import Statement, split_statements
from tidegate.dialect import too_deep
from tidegate.errors import SqlError
from tidegate.pgtypes import TEXT, TYPES_BY_OID, ColumnType
from tidegate.results import CommandResult, ResultField, RowStream
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from gateway.server import Server

log = logging.getLogger("tidegate.gateway")

_TEXT = ColumnType(TEXT)
_FLUSH_AT = 256 * 1024
# Socket write buffer: a large result is flushed once this much is queued, and drain() returns
# while a quarter is still queued, so the client keeps reading while the next chunk is encoded.
_WRITE_BUFFER_HIGH = 4 * 1024 * 1024
_INLINE_ENCODE_CELLS = 4096
_NOTICE_RANK = {"debug5": 0, "debug4": 0, "debug3": 0, "debug2": 0, "debug1": 0, "log": 1, "info": 2, "notice": 2,
                "warning": 3, "error": 4}
_SEVERITY_RANK = {"DEBUG": 0, "LOG": 1, "INFO": 4, "NOTICE": 2, "WARNING": 3}
_COUNTED = {"SELECT", "FETCH", "MOVE", "COPY", "UPDATE", "DELETE", "MERGE"}
_DISCONNECT_POLL_S = 0.25
_END = object()
_EXIT_KINDS = (Kind.COMMIT, Kind.ROLLBACK, Kind.ROLLBACK_TO)
# A socket accepted over max_connections is held this long at most (or authentication_timeout if
# shorter) to read its startup packet: long enough for a CancelRequest, or for a client's SSL
# negotiation so that it is told 53300 in the clear, as PostgreSQL tells it.
REFUSAL_GRACE_S = 2.0


def _tag(command: str, rows: int) -> str:
    if command in _COUNTED:
        return f"{command} {rows}"
    if command == "INSERT":
        return f"INSERT 0 {rows}"
    return command


def too_many_clients() -> SqlError:
    return SqlError("53300", "sorry, too many clients already", severity="FATAL")


def _cancel_error(reason: str) -> SqlError:
    if reason == "timeout":
        return SqlError("57014", "canceling statement due to statement timeout")
    return SqlError("57014", "canceling statement due to user request")


# Statements that rewrite existing rows: the engine evaluates them over committed data.
_ROW_REWRITING = frozenset({"UPDATE", "DELETE", "MERGE"})


def _display_of(described: ResultField, running: ResultField) -> ResultField:
    """A described column, with the display scale the running statement knows when the description
    could not: ``SELECT $1`` with a numeric parameter is numeric, and shows the value's own scale
    (1.50), which only the bound value carries. The type (what the client was told) never changes."""
    if described.type.pg.oid == running.type.pg.oid and described.type.pg.name == "numeric" \
            and described.type.scale is None and running.type.scale is not None:
        return replace(described, type=running.type)
    return described


@dataclass
class Prepared:
    """A parsed statement (named or unnamed) with its parameter types once known."""

    name: str
    sql: str
    cls: Classified
    param_oids: list[int]  # declared at Parse; 0 = infer
    offset: int = 0
    param_types: list[ColumnType] | None = None  # resolved (declared or inferred; text fallback)
    fields: list[ResultField] | None = None
    described: bool = False


@dataclass
class Portal:
    name: str
    stmt: Prepared
    params: list[Any]
    result_formats: list[int]  # as sent in Bind: [], [f] or one per column
    stream: RowStream | None = None
    fields: list[ResultField] | None = None  # what RowDescription announced / the stream's fields
    formats: list[int] = field(default_factory=list)
    started: bool = False
    done: bool = False
    pending: pa.RecordBatch | None = None
    iterator: Iterator[pa.RecordBatch] | None = None
    rows: int = 0
    command: str = "SELECT"
    final_tag: str | None = None  # CommandResult with RETURNING rows: its tag
    inline: bool = False
    holdable: bool = False  # DECLARE ... WITH HOLD: survives the end of the transaction
    # DECLARE ... SCROLL CURSOR: every row, read at DECLARE, and the position (0: before the first
    # row, n: on row n, len + 1: after the last), as PostgreSQL counts it
    scroll_rows: pa.Table | None = None
    scroll_pos: int = 0

    def close(self) -> Callable[[], None] | None:
        stream, self.stream, self.iterator, self.pending = self.stream, None, None, None
        self.done = True
        return stream.close if stream is not None else None


class Connection:
    """Serves one client socket until Terminate, EOF or a FATAL error."""

    def __init__(self, server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 over_capacity: bool = False) -> None:
        self.server = server
        # Accepted beyond max_connections: only a CancelRequest is served; a StartupMessage gets 53300.
        self.over_capacity = over_capacity
        self.reader = reader
        self.writer = writer
        writer.transport.set_write_buffer_limits(high=_WRITE_BUFFER_HIGH)
        self.loop = asyncio.get_running_loop()
        self.out = bytearray()
        peer = writer.get_extra_info("peername")
        self.peer_host: str | None = peer[0] if isinstance(peer, tuple) else None
        self.tls = False
        self.pid = 0
        self.secret = 0
        self.session: BackendSession | None = None
        self.settings = gucs.SessionSettings(max_connections=server.settings.max_connections)
        self.info = SessionInfo()
        self.status = "I"  # ReadyForQuery status: I idle, T in block, E failed block
        self.implicit_open = False  # an implicit transaction started for DML in this batch
        self.statements: dict[str, Prepared] = {}
        self.portals: dict[str, Portal] = {}
        self.skip_until_sync = False
        self.running = False
        self.cancel_reason: str | None = None
        self.current_stream: RowStream | None = None
        self.authenticated = False
        self.max_message = MAX_AUTH_MESSAGE  # raised to max_message_bytes once authenticated
        self.error_offset = 0  # where the statement of the current extended message starts in its Parse text
        self.savepoints: list[tuple[str, int, dict[str, str], dict[str, str]]] = []
        self.writes = 0  # statements that changed data; ROLLBACK TO SAVEPOINT cannot undo those

    # ------------------------------------------------------------------ I/O
    def send(self, data: bytes) -> None:
        self.out += data

    async def flush(self) -> None:
        if self.out:
            data = bytes(self.out)
            self.out.clear()
            self.writer.write(data)
            await self.writer.drain()

    async def read_message(self) -> tuple[bytes, bytes]:
        hdr = await self.reader.readexactly(5)
        kind = hdr[0:1]
        (length,) = struct.unpack("!i", hdr[1:5])
        if length < 4:
            raise ProtocolError(f"invalid message length {length}")
        if length - 4 > self.max_message:
            if not self.authenticated:
                raise ProtocolError("invalid message length")  # PostgreSQL's words for an oversize auth message
            raise ProtocolError(f"message of {length - 4} bytes exceeds the limit of {self.max_message} bytes",
                                "54000")
        body = await self.reader.readexactly(length - 4) if length > 4 else b""
        return kind, body

    def client_gone(self) -> bool:
        return bool(getattr(self.reader, "_eof", False)) or self.writer.transport.is_closing()

    # ------------------------------------------------------------------ lifecycle
    async def run(self) -> None:
        try:
            if await self._startup_in_time():
                await self.flush()
                await self.message_loop()
        except ProtocolError as e:
            await self._fatal(SqlError(e.sqlstate, e.message, severity="FATAL"))
        except SqlError as e:
            if e.severity != "FATAL":
                e = SqlError(e.sqlstate, e.message, detail=e.detail, hint=e.hint, severity="FATAL")
            await self._fatal(e)
        except (asyncio.IncompleteReadError, ConnectionError, OSError, asyncio.CancelledError):
            pass
        except Exception as e:  # never let one connection take the server down
            log.exception("connection failed")
            await self._fatal(SqlError("XX000", str(e) or type(e).__name__, severity="FATAL"))
        finally:
            await self._cleanup()

    async def _fatal(self, err: SqlError) -> None:
        try:
            self.out.clear()
            self.send(m.error_response(err, "FATAL"))
            await asyncio.wait_for(self.flush(), 2)
        except Exception:
            pass

    async def _cleanup(self) -> None:
        self.server.unregister(self)
        closers = [c for c in (p.close() for p in self.portals.values()) if c is not None]
        self.portals.clear()
        if self.running:
            self.cancel_reason = self.cancel_reason or "disconnect"
        session = self.session
        self.session = None

        def finish() -> None:
            for c in closers:
                try:
                    c()
                except Exception:
                    pass
            if session is not None:
                if self.running:
                    try:
                        session.cancel()
                    except Exception:
                        pass
                try:
                    session.close()
                except Exception:
                    log.exception("closing backend session failed")

        try:
            if closers or session is not None:
                await self.loop.run_in_executor(self.server.executor, finish)
        except Exception:
            pass
        try:
            self.writer.close()
        except Exception:
            pass

    # ------------------------------------------------------------------ startup
    async def _read_startup_packet(self) -> bytes:
        raw = await self.reader.readexactly(4)
        (length,) = struct.unpack("!i", raw)
        if length < 8 or length > m.MAX_STARTUP_PACKET:
            raise ProtocolError("invalid length of startup packet")
        return await self.reader.readexactly(length - 4)

    async def _startup_in_time(self) -> bool:
        """:meth:`startup` under authentication_timeout, so a client that stalls anywhere before it is
        authenticated (SSL handshake included) cannot hold its socket and slot for ever."""
        limit = self.server.settings.authentication_timeout
        if self.over_capacity:
            limit = min(limit, REFUSAL_GRACE_S) if limit > 0 else REFUSAL_GRACE_S
        if limit <= 0:
            return await self.startup()
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                return await self.startup()
        except TimeoutError:
            if not deadline.expired():
                raise  # a socket error (ETIMEDOUT), not our deadline
            if self.over_capacity:
                raise too_many_clients() from None
            raise SqlError("08006", "canceling authentication due to timeout", severity="FATAL") from None

    async def startup(self) -> bool:
        """Handle SSL/GSS negotiation, cancel requests and the StartupMessage; False = close quietly."""
        ssl_done = False
        while True:
            body = await self._read_startup_packet()
            (code,) = struct.unpack("!i", body[:4])
            if code == m.SSL_REQUEST and len(body) == 4:
                if ssl_done:
                    raise ProtocolError("SSL negotiation already done")
                ctx = self.server.ssl_context
                if ctx is None:
                    self.writer.write(b"N")
                    await self.writer.drain()
                    continue
                if len(getattr(self.reader, "_buffer", b"")):
                    raise ProtocolError("received unencrypted data after SSL request")
                self.writer.write(b"S")
                await self.writer.drain()
                await self.writer.start_tls(ctx)
                self.tls = ssl_done = True
                continue
            if code == m.GSSENC_REQUEST and len(body) == 4:
                self.writer.write(b"N")
                await self.writer.drain()
                continue
            if code == m.CANCEL_REQUEST and len(body) == 12:
                pid, secret = struct.unpack("!ii", body[4:12])
                self.server.cancel(pid, secret)
                return False
            major, minor = code >> 16, code & 0xFFFF
            if major != 3:
                raise ProtocolError(f"unsupported frontend protocol {major}.{minor}: server supports 3.0 to 3.0",
                                    "0A000")
            params = m.parse_startup_params(body[4:])
            if self.over_capacity:  # where PostgreSQL checks it too: after the packet, before authentication
                raise too_many_clients()
            return await self._accept(params, minor)

    async def _accept(self, params: dict[str, str], minor: int) -> bool:
        user = params.get("user", "")
        if not user:
            raise SqlError("28000", "no PostgreSQL user name specified in startup packet", severity="FATAL")
        if params.get("replication", "false").lower() not in ("false", "0", "off", "no"):
            raise SqlError("0A000", "replication connections are not supported", severity="FATAL")
        protocol_opts = [k for k in params if k.startswith("_pq_.")]
        if minor > 0 or protocol_opts:
            self.send(m.negotiate_protocol_version(m.PROTOCOL_3_0, protocol_opts))
            await self.flush()
        auth = self.server.authenticator

        async def send(data: bytes) -> None:
            self.send(data)
            await self.flush()

        try:
            auth.check_trust(user, self.peer_host)
            await auth.authenticate(user, self.tls, send, self.read_message)
            self.authenticated = True
            self.max_message = self.server.settings.max_message_bytes
            self.server.register(self)
            # The role's attributes: a trusted loopback name that is no role acts as a superuser.
            login = getattr(self.server.backend, "login", None)
            superuser = login(user, trusted=not auth.has_users) if login is not None else True
        except SqlError as e:
            if e.sqlstate.startswith("28"):  # invalid authorization: wrong password, no such role, no entry
                self._record_auth_failure(user, params, e)
            raise
        self.settings = gucs.SessionSettings(user, self.server.settings.max_connections)
        for key, value in params.items():
            if key in ("user", "database", "replication", "options") or key.startswith("_pq_."):
                continue
            self.settings.set_startup(key, value)
        for key, value in _parse_options(params.get("options", "")):
            self.settings.set_startup(key, value)
        self.info = SessionInfo(user=user, database=params.get("database") or user,
                                application_name=self.settings.values.get("application_name", ""),
                                backend_pid=self.pid, settings=self.settings.values, notice=self._live_notice,
                                superuser=superuser)
        self.session = self.server.backend.open_session()
        self.send(m.AUTH_OK)
        for name, value in self.settings.changed_reported():
            self.send(m.parameter_status(name, value))
        self.send(m.backend_key_data(self.pid, self.secret))
        self.send(m.READY["I"])
        return True

    def _record_auth_failure(self, user: str, params: dict[str, str], err: SqlError) -> None:
        """An auth.failed event (user, client address, reason); never delays or fails the reply."""
        record = getattr(self.server.backend, "record_event", None)
        if record is None:
            return
        peer = self.writer.get_extra_info("peername")
        record("auth.failed", user=user, payload={
            "user": user, "database": params.get("database") or user,
            "client_addr": self.peer_host or "local",
            "client_port": peer[1] if isinstance(peer, tuple) and len(peer) > 1 else None,
            "application_name": params.get("application_name", ""), "tls": self.tls,
            "sqlstate": err.sqlstate, "reason": err.message})

    # ------------------------------------------------------------------ cancel
    def request_cancel(self, reason: str = "user") -> None:
        """Cancel the running statement (CancelRequest, statement_timeout, client gone). Loop thread only."""
        if not self.running or self.cancel_reason is not None:
            return
        self.cancel_reason = reason
        session = self.session
        stream = self.current_stream

        def do_cancel() -> None:
            try:
                if session is not None:
                    session.cancel()
                if stream is not None:
                    stream.close()
            except Exception:
                log.exception("cancel failed")

        self.loop.run_in_executor(self.server.executor, do_cancel)

    def secret_matches(self, secret: int) -> bool:
        return hmac.compare_digest(struct.pack("!i", secret), struct.pack("!i", self.secret))

    async def blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a backend call in the pool; notices a dropped client meanwhile and cancels the work."""
        return await self._await_backend(self.loop.run_in_executor(self.server.executor, fn, *args))

    async def _await_backend(self, fut: asyncio.Future[Any]) -> Any:
        while True:
            done, _ = await asyncio.wait({fut}, timeout=_DISCONNECT_POLL_S)
            if done:
                return fut.result()
            if self.client_gone():
                self.request_cancel("disconnect")
            elif self.cancel_reason is not None and self.running and self.session is not None:
                # A cancel that arrived before the backend started its job found nothing to
                # interrupt; repeat it until the work notices.
                self.loop.run_in_executor(self.server.executor, self.session.cancel)

    # ------------------------------------------------------------------ message loop
    async def message_loop(self) -> None:
        handlers = {
            b"Q": self.on_query, b"P": self.on_parse, b"B": self.on_bind, b"D": self.on_describe,
            b"E": self.on_execute, b"C": self.on_close,
        }
        while True:
            kind, body = await self._read_idle()
            if kind == b"X":
                return
            if kind == b"S":
                await self.on_sync(body)
                continue
            if kind == b"H":
                await self.flush()
                continue
            if kind in (b"d", b"c", b"f"):
                continue  # copy messages after a failed COPY are dropped, as PostgreSQL does
            handler = handlers.get(kind)
            if handler is None:
                if kind == b"F":
                    await self._error(SqlError("0A000", "the function call protocol is not supported"))
                    self.send(m.READY[self.status])
                    await self.flush()
                    continue
                raise ProtocolError(f"invalid frontend message type {kind[0]}")
            if self.skip_until_sync:
                continue  # PostgreSQL ignores everything, Query included, until Sync after an error
            self.error_offset = 0
            try:
                await handler(body)
            except ProtocolError:
                raise
            except SqlError as e:
                await self._error(e, self.error_offset)
                if kind != b"Q":
                    self.skip_until_sync = True
            if len(self.out) > _FLUSH_AT:
                await self.flush()

    async def _read_idle(self) -> tuple[bytes, bytes]:
        """Next message; enforces idle_in_transaction_session_timeout / idle_session_timeout like PostgreSQL."""
        key = "idle_in_transaction_session_timeout" if self.status != "I" else "idle_session_timeout"
        raw = self.settings.values.get(key, "0")
        timeout_ms = 0 if raw == "0" else gucs.parse_ms(raw)
        if timeout_ms <= 0 or self.out:
            return await self.read_message()
        try:
            return await asyncio.wait_for(self.read_message(), timeout_ms / 1000.0)
        except asyncio.TimeoutError:
            if self.status != "I":
                raise SqlError("25P03", "terminating connection due to idle-in-transaction timeout",
                               severity="FATAL") from None
            raise SqlError("57P05", "terminating connection due to idle-session timeout", severity="FATAL") from None

    async def _error(self, err: SqlError, offset: int = 0) -> None:
        """Report a statement error and move the transaction state as PostgreSQL does."""
        if err.severity == "FATAL":
            raise err
        self.send(m.error_response(err, "ERROR", offset if err.position is not None else 0))
        if self.status == "T":
            self.status = "E"
        if self.implicit_open:
            self.implicit_open = False
            try:
                await self.blocking(self.session.rollback)
            except Exception:
                log.exception("rollback after error failed")

    def _notice(self, severity: str, sqlstate: str, text: str) -> None:
        level = self.settings.values.get("client_min_messages", "notice")
        if _SEVERITY_RANK.get(severity, 2) >= _NOTICE_RANK.get(level, 2):
            self.send(m.notice_response(text, severity, sqlstate))

    def _live_notice(self, text: str) -> None:
        """SessionInfo.notice: a NOTICE from a backend thread, sent and flushed from the event loop."""
        async def flush() -> None:
            try:
                await self.flush()
            except (ConnectionError, RuntimeError):
                pass  # the client is gone; the statement still finishes

        def send() -> None:
            self._notice("NOTICE", "00000", text)
            self.loop.create_task(flush())

        try:
            self.loop.call_soon_threadsafe(send)
        except RuntimeError:
            pass  # event loop closed: nobody to tell

    def _report_settings(self) -> None:
        for name, value in self.settings.changed_reported():
            self.send(m.parameter_status(name, value))
        self.info.application_name = self.settings.values.get("application_name", "")

    async def _end_batch(self) -> None:
        """End of a Query message / Sync: commit an implicit transaction, then ReadyForQuery."""
        if self.implicit_open:
            self.implicit_open = False
            try:
                await self.blocking(self.session.commit)
            except SqlError as e:
                self.send(m.error_response(e, "ERROR"))
            except Exception as e:
                log.exception("implicit commit failed")
                self.send(m.error_response(SqlError("XX000", str(e))))
        if self.status == "I":
            await self._close_portals()
        self._report_settings()
        self.info.in_transaction = self.status != "I"
        self.send(m.READY[self.status])
        await self.flush()

    async def _close_portals(self, keep: Portal | None = None, holdable_too: bool = False) -> None:
        closers = []
        for name in list(self.portals):
            p = self.portals[name]
            if p is keep or (p.holdable and not holdable_too):
                continue
            del self.portals[name]
            c = p.close()
            if c is not None:
                if p.inline:  # an answer computed on the loop closes on it
                    c()
                else:
                    closers.append(c)
        if closers:
            await self.blocking(lambda: [c() for c in closers])

    # ------------------------------------------------------------------ simple query
    async def on_query(self, body: bytes) -> None:
        self.skip_until_sync = False
        r = m.MessageReader(body)
        sql = r.cstring()
        r.done()
        # A Query destroys the unnamed statement and portal.
        self.statements.pop("", None)
        old = self.portals.pop("", None)
        if old is not None and (c := old.close()) is not None:
            await self.blocking(c)
        try:
            stmts = split_statements(sql)
        except SqlError as e:
            await self._error(e)
            stmts = None
        if stmts is not None:
            if not stmts:
                self.send(m.EMPTY_QUERY)
            batch = len(stmts) > 1
            for st in stmts:
                for text in st.notices:  # the lexer's (identifier truncation)
                    self._notice("NOTICE", "42622", text)
                try:
                    cls = classify(st.text)
                    prepared = Prepared("", st.text, cls, [], st.offset, param_types=[], described=True)
                    portal = Portal("", prepared, [], [])
                    await self.execute_portal(portal, 0, simple=True, batch=batch)
                except SqlError as e:
                    await self._error(e, st.offset)
                    break
        await self._end_batch()

    # ------------------------------------------------------------------ extended query
    async def on_parse(self, body: bytes) -> None:
        r = m.MessageReader(body)
        name = r.cstring()
        sql = r.cstring()
        n = r.int16()
        if n < 0:
            raise ProtocolError("invalid number of parameter types")
        oids = [r.uint32() for _ in range(n)]
        r.done()
        if name and name in self.statements:
            raise SqlError("42P05", f'prepared statement "{name}" already exists')
        stmts = split_statements(sql)
        if len(stmts) > 1:
            raise SqlError("42601", "cannot insert multiple commands into a prepared statement")
        st = stmts[0] if stmts else Statement("", 0)
        for text in st.notices:
            self._notice("NOTICE", "42622", text)
        self.error_offset = st.offset
        cls = classify(st.text)
        if self.status == "E" and cls.kind not in _EXIT_KINDS:
            raise self._aborted()
        for oid in oids:
            if oid and oid not in TYPES_BY_OID:
                raise SqlError("42704", f"type with OID {oid} does not exist")
        nparams = max(len(oids), st.max_param)
        if nparams > 65535:
            raise SqlError("54000", "too many parameters")
        oids = oids + [0] * (nparams - len(oids))
        prepared = Prepared(name, st.text, cls, oids, st.offset)
        if all(oids) or not oids:
            prepared.param_types = [ColumnType(TYPES_BY_OID[o]) for o in oids]
        if cls.kind == Kind.BACKEND:
            await self._ensure_described(prepared)  # surfaces syntax / missing-relation errors at Parse, as PostgreSQL does
        self.statements[name] = prepared
        self.send(m.PARSE_COMPLETE)

    def _aborted(self) -> SqlError:
        return SqlError("25P02", "current transaction is aborted, commands ignored until end of transaction block")

    async def _ensure_described(self, stmt: Prepared) -> None:
        """Parameter types (declared, else inferred by the backend, else text) and result columns."""
        if stmt.described:
            return
        kind = stmt.cls.kind
        declared = [ColumnType(TYPES_BY_OID[o]) if o else None for o in stmt.param_oids]
        if kind == Kind.BACKEND:
            ptypes, fields = await self._call(stmt.sql, self.session.describe, stmt.sql, declared, self.info)
            ptypes = list(ptypes or [])
            resolved = []
            for i, d in enumerate(declared):
                t = d or (ptypes[i] if i < len(ptypes) and ptypes[i] is not None else None)
                resolved.append(t if t is not None and t.pg.oid != 0 else _TEXT)
            stmt.param_types = resolved
            stmt.fields = list(fields) if fields is not None else None
        else:
            stmt.param_types = [d or _TEXT for d in declared]
            if kind == Kind.SESSION:
                stmt.fields = gucs.describe(stmt.sql, self.settings)
            elif kind == Kind.SET_CONFIG:
                hit = gucs.match_set_config(stmt.sql)
                stmt.fields = [ResultField(hit[3] if hit else "set_config", _TEXT)]
            elif kind == Kind.FETCH:
                verb, name, _, _ = parse_fetch_motion(stmt.sql)
                cursor = self.portals.get(name)
                if cursor is None:
                    raise SqlError("34000", f'cursor "{name}" does not exist')
                stmt.fields = cursor.fields if verb == "fetch" else None
                stmt.described = False  # depends on the cursor: describe again next time
                return
            else:
                stmt.fields = None
        stmt.described = True

    async def _call(self, sql: str, fn: Callable[..., Any], *args: Any) -> Any:
        if self.session.inline(sql, self.info):
            return fn(*args)
        return await self.blocking(fn, *args)

    async def on_bind(self, body: bytes) -> None:
        r = m.MessageReader(body)
        portal_name = r.cstring()
        stmt_name = r.cstring()
        nfmt = r.int16()
        if nfmt < 0:
            raise ProtocolError("invalid number of parameter format codes")
        pfmts = [r.int16() for _ in range(nfmt)]
        nparams = r.int16()
        if nparams < 0:
            raise ProtocolError("invalid number of parameters")
        raw: list[bytes | None] = []
        for _ in range(nparams):
            ln = r.int32()
            if ln < -1:
                raise ProtocolError(f"invalid parameter length {ln}")
            raw.append(None if ln == -1 else r.raw(ln))
        nres = r.int16()
        if nres < 0:
            raise ProtocolError("invalid number of result format codes")
        rfmts = [r.int16() for _ in range(nres)]
        r.done()
        for f in pfmts + rfmts:
            if f not in (0, 1):
                raise SqlError("22023", f"unsupported format code: {f}")
        stmt = self.statements.get(stmt_name)
        if stmt is None:
            raise SqlError("26000", f'prepared statement "{stmt_name}" does not exist')
        if portal_name and portal_name in self.portals:
            raise SqlError("42P03", f'portal "{portal_name}" already exists')
        if self.status == "E" and stmt.cls.kind not in _EXIT_KINDS:
            raise self._aborted()
        need = len(stmt.param_oids)
        if nparams != need:
            raise SqlError("08P01", f'bind message supplies {nparams} parameters, but prepared statement '
                                    f'"{stmt_name}" requires {need}')
        if nfmt not in (0, 1, nparams):
            raise SqlError("08P01", f"bind message has {nfmt} parameter formats but {nparams} parameters")
        if stmt.param_types is None or len(stmt.param_types) != need:
            await self._ensure_described(stmt)
        types = stmt.param_types or []
        values = []
        for i, v in enumerate(raw):
            fmt = pfmts[0] if nfmt == 1 else (pfmts[i] if nfmt else 0)
            values.append(decode_param(types[i], fmt, v, timezone=self.info.timezone))
        old = self.portals.pop(portal_name, None)
        if old is not None and (c := old.close()) is not None:
            await self.blocking(c)
        self.portals[portal_name] = Portal(portal_name, stmt, values, rfmts)
        self.send(m.BIND_COMPLETE)

    async def on_describe(self, body: bytes) -> None:
        r = m.MessageReader(body)
        what = r.byte()
        name = r.cstring()
        r.done()
        if what == ord("S"):
            stmt = self.statements.get(name)
            if stmt is None:
                raise SqlError("26000", f'prepared statement "{name}" does not exist')
            await self._ensure_described(stmt)
            self.send(m.parameter_description([t.pg.oid for t in stmt.param_types or []]))
            if stmt.fields:
                self.send(m.row_description(stmt.fields, [0] * len(stmt.fields)))
            else:
                self.send(m.NO_DATA)
        elif what == ord("P"):
            portal = self.portals.get(name)
            if portal is None:
                raise SqlError("34000", f'portal "{name}" does not exist')
            if portal.fields is None and not portal.started:
                await self._ensure_described(portal.stmt)
                portal.fields = portal.stmt.fields
            if portal.fields:
                portal.formats = self._expand_formats(portal.result_formats, len(portal.fields))
                self.send(m.row_description(portal.fields, portal.formats))
            else:
                self.send(m.NO_DATA)
        else:
            raise ProtocolError(f"invalid DESCRIBE message subtype {what}")

    @staticmethod
    def _expand_formats(codes: list[int], n: int) -> list[int]:
        if not codes:
            return [0] * n
        if len(codes) == 1:
            return codes * n
        if len(codes) != n:
            raise SqlError("08P01", f"bind message has {len(codes)} result formats but query has {n} columns")
        return list(codes)

    async def on_execute(self, body: bytes) -> None:
        r = m.MessageReader(body)
        name = r.cstring()
        max_rows = r.int32()
        r.done()
        portal = self.portals.get(name)
        if portal is None:
            raise SqlError("34000", f'portal "{name}" does not exist')
        self.error_offset = portal.stmt.offset
        await self.execute_portal(portal, max(max_rows, 0), simple=False, batch=True)

    async def on_close(self, body: bytes) -> None:
        r = m.MessageReader(body)
        what = r.byte()
        name = r.cstring()
        r.done()
        if what == ord("S"):
            stmt = self.statements.pop(name, None)
            if stmt is not None:
                for pname in [k for k, p in self.portals.items() if p.stmt is stmt]:
                    c = self.portals.pop(pname).close()
                    if c is not None:
                        await self.blocking(c)
        elif what == ord("P"):
            p = self.portals.pop(name, None)
            if p is not None and (c := p.close()) is not None:
                await self.blocking(c)
        else:
            raise ProtocolError(f"invalid CLOSE message subtype {what}")
        self.send(m.CLOSE_COMPLETE)

    async def on_sync(self, body: bytes) -> None:
        self.skip_until_sync = False
        await self._end_batch()

    # ------------------------------------------------------------------ statement execution
    async def execute_portal(self, portal: Portal, max_rows: int, *, simple: bool, batch: bool) -> None:
        """Start (first Execute) or resume a portal; statement_timeout and cancel cover the whole of it."""
        self.cancel_reason = None
        raw_timeout = self.settings.values.get("statement_timeout", "0")
        timeout_ms = 0 if raw_timeout == "0" else gucs.parse_ms(raw_timeout)
        timer = self.loop.call_later(timeout_ms / 1000.0, self.request_cancel, "timeout") if timeout_ms > 0 else None
        try:
            await self._execute_portal(portal, max_rows, simple=simple, batch=batch)
        finally:
            if timer is not None:
                timer.cancel()
            if self.cancel_reason != "disconnect":
                self.cancel_reason = None

    async def _execute_portal(self, portal: Portal, max_rows: int, *, simple: bool, batch: bool) -> None:
        """Send the results of a first or resumed Execute into the output buffer."""
        if portal.started and portal.stream is None:
            # ran to completion before (or had no rows): PostgreSQL answers with an empty completion
            self.send(m.command_complete(portal.final_tag or _tag(portal.command, 0)))
            return
        if self.status == "E" and portal.stmt.cls.kind not in _EXIT_KINDS:
            raise self._aborted()
        if not portal.started:
            portal.started = True
            await self._start(portal, simple, batch)
            if portal.stream is None:
                portal.done = True
                return
            if portal.fields is None or len(portal.fields) != len(portal.stream.fields):
                portal.fields = portal.stream.fields  # the described columns win when they agree
            else:
                portal.fields = [_display_of(d, r) for d, r in zip(portal.fields, portal.stream.fields)]
            n = len(portal.fields)
            portal.formats = [0] * n if simple else self._expand_formats(portal.result_formats, n)
            if simple:
                self.send(m.row_description(portal.fields, portal.formats))
        rows_before = portal.rows
        try:
            suspended = await self._pump(portal, max_rows)
        except BaseException:
            # error, cancel or vanished client: release the producer (Spark job, DuckDB cursor) now
            c = portal.close()
            if c is not None:
                self.loop.run_in_executor(self.server.executor, c)
            raise
        if suspended:
            self.send(m.PORTAL_SUSPENDED)
            return
        # Like PostgreSQL, the tag counts the rows of this Execute only (a resumed portal ends with "SELECT k").
        tag = portal.final_tag or _tag(portal.command, portal.rows - rows_before)
        c = portal.close()
        if c is not None:
            if portal.inline:
                c()
            else:
                await self.blocking(c)
        self.send(m.command_complete(tag))

    async def _start(self, portal: Portal, simple: bool, batch: bool) -> None:
        stmt = portal.stmt
        cls = stmt.cls
        kind = cls.kind
        in_block = self.status != "I"
        self.info.in_transaction = in_block
        if kind == Kind.EMPTY:
            self.send(m.EMPTY_QUERY)
        elif kind == Kind.BEGIN:
            if self.status != "I":
                self._notice("WARNING", "25001", "there is already a transaction in progress")
            else:
                if not self.implicit_open:
                    self.session.begin()
                self.implicit_open = False
                modes = cls.tx_modes
                self.settings.begin(modes.get("transaction_isolation"),
                                    None if "transaction_read_only" not in modes
                                    else modes["transaction_read_only"] == "on",
                                    None if "transaction_deferrable" not in modes
                                    else modes["transaction_deferrable"] == "on")
                self.status = "T"
            self.send(m.command_complete("BEGIN"))
        elif kind in (Kind.COMMIT, Kind.ROLLBACK):
            await self._finish_transaction(portal, commit=kind == Kind.COMMIT)
        elif kind == Kind.UNSUPPORTED:
            raise SqlError("0A000", cls.unsupported)
        elif kind == Kind.SESSION:
            reply = gucs.execute(stmt.sql, self.settings, in_block)
            await self._session_reply(portal, reply)
        elif kind == Kind.SET_CONFIG:
            reply = gucs.run_set_config(stmt.sql, self.settings, in_block)
            assert reply is not None
            await self._session_reply(portal, reply)
        elif kind in (Kind.SAVEPOINT, Kind.RELEASE, Kind.ROLLBACK_TO):
            self._savepoint(kind, stmt.sql)
        elif kind == Kind.DECLARE:
            await self._declare(portal)
        elif kind == Kind.FETCH:
            await self._fetch(portal, simple)
        elif kind == Kind.CLOSE:
            name = parse_close(stmt.sql)
            if name is None:
                await self._close_portals(keep=portal, holdable_too=True)
                self.send(m.command_complete("CLOSE CURSOR ALL"))
            else:
                cursor = self.portals.pop(name, None)
                if cursor is None:
                    raise SqlError("34000", f'cursor "{name}" does not exist')
                c = cursor.close()
                if c is not None:
                    await self.blocking(c)
                self.send(m.command_complete("CLOSE CURSOR"))
        elif kind == Kind.COPY_FROM:
            self._check_read_only(cls)
            await self._begin_implicit(cls, batch)
            await self._copy_from(portal)
            self.writes += 1
        elif kind == Kind.COPY_TO:
            await self._end_implicit_before_read()
            await self._copy_to(portal)
        else:
            self._check_read_only(cls)
            if cls.is_dml and cls.command in _ROW_REWRITING and not simple:
                # In an extended-protocol batch (an executemany of UPDATEs, a pipeline) each UPDATE
                # or DELETE commits what came before and runs on its own: reading N pending writes
                # N times would cost O(N^2). A simple Query's statements (a script) stay one
                # implicit transaction, as in PostgreSQL: one failing leaves none of them.
                await self._end_implicit_before_read(force=True)
            elif cls.is_dml and cls.command in _ROW_REWRITING:
                await self._begin_implicit(cls, batch)
            elif cls.is_dml:
                await self._begin_implicit(cls, batch)
            else:
                # a read in the batch sees its pending writes; DDL after DML in a batch commits
                # them first and runs on its own (CREATE FLOW and the like cannot run in a block)
                await self._end_implicit_before_read(force=cls.is_write)
            await self._backend_execute(portal)
            if cls.is_write:
                self.writes += 1

    def _statement_error(self, e: Exception, what: str) -> SqlError:
        """A backend failure as the client sees it: a cancelled statement says why it was cancelled
        (user request, timeout), a SqlError passes through, anything else is XX000 (and logged)."""
        if self.cancel_reason is not None and (not isinstance(e, SqlError) or e.sqlstate == "57014"):
            return _cancel_error(self.cancel_reason)
        if isinstance(e, SqlError):
            return e
        if isinstance(e, RecursionError):  # a statement nested past what a pass over it can follow
            return too_deep()
        log.error("%s", what, exc_info=e)
        return SqlError("XX000", str(e) or type(e).__name__)

    def _check_read_only(self, cls: Classified) -> None:
        if cls.is_write and self.settings.values.get("transaction_read_only") == "on" and self.status != "I":
            raise SqlError("25006", f"cannot execute {cls.command} in a read-only transaction")

    async def _begin_implicit(self, cls: Classified, batch: bool) -> None:
        """DML in a multi-statement Query or an extended batch runs in one implicit transaction."""
        if cls.is_dml and batch and self.status == "I" and not self.implicit_open:
            self.session.begin()
            self.implicit_open = True

    async def _end_implicit_before_read(self, force: bool = False) -> None:
        """Commit pending implicit-transaction writes before a read, so the read sees them.

        Engine transactions buffer writes until commit; consecutive DML (executemany, pipelines)
        still share one commit, but a read in the same batch must see the rows written before it.
        A backend session whose reads see its own pending writes (``reads_own_writes = True``)
        keeps the whole batch in one transaction, exactly as PostgreSQL does.
        """
        if self.implicit_open and (force or not getattr(self.session, "reads_own_writes", False)):
            self.implicit_open = False
            await self.blocking(self.session.commit)

    def _savepoint(self, kind: Kind, sql: str) -> None:
        """SAVEPOINT / RELEASE / ROLLBACK TO over gateway state; data changes after a savepoint cannot be undone."""
        name = parse_savepoint_name(sql)
        verb = {Kind.SAVEPOINT: "SAVEPOINT", Kind.RELEASE: "RELEASE SAVEPOINT", Kind.ROLLBACK_TO: "ROLLBACK TO SAVEPOINT"}[kind]
        if self.status == "I":
            raise SqlError("25P01", f"{verb} can only be used in transaction blocks")
        if kind == Kind.SAVEPOINT:
            self.savepoints.append((name, self.writes, dict(self.settings.session), dict(self.settings.local)))
            self.send(m.command_complete("SAVEPOINT"))
            return
        idx = next((i for i in range(len(self.savepoints) - 1, -1, -1) if self.savepoints[i][0] == name), None)
        if idx is None:
            raise SqlError("3B001", f'savepoint "{name}" does not exist')
        if kind == Kind.RELEASE:
            del self.savepoints[idx:]
            self.send(m.command_complete("RELEASE"))
            return
        _, writes, session, local = self.savepoints[idx]
        if writes != self.writes:
            raise SqlError("0A000", "ROLLBACK TO SAVEPOINT cannot undo data changes made after the savepoint",
                           hint="Roll back the whole transaction instead.")
        del self.savepoints[idx + 1:]
        self.settings.session = dict(session)
        self.settings.local = dict(local)
        self.settings._refresh()
        self.status = "T"
        self.send(m.command_complete("ROLLBACK"))

    async def _declare(self, portal: Portal) -> None:
        d = parse_declare(portal.stmt.sql)
        if self.status == "I" and not d.hold and not self.implicit_open:
            raise SqlError("25P01", "DECLARE CURSOR can only be used in transaction blocks")
        if d.name in self.portals:
            raise SqlError("42P03", f'cursor "{d.name}" already exists')
        query_cls = classify(d.query)
        if query_cls.kind != Kind.BACKEND or query_cls.is_write:
            raise SqlError("42601", "DECLARE CURSOR must be followed by a SELECT or VALUES query")
        stmt = Prepared(d.name, d.query, query_cls, [], portal.stmt.offset + d.query_offset, [], None, True)
        cursor = Portal(d.name, stmt, portal.params, [], holdable=d.hold)
        cursor.started = True
        await self._end_implicit_before_read()
        await self._backend_execute(cursor)
        if cursor.stream is None:
            raise SqlError("42601", "DECLARE CURSOR must be followed by a query that returns rows")
        cursor.fields = cursor.stream.fields
        if d.scroll:  # materialised: FETCH moves both ways over rows held in memory
            stream = cursor.stream
            cursor.scroll_rows = await self.blocking(self._materialise, stream)
        self.portals[d.name] = cursor
        self.send(m.command_complete("DECLARE CURSOR"))

    @staticmethod
    def _materialise(stream: RowStream) -> pa.Table:
        try:
            batches = [b for b in stream.batches if b.num_rows]
        finally:
            stream.close()
        if batches:
            return pa.Table.from_batches(batches)
        return pa.Table.from_batches([], schema=pa.schema(
            [pa.field(f"c{i}", pa.null()) for i in range(len(stream.fields))]))

    async def _fetch_scroll(self, portal: Portal, cursor: Portal, simple: bool) -> None:
        """FETCH / MOVE on a SCROLL cursor: any direction, PostgreSQL's positions and counts."""
        verb, _, kind, count = parse_fetch_motion(portal.stmt.sql)
        table = cursor.scroll_rows
        rows, cursor.scroll_pos = scroll_motion(kind, count, cursor.scroll_pos, table.num_rows)
        fields = cursor.fields
        formats = [0] * len(fields) if simple else self._expand_formats(portal.result_formats, len(fields))
        if simple and verb == "fetch":
            self.send(m.row_description(fields, formats))
        if verb == "fetch" and len(rows):
            picked = table.take(pa.array(list(rows), pa.int64()))
            self.send(encode_data_rows(picked.combine_chunks().to_batches()[0] if picked.num_rows else picked,
                                       fields, formats, timezone=self.info.timezone))
        self.send(m.command_complete(f"{verb.upper()} {len(rows)}"))

    async def _fetch(self, portal: Portal, simple: bool) -> None:
        _, name, _, _ = parse_fetch_motion(portal.stmt.sql)
        cursor = self.portals.get(name)
        if cursor is None or cursor is portal:
            raise SqlError("34000", f'cursor "{name}" does not exist')
        if cursor.scroll_rows is not None:
            await self._fetch_scroll(portal, cursor, simple)
            return
        verb, name, count = parse_fetch(portal.stmt.sql)
        if cursor.stream is None:
            self.send(m.command_complete(f"{verb.upper()} 0"))
            return
        fields = cursor.fields or cursor.stream.fields
        cursor.fields = fields
        own_formats = cursor.formats or [0] * len(fields)
        # FETCH encodes in the formats of the FETCH statement's portal; the cursor (possibly a
        # protocol-level portal that MOVE/FETCH address by name) keeps its own for later Executes.
        cursor.formats = [0] * len(fields) if simple else self._expand_formats(portal.result_formats, len(fields))
        if simple and verb == "fetch":
            self.send(m.row_description(fields, cursor.formats))
        before = cursor.rows
        try:
            await self._pump(cursor, count or 0, discard=verb == "move")
        finally:
            cursor.formats = own_formats
        self.send(m.command_complete(f"{verb.upper()} {cursor.rows - before}"))

    async def _finish_transaction(self, portal: Portal, commit: bool) -> None:
        if self.status == "I":
            # outside a block (or inside an implicit one, which it ends) PostgreSQL only warns
            self._notice("WARNING", "25P01", "there is no transaction in progress")
            if self.implicit_open:
                self.implicit_open = False
                await self.blocking(self.session.commit if commit else self.session.rollback)
            self.send(m.command_complete("COMMIT" if commit else "ROLLBACK"))
            return
        failed = self.status == "E"
        self.status = "I"
        self.implicit_open = False
        self.savepoints.clear()
        await self._close_portals(keep=portal)
        try:
            if commit and not failed:
                await self.blocking(self.session.commit)
                self.settings.end(True)
            else:
                await self.blocking(self.session.rollback)
                self.settings.end(False)
        except BaseException:
            self.settings.end(False)
            raise
        self.send(m.command_complete("COMMIT" if commit and not failed else "ROLLBACK"))

    async def _session_reply(self, portal: Portal, reply: gucs.SessionReply) -> None:
        for n in reply.notices:
            self._notice(n.severity, n.sqlstate, n.message)
        if reply.action is not None:
            what, name = reply.action
            if what in ("discard_all", "discard_temp"):  # both drop the session's temporary relations
                discard = getattr(self.session, "discard_temp", None)
                if discard is not None:
                    await self.blocking(discard)
            if what in ("discard_all", "discard_plans"):
                forget = getattr(self.session, "discard_plans", None)
                if forget is not None:
                    forget()
            if what == "discard_all":
                await self._close_portals(keep=portal)
                self.statements = {k: v for k, v in self.statements.items() if v is portal.stmt}
            elif what == "deallocate":
                if name is None:
                    self.statements = {k: v for k, v in self.statements.items() if v is portal.stmt}
                elif name not in self.statements:
                    raise SqlError("26000", f'prepared statement "{name}" does not exist')
                else:
                    del self.statements[name]
        if reply.rows is not None:
            portal.stream = reply.rows
            portal.inline = True
            portal.command = "SHOW" if reply.tag == "SHOW" else reply.rows.command
            portal.final_tag = None if reply.tag in ("SHOW",) or reply.tag.startswith("SELECT") else reply.tag
            if portal.fields is None:
                portal.fields = reply.rows.fields
        else:
            self.send(m.command_complete(reply.tag))

    async def _backend_execute(self, portal: Portal) -> None:
        stmt = portal.stmt
        answer = await self._run_statement(True, self.session.answer_now, stmt.sql, portal.params, self.info)
        if answer is not None:  # ready at once, computed on the loop; its rows are encoded (and the
            # portal closed) on the loop too if they are few, else in the pool
            size = getattr(answer, "size", None)
            few = size is not None and size * max(len(getattr(answer, "fields", ())), 1) <= _INLINE_ENCODE_CELLS
            self._adopt_result(portal, answer, few)
            return
        inline = self.session.inline(stmt.sql, self.info, portal.params)
        result = await self._run_statement(inline, self.session.execute, stmt.sql, portal.params, self.info)
        self._adopt_result(portal, result, inline)

    def _adopt_result(self, portal: Portal, result: Any, inline: bool) -> None:
        if isinstance(result, CommandResult):
            for notice in result.notices:  # a text (NOTICE) or (severity, SQLSTATE, text)
                if isinstance(notice, str):
                    self._notice("NOTICE", "00000", notice)
                else:
                    self._notice(*notice)
            if result.rows is None:
                self.send(m.command_complete(result.tag))
                return
            portal.stream = result.rows
            portal.final_tag = result.tag
        elif isinstance(result, RowStream):
            portal.stream = result
            portal.command = result.command
        else:
            raise SqlError("XX000", f"backend returned {type(result).__name__}, not a result")
        portal.inline = inline
        self.current_stream = portal.stream

    async def _run_statement(self, inline: bool, fn: Callable[..., Any], *args: Any) -> Any:
        """A backend call with cancel, statement_timeout and crash handling."""
        if inline:
            try:
                return fn(*args)
            except Exception as e:
                raise self._statement_error(e, "backend call failed") from None
        self.running = True
        self.current_stream = None
        try:
            result = await self.blocking(fn, *args)
        except Exception as e:
            raise self._statement_error(e, "backend call failed") from None
        finally:
            self.running = False
            if self.cancel_reason == "disconnect":
                raise ConnectionResetError("client disconnected")
        if self.cancel_reason is not None:
            # cancelled while the backend was still planning: the statement fails all the same
            stream = result.rows if isinstance(result, CommandResult) else result
            if isinstance(stream, RowStream):
                await self.blocking(stream.close)
            raise _cancel_error(self.cancel_reason)
        return result

    def _next_chunk(self, portal: Portal, limit: int) -> tuple[bytes, int, bool]:
        """Next encoded piece of ``portal`` (at most ``limit`` rows if > 0): (DataRows, rows, exhausted)."""
        batch = portal.pending
        portal.pending = None
        if batch is None:
            if portal.iterator is None:
                portal.iterator = iter(portal.stream.batches)
            while True:
                batch = next(portal.iterator, None)
                if batch is None:
                    return b"", 0, True
                if batch.num_rows:
                    break
        if limit and batch.num_rows > limit:
            portal.pending = batch.slice(limit)
            batch = batch.slice(0, limit)
        data = encode_data_rows(batch, portal.fields, portal.formats, timezone=self.info.timezone)
        return data, batch.num_rows, False

    async def _pump(self, portal: Portal, max_rows: int, discard: bool = False) -> bool:
        """Send rows until the stream ends (False) or ``max_rows`` were sent (True = suspended).

        Without a row limit the next chunk is fetched and encoded in the pool while this one is
        written, so Spark, the encoder and the client work at the same time.
        """
        sent = 0
        self.current_stream = portal.stream
        # rows already in memory and few: encoded here, no worker thread (nor read-ahead)
        size = getattr(portal.stream, "size", None)
        in_hand = portal.inline or (size is not None and size * max(len(portal.fields), 1) <= _INLINE_ENCODE_CELLS)
        self.running = not in_hand
        read_ahead = not max_rows and not in_hand
        ahead: asyncio.Future[tuple[bytes, int, bool]] | None = None
        try:
            while True:
                if self.cancel_reason is not None:
                    raise _cancel_error(self.cancel_reason)
                limit = max_rows - sent if max_rows else 0
                if max_rows and limit == 0:
                    return True  # like PostgreSQL: no look-ahead, an exact fit still suspends
                small = portal.pending is not None and portal.pending.num_rows * max(len(portal.fields), 1) \
                    <= _INLINE_ENCODE_CELLS
                try:
                    if ahead is not None:
                        fut, ahead = ahead, None
                        data, n, exhausted = await self._await_backend(fut)
                    elif in_hand or small:
                        data, n, exhausted = self._next_chunk(portal, limit)
                    else:
                        data, n, exhausted = await self.blocking(self._next_chunk, portal, limit)
                except (ConnectionError, asyncio.CancelledError):
                    raise
                except Exception as e:
                    raise self._statement_error(e, "reading result rows failed") from None
                if exhausted:
                    return False
                if read_ahead:
                    ahead = self.loop.run_in_executor(self.server.executor, self._next_chunk, portal, 0)
                if not discard:
                    self.send(data)
                sent += n
                portal.rows += n
                if len(self.out) > _FLUSH_AT:
                    await self.flush()
        finally:
            if ahead is not None:
                # The stream must be idle before the portal can be closed; its result is not wanted.
                await asyncio.wait({ahead})
                if not ahead.cancelled():
                    ahead.exception()
            self.running = False
            self.current_stream = None
            if self.cancel_reason == "disconnect":
                raise ConnectionResetError("client disconnected")

    # ------------------------------------------------------------------ COPY
    async def _copy_from(self, portal: Portal) -> None:
        sql = portal.stmt.sql
        opts = parse_copy(sql)
        target = await self._run_statement(False, self.session.copy_target, sql, self.info)
        decoder = CopyDecoder(target.fields, opts.format, opts.delimiter, opts.null, opts.header, opts.quote,
                              opts.escape, table=target.table, timezone=self.info.timezone)
        fmt = 1 if opts.format == "binary" else 0
        self.send(m.copy_response(b"G", fmt, [fmt] * len(target.fields)))
        await self.flush()
        q: queue.Queue[Any] = queue.Queue(maxsize=4)
        abandoned = False

        def batches() -> Iterator[pa.RecordBatch]:
            while True:
                try:
                    item = q.get(timeout=0.5)
                except queue.Empty:
                    if abandoned:
                        raise SqlError("08006", "client disconnected during COPY") from None
                    continue
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item

        self.running = True
        fut = self.loop.run_in_executor(self.server.executor, self.session.copy_from, target, batches(),
                                        self.info)

        async def put(item: Any) -> None:
            while not fut.done():
                try:
                    q.put_nowait(item)
                    return
                except queue.Full:
                    await asyncio.wait({fut}, timeout=0.005)

        async def fail(err: BaseException) -> None:
            await put(err)
            try:
                await fut
            except BaseException:
                pass

        try:
            while True:
                if fut.done():
                    fut.result()  # the writer failed early: report it now
                    raise SqlError("08P01", "COPY writer finished before the end of the data")
                try:
                    kind, body = await self.read_message()
                except BaseException as e:
                    await fail(SqlError("08006", "client disconnected during COPY"))
                    raise e
                if kind == b"d":
                    try:
                        out = decoder.feed(body)
                    except Exception as e:  # the session survives a decoder failure: an ErrorResponse
                        err = self._statement_error(e, "COPY data could not be decoded")
                        await fail(err)
                        raise err from None
                    for b in out:
                        await put(b)
                elif kind == b"c":
                    try:
                        out = decoder.finish()
                    except Exception as e:
                        err = self._statement_error(e, "COPY data could not be decoded")
                        await fail(err)
                        raise err from None
                    for b in out:
                        await put(b)
                    await put(_END)
                    count = await self._await_copy(fut)
                    self.send(m.command_complete(f"COPY {count}"))
                    return
                elif kind == b"f":
                    reason = m.MessageReader(body).cstring()
                    err = SqlError("57014", f"COPY from stdin failed: {reason}")
                    await fail(err)
                    raise err
                elif kind in (b"H", b"S"):
                    continue
                else:
                    await fail(SqlError("08P01", "unexpected message during COPY"))
                    raise ProtocolError(f"unexpected message type 0x{kind[0]:02X} during COPY from stdin")
        finally:
            abandoned = True
            self.running = False

    async def _await_copy(self, fut: asyncio.Future[Any]) -> int:
        while True:
            done, _ = await asyncio.wait({fut}, timeout=_DISCONNECT_POLL_S)
            if done:
                try:
                    return int(fut.result())
                except Exception as e:
                    raise self._statement_error(e, "COPY failed") from None
            if self.client_gone():
                self.request_cancel("disconnect")

    async def _copy_to(self, portal: Portal) -> None:
        opts = parse_copy(portal.stmt.sql)
        select = opts.select_sql()
        inline = self.session.inline(select, self.info, ())
        result = await self._run_statement(inline, self.session.execute, select, (), self.info)
        stream = result.rows if isinstance(result, CommandResult) else result
        if not isinstance(stream, RowStream):
            raise SqlError("0A000", "COPY query must return rows")
        encoder = CopyEncoder(stream.fields, opts.format, delimiter=opts.delimiter, null=opts.null,
                              header=opts.header, quote=opts.quote, escape=opts.escape,
                              timezone=self.info.timezone)
        fmt = 1 if opts.format == "binary" else 0
        self.send(m.copy_response(b"H", fmt, [fmt] * len(stream.fields)))
        split = _row_splitter(opts.format)
        lead = encoder.header_bytes() or b""
        it = iter(stream.batches)
        total = 0
        self.running = not inline
        self.current_stream = stream

        def chunk() -> tuple[bytes, int] | None:
            while True:
                b = next(it, None)
                if b is None:
                    return None
                if b.num_rows:
                    return encoder.encode(b), b.num_rows

        try:
            if lead and opts.format != "binary":
                self.send(m.copy_data(lead))
                lead = b""
            while True:
                if self.cancel_reason is not None:
                    raise _cancel_error(self.cancel_reason)
                try:
                    got = chunk() if inline else await self.blocking(chunk)
                except SqlError:
                    raise
                except Exception as e:
                    if self.cancel_reason is not None:
                        raise _cancel_error(self.cancel_reason) from None
                    raise SqlError("XX000", str(e) or type(e).__name__) from None
                if got is None:
                    break
                data, n = got
                total += n
                pieces = split(data)
                if lead and pieces:
                    pieces[0] = lead + pieces[0]
                    lead = b""
                self.send(b"".join(m.copy_data(p) for p in pieces))
                if len(self.out) > _FLUSH_AT:
                    await self.flush()
            trailer = encoder.trailer() or b""
            if lead or trailer:
                self.send(m.copy_data(lead + trailer))
            self.send(m.COPY_DONE)
            self.send(m.command_complete(f"COPY {total}"))
        finally:
            self.running = False
            if self.cancel_reason == "disconnect":
                raise ConnectionResetError("client disconnected")
            try:
                stream.close()
            except Exception:
                pass


def _split_text_rows(data: bytes) -> list[bytes]:
    """Text COPY rows end with a raw newline (newlines in values are escaped): one CopyData per row."""
    if not data:
        return []
    parts = data.split(b"\n")
    last = parts.pop()
    out = [p + b"\n" for p in parts]
    if last:
        out.append(last)
    return out


def _split_binary_rows(data: bytes) -> list[bytes]:
    """Binary COPY tuples (int16 count, then int32-length fields): one CopyData per tuple, as libpq clients expect."""
    out = []
    pos = 0
    n = len(data)
    unpack16 = struct.Struct("!h").unpack_from
    unpack32 = struct.Struct("!i").unpack_from
    while pos < n:
        start = pos
        (count,) = unpack16(data, pos)
        pos += 2
        for _ in range(count):
            (ln,) = unpack32(data, pos)
            pos += 4 + max(ln, 0)
        out.append(data[start:pos])
    return out


def _row_splitter(fmt: str) -> Callable[[bytes], list[bytes]]:
    if fmt == "text":
        return _split_text_rows
    if fmt == "binary":
        return _split_binary_rows
    return lambda data: [data] if data else []


_OPTION_RE = re.compile(r"(?:\\.|[^\s\\])+")


def _parse_options(options: str) -> list[tuple[str, str]]:
    """The ``options`` startup parameter: ``-c name=value`` / ``--name=value``, backslash escapes spaces."""
    out: list[tuple[str, str]] = []
    tokens = [re.sub(r"\\(.)", r"\1", t) for t in _OPTION_RE.findall(options)]
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "-c" and i + 1 < len(tokens):
            spec = tokens[i + 1]
            i += 2
        elif t.startswith("-c"):
            spec = t[2:]
            i += 1
        elif t.startswith("--"):
            spec = t[2:]
            i += 1
        else:
            raise SqlError("42601", f'invalid command-line argument for server process: {t}', severity="FATAL",
                           hint='Try "postgres --help" for more information.')
        if "=" not in spec:
            raise SqlError("42601", f"-c {spec} requires a value", severity="FATAL")
        key, value = spec.split("=", 1)
        out.append((key.replace("-", "_"), value))
    return out
