"""The one error type every layer raises; the gateway turns it into an ErrorResponse.

Catalog, engine and gateway code raise :class:`SqlError` with a PostgreSQL SQLSTATE. Anything
else that escapes a statement is reported as XX000 (internal_error) by the gateway.
"""

from __future__ import annotations

# SQLSTATE -> PostgreSQL condition name (Appendix A of the PostgreSQL manual), for the codes
# tidegate raises. The sqlness runner prints these names next to the code.
CONDITION_NAMES: dict[str, str] = {
    "0A000": "feature_not_supported",
    "08P01": "protocol_violation",
    "08006": "connection_failure",
    "21000": "cardinality_violation",
    "22001": "string_data_right_truncation",
    "22003": "numeric_value_out_of_range",
    "22007": "invalid_datetime_format",
    "22008": "datetime_field_overflow",
    "22012": "division_by_zero",
    "22023": "invalid_parameter_value",
    "22P02": "invalid_text_representation",
    "22P03": "invalid_binary_representation",
    "22021": "character_not_in_repertoire",
    "2202E": "array_subscript_error",
    "42701": "duplicate_column",
    "42939": "reserved_name",
    "22P04": "bad_copy_file_format",
    "23502": "not_null_violation",
    "23505": "unique_violation",
    "25001": "active_sql_transaction",
    "25P01": "no_active_sql_transaction",
    "25P02": "in_failed_sql_transaction",
    "25006": "read_only_sql_transaction",
    "28000": "invalid_authorization_specification",
    "28P01": "invalid_password",
    "2BP01": "dependent_objects_still_exist",
    "26000": "invalid_sql_statement_name",
    "34000": "invalid_cursor_name",
    "3D000": "invalid_catalog_name",
    "3F000": "invalid_schema_name",
    "42601": "syntax_error",
    "42501": "insufficient_privilege",
    "42703": "undefined_column",
    "42704": "undefined_object",
    "42710": "duplicate_object",
    "42712": "duplicate_alias",
    "42723": "duplicate_function",
    "42725": "ambiguous_function",
    "42702": "ambiguous_column",
    "42803": "grouping_error",
    "42804": "datatype_mismatch",
    "42809": "wrong_object_type",
    "42830": "invalid_foreign_key",
    "42846": "cannot_coerce",
    "42883": "undefined_function",
    "42P01": "undefined_table",
    "42P02": "undefined_parameter",
    "42P03": "duplicate_cursor",
    "42P04": "duplicate_database",
    "42P05": "duplicate_prepared_statement",
    "42P06": "duplicate_schema",
    "42P07": "duplicate_table",
    "42P10": "invalid_column_reference",
    "42P16": "invalid_table_definition",
    "42P18": "indeterminate_datatype",
    "53300": "too_many_connections",
    "54000": "program_limit_exceeded",
    "55000": "object_not_in_prerequisite_state",
    "55006": "object_in_use",
    "57014": "query_canceled",
    "57P01": "admin_shutdown",
    "57P03": "cannot_connect_now",
    "XX000": "internal_error",
}


class SqlError(Exception):
    """A statement failure with the fields of a PostgreSQL ErrorResponse.

    ``position`` is 1-based, in characters of the statement text as the client sent it
    (PostgreSQL's convention); ``None`` when it does not apply.
    """

    def __init__(
        self,
        sqlstate: str,
        message: str,
        *,
        detail: str | None = None,
        hint: str | None = None,
        position: int | None = None,
        severity: str = "ERROR",
    ) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message
        self.detail = detail
        self.hint = hint
        self.position = position
        self.severity = severity

    @property
    def condition_name(self) -> str:
        return CONDITION_NAMES.get(self.sqlstate, "unknown")

    def __repr__(self) -> str:
        return f"SqlError({self.sqlstate!r}, {self.message!r})"


def syntax_error(message: str, position: int | None = None) -> SqlError:
    return SqlError("42601", message, position=position)


def undefined_table(name: str) -> SqlError:
    return SqlError("42P01", f'relation "{name}" does not exist')


def not_supported(what: str) -> SqlError:
    return SqlError("0A000", f"{what} is not supported")


def internal(message: str) -> SqlError:
    return SqlError("XX000", message)
