"""Shared fixtures: a real PostgreSQL oracle and a real tidegate gateway, each started once per run."""

from __future__ import annotations

import pytest

from tests.pgoracle import PostgresServer, start_postgres
from tests.tidegate_server import TidegateServer, start_tidegate


@pytest.fixture(scope="session")
def pg_oracle() -> PostgresServer:
    server = start_postgres()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tidegate(tmp_path_factory) -> TidegateServer:
    """One gateway (one Spark) shared by the end-to-end suites; tests use their own table names."""
    server = start_tidegate(tmp_path_factory.mktemp("tidegate-data"))
    server.wait_for_spark()
    yield server
    server.stop()
