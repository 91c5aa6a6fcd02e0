"""SQL functions are an allow-list: nothing outside it reaches Spark or DuckDB, on any entry path.

Spark's ``reflect`` / ``java_method`` call any static Java method (the environment, file modes,
``System.exit``), ``input_file_name`` tells data file paths, ``SELECT * FROM csv.`/etc/passwd```
reads files, and the in-process DuckDB that answers catalog and constant queries has file readers
of its own. Everything here goes through a real client (psycopg) to the shared gateway and checks
both the SQLSTATE and that nothing happened: no environment value, file content or path in any
answer, file modes unchanged, the JVM still serving queries. engine/pgfunctions.py holds the lists.
"""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import pq

from catalog.store import Catalog, ColumnDef, TableDef
from engine.pgfunctions import PG_FUNCTIONS, SPARK_DENIED, check_spark_sql
from tidegate.errors import SqlError
from tidegate.pgtypes import column_type
from tests.tidegate_server import start_tidegate

GETENV = "reflect('java.lang.System', 'getenv', 'PATH')"
# Every spelling of a denied function must fail with one of these: 42883 (unknown function);
# 42601, a spelling the grammar rejects before any function lookup (GLOB is an operator to
# sqlglot); 42P01 / 0A000, a relation refused first (a catalog query sent to the engine because
# it calls a DuckDB-internal or qualified function: pg_catalog relations cannot join tables there).
REFUSED = {"42883", "42601", "42P01", "0A000"}


def outcome(conn: psycopg.Connection, sql: str) -> tuple[Any, ...]:
    """("ERROR", sqlstate, message) or ("OK", rows as text) via the simple protocol."""
    res = conn.pgconn.exec_(sql.encode())
    if res.status == pq.ExecStatus.FATAL_ERROR:
        return ("ERROR", (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode(),
                (res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode())
    rows = [tuple(None if res.get_value(r, c) is None else res.get_value(r, c).decode(errors="replace")
                  for c in range(res.nfields)) for r in range(res.ntuples)]
    return ("OK", rows)


SECRETS = [v for v in (os.environ.get("PATH"), os.environ.get("HOME")) if v and len(v) > 4]
PASSWD_MARK = "root:"


def assert_refused(conn: psycopg.Connection, sql: str, codes: set[str] | str = "42883") -> tuple[Any, ...]:
    got = outcome(conn, sql)
    allowed = {codes} if isinstance(codes, str) else codes
    assert got[0] == "ERROR" and got[1] in allowed, f"{sql!r} was not refused with {sorted(allowed)}: {got}"
    leaked = [s for s in SECRETS + [PASSWD_MARK] if s in got[2]]
    assert not leaked, f"{sql!r}: the error text leaks {leaked}: {got}"
    return got


@pytest.fixture(scope="module")
def gw(tidegate):
    return tidegate


@pytest.fixture(scope="module")
def conn(gw):
    with psycopg.connect(gw.dsn, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS secf_t")
        c.execute("CREATE TABLE secf_t (id int, s text)")
        c.execute("INSERT INTO secf_t VALUES (1, 'a')")
        yield c


def alive(conn: psycopg.Connection) -> None:
    """The JVM still answers a query over a table."""
    assert outcome(conn, "SELECT count(*) FROM secf_t") == ("OK", [("1",)])


# ------------------------------------------------------------------------------ Spark: reflect


@pytest.mark.parametrize("call", [
    GETENV,
    "java_method('java.lang.System', 'getenv', 'HOME')",
    "try_reflect('java.lang.System', 'getenv', 'PATH')",
    "reflect('java.lang.System', 'getProperty', 'user.home')",
    "input_file_name()",
    "input_file_block_start()",
    "input_file_block_length()",
    "from_protobuf(X'00', 'java.lang.String')",
    "xpath_string('<a>x</a>', 'a')",
    "from_xml('<a>1</a>', 'a int')",
    "python_worker_logs()",
])
@pytest.mark.parametrize("shape", ["SELECT {} FROM secf_t", "SELECT {}", "SELECT id FROM secf_t WHERE {} IS NOT NULL",
                                   "SELECT upper(({})::text) FROM secf_t"])
def test_denied_functions_are_unknown(conn: psycopg.Connection, call: str, shape: str) -> None:
    sql = shape.format(call)
    got = assert_refused(conn, sql)
    name = call.split("(")[0]
    assert got[2].startswith(f"function {name}("), got
    assert got[2].endswith("does not exist"), got


def test_system_exit_leaves_the_jvm_running(conn: psycopg.Connection) -> None:
    for sql in ("SELECT java_method('java.lang.System', 'exit', 3)",
                "SELECT reflect('java.lang.System', 'exit', 3) FROM secf_t",
                "SELECT reflect('java.lang.Runtime', 'getRuntime') FROM secf_t"):
        assert_refused(conn, sql)
    alive(conn)


def test_chmod_through_hadoop_changes_nothing(conn: psycopg.Connection, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("x")
    victim.chmod(0o600)
    assert_refused(conn, f"SELECT reflect('org.apache.hadoop.fs.FileUtil', 'chmod', '{victim}', '777') FROM secf_t")
    assert_refused(conn, f"SELECT java_method('org.apache.hadoop.fs.FileUtil', 'chmod', '{victim}', '777')")
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    alive(conn)


def test_extended_protocol_and_copy_refuse_too(conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.UndefinedFunction):
        conn.execute("SELECT reflect(%s, %s, %s) FROM secf_t", ["java.lang.System", "getenv", "PATH"])
    with pytest.raises(psycopg.errors.UndefinedFunction):
        conn.execute("SELECT reflect('java.lang.System', 'getenv', %s)", ["PATH"])
    with pytest.raises(psycopg.errors.UndefinedFunction):
        with conn.cursor().copy(f"COPY (SELECT {GETENV} FROM secf_t) TO STDOUT") as copy:
            for _ in copy:
                pass
    alive(conn)


# ------------------------------------------------------------------------------ entry paths


def test_every_statement_path_refuses(conn: psycopg.Connection) -> None:
    for sql in ("DROP VIEW IF EXISTS secf_v", "DROP TABLE IF EXISTS secf_d", "DROP TABLE IF EXISTS secf_ctas",
                "DROP TABLE IF EXISTS secf_sink", "DROP TABLE IF EXISTS secf_sink2"):
        conn.execute(sql)
    statements = [
        f"CREATE VIEW secf_v AS SELECT {GETENV} AS p FROM secf_t",
        f"CREATE VIEW secf_v AS SELECT id FROM secf_t WHERE {GETENV} IS NOT NULL",
        f"CREATE TABLE secf_ctas AS SELECT {GETENV} AS p FROM secf_t",
        f"INSERT INTO secf_t SELECT 2, {GETENV}",
        f"INSERT INTO secf_t SELECT id + 10, {GETENV} FROM secf_t",
        f"INSERT INTO secf_t VALUES (3, {GETENV})",
        f"INSERT INTO secf_t (id, s) VALUES (4, upper({GETENV}))",
        f"UPDATE secf_t SET s = {GETENV}",
        f"UPDATE secf_t SET s = 'x' WHERE {GETENV} IS NOT NULL",
        f"DELETE FROM secf_t WHERE {GETENV} IS NOT NULL",
        f"CREATE TABLE secf_d (id int, x text DEFAULT {GETENV})",
        f"CREATE TABLE secf_d (id int, x text DEFAULT upper({GETENV}))",
        f"ALTER TABLE secf_t ADD COLUMN x text DEFAULT {GETENV}",
        f"ALTER TABLE secf_t ALTER COLUMN s SET DEFAULT {GETENV}",
        f"EXPLAIN SELECT {GETENV} FROM secf_t",
        f"EXPLAIN (VERBOSE) SELECT id FROM secf_t WHERE {GETENV} = ''",
        f"CREATE FLOW secf_f SINK TO secf_sink AS SELECT id, {GETENV} AS p FROM secf_t",
        f"CREATE FLOW secf_f2 SINK TO secf_sink2 WITH (defer_on_missing_source = true) AS "
        f"SELECT {GETENV} AS p FROM secf_no_such_source",
        f"SELECT * FROM generate_series(1, length({GETENV}))",
        f"SELECT (SELECT {GETENV}) FROM secf_t",
        f"WITH c AS (SELECT {GETENV} AS p) SELECT p FROM c",
        f"SELECT id FROM secf_t UNION ALL SELECT length({GETENV})",
    ]
    for sql in statements:
        assert_refused(conn, sql)
    # nothing was created, written or changed
    assert outcome(conn, "SELECT id, s FROM secf_t ORDER BY id") == ("OK", [("1", "a")])
    for name in ("secf_v", "secf_d", "secf_ctas", "secf_sink", "secf_sink2"):
        assert outcome(conn, f"SELECT * FROM {name}")[1] == "42P01", name
    assert outcome(conn, "SHOW FLOWS LIKE 'secf%'") == ("OK", [])
    columns = outcome(conn, "SELECT column_name, column_default FROM information_schema.columns "
                            "WHERE table_name = 'secf_t' ORDER BY ordinal_position")
    assert columns == ("OK", [("id", None), ("s", None)])


def test_definitions_stored_before_are_refused_at_use(tmp_path: Path) -> None:
    """A view or a column DEFAULT written before the allow-list existed (here: straight into the
    catalog, with the gateway stopped: the data dir lock makes it the catalog's only writer while
    it runs) is refused when it is used, after a restart."""
    data_dir = tmp_path / "data"
    server = start_tidegate(data_dir)
    try:
        with psycopg.connect(server.dsn, autocommit=True) as c:
            c.execute("CREATE TABLE secf_t (id int, s text)")
            c.execute("INSERT INTO secf_t VALUES (1, 'a')")
            c.execute("CREATE TABLE secf_old_default (id int, x text)")
    finally:
        server.stop()
    catalog = Catalog(data_dir / "catalog.sqlite")
    try:
        text = column_type("text")
        catalog.create_table(TableDef("public", "secf_old_view", [ColumnDef("p", text)], kind="view",
                                      view_sql=f"SELECT {GETENV} AS p FROM secf_t"))
        table = catalog.get_table("public", "secf_old_default")
        catalog.replace_table(TableDef(table.schema, table.name,
                                       [table.columns[0], ColumnDef("x", text, default=GETENV)],
                                       location=table.location, oid=table.oid, owner=table.owner))
    finally:
        catalog.close()
    server = start_tidegate(data_dir)
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            assert_refused(conn, "SELECT * FROM secf_old_view")
            assert_refused(conn, "SELECT count(*) FROM secf_t JOIN secf_old_view ON true")
            assert_refused(conn, "CREATE VIEW secf_on_old AS SELECT * FROM secf_old_view")
            assert_refused(conn, "INSERT INTO secf_old_default (id) VALUES (1)")
            assert_refused(conn, "INSERT INTO secf_old_default VALUES (1, DEFAULT)")
            assert outcome(conn, "SELECT count(*) FROM secf_old_default") == ("OK", [("0",)])
            assert outcome(conn, "SELECT id, s FROM secf_t") == ("OK", [("1", "a")])
            conn.execute("DROP VIEW secf_old_view")
            conn.execute("DROP TABLE secf_old_default")
            assert outcome(conn, "SELECT * FROM secf_old_view")[1] == "42P01"
    finally:
        server.stop()


# ------------------------------------------------------------------------------ files and paths


def test_files_are_not_tables(conn: psycopg.Connection, gw) -> None:
    data_file = next(Path(gw.data_dir).rglob("*.parquet"))
    for sql, codes in [
        ("SELECT * FROM csv.`/etc/passwd`", {"42601", "42P01"}),
        ('SELECT * FROM csv."/etc/passwd"', {"42P01"}),
        ('SELECT * FROM "text"."/etc/passwd"', {"42P01"}),
        ('SELECT * FROM json."/etc/passwd"', {"42P01"}),
        (f'SELECT * FROM parquet."{data_file}"', {"42P01"}),
        (f'SELECT * FROM parquet."{data_file.parent}"', {"42P01"}),
        (f"SELECT * FROM binaryFile.\"{data_file}\"", {"42P01"}),
    ]:
        assert_refused(conn, sql, codes)


def test_hidden_file_metadata_column_is_unknown(conn: psycopg.Connection, gw) -> None:
    for sql in ("SELECT _metadata.file_path FROM secf_t",
                "SELECT secf_t._metadata FROM secf_t",
                "SELECT (_metadata).file_path FROM secf_t",
                "SELECT _metadata FROM secf_t",
                "SELECT t._metadata.file_name FROM secf_t t",
                "SELECT id FROM secf_t WHERE _metadata.file_size > 0"):
        got = assert_refused(conn, sql, {"42703", "42P01"})
        assert str(gw.data_dir) not in got[2]


# ------------------------------------------------------------------------------ DuckDB (catalog path)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT read_text('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/passwd')",
    "SELECT * FROM read_parquet('/etc/passwd')",
    "SELECT * FROM glob('/*')",
    "SELECT getenv('PATH')",
    "SELECT * FROM read_text('/etc/passwd') AS pg_x",
    "SELECT content FROM pg_class, read_text('/etc/passwd') LIMIT 1",
    "SELECT c.relname FROM pg_catalog.pg_class c WHERE (SELECT count(*) FROM read_text('/etc/passwd')) > 0",
    "SELECT * FROM pg_catalog.pg_class, glob('/*') LIMIT 1",
    "SELECT \"read_text\"('/etc/passwd') FROM pg_class",
    "SELECT * FROM duckdb_settings() AS pg_x",
    "SELECT value FROM pg_class, duckdb_settings() WHERE name = 'home_directory'",
    "SELECT * FROM pg_class, duckdb_databases() LIMIT 1",
    "SELECT * FROM pg_class, pragma_database_list() LIMIT 1",
    "SELECT * FROM pg_class, query('SELECT 1') LIMIT 1",
    "SELECT * FROM pg_class, query_table('pg_class') LIMIT 1",
    "SELECT system.main.current_setting('home_directory') FROM pg_class LIMIT 1",
    "SELECT * FROM pg_class, json_execute_serialized_sql(json_serialize_sql('SELECT 1')) LIMIT 1",
    "SELECT * FROM pg_class, sniff_csv('/etc/passwd') LIMIT 1",
    # DuckDB reads a quoted path in FROM as a file (a replacement scan): off with external access
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM '/etc/passwd' AS pg_x",
    "SELECT * FROM pg_class, '/etc/passwd' LIMIT 1",
    "SELECT count(*) FROM pg_catalog.pg_class, '/etc/*' AS f",
])
def test_duckdb_cannot_reach_files_or_settings(conn: psycopg.Connection, sql: str) -> None:
    assert_refused(conn, sql, REFUSED)


@pytest.mark.parametrize("name", ["home_directory", "secret_directory", "temp_directory", "extension_directory",
                                  "enable_external_access", "lock_configuration"])
def test_current_setting_knows_only_postgres_settings(conn: psycopg.Connection, name: str) -> None:
    assert_refused(conn, f"SELECT current_setting('{name}')", "42704")
    assert_refused(conn, f"SELECT pg_catalog.current_setting('{name}') FROM pg_catalog.pg_class LIMIT 1", "42704")
    got = outcome(conn, f"SELECT setting FROM pg_settings WHERE name = '{name}'")
    assert got == ("OK", [])


def test_show_where_cannot_read_files(conn: psycopg.Connection) -> None:
    got = outcome(conn, "SHOW FLOWS WHERE (SELECT count(*) FROM read_text('/etc/passwd')) > 0")
    assert got[0] == "ERROR" and PASSWD_MARK not in got[2], got


# ------------------------------------------------------------------------------ fuzz


FUZZ_DENIED = sorted(SPARK_DENIED - {"version"}) + ["read_text", "read_csv", "read_blob", "duckdb_settings",
                                                      "query", "getenv"]
QUALIFIERS = ["", "pg_catalog.", "system.builtin.", "builtin.", "spark_catalog.x.", "\"system\".\"builtin\".",
              "PG_CATALOG.", "\"pg_catalog\".", "main.", "system.main."]
GAPS = ["", " ", "\n", "\t", " /* c */ ", "/**/", " -- c\n", "/* ( */"]
ARGS = ["'java.lang.System', 'getenv', 'PATH'", "'/etc/passwd'", "", "s", "1"]


def _spell(rng: random.Random, name: str, columns: bool) -> str:
    cased = "".join(ch.upper() if rng.random() < 0.5 else ch for ch in name)
    style = rng.randrange(4)
    if style == 0:
        word = name
    elif style == 1:
        word = cased
    elif style == 2:
        word = f'"{name}"'
    else:
        word = f'"{cased}"'
    args = rng.choice(ARGS if columns else [a for a in ARGS if a != "s"])
    return rng.choice(QUALIFIERS) + word + rng.choice(GAPS) + "(" + args + ")"


def _fuzz_cases(seed: int, per_name: int) -> list[str]:
    rng = random.Random(seed)
    cases = []
    for name in FUZZ_DENIED:
        for _ in range(per_name):
            shape = rng.choice([
                "SELECT {c} FROM secf_t",
                "SELECT {c}",
                "SELECT id FROM secf_t WHERE ({c}) IS NOT NULL",
                "SELECT * FROM {c}",
                "SELECT id FROM secf_t, {c} AS x",
                "SELECT coalesce(({c})::text, s) FROM secf_t",
                "SELECT count(*) FROM pg_catalog.pg_class WHERE ({c}) IS NOT NULL",
                "CREATE VIEW secf_fuzz_v AS SELECT {c} AS p FROM secf_t",
                "CREATE FLOW secf_fuzz_f SINK TO secf_fuzz_sink AS SELECT id, {c} AS p FROM secf_t",
            ])
            cases.append(shape.format(c=_spell(rng, name, columns="secf_t" in shape)))
    return cases


def test_fuzzed_spellings_are_all_refused(conn: psycopg.Connection) -> None:
    cases = _fuzz_cases(seed=20240229, per_name=12)
    codes: dict[str, int] = {}
    for sql in cases:
        got = assert_refused(conn, sql, REFUSED)
        codes[got[1]] = codes.get(got[1], 0) + 1
    assert codes.get("42883", 0) > len(cases) // 2, codes  # most are refused as unknown functions
    for name in ("secf_fuzz_v", "secf_fuzz_sink"):
        assert outcome(conn, f"SELECT * FROM {name}")[1] == "42P01"
    assert outcome(conn, "SHOW FLOWS LIKE 'secf_fuzz%'") == ("OK", [])
    alive(conn)


def test_generated_spark_sql_is_checked_by_name() -> None:
    """The last line of defence sees the names Spark will resolve, however they are spelled."""
    for sql in ("SELECT `reflect`('java.lang.System', 'getenv', 'PATH')", "SELECT a.b.REFLECT (1)",
                "SELECT `java_method`\n(1)", "SELECT system.builtin.input_file_name()",
                "SELECT IDENTIFIER('reflect')('x')", "SELECT * FROM python_worker_logs()"):
        with pytest.raises(SqlError) as info:
            check_spark_sql(None, sql)
        assert info.value.sqlstate == "42883"
    for sql in ("SELECT 'reflect(1)' AS `x`", "SELECT `version` FROM t", "SELECT upper(`s`) FROM t",
                "SELECT `reflect`.`x` FROM VALUES (1) AS `reflect`(`x`)"):  # an alias with columns
        check_spark_sql(None, sql)
    assert not PG_FUNCTIONS & (SPARK_DENIED - {"version"})


# ------------------------------------------------------------------------------ the allow-list works


ORACLE_EXPRESSIONS = [
    "abs(i)", "abs(n)", "ceil(f)", "ceiling(n)", "floor(f)", "round(n, 1)", "trunc(n, 1)", "sign(n)", "sqrt(f)",
    "power(f, 2)", "exp(f)", "ln(f)", "log10(f)", "mod(i, 3)", "div(i, 3)", "degrees(f)", "pi()", "atan2(f, 1)",
    "cbrt(f)", "factorial(5)", "width_bucket(f, 0, 10, 5)", "greatest(i, 3)", "least(i, 3)",
    "upper(s)", "lower(s)", "length(s)", "char_length(s)", "octet_length(s)", "ascii(s)", "chr(65)",
    "lpad(s, 15, '*')", "rpad(s, 15, '*')", "btrim('xxhixx', 'x')", "left(s, 3)", "right(s, 3)",
    "repeat(s, 2)", "replace(s, 'o', '0')", "reverse(s)", "split_part(s, ' ', 2)", "substr(s, 2, 3)",
    "strpos(s, 'o')", "initcap(lower(s))", "translate(s, 'lo', 'LO')", "concat(s, i)", "concat_ws('-', s, i)",
    "md5(s)", "starts_with(s, 'He')", "regexp_replace(s, 'o', '0', 'g')", "regexp_like(s, 'W.r')",
    "regexp_count(s, 'o')", "date_trunc('month', ts)", "date_part('year', ts)", "make_date(2024, 1, 2)",
    "to_char(ts, 'YYYY-MM-DD HH24:MI')", "coalesce(NULL, i)", "nullif(i, 7)", "cardinality(ARRAY[1, 2, 3])",
    "array_length(ARRAY[1, 2, 3], 1)", "array_position(ARRAY[1, 2, 3], 2)", "array_to_string(ARRAY[1, 2], ',')",
    "length(gen_random_uuid()::text)", "now() > ts", "clock_timestamp() > ts",
]
ORACLE_AGGREGATES = [
    "count(*)", "sum(i)", "avg(n)", "min(s)", "max(d)", "bool_and(b)", "bool_or(b)", "every(b)", "stddev_pop(f)",
    "var_pop(f)", "array_agg(i)", "string_agg(s, ',')", "bit_or(i)",
    "percentile_cont(0.5) WITHIN GROUP (ORDER BY f)",
]
ORACLE_SETUP = [
    "DROP TABLE IF EXISTS secf_fn",
    "CREATE TABLE secf_fn (i int, n numeric(10,3), f float8, s text, d date, ts timestamp, b boolean)",
    "INSERT INTO secf_fn VALUES (7, 12.345, 2.5, 'Hello World', '2024-02-29', '2024-02-29 13:45:30.25', true)",
]


def test_allow_listed_functions_match_postgres(conn: psycopg.Connection, pg_oracle) -> None:
    with psycopg.connect(pg_oracle.dsn, autocommit=True) as oracle:
        for sql in ORACLE_SETUP:
            oracle.execute(sql)
            conn.execute(sql)
        for expr in ORACLE_EXPRESSIONS + ORACLE_AGGREGATES:
            sql = f"SELECT {expr} FROM secf_fn"
            expected = outcome(oracle, sql)
            assert expected[0] == "OK", (sql, expected)
            assert outcome(conn, sql) == expected, sql
    # the same functions spelled as clients spell them
    for sql in ("SELECT UPPER(s) FROM secf_fn", 'SELECT "upper"(s) FROM secf_fn', "SELECT Upper (s) FROM secf_fn"):
        assert outcome(conn, sql) == ("OK", [("HELLO WORLD",)]), sql
    assert outcome(conn, "SELECT version() LIKE 'PostgreSQL%' FROM secf_fn") == ("OK", [("t",)])
