"""PostgreSQL protocol 3.0 framing: reading frontend messages and building backend messages.

Only byte handling lives here; the state machine is in :mod:`gateway.connection`. Builders return
``bytes`` so a connection can batch many messages into one socket write (the extended protocol
answers a whole pipeline at Sync/Flush).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from tidegate.errors import SqlError
from tidegate.results import ResultField

PROTOCOL_3_0 = 196608  # 3 << 16
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
MAX_STARTUP_PACKET = 10000  # PostgreSQL's MAX_STARTUP_PACKET_LENGTH

_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")
_HDR = struct.Struct("!ci")


class ProtocolError(Exception):
    """A frontend broke the protocol: answered with a FATAL ErrorResponse, then the connection closes."""

    def __init__(self, message: str, sqlstate: str = "08P01") -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate


class MessageReader:
    """Cursor over one frontend message body; every read is bounds-checked (truncation = 08P01)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError("insufficient data left in message")

    def int16(self) -> int:
        self._need(2)
        (v,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return v

    def uint16(self) -> int:
        return self.int16() & 0xFFFF

    def int32(self) -> int:
        self._need(4)
        (v,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return v

    def uint32(self) -> int:
        return self.int32() & 0xFFFFFFFF

    def byte(self) -> int:
        self._need(1)
        v = self.data[self.pos]
        self.pos += 1
        return v

    def raw(self, n: int) -> bytes:
        self._need(n)
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(v)

    def cstring(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise ProtocolError("invalid string in message")
        raw = self.data[self.pos:end]
        self.pos = end + 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("invalid byte sequence for encoding \"UTF8\"", "22021") from None

    def rest(self) -> bytes:
        v = bytes(self.data[self.pos:])
        self.pos = len(self.data)
        return v

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def done(self) -> None:
        """PostgreSQL's pq_getmsgend: trailing garbage is a protocol violation."""
        if self.pos != len(self.data):
            raise ProtocolError("invalid message format")


def parse_startup_params(body: bytes) -> dict[str, str]:
    """Key/value cstrings of a StartupMessage (after the protocol version), ending with an empty key."""
    r = MessageReader(body)
    params: dict[str, str] = {}
    while True:
        if r.remaining() == 0:
            raise ProtocolError("invalid startup packet layout: expected terminator as last byte")
        key = r.cstring()
        if key == "":
            break
        params[key] = r.cstring()
    if r.remaining():
        raise ProtocolError("invalid startup packet layout: expected terminator as last byte")
    return params


# ---------------------------------------------------------------------------- backend messages


def message(kind: bytes, body: bytes = b"") -> bytes:
    return _HDR.pack(kind, len(body) + 4) + body


def cstr(s: str) -> bytes:
    return s.encode("utf-8").replace(b"\0", b"") + b"\0"


AUTH_OK = message(b"R", _I32.pack(0))
PARSE_COMPLETE = message(b"1")
BIND_COMPLETE = message(b"2")
CLOSE_COMPLETE = message(b"3")
NO_DATA = message(b"n")
PORTAL_SUSPENDED = message(b"s")
EMPTY_QUERY = message(b"I")
COPY_DONE = message(b"c")
READY = {s: message(b"Z", s.encode()) for s in ("I", "T", "E")}


def auth_sasl(mechanisms: Sequence[str]) -> bytes:
    return message(b"R", _I32.pack(10) + b"".join(cstr(m) for m in mechanisms) + b"\0")


def auth_sasl_continue(data: bytes) -> bytes:
    return message(b"R", _I32.pack(11) + data)


def auth_sasl_final(data: bytes) -> bytes:
    return message(b"R", _I32.pack(12) + data)


def auth_cleartext() -> bytes:
    return message(b"R", _I32.pack(3))


def parameter_status(name: str, value: str) -> bytes:
    return message(b"S", cstr(name) + cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    return message(b"K", struct.pack("!ii", pid, secret))


def negotiate_protocol_version(newest: int, unrecognized: Sequence[str]) -> bytes:
    body = struct.pack("!ii", newest, len(unrecognized)) + b"".join(cstr(o) for o in unrecognized)
    return message(b"v", body)


def command_complete(tag: str) -> bytes:
    return message(b"C", cstr(tag))


def parameter_description(oids: Sequence[int]) -> bytes:
    return message(b"t", _I16.pack(len(oids)) + b"".join(struct.pack("!I", o) for o in oids))


_FIELD = struct.Struct("!IhIhih")


def row_description(fields: Sequence[ResultField], formats: Sequence[int]) -> bytes:
    """RowDescription; ``formats`` is already expanded to one code per column."""
    parts = [_I16.pack(len(fields))]
    for f, fmt in zip(fields, formats):
        ct = f.type
        parts.append(cstr(f.name))
        parts.append(_FIELD.pack(f.table_oid & 0xFFFFFFFF, f.column_number, ct.pg.oid, ct.pg.typlen,
                                 ct.typmod, fmt))
    return message(b"T", b"".join(parts))


def copy_response(kind: bytes, overall: int, formats: Sequence[int]) -> bytes:
    """CopyInResponse ('G') / CopyOutResponse ('H')."""
    return message(kind, struct.pack("!bh", overall, len(formats)) + b"".join(_I16.pack(f) for f in formats))


def copy_data(data: bytes) -> bytes:
    return message(b"d", data)


def error_fields(err: SqlError, severity: str | None = None, position_offset: int = 0) -> bytes:
    sev = severity or err.severity
    parts = [b"S", cstr(sev), b"V", cstr(sev), b"C", cstr(err.sqlstate), b"M", cstr(err.message)]
    if err.detail:
        parts += [b"D", cstr(err.detail)]
    if err.hint:
        parts += [b"H", cstr(err.hint)]
    if err.position is not None:
        parts += [b"P", cstr(str(err.position + position_offset))]
    parts.append(b"\0")
    return b"".join(parts)


def error_response(err: SqlError, severity: str | None = None, position_offset: int = 0) -> bytes:
    return message(b"E", error_fields(err, severity, position_offset))


def notice_response(text: str, severity: str = "NOTICE", sqlstate: str = "00000",
                    hint: str | None = None) -> bytes:
    parts = [b"S", cstr(severity), b"V", cstr(severity), b"C", cstr(sqlstate), b"M", cstr(text)]
    if hint:
        parts += [b"H", cstr(hint)]
    parts.append(b"\0")
    return message(b"N", b"".join(parts))


def fatal(sqlstate: str, text: str) -> bytes:
    return error_response(SqlError(sqlstate, text, severity="FATAL"))


def concat(parts: Iterable[bytes]) -> bytes:
    return b"".join(parts)
