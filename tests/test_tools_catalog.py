"""The catalog and query shapes tools send (issue 16): ADBC, psql/pgcli, SQLAlchemy, dbt.

Every test runs through a real client over a socket against tidegate and, where the answer is
data, against PostgreSQL 15 (the oracle): the two must answer the same. The oracle's database is
``postgres`` and tidegate's ``tidegate``; queries that name the current database get the name of
the server they run on.
"""

from __future__ import annotations

import subprocess

import psycopg
import pyarrow as pa
import pytest
import sqlalchemy as sa

from tests.targets import Target, target_for

SETUP = [
    "DROP VIEW IF EXISTS tools_v",
    "DROP TABLE IF EXISTS tools_t",
    "DROP TABLE IF EXISTS tools_ingested",
    "CREATE TABLE tools_t (id integer NOT NULL, name text, amount numeric(10,2), ts timestamp, d date,"
    " f double precision, b boolean)",
    "INSERT INTO tools_t VALUES (1, 'a', 1.50, '2024-01-02 03:04:05', '2024-01-02', 0.5, true),"
    " (2, 'b', 20.25, '2024-02-03 04:05:06', '2024-02-03', -1.25, false), (3, 'c', NULL, NULL, NULL, NULL, NULL),"
    " (4, NULL, 0, '2024-03-04 00:00:00', '2024-03-04', 0, true)",
    "CREATE VIEW tools_v AS SELECT id, name FROM tools_t",
]

# The types tidegate knows (tidegate.pgtypes), by name: their pg_type rows must be PostgreSQL's.
TYPE_NAMES = ["bool", "bytea", "char", "name", "int8", "int2", "int2vector", "int4", "regproc", "text", "oid",
              "oidvector", "json", "float4", "float8", "unknown", "bpchar", "varchar", "date", "time",
              "timestamp", "timestamptz", "interval", "numeric", "regclass", "regtype", "record", "void",
              "uuid", "jsonb", "_bool", "_int4", "_text", "_numeric", "_timestamptz", "_uuid", "_jsonb",
              "anyelement", "anyarray", "cstring", "internal", "any"]


@pytest.fixture(scope="module")
def servers(request: pytest.FixtureRequest) -> dict[str, Target]:
    out = {name: target_for(request, name) for name in ("postgres", "tidegate")}
    for target in out.values():
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            for stmt in SETUP:
                conn.execute(stmt)
    return out


def _run(target: Target, sql: str, params=None, binary: bool = False) -> tuple[list[tuple[str, int]], list[tuple]]:
    sql = sql.replace("{db}", target.dbname)
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        cur = conn.cursor(binary=binary)
        cur.execute(sql, params)
        return [(d.name, d.type_code) for d in cur.description], cur.fetchall()


def _error(target: Target, sql: str, params=None) -> tuple[str | None, str]:
    sql = sql.replace("{db}", target.dbname)
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as e:
            conn.execute(sql, params)
        return e.value.sqlstate, e.value.diag.message_primary or ""


def _same(servers: dict[str, Target], sql: str, params=None, binary: bool = False) -> list[tuple]:
    """Run on both; columns (names, type OIDs) and rows must match. Returns the rows."""
    want = _run(servers["postgres"], sql, params, binary)
    got = _run(servers["tidegate"], sql, params, binary)
    assert got == want, f"{sql}\n  tidegate: {got}\n  postgres: {want}"
    return got[1]


# -- 1. pg_type's regproc columns and ADBC ----------------------------------------------------------


def test_pg_type_regproc_columns_are_postgres_functions(servers):
    """typinput/typoutput/typreceive/typsend... print PostgreSQL's function names, and compare
    with numbers / cast to oid as the function's OID (ADBC's type query: typreceive != 0)."""
    rows = _same(servers, "SELECT typname, typinput, typoutput, typreceive, typsend, typmodin, typmodout,"
                          " typanalyze, typsubscript, typreceive::oid, typsend::oid, typinput::oid"
                          " FROM pg_catalog.pg_type WHERE typname = ANY(%s) ORDER BY typname", [TYPE_NAMES])
    assert len(rows) == len(TYPE_NAMES)
    assert ("int4", "int4in", "int4out", "int4recv", "int4send", "-", "-", "-", "-", 2406, 2407, 42) in rows
    # ADBC PostgreSQL driver's connect-time query, restricted to the types both servers have
    adbc = ("SELECT oid, typname, typreceive, typbasetype, typrelid, typarray FROM pg_catalog.pg_type"
            " WHERE (typreceive != 0 OR typsend != 0) AND typtype != 'r' AND typreceive::TEXT != 'array_recv'"
            " AND typname = ANY(%s) ORDER BY oid")
    rows = _same(servers, adbc, [TYPE_NAMES])
    assert ("numeric", "numeric_recv") in [(r[1], r[2]) for r in rows]
    assert "anyelement" not in [r[1] for r in rows]  # no receive function: typreceive = 0
    _same(servers, "SELECT typname FROM pg_type WHERE 0 = typsend AND typname = ANY(%s) ORDER BY 1", [TYPE_NAMES])


def _adbc_connect(target: Target):
    import adbc_driver_postgresql.dbapi as dbapi  # pinned in the test extras: a missing driver fails

    return dbapi.connect(f"postgresql://{target.user}@{target.host}:{target.port}/{target.dbname}")


def test_adbc_connects_and_fetches_arrow(servers):
    """The ADBC driver connects (it reads pg_type first) and a query comes back as the same Arrow
    table as from PostgreSQL: schema (numeric as PostgreSQL's opaque type) and values."""
    tables = {}
    for name, target in servers.items():
        with _adbc_connect(target) as conn, conn.cursor() as cur:
            cur.execute("SELECT * FROM tools_t ORDER BY id")
            tables[name] = cur.fetch_arrow_table()
            cur.execute("SELECT id, name FROM tools_t WHERE id = $1", (2,))
            assert cur.fetch_arrow_table().to_pylist() == [{"id": 2, "name": "b"}]
    got, want = tables["tidegate"], tables["postgres"]
    assert got.schema == want.schema
    assert got.equals(want), f"\n{got}\n{want}"
    assert got.num_rows == 4 and got.column("b").to_pylist() == [True, False, None, True]


def test_adbc_ingest(servers):
    """adbc_ingest (binary COPY without the -1 trailer, as PostgreSQL accepts) creates and fills a table."""
    data = pa.table({"k": pa.array([1, 2, 3], pa.int64()), "v": pa.array(["x", None, "z"]),
                     "f": pa.array([0.5, None, 2.0], pa.float64())})
    read = {}
    for name, target in servers.items():
        with _adbc_connect(target) as conn:
            with conn.cursor() as cur:
                assert cur.adbc_ingest("tools_ingested", data, mode="replace") == 3
            conn.commit()
            with conn.cursor() as cur:
                cur.execute("SELECT * FROM tools_ingested ORDER BY k")
                read[name] = cur.fetch_arrow_table()
                assert cur.adbc_ingest("tools_ingested", data, mode="append") == 3
            conn.commit()
            with conn.cursor() as cur:
                cur.execute("SELECT k, v FROM tools_ingested WHERE k = ANY($1) ORDER BY k", ([1, 3],))
                read[name + "_appended"] = cur.fetch_arrow_table()
    assert read["tidegate"].equals(read["postgres"])
    assert read["tidegate"].to_pydict() == data.to_pydict()
    assert read["tidegate_appended"].equals(read["postgres_appended"])
    assert read["tidegate_appended"].to_pydict() == {"k": [1, 1, 3, 3], "v": ["x", "x", "z", "z"]}
    sql = ("SELECT column_name, data_type::text FROM information_schema.columns"
           " WHERE table_name = 'tools_ingested' ORDER BY ordinal_position")
    assert _run(servers["tidegate"], sql)[1] == _run(servers["postgres"], sql)[1] == [
        ("k", "bigint"), ("v", "text"), ("f", "double precision")]


# -- 2. pg_proc, \df, current_schemas -----------------------------------------------------------------


def test_pg_proc_rows_are_postgres(servers):
    """pg_proc holds the functions tidegate answers, with PostgreSQL's OIDs and signatures."""
    names = ["abs", "count", "sum", "lower", "generate_series", "make_interval", "concat", "row_number",
             "current_schemas", "version", "date_trunc", "string_agg", "pg_get_keywords", "int4recv"]
    rows = _same(servers, "SELECT p.oid, proname, pronamespace, prokind, proretset, provolatile, proisstrict,"
                          " prorettype, proargtypes, pronargs, pronargdefaults, provariadic,"
                          " pg_catalog.pg_get_function_result(p.oid), pg_catalog.pg_get_function_arguments(p.oid),"
                          " pg_catalog.pg_get_function_identity_arguments(p.oid)"
                          " FROM pg_catalog.pg_proc p WHERE proname = ANY(%s)"
                          " AND proname NOT IN ('sum', 'date_trunc', 'string_agg', 'count', 'generate_series', 'lower')"
                          " ORDER BY p.oid", [names])
    assert {r[1] for r in rows} == set(names) - {"sum", "date_trunc", "string_agg", "count", "generate_series", "lower"}
    # overloads over types tidegate does not have (money, bytea aggregates, ...) are absent: a subset
    sql = ("SELECT p.oid, proname, prokind, prorettype, proargtypes, pg_get_function_result(p.oid),"
           " pg_get_function_arguments(p.oid) FROM pg_proc p WHERE proname = ANY(%s) ORDER BY 1")
    _, want = _run(servers["postgres"], sql, [names])
    _, got = _run(servers["tidegate"], sql, [names])
    assert set(got) <= set(want)
    assert {r[1] for r in got} == set(names)
    assert (2803, "count", "a", 20, "", "bigint", "") in got


def _psql(target: Target, *commands: str) -> subprocess.CompletedProcess:
    argv = ["psql", "-X", "-h", target.host, "-p", str(target.port), "-U", target.user, "-d", target.dbname]
    for c in commands:
        argv += ["-c", c]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_psql_df(servers):
    """psql's \\df lists functions as PostgreSQL does (none of the user's, PostgreSQL's by pattern)."""
    commands = ["\\df", "\\df abs", "\\df current_schemas", "\\df generate_series", "\\df make_interval"]
    want = _psql(servers["postgres"], *commands)
    got = _psql(servers["tidegate"], *commands)
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert " pg_catalog | abs  | integer          | integer             | func" in got.stdout
    plus = _psql(servers["tidegate"], "\\df+ count")
    assert plus.returncode == 0 and plus.stdout.count("| count |") == 2, plus.stderr


@pytest.mark.parametrize("sql", [
    "SELECT current_schemas(true)",
    "SELECT pg_catalog.current_schemas(false)",
    "SELECT * FROM current_schemas(true)",
    "SELECT * FROM pg_catalog.current_schemas(false) AS s",
    "SELECT s FROM current_schemas(true) s",
    "SELECT x.* FROM current_schema() AS x",
    "SELECT * FROM pg_namespace n WHERE n.nspname = ANY(current_schemas(true)) ORDER BY 1",
])
def test_current_schemas(servers, sql):
    _same(servers, sql.replace("SELECT * FROM pg_namespace n", "SELECT nspname FROM pg_namespace n"))


# -- 3. = ANY(array) ---------------------------------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True])
def test_any_array_parameter_catalog(servers, binary):
    """pgcli / SQLAlchemy send relkind = ANY(%s) with a list (psycopg: text and binary)."""
    _same(servers, "SELECT n.nspname, c.relname, c.relkind FROM pg_catalog.pg_class c"
                   " LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
                   " WHERE c.relkind = ANY(%s) AND c.relname LIKE 'tools%%' ORDER BY 1, 2", [["r", "p", "v"]], binary)
    _same(servers, "SELECT relname FROM pg_class WHERE relname = ANY(%s) ORDER BY 1",
          [["tools_t", "pg_class", "nope"]], binary)
    _same(servers, "SELECT relname FROM pg_class WHERE relname <> ALL(%s) AND relname LIKE 'tools%%' ORDER BY 1",
          [["tools_t"]], binary)
    _same(servers, "SELECT relname FROM pg_class WHERE NOT (relname = ANY(%s::name[])) AND relname LIKE 'tools%%'",
          [None], binary)
    _same(servers, "SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relname LIKE 'tools%%'", [[]], binary)


def test_any_untyped_array_literal_catalog(servers):
    """pgcli's \\dt \\dv \\di \\d queries compare relkind with an untyped '{r,p}' literal."""
    _same(servers, "SELECT n.nspname schema_name, c.relname table_name FROM pg_catalog.pg_class c"
                   " LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
                   " WHERE c.relkind = ANY('{r,p}') AND c.relname LIKE 'tools%' ORDER BY 1, 2")
    _same(servers, "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relkind = ANY('{v,m}')"
                   " AND c.relname LIKE 'tools%' ORDER BY 1")
    _same(servers, "SELECT c.relname FROM pg_class c WHERE c.relkind <> ALL ('{r,i,S,v,m,f,p,I}')"
                   " AND c.relname LIKE 'tools%' ORDER BY 1")


@pytest.mark.parametrize("binary", [False, True])
def test_any_array_parameter_table(servers, binary):
    _same(servers, "SELECT id FROM tools_t WHERE id = ANY(%s) ORDER BY id", [[1, 3, 9]], binary)
    _same(servers, "SELECT id, name FROM tools_t WHERE name = ANY(%s) ORDER BY id", [["a", "c", "zz"]], binary)
    _same(servers, "SELECT id FROM tools_t WHERE id <> ALL(%s) ORDER BY id", [[1, 2]], binary)
    _same(servers, "SELECT id FROM tools_t WHERE id = ANY(%s) ORDER BY id", [[]], binary)
    _same(servers, "SELECT id FROM tools_t WHERE NOT (id = ANY(%s)) ORDER BY id", [None], binary)


def test_any_untyped_array_literal_table(servers):
    _same(servers, "SELECT id FROM tools_t WHERE name = ANY('{a,c}') ORDER BY id")
    _same(servers, "SELECT id FROM tools_t WHERE id = ANY('{2,4}') ORDER BY id")
    _same(servers, "SELECT id FROM tools_t WHERE name <> ALL('{a,\"c\"}') ORDER BY id")
    _same(servers, "SELECT id FROM tools_t WHERE d = ANY('{2024-01-02,2024-03-04}') ORDER BY id")


@pytest.mark.parametrize("sql", [
    "SELECT id FROM tools_t WHERE name = ANY('abc')",
    "SELECT relname FROM pg_class WHERE relkind = ANY('abc')",
])
def test_malformed_array_literal_is_22P02(servers, sql):
    want = _error(servers["postgres"], sql)
    got = _error(servers["tidegate"], sql)
    assert got == want == ("22P02", 'malformed array literal: "abc"')


# -- 4. names qualified with the database -----------------------------------------------------------


@pytest.mark.parametrize("sql", [
    "SELECT column_name, data_type::text FROM \"{db}\".information_schema.columns WHERE table_name = 'tools_t'"
    " ORDER BY ordinal_position",
    "SELECT c.relname, c.relkind FROM {db}.pg_catalog.pg_class c JOIN {db}.pg_catalog.pg_namespace n"
    " ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relname LIKE 'tools%' ORDER BY 1",
    "SELECT table_name FROM {db}.information_schema.tables WHERE table_name LIKE 'tools%' ORDER BY 1",
    "SELECT id, name FROM {db}.public.tools_t ORDER BY id",
    "SELECT t.id FROM \"{db}\".public.tools_t t WHERE t.id = 2",
])
def test_current_database_qualified_names(servers, sql):
    """dbt's get_columns_in_relation reads "db".information_schema.columns."""
    assert _same(servers, sql)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM otherdb.pg_catalog.pg_class",
    "SELECT column_name FROM \"OtherDB\".information_schema.columns",
    "SELECT * FROM otherdb.public.tools_t",
    "SELECT otherdb.pg_catalog.version()",
])
def test_other_database_is_0A000(servers, sql):
    want = _error(servers["postgres"], sql)
    got = _error(servers["tidegate"], sql)
    assert got == want
    assert got[0] == "0A000" and got[1].startswith("cross-database references are not implemented: ")


# -- 5. LIMIT / FETCH FIRST with a parameter ----------------------------------------------------------


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sql,params", [
    ("SELECT id FROM tools_t ORDER BY id LIMIT %s::INTEGER", [2]),
    ("SELECT id FROM tools_t ORDER BY id LIMIT %s::INTEGER OFFSET %s::INTEGER", [2, 1]),
    ("SELECT id FROM tools_t ORDER BY id FETCH FIRST %s ROWS ONLY", [3]),
    ("SELECT id FROM tools_t ORDER BY id OFFSET %s ROWS FETCH NEXT %s ROWS ONLY", [1, 2]),
    ("SELECT relname FROM pg_class WHERE relname LIKE 'tools%%' ORDER BY 1 LIMIT %s::INTEGER", [1]),
])
def test_limit_and_fetch_parameters(servers, sql, params, binary):
    assert _same(servers, sql, params, binary)


def test_sqlalchemy_limit(servers):
    """SQLAlchemy's .limit()/.offset() on psycopg 3 send LIMIT %(param_1)s::INTEGER."""
    results = {}
    for name, target in servers.items():
        engine = sa.create_engine(target.url, poolclass=sa.pool.NullPool)
        try:
            t = sa.Table("tools_t", sa.MetaData(), autoload_with=engine)
            with engine.connect() as conn:
                results[name] = (
                    [tuple(r) for r in conn.execute(sa.select(t.c.id, t.c.name).order_by(t.c.id).limit(2))],
                    [tuple(r) for r in conn.execute(sa.select(t.c.id).order_by(t.c.id).limit(2).offset(1))],
                    [tuple(r) for r in conn.execute(sa.select(t.c.id).where(t.c.id.in_([1, 4])).order_by(t.c.id))],
                    [tuple(r) for r in conn.execute(sa.select(t.c.id).where(t.c.name == sa.any_(sa.literal(["a", "b"])))
                                                    .order_by(t.c.id))],
                )
        finally:
            engine.dispose()
    assert results["tidegate"] == results["postgres"]
    assert results["tidegate"][0] == [(1, "a"), (2, "b")]


# -- pgcli's completion queries ------------------------------------------------------------------------

PGCLI_FUNCTIONS = (
    "SELECT n.nspname schema_name, p.proname func_name, p.proargnames,"
    " COALESCE(proallargtypes::regtype[], proargtypes::regtype[])::text[], p.proargmodes,"
    " prorettype::regtype::text return_type, p.prokind = 'a' is_aggregate, p.prokind = 'w' is_window,"
    " p.proretset is_set_returning, d.deptype = 'e' is_extension, pg_get_expr(proargdefaults, 0) AS arg_defaults"
    " FROM pg_catalog.pg_proc p INNER JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
    " LEFT JOIN pg_depend d ON d.objid = p.oid and d.deptype = 'e'"
    " WHERE p.prorettype::regtype != 'trigger'::regtype AND p.proname = ANY(%s) ORDER BY 1, 2, 4")


@pytest.mark.parametrize("sql,params", [
    (PGCLI_FUNCTIONS, [["abs", "concat", "pg_get_keywords", "current_schemas", "make_interval"]]),
    ("SELECT nsp.nspname schema_name, cls.relname table_name, att.attname column_name,"
     " att.atttypid::regtype::text type_name, att.atthasdef AS has_default"
     " FROM pg_catalog.pg_attribute att INNER JOIN pg_catalog.pg_class cls ON att.attrelid = cls.oid"
     " INNER JOIN pg_catalog.pg_namespace nsp ON cls.relnamespace = nsp.oid"
     " WHERE cls.relkind = ANY(%s) AND NOT att.attisdropped AND att.attnum > 0 AND cls.relname LIKE 'tools%%'"
     " ORDER BY 1, 2, att.attnum", [["r", "p", "f", "v", "m"]]),
    ("SELECT n.nspname schema_name, t.typname type_name FROM pg_catalog.pg_type t"
     " INNER JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace"
     " WHERE (t.typrelid = 0 OR (SELECT c.relkind = 'c' FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid))"
     " AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_type el WHERE el.oid = t.typelem AND el.typarray = t.oid)"
     " AND n.nspname <> 'pg_catalog' AND n.nspname <> 'information_schema' ORDER BY 1, 2", None),
    ("SELECT * FROM unnest(current_schemas(true))", None),
    ("SELECT 'trigger'::regtype, 'trigger'::regtype::oid, 'int4'::regtype", None),
    ("SELECT 'int4recv'::regproc::oid, typname FROM pg_type WHERE typreceive = 'int4recv'::regproc", None),
])
def test_pgcli_completion_queries(servers, sql, params):
    _same(servers, sql, params)


# -- asyncpg: parameters encoded by the types the server describes ------------------------------------


@pytest.mark.parametrize("sql,args", [
    ("SELECT id FROM tools_t WHERE id = ANY($1) ORDER BY id", ([1, 3, 9],)),
    ("SELECT id, name FROM tools_t WHERE name = ANY($1) ORDER BY id", (["a", "c"],)),
    ("SELECT id FROM tools_t WHERE id <> ALL($1) ORDER BY id", ([1],)),
    ("SELECT id FROM tools_t ORDER BY id LIMIT $1", (2,)),
    ("SELECT id FROM tools_t ORDER BY id LIMIT $1 OFFSET $2", (2, 1)),
    ("SELECT id FROM tools_t ORDER BY id FETCH FIRST $1 ROWS ONLY", (3,)),
    ("SELECT relname FROM pg_class WHERE relname = ANY($1) ORDER BY 1", (["tools_t", "pg_type"],)),
])
def test_asyncpg_parameter_types(servers, sql, args):
    """asyncpg encodes by the described parameter types: LIMIT $1 is bigint, id = ANY($1) int4[]."""
    import asyncio

    import asyncpg

    async def run(target: Target):
        conn = await asyncpg.connect(host=target.host, port=target.port, user=target.user, database=target.dbname)
        try:
            stmt = await conn.prepare(sql)
            return [t.name for t in stmt.get_parameters()], [tuple(r) for r in await stmt.fetch(*args)]
        finally:
            await conn.close()

    want = asyncio.run(run(servers["postgres"]))
    got = asyncio.run(run(servers["tidegate"]))
    assert got == want


# -- SELECT $1: a bare parameter column has the parameter's declared type ------------------------------

_BARE_VALUES = [5, 2**40, True, [1, 2], 3.5, "txt", b"\x01\x02", None]


def _bare_values() -> list:
    import datetime
    import decimal
    import uuid

    from psycopg.types.json import Jsonb

    return _BARE_VALUES + [datetime.date(2024, 1, 2), decimal.Decimal("1.50"), datetime.datetime(2024, 1, 2, 3, 4, 5),
                           datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc), uuid.UUID(int=5),
                           Jsonb({"a": [1, None]})]


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sql", ["SELECT %s", "SELECT %s AS v, 1 AS one", "SELECT %s, id FROM tools_t WHERE id = 1",
                                 "SELECT id, %s v FROM tools_t WHERE id = 1"])
def test_bare_parameter_columns_take_declared_types(servers, sql, binary):
    """psycopg declares each parameter's type; the column a bare parameter makes has that type and
    value (type OID and decoded value equal to PostgreSQL's), in text and binary results."""
    for value in _bare_values():
        _same(servers, sql, [value], binary)
