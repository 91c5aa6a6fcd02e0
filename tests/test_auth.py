"""Authentication and TLS: SCRAM-SHA-256 with real drivers, 28P01 failures, TLS, start-up refusal."""

from __future__ import annotations

import asyncio
import os
import ssl
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import psycopg
import pytest

from gateway.auth import Authenticator, is_loopback
from gateway.server import ServerThread
from tests.test_protocol import ProtoBackend, Raw, fields_of
from tidegate.config import Settings, UserConfig
from tidegate.errors import SqlError

USERS = [UserConfig("alice", "s3cret!"), UserConfig("bob", "pässwörd")]


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "server.crt", d / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture(scope="module")
def port(tls_files: tuple[Path, Path]) -> Iterator[int]:
    cert, key = tls_files
    st = ServerThread(Settings(port=0, users=USERS, tls_cert=cert, tls_key=key), ProtoBackend())
    _, p = st.start()
    yield p
    st.stop()


def dsn(port: int, user: str, password: str, sslmode: str = "disable") -> str:
    return f"host=127.0.0.1 port={port} user={user} password={password} dbname=db sslmode={sslmode}"


def test_scram_sha_256_with_psycopg(port: int) -> None:
    with psycopg.connect(dsn(port, "alice", "s3cret!"), autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.info.parameter_status("session_authorization") == "alice"
    with psycopg.connect(dsn(port, "bob", "pässwörd"), autocommit=True) as conn:
        assert conn.execute("SELECT 2").fetchone() == (2,)


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("mallory", "s3cret!"), ("bob", "passwörd")])
def test_wrong_password_or_unknown_user_is_28p01(port: int, user: str, password: str) -> None:
    with pytest.raises(psycopg.OperationalError) as exc:
        psycopg.connect(dsn(port, user, password))
    assert f'password authentication failed for user "{user}"' in str(exc.value)


def test_scram_failure_reports_fatal_28p01_on_the_wire(port: int) -> None:
    c = Raw(port, startup=False)
    c.sendall(c.startup_packet(user="alice"))
    k, b = c.read()
    assert k == b"R" and struct.unpack("!i", b[:4])[0] == 10 and b"SCRAM-SHA-256\0" in b
    first = b"n,,n=,r=abcdefghijklmnop"
    c.send(b"p", b"SCRAM-SHA-256\0" + struct.pack("!i", len(first)) + first)
    k, b = c.read()
    assert k == b"R" and struct.unpack("!i", b[:4])[0] == 11
    server_first = b[4:].decode()
    nonce = dict(p.split("=", 1) for p in server_first.split(","))["r"]
    c.send(b"p", f"c=biws,r={nonce},p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".encode())
    k, b = c.read()
    f = fields_of(b)
    assert k == b"E" and f["S"] == "FATAL" and f["C"] == "28P01"
    assert f["M"] == 'password authentication failed for user "alice"'
    c.close()


def test_scram_with_asyncpg(port: int) -> None:
    async def main() -> None:
        conn = await asyncpg.connect(host="127.0.0.1", port=port, user="alice", password="s3cret!", database="db",
                                     ssl=False)
        try:
            assert await conn.fetchval("SELECT 5") == 5
        finally:
            await conn.close()
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(host="127.0.0.1", port=port, user="alice", password="nope", database="db",
                                  ssl=False)

    asyncio.run(main())


def test_tls_connection_with_psycopg(port: int, tls_files: tuple[Path, Path]) -> None:
    cert, _ = tls_files
    with psycopg.connect(dsn(port, "alice", "s3cret!", "require"), autocommit=True) as conn:
        assert conn.info.pgconn.ssl_in_use
        assert conn.execute("SELECT 3").fetchone() == (3,)
    with psycopg.connect(dsn(port, "alice", "s3cret!", "verify-full") + f" sslrootcert={cert} host=localhost",
                         autocommit=True) as conn:
        assert conn.info.pgconn.ssl_in_use
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn(port, "alice", "bad", "require"))


def test_tls_with_asyncpg(port: int, tls_files: tuple[Path, Path]) -> None:
    cert, _ = tls_files

    async def main() -> None:
        ctx = ssl.create_default_context(cafile=str(cert))
        conn = await asyncpg.connect(host="127.0.0.1", port=port, user="bob", password="pässwörd", database="db",
                                     ssl=ctx)
        try:
            assert await conn.fetchval("SELECT 9") == 9
        finally:
            await conn.close()

    asyncio.run(main())


def test_unencrypted_data_after_ssl_request_is_refused(port: int) -> None:
    c = Raw(port, startup=False)
    c.sendall(struct.pack("!ii", 8, 80877103) + c.startup_packet(user="alice"))
    k, b = c.read()
    assert k == b"E" and fields_of(b)["C"] == "08P01"
    c.close()


def test_trust_only_from_loopback_without_users() -> None:
    auth = Authenticator([])
    auth.check_trust("anyone", "127.0.0.1")
    auth.check_trust("anyone", "::1")
    with pytest.raises(SqlError) as exc:
        auth.check_trust("anyone", "10.1.2.3")
    assert exc.value.sqlstate == "28000" and exc.value.severity == "FATAL"
    assert is_loopback("localhost") and not is_loopback("0.0.0.0")
    Authenticator(USERS).check_trust("alice", "10.1.2.3")  # users configured: SCRAM decides


def test_cli_refuses_non_loopback_host_without_users(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIDEGATE_")}
    r = subprocess.run([sys.executable, "-m", "tidegate", "serve", "--host", "0.0.0.0", "--port", "0",
                        "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2
    assert "refusing to listen on non-loopback address" in r.stderr


def test_cleartext_password_only_over_tls_when_enabled(tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    settings = Settings(port=0, users=USERS, tls_cert=cert, tls_key=key)
    st = ServerThread(settings, ProtoBackend(), authenticator=Authenticator(USERS, allow_cleartext=True))
    _, p = st.start()
    try:
        with psycopg.connect(dsn(p, "alice", "s3cret!", "require"), autocommit=True) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        with psycopg.connect(dsn(p, "alice", "s3cret!", "disable") + " require_auth=scram-sha-256",
                             autocommit=True) as conn:  # without TLS the password never travels in clear
            assert conn.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(psycopg.OperationalError) as exc:
            psycopg.connect(dsn(p, "alice", "nope", "require"))
        assert 'password authentication failed for user "alice"' in str(exc.value)
    finally:
        st.stop()
