"""psql (the real client binary) against tidegate, with PostgreSQL 15 as the oracle.

Every test runs the same psql invocation against both servers; PostgreSQL's output is what a
psql user expects, so where the output is deterministic the two must be byte-identical.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest
from tests.targets import Target, target_for as _target


SETUP = [
    "DROP VIEW IF EXISTS psql_items_v",
    "DROP TABLE IF EXISTS psql_items",
    "DROP TABLE IF EXISTS psql_copy",
    "CREATE TABLE psql_items (id integer NOT NULL, name text, price double precision, added date)",
    "INSERT INTO psql_items VALUES (1, 'apple', 1.5, '2024-01-02'), (2, 'pear', 2.25, '2024-02-03'),"
    " (3, NULL, NULL, NULL)",
    "CREATE VIEW psql_items_v AS SELECT id, name FROM psql_items WHERE id < 3",
    "CREATE TABLE psql_copy (id integer, label text, amount numeric(10,2))",
]


@pytest.fixture(scope="module", params=["postgres", "tidegate"])
def server(request: pytest.FixtureRequest) -> Target:
    target = _target(request, request.param)
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for stmt in SETUP:
            conn.execute(stmt)
    return target


@pytest.fixture(scope="module")
def oracle(request: pytest.FixtureRequest) -> Target:
    target = _target(request, "postgres")
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for stmt in SETUP:
            conn.execute(stmt)
    return target


def psql(target: Target, *args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run psql without ~/.psqlrc, as a user would, and return its output."""
    argv = ["psql", "-X", "-h", target.host, "-p", str(target.port), "-U", target.user, "-d", target.dbname,
            *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={"PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "10", "LC_ALL": "C.UTF-8"})
    if check:
        assert proc.returncode == 0, f"psql {args!r} failed on {target.name}: {proc.stderr}"
    return proc


def test_select_query(server: Target) -> None:
    out = psql(server, "-c", "SELECT id, name, price FROM psql_items ORDER BY id").stdout
    assert out == (
        " id | name  | price \n"
        "----+-------+-------\n"
        "  1 | apple |   1.5\n"
        "  2 | pear  |  2.25\n"
        "  3 |       |      \n"
        "(3 rows)\n\n"
    )


def test_unaligned_tuples_only(server: Target) -> None:
    out = psql(server, "-tA", "-c", "SELECT count(*), sum(price), max(added) FROM psql_items").stdout
    assert out == "3|3.75|2024-02-03\n"


def test_multi_statement_c(server: Target, oracle: Target) -> None:
    sql = ("DROP TABLE IF EXISTS psql_multi; CREATE TABLE psql_multi (a int, b text); "
           "INSERT INTO psql_multi VALUES (1, 'x'), (2, 'y'); SELECT b, a * 10 AS a10 FROM psql_multi ORDER BY a")
    got = psql(server, "-c", sql)
    # psql 15 sends one Query message and prints every statement's result or command tag.
    assert got.stdout == ("DROP TABLE\nCREATE TABLE\nINSERT 0 2\n"
                          " b | a10 \n---+-----\n x |  10\n y |  20\n(2 rows)\n\n")
    assert got.stdout == psql(oracle, "-c", sql).stdout


def test_error_output(server: Target) -> None:
    proc = psql(server, "-c", "SELECT * FROM nope", check=False)
    assert proc.returncode == 1
    assert 'ERROR:  relation "nope" does not exist' in proc.stderr


def test_error_output_points_at_position(server: Target) -> None:
    """PostgreSQL reports where the missing relation is; psql draws the LINE/caret from it."""
    proc = psql(server, "-c", "SELECT * FROM nope", check=False)
    assert proc.stderr == ('ERROR:  relation "nope" does not exist\n'
                           "LINE 1: SELECT * FROM nope\n"
                           "                      ^\n")


def test_error_stops_script_with_on_error_stop(server: Target) -> None:
    proc = psql(server, "-v", "ON_ERROR_STOP=1", "-c", "SELECT 1/0", check=False)
    assert proc.returncode != 0
    assert "ERROR:  division by zero" in proc.stderr


def test_backslash_d_lists_relations(server: Target) -> None:
    out = psql(server, "-A", "-c", r"\d").stdout
    lines = out.splitlines()
    assert lines[0] == "List of relations"
    assert lines[1] == "Schema|Name|Type|Owner"
    assert any(line.startswith("public|psql_items|table|") for line in lines), out
    assert any(line.startswith("public|psql_items_v|view|") for line in lines), out


def test_backslash_d_table(server: Target, oracle: Target) -> None:
    got = psql(server, "-c", r"\d psql_items").stdout
    assert got.splitlines()[0].strip() == 'Table "public.psql_items"'
    for col, typ in [("id", "integer"), ("name", "text"), ("price", "double precision"), ("added", "date")]:
        assert any(line.split("|")[0].strip() == col and line.split("|")[1].strip() == typ
                   for line in got.splitlines() if "|" in line), got
    assert "not null" in got
    assert got == psql(oracle, "-c", r"\d psql_items").stdout


def test_backslash_d_view(server: Target, oracle: Target) -> None:
    got = psql(server, "-c", r"\d psql_items_v").stdout
    assert got.splitlines()[0].strip() == 'View "public.psql_items_v"'
    assert got == psql(oracle, "-c", r"\d psql_items_v").stdout


def test_backslash_dt(server: Target) -> None:
    out = psql(server, "-A", "-c", r"\dt").stdout
    lines = out.splitlines()
    assert lines[0] == "List of relations"
    assert any(line.startswith("public|psql_items|table|") for line in lines), out
    assert not any("|psql_items_v|" in line for line in lines), out
    out = psql(server, "-tA", "-c", r"\dt psql_it*").stdout
    assert [line.split("|")[:3] for line in out.splitlines()] == [["public", "psql_items", "table"]]


def test_backslash_dv(server: Target) -> None:
    out = psql(server, "-tA", "-c", r"\dv").stdout
    rows = [line.split("|")[:3] for line in out.splitlines()]
    assert ["public", "psql_items_v", "view"] in rows
    assert ["public", "psql_items", "table"] not in rows


def test_backslash_dn(server: Target) -> None:
    out = psql(server, "-tA", "-c", r"\dn").stdout
    names = [line.split("|")[0] for line in out.splitlines()]
    assert "public" in names
    assert "pg_catalog" not in names and "information_schema" not in names


def test_backslash_l(server: Target) -> None:
    out = psql(server, "-tA", "-c", r"\l").stdout
    names = [line.split("|")[0] for line in out.splitlines() if "|" in line]
    assert server.dbname in names, out


def test_copy_from_and_to_file_csv(server: Target, tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text('1,alpha,1.50\n2,"with, comma",20.00\n3,,\n4,"quote ""q""",-3.25\n')
    proc = psql(server, "-c", rf"\copy psql_copy from '{src}' csv")
    assert proc.stdout.strip() == "COPY 4"
    out = tmp_path / "out.csv"
    proc = psql(server, "-c", rf"\copy (SELECT * FROM psql_copy ORDER BY id) to '{out}' csv header")
    assert proc.stdout.strip() == "COPY 4"
    assert out.read_text() == ('id,label,amount\n1,alpha,1.50\n2,"with, comma",20.00\n3,,\n'
                               '4,"quote ""q""",-3.25\n')
    table_out = tmp_path / "table.txt"
    psql(server, "-c", rf"\copy psql_copy to '{table_out}'")
    assert sorted(table_out.read_text().splitlines()) == [
        "1\talpha\t1.50", "2\twith, comma\t20.00", "3\t\\N\t\\N", '4\tquote "q"\t-3.25']


def test_copy_from_stdin_text(server: Target) -> None:
    script = ("DROP TABLE IF EXISTS psql_stdin;\nCREATE TABLE psql_stdin (a int, b text);\n"
              "COPY psql_stdin FROM STDIN;\n1\tone\n2\t\\N\n\\.\nSELECT a, b IS NULL AS n FROM psql_stdin ORDER BY a;\n")
    proc = subprocess.run(["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-h", server.host, "-p",
                           str(server.port), "-U", server.user, "-d", server.dbname],
                          input=script, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1|f\n2|t\n"


def test_privilege_meta_commands(request: pytest.FixtureRequest) -> None:
    """\\dp and \\du print grants and roles exactly as PostgreSQL does (owner names aside)."""
    import uuid

    p = "ps" + uuid.uuid4().hex[:6]
    outputs = {}
    for name in ("postgres", "tidegate"):
        target = _target(request, name)
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {p}_grp")
            conn.execute(f"CREATE ROLE {p}_r LOGIN IN ROLE {p}_grp")
            conn.execute(f"CREATE TABLE {p}_t (x int)")
            conn.execute(f"GRANT SELECT, INSERT ON {p}_t TO {p}_r")
            conn.execute(f"GRANT SELECT ON {p}_t TO PUBLIC")
            conn.execute(f"GRANT UPDATE ON {p}_t TO {p}_grp")
        try:
            outputs[name] = [psql(target, "-c", cmd).stdout.replace(target.user, "OWNER")
                             for cmd in (f"\\dp {p}_t", f"\\du {p}_*")]
        finally:
            with psycopg.connect(target.dsn, autocommit=True) as conn:
                conn.execute(f"DROP TABLE {p}_t")
                conn.execute(f"DROP ROLE {p}_r")
                conn.execute(f"DROP ROLE {p}_grp")
    assert f"{p}_r=ar/OWNER" in outputs["postgres"][0]
    assert outputs["tidegate"] == outputs["postgres"]
