"""PostgreSQL -> Spark SQL translation, checked against a real PostgreSQL.

The same small tables exist in PostgreSQL (the oracle) and as Spark temp views; every query is
run on PostgreSQL directly and on Spark through ``translate_query``, and the results (values,
row order where the query orders, and column names) must agree.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import re
import uuid
from decimal import Decimal
from typing import Any

import psycopg
import psycopg.types.json
import pyarrow as pa
import pytest

from engine.errors import map_spark_error
from engine.translate import (
    ResolvedRelation,
    TranslatedQuery,
    explain_options,
    translate_expression,
    translate_query,
)
from tests.spark_fixture import spark  # noqa: F401 - module-scoped fixture
from tidegate import dialect
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType, column_type

UTC = dt.timezone.utc

TABLES: dict[str, tuple[list[tuple[str, str, tuple[int, ...]]], list[tuple[Any, ...]]]] = {
    "t": (
        [
            ("id", "int4", ()),
            ("a", "int4", ()),
            ("b", "int8", ()),
            ("n", "numeric", (10, 2)),
            ("f", "float8", ()),
            ("s", "text", ()),
            ("v", "varchar", (10,)),
            ("ts", "timestamp", ()),
            ("tz", "timestamptz", ()),
            ("d", "date", ()),
            ("flag", "bool", ()),
        ],
        [
            (1, 7, 10_000_000_000, Decimal("12.50"), 1.5, "apple", "red",
             dt.datetime(2024, 1, 1, 10, 15, 30), dt.datetime(2024, 1, 1, 10, 15, 30, tzinfo=UTC),
             dt.date(2024, 1, 1), True),
            (2, -7, 20, Decimal("-3.25"), 2.5, "Banana", "yellow",
             dt.datetime(2024, 1, 2, 23, 59, 59, 500000), dt.datetime(2024, 1, 2, 23, 59, 59, 500000, tzinfo=UTC),
             dt.date(2024, 2, 29), False),
            (3, 2, None, Decimal("0.50"), -0.5, "cherry pie", None,
             dt.datetime(2024, 3, 10, 0, 0, 0), dt.datetime(2024, 3, 10, 0, 0, 0, tzinfo=UTC),
             dt.date(2023, 12, 31), None),
            (4, None, 5, None, None, None, "green", None, None, None, True),
            (5, 3, -5, Decimal("100.00"), 3.5, "apple", "red",
             dt.datetime(2024, 1, 1, 10, 45, 0), dt.datetime(2024, 1, 1, 10, 45, 0, tzinfo=UTC),
             dt.date(2024, 1, 15), True),
            (6, 0, 0, Decimal("2.50"), 0.125, "  padded  ", "blue",
             dt.datetime(2024, 6, 15, 12, 0, 0), dt.datetime(2024, 6, 15, 12, 0, 0, tzinfo=UTC),
             dt.date(2024, 6, 15), False),
        ],
    ),
    "u": (
        [("id", "int4", ()), ("t_id", "int4", ()), ("label", "text", ())],
        [(1, 1, "x"), (2, 1, "y"), (3, 2, "z"), (4, 9, "orphan"), (5, None, "nil")],
    ),
    "docs": (
        [("id", "int4", ()), ("body", "json", ()), ("key", "uuid", ()), ("code", "bpchar", (3,))],
        [(1, '{"a": 1}', "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "ab "), (2, "[1, 2]", None, None)],
    ),
}

TABLES["reals"] = ([("id", "int4", ()), ("r", "float4", ())], [(1, 1.5), (2, None)])

VIEWS = {"positive_t": "select id, a from t where a > 0"}

def _ctype(name: str, params: tuple[int, ...]) -> ColumnType:
    return column_type(name, *params)


class DictResolver:
    """Resolves the test tables to the Spark temp views ``tv_<name>``."""

    def resolve(self, schema: str | None, name: str) -> ResolvedRelation:
        key = name.lower()
        if schema not in (None, "public") or (key not in TABLES and key not in VIEWS):
            raise SqlError("42P01", f'relation "{name}" does not exist')
        if key in VIEWS:
            return ResolvedRelation("public", key, f"tv_{key}", [], view_sql=VIEWS[key])
        cols = [(c, _ctype(t, p)) for c, t, p in TABLES[key][0]]
        return ResolvedRelation("public", key, f"tv_{key}", cols)

    def view_scope(self, rel: ResolvedRelation) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()


RESOLVER = DictResolver()


@pytest.fixture(scope="module")
def pg(pg_oracle):
    conn = psycopg.connect(pg_oracle.dsn, autocommit=True)
    with conn.cursor() as cur:
        for name, (cols, rows) in TABLES.items():
            decl = ", ".join(
                f"{c} {t}{'(' + ','.join(map(str, p)) + ')' if p else ''}" for c, t, p in cols
            )
            cur.execute(f"DROP TABLE IF EXISTS {name} CASCADE")
            cur.execute(f"CREATE TABLE {name} ({decl})")
            marks = ", ".join(["%s"] * len(cols))
            cur.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
        for name, sql in VIEWS.items():
            cur.execute(f"CREATE VIEW {name} AS {sql}")
    yield conn
    conn.close()


def arrow_table(name: str) -> pa.Table:
    """A test table in its tidegate storage form (Arrow types from ColumnType.arrow())."""
    cols, rows = TABLES[name]
    schema = pa.schema([(c, _ctype(t, p).arrow()) for c, t, p in cols])
    return pa.Table.from_pylist([dict(zip(schema.names, row)) for row in rows], schema=schema)


@pytest.fixture(scope="module")
def sp(spark):  # noqa: F811
    # Arrow input becomes an in-JVM LocalRelation: queries need no Python workers.
    for name, (cols, _rows) in TABLES.items():
        df = spark.createDataFrame(arrow_table(name))
        # Spark reads naive Arrow timestamps as TIMESTAMP (with time zone); PostgreSQL's
        # timestamp is TIMESTAMP_NTZ.
        exprs = [f"CAST({c} AS TIMESTAMP_NTZ) AS {c}" if t == "timestamp" else c for c, t, _p in cols]
        df.selectExpr(*exprs).createOrReplaceTempView(f"tv_{name}")
    return spark


# ------------------------------------------------------------------------------------------
# Result normalisation


def _norm(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float, Decimal)):
        f = float(value)
        if math.isnan(f):
            return ("num", "nan")
        return ("num", float(f"{f:.9g}"))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return ("tstz", value.astimezone(UTC).replace(tzinfo=None))
        return ("ts", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v) for v in value)
    return value


def _rows_pg(conn: psycopg.Connection, sql: str, params: tuple = ()) -> tuple[list[str], list[tuple]]:
    # json/jsonb as their text (tidegate carries them as strings)
    psycopg.types.json.set_json_loads(lambda text: text.decode() if isinstance(text, bytes) else text, conn)
    with conn.cursor() as cur:
        cur.execute(sql, params or None)
        names = [d.name for d in cur.description]
        return names, [tuple(_norm(v) for v in row) for row in cur.fetchall()]


def _rows_spark(session, tq: TranslatedQuery) -> list[tuple]:
    table = session.sql(tq.spark_sql).toArrow()
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return [tuple(_norm(col[r]) for col in columns) for r in range(table.num_rows)]


def _translate(sql: str, params: tuple = ()) -> TranslatedQuery:
    statements = dialect.parse(sql)
    assert len(statements) == 1
    return translate_query(statements[0], RESOLVER, params)


def _sort_key(row: tuple) -> str:
    return repr(row)


def compare(conn, session, sql: str, params: tuple = (), ordered: bool | None = None) -> TranslatedQuery:
    pg_names, pg_rows = _rows_pg(conn, sql, params)
    tq = _translate(_dollar(sql), params)
    spark_rows = _rows_spark(session, tq)
    if ordered is None:
        ordered = bool(re.search(r"\border\s+by\b", sql, re.I)) and not re.search(r"over\s*\(", sql, re.I)
    if not ordered:
        pg_rows = sorted(pg_rows, key=_sort_key)
        spark_rows = sorted(spark_rows, key=_sort_key)
    assert tq.output_names == pg_names, f"names {tq.output_names} != {pg_names}\n{tq.spark_sql}"
    assert spark_rows == pg_rows, f"\nspark: {spark_rows}\npg:    {pg_rows}\nsql: {tq.spark_sql}"
    return tq


def _dollar(sql: str) -> str:
    """psycopg's %s placeholders -> $1, $2 (what the gateway hands the engine)."""
    counter = iter(range(1, 1000))
    return re.sub(r"%s", lambda _m: f"${next(counter)}", sql)


# ------------------------------------------------------------------------------------------
# Queries compared with PostgreSQL

QUERIES: list[str] = [
    # names and basic projection
    "select * from t",
    "select t.id, t.s from t order by id",
    "select count(*), sum(a), avg(a), min(s), max(ts) from t",
    "select a + 1, a * 2, -a, 'lit', 1, null::int, true from t order by id",
    "select a::text, a::int, cast(n as int), n::numeric(6,1) from t order by id",
    "select 1::int, 'x'::text, 2.5::float8, '12'::bigint",
    "select now() is not null, current_date is not null",
    "select case when a > 0 then 'pos' when a < 0 then 'neg' end, coalesce(a, 0), nullif(a, 0) from t order by id",
    "select id as x, a as x from t order by 1",
    # integer arithmetic
    "select a / 2, a % 3, -7 / 2, 7 / -2, -7 % 3, 7 % -3 from t order by id",
    "select b / 3, b % 7, a / 2.0 from t order by id",
    "select n / 4, n * 3, n + a from t order by id",
    "select 2147483647::bigint + 1, 5 / 2 * 2",
    "select f / 4, f * a from t order by id",
    # NULL ordering
    "select a from t order by a",
    "select a from t order by a desc",
    "select s from t order by s nulls first",
    "select a, s from t order by a desc nulls last, s",
    # strings
    "select s || '!', s || null, concat(s, null, a), concat_ws('-', s, v, a) from t order by id",
    "select length(s), lower(s), upper(s), reverse(s), repeat(v, 2) from t order by id",
    "select substring(s from 2 for 3), substring(s, 2), position('a' in s), strpos(s, 'an') from t order by id",
    "select trim(s), btrim(s), ltrim(s), rtrim(s), trim(both 'x' from 'xxaxx') from t order by id",
    "select replace(s, 'a', 'A'), split_part('a,b,c', ',', 2), left(s, 2), right(s, 2) from t order by id",
    "select lpad(v, 8, '*'), rpad(v, 8), initcap('hello world'), md5(s) from t order by id",
    "select initcap(s), initcap('hELLO-wORLD o''neil  x_y 2nd,a'), initcap(null) from t order by id",
    "select ts + interval '1 day 02:30:00.5', ts - interval '-2 days 01:00' from t order by id",
    "select s like 'a%', s ilike 'A%', s ~ '^a', s ~* '^B', s !~ 'e', s similar to '(apple|Banana)' from t order by id",
    "select regexp_replace(s, 'a', 'X'), regexp_replace(s, 'a', 'X', 'g'), regexp_replace(s, '(p+)', '<\\1>') from t order by id",
    "select string_agg(s, ',' order by s) from t",
    "select string_agg(v, '|' order by id desc) from t where v is not null",
    "select greatest(a, 3, null), least(a, 3), greatest(null::int, null) from t order by id",
    "select v::varchar(3), 'abcdef'::varchar(2), 'ab'::char(4) from t order by id",
    "select body, key, code from docs order by id",
    "select body::text, key::text from docs order by id",
    # math
    "select abs(a), round(n), round(n, 1), ceil(n), floor(n), trunc(n), trunc(n, 1) from t order by id",
    "select round(f), round(2.5::float8), round(-2.5), round(2.5), round(0.125, 2) from t order by id",
    "select power(2, 10), sqrt(16), exp(0), ln(1), log(100), log(2, 8), mod(a, 3), sign(a) from t order by id",
    # C's pow: 1 ^ NaN and (-)1 ^ (-)Infinity are 1; numeric ^ double precision is double precision
    "select power(1, 'NaN'::float8), power(-1, 'Infinity'::float8), power(1.0::float8, '-Infinity'::float8),"
    " power(1.50::numeric(10,2), 'Infinity'::float8), power(0.01::numeric(10,2), '-Infinity'::float8) from t order by id",
    "select substr(null::text, 2, -2147483648), substr('abc', null, -1) from t order by id",
    "select ceil(f), floor(f), trunc(f), abs(f) from t order by id",
    "select random() < 1.0",
    # aggregates and windows
    "select s, count(*), count(a), sum(b), avg(n), bool_and(flag), bool_or(flag) from t group by s order by s",
    "select count(*) filter (where a > 0), sum(a) filter (where flag) from t",
    "select stddev(f), variance(f), stddev_samp(a), var_pop(a) from t",
    "select count(distinct s), count(distinct v) from t",
    "select id, row_number() over (order by a), rank() over (order by s), dense_rank() over (order by s) from t order by id",
    "select id, lag(a) over (order by id), lead(a, 2) over (order by id), first_value(a) over (order by id), "
    "last_value(a) over (order by id) from t order by id",
    "select id, ntile(3) over (order by id), sum(a) over (order by id rows between 1 preceding and current row) from t order by id",
    "select id, sum(a) over (partition by flag order by id), count(*) over () from t order by id",
    "select a, count(*) from t group by a having count(*) >= 1 order by a",
    "select array_agg(a order by id) from t",
    "select sum(a), sum(b), sum(n), sum(f) from t",
    # subqueries, CTEs, set operations
    "select id from t where a in (select t_id from u) order by id",
    "select id from t where exists (select 1 from u where u.t_id = t.id) order by id",
    "select id, (select count(*) from u where u.t_id = t.id) from t order by id",
    "select id from t where a = any(array[2, 3, 7]) order by id",
    "select id from t where a = any(select t_id from u) order by id",
    "with x as (select id, a from t where a > 0) select * from x order by id",
    "with recursive r(n) as (select 1 union all select n + 1 from r where n < 5) select * from r",
    "select a from t union select t_id from u",
    "select a from t union all select t_id from u",
    "select a from t intersect select t_id from u",
    "select a from t except select t_id from u",
    "select id from t order by id limit 2 offset 1",
    "select id from t order by id fetch first 3 rows only",
    "select distinct on (s) s, id from t order by s, id desc",
    "select distinct s from t",
    "select * from (values (1, 'a'), (2, 'b')) as v(x, y) order by x",
    "select * from (values (1, 'a'), (2, null)) v order by 1",
    "values (1, 'one'), (2, 'two')",
    "select t.id, u.label from t join u on u.t_id = t.id order by t.id, u.label",
    "select t.id, u.label from t left join u on u.t_id = t.id order by t.id, u.label",
    "select * from t join u using (id) order by id",
    "select x.id, y.c from t x, lateral (select count(*) as c from u where u.t_id = x.id) y order by x.id",
    "select * from positive_t order by id",
    "select a is distinct from 2, a is not distinct from null from t order by id",
    "select id from t where a between 0 and 3 and s is not null order by id",
    "select array[1, 2, 3], '{1,2,3}'::int[], array[a, b] from t order by id",
    "select (array[10, 20, 30])[2], cardinality(array[1, 2]), array_length(array[1, 2, 3], 1)",
    # generate_series
    "select * from generate_series(1, 5)",
    "select * from generate_series(1, 10, 3) as g(x)",
    "select * from generate_series(5, 1) g",
    "select g from generate_series(10, 1, -4) g",
    "select generate_series(1, 3)",
    "select x / 2 from generate_series(1, 5) x",
    "select * from generate_series('2024-01-01'::timestamp, '2024-01-01 03:00'::timestamp, interval '1 hour')",
    "select id, g from t, generate_series(1, t.id) g where id < 3 order by id, g",
    "select g, pg_typeof(g) from generate_series(2147483645, 2147483650) g",
    "select * from generate_series(-3, 3, 2) g",
    "select * from generate_series(3, 3) g",
    "select * from generate_series(1, 10, 100) g",
    "select * from generate_series(-2147483648, -2147483646) g",
    "select * from generate_series(3, -9223372036854775807, -4611686018427387904) g",
    "select x, y from generate_series(1, 3) a(x) join generate_series(2, 4) b(y) on x = y",
    "select * from generate_series(9223372036854775800, 9223372036854775806, 3) g",
    "select count(*), sum(g) from generate_series(1, 3000000) g",
    "select * from unnest(array[3, 1, 2]) as u(x)",
    # dates and times
    "select date_trunc('hour', ts), date_trunc('day', tz), date_trunc('month', d) from t order by id",
    "select extract(year from ts), extract(month from d), extract(hour from tz), extract(second from ts) from t order by id",
    "select extract(dow from d), extract(doy from d), extract(epoch from ts), extract(quarter from d) from t order by id",
    "select date_part('hour', ts), date_part('minute', ts) from t order by id",
    "select ts + interval '1 day 2 hours', ts - interval '30 minutes', tz + interval '1 hour' from t order by id",
    "select d + 1, d - 1, d - '2024-01-01'::date from t order by id",
    "select ts - '2024-01-01 00:00:00'::timestamp from t order by id",
    "select date_bin(interval '15 minutes', ts, timestamp '2024-01-01') from t order by id",
    "select date_bin('1 hour', tz, '2000-01-01 00:05:00+00'::timestamptz) from t order by id",
    "select interval '1 day 2 hours', interval '90 minutes', interval '2 days'",
    "select to_char(ts, 'YYYY-MM-DD HH24:MI:SS'), to_char(d, 'DD/MM/YYYY'), to_char(ts, 'HH12:MI AM') from t order by id",
    "select d, d + interval '1 month', ts + interval '1 year 2 months', d - interval '1 day' from t order by id",
    "select 10 / 3, 10.0 / 3, 10 / 3.0, 1 / 3::numeric, 2 ^ 10, n / 3, n / 0.7 from t order by id",
    "select a from t where a > all(select t_id from u where t_id is not null) order by a",
    "select a from t where a < any(select t_id from u) order by a",
    "select extract(epoch from tz), current_timestamp is not null, localtimestamp is not null from t order by id",
    "select '2024-03-01'::date, '2024-03-01 12:00:00'::timestamp, '2024-03-01 12:00:00+00'::timestamptz",
    "select extract(epoch from interval '1 day 1 second'), extract(hour from interval '5 hours')",
    "select ts at time zone 'UTC' from t order by id",
    "select id, d from t where d > '2024-01-10' and ts < timestamp '2024-06-01' order by id",
    "select id from t where ts between '2024-01-01' and '2024-01-02' and flag = 't' and n > '3' order by id",
    "select current_date - d > 0, now() > tz, now() - tz > interval '1 day' from t order by id",
    "select extract(isodow from d), extract(week from d), extract(century from d), extract(millisecond from ts) "
    "from t order by id",
    "select to_char(ts, 'Dy, DD Mon YYYY') from t order by id",
    "select id, sum(f) over (order by ts range between interval '1 day' preceding and current row) from t order by id",
    # more relational shapes
    "select *, a + 1 from t order by id",
    "select t.*, u.label from t join u on t.id = u.id order by t.id",
    "select id, a from t order by 2 desc, 1",
    "select a from t union select t_id from u order by 1 limit 3",
    "select id, sum(a) over w from t window w as (order by id) order by id",
    'select id as "MixedCase" from t order by id',
    "select id from t order by id limit all offset 4",
    "select * from t natural join u order by id",
    "select t.id, u.id from t full join u on t.id = u.t_id order by 1, 2",
    "select id from t where a not in (select t_id from u where t_id is not null) order by id",
    "select distinct on (flag) flag, id from t order by flag, id limit 2",
    "with t as (select 1 as id) select * from t",
    "select a from t where a <> all(array[1, 7]) order by a",
    "select floor(-2.5), ceil(-2.5), round(-2.45, 1), trunc(-2.7)",
    "select coalesce(null, null, 3), octet_length('héllo'), ascii('A'), chr(66)",
    "select id, case a when 7 then 'seven' when -7 then 'minus' else 'other' end from t order by id",
    "select id, array_agg(label order by label desc) from u group by id order by id",
    "select avg(f), avg(b), avg(n) from t",
    "select array(select id from u order by id)",
    "select count(*) filter (where a > 0), sum(a) filter (where flag) from t",
]

PARAM_QUERIES: list[tuple[str, tuple]] = [
    ("select id from t where a > %s order by id", (1,)),
    ("select %s::text || s from t order by id", ("x",)),
    ("select id from t where n = %s", (Decimal("12.50"),)),
    ("select id from t where d = %s", (dt.date(2024, 1, 1),)),
    ("select id from t where ts < %s order by id", (dt.datetime(2024, 1, 2),)),
    ("select id from t where flag = %s order by id", (True,)),
    ("select %s::float8 * 2", (1.25,)),
    ("select id from t order by id limit %s", (2,)),
    ("select id from t order by id limit %s offset %s", (None, None)),
    ("select id from t where a = any(%s) order by id", ([2, 7],)),
    ("select %s::int + 1, %s::numeric * 2, %s::interval, %s::timestamptz", (5, Decimal("1.5"), dt.timedelta(hours=2),
                                                                          dt.datetime(2024, 5, 1, 12, tzinfo=UTC))),
    ("select %s::bytea, %s::date + 1, %s::text is null", (b"\x00\xff", dt.date(2024, 2, 28), None)),
]


@pytest.mark.parametrize("sql", QUERIES)
def test_query_matches_postgres(pg, sp, sql: str) -> None:
    compare(pg, sp, sql)


@pytest.mark.parametrize("sql,params", PARAM_QUERIES)
def test_parameters_match_postgres(pg, sp, sql: str, params: tuple) -> None:
    compare(pg, sp, sql, params)


# ------------------------------------------------------------------------------------------
# Output types


def test_output_types_carry_postgres_types() -> None:
    tq = _translate("select v, n, body, key, code, a, count(*) over (), avg(a) over (), a::numeric(5,2), "
                    "extract(hour from ts), t.id::varchar(4) from t, docs")
    names = [ct.sql() if ct else None for ct in tq.output_types]
    assert names == [
        "character varying(10)", "numeric(10,2)", "json", "uuid", "character(3)", "integer", "bigint",
        "numeric", "numeric(5,2)", "numeric", "character varying(4)",
    ]
    assert tq.tables == [("public", "t"), ("public", "docs")]


def test_view_reads_base_tables() -> None:
    tq = _translate("select * from positive_t")
    assert tq.tables == [("public", "t")]
    assert tq.output_names == ["id", "a"]


# ------------------------------------------------------------------------------------------
# Errors: SQLSTATE and message as PostgreSQL reports them


def _pg_error(conn, sql: str) -> tuple[str, str]:
    with pytest.raises(psycopg.Error) as info:
        with conn.cursor() as cur:
            cur.execute(sql)
            cur.fetchall()
    return info.value.sqlstate, info.value.diag.message_primary


def _tidegate_error(session, sql: str) -> SqlError:
    try:
        tq = _translate(sql)
        session.sql(tq.spark_sql).toArrow()
    except SqlError as err:
        return err
    except Exception as exc:  # noqa: BLE001 - whatever Spark raises is what we map
        return map_spark_error(exc, sql)
    raise AssertionError(f"no error for {sql}")


ERROR_QUERIES = [
    "select 1 / 0",
    "select a / (a - a) from t",
    "select a % 0 from t",
    "select 'abc'::int",
    "select 'x1'::numeric",
    "select 'nope'::date",
    "select 'maybe'::boolean",
    "select 2147483647 + a from t where a > 0",
    "select 3000000000::int",
    "select nosuch from t",
    "select t.nosuch from t",
    "select * from nosuch",
    "select foo(1)",
    "select foo('a', 2)",
    "selec 1",
    "select * from t where",
    "select * from t where a = 'abc'",
    "select s + 1 from t",
    "select a, count(*) from t",
    "select id from t, u",
    "select * from u where t_id in (select id, a from t)",
    "select avg(s) from t",
    "select x.a from t",
    "select (select id from u)",
    "select 1 union select 'a', 2",
    "select * from t join nosuch on true",
]


@pytest.mark.parametrize("sql", ERROR_QUERIES)
def test_errors_match_postgres(pg, sp, sql: str) -> None:
    state, message = _pg_error(pg, sql)
    err = _tidegate_error(sp, sql)
    assert (err.sqlstate, err.message) == (state, message)


NUMERIC_TEXT_QUERIES = [
    "select sum(n), min(n), max(n), avg(n), sum(b), avg(b) from t",
    "select n * 2, n + 1.5, -n, abs(n), round(n, 1), n - a, a::numeric, 1.50::numeric from t order by id",
    "select 7.0 / 2, 1 / 3.0, 10 / 4.00, 0.5 / 3, 20000.5 / 3, 1.50, 0.000",
    # (dividend and divisor starting with the same base-10000 digit, like -3.25 / 3, get 4 more
    # digits in PostgreSQL: the codec sees only the quotient, so those are not covered here)
    "select n / 7, n / 0.7, sum(n) over () / count(*) over () from t order by id",
    "select extract(epoch from ts), extract(second from ts), extract(hour from ts) from t order by id",
    "select avg(a) over (order by id rows between 1 preceding and 1 following) from t order by id",
    "select percentile_disc(0.5) within group (order by n) from t",
]


@pytest.mark.parametrize("sql", NUMERIC_TEXT_QUERIES)
def test_numeric_text_matches_postgres(pg, sp, sql: str) -> None:
    """numeric results print with PostgreSQL's display scale (kept, added, or chosen per quotient)."""
    from psycopg.types.string import TextLoader

    from gateway.codec import encode_text_column

    with pg.cursor() as cur:
        cur.adapters.register_loader("numeric", TextLoader)
        cur.execute(sql)
        expected = [tuple(row) for row in cur.fetchall()]
    tq = _translate(sql)
    table = sp.sql(tq.spark_sql).toArrow()
    columns = []
    for i, ct in enumerate(tq.output_types):
        assert ct is not None and ct.pg.name == "numeric", (sql, i, ct)
        columns.append(encode_text_column(table.column(i), ct).to_pylist())
    assert list(zip(*columns)) == expected, tq.spark_sql


@pytest.mark.parametrize("sql", [
    "select percentile_cont(0.5) within group (order by a) from t",
    "select percentile_cont(0.25) within group (order by f desc) from t",
    "select s, percentile_cont(0.5) within group (order by b) from t group by s order by s",
])
def test_percentiles_match_postgres(pg, sp, sql: str) -> None:
    tq = compare(pg, sp, sql)
    assert tq.output_types[-1] is not None and tq.output_types[-1].pg.name == "float8"


def test_interval_column_equals_interval_parameter(sp) -> None:
    """Interval columns hold PostgreSQL's interval text; a timedelta parameter compares by that text."""
    sp.sql("select 1 as id, '3 days 04:05:06.000007' as iv union all select 2, '-1 days +01:00:00.000005'"
           ).createOrReplaceTempView("tv_ivs")
    TABLES.setdefault("ivs", ([("id", "int4", ()), ("iv", "interval", ())], []))
    try:
        for value, want in ((dt.timedelta(days=3, hours=4, minutes=5, seconds=6, microseconds=7), [1]),
                            (dt.timedelta(days=-1, seconds=3600, microseconds=5), [2])):
            tq = _translate("select id from ivs where iv = $1", (value,))
            assert [r[0] for r in sp.sql(tq.spark_sql).collect()] == want
        tq = _translate("select id from ivs where iv <> interval '3 days 04:05:06.000007'")
        assert [r[0] for r in sp.sql(tq.spark_sql).collect()] == [2]
    finally:
        TABLES.pop("ivs", None)


def test_two_argument_date_bin_bins_from_the_epoch(pg, sp) -> None:
    """GreptimeDB's date_bin(stride, ts) (no origin; PostgreSQL requires one) equals the epoch origin."""
    ours = sp.sql(_translate("select date_bin(interval '15 minutes', timestamp '2024-01-01 10:37:12')").spark_sql).collect()
    with pg.cursor() as cur:
        cur.execute("select date_bin(interval '15 minutes', timestamp '2024-01-01 10:37:12', timestamp '1970-01-01')")
        assert [tuple(r) for r in ours] == cur.fetchall()


def test_real_columns_are_float4() -> None:
    assert [ct.pg.oid for ct in _translate("select r from reals").output_types] == [700]


def test_syntax_error_position_of_unexpected_token() -> None:
    with pytest.raises(SqlError) as info:
        dialect.parse("SELECT id FROM t ORDER id")
    assert (info.value.message, info.value.position) == ('syntax error at or near "id"', 24)


def test_syntax_error_position() -> None:
    with pytest.raises(SqlError) as info:
        dialect.parse("select 1 from t where")
    assert info.value.sqlstate == "42601"
    with pytest.raises(SqlError) as info:
        dialect.parse("selec 1")
    assert (info.value.message, info.value.position) == ('syntax error at or near "selec"', 1)
    with pytest.raises(SqlError) as info:
        dialect.parse("select (1 from t")
    assert (info.value.message, info.value.position) == ('syntax error at or near "from"', 11)
    with pytest.raises(SqlError) as info:
        dialect.parse("select * from t where")
    assert (info.value.message, info.value.position) == ("syntax error at end of input", 22)


def test_unsupported_statement_is_0a000() -> None:
    with pytest.raises(SqlError) as info:
        translate_query(dialect.parse("insert into t values (1)")[0], RESOLVER)
    assert info.value.sqlstate == "0A000"


def test_cancelled_job_maps_to_57014(sp) -> None:
    import threading
    import time

    sc = sp.sparkContext
    sc.setJobGroup("cancel-me", "test", interruptOnCancel=True)
    timer = threading.Timer(1.0, lambda: sc.cancelJobGroup("cancel-me"))
    timer.start()
    try:
        with pytest.raises(Exception) as info:
            # bounded (~10 s on this box) in case the cancel came too late
            sp.sql("select sum(id % 7) from range(0, 3000000000) a").collect()
    finally:
        timer.cancel()
        sc.setJobGroup(None, None)  # type: ignore[arg-type]
        time.sleep(0.1)
    err = map_spark_error(info.value)
    assert (err.sqlstate, err.message) == ("57014", "canceling statement due to user request")


# ------------------------------------------------------------------------------------------
# EXPLAIN and scalar expressions


def test_explain_runs_in_spark(sp) -> None:
    tq = translate_query(dialect.parse("explain select a from t where a > 1")[0], RESOLVER)
    assert tq.output_names == ["QUERY PLAN"]
    assert tq.spark_sql.startswith("EXPLAIN")
    rows = sp.sql(tq.spark_sql).collect()
    assert "Scan" in rows[0][0]
    tq = translate_query(dialect.parse("explain analyze select count(*) from t")[0], RESOLVER)
    assert sp.sql(tq.spark_sql).collect()


def test_translate_expression_for_dml(sp) -> None:
    cols = [(c, _ctype(t, p)) for c, t, p in TABLES["t"][0]]
    expr = dialect.parse("select a / 2 + coalesce(b, 0)")[0].expressions[0]
    spark_expr = translate_expression(expr, cols)
    rows = sp.table("tv_t").selectExpr("id", spark_expr).orderBy("id").collect()
    assert [r[1] for r in rows] == [10_000_000_003, 17, 1, None, -4, 0]
    cond = translate_expression(dialect.parse("select id = any($1)")[0].expressions[0], cols, params=([1, 2],))
    assert sp.table("tv_t").where(cond).count() == 2


def test_month_intervals_are_sent_as_postgres_text(pg, sp) -> None:
    sql = "select interval '1 year 2 days', '1 month'::interval, interval '-2 mons 3 days 04:05:06'"
    tq = _translate(sql)
    row = sp.sql(tq.spark_sql).collect()[0]
    with pg.cursor() as cur:
        cur.execute(sql.replace("select ", "select (").replace(", ", ")::text, (").replace(", '", ", '") + ")::text")
        expected = cur.fetchone()
    assert tuple(row) == expected
    assert [t.pg.name for t in tq.output_types] == ["interval"] * 3


def test_time_values_are_microseconds_of_day(pg, sp) -> None:
    """Spark has no TIME type: time values travel as microseconds since midnight (the
    executor turns them into Arrow time64 for columns typed time)."""
    sql = "select '10:00'::time, time '10:30:15.5', ts::time from t order by id"
    tq = _translate(sql)
    assert [t.pg.name for t in tq.output_types] == ["time", "time", "time"]
    got = [
        tuple(None if v is None else (dt.datetime.min + dt.timedelta(microseconds=v)).time() for v in row)
        for row in sp.sql(tq.spark_sql).collect()
    ]
    with pg.cursor() as cur:
        cur.execute(sql)
        assert got == cur.fetchall()


def test_with_ordinality_is_reported_unsupported() -> None:
    with pytest.raises(SqlError) as info:
        _translate("select * from generate_series(1, 3) with ordinality")
    assert (info.value.sqlstate, info.value.message) == ("0A000", "WITH ORDINALITY is not supported")


@pytest.mark.parametrize(("text", "expected"), [
    ("SELECT 1", (False, False, "SELECT 1")),
    ("analyze verbose select 1", (True, True, "select 1")),
    ("(ANALYZE, VERBOSE false) SELECT 1", (True, False, "SELECT 1")),
    ("(analyse on, costs off, buffers) SELECT 1", (True, False, "SELECT 1")),
    ("/* c */ ( VERBOSE ) SELECT 'analyze'", (False, True, "SELECT 'analyze'")),
    ("(FORMAT text) SELECT $$a)$$", (False, False, "SELECT $$a)$$")),
])
def test_explain_options_text_in_options_out(text: str, expected: tuple) -> None:
    assert explain_options(text) == expected


@pytest.mark.parametrize(("text", "sqlstate"), [
    ("(FORMAT JSON) SELECT 1", "0A000"), ("(foo) SELECT 1", "42601"), ("(analyze,) SELECT 1", "42601"),
    ("(analyze SELECT 1", "42601"),
])
def test_explain_options_refused(text: str, sqlstate: str) -> None:
    with pytest.raises(SqlError) as info:
        explain_options(text)
    assert info.value.sqlstate == sqlstate


def test_jsonb_concatenation_is_refused_not_misanswered() -> None:
    """jsonb is carried as its text: || joined the two texts ('{"a": 1}{"b": 2}', not valid json)."""
    for sql in ("""select '{"a": 1}'::jsonb || '{"b": 2}'::jsonb""", "select j || '[1]' from (select '[]'::jsonb j) s"):
        with pytest.raises(SqlError) as info:
            _translate(sql)
        assert info.value.sqlstate == "0A000"
    assert "||" in _translate("""select '{"a": 1}'::jsonb::text || 'x'""").spark_sql


def test_a_result_over_the_collect_limit_is_54000_with_what_to_do() -> None:
    """Spark's refusal to collect past spark.driver.maxResultSize (as py4j reports it, wrapped in
    the Arrow collector's awaitResult) is PostgreSQL's program_limit_exceeded, not XX000."""
    text = ("An error occurred while calling o92.getResult.\n: org.apache.spark.SparkException: Exception thrown in "
            "awaitResult: \n\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:56)\n"
            "Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Total size of serialized "
            "results of 3 tasks (600.1 MiB) is bigger than spark.driver.maxResultSize (512.0 MiB)")
    err = map_spark_error(RuntimeError(text))
    assert err.sqlstate == "54000"
    assert "tidegate.spark_writes" in (err.hint or "")
