"""Which SQL functions a client may call: an allow-list, and the Spark functions never reachable.

Client SQL is PostgreSQL; ``engine.translate`` turns it into Spark SQL. Spark's builtin registry
holds ~600 functions, some of which reach far beyond a query's rows: ``reflect`` /
``java_method`` call any static Java method (``java.lang.System.getenv``, ``System.exit``,
Hadoop's ``FileUtil.chmod``), ``input_file_name`` tells data file paths, ``from_protobuf`` loads
classes and reads descriptor files, the XML functions parse documents. So nothing is passed
through because Spark happens to know the name:

1. :data:`PG_FUNCTIONS` is the allow-list. A function call the client wrote (an
   ``exp.Anonymous`` or a typed sqlglot function that remembers the name it was written as,
   ``meta["pg_name"]``) must name one of these, else 42883 ``function f(argtypes) does not
   exist``, exactly as for any unknown function. Syntax that merely looks like a call
   (``CAST``, ``EXTRACT``, ``SUBSTRING(x FROM 1)``, ``TRIM``, ``POSITION``, ``CURRENT_DATE``,
   ``ARRAY[...]``) carries no written name and is not a function lookup. Calls the translator
   itself builds (``_func``) are marked :data:`INTERNAL` and exempt.
   The list is: the PostgreSQL functions ``engine/translate.py`` maps, renames (``_RENAMES``)
   or handles explicitly, plus the PostgreSQL functions whose Spark function has the same name
   and the same meaning, each checked against PostgreSQL (tests/test_security_functions.py
   compares a sample; tests/test_sql_vs_postgres.py and tests/test_translate.py the rest).
   Functions whose Spark namesake means something else (``encode``, ``format``,
   ``to_json``, ``sha256``, ``regexp_instr``, ``json_extract_path``) and catalog/session
   functions (answered by ``catalog.pgcatalog`` when a query has no table; on Spark they would
   report Spark's catalog) are not on it. To support a new function, implement or verify it
   and add its name here.
2. :data:`SPARK_DENIED` is the defence in depth: after translation, the generated Spark SQL is
   checked by the names Spark will resolve (:func:`check_spark_sql`: every function node of the
   final sqlglot tree, and every ``name (`` in the generated text, whatever the qualification or
   quoting), so a typed sqlglot class that happens to generate one of these names is caught too.
   ``engine.spark`` also drops the JVM/file ones from Spark's function registry at start-up.

The relation-free / catalog path (DuckDB, ``catalog/pgcatalog.py``) has its own guard: external
access disabled, configuration locked, and DuckDB's file/settings functions sent to the engine
(which refuses them as above).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlglot import exp
from sqlglot.tokens import TokenType

from tidegate.errors import SqlError

# Meta key of translator-made calls (exempt from the allow-list; still subject to SPARK_DENIED).
INTERNAL = "tg_internal"
# Meta key under which sqlglot keeps the name a typed function was written as (tidegate.dialect.Tidegate).
WRITTEN_NAME = "pg_name"

PG_FUNCTIONS: frozenset[str] = frozenset({
    # -- translated or renamed by engine/translate.py
    "date_part", "to_char", "strpos", "btrim", "generate_series", "unnest", "all", "any", "some",
    "clock_timestamp", "statement_timestamp", "transaction_timestamp", "gen_random_uuid",
    "cardinality", "ceiling", "make_timestamp", "make_timestamptz", "to_hex", "timezone",
    "log", "round", "trunc", "floor", "ceil", "concat", "concat_ws", "regexp_replace", "date_bin",
    "date_trunc", "percentile_cont", "percentile_disc", "initcap", "avg", "sum", "array_agg",
    "array_length", "string_agg", "coalesce", "nullif", "greatest", "least", "now", "version",
    "current_setting", "pg_typeof",
    "array",  # ARRAY(subquery)
    # -- same name and meaning in Spark: math
    "abs", "sign", "sqrt", "cbrt", "power", "pow", "exp", "ln", "log10", "mod", "div", "degrees",
    "radians", "pi", "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "factorial", "width_bucket", "random", "gcd", "lcm",
    # -- strings
    "upper", "lower", "length", "char_length", "character_length", "octet_length", "bit_length",
    "ascii", "chr", "lpad", "rpad", "ltrim", "rtrim", "trim", "left", "right", "repeat", "replace",
    "reverse", "split_part", "substr", "substring", "position", "translate", "overlay", "md5",
    "starts_with", "regexp_like", "regexp_count", "regexp_substr", "quote_literal", "quote_ident",
    "string_to_array",
    "num_nulls", "num_nonnulls", "encode", "decode",
    # -- date/time
    "current_date", "current_timestamp", "localtimestamp", "make_date", "make_interval", "to_date",
    "to_timestamp", "extract", "age", "justify_hours", "justify_days", "justify_interval",
    # -- arrays, json
    "array_position", "array_append", "array_prepend", "array_cat", "array_remove", "array_to_string",
    "json_extract_path_text", "json_build_object", "jsonb_build_object", "json_build_array", "jsonb_build_array",
    "to_json", "to_jsonb", "json_typeof", "jsonb_typeof", "json_array_length", "jsonb_array_length",
    # -- aggregates
    "count", "min", "max", "bool_and", "bool_or", "every", "stddev", "stddev_samp", "stddev_pop",
    "variance", "var_samp", "var_pop", "corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy",
    "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy",
    "bit_and", "bit_or", "bit_xor", "any_value", "mode", "grouping", "json_agg", "jsonb_agg",
    # -- window functions
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value",
})

# Spark builtins no client SQL may reach, whatever the allow-list says (see the module docstring).
# Reviewed against Spark 4.3's SHOW FUNCTIONS. Left reachable on purpose (only through the
# allow-list, i.e. not at all unless listed above): pure computations (hashes, aes_*, url_*,
# parse_url, from_json/from_csv, sketches, st_*), raise_error/assert_true (an error), uuid/rand,
# current_catalog/current_database/current_schema/current_user (Spark's names for its own
# catalog and the OS user; PostgreSQL's are answered by the catalog path).
SPARK_DENIED: frozenset[str] = frozenset({
    # call Java methods: environment, files (Hadoop FileUtil), System.exit
    "reflect", "java_method", "try_reflect",
    # data file paths and offsets
    "input_file_name", "input_file_block_start", "input_file_block_length",
    # class loading by name, descriptor/schema files read from the file system or URLs
    "from_protobuf", "to_protobuf", "from_avro", "to_avro", "schema_of_avro",
    # XML parsers (entity expansion / external entities)
    "xpath", "xpath_boolean", "xpath_double", "xpath_float", "xpath_int", "xpath_long",
    "xpath_number", "xpath_short", "xpath_string", "from_xml", "schema_of_xml",
    # the Python workers' log records (table function)
    "python_worker_logs",
    # file readers of other Spark distributions (not in OSS Spark 4.3; refused should they appear)
    "read_files",
    # Spark's version string (PostgreSQL's version() is translated to tidegate's own text)
    "version",
    # IDENTIFIER('name')(...) resolves a function name from a string at analysis time
    "identifier",
})

# The subset dropped from Spark's function registry at start-up (engine.spark): the ones that
# reach the JVM or the file system. Spark uses version and identifier itself; Delta Lake's DELETE,
# UPDATE and MERGE find the files they rewrite with input_file_name, which Spark 4 resolves by name
# through the registry (clients still cannot call these: the allow-list and check_spark_sql refuse them).
SPARK_UNREGISTER: tuple[str, ...] = tuple(sorted(
    SPARK_DENIED - {"version", "identifier", "read_files", "python_worker_logs",
                    "input_file_name", "input_file_block_start", "input_file_block_length"}))
SPARK_UNREGISTER_TABLE_FUNCTIONS: tuple[str, ...] = ("python_worker_logs",)

_HINT = "No function matches the given name and argument types. You might need to add explicit type casts."
_STRING_TOKENS = {TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.RAW_STRING, TokenType.BYTE_STRING,
                  TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.HEREDOC_STRING, TokenType.UNICODE_STRING,
                  TokenType.NUMBER}


def undefined_function(name: str, arg_types: Iterable[str]) -> SqlError:
    """PostgreSQL's 42883 for a function that does not exist (the same text as any unknown one)."""
    return SqlError("42883", f"function {name}({', '.join(arg_types)}) does not exist", hint=_HINT)


def written_name(node: exp.Expression) -> str | None:
    """The function name the client wrote for this node, or None (syntax, or made by tidegate)."""
    if node.meta_get(INTERNAL):
        return None
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    name = node.meta_get(WRITTEN_NAME)
    return name.lower() if isinstance(name, str) else None


def call_arguments(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    return [a for a in node.iter_expressions() if not isinstance(a, (exp.Var, exp.DataType))]


def check_calls(tree: exp.Expression, arg_type: Callable[[exp.Expression], str]) -> None:
    """42883 for the first function call in ``tree`` the client wrote that is not allowed."""
    for node in tree.walk():
        name = written_name(node)
        if name is not None and name not in PG_FUNCTIONS:
            raise undefined_function(name, [arg_type(a) for a in call_arguments(node)])


_CLASS_DENIED: dict[type, str | None] = {}


def _class_denied(cls: type) -> str | None:
    """The denied name among a typed sqlglot function class's names, if any (cached per class)."""
    try:
        return _CLASS_DENIED[cls]
    except KeyError:
        pass
    try:
        names = {n.lower() for n in cls.sql_names()}  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a class without SQL names
        names = set()
    hit = names & SPARK_DENIED
    _CLASS_DENIED[cls] = min(hit) if hit else None
    return _CLASS_DENIED[cls]


def _spark_tokens(sql: str) -> list:
    from sqlglot.dialects.spark import Spark

    return Spark().tokenize(sql)


def check_spark_sql(tree: exp.Expression | None, spark_sql: str) -> None:
    """42883 if generated Spark SQL would call a function of :data:`SPARK_DENIED`.

    Two views of the same statement: the function nodes of the final sqlglot tree (their names
    and sqlglot's names for typed classes), and the generated text as Spark's lexer splits it,
    where a function call is a name (bare, quoted or the last part of a qualified name) followed
    by ``(``. The text is only lexed when a denied name occurs in it at all.
    """
    if tree is not None:
        for node in tree.walk():
            if not isinstance(node, exp.Func):
                continue
            if isinstance(node, exp.Anonymous):
                name: str | None = node.name.lower()
            else:
                name = _class_denied(type(node))
                written = node.meta_get(WRITTEN_NAME)
                if name is None and isinstance(written, str):
                    name = written.lower()
            if name in SPARK_DENIED:
                raise undefined_function(name, ["unknown"] * len(call_arguments(node)))
    lowered = spark_sql.lower()
    if not any(name in lowered for name in SPARK_DENIED):
        return
    tokens = _spark_tokens(spark_sql)
    for k in range(len(tokens) - 1):
        tok = tokens[k]
        if tokens[k + 1].token_type == TokenType.L_PAREN and tok.token_type not in _STRING_TOKENS \
                and tok.text.lower() in SPARK_DENIED \
                and not (k and tokens[k - 1].token_type == TokenType.ALIAS):  # AS name(cols): an alias
            raise undefined_function(tok.text.lower(), [])
