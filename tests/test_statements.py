"""tidegate.statements: the kind of a statement, text in, kind out (one decision for every layer)."""

from __future__ import annotations

import pytest

from tidegate.statements import Kind, classify

CASES = [
    # the dialect's statements, routed by the type of their tree
    ("SELECT 1", Kind.SQL), ("with x as (select 1) select * from x", Kind.SQL), ("VALUES (1)", Kind.SQL),
    ("TABLE t", Kind.SQL), ("(SELECT 1)", Kind.SQL), ("UPDATE t SET x = 1", Kind.SQL),
    ("DELETE FROM t", Kind.SQL), ("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE", Kind.SQL),
    ("CREATE VIEW v AS SELECT 1", Kind.SQL), ("CREATE SCHEMA s", Kind.SQL), ("DROP TABLE t", Kind.SQL),
    ("ALTER TABLE t ADD COLUMN y int", Kind.SQL), ("TRUNCATE t", Kind.SQL), ("DROP VIEW v", Kind.SQL),
    ("ALTER TABLE t RENAME TO u", Kind.SQL),
    ("INSERT INTO t VALUES (1)", Kind.INSERT), ("insert into t select * from u", Kind.INSERT),
    # roles and ownership
    ("GRANT SELECT ON t TO r", Kind.ROLE), ("REVOKE ALL ON t FROM r", Kind.ROLE),
    ("CREATE ROLE r LOGIN", Kind.ROLE), ("ALTER USER r PASSWORD 'x'", Kind.ROLE), ("DROP GROUP g", Kind.ROLE),
    ("ALTER TABLE t OWNER TO r", Kind.ROLE), ("ALTER SCHEMA s OWNER TO r", Kind.ROLE),
    ("ALTER VIEW public.v OWNER TO \"R\"", Kind.ROLE),
    # tidegate's and GreptimeDB's statements
    ("CREATE FLOW f SINK TO s AS SELECT 1", Kind.FLOW), ("create or replace flow f sink to s as select 1", Kind.FLOW),
    ("DROP FLOW IF EXISTS f", Kind.FLOW), ("SHOW FLOWS", Kind.FLOW), ("SHOW CREATE FLOW f", Kind.FLOW),
    ("SHOW FLOW STATUS", Kind.FLOW), ("ADMIN FLUSH_FLOW('f')", Kind.FLOW), ("COMMENT ON FLOW f IS 'x'", Kind.FLOW),
    ("SUBMIT JOB AS SELECT 1", Kind.JOB), ("SHOW JOBS", Kind.JOB), ("FETCH JOB 'j1'", Kind.JOB),
    ("FETCH JOB $1", Kind.JOB), ("WAIT JOB 'j1'", Kind.JOB), ("CANCEL JOB 'j1'", Kind.JOB),
    ("REFRESH TABLE t", Kind.REFRESH), ("SHOW REFRESH STATUS", Kind.REFRESH),
    # statements with a grammar of their own here
    ("CREATE SEQUENCE s", Kind.SEQUENCE), ("CREATE TEMP SEQUENCE s", Kind.SEQUENCE),
    ("ALTER SEQUENCE s RESTART", Kind.SEQUENCE), ("DROP SEQUENCE s", Kind.SEQUENCE),
    ("CREATE DATABASE d", Kind.DATABASE), ("DROP DATABASE d", Kind.DATABASE),
    ("ALTER TABLE t SET (ttl = '1d')", Kind.TABLE_OPTIONS), ("ALTER TABLE IF EXISTS ONLY s.t RESET (ttl)", Kind.TABLE_OPTIONS),
    ("ALTER TABLE t SET 'ttl' = '1d'", Kind.TABLE_OPTIONS), ("ALTER TABLE t UNSET 'ttl'", Kind.TABLE_OPTIONS),
    ("CREATE TABLE t (x int)", Kind.CREATE_TABLE), ("CREATE TEMPORARY TABLE t AS SELECT 1", Kind.CREATE_TABLE),
    ("CREATE UNLOGGED TABLE t (x int)", Kind.CREATE_TABLE),
    ("CREATE INDEX i ON t (x)", Kind.INDEX), ("CREATE UNIQUE INDEX i ON t (x)", Kind.INDEX), ("DROP INDEX i", Kind.INDEX),
    ("SHOW TABLES", Kind.SHOW), ("SHOW CREATE TABLE t", Kind.SHOW), ("EXPLAIN SELECT 1", Kind.EXPLAIN),
    ("VACUUM", Kind.VACUUM), ("vacuum (verbose) s.t, u", Kind.VACUUM),
    ("COMMENT ON TABLE t IS 'x'", Kind.COMMENT),
    ("BEGIN", Kind.SESSION), ("SET x = 1", Kind.SESSION), ("rollback", Kind.SESSION),
    ("", Kind.EMPTY), ("  -- only a comment\n", Kind.EMPTY), ("/* nested /* comment */ */", Kind.EMPTY),
]


@pytest.mark.parametrize(("text", "kind"), CASES, ids=[c[0] or "empty" for c in CASES])
def test_kind(text: str, kind: Kind) -> None:
    assert classify(text).kind is kind


def test_every_kind_is_in_the_table() -> None:
    assert {kind for _, kind in CASES} == set(Kind)


@pytest.mark.parametrize(("text", "kind"), [
    # the words are read by the one lexer: comments, quoted names and strings are not keywords
    ("/* CREATE FLOW */ SELECT 1", Kind.SQL),
    ("-- DROP FLOW f\nSELECT 'CREATE FLOW'", Kind.SQL),
    ('CREATE TABLE "flow" (x int)', Kind.CREATE_TABLE),
    ('CREATE TABLE flow (x int)', Kind.CREATE_TABLE),
    ('DROP TABLE "FLOW"', Kind.SQL),
    ("SELECT $$REFRESH TABLE t$$", Kind.SQL),
    ("ALTER TABLE t SET SCHEMA s", Kind.SQL),  # SET followed by a word: not table options
    ("ALTER TABLE \"owner\" ADD COLUMN \"to\" int", Kind.SQL),
    ("FETCH job", Kind.SQL),  # a cursor named job: the gateway's FETCH, not FETCH JOB 'id'
    ("  \n\tcreate\n or replace /* c */ flow f sink to s as select 1", Kind.FLOW),
])
def test_kind_is_read_from_tokens(text: str, kind: Kind) -> None:
    assert classify(text).kind is kind


def test_command_and_write_flags() -> None:
    s = classify("insert into t values (1)")
    assert (s.command, s.is_dml, s.is_write) == ("INSERT", True, True)
    s = classify("SELECT 1")
    assert (s.command, s.is_dml, s.is_write) == ("SELECT", False, False)
    s = classify("CREATE FLOW f SINK TO s AS SELECT 1")
    assert (s.command, s.is_dml, s.is_write) == ("CREATE", False, True)
    s = classify("ADMIN FLUSH_FLOW('f')")
    assert (s.command, s.is_write) == ("ADMIN", True)


def test_the_engine_runs_every_kind() -> None:
    from engine.executor import EngineSession

    assert set(EngineSession._HANDLERS) == set(Kind)
