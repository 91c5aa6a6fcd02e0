"""SQLAlchemy 2 (psycopg driver) and pandas against tidegate, with PostgreSQL 15 as the oracle.

The inspector runs SQLAlchemy's real pg_catalog queries; its answers for tables created with
the same DDL must equal PostgreSQL's.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pandas as pd
import pytest
import sqlalchemy as sa
from tests.targets import Target, target_for as _target


SETUP = [
    "DROP VIEW IF EXISTS sa_orders_v",
    "DROP TABLE IF EXISTS sa_orders",
    "DROP TABLE IF EXISTS sa_plain",
    "CREATE TABLE sa_orders (id bigint PRIMARY KEY, customer varchar(40) NOT NULL, amount numeric(10,2),"
    " placed timestamp, paid boolean, note text, qty integer NOT NULL, ratio double precision, day date)",
    "INSERT INTO sa_orders VALUES (1, 'ann', 10.50, '2024-01-01 10:00:00', true, NULL, 2, 0.5, '2024-01-01'),"
    " (2, 'bob', 3.25, '2024-01-02 11:30:00', false, 'rush', 1, 1.25, '2024-01-02'),"
    " (3, 'ann', 7.00, '2024-01-03 09:15:00', true, 'gift', 5, NULL, NULL)",
    "CREATE TABLE sa_plain (a int, b text)",
    "CREATE VIEW sa_orders_v AS SELECT customer, sum(amount) AS total FROM sa_orders GROUP BY customer",
]


def _engine(target: Target) -> sa.Engine:
    engine = sa.create_engine(target.url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        for stmt in SETUP:
            conn.execute(sa.text(stmt))
    return engine


@pytest.fixture(scope="module", params=["postgres", "tidegate"])
def engine(request: pytest.FixtureRequest) -> sa.Engine:
    eng = _engine(_target(request, request.param))
    yield eng
    eng.dispose()


@pytest.fixture(scope="module")
def oracle_engine(request: pytest.FixtureRequest) -> sa.Engine:
    eng = _engine(_target(request, "postgres"))
    yield eng
    eng.dispose()


def test_text_query_with_params(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT id, customer, amount FROM sa_orders WHERE customer = :c ORDER BY id"),
                            {"c": "ann"}).all()
        assert [tuple(r) for r in rows] == [(1, "ann", Decimal("10.50")), (3, "ann", Decimal("7.00"))]
        assert conn.execute(sa.text("SELECT count(*) FROM sa_orders")).scalar_one() == 3
        row = conn.execute(sa.text("SELECT placed, paid, day FROM sa_orders WHERE id = :i"), {"i": 2}).one()
        assert row._mapping == {"placed": dt.datetime(2024, 1, 2, 11, 30), "paid": False, "day": dt.date(2024, 1, 2)}


def test_core_table_reflection_and_select(engine: sa.Engine) -> None:
    table = sa.Table("sa_orders", sa.MetaData(), autoload_with=engine)
    assert [c.name for c in table.columns] == ["id", "customer", "amount", "placed", "paid", "note", "qty",
                                               "ratio", "day"]
    with engine.connect() as conn:
        stmt = (sa.select(table.c.customer, sa.func.sum(table.c.qty).label("q"))
                .group_by(table.c.customer).order_by(table.c.customer))
        assert [tuple(r) for r in conn.execute(stmt)] == [("ann", 7), ("bob", 1)]


def test_orm_style_insert_update_transaction(engine: sa.Engine) -> None:
    meta = sa.MetaData()
    t = sa.Table("sa_core_rw", meta, sa.Column("id", sa.Integer, primary_key=True),
                 sa.Column("name", sa.String(20), nullable=False), sa.Column("score", sa.Float))
    meta.drop_all(engine)
    meta.create_all(engine)
    with engine.begin() as conn:
        conn.execute(t.insert(), [{"id": 1, "name": "a", "score": 1.0}, {"id": 2, "name": "b", "score": None}])
    with engine.begin() as conn:
        conn.execute(t.update().where(t.c.id == 2).values(score=2.5))
    with engine.connect() as conn:
        assert [tuple(r) for r in conn.execute(sa.select(t).order_by(t.c.id))] == [(1, "a", 1.0), (2, "b", 2.5)]
    with pytest.raises(sa.exc.IntegrityError):
        with engine.begin() as conn:
            conn.execute(t.insert(), {"id": 1, "name": "dup", "score": 0})
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one() == 2
    meta.drop_all(engine)
    assert not sa.inspect(engine).has_table("sa_core_rw")


def test_inspect_schema_names(engine: sa.Engine) -> None:
    names = sa.inspect(engine).get_schema_names()
    assert "public" in names
    assert "information_schema" in names
    assert not any(n.startswith("pg_") for n in names)


def test_inspect_table_and_view_names(engine: sa.Engine) -> None:
    insp = sa.inspect(engine)
    tables = insp.get_table_names()
    assert {"sa_orders", "sa_plain"} <= set(tables)
    assert "sa_orders_v" not in tables
    assert "sa_orders_v" in insp.get_view_names()
    assert "sa_orders" not in insp.get_view_names()
    assert insp.has_table("sa_orders")
    assert insp.has_table("sa_orders", schema="public")
    assert not insp.has_table("sa_missing")


def _columns(engine: sa.Engine, table: str) -> list[tuple[str, str, bool]]:
    return [(c["name"], str(c["type"]), c["nullable"]) for c in sa.inspect(engine).get_columns(table)]


def test_inspect_columns(engine: sa.Engine, oracle_engine: sa.Engine) -> None:
    got = _columns(engine, "sa_orders")
    assert got == [("id", "BIGINT", False), ("customer", "VARCHAR(40)", False), ("amount", "NUMERIC(10, 2)", True),
                   ("placed", "TIMESTAMP", True), ("paid", "BOOLEAN", True), ("note", "TEXT", True),
                   ("qty", "INTEGER", False), ("ratio", "DOUBLE PRECISION", True), ("day", "DATE", True)]
    assert got == _columns(oracle_engine, "sa_orders")
    assert _columns(engine, "sa_orders_v") == _columns(oracle_engine, "sa_orders_v")


def test_inspect_pk_and_indexes(engine: sa.Engine) -> None:
    insp = sa.inspect(engine)
    pk = insp.get_pk_constraint("sa_orders")
    assert pk["constrained_columns"] == ["id"]
    assert pk["name"] == "sa_orders_pkey"
    assert insp.get_pk_constraint("sa_plain")["constrained_columns"] == []
    assert insp.get_foreign_keys("sa_orders") == []
    assert isinstance(insp.get_indexes("sa_orders"), list)


def test_pandas_read_sql(engine: sa.Engine) -> None:
    df = pd.read_sql("SELECT id, customer, amount, placed, ratio FROM sa_orders ORDER BY id", engine)
    assert list(df.columns) == ["id", "customer", "amount", "placed", "ratio"]
    assert df["id"].tolist() == [1, 2, 3]
    assert df["customer"].tolist() == ["ann", "bob", "ann"]
    assert df["placed"].iloc[1] == pd.Timestamp("2024-01-02 11:30:00")
    assert df["ratio"].isna().tolist() == [False, False, True]
    df2 = pd.read_sql(sa.text("SELECT customer, count(*) AS n FROM sa_orders WHERE id > :m GROUP BY customer"
                              " ORDER BY customer"), engine, params={"m": 1})
    assert df2.to_dict("records") == [{"customer": "ann", "n": 1}, {"customer": "bob", "n": 1}]


def test_pandas_to_sql_round_trip(engine: sa.Engine) -> None:
    df = pd.DataFrame({"k": [1, 2, 3], "label": ["x", None, "z"], "v": [0.5, 1.5, None],
                       "at": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03"])})
    df.to_sql("sa_pandas", engine, if_exists="replace", index=False)
    back = pd.read_sql("SELECT k, label, v, at FROM sa_pandas ORDER BY k", engine)
    assert back["k"].tolist() == [1, 2, 3]
    assert back["label"].tolist()[0::2] == ["x", "z"] and back["label"].isna().tolist() == [False, True, False]
    assert back["v"].tolist()[:2] == [0.5, 1.5] and pd.isna(back["v"].iloc[2])
    assert back["at"].tolist() == df["at"].tolist()
    df.to_sql("sa_pandas", engine, if_exists="append", index=False)
    assert pd.read_sql("SELECT count(*) AS n FROM sa_pandas", engine)["n"].iloc[0] == 6
