"""tidegate's SQL dialect (tidegate/dialect.py), text in and text out as sqlglot tests its dialects.

- The one lexer feeds sqlglot's parser: for PostgreSQL text the token stream equals the one
  sqlglot's own tokenizer gives (types and texts), except where PostgreSQL's lexical rules differ
  and the lexer follows PostgreSQL (E'' escapes, continued strings, refused characters).
- tidegate's statements parse into their typed trees and are written back as text that parses
  to the same text again; their errors are PostgreSQL's 42601 with a position.
"""

from __future__ import annotations

import pytest
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from tests import sqlgen
from tidegate import dialect
from tidegate.errors import SqlError

_PG = Postgres()


def _tokens(tokens: list) -> list[tuple[str, str]]:
    return [(t.token_type.name, t.text) for t in tokens]


def test_the_one_lexer_gives_sqlglots_tokens_for_generated_statements() -> None:
    texts = [q.sql for q in sqlgen.questions(17, per_signature=2, random_count=400)] + sqlgen.setup_statements()
    assert len(texts) > 2000
    differ = [t for t in texts if _tokens(dialect.glot_tokens(t)) != _tokens(_PG.tokenize(t))]
    assert differ == []


@pytest.mark.parametrize("sql,expected", [
    # keywords of several words, operators cut as sqlglot cuts them, parameters, casts
    ("select a::int from t group by 1 order by 1", [
        ("SELECT", "select"), ("VAR", "a"), ("DCOLON", "::"), ("INT", "int"), ("FROM", "from"), ("VAR", "t"),
        ("GROUP_BY", "GROUP BY"), ("NUMBER", "1"), ("ORDER_BY", "ORDER BY"), ("NUMBER", "1")]),
    ("x double  precision, a->>b, a !~ b, 2*-3, $12", [
        ("VAR", "x"), ("DOUBLE", "DOUBLE PRECISION"), ("COMMA", ","), ("VAR", "a"), ("DARROW", "->>"), ("VAR", "b"),
        ("COMMA", ","), ("VAR", "a"), ("NOT", "!"), ("RLIKE", "~"), ("VAR", "b"), ("COMMA", ","),
        ("NUMBER", "2"), ("STAR", "*"), ("DASH", "-"), ("NUMBER", "3"), ("COMMA", ","),
        ("PARAMETER", "$"), ("NUMBER", "12")]),
    # PostgreSQL's strings: E'' escapes decoded (sqlglot's own tokenizer drops \x and octal),
    # a string continued over a newline is one string, dollar quotes, non-ASCII names
    ("select E'a\\x41\\101\\u00e9', 'a'\n  'b', $q$it's$q$, données", [
        ("SELECT", "select"), ("BYTE_STRING", "aAAé"), ("COMMA", ","), ("STRING", "ab"), ("COMMA", ","),
        ("HEREDOC_STRING", "it's"), ("COMMA", ","), ("VAR", "données")]),
    # comments never reach the parser
    ("select 1 /* a /* nested */ b */ + -- c\n 2", [
        ("SELECT", "select"), ("NUMBER", "1"), ("PLUS", "+"), ("NUMBER", "2")]),
])
def test_tokens(sql: str, expected: list[tuple[str, str]]) -> None:
    assert _tokens(dialect.glot_tokens(sql)) == expected


# tidegate's statements: text in, tree type, text out (which parses to itself)
ROUND_TRIPS = [
    ("create flow f sink to s as select a, count(*) from t group by a", dialect.CreateFlow,
     "CREATE FLOW f SINK TO s AS SELECT a, COUNT(*) FROM t GROUP BY a"),
    ("CREATE OR REPLACE FLOW s.f SINK TO s2.out EXPIRE AFTER INTERVAL '1 hour' EVAL INTERVAL '5 min' "
     "COMMENT 'it''s' WITH (flow_type = streaming, 'Odd Key' = 'x') AS WITH c AS (SELECT 1 AS a) SELECT a FROM c",
     dialect.CreateFlow,
     "CREATE OR REPLACE FLOW s.f SINK TO s2.out EXPIRE AFTER '1 hour' EVAL INTERVAL '5 min' COMMENT 'it''s' "
     "WITH (flow_type = 'streaming', 'Odd Key' = 'x') AS WITH c AS (SELECT 1 AS a) SELECT a FROM c"),
    ("create flow if not exists f sink to s as (select 1)", dialect.CreateFlow,
     "CREATE FLOW IF NOT EXISTS f SINK TO s AS (SELECT 1)"),
    ("drop flow if exists f", dialect.DropFlow, "DROP FLOW IF EXISTS f"),
    ("show flows from public where \"Flows\" like 'a%'", dialect.ShowFlows,
     "SHOW FLOWS IN public WHERE \"Flows\" LIKE 'a%'"),
    ("show flows like 'x%'", dialect.ShowFlows, "SHOW FLOWS LIKE 'x%'"),
    ("show create flow \"F\"", dialect.ShowCreateFlow, "SHOW CREATE FLOW \"F\""),
    ("show flow status", dialect.ShowFlowStatus, "SHOW FLOW STATUS"),
    ("comment on flow f is null", dialect.CommentOnFlow, "COMMENT ON FLOW f IS NULL"),
    ("admin flush_flow('f')", dialect.Admin, "ADMIN FLUSH_FLOW('f')"),
    ("refresh table s.t wait", dialect.RefreshTable, "REFRESH TABLE s.t WAIT"),
    ("show refresh status", dialect.ShowRefreshStatus, "SHOW REFRESH STATUS"),
    ("submit job nightly with (timeout = '2 h') as insert into a select * from b", dialect.SubmitJob,
     "SUBMIT JOB nightly WITH (timeout = '2 h') AS insert into a select * from b"),
    ("show jobs", dialect.ShowJobs, "SHOW JOBS"),
    ("fetch job 'job-000001'", dialect.FetchJob, "FETCH JOB 'job-000001'"),
    ("wait job $1 timeout '10 min'", dialect.WaitJob, "WAIT JOB $1 TIMEOUT '10 min'"),
    ("cancel job E'job-\\x30'", dialect.CancelJob, "CANCEL JOB 'job-0'"),
]


@pytest.mark.parametrize("sql,kind,written", ROUND_TRIPS)
def test_tidegate_statements_round_trip(sql: str, kind: type, written: str) -> None:
    tree = dialect.parse_one(sql)
    assert type(tree) is kind
    assert tree.sql(dialect=dialect.Tidegate) == written
    assert dialect.parse_one(written).sql(dialect=dialect.Tidegate) == written


def test_a_flow_keeps_its_query_as_a_tree_and_as_written() -> None:
    tree = dialect.parse_one("CREATE FLOW f SINK TO s AS SELECT host, avg(v) -- x\n FROM t GROUP BY host")
    assert isinstance(tree.expression, exp.Select)
    assert tree.args["query_sql"] == "SELECT host, avg(v) -- x\n FROM t GROUP BY host"


def test_words_that_look_like_ours_are_postgresqls() -> None:
    assert isinstance(dialect.parse_one("FETCH job"), exp.Command)  # a cursor named job
    assert isinstance(dialect.parse_one("SHOW TABLES"), exp.Command)
    assert isinstance(dialect.parse_one('CREATE TABLE flow ("flow" int)'), exp.Create)
    assert isinstance(dialect.parse_one("SELECT flow FROM flows"), exp.Select)


@pytest.mark.parametrize("sql,position,message", [
    # lexical errors, as PostgreSQL's scanner reports them
    ("select 'abc", 8, 'unterminated quoted string at or near "\'abc"'),
    ('select "abc', 8, 'unterminated quoted identifier at or near ""abc"'),
    ("select 1 /* x", 10, "unterminated /* comment"),
    ("select $q$ x", 8, 'unterminated dollar-quoted string at or near "$q$"'),
    # tidegate's statements, cut short or with something extra
    ("CREATE FLOW f SINK TO s", 24, "syntax error at end of input"),
    ("CREATE FLOW f SINK s AS SELECT 1", 20, 'syntax error at or near "s"'),
    ("CREATE FLOW f SINK TO s AS SELECT 1 junk more", 42, 'syntax error at or near "more"'),
    ("CREATE FLOW f SINK TO s AS INSERT INTO t VALUES (1)", 28, 'syntax error at or near "INSERT"'),
    ("DROP FLOW", 10, "syntax error at end of input"),
    ("REFRESH TABLE t NOW", 17, 'syntax error at or near "NOW"'),
    ("SUBMIT JOB AS", 14, "syntax error at end of input"),
])
def test_syntax_errors(sql: str, position: int, message: str) -> None:
    with pytest.raises(SqlError) as e:
        dialect.parse(sql)
    assert (e.value.sqlstate, e.value.position, e.value.message) == ("42601", position, message)


def test_or_replace_with_if_not_exists_is_refused() -> None:
    with pytest.raises(SqlError) as e:
        dialect.parse("CREATE OR REPLACE FLOW IF NOT EXISTS f SINK TO s AS SELECT 1")
    assert e.value.sqlstate == "42601" and "cannot be combined" in e.value.message
