"""Helpers for tests that drive a real gateway through psycopg: a gateway per module, rows,
errors, and polling for what background work (flows, maintenance, the events recorder) does."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.tidegate_server import TidegateServer, start_tidegate


def running_gateway(data_dir: Path, env: dict[str, str] | None = None) -> Iterator[TidegateServer]:
    """For a module fixture: a gateway on ``data_dir`` whose Spark is up, stopped afterwards."""
    server = start_tidegate(data_dir, env=env)
    try:
        server.wait_for_spark()
        yield server
    finally:
        server.stop()


def rows(conn: psycopg.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    return conn.execute(sql, params or None).fetchall()


def error_of(conn: psycopg.Connection, sql: str, params: tuple = ()) -> psycopg.Error:
    """The error ``sql`` fails with (the test fails if it succeeds)."""
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql, params or None)
    return info.value


def wait_until(check: Callable[[], Any], timeout: float = 60.0, what: str = "", interval: float = 0.25) -> Any:
    """Poll ``check`` until it returns something true (returned) or ``timeout`` seconds pass."""
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError(f"not reached in {timeout} s: {what or 'condition'}; last value {value!r}")
        time.sleep(interval)
