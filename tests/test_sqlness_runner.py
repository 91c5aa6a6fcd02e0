"""The sqlness golden-file runner, run against a real PostgreSQL (via --dsn or a server command)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sqlness.__main__ import main
from sqlness.case import CaseError, parse_case, parse_duration
from sqlness.template import TemplateError, render_template

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "sqlness_fixtures"
PG_WRAPPER = FIXTURES / "pg_server.py"
PG_SERVER_CMD = f"{sys.executable} {PG_WRAPPER} --port {{port}} --data-dir {{data_dir}}"
PG_SERVER_DSN = "host=127.0.0.1 port={port} user=postgres dbname=postgres"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, out


def last_line(out: str) -> str:
    return out.rstrip("\n").split("\n")[-1]


@pytest.fixture
def dsn(pg_oracle) -> str:
    return pg_oracle.dsn


def run_update_then_check(capsys, cases: Path, dsn: str, *extra: str) -> tuple[int, str]:
    """Record the golden files, then run again against them."""
    code, out = run(capsys, "-c", str(cases), "--dsn", dsn, "--update", *extra)
    assert code == 0, out
    return run(capsys, "-c", str(cases), "--dsn", dsn, *extra)


# --- the basic pass / fail / update cycle --------------------------------------------------------


def test_checked_in_fixture_passes(tmp_path, capsys, dsn):
    cases = tmp_path / "cases"
    shutil.copytree(FIXTURES / "basic", cases)
    code, out = run(capsys, "-c", str(cases), "--dsn", dsn)
    assert code == 0, out
    assert "PASS standalone/common/constants" in out
    assert "PASS standalone/dml/roundtrip" in out
    assert last_line(out) == "2 passed, 0 failed"
    assert not list(cases.rglob("*.result.new"))


def test_wrong_result_fails_writes_new_and_prints_diff(tmp_path, capsys, dsn):
    cases = tmp_path / "cases"
    shutil.copytree(FIXTURES / "basic", cases)
    result = cases / "standalone/common/constants.result"
    good = result.read_text()
    result.write_text(good.replace("| 2  | NULL |", "| 2  | b    |"))
    code, out = run(capsys, "-c", str(cases), "--dsn", dsn, "--filter", "constants")
    assert code != 0
    assert last_line(out) == "0 passed, 1 failed"
    new = cases / "standalone/common/constants.result.new"
    assert new.read_bytes() == good.encode()
    assert "FAIL standalone/common/constants" in out
    assert "-| 2  | b    |" in out and "+| 2  | NULL |" in out
    assert f"--- {result}" in out and f"+++ {new}" in out
    # The golden file itself is untouched without --update.
    assert "| 2  | b    |" in result.read_text()


def test_update_rewrites_result_and_clears_new(tmp_path, capsys, dsn):
    cases = tmp_path / "cases"
    shutil.copytree(FIXTURES / "basic", cases)
    result = cases / "standalone/common/constants.result"
    good = result.read_bytes()
    result.write_text("stale\n")
    (cases / "standalone/common/constants.result.new").write_text("old\n")
    code, out = run(capsys, "-c", str(cases), "--dsn", dsn, "--filter", "constants", "--update")
    assert code == 0, out
    assert result.read_bytes() == good
    assert not (cases / "standalone/common/constants.result.new").exists()
    assert last_line(out) == "1 passed, 0 failed"
    code, out = run(capsys, "-c", str(cases), "--dsn", dsn, "--filter", "constants")
    assert code == 0 and last_line(out) == "1 passed, 0 failed"


def test_missing_result_is_created_and_fails(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/new_case.sql", "SELECT 42 AS answer;\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn)
    assert code == 1
    assert last_line(out) == "0 passed, 1 failed"
    assert (tmp_path / "standalone/new_case.result").read_text() == (
        "SELECT 42 AS answer;\n\n+--------+\n| answer |\n+--------+\n| 42     |\n+--------+\n\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn)
    assert code == 0 and last_line(out) == "1 passed, 0 failed"


# --- output format -------------------------------------------------------------------------------


def test_output_format_is_exact(tmp_path, capsys, dsn):
    sql = (
        "-- leading comment\n"
        "\n"
        "CREATE TABLE fmt_t (id INT, name TEXT);\n"
        "\n\n"
        "INSERT INTO fmt_t VALUES (1, 'a'), (10, NULL);\n"
        "SELECT id,\n"
        "\n"
        "       name -- inline comment stays part of the statement\n"
        "FROM fmt_t ORDER BY id;\n"
        "SELECT * FROM fmt_t WHERE false;\n"
        "SELECT;\n"
        "DO $$ BEGIN RAISE NOTICE 'not printed'; END $$;\n"
        "DELETE FROM fmt_t;\n"
        "DROP TABLE fmt_t;\n"
        "-- trailing comment\n"
    )
    write(tmp_path, "standalone/fmt.sql", sql)
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--update")
    assert code == 0, out
    expected = (
        "-- leading comment\n"
        "CREATE TABLE fmt_t (id INT, name TEXT);\n\nAffected Rows: 0\n\n"
        "INSERT INTO fmt_t VALUES (1, 'a'), (10, NULL);\n\nAffected Rows: 2\n\n"
        "SELECT id,\n\n       name -- inline comment stays part of the statement\nFROM fmt_t ORDER BY id;\n\n"
        "+----+------+\n| id | name |\n+----+------+\n| 1  | a    |\n| 10 | NULL |\n+----+------+\n\n"
        "SELECT * FROM fmt_t WHERE false;\n\n+----+------+\n| id | name |\n+----+------+\n+----+------+\n\n"
        "SELECT;\n\n++\n++\n\n"
        "DO $$ BEGIN RAISE NOTICE 'not printed'; END $$;\n\nAffected Rows: 0\n\n"
        "DELETE FROM fmt_t;\n\nAffected Rows: 2\n\n"
        "DROP TABLE fmt_t;\n\nAffected Rows: 0\n\n"
        "-- trailing comment\n"
    )
    assert (tmp_path / "standalone/fmt.result").read_bytes() == expected.encode()
    assert "NOTICE:" not in out


def test_values_are_the_servers_text(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/types.sql",
          "SELECT 0.1::float8 AS f8, 1.5::float4 AS f4, 12.50::numeric AS n, true AS b, "
          "'2024-01-01 10:00:00+02'::timestamptz AS ts, '2024-02-29'::date AS d, ARRAY[1,NULL] AS a, "
          "'\\xdead'::bytea AS by, '{\"k\": [1]}'::jsonb AS j, interval '1 day 2 hours' AS iv;\n")
    run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--update")
    text = (tmp_path / "standalone/types.result").read_text()
    row = text.split("\n")[5]
    assert row == ("| 0.1 | 1.5 | 12.50 | t | 2024-01-01 08:00:00+00 | 2024-02-29 | {1,NULL} | \\xdead "
                   "| {\"k\": [1]} | 1 day 02:00:00 |")


def test_copy_to_stdout_prints_the_data(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/copy.sql",
          "COPY (SELECT 1 AS a, NULL AS b UNION ALL SELECT 2, 'x') TO STDOUT WITH (FORMAT csv, HEADER);\n"
          "COPY (SELECT 1 WHERE false) TO STDOUT;\n")
    code, out = run_update_then_check(capsys, tmp_path, dsn)
    assert code == 0, out
    assert (tmp_path / "standalone/copy.result").read_text().split(";\n\n")[1:] == [
        "a,b\n1,\n2,x\n\nAffected Rows: 2\n\nCOPY (SELECT 1 WHERE false) TO STDOUT",
        "Affected Rows: 0\n\n",
    ]


def test_statement_timeout_cancels(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/slow.sql", "SELECT pg_sleep(30);\nSELECT 'next' AS n;\n")
    started = time.monotonic()
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--update", "--statement-timeout", "0.5")
    assert code == 0, out
    assert time.monotonic() - started < 15
    text = (tmp_path / "standalone/slow.result").read_text()
    assert "Error: 57014(query_canceled), canceling statement due to user request" in text
    assert "| next |" in text


def test_error_format_sqlstate_and_condition_names(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/errors.sql",
          "SELECT * FROM no_such_relation;\n"
          "SELECT 1 / 0;\n"
          "DO $$ BEGIN RAISE EXCEPTION 'boom'; END $$;\n"
          "CREATE TEMP TABLE dup (a INT, a INT);\n"
          "DO $$ BEGIN RAISE EXCEPTION 'custom' USING ERRCODE = 'ZZ123'; END $$;\n"
          "SELEC 1;\n"
          "SELECT 'still connected' AS ok;\n")
    run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--update")
    lines = [ln for ln in (tmp_path / "standalone/errors.result").read_text().split("\n")
             if ln.startswith("Error:")]
    assert lines[0] == 'Error: 42P01(undefined_table), relation "no_such_relation" does not exist'
    assert lines[1] == "Error: 22012(division_by_zero), division by zero"
    # Not in tidegate's table: named from psycopg's knowledge of PostgreSQL's codes.
    assert lines[2] == "Error: P0001(raise_exception), boom"
    assert lines[3] == 'Error: 42701(duplicate_column), column "a" specified more than once'
    assert lines[4] == "Error: ZZ123(unknown), custom"
    assert lines[5] == 'Error: 42601(syntax_error), syntax error at or near "SELEC"'
    assert "| still connected |" in (tmp_path / "standalone/errors.result").read_text()


# --- interceptors --------------------------------------------------------------------------------


def test_replace_interceptor(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/replace.sql",
          "-- SQLNESS REPLACE \\d{4}-\\d\\d-\\d\\d DATE\n"
          "-- SQLNESS REPLACE (v)alue \\1ALUE-X\n"
          "-- SQLNESS REPLACE \\s*\\(not\\s+gone\\)\n"
          "SELECT '2024-05-06' AS value, 'x (not gone)' AS other;\n"
          "SELECT '2024-05-06' AS untouched;\n")
    code, out = run_update_then_check(capsys, tmp_path, dsn)
    assert code == 0, out
    text = (tmp_path / "standalone/replace.result").read_text()
    assert ("-- SQLNESS REPLACE \\d{4}-\\d\\d-\\d\\d DATE\n-- SQLNESS REPLACE (v)alue \\1ALUE-X\n"
            "-- SQLNESS REPLACE \\s*\\(not\\s+gone\\)\nSELECT '2024-05-06' AS value, 'x (not gone)' AS other;\n"
            ) in text
    # Applied in order to the rendered text, so replacements may change the padding.
    assert "| vALUE-X      | other        |\n+------------+--------------+\n| DATE | x |\n" in text
    assert "| 2024-05-06 |" in text.split("AS untouched;")[1]  # applies to the next statement only


def test_sort_result_with_head_and_tail(tmp_path, capsys, dsn):
    # Counts are lines of the whole printed result (borders and header included), as in the
    # sqlness format: "3 1" keeps a table's top border, header and separator and its bottom border.
    write(tmp_path, "standalone/sort.sql",
          "-- SQLNESS SORT_RESULT\n"
          "SELECT * FROM (VALUES ('c'), ('a'), ('b')) AS v(x);\n"
          "-- SQLNESS SORT_RESULT 3 1\n"
          "SELECT * FROM (VALUES ('c'), ('a'), ('b')) AS v(x);\n"
          "-- SQLNESS SORT_RESULT 4 1\n"
          "SELECT * FROM (VALUES ('z'), ('d'), ('c'), ('b'), ('a')) AS v(x);\n"
          "-- SQLNESS SORT_RESULT 1 1\n"
          "SELECT * FROM (VALUES ('z'), ('d')) AS v(x);\n"
          "SELECT * FROM (VALUES ('c'), ('a')) AS v(x);\n")
    code, out = run_update_then_check(capsys, tmp_path, dsn)
    assert code == 0, out
    blocks = [block for block in (tmp_path / "standalone/sort.result").read_text().split("\n\n")
              if block.startswith("+")]
    rows = [[ln.strip("| ").strip() for ln in t.split("\n")[3:-1]] for t in blocks[:3] + blocks[4:]]
    assert rows == [["a", "b", "c"], ["a", "b", "c"], ["z", "a", "b", "c", "d"], ["c", "a"]]
    # "1 1": the header line and the separator are sorted with the rows ('+' sorts before '|').
    assert blocks[3].split("\n") == ["+---+", "+---+", "| d |", "| x |", "| z |", "+---+"]


def test_sort_result_leaves_non_table_results(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/sort_err.sql", "-- SQLNESS SORT_RESULT\nSELECT * FROM sort_missing;\n")
    code, out = run_update_then_check(capsys, tmp_path, dsn)
    assert code == 0
    assert 'Error: 42P01(undefined_table), relation "sort_missing" does not exist' in (
        tmp_path / "standalone/sort_err.result").read_text()


def test_sleep_interceptor(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/sleep.sql", "-- SQLNESS SLEEP 600ms\nSELECT 1 AS x;\n")
    started = time.monotonic()
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--update")
    assert code == 0, out
    assert time.monotonic() - started >= 0.6
    assert (tmp_path / "standalone/sleep.result").read_text().startswith("-- SQLNESS SLEEP 600ms\nSELECT 1 AS x;\n")


def test_parse_duration():
    assert parse_duration("500ms") == 0.5
    assert parse_duration("2s") == 2.0
    assert parse_duration("1.5s") == 1.5
    assert parse_duration("2m") == 120.0
    assert parse_duration("1m30s") == 90.0
    assert parse_duration("250") == 0.25
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_env_interceptor(tmp_path, capsys, dsn, monkeypatch):
    monkeypatch.setenv("SQLNESS_T_NAME", "widget")
    monkeypatch.setenv("SQLNESS_T_NUM", "7")
    write(tmp_path, "standalone/env.sql",
          "-- SQLNESS ENV SQLNESS_T_NAME SQLNESS_T_NUM\n"
          "SELECT '$SQLNESS_T_NAME' AS name, ${SQLNESS_T_NUM} + 1 AS num, '$SQLNESS_T_NAMEX' AS other;\n"
          "SELECT '$SQLNESS_T_NAME' AS not_substituted;\n")
    code, out = run_update_then_check(capsys, tmp_path, dsn)
    assert code == 0, out
    text = (tmp_path / "standalone/env.result").read_text()
    # The echoed statement stays as written; the executed one was substituted.
    assert "SELECT '$SQLNESS_T_NAME' AS name, ${SQLNESS_T_NUM} + 1 AS num" in text
    assert "| widget | 8   | $SQLNESS_T_NAMEX |" in text
    assert "| $SQLNESS_T_NAME |" in text


def test_env_interceptor_missing_variable_fails(tmp_path, capsys, dsn, monkeypatch):
    monkeypatch.delenv("SQLNESS_T_UNSET", raising=False)
    path = write(tmp_path, "standalone/env_missing.sql", "SELECT 1;\n-- SQLNESS ENV SQLNESS_T_UNSET\nSELECT 2;\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn)
    assert code == 1
    assert f"{path}:3: environment variable SQLNESS_T_UNSET is not set" in out
    assert last_line(out) == "0 passed, 1 failed"


def test_template_interceptor(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/template.sql",
          "CREATE TABLE tpl_t (id INT, tag TEXT);\n"
          '-- SQLNESS TEMPLATE {"n": 4, "tags": ["x", "y"]}\n'
          "INSERT INTO tpl_t VALUES\n"
          "{%- for i in range(n) %}\n"
          "  ({{ loop.index }}, '{{ tags[i % 2] | upper }}'){% if not loop.last %},{% endif %}\n"
          "{%- endfor %};\n"
          '-- SQLNESS TEMPLATE {"cols": ["id", "tag"]}\n'
          "SELECT {{ cols | join(\", \") }} FROM tpl_t ORDER BY id;\n"
          "DROP TABLE tpl_t;\n")
    code, out = run_update_then_check(capsys, tmp_path, dsn)
    assert code == 0, out
    text = (tmp_path / "standalone/template.result").read_text()
    assert "{%- endfor %};\n\nAffected Rows: 4\n" in text  # echoed as written, executed rendered
    assert "| 1  | X   |\n| 2  | Y   |\n| 3  | X   |\n| 4  | Y   |" in text


def test_template_renderer_features_and_safety():
    ctx = {"xs": [3, 1, 2], "d": {"a": 1}, "name": "t"}
    assert render_template("{% for x in xs | sort %}{{ x }}{% endfor %}", ctx) == "123"
    assert render_template("{% for i in range(2, 5) %}{{ i }}{{ ',' if not loop.last }}{% endfor %}", {}) == "2,3,4"
    assert render_template("{% if xs | length > 5 %}big{% elif d.a == 1 %}one{% else %}no{% endif %}", ctx) == "one"
    assert render_template("{% set n = xs[0] * 2 %}{{ name ~ '_' ~ n }}", ctx) == "t_6"
    assert render_template("{{ none }} {{ true }} {{ xs }} {{ 'a' in name }}", ctx) == 'none true [3, 1, 2] false'
    assert render_template("a {%- if true -%} b {%- endif %}", {}) == "ab"
    for bad in ("{{ missing }}", "{{ name.__class__ }}", "{{ open('x') }}", "{% for x in xs %}",
                "{{ xs | nope }}", "{% endif %}"):
        with pytest.raises(TemplateError):
            render_template(bad, ctx)


def test_template_syntax_error_is_reported_with_line(tmp_path, capsys, dsn):
    path = write(tmp_path, "standalone/bad_tpl.sql", "SELECT 1;\n-- SQLNESS TEMPLATE {}\nSELECT {% for %};\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn)
    assert code == 2
    assert f"{path}:3: TEMPLATE:" in out


def test_protocol_interceptor(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/pg.sql", "-- SQLNESS PROTOCOL POSTGRES\nSELECT 1 AS x;\n")
    code, out = run_update_then_check(capsys, tmp_path, dsn)
    assert code == 0, out
    bad = write(tmp_path, "standalone/mysql.sql", "SELECT 1;\n\n-- SQLNESS PROTOCOL MYSQL\nSELECT 1;\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn)
    assert code == 2
    assert f"{bad}:3: PROTOCOL: unsupported protocol 'MYSQL'" in out
    assert "PASS standalone/pg" in out
    assert last_line(out) == "1 passed, 1 failed"


def test_unknown_interceptor_names_file_and_line(tmp_path, capsys, dsn):
    bad = write(tmp_path, "standalone/unknown.sql", "SELECT 1;\n-- SQLNESS FROBNICATE 3\nSELECT 2;\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn)
    assert code == 2
    assert f"{bad}:2: unknown interceptor 'FROBNICATE'" in out
    assert last_line(out) == "0 passed, 1 failed"


def test_parse_errors_in_interceptor_arguments():
    for text, message in [
        ("-- SQLNESS REPLACE (unclosed x\nSELECT 1;\n", "REPLACE: invalid regular expression"),
        ("-- SQLNESS SORT_RESULT a\nSELECT 1;\n", "SORT_RESULT takes"),
        ("-- SQLNESS SLEEP later\nSELECT 1;\n", "SLEEP: invalid duration"),
        ("-- SQLNESS ARG restart=maybe\nSELECT 1;\n", "restart must be true or false"),
        ("-- SQLNESS ARG flavour=x\nSELECT 1;\n", "unsupported argument"),
        ("-- SQLNESS TEMPLATE [1]\nSELECT 1;\n", "must be a JSON object"),
        ("-- SQLNESS TEMPLATE {bad\nSELECT 1;\n", "invalid JSON"),
        ("SELECT 1;\n-- SQLNESS SORT_RESULT\n", "not followed by a statement"),
    ]:
        with pytest.raises(CaseError) as info:
            parse_case(Path("c.sql"), "c", text)
        assert message in str(info.value)
        assert str(info.value).startswith("c.sql:")


def test_statement_splitting():
    case = parse_case(Path("c.sql"), "c",
                      "-- a\n\n-- SQLNESS SORT_RESULT\nSELECT 1\n\n  , 2;\n\n\nSELECT 'x;y'\n;  \nSELECT 3")
    assert [s.display for s in case.statements] == [
        "-- a\n-- SQLNESS SORT_RESULT\nSELECT 1\n\n  , 2;", "SELECT 'x;y'\n;  ", "SELECT 3"]
    assert [s.line for s in case.statements] == [4, 9, 11]
    assert len(case.statements[0].interceptors) == 1 and not case.statements[1].interceptors


def test_restart_with_real_server_command(tmp_path, capsys):
    write(tmp_path, "standalone/restart.sql",
          "CREATE TABLE durable (id INT PRIMARY KEY, v TEXT);\n"
          "INSERT INTO durable VALUES (1, 'one'), (2, 'two');\n"
          "CREATE TABLE boot AS SELECT pg_postmaster_start_time() AS started;\n"
          "CREATE TEMP TABLE session_only (x INT);\n"
          "-- SQLNESS ARG restart=true\n"
          "SELECT * FROM durable ORDER BY id;\n"
          "SELECT started <> pg_postmaster_start_time() AS restarted FROM boot;\n"
          "SELECT * FROM session_only;\n"
          "INSERT INTO durable VALUES (3, 'three');\n"
          "SELECT count(*) FROM durable;\n")
    args = ["-c", str(tmp_path), "--server-cmd", PG_SERVER_CMD, "--server-dsn", PG_SERVER_DSN]
    code, out = run(capsys, *args, "--update")
    assert code == 0, out
    assert "server ready on port" in out
    text = (tmp_path / "standalone/restart.result").read_text()
    assert "| 1  | one |\n| 2  | two |" in text  # data persisted across the restart
    assert "| restarted |\n+-----------+\n| t         |" in text
    assert 'relation "session_only" does not exist' in text  # a new session after the restart
    assert "| 3     |" in text
    # The env's data dir is fresh for every run, so the case passes again against a new server;
    # with -j 2 the restarting case runs alone while the others wait (or run before it).
    for n in range(3):
        write(tmp_path, f"standalone/other{n}.sql", f"SELECT pg_sleep(0.3) IS NULL AS ok{n};\n")
    code, out = run(capsys, *args, "--filter", "other", "--update")
    assert code == 0, out
    code, out = run(capsys, *args, "-j", "2")
    assert code == 0, out
    assert last_line(out) == "4 passed, 0 failed"


def test_restart_needs_managed_server(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/restart.sql",
          "CREATE TABLE must_not_exist (x INT);\n-- SQLNESS ARG restart=true\nSELECT 1;\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn)
    assert code == 1
    assert "ARG restart=true needs a server started by the runner" in out
    # The case failed before running anything.
    write(tmp_path, "standalone/check.sql", "SELECT to_regclass('must_not_exist') IS NULL AS absent;\n")
    run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--filter", "check", "--update")
    assert "| t      |" in (tmp_path / "standalone/check.result").read_text()


def test_server_that_fails_to_start(tmp_path, capsys):
    write(tmp_path, "standalone/a.sql", "SELECT 1;\n")
    code, out = run(capsys, "-c", str(tmp_path), "--start-timeout", "10",
                    "--server-cmd", f"{sys.executable} -c \"import sys; print('no luck'); sys.exit(3)\"")
    assert code == 2
    assert "server exited with code 3 during start" in out and "no luck" in out
    assert last_line(out) == "0 passed, 1 failed"


# --- options -------------------------------------------------------------------------------------


def test_parallel_jobs_use_separate_concurrent_sessions(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/a_slow.sql", "SELECT pg_sleep(2) IS NULL AS slept;\n")
    write(tmp_path, "standalone/b_watch.sql",
          "SELECT pg_sleep(0.7) IS NULL AS waited;\n"
          "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(2)%' AND state = 'active';\n")
    for n in range(3):
        write(tmp_path, f"standalone/c{n}.sql", f"SELECT {n} AS n;\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "-j", "2", "--update")
    assert code == 0, out
    assert last_line(out) == "5 passed, 0 failed"
    assert "| count |\n+-------+\n| 1     |" in (tmp_path / "standalone/b_watch.result").read_text()
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "-j", "2", "--filter", "^c")
    assert code == 0 and last_line(out) == "3 passed, 0 failed"


def test_filter_and_env_selection(tmp_path, capsys, dsn):
    write(tmp_path, "standalone/common/keep.sql", "SELECT 1;\n")
    write(tmp_path, "standalone/other/skip.sql", "SELECT 2;\n")
    write(tmp_path, "distributed/keep.sql", "SELECT 3;\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--update", "--filter", "common/")
    assert last_line(out) == "1 passed, 0 failed"
    assert "standalone/common/keep" in out and "skip" not in out
    assert not (tmp_path / "standalone/other/skip.result").exists()
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--update", "--filter", r"keep\.sql$")
    assert last_line(out) == "2 passed, 0 failed"
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--update", "--env", "distributed")
    assert last_line(out) == "1 passed, 0 failed" and "distributed/keep" in out
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--env", "nope")
    assert code == 2 and "unknown env nope" in out and last_line(out) == "0 passed, 0 failed"


def test_fail_fast_stops_after_first_failure(tmp_path, capsys, dsn):
    for name in ("a", "b", "c"):
        write(tmp_path, f"standalone/{name}.sql", f"SELECT '{name}' AS v;\n")
        write(tmp_path, f"standalone/{name}.result", "wrong\n")
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn, "--fail-fast")
    assert code == 1
    assert "FAIL standalone/a" in out and "standalone/b" not in out
    assert "skipped 2 case(s)" in out
    assert last_line(out) == "0 passed, 1 failed"
    code, out = run(capsys, "-c", str(tmp_path), "--dsn", dsn)
    assert last_line(out) == "0 passed, 3 failed"


def test_command_line_entry_points(tmp_path, dsn):
    shutil.copytree(FIXTURES / "basic", tmp_path / "cases")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "sqlness", "-c", str(tmp_path / "cases"), "--dsn", dsn],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.endswith("2 passed, 0 failed\n")
    script = Path(sys.executable).parent / "tidegate-sqlness"  # pyproject's console script
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--server-cmd" in proc.stdout
