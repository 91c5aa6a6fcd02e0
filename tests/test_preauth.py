"""Limits on clients that have not authenticated yet: message sizes, authentication_timeout,
max_connections counting every socket, and the CLI's refusal to listen on a wildcard without users.

Real sockets against a real gateway (``ServerThread`` over the in-test ``ProtoBackend``, no Spark).
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gateway.auth import MAX_AUTH_MESSAGE
from gateway.server import ServerThread
from tests.test_protocol import ProtoBackend, Raw, fields_of, tags
from tidegate import cli
from tidegate.config import Settings, UserConfig, load_settings

USERS = [UserConfig("alice", "s3cret!")]
SSL_REQUEST = struct.pack("!ii", 8, 80877103)
TIMEOUT_S = 1.0


@contextmanager
def gateway(backend: ProtoBackend | None = None, **settings: Any) -> Iterator[int]:
    st = ServerThread(Settings(port=0, **settings), backend or ProtoBackend())
    _, port = st.start()
    try:
        yield port
    finally:
        st.stop()


@pytest.fixture(scope="module")
def scram_port() -> Iterator[int]:
    """Users configured (SCRAM-SHA-256) and a 1 s authentication_timeout."""
    with gateway(users=USERS, authentication_timeout=TIMEOUT_S) as port:
        yield port


def dsn(port: int, user: str = "alice", password: str = "s3cret!") -> str:
    return f"host=127.0.0.1 port={port} user={user} password={password} dbname=db connect_timeout=10"


def fatal(c: Raw) -> dict[str, str]:
    """The FATAL ErrorResponse the server sends, after which it must close the socket."""
    k, b = c.read()
    assert k == b"E", (k, b)
    f = fields_of(b)
    assert f["S"] == "FATAL", f
    with pytest.raises((EOFError, ConnectionError)):
        c.read()
    return f


def sasl_started(port: int) -> Raw:
    """A client that sent its StartupMessage and got the SASL challenge (AuthenticationSASL)."""
    c = Raw(port, startup=False)
    c.sendall(c.startup_packet(user="alice", database="db"))
    k, b = c.read()
    assert k == b"R" and struct.unpack("!i", b[:4])[0] == 10 and b"SCRAM-SHA-256\0" in b
    return c


def ssl_declined(port: int) -> Raw:
    """A socket the server has accepted (it answered SSLRequest with N) that then stays silent."""
    c = Raw(port, startup=False)
    c.sendall(SSL_REQUEST)
    assert c.recv_exact(1) == b"N"
    return c


# --------------------------------------------------------------------------- message caps


def test_oversize_sasl_response_is_refused_from_its_header(scram_port: int) -> None:
    c = sasl_started(scram_port)
    # Only the header of a 60 MB SASLInitialResponse: the answer must come without the body.
    c.sendall(b"p" + struct.pack("!i", 60 * 1024 * 1024 + 4))
    t0 = time.monotonic()
    f = fatal(c)
    assert f["C"] == "08P01" and f["M"] == "invalid message length"
    assert time.monotonic() - t0 < TIMEOUT_S  # answered at once, not by the authentication timeout
    c.close()


@pytest.mark.parametrize("size, message", [(MAX_AUTH_MESSAGE, "malformed SCRAM message"),
                                           (MAX_AUTH_MESSAGE + 1, "invalid message length")])
def test_auth_messages_are_capped_at_8192_bytes(scram_port: int, size: int, message: str) -> None:
    c = sasl_started(scram_port)
    head = b"SCRAM-SHA-256\0"
    data = b"x" * (size - len(head) - 4)  # a body of exactly ``size`` bytes; not a SCRAM client-first
    c.send(b"p", head + struct.pack("!i", len(data)) + data)
    f = fatal(c)
    assert f["C"] == "08P01" and f["M"] == message
    c.close()


def test_after_authentication_max_message_bytes_applies(scram_port: int) -> None:
    sql = "SELECT 1 /* " + "x" * (4 * MAX_AUTH_MESSAGE) + " */"
    with psycopg.connect(dsn(scram_port), autocommit=True) as conn:
        res = conn.pgconn.exec_(sql.encode())  # one simple Query message of ~32 kB
        assert res.status == psycopg.pq.ExecStatus.TUPLES_OK and res.get_value(0, 0) == b"1"


def test_startup_packet_over_10000_bytes_is_refused(scram_port: int) -> None:
    c = Raw(scram_port, startup=False)
    c.sendall(struct.pack("!i", 10001))  # the length alone; the server must not wait for the rest
    f = fatal(c)
    assert f["C"] == "08P01" and f["M"] == "invalid length of startup packet"
    c.close()
    ok = Raw(scram_port, startup=False)
    packet = ok.startup_packet(user="alice", application_name="a")
    packet = ok.startup_packet(user="alice", application_name="a" * (10000 - len(packet) + 1))
    assert len(packet) == 10000  # the largest packet still allowed gets the SASL challenge
    ok.sendall(packet)
    assert ok.read()[0] == b"R"
    ok.close()


# --------------------------------------------------------------------------- authentication_timeout


def _silent(port: int) -> Raw:
    return Raw(port, startup=False)


def _trickling(port: int) -> Raw:
    """Sends its startup packet a byte at a time, each read finishing well inside the timeout."""
    c = Raw(port, startup=False)
    packet = c.startup_packet(user="alice", database="db", application_name="slow" * 20)
    c.sock.settimeout(0.1)
    for byte in packet:
        try:
            c.sendall(bytes([byte]))
            c.buf += c.sock.recv(65536)
            break  # the server answered (and closed): stop trickling
        except socket.timeout:
            continue
        except OSError:
            break
    c.sock.settimeout(10)
    return c


@pytest.mark.parametrize("stall", [_silent, ssl_declined, sasl_started, _trickling],
                         ids=["nothing-sent", "after-ssl-request", "sasl-unanswered", "trickling-startup"])
def test_authentication_timeout_closes_stalled_clients(scram_port: int, stall: Any) -> None:
    with psycopg.connect(dsn(scram_port), autocommit=True) as authenticated:
        t0 = time.monotonic()
        c = stall(scram_port)
        f = fatal(c)
        elapsed = time.monotonic() - t0
        assert f["C"] == "08006" and f["M"] == "canceling authentication due to timeout"
        assert TIMEOUT_S - 0.1 < elapsed < TIMEOUT_S + 2
        c.close()
        # The timeout is for authenticating: a session older than it is not affected.
        assert authenticated.execute("SELECT 1").fetchone() == (1,)


def test_authentication_timeout_setting_from_toml_and_env(tmp_path: Path) -> None:
    assert Settings().authentication_timeout == 60.0
    toml = tmp_path / "t.toml"
    toml.write_text("authentication_timeout = 5\n")
    assert load_settings(toml, environ={}).authentication_timeout == 5.0
    env = {"TIDEGATE_AUTHENTICATION_TIMEOUT": "2.5"}
    assert load_settings(toml, environ=env).authentication_timeout == 2.5


# --------------------------------------------------------------------------- max_connections


def _connect_eventually(port: int, deadline_s: float = 5.0) -> psycopg.Connection[Any]:
    """Slots are released as soon as the server sees the close; poll for that instead of sleeping."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return psycopg.connect(dsn(port, "u"), autocommit=True)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _too_many(port: int) -> None:
    with pytest.raises(psycopg.OperationalError) as exc:
        psycopg.connect(dsn(port, "u"))
    assert "sorry, too many clients already" in str(exc.value)


def test_max_connections_counts_unauthenticated_sockets() -> None:
    with gateway(max_connections=3) as port:
        idle = [ssl_declined(port) for _ in range(3)]  # the N shows each was accepted; none authenticates
        _too_many(port)  # a real client (sslmode=prefer: SSLRequest, N, StartupMessage) gets 53300
        raw = Raw(port, startup=False)
        raw.sendall(raw.startup_packet(user="u"))
        assert fatal(raw)["C"] == "53300"
        raw.close()
        for c in idle:
            c.close()
        conns = [_connect_eventually(port) for _ in range(3)]
        assert [c.execute("SELECT 1").fetchone() for c in conns] == [(1,)] * 3
        _too_many(port)  # authenticated sessions count too
        for c in conns:
            c.close()
        _connect_eventually(port).close()


def test_over_capacity_sockets_are_few_and_short_lived() -> None:
    with gateway(max_connections=2, authentication_timeout=TIMEOUT_S) as port:
        admitted = [ssl_declined(port) for _ in range(2)]
        # Up to max_connections more are read for a startup packet (a CancelRequest must still
        # work), for TIMEOUT_S at most ...
        t0 = time.monotonic()
        waiting = [ssl_declined(port) for _ in range(2)]
        # ... and beyond those a socket is told 53300 at once without the server reading anything.
        flood = Raw(port, startup=False)
        assert fatal(flood)["C"] == "53300"
        assert time.monotonic() - t0 < TIMEOUT_S
        flood.close()
        for c in waiting:
            assert fatal(c)["C"] == "53300"
            c.close()
        assert time.monotonic() - t0 < TIMEOUT_S + 2
        for c in admitted:
            assert fatal(c)["C"] == "08006"
            c.close()


def test_cancel_request_works_when_the_server_is_full() -> None:
    backend = ProtoBackend()
    with gateway(backend, max_connections=1) as port:
        c = Raw(port)
        c.send(b"Q", b"SELECT pg_sleep_forever()\0")
        assert backend.sleeping.wait(5)
        canceller = Raw(port, startup=False)
        canceller.sendall(struct.pack("!iiii", 16, 80877102, c.pid, c.secret))
        msgs = c.until()
        f = fields_of(msgs[0][1])
        assert f["C"] == "57014" and f["M"] == "canceling statement due to user request"
        canceller.close()
        assert tags(c.query("SELECT 1")) == ["SELECT 1"]
        c.close()


def test_every_exit_path_releases_its_slot() -> None:
    with gateway(users=USERS, max_connections=2, authentication_timeout=TIMEOUT_S) as port:
        silent = Raw(port, startup=False)  # holds one slot until the timeout ends it
        ssl_declined(port).close()  # EOF during startup
        for packet in (struct.pack("!i", 3),  # bad startup length
                       struct.pack("!iii", 12, 2 << 16, 0),  # unsupported protocol
                       struct.pack("!iiii", 16, 80877102, 1, 2)):  # CancelRequest with an unknown key
            c = Raw(port, startup=False)
            c.sendall(packet)
            with pytest.raises((EOFError, ConnectionError)):
                while True:  # a FATAL or nothing, then the server closes
                    c.read()
            c.close()
        c = sasl_started(port)
        c.sendall(b"p" + struct.pack("!i", 1 << 30))  # oversize SASL response
        assert fatal(c)["C"] == "08P01"
        c.close()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(dsn(port, "alice", "wrong"))
        assert fatal(silent)["C"] == "08006"
        silent.close()
        # Every path gave its slot back exactly once: two sessions fit, a third does not.
        deadline = time.monotonic() + 5
        while True:
            try:
                conns = [psycopg.connect(dsn(port), autocommit=True) for _ in range(2)]
                break
            except psycopg.OperationalError:
                assert time.monotonic() < deadline
                time.sleep(0.02)
        with pytest.raises(psycopg.OperationalError) as exc:
            psycopg.connect(dsn(port))
        assert "sorry, too many clients already" in str(exc.value)
        for conn in conns:
            conn.close()


# --------------------------------------------------------------------------- listening address


@pytest.mark.parametrize("host", ["", "*", "0.0.0.0", "::", "0", "127.0.0.1,0.0.0.0", "example.org",
                                  ["127.0.0.1", "0.0.0.0"]])
def test_wildcard_or_unknown_bind_host_without_users_is_refused(host: Any) -> None:
    problem = cli.check_settings(Settings(host=host))
    assert problem is not None and "refusing to listen on non-loopback address" in problem
    assert cli.check_settings(Settings(host=host, users=USERS)) is None


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_loopback_bind_host_without_users_is_allowed(host: str) -> None:
    assert cli.check_settings(Settings(host=host)) is None


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("TIDEGATE_")]:
        monkeypatch.delenv(key)


def test_cli_main_refuses_star_and_host_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    _clean_env(monkeypatch)
    assert cli.main(["serve", "--host", "*", "--port", "0", "--data-dir", str(tmp_path)]) == 2
    assert "refusing to listen on non-loopback address '*' without users" in capsys.readouterr().err
    monkeypatch.setenv("TIDEGATE_HOST", "")
    assert cli.main(["serve", "--port", "0", "--data-dir", str(tmp_path)]) == 2
    assert "refusing to listen on non-loopback address ''" in capsys.readouterr().err
    monkeypatch.delenv("TIDEGATE_HOST")
    toml = tmp_path / "hosts.toml"
    toml.write_text('host = ["127.0.0.1", "0.0.0.0"]\n')
    assert cli.main(["serve", "--config", str(toml), "--port", "0", "--data-dir", str(tmp_path)]) == 2
    assert "invalid configuration: host must be one address" in capsys.readouterr().err


def test_tidegate_serve_refuses_empty_host_without_users(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDEGATE_")}
    exe = Path(sys.executable).parent / "tidegate"
    r = subprocess.run([str(exe), "serve", "--host", "", "--port", "0", "--data-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2, r
    assert "refusing to listen on non-loopback address '' without users" in r.stderr
