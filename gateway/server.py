"""The listening server: accepts sockets, owns the worker pool, the backend and cancel keys.

One asyncio task per connection; every blocking backend call goes to ``executor``. The server
binds and accepts before the backend is ready (the engine starts Spark in the background), so
clients can connect and run catalog queries at once.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
import ssl
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from catalog.slots import pid_range, slot_of_pid
from gateway import messages as m
from gateway.auth import Authenticator
from gateway.connection import Connection, too_many_clients
from gateway.dispatch import Backend
from tidegate.config import Settings
from tidegate.errors import SqlError

log = logging.getLogger("tidegate.gateway")

# Over max_connections, up to this many more sockets (and no more than max_connections more) are
# read for their startup packet (Connection.over_capacity, REFUSAL_GRACE_S at most): a
# CancelRequest still works when the server is full, and a client is told 53300 after its SSL
# negotiation. Beyond that a socket is answered 53300 at once, unread, like PostgreSQL's postmaster
# does when even its extra children are used up.
FORWARD_TIMEOUT_S = 2.0  # connecting to, and telling, the gateway a cancel request belongs to
MAX_REFUSING = 100


def make_ssl_context(cert: str, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx


class Server:
    """A PostgreSQL-protocol server over ``backend`` (see :class:`gateway.dispatch.Backend`)."""

    def __init__(self, settings: Settings, backend: Backend, *, max_workers: int = 64,
                 authenticator: Authenticator | None = None) -> None:
        self.settings = settings
        self.backend = backend
        self.authenticator = authenticator or Authenticator(
            settings.users, role_verifier=getattr(backend, "role_verifier", None))
        self.ssl_context = (make_ssl_context(str(settings.tls_cert), str(settings.tls_key))
                            if settings.tls_cert and settings.tls_key else None)
        self.executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="tidegate-worker")
        self.connections: dict[int, Connection] = {}  # authenticated, by pid (cancel keys)
        self.open_clients = 0  # every admitted socket, authenticated or not: what max_connections caps
        self.refusing = 0  # over-capacity sockets being read for a CancelRequest or told 53300
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.AbstractServer | None = None
        self.address: tuple[str, int] | None = None

    async def start(self) -> tuple[str, int]:
        """Bind and start accepting; returns the bound (host, port)."""
        self._server = await asyncio.start_server(self._on_client, self.settings.host, self.settings.port,
                                                  limit=2 ** 20, backlog=1024)
        sock = self._server.sockets[0].getsockname()
        self.address = (sock[0], sock[1])
        return self.address

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cap = self.settings.max_connections
        over = self.open_clients >= cap
        if over and self.refusing >= min(cap, MAX_REFUSING):
            self._refuse(writer)
            return
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        # Counted here and released in the finally below: once per socket whatever way it ends.
        if over:
            self.refusing += 1
        else:
            self.open_clients += 1
        try:
            sock = writer.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass
            await Connection(self, reader, writer, over_capacity=over).run()
        finally:
            if over:
                self.refusing -= 1
            else:
                self.open_clients -= 1
            if task is not None:
                self._tasks.discard(task)

    @staticmethod
    def _refuse(writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(m.error_response(too_many_clients()))
            writer.close()
        except Exception:
            pass

    # ------------------------------------------------------------------ sessions and cancel keys
    def register(self, conn: Connection) -> None:
        """Give an authenticated ``conn`` a unique pid (in this gateway's slot's range, so unique
        among the gateways of a catalog: catalog.slots) and secret (max_connections is enforced
        at accept)."""
        pids = pid_range(self._slot())  # unique among the gateways of a catalog
        while True:
            pid = pids.start + secrets.randbelow(len(pids))
            if pid not in self.connections:
                break
        conn.pid = pid
        conn.secret = secrets.randbits(32) - 2 ** 31
        self.connections[pid] = conn

    def unregister(self, conn: Connection) -> None:
        if self.connections.get(conn.pid) is conn:
            del self.connections[conn.pid]

    def cancel(self, pid: int, secret: int) -> None:
        conn = self.connections.get(pid)
        if conn is not None:
            if conn.secret_matches(secret):
                conn.request_cancel("user")
            return
        self._forward_cancel(pid, secret)

    def _slot(self) -> int:
        return getattr(getattr(self.backend, "slot", None), "number", 0) or 0

    def _forward_cancel(self, pid: int, secret: int) -> None:
        """A cancel key this gateway did not hand out may be another gateway's of the same
        catalog (a client's CancelRequest reaches whichever gateway the load balancer picks): the
        request goes on, unchanged, to the gateway holding the pid's slot (catalog.slots), found
        through ``backend.peer_address``. A gateway forwards only keys of other slots, so a
        request travels at most once; nothing is answered either way, as in PostgreSQL."""
        slot = slot_of_pid(pid)
        peer = getattr(self.backend, "peer_address", None)
        if slot is None or slot == self._slot() or peer is None:
            return

        def forward() -> None:
            address = peer(slot)
            if address is None:
                return
            try:
                with socket.create_connection(address, timeout=FORWARD_TIMEOUT_S) as sock:
                    sock.sendall(struct.pack("!iiii", 16, m.CANCEL_REQUEST, pid, secret))
            except OSError as exc:
                log.warning("could not forward a cancel request to gateway slot %d at %s: %s", slot, address, exc)

        asyncio.get_running_loop().run_in_executor(self.executor, forward)

    # ------------------------------------------------------------------ shutdown
    async def stop(self) -> None:
        """Stop accepting, cancel running statements, tell clients (57P01) and close their sockets."""
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections.values()):
            conn.request_cancel("shutdown")
            try:
                conn.writer.write(m.error_response(
                    SqlError("57P01", "terminating connection due to administrator command"), "FATAL"))
                conn.writer.close()
            except Exception:
                pass
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        self.executor.shutdown(wait=False, cancel_futures=True)


class ServerThread:
    """Run a :class:`Server` on its own event loop in a background thread (embedding and tests)."""

    def __init__(self, settings: Settings, backend: Backend, **kw: Any) -> None:
        self.settings = settings
        self.backend = backend
        self.kw = kw
        self.loop = asyncio.new_event_loop()
        self.server: Server | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, name="tidegate-gateway", daemon=True)

    def start(self) -> tuple[str, int]:
        self._thread.start()

        async def boot() -> tuple[str, int]:
            self.server = Server(self.settings, self.backend, **self.kw)
            return await self.server.start()

        return asyncio.run_coroutine_threadsafe(boot(), self.loop).result(10)

    def stop(self) -> None:
        if self.server is not None:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def __enter__(self) -> ServerThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
