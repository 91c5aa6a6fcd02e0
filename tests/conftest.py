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


@pytest.fixture(scope="session")
def spark_cluster():
    """A Spark standalone cluster (a master and one worker) for the suites that run on one."""
    from tests.spark_cluster import start_cluster

    cluster = start_cluster()
    yield cluster
    cluster.stop()


@pytest.fixture()
def spark_free_engine(tmp_path):
    """(engine, session) of an engine whose Spark is never started: what runs on it must not need
    Spark (DDL, INSERT VALUES, storage, the interactive path)."""
    from catalog.store import Catalog
    from engine import Engine
    from tidegate.config import Settings

    settings = Settings(data_dir=tmp_path, spark_master="local[2]", maintenance_interval_s=0)
    catalog = Catalog(settings.catalog_path)
    engine = Engine(settings, catalog)
    session = engine.open_session()
    yield engine, session
    session.close()
    engine.shutdown()
    catalog.close()
