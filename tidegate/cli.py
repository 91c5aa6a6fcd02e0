"""The ``tidegate`` command: ``tidegate serve`` runs the PostgreSQL-protocol gateway.

Settings come from built-in defaults < TOML (--config / TIDEGATE_CONFIG) < TIDEGATE_* environment
< flags. The socket is bound (and "tidegate listening on HOST:PORT" printed) before Spark is
ready; SIGTERM/SIGINT stop the server gracefully. One gateway per data dir of an embedded catalog:
a second one exits with status 1 naming the holder (catalog.lock). The gateways of a PostgreSQL
catalog all serve; one leads the flows, refreshes and maintenance, and a follower takes the lead
when it dies (catalog.active). A gateway that can no longer confirm its slot or its lead exits
with status 3.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence

from tidegate import __version__
from tidegate.config import Settings, load_settings


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tidegate", description="PostgreSQL-wire SQL gateway over Spark and Delta Lake")
    p.add_argument("--version", action="version", version=f"tidegate {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the gateway")
    s.add_argument("--host", help="address to bind (default 127.0.0.1)")
    s.add_argument("--port", type=int, help="port to bind (default 5433; 0 = any free port)")
    s.add_argument("--data-dir", help="catalog and warehouse directory (default ./tidegate-data)")
    s.add_argument("--catalog", help="postgresql:// URL of the catalog database (default: embedded, "
                                     "a SQLite file under the data directory)")
    s.add_argument("--config", help="TOML settings file")
    s.add_argument("--tls-cert", help="PEM certificate; enables TLS together with --tls-key")
    s.add_argument("--tls-key", help="PEM private key")
    s.add_argument("--spark-master", help="Spark master URL (default local[*])")
    s.add_argument("--spark-conf", action="append", default=[], metavar="K=V",
                   help="extra Spark configuration, repeatable")
    s.add_argument("--log-level", help="DEBUG, INFO, WARNING, ERROR")
    return p


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides = {
        "host": args.host, "port": args.port, "data_dir": args.data_dir, "catalog": args.catalog,
        "tls_cert": args.tls_cert,
        "tls_key": args.tls_key, "spark_master": args.spark_master, "log_level": args.log_level,
    }
    settings = load_settings(args.config, overrides)
    for kv in args.spark_conf:
        if "=" not in kv:
            raise SystemExit(f"tidegate: --spark-conf expects KEY=VALUE, got {kv!r}")
        k, v = kv.split("=", 1)
        settings.spark_conf[k.strip()] = v.strip()
    return settings


def binds_loopback_only(host: object) -> bool:
    """True when binding ``host`` listens on loopback addresses only. Unlike an empty *peer* host
    (a unix socket, see gateway.auth.is_loopback), an empty or "*" bind host makes asyncio listen on
    every interface (getaddrinfo with AI_PASSIVE), and a list binds each of its addresses; anything
    that is not provably loopback (a hostname other than localhost, "0", "127.1") counts as non-loopback."""
    from gateway.auth import is_loopback

    return isinstance(host, str) and host not in ("", "*") and is_loopback(host)


def check_settings(settings: Settings) -> str | None:
    """A reason to refuse to start, or None."""
    if not settings.users and not binds_loopback_only(settings.host):
        return (f"refusing to listen on non-loopback address {settings.host!r} without users: configure "
                "[[users]] in the config file or TIDEGATE_USERS=name:password")
    if bool(settings.tls_cert) != bool(settings.tls_key):
        return "--tls-cert and --tls-key must be given together"
    from engine import ttl
    from tidegate.errors import SqlError

    try:
        ttl.parse(str(settings.events_ttl))
    except SqlError as exc:
        return f"invalid setting events_ttl: {exc.message}"
    micros = ttl.duration_us(str(settings.job_result_ttl))
    if not micros or micros <= 0:
        return f"invalid setting job_result_ttl: {settings.job_result_ttl!r} is not a positive duration"
    if settings.max_running_jobs < 1:
        return "invalid setting max_running_jobs: it must be at least 1"
    from engine.spark import required_jars

    try:
        required_jars()
    except SqlError as exc:
        return f"{exc.message} ({exc.hint})"
    return None


async def _serve(settings: Settings) -> int:
    from gateway.dispatch import RoutedBackend
    from gateway.server import Server

    # Background Python work (jobs, flows, the events recorder) must not hold a statement's
    # thread for CPython's default 5 ms switch interval: 1 ms keeps a SUBMIT JOB or a catalog
    # query at a few milliseconds while jobs run (bench/jobs.py).
    sys.setswitchinterval(0.001)

    loop = asyncio.get_running_loop()
    backend = RoutedBackend(settings)  # takes the data-dir lock first (catalog.lock), then opens the catalog
    server = Server(settings, backend)
    host, port = await server.start()
    backend.data_dir_lock.update(listen=f"{host}:{port}")  # the bound port (--port 0)
    if backend.catalog_lock is not None:
        backend.catalog_lock.update(f"{host}:{port}")
    print(f"tidegate listening on {host}:{port}", flush=True)
    backend.start(listen=f"{host}:{port}")  # returns at once; Spark starts in the background
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    await stop.wait()
    logging.getLogger("tidegate").info("shutting down")
    await server.stop()
    await loop.run_in_executor(None, backend.shutdown)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command != "serve":
        return 2
    try:
        settings = settings_from_args(args)
    except (OSError, ValueError) as e:
        print(f"tidegate: invalid configuration: {e}", file=sys.stderr)
        return 2
    problem = check_settings(settings)
    if problem:
        print(f"tidegate: {problem}", file=sys.stderr)
        return 2
    logging.basicConfig(level=getattr(logging, str(settings.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    from catalog.lock import DataDirLockError
    from tidegate.dialect import allow_deep_statements

    allow_deep_statements()  # before any thread starts: worker threads get the larger stack
    try:
        return asyncio.run(_serve(settings))
    except DataDirLockError as e:  # another gateway holds the data dir (the message names it)
        print(f"tidegate: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"tidegate: cannot listen on {settings.host}:{settings.port}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
