"""PostgreSQL's type system as tidegate uses it: OIDs, names, typmods and their Arrow form.

This is the shared vocabulary of the three layers: the catalog stores a column's
:class:`ColumnType`, the engine maps it to Arrow/Spark/Delta, the gateway encodes Arrow columns
on the wire by ``PgType.oid``. Nothing here knows Spark or the wire format.

Storage form (Arrow, and so Delta/Parquet) of each type:

============  ==============================  =============================================
PostgreSQL    Arrow                            note
============  ==============================  =============================================
bool          bool
int2/4/8      int16/int32/int64
float4/8      float32/float64
numeric(p,s)  decimal128(p, s)                 unconstrained numeric: decimal128(38, 18)
text/varchar  string                           char(n) is stored blank-padded
bytea         binary
date          date32
time          time64[us]
timestamp     timestamp[us]
timestamptz   timestamp[us, tz=UTC]
interval      month_day_nano_interval          stored in Delta as its PostgreSQL text form
json/jsonb    string                           validated on write
uuid          string                           canonical lower-case form
T[]           list<T>
============  ==============================  =============================================
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

# Unconstrained numeric is stored with this precision/scale; the text encoder drops trailing
# zeros so that clients see PostgreSQL's output.
UNCONSTRAINED_NUMERIC = (38, 18)


@dataclass(frozen=True)
class PgType:
    oid: int
    name: str  # pg_type.typname
    array_oid: int  # 0 for array types themselves
    typlen: int  # -1 for varlena
    category: str  # pg_type.typcategory
    sql_name: str  # format_type() name without typmod, e.g. "timestamp without time zone"
    element_oid: int = 0  # for array types: the element's oid


_BASE: list[PgType] = [
    PgType(16, "bool", 1000, 1, "B", "boolean"),
    PgType(17, "bytea", 1001, -1, "U", "bytea"),
    PgType(18, "char", 1002, 1, "S", '"char"'),
    PgType(19, "name", 1003, 64, "S", "name"),
    PgType(20, "int8", 1016, 8, "N", "bigint"),
    PgType(21, "int2", 1005, 2, "N", "smallint"),
    PgType(22, "int2vector", 1006, -1, "A", "int2vector"),  # pg_index.indkey etc. (text form "1 2")
    PgType(23, "int4", 1007, 4, "N", "integer"),
    PgType(24, "regproc", 1008, 4, "N", "regproc"),
    PgType(25, "text", 1009, -1, "S", "text"),
    PgType(26, "oid", 1028, 4, "N", "oid"),
    PgType(30, "oidvector", 1013, -1, "A", "oidvector"),  # pg_proc.proargtypes etc. (text form "23 25")
    PgType(114, "json", 199, -1, "U", "json"),
    PgType(700, "float4", 1021, 4, "N", "real"),
    PgType(701, "float8", 1022, 8, "N", "double precision"),
    PgType(705, "unknown", 0, -2, "X", "unknown"),
    PgType(1042, "bpchar", 1014, -1, "S", "character"),
    PgType(1043, "varchar", 1015, -1, "S", "character varying"),
    PgType(1082, "date", 1182, 4, "D", "date"),
    PgType(1083, "time", 1183, 8, "D", "time without time zone"),
    PgType(1114, "timestamp", 1115, 8, "D", "timestamp without time zone"),
    PgType(1184, "timestamptz", 1185, 8, "D", "timestamp with time zone"),
    PgType(1186, "interval", 1187, 16, "T", "interval"),
    PgType(1700, "numeric", 1231, -1, "N", "numeric"),
    PgType(2205, "regclass", 2210, 4, "N", "regclass"),
    PgType(2206, "regtype", 2211, 4, "N", "regtype"),
    PgType(2950, "uuid", 2951, 16, "U", "uuid"),
    PgType(3802, "jsonb", 3807, -1, "U", "jsonb"),
    PgType(2249, "record", 2287, -1, "P", "record"),
    PgType(2278, "void", 0, 4, "P", "void"),
]

TYPES_BY_OID: dict[int, PgType] = {}
TYPES_BY_NAME: dict[str, PgType] = {}
for _t in _BASE:
    TYPES_BY_OID[_t.oid] = _t
    TYPES_BY_NAME[_t.name] = _t
    if _t.array_oid:
        _arr = PgType(_t.array_oid, "_" + _t.name, 0, -1, "A", _t.sql_name + "[]", element_oid=_t.oid)
        TYPES_BY_OID[_arr.oid] = _arr
        TYPES_BY_NAME[_arr.name] = _arr

BOOL = TYPES_BY_NAME["bool"]
BYTEA = TYPES_BY_NAME["bytea"]
INT2 = TYPES_BY_NAME["int2"]
INT4 = TYPES_BY_NAME["int4"]
INT8 = TYPES_BY_NAME["int8"]
FLOAT4 = TYPES_BY_NAME["float4"]
FLOAT8 = TYPES_BY_NAME["float8"]
NUMERIC = TYPES_BY_NAME["numeric"]
TEXT = TYPES_BY_NAME["text"]
VARCHAR = TYPES_BY_NAME["varchar"]
BPCHAR = TYPES_BY_NAME["bpchar"]
NAME = TYPES_BY_NAME["name"]
OID = TYPES_BY_NAME["oid"]
DATE = TYPES_BY_NAME["date"]
TIME = TYPES_BY_NAME["time"]
TIMESTAMP = TYPES_BY_NAME["timestamp"]
TIMESTAMPTZ = TYPES_BY_NAME["timestamptz"]
INTERVAL = TYPES_BY_NAME["interval"]
JSON = TYPES_BY_NAME["json"]
JSONB = TYPES_BY_NAME["jsonb"]
UUID = TYPES_BY_NAME["uuid"]
UNKNOWN = TYPES_BY_NAME["unknown"]

# SQL spellings -> canonical typname. Lower-case, single-spaced.
_ALIASES: dict[str, str] = {
    "boolean": "bool", "bool": "bool",
    "smallint": "int2", "int2": "int2", "smallserial": "int2",
    "integer": "int4", "int": "int4", "int4": "int4", "serial": "int4",
    "bigint": "int8", "int8": "int8", "bigserial": "int8",
    "real": "float4", "float4": "float4",
    "double precision": "float8", "float8": "float8", "double": "float8", "float": "float8",
    "numeric": "numeric", "decimal": "numeric",
    "text": "text", "string": "text",
    "varchar": "varchar", "character varying": "varchar",
    "char": "bpchar", "character": "bpchar", "bpchar": "bpchar",
    "bytea": "bytea",
    "date": "date",
    "time": "time", "time without time zone": "time",
    "timestamp": "timestamp", "timestamp without time zone": "timestamp", "datetime": "timestamp",
    "timestamptz": "timestamptz", "timestamp with time zone": "timestamptz",
    "interval": "interval",
    "json": "json", "jsonb": "jsonb",
    "uuid": "uuid",
    "name": "name", "oid": "oid",
}


def lookup_type_name(sql_name: str) -> PgType | None:
    """Resolve a SQL type spelling (``double precision``, ``int``, ``_int4``) to a PgType."""
    key = " ".join(sql_name.lower().split())
    canonical = _ALIASES.get(key, key)
    return TYPES_BY_NAME.get(canonical)


@dataclass(frozen=True)
class ColumnType:
    """A column's declared type: a PgType plus PostgreSQL's typmod-carried parameters.

    ``length`` is n of varchar(n)/char(n); ``precision``/``scale`` belong to numeric;
    ``precision`` alone is the fractional-seconds precision of time/timestamp types.
    For arrays ``pg`` is the array type and the parameters describe the element.
    """

    pg: PgType
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    # A numeric division/avg result: PostgreSQL picks its display scale per value (select_div_scale,
    # at least 16 significant digits) and never below this, the operands' larger display scale.
    div_min_scale: int | None = None
    # A numeric result the wire codec recomputes from its exact operands (pgvalues.numeric_exact):
    # the column's Arrow values are a struct of the engine's value ``q`` (NULL-ness, and the text
    # when the exact value cannot be had) and the operands ``a`` [and ``b``], whose display scales
    # are ``op_scales`` (-1: each value's own, for an unconstrained numeric).
    exact_op: str | None = None
    op_scales: tuple[int, int] = (0, 0)

    @property
    def is_array(self) -> bool:
        return self.pg.element_oid != 0

    @property
    def element(self) -> ColumnType:
        if not self.is_array:
            raise ValueError(f"{self.sql()} is not an array type")
        return ColumnType(TYPES_BY_OID[self.pg.element_oid], self.length, self.precision, self.scale)

    def array_of(self) -> ColumnType:
        return ColumnType(TYPES_BY_OID[self.pg.array_oid], self.length, self.precision, self.scale)

    @property
    def typmod(self) -> int:
        """pg_attribute.atttypmod as PostgreSQL computes it (-1 when unconstrained)."""
        base = self.element.pg if self.is_array else self.pg
        if base.name in ("varchar", "bpchar") and self.length is not None:
            return self.length + 4
        if base.name == "numeric" and self.precision is not None:
            return ((self.precision << 16) | (self.scale or 0)) + 4
        if base.name in ("time", "timestamp", "timestamptz", "interval") and self.precision is not None:
            return self.precision
        return -1

    def sql(self) -> str:
        """The type as format_type() prints it, e.g. ``character varying(20)``."""
        base = self.element if self.is_array else self
        name = base.pg.sql_name
        suffix = "[]" if self.is_array else ""
        if base.pg.name in ("varchar", "bpchar") and base.length is not None:
            return f"{name}({base.length}){suffix}"
        if base.pg.name == "numeric" and base.precision is not None:
            return f"numeric({base.precision},{base.scale or 0}){suffix}"
        if base.pg.name in ("time", "timestamp", "timestamptz") and base.precision is not None:
            head, _, tail = name.partition(" ")
            return f"{head}({base.precision}){' ' + tail if tail else ''}{suffix}"
        return name + suffix

    def arrow(self) -> pa.DataType:
        """The Arrow type values of this column are carried in (see the module table)."""
        if self.is_array:
            return pa.list_(self.element.arrow())
        name = self.pg.name
        if name == "numeric":
            p, s = (self.precision, self.scale or 0) if self.precision is not None else UNCONSTRAINED_NUMERIC
            return pa.decimal128(p, s)
        return _ARROW_BY_NAME[name]


_ARROW_BY_NAME: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int2": pa.int16(),
    "int4": pa.int32(),
    "int8": pa.int64(),
    "oid": pa.int64(),
    "float4": pa.float32(),
    "float8": pa.float64(),
    "text": pa.string(),
    "varchar": pa.string(),
    "bpchar": pa.string(),
    "name": pa.string(),
    "char": pa.string(),
    "bytea": pa.binary(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "interval": pa.month_day_nano_interval(),
    "json": pa.string(),
    "jsonb": pa.string(),
    "uuid": pa.string(),
    "unknown": pa.string(),
    "regclass": pa.int64(),
    "regtype": pa.int64(),
    "regproc": pa.int64(),
    "int2vector": pa.string(),
    "oidvector": pa.string(),
}


def column_type(sql_name: str, *params: int) -> ColumnType:
    """Build a ColumnType from a SQL spelling and its parameters, e.g. ("numeric", 10, 2)."""
    name = sql_name.strip()
    is_array = name.endswith("[]")
    if is_array:
        name = name[:-2]
    pg = lookup_type_name(name)
    if pg is None:
        from tidegate.errors import SqlError

        raise SqlError("42704", f'type "{sql_name}" does not exist')
    if pg.name in ("varchar", "bpchar"):
        length = params[0] if params else (1 if pg.name == "bpchar" and name.lower() in ("char", "character") else None)
        ct = ColumnType(pg, length=length)
    elif pg.name == "numeric":
        ct = ColumnType(pg, precision=params[0] if params else None, scale=params[1] if len(params) > 1 else (0 if params else None))
    elif pg.name in ("time", "timestamp", "timestamptz", "interval"):
        ct = ColumnType(pg, precision=params[0] if params else None)
    else:
        ct = ColumnType(pg)
    return ct.array_of() if is_array else ct


def pg_type_for_arrow(t: pa.DataType) -> ColumnType:
    """The PostgreSQL type a result column of Arrow type ``t`` is sent as, absent better knowledge."""
    if pa.types.is_boolean(t):
        return ColumnType(BOOL)
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t):
        return ColumnType(INT2)
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return ColumnType(INT4)
    if pa.types.is_integer(t):
        return ColumnType(INT8)
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return ColumnType(FLOAT4)
    if pa.types.is_floating(t):
        return ColumnType(FLOAT8)
    if pa.types.is_decimal(t):
        return ColumnType(NUMERIC)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return ColumnType(TEXT)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return ColumnType(BYTEA)
    if pa.types.is_date(t):
        return ColumnType(DATE)
    if pa.types.is_time(t):
        return ColumnType(TIME)
    if pa.types.is_timestamp(t):
        return ColumnType(TIMESTAMPTZ if t.tz else TIMESTAMP)
    if pa.types.is_interval(t) or pa.types.is_duration(t):
        return ColumnType(INTERVAL)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return pg_type_for_arrow(t.value_type).array_of()
    if pa.types.is_null(t):
        return ColumnType(TEXT)
    if pa.types.is_struct(t):  # a row value: (a, b), ROW(a, b)
        return ColumnType(TYPES_BY_NAME["record"])
    return ColumnType(TEXT)
