"""The servers a client-matrix suite runs against: the PostgreSQL oracle and tidegate."""

from __future__ import annotations

from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Target:
    """Connection parameters of one server under test (the oracle or tidegate)."""

    name: str
    port: int
    user: str
    dbname: str
    host: str = "127.0.0.1"

    @property
    def dsn(self) -> str:
        return f"host={self.host} port={self.port} user={self.user} dbname={self.dbname}"

    @property
    def url(self) -> str:
        """SQLAlchemy URL (psycopg 3 driver)."""
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{self.dbname}"


def target_for(request: pytest.FixtureRequest, name: str) -> Target:
    """The session-wide server named ``name`` ("postgres" or "tidegate"), started on first use."""
    if name == "postgres":
        pg = request.getfixturevalue("pg_oracle")
        return Target("postgres", pg.port, "postgres", "postgres")
    tg = request.getfixturevalue("tidegate")
    return Target("tidegate", tg.port, "tidegate", "tidegate")
