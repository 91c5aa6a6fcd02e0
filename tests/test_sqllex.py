"""The one SQL lexer (tidegate/sqllex.py): text in, tokens out, by PostgreSQL's lexical rules.

Every layer reads SQL through it (statement splitting, session statements, pg_catalog rewriting,
DDL / flow / job / refresh readers), so these cases are the contract all of them share.
"""

from __future__ import annotations

import pytest

from tidegate.errors import SqlError
from tidegate.sqllex import leading, scan, split_statements, string_value, tokenize, words


def kinds(sql: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in scan(sql)]


@pytest.mark.parametrize("sql, value", [
    ("'it''s'", "it's"),
    ("E'a\\nb\\tc'", "a\nb\tc"),
    ("E'\\u00e9\\U0001F600'", "é\U0001F600"),
    ("E'\\101\\x42'", "AB"),
    ("E'\\''", "'"),
    ("e'back\\\\slash'", "back\\slash"),
    ("U&'d\\0061t\\+000061'", "data"),
    ("'a'\n  'b'", "ab"),  # continued over a newline
    ("$$it's; here$$", "it's; here"),
    ("$fn$ a $$ b $fn$", " a $$ b "),
    ("$é$x$é$", "x"),
    ("B'1010'", "1010"),
    ("X'ff'", "ff"),
    ("N'nat'", "nat"),
    ("'back\\slash'", "back\\slash"),  # standard_conforming_strings: a backslash is a character
])
def test_string_literals_are_one_token_with_their_value(sql: str, value: str) -> None:
    toks = scan(sql)
    assert [t.kind for t in toks] == ["str"]
    assert toks[0].value == value == string_value(toks[0].text)


def test_adjacent_strings_on_one_line_are_two_tokens() -> None:
    assert kinds("'a' 'b'") == [("str", "'a'"), ("str", "'b'")]


@pytest.mark.parametrize("sql, ident", [
    ('"Mixed Case"', "Mixed Case"),
    ('"a""b"', 'a"b'),
    ('U&"d\\0061t"', "dat"),
    ("`log`", "log"),
    ("données", "données"),
    ("Ünïcode_1$x", "ünïcode_1$x"),
    ("MixedCase", "mixedcase"),
])
def test_identifiers_fold_unless_quoted(sql: str, ident: str) -> None:
    (tok,) = scan(sql)
    assert tok.ident == ident


def test_numbers_parameters_casts_and_operators() -> None:
    assert kinds("$1::int + 1.5e3 - .5") == [
        ("param", "$1"), ("cast", "::"), ("word", "int"), ("op", "+"), ("num", "1.5e3"), ("op", "-"), ("num", ".5")]
    # a trailing + or - leaves a multi-character operator unless it holds one of ~!@#^&|`?%
    assert kinds("a<-1") == [("word", "a"), ("op", "<"), ("op", "-"), ("num", "1")]
    assert kinds("a @- b") == [("word", "a"), ("op", "@-"), ("word", "b")]
    # a comment inside a run of operator characters ends the operator
    assert kinds("a +-- c\n1") == [("word", "a"), ("op", "+"), ("num", "1")]
    assert kinds("x[1:2]") == [("word", "x"), ("punct", "["), ("num", "1"), ("punct", ":"), ("num", "2"),
                               ("punct", "]")]
    assert kinds("a.b") == [("word", "a"), ("punct", "."), ("word", "b")]
    assert kinds("a$b $2") == [("word", "a$b"), ("param", "$2")]


def test_comments_nest_and_offsets_point_into_the_text() -> None:
    sql = "SELECT /* a /* nested */ still comment */ x -- tail\n, 'y'"
    toks = tokenize(sql)
    assert [t.kind for t in toks if t.kind not in ("ws",)] == ["word", "comment", "word", "comment", "punct", "str"]
    for t in toks:
        assert sql[t.start:t.end] == t.text


@pytest.mark.parametrize("sql", ["'open", "E'esc\\'", '"open', "$$ open", "/* open /* */", "SELECT $ 1"])
def test_unlexable_text_is_42601(sql: str) -> None:
    with pytest.raises(SqlError) as e:
        tokenize(sql)
    assert e.value.sqlstate == "42601"


def test_routing_words_stop_at_the_limit_and_never_fail() -> None:
    assert words("/* c */ BEGIN -- x\n ISOLATION LEVEL SERIALIZABLE", 3) == ["begin", "isolation", "level"]
    assert words('SHOW "TimeZone"') == ["show", '"TimeZone"']
    assert [t.text for t in leading("INSERT INTO t VALUES ('unterminated", 8)] == [
        "INSERT", "INTO", "t", "VALUES", "("]


def test_splitting_agrees_with_the_tokens() -> None:
    sql = "SELECT ';' ; SELECT $x$;$x$; /* ; /* ; */ */ SELECT E'\\';' -- ;\n; SELECT données"
    parts = [s.text for s in split_statements(sql)]
    assert parts == ["SELECT ';'", "SELECT $x$;$x$", "SELECT E'\\';' -- ;", "SELECT données"]
    for text in parts:  # each statement lexes on its own, with ';' only inside quotes or comments
        assert all(t.text != ";" for t in scan(text))


def test_readers_built_on_the_lexer_take_comments_and_escapes() -> None:
    from gateway import gucs
    from gateway.dispatch import parse_copy, parse_declare, parse_fetch_motion, parse_savepoint_name

    assert parse_fetch_motion('FETCH /* how many */ FORWARD -- rows\n 5 FROM "Cur"') == ("fetch", "Cur", "forward", 5)
    assert parse_fetch_motion("MOVE ABSOLUTE - 2 IN c") == ("move", "c", "absolute", -2)
    assert parse_savepoint_name("ROLLBACK /* x */ TO SAVEPOINT données") == "données"
    d = parse_declare("DECLARE c SCROLL CURSOR WITH HOLD FOR SELECT ';' /* ; */")
    assert (d.name, d.scroll, d.hold, d.query) == ("c", True, True, "SELECT ';'")
    copy = parse_copy('COPY s."T" (a, "B") /* c */ FROM STDIN WITH (FORMAT csv, DELIMITER E\'\\t\')')
    assert (copy.relation, copy.columns, copy.format, copy.delimiter) == ('s."T"', ("a", '"B"'), "csv", "\t")
    with pytest.raises(SqlError) as e:
        parse_copy("COPY t FROM STDIN (FORMAT csv, FORCE_NOT_NULL (a))")
    assert e.value.sqlstate == "0A000"  # refused, not ignored
    assert [(t.kind, t.text) for t in gucs.tokenize("SET search_path = E'a\\tb', pg_catalog.x TO -1")] == [
        ("word", "set"), ("word", "search_path"), ("punct", "="), ("str", "a\tb"), ("punct", ","),
        ("word", "pg_catalog.x"), ("word", "to"), ("num", "-1")]
    (tok,) = scan("E'a\\nb'")
    assert tok.value == "a\nb"


def test_routing_reads_whole_tokens() -> None:
    from gateway.dispatch import Kind, classify

    assert classify("FETCH JOB 'job-000001'").kind == Kind.BACKEND  # engine.jobs
    assert classify("FETCH JOB $1").kind == Kind.BACKEND
    assert classify("FETCH 5 FROM job").kind == Kind.FETCH  # a cursor named job
    assert classify("/* c */ COMMIT AND NO CHAIN").kind == Kind.COMMIT
    assert classify("COMMIT AND CHAIN").kind == Kind.UNSUPPORTED
