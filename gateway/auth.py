"""Client authentication: trust on loopback without users, SCRAM-SHA-256 for configured users.

SCRAM verifiers are derived once at start-up (``scramp``), so the password never crosses the
wire. Cleartext password authentication is offered only over TLS and only when the server is
built with ``allow_cleartext`` (for clients without SCRAM). An unknown user goes through a full
SCRAM exchange against a random verifier, so the failure looks exactly like a wrong password.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import os
from collections.abc import Awaitable, Callable

import scramp

from gateway import messages as m
from tidegate.config import UserConfig
from tidegate.errors import SqlError

SCRAM = "SCRAM-SHA-256"
ITERATIONS = 4096
# Largest message body read before authentication completes (SASL and password responses, a few
# hundred bytes from real clients). Connection.read_message refuses a longer header before reading
# the body, so an unauthenticated client cannot make the gateway allocate max_message_bytes.
MAX_AUTH_MESSAGE = 8192

Send = Callable[[bytes], Awaitable[None]]
# A catalog role's (salt, StoredKey, ServerKey, iterations), or None when it has no password.
RoleVerifier = Callable[[str], "tuple[bytes, bytes, bytes, int] | None"]
Receive = Callable[[], Awaitable[tuple[bytes, bytes]]]


def is_loopback(host: str | None) -> bool:
    if not host:
        return True  # unix socket / socketpair
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def auth_failed(user: str) -> SqlError:
    return SqlError("28P01", f'password authentication failed for user "{user}"', severity="FATAL")


class Authenticator:
    """Per-server authentication policy and the SCRAM verifiers of the configured users."""

    def __init__(self, users: list[UserConfig], allow_cleartext: bool = False,
                 role_verifier: RoleVerifier | None = None) -> None:
        self._mech = scramp.ScramMechanism(SCRAM)
        # Roles created with CREATE ROLE ... PASSWORD keep their SCRAM verifier in the catalog.
        self._role_verifier = role_verifier
        self._verifiers = {u.name: self._mech.make_auth_info(u.password, iteration_count=ITERATIONS)
                           for u in users}
        self._passwords = {u.name: u.password for u in users}
        self._dummy = self._mech.make_auth_info(os.urandom(16).hex(), iteration_count=ITERATIONS)
        self.allow_cleartext = allow_cleartext

    @property
    def has_users(self) -> bool:
        return bool(self._verifiers)

    def check_trust(self, user: str, peer_host: str | None) -> None:
        """With no users configured only loopback peers may connect (and are trusted)."""
        if not self.has_users and not is_loopback(peer_host):
            raise SqlError("28000", f'no pg_hba.conf entry for host "{peer_host}", user "{user}", no encryption',
                           severity="FATAL")

    async def authenticate(self, user: str, tls: bool, send: Send, receive: Receive) -> None:
        """Run the exchange; returns when ``user`` is authenticated, else raises a FATAL SqlError."""
        if not self.has_users:
            return
        if tls and self.allow_cleartext:
            await send(m.auth_cleartext())
            kind, body = await receive()
            if kind != b"p":
                raise SqlError("08P01", f"expected password response, got message type {kind[0]}", severity="FATAL")
            password = m.MessageReader(body).cstring()
            expected = self._passwords.get(user)
            if expected is not None:
                if not hmac.compare_digest(password.encode(), expected.encode()):
                    raise auth_failed(user)
                return
            verifier = self._role_verifier(user) if self._role_verifier else None
            if verifier is None or not _password_matches(password, verifier):
                raise auth_failed(user)
            return
        await self._scram(user, send, receive)

    async def _scram(self, user: str, send: Send, receive: Receive) -> None:
        """RFC 5802/7677 server side. libpq sends an empty SCRAM user name (the startup packet names
        the user), which scramp's message parser refuses, so the exchange is checked here against
        verifiers made by scramp."""
        verifier = self._verifiers.get(user)
        if verifier is None and self._role_verifier is not None:
            verifier = self._role_verifier(user)
        known = verifier is not None
        salt, stored_key, server_key, iterations = verifier or self._dummy
        await send(m.auth_sasl([SCRAM]))
        kind, body = await receive()
        if kind != b"p":
            raise SqlError("08P01", f"expected SASL response, got message type {kind[0]}", severity="FATAL")
        r = m.MessageReader(body)
        mechanism = r.cstring()
        if mechanism != SCRAM:
            raise SqlError("08P01", "client selected an invalid SASL authentication mechanism", severity="FATAL")
        length = r.int32()
        client_first = r.raw(length) if length >= 0 else b""
        r.done()
        try:
            first = client_first.decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed() from None
        if first.startswith("p="):
            raise SqlError("08P01", "channel binding is not supported by this server", severity="FATAL")
        if not (first.startswith("n,") or first.startswith("y,")):
            raise _malformed()
        gs2_end = first.find(",", 2)
        if gs2_end < 0:
            raise _malformed()
        gs2_header = first[:gs2_end + 1]
        bare = first[gs2_end + 1:]
        attrs = _attributes(bare)
        c_nonce = attrs.get("r")
        if "n" not in attrs or not c_nonce or "m" in attrs:
            raise _malformed()
        nonce = c_nonce + base64.b64encode(os.urandom(18)).decode()
        server_first = f"r={nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        await send(m.auth_sasl_continue(server_first.encode()))
        kind, body = await receive()
        if kind != b"p":
            raise SqlError("08P01", f"expected SASL response, got message type {kind[0]}", severity="FATAL")
        try:
            final = body.decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed() from None
        cut = final.rfind(",p=")
        if cut < 0:
            raise _malformed()
        without_proof = final[:cut]
        fattrs = _attributes(without_proof)
        try:
            proof = base64.b64decode(final[cut + 3:], validate=True)
            binding = base64.b64decode(fattrs.get("c", ""), validate=True)
        except (ValueError, binascii.Error):
            raise _malformed() from None
        if fattrs.get("r") != nonce or binding != gs2_header.encode():
            raise _malformed()
        auth_message = f"{bare},{server_first},{without_proof}".encode()
        client_signature = hmac.new(stored_key, auth_message, hashlib.sha256).digest()
        if len(proof) != len(client_signature):
            raise auth_failed(user)
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
        if not hmac.compare_digest(hashlib.sha256(client_key).digest(), stored_key) or not known:
            raise auth_failed(user)
        server_signature = hmac.new(server_key, auth_message, hashlib.sha256).digest()
        await send(m.auth_sasl_final(b"v=" + base64.b64encode(server_signature)))


def _password_matches(password: str, verifier: tuple[bytes, bytes, bytes, int]) -> bool:
    """Does a cleartext password match a SCRAM-SHA-256 verifier (RFC 5802's StoredKey)?"""
    salt, stored_key, _, iterations = verifier
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    return hmac.compare_digest(hashlib.sha256(client_key).digest(), stored_key)


def _malformed() -> SqlError:
    return SqlError("08P01", "malformed SCRAM message", severity="FATAL")


def _attributes(msg: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in msg.split(","):
        if len(part) < 2 or part[1] != "=":
            raise _malformed()
        out[part[0]] = part[2:]
    return out
