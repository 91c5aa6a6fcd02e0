"""Catalog databases on the oracle PostgreSQL server for gateways started with ``--catalog``.

``python -m tests.catalog_db ADMIN_URL serve-args...`` starts a gateway (``tidegate serve
serve-args...``) whose catalog is a database named after its ``--data-dir``, created when missing:
a restarted gateway on the same data dir finds its catalog again. The sqlness runner's
``--server-cmd`` uses it to run golden files on a PostgreSQL catalog.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` with its database replaced by ``name``."""
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path="/" + name))


def create_database(admin_url: str, name: str) -> str:
    """Create database ``name`` unless it exists; its URL."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')
    return database_url(admin_url, name)


def database_for(data_dir: str | Path) -> str:
    return "tg_" + hashlib.sha1(str(Path(data_dir).resolve()).encode()).hexdigest()[:20]


def main(argv: list[str]) -> None:
    admin_url, serve_args = argv[0], argv[1:]
    data_dir = serve_args[serve_args.index("--data-dir") + 1]
    url = create_database(admin_url, database_for(data_dir))
    os.execv(sys.executable, [sys.executable, "-m", "tidegate", "serve", *serve_args, "--catalog", url])


if __name__ == "__main__":
    main(sys.argv[1:])
