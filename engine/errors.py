"""Spark exceptions -> PostgreSQL errors (SQLSTATE + the message PostgreSQL would print).

Spark's error classes are stable identifiers (``getCondition()``); the message parameters carry
the pieces PostgreSQL puts into its own wording, so clients and tools that match on SQLSTATE or
message text behave as they would against PostgreSQL.
"""

from __future__ import annotations

import re

from tidegate import pgvalues
from tidegate.errors import SqlError

# Spark type names (as they appear in error parameters) -> PostgreSQL type names in messages.
_PG_TYPE_NAMES: dict[str, str] = {
    "INT": "integer",
    "BIGINT": "bigint",
    "SMALLINT": "smallint",
    "TINYINT": "smallint",
    "DOUBLE": "double precision",
    "FLOAT": "real",
    "BOOLEAN": "boolean",
    "DATE": "date",
    "TIMESTAMP": "timestamp with time zone",
    "TIMESTAMP_NTZ": "timestamp without time zone",
    "STRING": "text",
    "BINARY": "bytea",
}

_OUT_OF_RANGE: dict[str, str] = {
    "INT": "integer out of range",
    "BIGINT": "bigint out of range",
    "SMALLINT": "smallint out of range",
    "TINYINT": "smallint out of range",
}


def pg_type_name(spark_type: str) -> str:
    """PostgreSQL's name for a Spark SQL type as printed in Spark error parameters."""
    name = spark_type.strip().strip('"').upper()
    if name.startswith("DECIMAL") or name.startswith("NUMERIC"):
        return "numeric"
    if name.startswith("VARCHAR") or name.startswith("CHAR"):
        return "character varying"
    if name.startswith("INTERVAL"):
        return "interval"
    if name.startswith("ARRAY"):
        return "array"
    return _PG_TYPE_NAMES.get(name, name.lower())


def _unquote(text: str) -> str:
    """Spark quotes identifiers with backticks and values with single quotes."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        text = text[1:-1]
    return text


def _identifier_path(text: str) -> list[str]:
    return [part.replace("``", "`") for part in re.findall(r"`((?:[^`]|``)*)`", text)] or [
        p for p in text.split(".") if p
    ]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    # py4j wraps JVM exceptions: "An error occurred while calling o12.x.\n: org...Exception: msg"
    wrapped = re.search(r"(?m)^: ?[\w.$]+(?:Exception|Error): (.+)$", text)
    if wrapped:
        text = wrapped.group(1)
    line = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"\s*SQLSTATE: \w+.*$", "", line).strip()


def _condition(exc: BaseException) -> str | None:
    for getter in ("getCondition", "getErrorClass"):
        fn = getattr(exc, getter, None)
        if fn is None:
            continue
        try:
            value = fn()
        except Exception:  # noqa: BLE001 - py4j can fail on a dead JVM; fall back to the text
            value = None
        if value:
            return str(value)
    match = re.search(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]", str(exc))
    return match.group(1) if match else None


# Conditions that only wrap the error that made a task fail (a Delta write's task reports an
# expression's division by zero as TASK_WRITE_FAILED): the cause is the error to report.
_WRAPPING = {"TASK_WRITE_FAILED"}


# Delta Lake's conflicts besides DELTA_CONCURRENT_* (a concurrent metadata or protocol change).
_DELTA_CONFLICTS = {"DELTA_METADATA_CHANGED", "DELTA_PROTOCOL_CHANGED"}


def _java_cause(exc: BaseException) -> BaseException | None:
    """The first cause of ``exc``'s Java exception that is not a wrapping condition, as PySpark's
    exception for it; None when there is none (or the JVM cannot be asked)."""
    try:
        from pyspark.errors.exceptions.captured import _convert_exception

        # PySpark's exception keeps the Java one as _origin, py4j's (a DataFrameWriter call) as java_exception
        cause = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
        for _ in range(16):
            cause = cause.getCause() if cause is not None else None
            if cause is None:
                return None
            converted = _convert_exception(cause)
            if (_condition(converted) or "").split(".")[0] not in _WRAPPING:
                return converted
    except Exception:  # noqa: BLE001 - the wrapper's own message is reported then
        return None
    return None


def _params(exc: BaseException) -> dict[str, str]:
    fn = getattr(exc, "getMessageParameters", None)
    if fn is None:
        return {}
    try:
        return dict(fn() or {})
    except Exception:  # noqa: BLE001
        return {}


def _fragment(exc: BaseException) -> str | None:
    """The text of the Spark SQL expression an error happened in (its query context)."""
    fn = getattr(exc, "getQueryContext", None)
    if fn is not None:
        try:
            contexts = fn() or []
            if contexts and contexts[0].fragment():
                return str(contexts[0].fragment())
        except Exception:  # noqa: BLE001 - py4j: fall back to the printed context
            pass
    # "== SQL (line 1, position 8) ==" then the line and carets under the fragment
    m = re.search(r"== SQL \(line \d+, position \d+\) ==\n([^\n]*)\n( *)(\^+)", str(exc))
    return m.group(1)[len(m.group(2)):len(m.group(2)) + len(m.group(3))] if m else None


def _overflowed_type(exc: BaseException, integer_ops: dict[str, str]) -> str | None:
    """PostgreSQL's word for the integer type an overflow happened in: the operation Spark names
    (its query context), else the one type all the statement's integer operations have."""
    word = integer_ops.get(_fragment(exc) or "")
    if word is None and len(set(integer_ops.values())) == 1:
        word = next(iter(integer_ops.values()))
    return word


def _overflow_message(text: str) -> str:
    """Which integer type overflowed, from Spark's wording (``300S * 300S``, ``long overflow``)."""
    lowered = text.lower()
    if "decimal" in lowered:
        return "numeric field overflow"
    if re.search(r"\d+L\b", text) or "long" in lowered or "bigint" in lowered:
        return "bigint out of range"
    if re.search(r"\d+S\b", text) or "short" in lowered or "smallint" in lowered:
        return "smallint out of range"
    return "integer out of range"


def _is_cancellation(text: str) -> bool:
    lowered = text.lower()
    return (
        "cancelled" in lowered or "canceled" in lowered or "operation_canceled" in lowered
    ) and ("job" in lowered or "stage" in lowered or "operation" in lowered or "query" in lowered)


RAISED_QUOTE = "\u00a8"  # stands for " inside a message the translator raises


def map_spark_error(exc: BaseException, sql: str | None = None,
                    integer_ops: dict[str, str] | None = None) -> SqlError:
    """Turn an exception raised by Spark (or py4j around it) into a PostgreSQL-style SqlError.

    ``sql`` is the statement text Spark ran; it is used for nothing but positions today and
    may be ``None``. ``integer_ops``: the statement's integer operations by their Spark SQL text
    (engine.translate.TranslatedQuery.integer_ops), which name the type an overflow overflowed.
    """
    if isinstance(exc, SqlError):
        return exc
    condition = _condition(exc) or ""
    base = condition.split(".")[0]
    if base in _WRAPPING:
        cause = _java_cause(exc)
        if cause is not None:
            return map_spark_error(cause, sql, integer_ops)
    params = _params(exc)
    text = str(exc)

    if condition.startswith("INVALID_PARAMETER_VALUE.PATTERN") or "PatternSyntaxException" in text:
        m = re.search(r"PatternSyntaxException: ([^\n]+)", text)
        detail = m.group(1).strip() if m else params.get("parameter", "bad pattern")
        return SqlError("2201B", f"invalid regular expression: {detail}")
    if base in ("DIVIDE_BY_ZERO", "REMAINDER_BY_ZERO", "INTERVAL_DIVIDED_BY_ZERO"):
        return SqlError("22012", "division by zero")
    if base == "CAST_INVALID_INPUT":
        value = _unquote(params.get("expression", ""))
        target = params.get("targetType", "")
        if not target:
            # parameters are not always reachable through py4j: read Spark's wording
            m = re.search(r"The value (.+?) of the type \S+ cannot be cast to \"?([A-Za-z_0-9(), ]+?)\"? because", text)
            if m:
                value, target = _unquote(m.group(1)), m.group(2)
        pg = pg_type_name(target)
        if pg == "timestamp without time zone":
            pg = "timestamp"  # PostgreSQL's wording for input errors of type timestamp
        # PostgreSQL reports bad date/time text as invalid_datetime_format.
        if pg in ("date", "timestamp", "timestamp with time zone"):
            return pgvalues.datetime_input_error(value, pg)
        state = "22007" if pg == "time" else "22P02"
        return SqlError(state, f'invalid input syntax for type {pg}: "{value}"')
    if base == "CAST_OVERFLOW" or base == "CAST_OVERFLOW_IN_TABLE_INSERT":
        target = params.get("targetType", "").strip('"').upper()
        if not target:  # parameters are not always reachable through py4j: read Spark's wording
            m = re.search(r'cannot be cast to "?([A-Za-z_0-9(), ]+?)"? due to an overflow', text)
            target = m.group(1).upper() if m else ""
        message = _OUT_OF_RANGE.get(target) or (
            "numeric field overflow" if target.startswith("DECIMAL") else f"{pg_type_name(target)} out of range"
        )
        return SqlError("22003", message)
    if base in ("BINARY_ARITHMETIC_OVERFLOW", "ARITHMETIC_OVERFLOW"):
        word = _overflowed_type(exc, integer_ops or {})
        if word is not None:
            return SqlError("22003", f"{word} out of range")
    if base == "BINARY_ARITHMETIC_OVERFLOW":
        values = f"{params.get('value1', '')} {params.get('value2', '')}"
        return SqlError("22003", _overflow_message(values if values.strip() else _first_line(exc)))
    if base == "ARITHMETIC_OVERFLOW":
        wording = params.get("message", "") + " " + params.get("alternative", "")
        return SqlError("22003", _overflow_message(wording if wording.strip() else _first_line(exc)))
    if base in ("NUMERIC_VALUE_OUT_OF_RANGE", "NUMERIC_OUT_OF_SUPPORTED_RANGE", "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION"):
        return SqlError("22003", "numeric field overflow")
    if base == "CANNOT_PARSE_TIMESTAMP" or "CANNOT_PARSE_TIMESTAMP" in text:
        m = re.search(r"Text '([^']*)' could not be parsed", text)
        value = m.group(1) if m else ""
        if re.search(r"Invalid value for \w+|Invalid date", text):
            return SqlError("22008", f'date/time field value out of range: "{value}"')
        return SqlError("22007", f'invalid value "{value}" for the date/time format',
                        hint="The text must match the template given to to_date / to_timestamp.")
    if "INVALID_TIMEZONE" in text or base == "INVALID_TIMEZONE":
        m = re.search(r"The timezone: (.+?) is invalid", text)
        return SqlError("22023", f'time zone "{m.group(1) if m else "?"}" not recognized')
    if base == "INVALID_LIMIT_LIKE_EXPRESSION" or "INVALID_LIMIT_LIKE_EXPRESSION" in text:
        if re.search(r"\boffset\b", _first_line(exc), re.I):
            return SqlError("2201X", "OFFSET must not be negative")
        return SqlError("2201W", "LIMIT must not be negative")
    if "Illegal sequence boundaries" in text and re.search(r"by 0\b", text):
        return SqlError("22023", "step size cannot equal zero")
    if condition.startswith("DATATYPE_MISMATCH.CAST_"):
        src = pg_type_name(_unquote(params.get("srcType", "")).strip('"')) if params.get("srcType") else None
        dst = pg_type_name(_unquote(params.get("targetType", "")).strip('"')) if params.get("targetType") else None
        if src is None or dst is None:
            m = re.search(r'cannot cast "?([A-Za-z_0-9(), <>]+?)"? to "?([A-Za-z_0-9(), <>]+?)"?[ .]', text, re.I)
            if m:
                src, dst = pg_type_name(m.group(1)), pg_type_name(m.group(2))
        if src and dst:
            return SqlError("42846", f"cannot cast type {src} to {dst}")
        return SqlError("42846", "cannot cast between these types",
                        hint="Cast through text, or use a function that converts the value.")
    if base in ("DATETIME_OVERFLOW", "DATETIME_FIELD_OUT_OF_BOUNDS"):
        return SqlError("22008", "date/time field value out of range")
    if base in ("INVALID_ARRAY_INDEX", "INVALID_ARRAY_INDEX_IN_ELEMENT_AT"):
        return SqlError("2202E", "array subscript out of range")
    if base == "UNRESOLVED_COLUMN" or base == "UNRESOLVED_FIELD":
        path = _identifier_path(params.get("objectName", params.get("fieldName", "")))
        if len(path) > 1:
            return SqlError("42703", f"column {'.'.join(path[-2:])} does not exist")
        return SqlError("42703", f'column "{path[-1] if path else "?"}" does not exist')
    if base in ("TABLE_OR_VIEW_NOT_FOUND", "VIEW_NOT_FOUND", "TABLE_NOT_FOUND"):
        path = _identifier_path(params.get("relationName", ""))
        return SqlError("42P01", f'relation "{path[-1] if path else "?"}" does not exist')
    if base == "UNRESOLVED_ROUTINE":
        path = _identifier_path(params.get("routineName", ""))
        name = path[-1] if path else "?"
        return SqlError(
            "42883",
            f"function {name} does not exist",
            hint="No function matches the given name and argument types. "
            "You might need to add explicit type casts.",
        )
    if base == "AMBIGUOUS_REFERENCE":
        path = _identifier_path(params.get("name", ""))
        return SqlError("42702", f'column reference "{path[-1] if path else "?"}" is ambiguous')
    if base in ("MISSING_AGGREGATION", "MISSING_GROUP_BY"):
        expr = _unquote(params.get("expression", "")).strip('"')
        return SqlError(
            "42803", f'column "{expr}" must appear in the GROUP BY clause or be used in an aggregate function'
        )
    if base == "FAILED_TO_PARSE_TOO_COMPLEX" or "StackOverflowError" in text:
        return SqlError("54001", "stack depth limit exceeded",
                        hint="Write the statement with fewer nested levels.")
    if base in ("PARSE_SYNTAX_ERROR", "PARSE_EMPTY_STATEMENT"):
        token = _unquote(params.get("error", "")) or "end of input"
        return SqlError("42601", f'syntax error at or near "{token}"')
    if condition == "DATATYPE_MISMATCH.IN_SUBQUERY_LENGTH_MISMATCH":
        return SqlError("42601", "subquery has too many columns")
    if base == "SCALAR_SUBQUERY_TOO_MANY_ROWS":
        return SqlError("21000", "more than one row returned by a subquery used as an expression")
    if base == "NUM_COLUMNS_MISMATCH":
        return SqlError("42601", "each UNION query must have the same number of columns")
    if base == "DATATYPE_MISMATCH" or base == "INCOMPATIBLE_COLUMN_TYPE" or base == "CANNOT_UP_CAST_DATATYPE":
        return SqlError("42804", _first_line(exc))
    if condition == "INVALID_INLINE_TABLE.INCOMPATIBLE_TYPES_IN_INLINE_TABLE":
        column = _unquote(params.get("colName", "")) or "a column"
        return SqlError("42804", f"VALUES types in {column} cannot be matched",
                        hint="Cast the values of that column to one type.")
    if base == "USER_RAISED_EXCEPTION" or "tidegate-sqlstate:" in text:
        m = re.search(r"tidegate-sqlstate:([0-9A-Z]{5}):(.+?)(?:\s+SQLSTATE:|[\n\"']|$)", text)
        if m:  # a check the translator wrote (sqrt of a negative number...): PostgreSQL's error
            # a raised message spells its double quotes as RAISED_QUOTE (a quote would end it here)
            return SqlError(m.group(1), m.group(2).strip().replace(RAISED_QUOTE, '"'))
        return SqlError("P0001", params.get("errorMessage", _first_line(exc)))
    if base == "AGGREGATE_FUNCTION_WITH_NONDETERMINISTIC_EXPRESSION":
        return SqlError("0A000", "a volatile function (random(), clock_timestamp() ...) inside an aggregate's "
                        "argument is not supported",
                        hint="Compute the value in a subquery and aggregate its column: "
                             "SELECT count(DISTINCT r) FROM (SELECT random() AS r FROM t) s.")
    if base.startswith("UNSUPPORTED") or base == "NOT_SUPPORTED_COMMAND_WITHOUT_HIVE_SUPPORT":
        return SqlError("0A000", _first_line(exc))
    if base.startswith("DELTA_CONCURRENT") or base in _DELTA_CONFLICTS:
        # Delta's optimistic concurrency: a commit since this statement read the table touched
        # what it read or rewrote. The statement changed nothing; READ COMMITTED runs it again.
        return SqlError("40001", "could not serialize access due to concurrent update")
    if base == "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE":
        return SqlError("21000", "MERGE command cannot affect row a second time",
                        hint="Ensure that not more than one source row matches any one target row.")
    if "spark.driver.maxResultSize" in text:
        return SqlError("54000", "the result is too large to collect into the gateway "
                        "(spark.driver.maxResultSize)",
                        hint="A write of a large result: SET tidegate.spark_writes = auto (or on) writes it "
                             "on Spark. A query: fetch it with a cursor or through a job, or raise "
                             "spark.driver.maxResultSize.")
    if base == "OPERATION_CANCELED" or _is_cancellation(text):
        return SqlError("57014", "canceling statement due to user request")
    if "java.lang.ArithmeticException" in text:  # an exact-arithmetic overflow inside generated code
        return SqlError("22003", _overflow_message(text[text.index("java.lang.ArithmeticException"):]))
    return SqlError("XX000", _first_line(exc))
