"""Real client catalog queries answered by CatalogQueries, compared with PostgreSQL's answers.

The statements in tests/fixtures/client_catalog_queries/ were captured from psql, SQLAlchemy,
asyncpg and pgJDBC talking to PostgreSQL (capture.py there regenerates them). Each one runs on a
PostgreSQL oracle holding the reference schema and on CatalogQueries over a Catalog with the same
definitions; column names, type OIDs and rows must match, OID values and owner names aside.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import psycopg

from tests.pgoracle import start_postgres
import pytest

from catalog.pgcatalog import CatalogQueries
from catalog.store import Catalog, ColumnDef, TableDef
from tidegate.pgtypes import column_type
from tidegate.session import SessionInfo

FIXTURES = Path(__file__).parent / "fixtures" / "client_catalog_queries"
ORACLE_DB = "tgcat"
REFERENCE_SQL = [
    "CREATE TABLE t (id integer PRIMARY KEY, name varchar(20), amount numeric(10,2) DEFAULT 0, ts timestamp(3))",
    "COMMENT ON TABLE t IS 'a table'",
    "COMMENT ON COLUMN t.name IS 'the name'",
    "CREATE TABLE metrics (host text NOT NULL, ts timestamp NOT NULL, cpu double precision, PRIMARY KEY (host, ts))",
    "CREATE VIEW v AS SELECT id FROM t",
]

# Queries over objects PostgreSQL has and tidegate does not mirror one by one (all of pg_type,
# every database, operator classes): tidegate's rows must be a subset of PostgreSQL's.
SUBSET = {"psql_l_1", "jdbc_5", "jdbc_6", "sqlalchemy_12"}
# Rows that legitimately differ: the server version string; LIMIT without ORDER BY.
COLUMNS_ONLY = {"sqlalchemy_1", "asyncpg_1"}
# ORDER BY that leaves ties in no particular order: compare as sets.
UNORDERED = {"asyncpg_intro_lookup_types", "asyncpg_intro_lookup_types_13"}
# Columns whose type tidegate reports less precisely (PostgreSQL type, tidegate type).
KNOWN_TYPE_GAPS = {"basetype": (26, 20), "attrtypoids": (1028, 1016)}


def reference_catalog(path: Path) -> Catalog:
    cat = Catalog(path)
    cat.create_table(TableDef("public", "t", [
        ColumnDef("id", column_type("int4"), not_null=True),
        ColumnDef("name", column_type("varchar", 20), comment="the name"),
        ColumnDef("amount", column_type("numeric", 10, 2), default="0"),
        ColumnDef("ts", column_type("timestamp", 3)),
    ], primary_key=["id"], comment="a table"))
    cat.create_table(TableDef("public", "metrics", [
        ColumnDef("host", column_type("text"), not_null=True),
        ColumnDef("ts", column_type("timestamp"), not_null=True),
        ColumnDef("cpu", column_type("float8")),
    ], primary_key=["host", "ts"]))
    cat.create_table(TableDef("public", "v", [ColumnDef("id", column_type("int4"))], kind="view",
                              view_sql="SELECT id FROM t"))
    return cat


@pytest.fixture(scope="module")
def oracle():
    # A cluster of its own: the captured statements carry the OIDs a fresh cluster assigns to the
    # reference objects, which a cluster shared with other suites would not reproduce.
    pg_oracle = start_postgres()
    with psycopg.connect(pg_oracle.dsn, autocommit=True) as admin:
        admin.execute("DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tidegate') THEN "
                      "CREATE ROLE tidegate SUPERUSER LOGIN; END IF; END$$")
        admin.execute(f"DROP DATABASE IF EXISTS {ORACLE_DB}")
        admin.execute(f"CREATE DATABASE {ORACLE_DB} OWNER tidegate")
    con = psycopg.connect(f"host=127.0.0.1 port={pg_oracle.port} user=tidegate dbname={ORACLE_DB}", autocommit=True)
    for stmt in REFERENCE_SQL:
        con.execute(stmt)
    yield con
    con.close()
    pg_oracle.stop()


@pytest.fixture(scope="module")
def mine(tmp_path_factory):
    cat = reference_catalog(tmp_path_factory.mktemp("catalog") / "catalog.sqlite")
    queries = CatalogQueries(cat)
    yield queries, cat
    queries.close()
    cat.close()


INFO = SessionInfo(user="tidegate", database=ORACLE_DB, settings={"search_path": '"$user", public'})


def _norm(v):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int) and v >= 16384:
        return "<oid>"
    if isinstance(v, str):
        if v in ("postgres", "pg_database_owner", "tidegate"):
            return "<owner>"
        if v in (ORACLE_DB,):
            return "<db>"
        if v.isdigit() and int(v) >= 16384:
            return "<oid>"
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    return v


def _oid_map(oracle, cat: Catalog) -> dict[str, str]:
    theirs = dict(oracle.execute("SELECT relname, oid::int FROM pg_class WHERE relnamespace = 'public'::regnamespace").fetchall())
    ours = {t.name: t.oid for t in cat.list_tables()}
    return {str(theirs[n]): str(ours[n]) for n in ours if n in theirs}


def run_both(oracle, queries: CatalogQueries, cat: Catalog, sql: str, params: list):
    cur = psycopg.RawCursor(oracle)
    cur.execute(sql, params or None)
    theirs = ([d.name for d in cur.description], [d.type_code for d in cur.description], cur.fetchall())
    # psql feeds OIDs it read back into later statements: translate them to tidegate's OIDs
    mapping = _oid_map(oracle, cat)
    my_sql = re.sub(r"'(\d+)'", lambda m: f"'{mapping.get(m.group(1), m.group(1))}'", sql)
    my_params = [mapping.get(p, p) if isinstance(p, str) else p for p in params]
    assert queries.handles(my_sql)
    rs = queries.execute(my_sql, my_params, INFO)
    rows = []
    for batch in rs.batches:
        cols = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        rows.extend(zip(*cols))
    ours = ([f.name for f in rs.fields], [f.type.pg.oid for f in rs.fields], rows)
    return theirs, ours


def compare(name: str, sql: str, theirs, ours) -> None:
    t_names, t_types, t_rows = theirs
    o_names, o_types, o_rows = ours
    assert o_names == t_names
    for col, tt, ot in zip(t_names, t_types, o_types):
        if tt != ot:
            assert KNOWN_TYPE_GAPS.get(col) == (tt, ot), f"column {col}: PostgreSQL type {tt}, tidegate {ot}"
    if name in COLUMNS_ONLY:
        return
    t_norm = [tuple(_norm(v) for v in r) for r in t_rows]
    o_norm = [tuple(_norm(v) for v in r) for r in o_rows]
    if name in SUBSET:
        missing = [r for r in o_norm if r not in t_norm]
        assert not missing, f"rows PostgreSQL does not have: {missing[:5]}"
        return
    if "order by" not in sql.lower() or name in UNORDERED:
        t_norm, o_norm = sorted(t_norm, key=repr), sorted(o_norm, key=repr)
    assert o_norm == t_norm


def _fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.sql"))


def test_fixtures_cover_every_client():
    names = {p.stem.split("_")[0] for p in _fixtures()}
    assert {"psql", "sqlalchemy", "asyncpg", "jdbc"} <= names
    assert len(_fixtures()) >= 40


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.stem)
def test_client_query_matches_postgres(path: Path, oracle, mine):
    queries, cat = mine
    text = path.read_text()
    first, sql = text.split("\n", 1)
    params = json.loads(first.split(":", 1)[1])
    theirs, ours = run_both(oracle, queries, cat, sql, params)
    compare(path.stem, sql, theirs, ours)


def _psql_echo(port: int, command: str) -> list[str]:
    """The catalog queries ``psql -E`` sends for a backslash command (live, against the oracle)."""
    out = subprocess.run(["psql", "-X", "-E", "-h", "127.0.0.1", "-p", str(port), "-U", "tidegate", "-d", ORACLE_DB,
                          "-c", command], capture_output=True, text=True, check=True).stdout
    return [q.strip() for q in re.findall(r"\*{9} QUERY \*{10}\n(.*?)\n\*{26}", out, re.S)]


@pytest.mark.parametrize("command", [r"\d", r"\d t", r"\dt", r"\dn", r"\dv", r"\d+ t", r"\d metrics", r"\l"])
def test_psql_live_echo_matches_postgres(command: str, oracle, mine):
    queries, cat = mine
    statements = _psql_echo(oracle.info.port, command)
    assert statements
    for sql in statements:
        theirs, ours = run_both(oracle, queries, cat, sql, [])
        compare("psql_l_1" if command == r"\l" else "live", sql, theirs, ours)
