"""Wire-protocol tests of the gateway: framing, startup, extended protocol, COPY, cancel, robustness.

The server runs in-process (its own event loop in a background thread) over ``ProtoBackend``, a
small in-test backend that implements the BackendSession contract with pyarrow tables. That is
enough for protocol-level behaviour; statements against the real engine are tested elsewhere.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from catalog import slots
from gateway.server import ServerThread
from tidegate.config import Settings
from tidegate.errors import SqlError
from tidegate.pgtypes import INT4, INT8, TEXT, ColumnType
from tidegate.results import CommandResult, CopyTarget, ResultField, RowStream
from tidegate.session import SessionInfo

# --------------------------------------------------------------------------- in-test backend

_INT8 = ColumnType(INT8)
_INT4 = ColumnType(INT4)
_TEXT = ColumnType(TEXT)


class ProtoSession:
    """Statements understood (all others: 42601):

    SELECT <int>[, <int>...]        one row of int4 columns ?column?
    SELECT n FROM series(N)         N int8 rows, lazily in batches of 1000
    SELECT $1 [, $2...]             echo the parameters as text
    SELECT * FROM t                 the rows stored in t (id int4, name text)
    INSERT INTO t VALUES (i, 's')   one row (visible after commit when in a transaction)
    SELECT pg_sleep_forever()       blocks until cancel(): 57014
    SELECT 1/0                      22012
    SELECT crash()                  RuntimeError (internal error path)
    """

    def __init__(self, backend: ProtoBackend) -> None:
        self.backend = backend
        self.cancelled = threading.Event()
        self.in_tx = False
        self.pending: list[tuple[int, str]] = []
        self.calls: list[str] = []

    def inline(self, sql: str, info: Any = None, params: Sequence[Any] | None = None) -> bool:
        return bool(re.fullmatch(r"(?i)select\s+[0-9]+", sql.strip()))

    def answer_now(self, sql: str, params: Sequence[Any], info: Any) -> Any:
        """SELECT * FROM t [WHERE id = $1] outside a transaction is ready at once, as a lookup kept in
        memory is (t2: not ready, executed); SELECT * FROM denied: 42501 from answer_now itself."""
        low = " ".join(sql.lower().split())
        if low == "select * from denied":
            raise SqlError("42501", "permission denied for table denied")
        if m := re.fullmatch(r"select n from ready\(([0-9]+)\)", low):  # many rows, all in memory
            count = int(m.group(1))
            self.calls.append("answer_now:" + sql)
            return RowStream([ResultField("n", _INT8)], iter([pa.record_batch([pa.array(range(count), pa.int64())], names=["n"])]),
                             size=count)
        if self.in_tx or low not in ("select * from t", "select * from t where id = $1"):
            return None
        self.calls.append("answer_now:" + sql)
        rows = [r for r in self.backend.table if "$1" not in low or r[0] == int(params[0])]
        batch = pa.record_batch([pa.array([r[0] for r in rows], pa.int32()), pa.array([r[1] for r in rows], pa.string())],
                                names=["id", "name"])
        return RowStream([ResultField("id", _INT4, 16384, 1), ResultField("name", _TEXT, 16384, 2)], iter([batch]),
                         size=len(rows))

    def _rows(self, sql: str, params: Sequence[Any]) -> Any:
        s = " ".join(re.sub(r"/\*.*?\*/", " ", sql).split())
        low = s.lower()
        if m := re.fullmatch(r"select ([0-9]+(?:\s*,\s*[0-9]+)*)", low):
            vals = [int(v) for v in m.group(1).split(",")]
            fields = [ResultField("?column?", _INT4) for _ in vals]
            batch = pa.record_batch([pa.array([v], pa.int32()) for v in vals], names=[f"c{i}" for i in range(len(vals))])
            return RowStream(fields, iter([batch]))
        if m := re.fullmatch(r"select n from series\(([0-9]+)\)", low):
            total = int(m.group(1))
            closed = threading.Event()

            def gen() -> Iterator[pa.RecordBatch]:
                for start in range(0, total, 1000):
                    if closed.is_set():
                        return
                    yield pa.record_batch([pa.array(range(start, min(total, start + 1000)), pa.int64())], names=["n"])

            self.backend.streams_closed.append(closed)
            return RowStream([ResultField("n", _INT8)], gen(), close=closed.set)
        if re.fullmatch(r"select \$[0-9]+(?:\s*,\s*\$[0-9]+)*", low):
            fields = [ResultField("?column?", _TEXT) for _ in params]
            cols = [pa.array([None if p is None else str(p)], pa.string()) for p in params]
            return RowStream(fields, iter([pa.record_batch(cols, names=[f"c{i}" for i in range(len(cols))])]))
        if low == "select * from t":
            rows = self.backend.table
            batch = pa.record_batch([pa.array([r[0] for r in rows], pa.int32()), pa.array([r[1] for r in rows], pa.string())],
                                    names=["id", "name"])
            return RowStream([ResultField("id", _INT4, 16384, 1), ResultField("name", _TEXT, 16384, 2)], iter([batch]))
        if m := re.fullmatch(r"insert into t values \((-?[0-9]+|\$1), ?('[^']*'|\$2)\)", low):
            ident = int(params[0]) if m.group(1) == "$1" else int(m.group(1))
            name = str(params[1]) if m.group(2) == "$2" else m.group(2)[1:-1]
            (self.pending if self.in_tx else self.backend.table).append((ident, name))
            return CommandResult("INSERT 0 1", notices=["row stored"] if name == "notice" else [])
        if low == "select pg_sleep_forever()":
            self.backend.sleeping.set()
            if not self.cancelled.wait(20):
                raise AssertionError("never cancelled")
            self.cancelled.clear()
            raise SqlError("57014", "canceling statement due to user request")
        if low == "select slow_plan()":  # ignores cancel() while "planning", then returns rows
            self.backend.sleeping.set()
            time.sleep(1.0)
            return RowStream([ResultField("x", _INT4)], iter([pa.record_batch([pa.array([1], pa.int32())], names=["x"])]))
        if low == "select 1/0":
            raise SqlError("22012", "division by zero")
        if low == "select crash()":
            raise RuntimeError("backend exploded")
        pos = 1
        raise SqlError("42601", f'syntax error at or near "{s.split()[0] if s else ""}"', position=pos)

    def execute(self, sql: str, params: Sequence[Any] = (), info: SessionInfo | None = None) -> Any:
        self.calls.append("execute:" + sql)
        self.backend.last_info = info
        return self._rows(sql, params)

    def describe(self, sql: str, param_types: Sequence[ColumnType | None], info: SessionInfo) -> Any:
        self.calls.append("describe:" + sql)
        low = " ".join(sql.split()).lower()
        if low.startswith("insert"):
            return [_INT4, _TEXT][:len(param_types)], None
        if re.fullmatch(r"select \$[0-9]+(?:\s*,\s*\$[0-9]+)*", low):
            return [None] * len(param_types), [ResultField("?column?", _TEXT) for _ in param_types]
        if low.startswith("select n from series"):
            return [], [ResultField("n", _INT8)]
        if low == "select * from t":
            return [], [ResultField("id", _INT4, 16384, 1), ResultField("name", _TEXT, 16384, 2)]
        if re.fullmatch(r"select ([0-9]+(?:\s*,\s*[0-9]+)*)", low):
            return [], [ResultField("?column?", _INT4) for _ in low.split(",")]
        if low.startswith("garbage"):
            raise SqlError("42601", "syntax error at or near \"garbage\"", position=1)
        return [None] * len(param_types), None

    def copy_target(self, sql: str, info: SessionInfo) -> CopyTarget:
        return CopyTarget("public", "t", [ResultField("id", _INT4), ResultField("name", _TEXT)])

    def copy_from(self, target: CopyTarget, batches: Iterator[pa.RecordBatch], info: SessionInfo) -> int:
        rows: list[tuple[int, str]] = []
        for b in batches:
            rows.extend(zip(b.column(0).to_pylist(), b.column(1).to_pylist()))
        (self.pending if self.in_tx else self.backend.table).extend(rows)
        return len(rows)

    def begin(self) -> None:
        self.calls.append("begin")
        self.in_tx = True

    def commit(self) -> None:
        self.calls.append("commit")
        self.backend.table.extend(self.pending)
        self.pending.clear()
        self.in_tx = False

    def rollback(self) -> None:
        self.calls.append("rollback")
        self.pending.clear()
        self.in_tx = False

    def cancel(self) -> None:
        self.cancelled.set()

    def close(self) -> None:
        self.backend.closed += 1


class ProtoBackend:
    def __init__(self) -> None:
        self.table: list[tuple[int, str]] = []
        self.sessions: list[ProtoSession] = []
        self.closed = 0
        self.sleeping = threading.Event()
        self.streams_closed: list[threading.Event] = []
        self.last_info: SessionInfo | None = None

    def start(self) -> None:
        pass

    def open_session(self) -> ProtoSession:
        s = ProtoSession(self)
        self.sessions.append(s)
        return s

    def shutdown(self) -> None:
        pass


# --------------------------------------------------------------------------- raw client


class Raw:
    """A minimal protocol-3.0 client speaking raw messages."""

    def __init__(self, port: int, *, startup: bool = True, user: str = "tidegate", **params: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        self.params: dict[str, str] = {}
        self.pid = self.secret = 0
        if startup:
            self.startup(user=user, **params)

    def close(self) -> None:
        self.sock.close()

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, kind: bytes, body: bytes = b"") -> None:
        self.sock.sendall(kind + struct.pack("!i", len(body) + 4) + body)

    def recv_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError(f"connection closed, have {self.buf!r}")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read(self) -> tuple[bytes, bytes]:
        hdr = self.recv_exact(5)
        (ln,) = struct.unpack("!i", hdr[1:])
        return hdr[:1], self.recv_exact(ln - 4)

    def startup_packet(self, version: int = 196608, **params: str) -> bytes:
        body = struct.pack("!i", version) + b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in params.items()) + b"\0"
        return struct.pack("!i", len(body) + 4) + body

    def startup(self, version: int = 196608, **params: str) -> list[tuple[bytes, bytes]]:
        self.sendall(self.startup_packet(version, **params))
        msgs = self.until(b"Z")
        for k, b in msgs:
            if k == b"S":
                name, value, _ = b.split(b"\0")
                self.params[name.decode()] = value.decode()
            if k == b"K":
                self.pid, self.secret = struct.unpack("!ii", b)
        return msgs

    def until(self, kind: bytes = b"Z") -> list[tuple[bytes, bytes]]:
        out = []
        while True:
            k, b = self.read()
            out.append((k, b))
            if k == kind:
                return out
            if k == b"E" and b"SFATAL" in b:
                return out

    def query(self, sql: str) -> list[tuple[bytes, bytes]]:
        self.send(b"Q", sql.encode() + b"\0")
        return self.until(b"Z")

    # extended protocol builders
    def parse(self, sql: str, name: str = "", oids: Sequence[int] = ()) -> None:
        self.send(b"P", name.encode() + b"\0" + sql.encode() + b"\0" + struct.pack("!h", len(oids))
                  + b"".join(struct.pack("!I", o) for o in oids))

    def bind(self, params: Sequence[bytes | None] = (), portal: str = "", stmt: str = "",
             pfmts: Sequence[int] = (), rfmts: Sequence[int] = ()) -> None:
        body = portal.encode() + b"\0" + stmt.encode() + b"\0" + struct.pack("!h", len(pfmts))
        body += b"".join(struct.pack("!h", f) for f in pfmts) + struct.pack("!h", len(params))
        for p in params:
            body += struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p
        body += struct.pack("!h", len(rfmts)) + b"".join(struct.pack("!h", f) for f in rfmts)
        self.send(b"B", body)

    def describe(self, what: str, name: str = "") -> None:
        self.send(b"D", what.encode() + name.encode() + b"\0")

    def execute(self, portal: str = "", max_rows: int = 0) -> None:
        self.send(b"E", portal.encode() + b"\0" + struct.pack("!i", max_rows))

    def sync(self) -> None:
        self.send(b"S")

    def flush(self) -> None:
        self.send(b"H")


def fields_of(body: bytes) -> dict[str, str]:
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode()
    return out


def kinds(msgs: list[tuple[bytes, bytes]]) -> str:
    return "".join(k.decode() for k, _ in msgs)


def datarow_values(body: bytes) -> list[bytes | None]:
    (n,) = struct.unpack("!h", body[:2])
    pos, out = 2, []
    for _ in range(n):
        (ln,) = struct.unpack("!i", body[pos:pos + 4])
        pos += 4
        if ln < 0:
            out.append(None)
        else:
            out.append(body[pos:pos + ln])
            pos += ln
    return out


def row_desc(body: bytes) -> list[tuple[str, int, int, int, int]]:
    """(name, table oid, attnum, type oid, format) per column."""
    (n,) = struct.unpack("!h", body[:2])
    pos, out = 2, []
    for _ in range(n):
        end = body.index(b"\0", pos)
        name = body[pos:end].decode()
        table, att, oid, _tl, _tm, fmt = struct.unpack("!IhIhih", body[end + 1:end + 19])
        out.append((name, table, att, oid, fmt))
        pos = end + 19
    return out


def tags(msgs: list[tuple[bytes, bytes]]) -> list[str]:
    return [b[:-1].decode() for k, b in msgs if k == b"C"]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def backend() -> ProtoBackend:
    return ProtoBackend()


@pytest.fixture(scope="module")
def server(backend: ProtoBackend) -> Iterator[ServerThread]:
    settings = Settings(port=0, max_message_bytes=1 << 20)
    st = ServerThread(settings, backend)
    st.start()
    yield st
    st.stop()


@pytest.fixture
def port(server: ServerThread) -> int:
    assert server.server is not None and server.server.address is not None
    return server.server.address[1]


# --------------------------------------------------------------------------- startup


def test_ssl_and_gssenc_requests_are_declined_then_startup_succeeds(port: int) -> None:
    c = Raw(port, startup=False)
    c.sendall(struct.pack("!ii", 8, 80877103))
    assert c.recv_exact(1) == b"N"
    c.sendall(struct.pack("!ii", 8, 80877104))
    assert c.recv_exact(1) == b"N"
    msgs = c.startup(user="alice", database="db1", application_name="probe")
    assert msgs[0] == (b"R", struct.pack("!i", 0))
    assert kinds(msgs).endswith("KZ")
    assert msgs[-1][1] == b"I"
    assert c.params["server_version"] == "16.4 (tidegate 0.1.0)"
    assert c.params["server_encoding"] == "UTF8"
    assert c.params["client_encoding"] == "UTF8"
    assert c.params["DateStyle"] == "ISO, MDY"
    assert c.params["IntervalStyle"] == "postgres"
    assert c.params["TimeZone"] == "UTC"
    assert c.params["integer_datetimes"] == "on"
    assert c.params["standard_conforming_strings"] == "on"
    assert c.params["application_name"] == "probe"
    assert c.params["session_authorization"] == "alice"
    assert c.params["is_superuser"] == "on"
    assert c.params["default_transaction_read_only"] == "off"
    assert c.params["in_hot_standby"] == "off"
    c.close()


def test_startup_options_and_params_become_settings(port: int) -> None:
    c = Raw(port, TimeZone="Europe/Berlin", options="-c search_path=s1,public --extra_float_digits=3")
    assert c.params["TimeZone"] == "Europe/Berlin"
    msgs = c.query("SHOW search_path; SHOW extra_float_digits; SHOW timezone")
    rows = [datarow_values(b)[0] for k, b in msgs if k == b"D"]
    assert rows == [b"s1,public", b"3", b"Europe/Berlin"]
    assert [row_desc(b)[0][0] for k, b in msgs if k == b"T"] == ["search_path", "extra_float_digits", "TimeZone"]
    c.close()


def test_negotiate_protocol_version_for_newer_minor(port: int) -> None:
    c = Raw(port, startup=False)
    msgs = c.startup(version=(3 << 16) | 2, user="u", **{"_pq_.fancy": "1"})
    assert msgs[0][0] == b"v"
    newest, n = struct.unpack("!ii", msgs[0][1][:8])
    assert newest == 196608 and n == 1
    assert msgs[0][1][8:] == b"_pq_.fancy\0"
    assert msgs[1] == (b"R", struct.pack("!i", 0))
    assert msgs[-1] == (b"Z", b"I")
    c.close()


def test_unsupported_major_version_is_fatal(port: int) -> None:
    c = Raw(port, startup=False)
    c.sendall(c.startup_packet(version=2 << 16, user="u"))
    k, b = c.read()
    assert k == b"E"
    f = fields_of(b)
    assert f["S"] == "FATAL" and f["C"] == "0A000"
    c.close()


def test_missing_user_is_fatal_28000(port: int) -> None:
    c = Raw(port, startup=False)
    c.sendall(c.startup_packet(database="x"))
    k, b = c.read()
    assert k == b"E" and fields_of(b)["C"] == "28000"
    c.close()


def test_unknown_startup_parameter_is_fatal_42704(port: int) -> None:
    c = Raw(port, startup=False)
    c.sendall(c.startup_packet(user="u", no_such_setting="1"))
    k, b = c.read()
    assert k == b"E" and fields_of(b)["C"] == "42704"
    c.close()


# --------------------------------------------------------------------------- simple query


def test_simple_query_several_statements_and_empty(port: int) -> None:
    c = Raw(port)
    msgs = c.query("SELECT 1; SELECT 2, 3 /* ; */ ; -- trailing ; comment")
    assert kinds(msgs) == "TDCTDCZ"
    assert tags(msgs) == ["SELECT 1", "SELECT 1"]
    assert [datarow_values(b) for k, b in msgs if k == b"D"] == [[b"1"], [b"2", b"3"]]
    assert kinds(c.query("")) == "IZ"
    assert kinds(c.query("  ;  -- nothing")) == "IZ"
    c.close()


def test_error_stops_the_rest_of_a_query_string_with_position(port: int) -> None:
    c = Raw(port)
    msgs = c.query("SELECT 1; garbage here; SELECT 2")
    assert kinds(msgs) == "TDCEZ"
    f = fields_of(msgs[3][1])
    assert f["C"] == "42601" and f["S"] == "ERROR" and f["V"] == "ERROR"
    assert f["P"] == "11"  # 1-based in the whole string: "garbage" starts at offset 10
    c.close()


def test_internal_error_maps_to_xx000_and_session_continues(port: int) -> None:
    c = Raw(port)
    msgs = c.query("SELECT crash()")
    assert kinds(msgs) == "EZ"
    assert fields_of(msgs[0][1])["C"] == "XX000"
    assert "backend exploded" in fields_of(msgs[0][1])["M"]
    assert tags(c.query("SELECT 7")) == ["SELECT 1"]
    c.close()


def test_notices_from_backend_come_before_command_complete(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    msgs = c.query("INSERT INTO t VALUES (99, 'notice')")
    assert kinds(msgs) == "NCZ"
    assert fields_of(msgs[0][1])["M"] == "row stored"
    assert tags(msgs) == ["INSERT 0 1"]
    c.close()


def test_large_result_streams_in_batches(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    msgs = c.query("SELECT n FROM series(25000)")
    rows = [k for k, _ in msgs if k == b"D"]
    assert len(rows) == 25000
    assert tags(msgs) == ["SELECT 25000"]
    assert datarow_values(msgs[-3][1]) == [b"24999"]
    c.close()


# --------------------------------------------------------------------------- transactions


def test_transaction_status_bytes_and_aborted_block(port: int) -> None:
    c = Raw(port)
    assert c.query("BEGIN")[-1] == (b"Z", b"T")
    msgs = c.query("BEGIN")
    assert kinds(msgs) == "NCZ" and fields_of(msgs[0][1])["C"] == "25001"
    assert c.query("SELECT 1/0")[-1] == (b"Z", b"E")
    msgs = c.query("SELECT 1")
    assert kinds(msgs) == "EZ"
    assert fields_of(msgs[0][1])["C"] == "25P02"
    assert fields_of(msgs[0][1])["M"] == "current transaction is aborted, commands ignored until end of transaction block"
    assert msgs[-1] == (b"Z", b"E")
    msgs = c.query("COMMIT")
    assert tags(msgs) == ["ROLLBACK"] and msgs[-1] == (b"Z", b"I")
    msgs = c.query("COMMIT")
    assert kinds(msgs) == "NCZ" and fields_of(msgs[0][1])["C"] == "25P01"
    assert fields_of(msgs[0][1])["S"] == "WARNING"
    msgs = c.query("START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY")
    assert fields_of(msgs[0][1])["C"] == "0A000" and msgs[-1] == (b"Z", b"I")  # refused, not run weaker
    msgs = c.query("START TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY")
    assert msgs[-1] == (b"Z", b"T")
    assert [datarow_values(b) for k, b in c.query("SHOW transaction_isolation") if k == b"D"] == [[b"read committed"]]
    msgs = c.query("INSERT INTO t VALUES (1, 'x')")
    assert fields_of(msgs[0][1])["C"] == "25006"
    assert tags(c.query("ROLLBACK")) == ["ROLLBACK"]
    assert tags(c.query("END")) == ["COMMIT"]
    c.close()


def test_commit_applies_and_rollback_drops_backend_writes(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    before = len(backend.table)
    c.query("BEGIN; INSERT INTO t VALUES (1, 'a')")
    assert len(backend.table) == before
    assert tags(c.query("COMMIT")) == ["COMMIT"]
    assert len(backend.table) == before + 1
    c.query("BEGIN")
    c.query("INSERT INTO t VALUES (2, 'b')")
    assert tags(c.query("ABORT")) == ["ROLLBACK"]
    assert len(backend.table) == before + 1
    c.close()


def test_multi_statement_query_is_one_implicit_transaction(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    before = len(backend.table)
    msgs = c.query("INSERT INTO t VALUES (3, 'c'); INSERT INTO t VALUES (4, 'd'); INSERT INTO t VALUES (oops)")
    assert kinds(msgs) == "CCEZ" and msgs[-1] == (b"Z", b"I")
    assert len(backend.table) == before  # the DML of the failed Query is rolled back together
    c.query("INSERT INTO t VALUES (3, 'c'); INSERT INTO t VALUES (4, 'd')")
    assert len(backend.table) == before + 2
    # a read in the same Query sees the rows written before it (pending writes are committed first)
    msgs = c.query("INSERT INTO t VALUES (5, 'e'); SELECT * FROM t")
    assert [datarow_values(b) for k, b in msgs if k == b"D"][-1] == [b"5", b"e"]
    c.close()


# --------------------------------------------------------------------------- extended protocol


def test_describe_statement_never_executes_and_never_reports_oid_0(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    session = backend.sessions[-1]
    c.parse("SELECT $1, $2", name="s1", oids=[23])
    c.describe("S", "s1")
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "1tTZ"
    body = msgs[1][1]
    (n,) = struct.unpack("!h", body[:2])
    assert n == 2 and struct.unpack("!II", body[2:10]) == (23, 25)
    assert [col[3] for col in row_desc(msgs[2][1])] == [25, 25]
    assert not any(call.startswith("execute") for call in session.calls)
    c.close()


def test_parse_describe_flush_without_sync_is_answered(port: int) -> None:
    c = Raw(port)
    c.parse("SELECT 5", name="q")
    c.describe("S", "q")
    c.flush()
    assert kinds([c.read(), c.read(), c.read()]) == "1tT"
    c.bind(portal="", stmt="q", rfmts=[1])
    c.execute()
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "2DCZ"
    assert datarow_values(msgs[1][1]) == [struct.pack("!i", 5)]
    c.close()


def test_row_limit_suspends_and_resumes_portal(port: int) -> None:
    c = Raw(port)
    c.send(b"Q", b"BEGIN\0")
    c.until()
    c.parse("SELECT n FROM series(2500)")
    c.bind(portal="cur")
    c.describe("P", "cur")
    c.execute("cur", 1200)
    c.flush()
    msgs = []
    while len(msgs) < 3 + 1200:
        msgs.append(c.read())
    assert kinds(msgs[:3]) == "12T"
    assert msgs[-1][0] == b"D" and datarow_values(msgs[-1][1]) == [b"1199"]
    assert c.read()[0] == b"s"
    c.execute("cur", 1200)
    c.execute("cur", 1200)
    c.sync()
    msgs = c.until()
    rows = [datarow_values(b)[0] for k, b in msgs if k == b"D"]
    assert rows[0] == b"1200" and rows[-1] == b"2499" and len(rows) == 1300
    assert kinds(msgs).count("s") == 1
    assert tags(msgs) == ["SELECT 100"]  # PostgreSQL counts the rows of the last Execute only
    assert msgs[-1] == (b"Z", b"T")  # the portal lives on inside the transaction block
    c.execute("cur", 10)
    c.sync()
    assert tags(c.until()) == ["SELECT 0"]
    c.query("COMMIT")
    c.execute("cur", 10)
    c.sync()
    msgs = c.until()
    assert fields_of(msgs[0][1])["C"] == "34000"  # portals die at COMMIT
    c.close()


def test_error_discards_messages_until_sync(port: int) -> None:
    c = Raw(port)
    c.parse("garbage")
    c.bind()
    c.describe("P")
    c.execute()
    c.parse("SELECT 1", name="never")
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "EZ"
    assert fields_of(msgs[0][1])["C"] == "42601"
    c.describe("S", "never")
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "EZ" and fields_of(msgs[0][1])["C"] == "26000"
    c.parse("SELECT 3")
    c.bind()
    c.execute()
    c.sync()
    assert kinds(c.until()) == "12DCZ"
    c.close()


def test_bind_errors_and_statement_lifetimes(port: int) -> None:
    c = Raw(port)
    c.parse("SELECT $1", name="one")
    c.bind([b"a", b"b"], stmt="one")
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "1EZ" and fields_of(msgs[1][1])["C"] == "08P01"
    c.parse("SELECT $1", name="one")
    c.sync()
    msgs = c.until()
    assert fields_of(msgs[0][1])["C"] == "42P05"
    c.bind([b"x"], stmt="one", portal="p1")
    c.bind([b"y"], stmt="one", portal="p1")
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "2EZ" and fields_of(msgs[1][1])["C"] == "42P03"
    c.parse("SELECT 1; SELECT 2")
    c.sync()
    assert fields_of(c.until()[0][1])["C"] == "42601"
    c.send(b"C", b"Sone\0")
    c.sync()
    assert kinds(c.until()) == "3Z"
    c.bind([b"x"], stmt="one")
    c.sync()
    assert fields_of(c.until()[0][1])["C"] == "26000"
    c.send(b"Q", b"DEALLOCATE nope\0")
    assert fields_of(c.until()[0][1])["C"] == "26000"
    c.close()


def test_parameters_are_decoded_and_inferred_types_default_to_text(port: int) -> None:
    c = Raw(port)
    c.parse("SELECT $1, $2", oids=[23, 0])
    c.bind([struct.pack("!i", 42), b"hello"], pfmts=[1, 0])
    c.describe("P")
    c.execute()
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "12TDCZ"
    assert datarow_values(msgs[3][1]) == [b"42", b"hello"]
    c.close()


def test_pipelined_batch_is_one_implicit_transaction(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    before = len(backend.table)
    c.parse("INSERT INTO t VALUES ($1, 'p')", name="ins", oids=[23])
    for i in range(5):
        c.bind([str(i).encode()], stmt="ins")
        c.execute()
    c.bind([b"not a number"], stmt="ins")
    c.execute()
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "1" + "2C" * 5 + "EZ"
    assert fields_of(msgs[-2][1])["C"] == "22P02"
    assert len(backend.table) == before
    for i in range(5):
        c.bind([str(i).encode()], stmt="ins")
        c.execute()
    c.sync()
    assert kinds(c.until()) == "2C" * 5 + "Z"
    assert len(backend.table) == before + 5
    c.close()


def test_empty_statement_in_extended_protocol(port: int) -> None:
    c = Raw(port)
    c.parse("")
    c.bind()
    c.describe("P")
    c.execute()
    c.sync()
    assert kinds(c.until()) == "12nIZ"
    c.close()


# --------------------------------------------------------------------------- cancel


def test_cancel_request_interrupts_running_statement(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    backend.sleeping.clear()
    c.send(b"Q", b"SELECT pg_sleep_forever()\0")
    assert backend.sleeping.wait(5)
    other = Raw(port, startup=False)
    other.sendall(struct.pack("!iiii", 16, 80877102, c.pid, c.secret + 1))  # wrong key: ignored
    with pytest.raises(EOFError):
        other.read()
    other.close()
    time.sleep(0.2)
    canceller = Raw(port, startup=False)
    canceller.sendall(struct.pack("!iiii", 16, 80877102, c.pid, c.secret))
    msgs = c.until()
    assert kinds(msgs) == "EZ"
    f = fields_of(msgs[0][1])
    assert f["C"] == "57014" and f["M"] == "canceling statement due to user request"
    canceller.close()
    assert tags(c.query("SELECT 1")) == ["SELECT 1"]
    c.close()


class _SlotBackend(ProtoBackend):
    """A backend of gateway slot ``number`` that knows where the other slots' gateways listen."""

    def __init__(self, number: int, peers: dict[int, tuple[str, int]]) -> None:
        super().__init__()
        self.slot = SimpleNamespace(number=number)
        self.peers = peers
        self.asked: list[int] = []

    def peer_address(self, slot: int) -> tuple[str, int] | None:
        self.asked.append(slot)
        return self.peers.get(slot)


def test_a_cancel_request_sent_to_another_gateway_reaches_the_statement() -> None:
    """Two gateways of one catalog (slots 0 and 1): a client's CancelRequest that a load balancer
    sends to the other gateway is forwarded to the one running the statement, by the slot its
    pid names. A wrong secret still cancels nothing, and a pid of the receiving gateway's own slot
    it does not know is not sent anywhere."""
    peers: dict[int, tuple[str, int]] = {}
    running, other = _SlotBackend(0, peers), _SlotBackend(1, peers)
    with ServerThread(Settings(port=0), running) as a, ServerThread(Settings(port=0), other) as b:
        assert a.server is not None and b.server is not None and a.server.address and b.server.address
        peers[0], peers[1] = ("127.0.0.1", a.server.address[1]), ("127.0.0.1", b.server.address[1])
        c = Raw(a.server.address[1])
        assert c.pid in slots.pid_range(0)
        assert Raw(b.server.address[1]).pid in slots.pid_range(1)
        running.sleeping.clear()
        c.send(b"Q", b"SELECT pg_sleep_forever()\0")
        assert running.sleeping.wait(5)
        wrong = Raw(b.server.address[1], startup=False)
        wrong.sendall(struct.pack("!iiii", 16, 80877102, c.pid, c.secret + 1))
        wrong.close()
        mine = Raw(b.server.address[1], startup=False)  # slot 1's own range: not forwarded
        mine.sendall(struct.pack("!iiii", 16, 80877102, slots.pid_range(1).start + 3, c.secret))
        mine.close()
        time.sleep(0.5)
        assert other.asked == [0]
        c.sock.settimeout(0.3)
        with pytest.raises(socket.timeout):  # still running: the wrong key cancelled nothing
            c.sock.recv(1)
        c.sock.settimeout(10)
        canceller = Raw(b.server.address[1], startup=False)
        canceller.sendall(struct.pack("!iiii", 16, 80877102, c.pid, c.secret))
        msgs = c.until()
        assert kinds(msgs) == "EZ" and fields_of(msgs[0][1])["C"] == "57014"
        canceller.close()
        assert tags(c.query("SELECT 1")) == ["SELECT 1"]
        assert other.asked == [0, 0]
        c.close()


def test_cancel_while_backend_is_planning_still_fails_the_statement(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    backend.sleeping.clear()
    c.send(b"Q", b"SELECT slow_plan()\0")
    assert backend.sleeping.wait(5)
    canceller = Raw(port, startup=False)
    canceller.sendall(struct.pack("!iiii", 16, 80877102, c.pid, c.secret))
    msgs = c.until()
    assert kinds(msgs) == "EZ" and fields_of(msgs[0][1])["C"] == "57014"
    assert tags(c.query("SELECT 1")) == ["SELECT 1"]
    canceller.close()
    c.close()


def test_statement_timeout_cancels(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    c.query("SET statement_timeout = '200ms'")
    t0 = time.time()
    msgs = c.query("SELECT pg_sleep_forever()")
    assert time.time() - t0 < 5
    f = fields_of(msgs[0][1])
    assert f["C"] == "57014" and f["M"] == "canceling statement due to statement timeout"
    c.close()


def test_dropped_connection_cancels_and_closes_backend_session(port: int, backend: ProtoBackend) -> None:
    closed = backend.closed
    c = Raw(port)
    backend.sleeping.clear()
    c.send(b"Q", b"SELECT pg_sleep_forever()\0")
    assert backend.sleeping.wait(5)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    deadline = time.time() + 5
    while backend.closed == closed and time.time() < deadline:
        time.sleep(0.05)
    assert backend.closed == closed + 1


# --------------------------------------------------------------------------- robustness


def _assert_fatal(c: Raw, code: str) -> None:
    k, b = c.read()
    assert k == b"E"
    f = fields_of(b)
    assert f["S"] == "FATAL" and f["C"] == code, f
    with pytest.raises((EOFError, ConnectionError)):
        c.read()


def test_malformed_messages_are_fatal_08p01_for_that_connection_only(port: int) -> None:
    bystander = Raw(port)
    for bad in [b"Z\0\0\0\x04", b"Q\0\0\0\x02", b"P\0\0\0\x06ab", b"B\0\0\0\x08\0\0\xff\xff",
                b"D\0\0\0\x06Xx\0", b"E\0\0\0\x05\0"]:
        c = Raw(port)
        c.sendall(bad)
        _assert_fatal(c, "08P01")
        c.close()
        assert tags(bystander.query("SELECT 1")) == ["SELECT 1"]
    c = Raw(port, startup=False)
    c.sendall(struct.pack("!i", 3))
    _assert_fatal(c, "08P01")
    bystander.close()


def test_oversized_message_is_refused_with_54000(port: int) -> None:
    c = Raw(port)
    c.sendall(b"Q" + struct.pack("!i", (1 << 20) + 100))
    _assert_fatal(c, "54000")
    c.close()


def test_terminate_closes_cleanly(port: int) -> None:
    c = Raw(port)
    c.send(b"X")
    with pytest.raises(EOFError):
        c.read()
    c.close()


def test_fuzzed_messages_never_disturb_other_sessions(port: int) -> None:
    rng = random.Random(20261121)
    bystander = Raw(port)
    templates = [
        b"Q" + struct.pack("!i", 13) + b"SELECT 1\0",
        b"P" + struct.pack("!i", 16) + b"s\0SELECT 1\0\0\0",
        b"B" + struct.pack("!i", 14) + b"\0s\0\0\0\0\0\0\0",
        b"D" + struct.pack("!i", 7) + b"Ss\0",
        b"E" + struct.pack("!i", 9) + b"\0\0\0\0\0",
        b"C" + struct.pack("!i", 7) + b"Ss\0",
        b"S" + struct.pack("!i", 4),
        b"H" + struct.pack("!i", 4),
        b"d" + struct.pack("!i", 7) + b"abc",
        b"F" + struct.pack("!i", 4),
        b"p" + struct.pack("!i", 9) + b"hello",
    ]
    deadline = time.time() + 20
    sent = 0
    conns: list[Raw] = []
    while sent < 3000 and time.time() < deadline:
        if not conns or rng.random() < 0.05:
            try:
                conns.append(Raw(port))
            except (EOFError, OSError):
                pass
        c = rng.choice(conns)
        msg = bytearray(rng.choice(templates))
        op = rng.randrange(6)
        if op == 0:
            msg = bytearray(rng.randbytes(rng.randrange(1, 40)))
        elif op == 1:
            msg[1:5] = struct.pack("!i", rng.choice([-1, 0, 3, 4, 5, 1 << 30, rng.randrange(0, 100)]))
        elif op == 2:
            msg = msg[:rng.randrange(1, len(msg) + 1)]
        elif op == 3:
            for _ in range(rng.randrange(1, 4)):
                msg[rng.randrange(len(msg))] = rng.randrange(256)
        elif op == 4:
            msg[0] = rng.randrange(256)
        try:
            c.sock.sendall(bytes(msg))
            c.sock.setblocking(False)
            try:
                while c.sock.recv(65536):
                    pass
            except BlockingIOError:
                pass
            finally:
                c.sock.setblocking(True)
        except OSError:
            conns.remove(c)
            c.close()
        sent += 1
        if sent % 250 == 0:
            assert tags(bystander.query("SELECT 1")) == ["SELECT 1"]
    assert sent >= 1000
    for c in conns:
        c.close()
    assert tags(bystander.query("SELECT 1")) == ["SELECT 1"]
    fresh = Raw(port)
    assert tags(fresh.query("SELECT 2")) == ["SELECT 1"]
    fresh.close()
    bystander.close()


def test_startup_fuzz(port: int) -> None:
    rng = random.Random(7)
    for _ in range(300):
        c = Raw(port, startup=False)
        try:
            pkt = bytearray(c.startup_packet(user="u", database="d"))
            for _ in range(rng.randrange(1, 4)):
                pkt[rng.randrange(len(pkt))] = rng.randrange(256)
            c.sock.sendall(bytes(pkt[:rng.randrange(1, len(pkt) + 1)]))
            c.sock.shutdown(socket.SHUT_WR)
            c.sock.settimeout(5)
            while c.sock.recv(65536):
                pass
        except OSError:
            pass
        finally:
            c.close()
    ok = Raw(port)
    assert tags(ok.query("SELECT 1")) == ["SELECT 1"]
    ok.close()


def test_copy_fail_reports_57014_and_writes_nothing(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    before = len(backend.table)
    c.send(b"Q", b"COPY t FROM STDIN\0")
    k, b = c.read()
    assert k == b"G" and b == b"\0\0\2\0\0\0\0"
    c.send(b"d", b"1\tone\n2\ttwo\n")
    c.send(b"f", b"changed my mind\0")
    msgs = c.until()
    assert kinds(msgs) == "EZ"
    f = fields_of(msgs[0][1])
    assert f["C"] == "57014" and f["M"] == "COPY from stdin failed: changed my mind"
    assert len(backend.table) == before
    c.send(b"Q", b"COPY t FROM STDIN\0")
    c.read()
    c.send(b"d", b"1\tone\n2\tt")
    c.send(b"d", b"wo\n")
    c.send(b"c")
    msgs = c.until()
    assert kinds(msgs) == "CZ" and msgs[0][1] == b"COPY 2\0"
    assert backend.table[-2:] == [(1, "one"), (2, "two")]
    c.close()


def test_bad_copy_data_errors_and_later_copy_messages_are_dropped(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    before = len(backend.table)
    c.send(b"Q", b"COPY t FROM STDIN\0")
    c.read()
    c.send(b"d", b"notanumber\tx\n")
    c.send(b"c")
    msgs = c.until()
    assert kinds(msgs) == "EZ"
    assert fields_of(msgs[0][1])["C"] == "22P02"
    assert len(backend.table) == before
    c.send(b"d", b"stray")
    c.send(b"c")
    assert kinds(c.query("SELECT 1")) == "TDCZ"
    c.close()


def test_copy_to_stdout_sends_one_copydata_per_row(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    msgs = c.query("COPY t TO STDOUT")
    assert msgs[0] == (b"H", b"\0\0\2\0\0\0\0")
    data = [b for k, b in msgs if k == b"d"]
    assert len(data) == len(backend.table)
    assert all(d.endswith(b"\n") and d.count(b"\n") == 1 for d in data)
    assert kinds(msgs).endswith("cCZ") and tags(msgs) == [f"COPY {len(backend.table)}"]
    msgs = c.query("COPY (SELECT * FROM t) TO STDOUT (FORMAT binary)")
    assert msgs[0] == (b"H", b"\1\0\2\0\1\0\1")
    data = [b for k, b in msgs if k == b"d"]
    assert data[0].startswith(b"PGCOPY\n\xff\r\n\0") and data[-1] == b"\xff\xff"
    assert len(data) == len(backend.table) + 1
    c.close()


def test_idle_in_transaction_timeout_terminates_session(port: int) -> None:
    c = Raw(port)
    c.query("SET idle_in_transaction_session_timeout = '300ms'")
    assert kinds(c.query("SELECT 1")) == "TDCZ"  # idle outside a block: no timeout
    time.sleep(0.5)
    c.query("BEGIN")
    _assert_fatal(c, "25P03")
    c.close()


def test_error_position_is_relative_to_the_parse_text(port: int) -> None:
    c = Raw(port)
    c.parse("  -- lead\n  garbage")
    c.sync()
    msgs = c.until()
    assert fields_of(msgs[0][1])["P"] == "13"  # "garbage" starts at 0-based offset 12
    c.close()


# --------------------------------------------------------------------------- against the real backends
# (the gateway subprocess of tests/conftest.py: catalog evaluator + Spark engine)


def test_cli_listens_serves_before_spark_and_stops_on_sigterm(tmp_path: Any) -> None:
    """The gateway binds and answers session and catalog statements before Spark is up (how fast
    is bench/wire.py's business, not a test's), and SIGTERM stops it cleanly."""
    import signal

    import psycopg

    from tests.tidegate_server import start_tidegate

    srv = start_tidegate(tmp_path / "data", extra_args=["--spark-master", "local[1]"])
    try:
        deadline = time.time() + 30
        while not any("tidegate listening on 127.0.0.1:" in line for line in srv.log) and time.time() < deadline:
            time.sleep(0.02)
        assert any(line == f"tidegate listening on 127.0.0.1:{srv.port}" for line in srv.log)
        with psycopg.connect(srv.dsn, autocommit=True, connect_timeout=5) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.execute("SELECT count(*) > 0 FROM pg_catalog.pg_type").fetchone() == (True,)
            answered = len(srv.log)
        # those answers came while Spark was still starting (local[1] takes many seconds)
        assert not any("Spark ready" in line for line in srv.log[:answered]), srv.log[:answered]
        srv.wait_for_spark()
        assert any("Spark ready" in line for line in srv.log)
    finally:
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(60) == 0


def test_select_1_latency_through_psycopg(tidegate: Any) -> None:
    import psycopg

    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        for _ in range(300):
            conn.execute("SELECT 1").fetchone()
        lat = []
        for _ in range(3000):
            t = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            lat.append(time.perf_counter() - t)
    lat.sort()
    p50 = lat[len(lat) // 2] * 1000
    print(f"SELECT 1 through psycopg: p50 {p50:.3f} ms, p99 {lat[int(len(lat) * 0.99)] * 1000:.3f} ms")
    # Answered in-process, never by Spark (a Spark round trip costs ~50 ms). The 0.5 ms target is a
    # figure for bench/wire.py: a timing target here failed CI on a loaded 2-core machine (1.15 ms).
    assert p50 < 10.0


def test_200_idle_and_20_active_connections(tidegate: Any) -> None:
    import psycopg

    with psycopg.connect(tidegate.dsn, autocommit=True) as setup:
        setup.execute("DROP TABLE IF EXISTS gw_load")
        setup.execute("CREATE TABLE gw_load (id int, v text)")
        setup.execute("INSERT INTO gw_load VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    idle = [psycopg.connect(tidegate.dsn, autocommit=True) for _ in range(200)]
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
                for j in range(30):
                    assert conn.execute("SELECT 1").fetchone() == (1,)
                    assert conn.execute("SELECT count(*) FROM pg_catalog.pg_namespace").fetchone()[0] > 0
                    if j % 10 == 0:
                        assert conn.execute("SELECT count(*) FROM gw_load").fetchone() == (3,)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    try:
        assert not errors, errors[:3]
        for conn in idle[::20]:
            assert conn.execute("SELECT 2").fetchone() == (2,)
    finally:
        for conn in idle:
            conn.close()


def test_engine_rows_suspend_and_resume_with_row_limit(tidegate: Any) -> None:
    import psycopg

    with psycopg.connect(tidegate.dsn, autocommit=True) as setup:
        setup.execute("DROP TABLE IF EXISTS gw_rows")
        setup.execute("CREATE TABLE gw_rows (id int)")
        with setup.cursor().copy("COPY gw_rows FROM STDIN") as cp:
            cp.write(b"".join(b"%d\n" % i for i in range(2500)))
    c = Raw(tidegate.port)
    c.query("BEGIN")
    c.parse("SELECT id FROM gw_rows ORDER BY id")
    c.bind(portal="p")
    c.describe("P", "p")
    c.execute("p", 1000)
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "12T" + "D" * 1000 + "sZ"
    assert [(col[0], col[3], col[4]) for col in row_desc(msgs[2][1])] == [("id", 23, 0)]
    c.execute("p", 0)
    c.sync()
    msgs = c.until()
    rows = [int(datarow_values(b)[0]) for k, b in msgs if k == b"D"]
    assert rows == list(range(1000, 2500)) and tags(msgs) == ["SELECT 1500"]
    c.query("COMMIT")
    c.close()


def test_cancel_of_a_running_spark_query(tidegate: Any) -> None:
    import psycopg

    with psycopg.connect(tidegate.dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS gw_slow")
        conn.execute("CREATE TABLE gw_slow (x bigint)")
        with conn.cursor().copy("COPY gw_slow FROM STDIN") as cp:
            cp.write(b"".join(b"%d\n" % i for i in range(30000)))
        timer = threading.Timer(2.0, conn.cancel)
        timer.start()
        t0 = time.time()
        with pytest.raises(psycopg.errors.QueryCanceled) as exc:
            conn.execute("SELECT count(*) FROM gw_slow a CROSS JOIN gw_slow b CROSS JOIN gw_slow c WHERE a.x + b.x + c.x = -1")
        assert time.time() - t0 < 30
        assert exc.value.diag.message_primary == "canceling statement due to user request"
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_move_and_fetch_address_protocol_portals_by_name(port: int) -> None:
    c = Raw(port)
    c.query("BEGIN")
    c.parse("SELECT n FROM series(20)")
    c.bind(portal="pp", rfmts=[1])
    c.execute("pp", 2)
    c.sync()
    assert kinds(c.until()) == "12DDsZ"
    msgs = c.query("MOVE FORWARD 3 pp")
    assert tags(msgs) == ["MOVE 3"]
    msgs = c.query("FETCH 2 FROM pp")
    assert [datarow_values(b) for k, b in msgs if k == b"D"] == [[b"5"], [b"6"]]  # text, as FETCH asked
    c.execute("pp", 1)
    c.sync()
    msgs = c.until()
    assert datarow_values(msgs[0][1]) == [struct.pack("!q", 7)]  # the portal keeps its binary format
    c.query("COMMIT")
    c.close()


def test_client_vanishing_mid_result_closes_the_stream(port: int, backend: ProtoBackend) -> None:
    c = Raw(port)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.send(b"Q", b"SELECT n FROM series(2000000)\0")
    c.recv_exact(1000)
    stream_closed = backend.streams_closed[-1]
    c.sock.close()
    assert stream_closed.wait(10)
    other = Raw(port)
    assert tags(other.query("SELECT 1")) == ["SELECT 1"]
    other.close()


def test_terminate_during_copy_in_writes_nothing(port: int, backend: ProtoBackend) -> None:
    before = len(backend.table)
    c = Raw(port)
    c.send(b"Q", b"COPY t FROM STDIN\0")
    c.read()
    c.send(b"d", b"1\tone\n")
    c.send(b"X")
    c.sock.close()
    time.sleep(0.5)
    assert len(backend.table) == before
    other = Raw(port)
    assert tags(other.query("SELECT 1")) == ["SELECT 1"]
    other.close()


def _scenario(c: Raw, name: str) -> list[tuple[str, object]]:
    """Run one raw-protocol scenario; the transcript keeps message kinds, tags, SQLSTATEs and status bytes."""
    if name == "empty-and-comments":
        msgs = c.query("") + c.query(" ; -- x")
    elif name == "warnings":
        msgs = c.query("COMMIT") + c.query("BEGIN; BEGIN") + c.query("ROLLBACK")
    elif name == "aborted-block":
        msgs = c.query("BEGIN") + c.query("garbage") + c.query("SELECT 1") + c.query("COMMIT")
    elif name == "error-skips-to-sync":
        c.parse("garbage")
        c.bind()
        c.execute()
        c.sync()
        msgs = c.until()
        c.parse("SELECT 1")
        c.bind()
        c.describe("P")
        c.execute()
        c.sync()
        msgs += c.until()
    elif name == "parse-describe-flush":
        c.parse("SELECT 1", name="pdf")
        c.describe("S", "pdf")
        c.flush()
        msgs = [c.read(), c.read(), c.read()]
        c.sync()
        msgs += c.until()
    elif name == "exact-fit-suspends":
        c.query("BEGIN")
        c.parse("SELECT 1")
        c.bind(portal="x")
        c.execute("x", 1)
        c.execute("x", 1)
        c.sync()
        msgs = c.until() + c.query("COMMIT")
    elif name == "bad-bind-count":
        c.parse("SELECT 1", name="bb")
        c.bind([b"1"], stmt="bb")
        c.sync()
        msgs = c.until()
    elif name == "set-in-extended":
        c.parse("SET application_name = 'ext'")
        c.bind()
        c.describe("P")
        c.execute()
        c.sync()
        msgs = c.until()
    else:
        raise AssertionError(name)
    out: list[tuple[str, object]] = []
    for k, b in msgs:
        if k in (b"E", b"N"):
            out.append((k.decode(), fields_of(b)["C"]))
        elif k in (b"C", b"Z"):
            out.append((k.decode(), b.rstrip(b"\0").decode()))
        elif k == b"S":
            out.append(("S", b.split(b"\0")[0].decode()))
        else:
            out.append((k.decode(), None))
    return out


@pytest.mark.parametrize("scenario", ["empty-and-comments", "warnings", "aborted-block", "error-skips-to-sync",
                                      "parse-describe-flush", "exact-fit-suspends", "bad-bind-count",
                                      "set-in-extended"])
def test_raw_protocol_transcripts_match_postgres(port: int, pg_oracle: Any, scenario: str) -> None:
    ours = Raw(port)
    theirs = Raw(pg_oracle.port, user="postgres", database="postgres")
    try:
        assert _scenario(ours, scenario) == _scenario(theirs, scenario)
    finally:
        ours.close()
        theirs.close()


def test_splitter_respects_quotes_dollar_quotes_and_comments() -> None:
    from tidegate.sqllex import max_param_index, split_statements

    sql = ("SELECT 'a;b', E'it\\'s;', \"x;y\" FROM t; /* outer /* inner; */ still; */ SELECT $fn$ ; $fn$, $$;$$;"
           " -- c; omment\nSELECT $1 + $12, a$b$c")
    parts = split_statements(sql)
    assert [p.text for p in parts] == [
        "SELECT 'a;b', E'it\\'s;', \"x;y\" FROM t",
        "SELECT $fn$ ; $fn$, $$;$$",  # leading comments are not part of a statement's text
        "SELECT $1 + $12, a$b$c",
    ]
    assert sql[parts[1].offset:].startswith("SELECT $fn$")
    assert parts[2].max_param == 12 and max_param_index("SELECT '$3', $2") == 2
    assert split_statements("  ;; -- only a comment") == []
    with pytest.raises(SqlError) as exc:
        split_statements("SELECT 'open")
    assert exc.value.sqlstate == "42601"


def test_a_result_ready_at_once_is_sent_without_executing(port: int, backend: ProtoBackend) -> None:
    """answer_now's result goes out as an executed one would (rows, tag, binary formats, portal
    suspension); None from it executes the statement; its error is the statement's error."""
    c = Raw(port)
    session = backend.sessions[-1]
    c.query("INSERT INTO t VALUES (7, 'seven')")
    c.parse("SELECT * FROM t WHERE id = $1", name="k")
    c.bind(portal="", stmt="k", params=[b"7"], rfmts=[1, 0])
    c.execute()
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "12DCZ"
    assert msgs[2][1] == struct.pack("!hi", 2, 4) + struct.pack("!i", 7) + struct.pack("!i", 5) + b"seven"
    assert msgs[3][1] == b"SELECT 1\x00"
    assert any(call.startswith("answer_now:") for call in session.calls)
    assert not any(call == "execute:SELECT * FROM t WHERE id = $1" for call in session.calls)
    c.parse("SELECT * FROM t", name="all")  # a portal of it suspends after max_rows like any other
    c.bind(portal="p", stmt="all")
    c.execute("p", max_rows=1)
    c.sync()
    assert kinds(c.until())[-3:] == "DsZ"
    c.parse("SELECT * FROM denied")
    c.bind()
    c.execute()
    c.sync()
    msgs = c.until()
    assert kinds(msgs) == "12EZ" and b"42501" in msgs[2][1]
    assert kinds(c.query("SELECT 1")) == "TDCZ"  # the session goes on
    c.parse("SELECT n FROM ready(20000)")  # more rows than the loop encodes: encoded in the pool
    c.bind(rfmts=[1])
    c.execute()
    c.sync()
    msgs = c.until()
    rows_sent = [struct.unpack("!q", body[6:14])[0] for kind, body in msgs if kind == b"D"]
    assert rows_sent == list(range(20000)) and msgs[-2][1] == b"SELECT 20000\x00"
    c.close()
