"""Generated questions for the PostgreSQL oracle (issue 17).

Two generators, both deterministic for a seed:

* :func:`catalogue` -- every function and operator tidegate claims to support (the allow-list
  in ``engine/pgfunctions.py`` and the operator table), for each argument type it takes, over
  edge values (NULL, zero, negatives, extremes, NaN and infinities, DST transitions, leap days,
  non-ASCII text), each asked twice: on constants (a query without a table) and on a table's
  column (a query Spark runs);
* :func:`random_queries` -- typed expression trees over tables holding NULLs, in WHERE / GROUP BY /
  HAVING / ORDER BY / window / join / subquery / set-operation shapes, in the spirit of
  SQLancer and sqlsmith.

Each question is a :class:`Question`: the statement and the session time zone it runs under
(three zones: UTC, one west of it with DST, one with a half-hour offset). The comparison lives in
``tests/oracle.py``; the CI test in ``tests/test_generated_vs_postgres.py``; the long run is
``python -m tests.oracle --statements 100000``.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

ZONES = ("UTC", "America/New_York", "Asia/Kolkata")


@dataclass(frozen=True)
class Question:
    sql: str
    zone: str
    origin: str  # "catalogue" or "random"


# -- edge values per type ----------------------------------------------------------------------
# Each type: its SQL name, the table holding its edge values, and the values as SQL literals.
EDGES: dict[str, list[str]] = {
    "int": ["NULL", "0", "1", "-1", "7", "2147483647", "-2147483648"],
    "bigint": ["NULL", "0", "-3", "9223372036854775807", "-9223372036854775808", "1234567890123"],
    "smallint": ["NULL", "0", "5", "-32768", "32767"],
    "numeric(10,2)": ["NULL", "0.00", "1.50", "-2.25", "12345678.99", "0.01"],
    "double precision": ["NULL", "0", "1.5", "-2.75", "0.1", "1e300", "1e-300", "'NaN'", "'Infinity'",
                         "'-Infinity'"],
    "real": ["NULL", "0.5", "-1.25", "3.4e38", "'NaN'"],
    "text": ["NULL", "''", "'abc'", "'Hello World'", "'  padded  '", "'ÀéÏ ü'", "'a_c%'", "'x,y,,z'",
             "'123'"],
    "boolean": ["NULL", "true", "false"],
    "date": ["NULL", "'2024-02-29'", "'1970-01-01'", "'2024-03-10'", "'2024-11-03'", "'1999-12-31'",
             "'9999-12-31'"],
    "timestamp": ["NULL", "'2024-03-10 02:30:00'", "'2024-11-03 01:30:00'", "'2024-02-29 23:59:59.999999'",
                  "'1970-01-01 00:00:00'", "'2000-01-01 12:34:56.5'"],
    "timestamptz": ["NULL", "'2024-03-10 07:30:00+00'", "'2024-11-03 05:30:00+00'",
                    "'2024-06-30 23:59:59.5+05:30'", "'1970-01-01 00:00:00+00'", "'2024-01-01 00:00:00'"],
    "time": ["NULL", "'00:00:00'", "'23:59:59.999999'", "'12:30:15'"],
}
TABLE = {t: "og_" + t.split("(")[0].replace(" ", "_") for t in EDGES}


def setup_statements() -> list[str]:
    """DDL and rows of the edge-value tables and of the random queries' tables (same on both)."""
    out = []
    for typ, values in EDGES.items():
        out.append(f"DROP TABLE IF EXISTS {TABLE[typ]}")
        out.append(f"CREATE TABLE {TABLE[typ]} (k int, v {typ})")
        rows = ", ".join(f"({i}, {v})" for i, v in enumerate(values))
        out.append(f"INSERT INTO {TABLE[typ]} VALUES {rows}")
    for name, rows in RANDOM_TABLES.items():
        out.append(f"DROP TABLE IF EXISTS {name}")
        cols = ", ".join(f"{c} {t}" for c, t in RANDOM_COLUMNS)
        out.append(f"CREATE TABLE {name} (k int, {cols})")
        out.append(f"INSERT INTO {name} VALUES " + ", ".join(rows))
    return out


# -- the catalogue: signatures -----------------------------------------------------------------
NUMS = ["int", "bigint", "smallint", "numeric(10,2)", "double precision", "real"]
# (template, argument types): {0}, {1}, ... are the arguments. Types may be a list of
# alternatives; each alternative is a separate signature.
SIGNATURES: list[tuple[str, list[list[str]]]] = [
    # math
    ("abs({0})", [NUMS]), ("sign({0})", [NUMS]), ("ceil({0})", [NUMS]), ("floor({0})", [NUMS]),
    ("round({0})", [NUMS]), ("round({0}, 1)", [["numeric(10,2)", "int"]]), ("trunc({0})", [NUMS]),
    ("sqrt({0})", [NUMS]), ("cbrt({0})", [["double precision", "int"]]), ("exp({0})", [["double precision", "int"]]),
    ("ln({0})", [NUMS]), ("log10({0})", [NUMS]), ("log({0})", [NUMS]),
    ("power({0}, {1})", [["int", "double precision", "numeric(10,2)"], ["int", "double precision"]]),
    ("mod({0}, {1})", [["int", "bigint", "smallint"], ["int", "smallint"]]),
    ("div({0}, {1})", [["numeric(10,2)"], ["numeric(10,2)"]]),
    ("degrees({0})", [["double precision"]]), ("radians({0})", [["double precision"]]),
    ("sin({0})", [["double precision"]]), ("cos({0})", [["double precision"]]),
    ("atan({0})", [["double precision"]]), ("atan2({0}, {1})", [["double precision"], ["double precision"]]),
    ("width_bucket({0}, 0, 100, 4)", [["double precision", "int"]]),
    ("greatest({0}, {1})", [NUMS, ["int", "numeric(10,2)"]]), ("least({0}, {1})", [NUMS, ["int"]]),
    ("{0} + {1}", [NUMS, NUMS]), ("{0} - {1}", [NUMS, ["int", "double precision"]]),
    ("{0} * {1}", [NUMS, ["int", "numeric(10,2)"]]), ("{0} / {1}", [NUMS, NUMS]),
    ("{0} % {1}", [["int", "bigint", "numeric(10,2)"], ["int", "numeric(10,2)"]]),
    ("-({0})", [NUMS]), ("{0} < {1}", [NUMS, NUMS]), ("{0} = {1}", [NUMS, ["int", "double precision"]]),
    ("{0} IS DISTINCT FROM {1}", [NUMS, ["int"]]), ("{0} BETWEEN 0 AND {1}", [NUMS, ["int"]]),
    ("{0} IN (0, 1, {1})", [["int", "double precision"], ["int"]]),
    # text
    ("length({0})", [["text"]]), ("char_length({0})", [["text"]]), ("octet_length({0})", [["text"]]),
    ("bit_length({0})", [["text"]]), ("upper({0})", [["text"]]), ("lower({0})", [["text"]]),
    ("initcap({0})", [["text"]]), ("ascii({0})", [["text"]]), ("chr({0})", [["int"]]),
    ("lpad({0}, {1})", [["text"], ["int"]]), ("rpad({0}, 6, 'xy')", [["text"]]),
    ("ltrim({0})", [["text"]]), ("rtrim({0}, ' d')", [["text"]]), ("btrim({0}, {1})", [["text"], ["text"]]),
    ("trim(both 'a' from {0})", [["text"]]), ("left({0}, {1})", [["text"], ["int"]]),
    ("right({0}, {1})", [["text"], ["int"]]), ("repeat({0}, 2)", [["text"]]),
    ("replace({0}, {1}, 'Z')", [["text"], ["text"]]), ("reverse({0})", [["text"]]),
    ("split_part({0}, ',', {1})", [["text"], ["int"]]), ("substr({0}, {1})", [["text"], ["int"]]),
    ("substr({0}, 2, {1})", [["text"], ["int"]]), ("substring({0} from {1} for 3)", [["text"], ["int"]]),
    ("position({0} in {1})", [["text"], ["text"]]), ("strpos({0}, 'l')", [["text"]]),
    ("translate({0}, 'abc', 'xy')", [["text"]]), ("overlay({0} placing 'ZZ' from 2 for {1})", [["text"], ["int"]]),
    ("md5({0})", [["text"]]), ("starts_with({0}, {1})", [["text"], ["text"]]),
    ("concat({0}, {1})", [["text"], ["text", "int", "boolean", "date"]]),
    ("concat_ws('-', {0}, {1})", [["text"], ["text", "int"]]),
    ("{0} || {1}", [["text"], ["text"]]), ("{0} LIKE {1}", [["text"], ["text"]]),
    ("{0} ILIKE 'h%'", [["text"]]), ("{0} ~ '^[a-z]+$'", [["text"]]),
    ("{0} < {1}", [["text"], ["text"]]), ("{0} = {1}", [["text"], ["text"]]),
    ("regexp_replace({0}, '[aeiou]', '_', 'g')", [["text"]]), ("regexp_like({0}, 'l+')", [["text"]]),
    ("regexp_count({0}, 'l')", [["text"]]), ("quote_literal({0})", [["text"]]),
    ("string_to_array({0}, ',')", [["text"]]), ("num_nulls({0}, {1})", [["text"], ["int"]]),
    ("to_hex({0})", [["int", "bigint"]]),
    # casts
    ("CAST({0} AS text)", [NUMS + ["boolean", "date", "timestamp", "timestamptz", "time"]]),
    ("CAST({0} AS int)", [["text", "double precision", "numeric(10,2)", "bigint", "boolean"]]),
    ("CAST({0} AS bigint)", [["text", "double precision", "int"]]),
    ("CAST({0} AS numeric(10,2))", [["text", "double precision", "int", "bigint"]]),
    ("CAST({0} AS double precision)", [["text", "int", "numeric(10,2)", "bigint"]]),
    ("CAST({0} AS boolean)", [["text", "int"]]),
    ("CAST({0} AS date)", [["text", "timestamp", "timestamptz"]]),
    ("CAST({0} AS timestamp)", [["text", "date", "timestamptz"]]),
    ("CAST({0} AS timestamptz)", [["text", "date", "timestamp"]]),
    ("CAST({0} AS time)", [["timestamp", "timestamptz"]]),
    # date / time
    ("date_part('{1}', {0})", [["timestamp", "timestamptz", "date"],
                               ["year", "month", "day", "hour", "minute", "dow", "doy", "epoch", "week", "quarter"]]),
    ("extract({1} from {0})", [["timestamp", "timestamptz"], ["year", "hour", "epoch", "second", "isodow"]]),
    ("date_trunc('{1}', {0})", [["timestamp", "timestamptz"], ["day", "hour", "month", "week", "year", "minute"]]),
    ("to_char({0}, {1})", [["timestamp", "timestamptz"],
                           ["'YYYY-MM-DD HH24:MI:SS'", "'Dy Mon DD'", "'HH12:MI AM'", "'YYYY \"Q\"Q'"]]),
    ("{0} + interval '{1}'", [["timestamp", "timestamptz", "date"], ["1 day", "1 hour", "1 month", "-2 days 03:00:00"]]),
    ("{0} - interval '{1}'", [["timestamp", "timestamptz"], ["1 day", "90 minutes"]]),
    ("{0} + {1}", [["date"], ["int"]]), ("{0} - {1}", [["date"], ["date"]]),
    ("{0} - {1}", [["timestamp"], ["timestamp"]]), ("{0} - {1}", [["timestamptz"], ["timestamptz"]]),
    ("{0} < {1}", [["timestamp", "timestamptz", "date"], ["timestamp", "timestamptz", "date"]]),
    ("{0} = {1}", [["date", "timestamp"], ["timestamptz"]]),
    ("{0} AT TIME ZONE {1}", [["timestamp", "timestamptz"], ["'UTC'", "'Europe/Berlin'", "'America/Los_Angeles'"]]),
    ("timezone({1}, {0})", [["timestamptz"], ["'Asia/Tokyo'"]]),
    ("make_date(2024, {0}, 1)", [["int"]]), ("make_timestamp(2024, 2, 29, {0}, 0, 0)", [["int"]]),
    ("make_timestamptz(2024, 3, 10, {0}, 30, 0)", [["int"]]),
    ("to_timestamp({0})", [["double precision", "int"]]),
    ("to_date({0}, 'YYYY-MM-DD')", [["text"]]),
    ("date_bin(interval '15 minutes', {0}, timestamp '2000-01-01')", [["timestamp"]]),
    ("{0} + time '01:30:00'", [["date"]]),
    # conditionals
    ("coalesce({0}, {1})", [NUMS + ["text", "date"], ["int"]]), ("nullif({0}, {1})", [["int", "text"], ["int", "text"]]),
    ("CASE WHEN {0} THEN 'y' WHEN NOT {0} THEN 'n' ELSE 'null' END", [["boolean"]]),
    ("{0} AND {1}", [["boolean"], ["boolean"]]), ("{0} OR {1}", [["boolean"], ["boolean"]]),
    ("NOT {0}", [["boolean"]]), ("{0} IS NULL", [NUMS + ["text", "timestamptz"]]),
    ("{0} IS TRUE", [["boolean"]]), ("{0} IS NOT FALSE", [["boolean"]]),
]


def _typed(literal: str, typ: str) -> str:
    """A constant of the type. A negative number is parenthesized: ``-32768::smallint`` is
    ``-(32768::smallint)`` in PostgreSQL, out of range."""
    if literal == "NULL":
        return "NULL::" + typ
    if literal.startswith("-"):
        literal = f"({literal})"
    return f"{literal}::{typ}" if literal.startswith("'") or typ != "int" else f"CAST({literal} AS {typ})"


def _signatures() -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for template, arg_types in SIGNATURES:
        for combo in itertools.product(*arg_types):
            out.append((template, combo))
    return out


def catalogue(rng: random.Random, *, per_signature: int) -> list[Question]:
    """Per signature up to ``per_signature`` argument combinations, each as a constant query and
    as a query over the first argument's edge table (the others given as constants). An argument
    "type" that is not in EDGES (a field name, a format) is spliced in as is."""
    out: list[Question] = []
    for n, (template, types) in enumerate(_signatures()):
        value_lists = [[(v, t) for v in EDGES[t]] if t in EDGES else [(t, None)] for t in types]
        combos = list(itertools.product(*value_lists))
        rng.shuffle(combos)
        zones = ZONES if any(t in ("timestamptz", "timestamp", "date", "time") for t in types) else (ZONES[n % 3],)
        for i, combo in enumerate(combos[:per_signature]):
            zone = zones[i % len(zones)]
            consts = [_typed(v, t) if t else v for v, t in combo]
            out.append(Question(f"SELECT {template.format(*consts)}", zone, "catalogue"))
            first_value, first_type = combo[0]
            if first_type is None:
                continue
            k = EDGES[first_type].index(first_value)
            cols = ["v"] + consts[1:]
            out.append(Question(f"SELECT {template.format(*cols)} FROM {TABLE[first_type]} WHERE k = {k}",
                                zone, "catalogue"))
    return out


# -- random queries ----------------------------------------------------------------------------
RANDOM_COLUMNS = [("i", "int"), ("b", "bigint"), ("n", "numeric(10,2)"), ("f", "double precision"),
                  ("t", "text"), ("bo", "boolean"), ("d", "date"), ("ts", "timestamp"), ("tz", "timestamptz")]


def _random_rows(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    pools = {
        "int": ["NULL", "0", "1", "-1", "2", "3", "10", "-7", "100"],
        "bigint": ["NULL", "0", "5", "-5", "1000000000000", "42"],
        "numeric(10,2)": ["NULL", "0.00", "1.25", "-3.50", "99.99", "1000.01"],
        "double precision": ["NULL", "0", "0.5", "-1.5", "2.25", "1e10", "-0.125"],
        "text": ["NULL", "''", "'a'", "'b'", "'abc'", "'A b'", "'é'", "'zz'", "'a%'"],
        "boolean": ["NULL", "true", "false"],
        "date": ["NULL", "'2024-01-01'", "'2024-02-29'", "'2023-12-31'", "'2024-03-10'"],
        "timestamp": ["NULL", "'2024-01-01 00:00:00'", "'2024-03-10 02:30:00'", "'2024-02-29 12:00:00.25'",
                      "'2023-11-05 01:30:00'"],
        "timestamptz": ["NULL", "'2024-01-01 00:00:00+00'", "'2024-03-10 07:30:00+00'", "'2024-07-01 12:00:00+02'"],
    }
    return [f"({k}, " + ", ".join(rng.choice(pools[t]) for _, t in RANDOM_COLUMNS) + ")"
            for k in range(1, count + 1)]


RANDOM_TABLES = {"og_r1": _random_rows(1, 12), "og_r2": _random_rows(2, 8)}

# Typed building blocks of expression trees: (template, argument types, result type).
_NUM = ("int", "bigint", "numeric(10,2)", "double precision")
FUNCS: list[tuple[str, tuple[str, ...], str]] = [
    ("({0} + {1})", ("int", "int"), "int"), ("({0} - {1})", ("bigint", "int"), "bigint"),
    ("({0} * {1})", ("numeric(10,2)", "int"), "numeric(10,2)"), ("({0} + {1})", ("double precision", "numeric(10,2)"), "double precision"),
    ("abs({0})", ("int",), "int"), ("abs({0})", ("double precision",), "double precision"),
    ("coalesce({0}, {1})", ("int", "int"), "int"), ("coalesce({0}, {1})", ("text", "text"), "text"),
    ("nullif({0}, {1})", ("int", "int"), "int"), ("greatest({0}, {1})", ("bigint", "int"), "bigint"),
    ("round({0})", ("numeric(10,2)",), "numeric(10,2)"), ("floor({0})", ("double precision",), "double precision"),
    ("length({0})", ("text",), "int"), ("upper({0})", ("text",), "text"), ("({0} || {1})", ("text", "text"), "text"),
    ("substr({0}, 1, 2)", ("text",), "text"), ("lower({0})", ("text",), "text"),
    ("CASE WHEN {0} THEN {1} ELSE {2} END", ("boolean", "int", "int"), "int"),
    ("CASE WHEN {0} THEN {1} ELSE {2} END", ("boolean", "text", "text"), "text"),
    ("({0} + {1})", ("date", "int"), "date"), ("date_trunc('month', {0})", ("timestamp",), "timestamp"),
    ("date_trunc('day', {0})", ("timestamptz",), "timestamptz"), ("CAST({0} AS date)", ("timestamptz",), "date"),
    ("CAST({0} AS timestamptz)", ("timestamp",), "timestamptz"), ("extract(hour from {0})", ("timestamptz",), "numeric"),
    ("({0} + interval '1 day')", ("timestamp",), "timestamp"), ("CAST({0} AS text)", ("int",), "text"),
    ("CAST({0} AS text)", ("date",), "text"), ("CAST({0} AS double precision)", ("int",), "double precision"),
    ("CAST({0} AS bigint)", ("int",), "bigint"),
]
_CMP = ["=", "<>", "<", "<=", ">", ">="]


class ExprGen:
    def __init__(self, rng: random.Random, columns: list[tuple[str, str]]):
        self.rng, self.columns = rng, columns

    def literal(self, typ: str) -> str:
        pool = {"int": ["0", "1", "2", "-1", "5"], "bigint": ["3::bigint", "0::bigint"],
                "numeric(10,2)": ["1.50", "0.25", "-2.00"], "double precision": ["0.5::float8", "2::float8"],
                "text": ["'a'", "'abc'", "''", "'z'"], "boolean": ["true", "false"],
                "date": ["date '2024-02-29'", "date '2024-01-01'"],
                "timestamp": ["timestamp '2024-01-01 00:00:00'", "timestamp '2024-03-10 03:00:00'"],
                "timestamptz": ["timestamptz '2024-03-10 07:30:00+00'", "timestamptz '2024-01-01 00:00:00'"],
                "numeric": ["1.5"]}[typ]
        return self.rng.choice(pool)

    def expr(self, typ: str, depth: int) -> str:
        rng = self.rng
        if typ == "boolean":
            return self.predicate(depth)
        cols = [c for c, t in self.columns if t == typ]
        roll = rng.random()
        if depth <= 0 or roll < 0.35:
            if cols and rng.random() < 0.75:
                return rng.choice(cols)
            return self.literal(typ)
        funcs = [f for f in FUNCS if f[2] == typ]
        if not funcs:
            return rng.choice(cols) if cols else self.literal(typ)
        template, args, _ = rng.choice(funcs)
        return template.format(*(self.expr(a, depth - 1) for a in args))

    def predicate(self, depth: int) -> str:
        rng = self.rng
        roll = rng.random()
        if depth > 0 and roll < 0.25:
            op = rng.choice(["AND", "OR"])
            return f"({self.predicate(depth - 1)} {op} {self.predicate(depth - 1)})"
        if depth > 0 and roll < 0.3:
            return f"NOT ({self.predicate(depth - 1)})"
        typ = rng.choice([t for t in ("int", "bigint", "numeric(10,2)", "double precision", "text", "date",
                                      "timestamp", "timestamptz", "boolean") if t != "boolean" or depth > 0])
        if typ == "boolean":
            col = [c for c, t in self.columns if t == "boolean"]
            return rng.choice(col) if col else "true"
        a = self.expr(typ, depth - 1)
        roll = rng.random()
        if roll < 0.12:
            return f"{a} IS {rng.choice(['', 'NOT '])}NULL"
        if roll < 0.2:
            return f"{a} BETWEEN {self.expr(typ, 0)} AND {self.expr(typ, 0)}"
        if roll < 0.27:
            return f"{a} IN ({self.literal(typ)}, {self.literal(typ)})"
        if roll < 0.32:
            return f"{a} IS DISTINCT FROM {self.expr(typ, 0)}"
        if typ == "text" and roll < 0.38:
            return f"{a} LIKE {rng.choice(['%a%', 'a_c', 'A%', '%'])!r}".replace('"', "'")
        return f"{a} {rng.choice(_CMP)} {self.expr(typ, depth - 1)}"


def _qualified(prefix: str) -> list[tuple[str, str]]:
    return [(f"{prefix}.{c}", t) for c, t in RANDOM_COLUMNS] + [(f"{prefix}.k", "int")]


def random_query(rng: random.Random) -> str:
    shape = rng.randrange(8)
    r1 = _qualified("a")
    g = ExprGen(rng, r1)
    scalar_types = ["int", "bigint", "numeric(10,2)", "double precision", "text", "date", "timestamp", "timestamptz"]
    if shape == 0:  # projection + filter
        items = ", ".join(f"{g.expr(rng.choice(scalar_types), 2)} AS c{i}" for i in range(rng.randint(1, 3)))
        return f"SELECT a.k, {items} FROM og_r1 a WHERE {g.predicate(2)} ORDER BY a.k"
    if shape == 1:  # group by + aggregates + having
        key_type = rng.choice(["int", "text", "date", "boolean", "bigint"])
        key = g.expr(key_type, 1)
        aggs = rng.sample(["count(*)", "count(a.t)", "sum(a.i)", "sum(a.n)", "min(a.t)", "max(a.d)", "avg(a.i)",
                           "min(a.tz)", "max(a.f)", "bool_and(a.bo)", "bool_or(a.bo)", "sum(a.b)", "count(DISTINCT a.i)",
                           "avg(a.n)", "string_agg(a.t, ',' ORDER BY a.t)", "max(a.ts)"], 3)
        having = f" HAVING count(*) > {rng.randint(0, 2)}" if rng.random() < 0.4 else ""
        where = f" WHERE {g.predicate(1)}" if rng.random() < 0.5 else ""
        return f"SELECT {key} AS g, {', '.join(aggs)} FROM og_r1 a{where} GROUP BY 1{having} ORDER BY 1"
    if shape == 2:  # window functions
        part = rng.choice(["a.bo", "a.i % 2", "a.t", "a.d"])
        fn = rng.choice(["row_number() OVER (PARTITION BY {p} ORDER BY a.k)", "rank() OVER (ORDER BY {x}, a.k)",
                         "sum(a.i) OVER (PARTITION BY {p} ORDER BY a.k)", "lag(a.t) OVER (ORDER BY a.k)",
                         "count(*) OVER (PARTITION BY {p})", "max(a.n) OVER (ORDER BY a.k ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)",
                         "dense_rank() OVER (PARTITION BY {p} ORDER BY {x})", "first_value(a.f) OVER (PARTITION BY {p} ORDER BY a.k)"])
        x = g.expr(rng.choice(["int", "text", "date"]), 1)
        return f"SELECT a.k, {fn.format(p=part, x=x)} AS w FROM og_r1 a ORDER BY a.k"
    if shape == 3:  # joins
        g2 = ExprGen(rng, r1 + _qualified("b"))
        kind = rng.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
        col = rng.choice(["i", "t", "d", "bo"])
        item = g2.expr(rng.choice(scalar_types), 1)
        return (f"SELECT a.k AS ak, b.k AS bk, {item} AS c FROM og_r1 a {kind} og_r2 b ON a.{col} = b.{col}"
                f" WHERE {g2.predicate(1)} OR a.k IS NULL ORDER BY 1, 2")
    if shape == 4:  # distinct
        return f"SELECT DISTINCT {g.expr(rng.choice(scalar_types), 1)} AS c FROM og_r1 a ORDER BY 1"
    if shape == 5:  # subqueries
        col = rng.choice(["i", "t", "d"])
        form = rng.choice([f"a.{col} IN (SELECT b.{col} FROM og_r2 b WHERE {ExprGen(rng, _qualified('b')).predicate(1)})",
                           f"EXISTS (SELECT 1 FROM og_r2 b WHERE b.{col} = a.{col})",
                           f"a.{col} NOT IN (SELECT b.{col} FROM og_r2 b WHERE b.{col} IS NOT NULL)",
                           "a.i > (SELECT min(b.i) FROM og_r2 b)"])
        return f"SELECT a.k FROM og_r1 a WHERE {form} ORDER BY a.k"
    if shape == 6:  # set operations
        typ = rng.choice(scalar_types)
        e1 = g.expr(typ, 1)
        e2 = ExprGen(rng, _qualified("b")).expr(typ, 1)
        op = rng.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT"])
        return f"SELECT {e1} AS c FROM og_r1 a {op} SELECT {e2} FROM og_r2 b ORDER BY 1"
    # ORDER BY an expression with NULLS FIRST/LAST and LIMIT/OFFSET, ties broken by the key
    e = g.expr(rng.choice(scalar_types), 1)
    nulls = rng.choice(["", " NULLS FIRST", " NULLS LAST"])
    direction = rng.choice(["", " DESC"])
    return (f"SELECT a.k, {e} AS c FROM og_r1 a ORDER BY 2{direction}{nulls}, 1"
            f" LIMIT {rng.randint(1, 10)} OFFSET {rng.randint(0, 3)}")


def random_queries(rng: random.Random, count: int) -> list[Question]:
    return [Question(random_query(rng), ZONES[i % 3], "random") for i in range(count)]


def questions(seed: int, *, per_signature: int, random_count: int) -> list[Question]:
    rng = random.Random(seed)
    return catalogue(rng, per_signature=per_signature) + random_queries(rng, random_count)
