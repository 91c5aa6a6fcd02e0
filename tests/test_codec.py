"""Wire codecs against a real PostgreSQL 15: text/binary result encoding, parameter decoding, COPY.

PostgreSQL (tests/pgoracle.py) is the oracle: every expected byte string below comes from it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import struct
import uuid

import numpy as np
import psycopg
import pyarrow as pa
import pytest

from gateway.codec import (
    Interval,
    assemble_rows,
    decode_param,
    parse_text_value,
    encode_binary_column,
    encode_data_rows,
    encode_text_column,
    format_interval,
)
from gateway.copyfmt import CopyDecoder, CopyEncoder
from tidegate.errors import SqlError
from tidegate.pgtypes import column_type
from tidegate.results import ResultField

D = decimal.Decimal


@pytest.fixture(scope="module")
def pg(pg_oracle):
    """A connection to the run's PostgreSQL oracle (conftest starts one server per run)."""
    conn = psycopg.connect(pg_oracle.dsn, autocommit=True)
    yield conn
    conn.close()


def pg_text(conn: psycopg.Connection, exprs: list[str]) -> list[str | None]:
    """PostgreSQL's text output (the type's output function, as sent on the wire) of each expression."""
    res = conn.pgconn.exec_(("SELECT " + ", ".join(exprs)).encode())
    assert res.status == psycopg.pq.ExecStatus.TUPLES_OK, res.error_message
    out = []
    for i in range(res.nfields):
        v = res.get_value(0, i)
        out.append(None if v is None else bytes(v).decode())
    return out


def pg_copy_out(conn: psycopg.Connection, query: str, options: str) -> bytes:
    out = bytearray()
    with conn.cursor().copy(f"COPY ({query}) TO STDOUT {options}") as cp:
        for chunk in cp:
            out += chunk
    return bytes(out)


def parse_pgcopy(data: bytes) -> list[list[bytes | None]]:
    """Fields of a binary COPY stream (header, tuples, trailer) -- PostgreSQL's send() bytes."""
    assert data[:11] == b"PGCOPY\n\xff\r\n\x00"
    (ext,) = struct.unpack_from(">i", data, 15)
    pos = 19 + ext
    rows = []
    while True:
        (n,) = struct.unpack_from(">h", data, pos)
        pos += 2
        if n == -1:
            break
        row = []
        for _ in range(n):
            (ln,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if ln < 0:
                row.append(None)
            else:
                row.append(data[pos:pos + ln])
                pos += ln
        rows.append(row)
    assert pos == len(data)
    return rows


def pg_binary(conn: psycopg.Connection, exprs: list[str]) -> list[bytes | None]:
    """PostgreSQL's binary (send) form of each expression, via COPY BINARY."""
    query = "SELECT " + ", ".join(exprs)
    return parse_pgcopy(pg_copy_out(conn, query, "(FORMAT binary)"))[0]


def lit(v: str) -> str:
    return "'" + v.replace("'", "''") + "'"


# ------------------------------------------------------------------------------------------------
# text output vs PostgreSQL

FLOAT8_VALUES = [1.5, 1e20, 0.1, 1e15, 1e14, 123456789012345.6, 1e-4, 1e-5, math.inf, -math.inf, math.nan,
                 -0.0, 0.0, 1.0, 100.0, 1.2345678901234567e-7, 5e-324, 1.7976931348623157e308, -123.456,
                 1e16, 999999999999999.9, 2.0 / 3, -1e-300, 12345.678]


def test_float8_text_matches_postgres(pg):
    mine = encode_text_column(pa.array(FLOAT8_VALUES + [None]), column_type("float8")).to_pylist()
    exprs = [f"{lit(repr(v) if math.isfinite(v) else ('NaN' if math.isnan(v) else ('Infinity' if v > 0 else '-Infinity')))}::float8"
             for v in FLOAT8_VALUES]
    assert mine == pg_text(pg, exprs) + [None]


def test_float4_text_matches_postgres(pg):
    raw = [1.5, 1e20, 0.1, 1e6, 123456.7, 1e-4, 1e-5, 3.4028235e38, 12345678.0, 999999.0, 100000.0,
           math.nan, 1.17549435e-38, -2.5, 1 / 3]
    vals = np.array(raw, np.float32)
    mine = encode_text_column(pa.array(vals), column_type("float4")).to_pylist()
    exprs = [f"{lit(repr(float(v)) if math.isfinite(v) else 'NaN')}::float8::float4" for v in vals]
    assert mine == pg_text(pg, exprs)


def test_integers_and_bool_text(pg):
    ints = [0, 1, -1, 2**63 - 1, -(2**63), 42]
    assert encode_text_column(pa.array(ints, pa.int64()), column_type("int8")).to_pylist() == \
        pg_text(pg, [f"{v}::int8" if v != -(2**63) else "'-9223372036854775808'::int8" for v in ints])
    # an int32 Arrow column announced as int8, and an int64 column announced as int4
    assert encode_text_column(pa.array([7, None], pa.int32()), column_type("int8")).to_pylist() == ["7", None]
    assert encode_text_column(pa.array([True, False, None]), column_type("bool")).to_pylist() == \
        pg_text(pg, ["true", "false"]) + [None]


NUMERIC_VALUES = ["0", "1.5", "-1.5", "12345678901234567890.123456789012345678", "0.000000000000000001",
                  "-0.0000001", "1e-7", "100", "99999999999999999999", "-12.3400"]


def test_numeric_unconstrained_text(pg):
    arr = pa.array([D(v) for v in NUMERIC_VALUES] + [None], pa.decimal128(38, 18))
    mine = encode_text_column(arr, column_type("numeric")).to_pylist()
    # unconstrained numeric is stored at scale 18; PostgreSQL prints the value's own scale, so
    # compare with the normalized value (trailing zeros dropped) as PostgreSQL would print it.
    exprs = [f"trim_scale({lit(v)}::numeric)" for v in NUMERIC_VALUES]
    assert mine == pg_text(pg, exprs) + [None]


def test_numeric_constrained_text(pg):
    vals = ["0", "1.5", "-1.5", "12345678.12", "-0.01", "0.005"]
    arr = pa.array([D(v).quantize(D("0.01"), rounding=decimal.ROUND_HALF_UP) for v in vals], pa.decimal128(10, 2))
    mine = encode_text_column(arr, column_type("numeric", 10, 2)).to_pylist()
    assert mine == pg_text(pg, [f"{lit(v)}::numeric(10,2)" for v in vals])
    # a wider Arrow decimal announced as numeric(10,2) is rounded half away from zero like PostgreSQL
    wide = pa.array([D("1.005"), D("-1.005"), D("2.004")], pa.decimal128(20, 3))
    assert encode_text_column(wide, column_type("numeric", 10, 2)).to_pylist() == \
        pg_text(pg, ["1.005::numeric(10,2)", "(-1.005)::numeric(10,2)", "2.004::numeric(10,2)"])


TS_LITERALS = ["2024-01-01 10:00:00", "2024-02-29 23:59:59.999999", "1999-12-31 00:00:00.5",
               "0001-01-01 00:00:00", "9999-12-31 23:59:59.000001", "0044-03-15 10:00:01.5 BC",
               "12345-06-07 08:09:10", "1970-01-01 00:00:00.12", "infinity", "-infinity"]


def _pg_epoch_us(conn, sqltype: str, literals: list[str]) -> list[int]:
    out = []
    for v in literals:
        if v in ("infinity", "-infinity"):
            out.append(2**63 - 1 if v == "infinity" else -(2**63))
            continue
        (us,) = conn.execute(f"SELECT (extract(epoch from {lit(v)}::{sqltype}) * 1000000)::int8").fetchone()
        out.append(us)
    return out


def test_timestamp_text(pg):
    us = _pg_epoch_us(pg, "timestamp", TS_LITERALS)
    arr = pa.array(us + [None], pa.int64()).cast(pa.timestamp("us"))
    mine = encode_text_column(arr, column_type("timestamp")).to_pylist()
    assert mine == pg_text(pg, [f"{lit(v)}::timestamp" for v in TS_LITERALS]) + [None]
    # other units are accepted (seconds, nanoseconds truncate to microseconds)
    ns = pa.array([1_700_000_000_123_456_789], pa.timestamp("ns"))
    assert encode_text_column(ns, column_type("timestamp")).to_pylist() == ["2023-11-14 22:13:20.123456"]


def test_timestamptz_text_utc_and_other_zones(pg):
    lits = [v + "+00" if "infinity" not in v and "BC" not in v else v for v in TS_LITERALS[:5]] + \
           ["2024-07-01 12:00:00+00", "1900-01-01 10:00:00+00", "0044-03-15 10:00:01.5+00 BC"]
    us = _pg_epoch_us(pg, "timestamptz", lits)
    arr = pa.array(us, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    assert encode_text_column(arr, column_type("timestamptz")).to_pylist() == \
        pg_text(pg, [f"{lit(v)}::timestamptz" for v in lits])
    for zone in ("Asia/Kolkata", "America/New_York", "Europe/Amsterdam"):
        mine = encode_text_column(arr[:-1], column_type("timestamptz"), timezone=zone).to_pylist()
        pg.execute(f"SET timezone = {lit(zone)}")
        try:
            expected = pg_text(pg, [f"{lit(v)}::timestamptz" for v in lits[:-1]])
        finally:
            pg.execute("SET timezone = 'UTC'")
        assert mine == expected, zone


def test_date_and_time_text(pg):
    dates = ["2024-01-01", "0001-01-01", "9999-12-31", "0044-03-15 BC", "12345-01-01", "1970-01-01"]
    days = [pg.execute(f"SELECT {lit(v)}::date - '1970-01-01'::date").fetchone()[0] for v in dates]
    arr = pa.array(days + [None], pa.int32()).cast(pa.date32())
    assert encode_text_column(arr, column_type("date")).to_pylist() == \
        pg_text(pg, [f"{lit(v)}::date" for v in dates]) + [None]
    times = ["00:00:00", "10:11:12.5", "23:59:59.999999", "01:02:03.000100"]
    us = [int(pg.execute(f"SELECT extract(epoch from {lit(v)}::time) * 1000000").fetchone()[0]) for v in times]
    arr = pa.array(us, pa.int64()).cast(pa.time64("us"))
    assert encode_text_column(arr, column_type("time")).to_pylist() == pg_text(pg, [f"{lit(v)}::time" for v in times])


INTERVALS = [Interval(0, 1, 7384 * 10**6), Interval(0, 0, -10**6), Interval(14, -3, 14706_500_000),
             Interval(-12, 0, 0), Interval(0, 0, 0), Interval(0, -1, -7200 * 10**6), Interval(1, 0, -10**6),
             Interval(0, 0, 90000 * 10**6), Interval(0, 0, -500_000), Interval(-25, 3, 1), Interval(13, 1, 0)]


def test_interval_text(pg):
    arr = pa.array([iv.to_arrow() for iv in INTERVALS] + [None], pa.month_day_nano_interval())
    exprs = [f"make_interval(months => {iv.months}, days => {iv.days}, secs => {iv.microseconds / 1e6!r})"
             for iv in INTERVALS]
    assert encode_text_column(arr, column_type("interval")).to_pylist() == pg_text(pg, exprs) + [None]
    # durations print like timestamp differences (whole days, then time)
    dur = pa.array([90000 * 10**6, -5 * 10**6], pa.duration("us"))
    assert encode_text_column(dur, column_type("interval")).to_pylist() == \
        pg_text(pg, ["'2024-01-02 01:00'::timestamp - '2024-01-01'::timestamp",
                     "'2024-01-01 00:00:00'::timestamp - '2024-01-01 00:00:05'::timestamp"])


def test_bytea_uuid_json_text(pg):
    blobs = [b"\x0a\x0b", b"", b"\x00\xff hello", None]
    assert encode_text_column(pa.array(blobs, pa.binary()), column_type("bytea")).to_pylist() == \
        pg_text(pg, ["'\\x0a0b'::bytea", "''::bytea", "'\\x00ff2068656c6c6f'::bytea"]) + [None]
    u = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
    assert encode_text_column(pa.array([u.bytes], pa.binary(16)), column_type("uuid")).to_pylist() == [str(u)]
    assert encode_text_column(pa.array([str(u)], pa.large_string()), column_type("uuid")).to_pylist() == [str(u)]
    assert encode_text_column(pa.array(['{"a": 1}'], pa.string_view()), column_type("jsonb")).to_pylist() == ['{"a": 1}']


def test_array_text(pg):
    texts = [["a", "b c", 'x"y', "", None, "NULL", "back\\slash", "{}", "null"], [], None, ["plain"]]
    mine = encode_text_column(pa.array(texts, pa.list_(pa.string())), column_type("text[]")).to_pylist()
    exprs = ["ARRAY['a', 'b c', 'x\"y', '', NULL, 'NULL', 'back\\slash', '{}', 'null']::text[]",
             "ARRAY[]::text[]", "NULL::text[]", "ARRAY['plain']"]
    assert mine == pg_text(pg, exprs)
    ints = pa.array([[1, 2, None], [], [-5]], pa.list_(pa.int64()))
    assert encode_text_column(ints, column_type("bigint[]")).to_pylist() == \
        pg_text(pg, ["ARRAY[1,2,NULL]::int8[]", "ARRAY[]::int8[]", "ARRAY[-5]::int8[]"])
    floats = pa.array([[1.5, math.inf, math.nan]], pa.list_(pa.float64()))
    assert encode_text_column(floats, column_type("float8[]")).to_pylist() == \
        pg_text(pg, ["ARRAY[1.5, 'Infinity', 'NaN']::float8[]"])
    ts = pa.array([[dt.datetime(2024, 1, 1, 10, 0)]], pa.list_(pa.timestamp("us")))
    assert encode_text_column(ts, column_type("timestamp[]")).to_pylist() == \
        pg_text(pg, ["ARRAY['2024-01-01 10:00:00'::timestamp]"])
    nested = pa.array([[[1, 2], [3, None]]], pa.list_(pa.list_(pa.int32())))
    assert encode_text_column(nested, column_type("integer[]")).to_pylist() == pg_text(pg, ["ARRAY[[1,2],[3,NULL]]"])
    blobs = pa.array([[b"\x01", None]], pa.list_(pa.binary()))
    assert encode_text_column(blobs, column_type("bytea[]")).to_pylist() == pg_text(pg, ["ARRAY['\\x01'::bytea, NULL]"])
    sliced = pa.array([[1], None, [2, 3], [4]], pa.list_(pa.int64())).slice(1, 2)
    assert encode_text_column(sliced, column_type("bigint[]")).to_pylist() == [None, "{2,3}"]


def test_null_type_and_mismatched_arrow_types():
    assert encode_text_column(pa.nulls(2), column_type("text")).to_pylist() == [None, None]
    # a timestamp column announced as text prints as a timestamp would
    ts = pa.array([dt.datetime(2024, 1, 1, 10, 0, 0, 250000)], pa.timestamp("us"))
    assert encode_text_column(ts, column_type("text")).to_pylist() == ["2024-01-01 10:00:00.25"]
    dict_arr = pa.array(["x", "y", "x"]).dictionary_encode()
    assert encode_text_column(dict_arr, column_type("text")).to_pylist() == ["x", "y", "x"]
    chunked = pa.chunked_array([[1, 2], [3]])
    assert encode_text_column(chunked, column_type("int8")).to_pylist() == ["1", "2", "3"]


# ------------------------------------------------------------------------------------------------
# binary output vs PostgreSQL's send functions


def _bin(arr: pa.Array, type_sql: str, *params: int) -> list[bytes | None]:
    return encode_binary_column(arr, column_type(type_sql, *params)).to_pylist()


def test_binary_scalars_match_postgres(pg):
    cases = [
        (pa.array([True, False, None]), "bool", ["true", "false", "NULL::bool"]),
        (pa.array([1, -2, 32767], pa.int16()), "int2", ["1::int2", "(-2)::int2", "32767::int2"]),
        (pa.array([1, -2, None], pa.int64()), "int4", ["1::int4", "(-2)::int4", "NULL::int4"]),
        (pa.array([2**62, -1], pa.int64()), "int8", [f"{2**62}::int8", "(-1)::int8"]),
        (pa.array([1.5, math.inf, math.nan, -0.0]), "float8",
         ["1.5::float8", "'Infinity'::float8", "'NaN'::float8", "'-0'::float8"]),
        (pa.array([0.1], pa.float32()), "float4", ["0.1::float4"]),
        (pa.array(["héllo", ""], pa.large_string()), "text", ["'héllo'::text", "''::text"]),
        (pa.array(['{"a": 1}']), "jsonb", ["'{\"a\": 1}'::jsonb"]),
        (pa.array(['{"a":1}']), "json", ["'{\"a\":1}'::json"]),
        (pa.array([b"\x00\x01"]), "bytea", ["'\\x0001'::bytea"]),
        (pa.array(["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]), "uuid", ["'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid"]),
        (pa.array([dt.date(2024, 1, 1), dt.date(1999, 1, 1)]), "date", ["'2024-01-01'::date", "'1999-01-01'::date"]),
        (pa.array([dt.time(10, 11, 12, 5)]), "time", ["'10:11:12.000005'::time"]),
        (pa.array([dt.datetime(2024, 1, 1, 10, 0, 0, 1)], pa.timestamp("us")), "timestamp",
         ["'2024-01-01 10:00:00.000001'::timestamp"]),
        (pa.array([dt.datetime(1960, 1, 1, tzinfo=dt.timezone.utc)], pa.timestamp("ms", tz="UTC")), "timestamptz",
         ["'1960-01-01 00:00:00+00'::timestamptz"]),
        (pa.array([Interval(14, -3, 14706_500_000).to_arrow()], pa.month_day_nano_interval()), "interval",
         ["make_interval(months => 14, days => -3, secs => 14706.5)"]),
        (pa.array([[1, None, 3], [], None], pa.list_(pa.int32())), "integer[]",
         ["ARRAY[1,NULL,3]::int4[]", "ARRAY[]::int4[]", "NULL::int4[]"]),
        (pa.array([["a", "b"]], pa.list_(pa.string())), "text[]", ["ARRAY['a','b']::text[]"]),
    ]
    for arr, type_sql, exprs in cases:
        assert _bin(arr, type_sql) == pg_binary(pg, exprs), type_sql


def test_binary_numeric_matches_postgres(pg):
    vals = ["0", "1.5", "-1.5", "12345678901234567890.123456789012345678", "0.000000000000000001",
            "-0.0000001", "10000", "99999999", "0.1", "12345.6789"]
    arr = pa.array([D(v) for v in vals], pa.decimal128(38, 18))
    assert _bin(arr, "numeric") == pg_binary(pg, [f"trim_scale({lit(v)}::numeric)" for v in vals])
    arr = pa.array([D("1.50"), D("-0.05"), D("0.00"), D("12345678.90")], pa.decimal128(10, 2))
    assert _bin(arr, "numeric", 10, 2) == pg_binary(pg, ["1.50::numeric(10,2)", "(-0.05)::numeric(10,2)",
                                                         "0::numeric(10,2)", "12345678.90::numeric(10,2)"])


def test_exact_numeric_results_text_and_binary(pg):
    """A quotient / average / root / logarithm / power column carried with its exact operands (a
    struct of the engine's value q and operands a, b) prints PostgreSQL's value at PostgreSQL's
    per-value scale, in text and binary; a NULL q is NULL, and an operand outside the exact
    rules' domain falls back to q."""
    from tidegate.pgtypes import NUMERIC, ColumnType

    def column(q, a, b, a_type=pa.decimal128(10, 2), b_type=pa.int64()):
        fields = [pa.array(q, pa.float64()), pa.array(a, a_type)]
        if b is not None:
            fields.append(pa.array(b, b_type))
        return pa.StructArray.from_arrays(fields, names=["q", "a", "b"][:len(fields)])

    cases = [
        (column([0.5, 1.0, None, 7.0], [D("1.00"), D("20000.00"), D("1.00"), D("7.00")], [2, 20000, 0, 1]),
         ColumnType(NUMERIC, div_min_scale=2, exact_op="div", op_scales=(2, 0)),
         ["1.00::numeric(10,2) / 2", "20000.00::numeric(10,2) / 20000", "NULL::numeric", "7.00::numeric(10,2) / 1"]),
        (column([3513.6, 0.0], [D("12345678.99"), D("0.00")], None),
         ColumnType(NUMERIC, exact_op="sqrt", op_scales=(2, 0)),
         ["sqrt(12345678.99::numeric(10,2))", "sqrt(0.00::numeric(10,2))"]),
        (column([17.08, 0.0001], [D("1.50"), D("0.01")], [7, 2]),
         ColumnType(NUMERIC, exact_op="power", op_scales=(2, 0)),
         ["power(1.50::numeric(10,2), 7)", "power(0.01::numeric(10,2), 2)"]),
        (pa.StructArray.from_arrays([pa.array([D("2.00"), D("0.50"), None], pa.decimal128(10, 2)),
                                     pa.array([0, 1, 2], pa.int32())], names=["q", "a"]),
         ColumnType(NUMERIC, exact_op="scaled"),  # each value at the scale its row carries
         ["2::numeric", "0.5::numeric", "NULL::numeric"]),
    ]
    for arr, ctype, exprs in cases:
        assert encode_text_column(arr, ctype).to_pylist() == pg_text(pg, exprs), ctype.exact_op
        assert encode_binary_column(arr, ctype).to_pylist() == pg_binary(pg, exprs), ctype.exact_op


def test_binary_infinite_timestamps_and_bc(pg):
    arr = pa.array([2**63 - 1, -(2**63), -62_000_000_000_000_000], pa.int64()).cast(pa.timestamp("us"))
    (bc,) = pg.execute("SELECT (extract(epoch from '0001-06-01 BC'::timestamp)*1000000)::int8").fetchone()
    arr = pa.array([2**63 - 1, -(2**63), bc], pa.int64()).cast(pa.timestamp("us"))
    assert _bin(arr, "timestamp") == pg_binary(pg, ["'infinity'::timestamp", "'-infinity'::timestamp",
                                                    "'0001-06-01 BC'::timestamp"])


# ------------------------------------------------------------------------------------------------
# DataRow assembly


def _parse_datarows(data: bytes) -> list[list[bytes | None]]:
    rows = []
    pos = 0
    while pos < len(data):
        assert data[pos:pos + 1] == b"D"
        (length, ncols) = struct.unpack_from(">ih", data, pos + 1)
        end = pos + 1 + length
        p = pos + 7
        row = []
        for _ in range(ncols):
            (ln,) = struct.unpack_from(">i", data, p)
            p += 4
            if ln < 0:
                row.append(None)
            else:
                row.append(data[p:p + ln])
                p += ln
        assert p == end
        rows.append(row)
        pos = end
    return rows


def test_encode_data_rows_text_and_binary():
    batch = pa.record_batch({
        "id": pa.array([1, 2, None], pa.int64()),
        "name": pa.array(["a", None, "ccc"]),
        "x": pa.array([1.5, None, 1e20]),
        "ts": pa.array([dt.datetime(2024, 1, 1), None, dt.datetime(2024, 1, 1, 0, 0, 1, 500000)],
                       pa.timestamp("us", tz="UTC")),
    })
    fields = [ResultField("id", column_type("int8")), ResultField("name", column_type("text")),
              ResultField("x", column_type("float8")), ResultField("ts", column_type("timestamptz"))]
    rows = _parse_datarows(encode_data_rows(batch, fields, [0, 0, 0, 0]))
    assert rows == [[b"1", b"a", b"1.5", b"2024-01-01 00:00:00+00"], [b"2", None, None, None],
                    [None, b"ccc", b"1e+20", b"2024-01-01 00:00:01.5+00"]]
    rows = _parse_datarows(encode_data_rows(batch, fields, [1, 0, 1, 1]))
    assert rows[0] == [struct.pack(">q", 1), b"a", struct.pack(">d", 1.5), struct.pack(">q", 757382400 * 10**6)]
    assert rows[1] == [struct.pack(">q", 2), None, None, None]
    # a sliced batch (offsets not at zero) and an empty batch
    assert _parse_datarows(encode_data_rows(batch.slice(2, 1), fields, [0, 0, 0, 0])) == \
        [[None, b"ccc", b"1e+20", b"2024-01-01 00:00:01.5+00"]]
    assert encode_data_rows(batch.slice(0, 0), fields, [0] * 4) == b""


def test_encode_data_rows_large_batch_is_consistent():
    n = 300_000  # spans several assembly chunks
    batch = pa.record_batch({"i": pa.array(np.arange(n)), "s": pa.array(np.arange(n).astype(str))})
    fields = [ResultField("i", column_type("int4")), ResultField("s", column_type("text"))]
    data = encode_data_rows(batch, fields, [1, 0])
    rows = _parse_datarows(data)
    assert len(rows) == n
    assert rows[123_456] == [struct.pack(">i", 123_456), b"123456"]
    assert rows[-1] == [struct.pack(">i", n - 1), str(n - 1).encode()]


# ------------------------------------------------------------------------------------------------
# parameter decoding


def test_decode_param_text():
    cases = [
        ("int4", "42", 42), ("int8", " -7 ", -7), ("int2", "+3", 3), ("bool", "t", True), ("bool", "true", True),
        ("bool", "OFF", False), ("float8", "Infinity", math.inf), ("float8", "1.5e3", 1500.0),
        ("numeric", "-12.340", D("-12.340")), ("text", "héllo", "héllo"), ("bytea", "\\x0a0b", b"\n\x0b"),
        ("date", "2024-02-29", dt.date(2024, 2, 29)), ("time", "10:11:12.5", dt.time(10, 11, 12, 500000)),
        ("timestamp", "2024-01-01 10:00:00", dt.datetime(2024, 1, 1, 10)),
        ("timestamp", "2024-01-01T10:00:00.123456", dt.datetime(2024, 1, 1, 10, 0, 0, 123456)),
        ("timestamptz", "2024-01-01 10:00:00+00", dt.datetime(2024, 1, 1, 10, tzinfo=dt.timezone.utc)),
        ("timestamptz", "2024-01-01 10:00:00+05:30", dt.datetime(2024, 1, 1, 4, 30, tzinfo=dt.timezone.utc)),
        ("timestamptz", "2024-01-01 10:00:00.5-08", dt.datetime(2024, 1, 1, 18, 0, 0, 500000, tzinfo=dt.timezone.utc)),
        ("interval", "1 day 02:03:04", dt.timedelta(days=1, seconds=7384)),
        ("interval", "1 year 2 mons -3 days +04:05:06.5", Interval(14, -3, 14706_500_000)),
        ("interval", "-00:00:01", dt.timedelta(seconds=-1)), ("interval", "P1Y2M3DT4H", Interval(14, 3, 4 * 3600 * 10**6)),
        ("interval", "@ 2 days ago", dt.timedelta(days=-2)), ("interval", "1.5 days", dt.timedelta(days=1, hours=12)),
        ("uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        ("json", '{"a": [1, 2]}', '{"a": [1, 2]}'),
        ("text[]", '{a,"b c",NULL,"x\\"y",""}', ["a", "b c", None, 'x"y', ""]),
        ("integer[]", "[1:2]={1,2}", [1, 2]),
    ]
    for type_sql, text, expected in cases:
        assert decode_param(column_type(type_sql), 0, text.encode()) == expected, (type_sql, text)
    # tables and Spark values hold one dimension: a two-dimensional array is refused, never flattened
    with pytest.raises(SqlError) as e:
        decode_param(column_type("integer[]"), 0, b"{{1,2},{3,NULL}}")
    assert e.value.sqlstate == "0A000"
    assert decode_param(column_type("int4"), 0, None) is None
    assert math.isnan(decode_param(column_type("float8"), 0, b"NaN"))
    tz = decode_param(column_type("timestamptz"), 0, b"2024-07-01 12:00:00", timezone="Europe/Amsterdam")
    assert tz == dt.datetime(2024, 7, 1, 10, tzinfo=dt.timezone.utc)


def test_decode_param_errors_match_postgres(pg):
    cases = [("int4", "abc"), ("int8", "1.5"), ("int2", "99999"), ("int4", "99999999999"), ("bool", "maybe"),
             ("float8", "x1"), ("numeric", "1..2"), ("uuid", "not-a-uuid"), ("date", "2024-13-01"),
             ("date", "yesterday-ish"), ("timestamp", "nope"), ("interval", "3 fortnights"),
             ("numeric(5,2)", "12345.6")]
    for type_sql, text in cases:
        with pytest.raises(psycopg.Error) as pg_err:
            pg.execute(f"SELECT {lit(text)}::{type_sql}")
        base, _, params = type_sql.partition("(")
        ctype = column_type(base, *[int(p) for p in params.rstrip(")").split(",")]) if params else column_type(base)
        with pytest.raises(SqlError) as mine:
            decode_param(ctype, 0, text.encode())
        assert mine.value.sqlstate == pg_err.value.sqlstate, (type_sql, text)
        assert mine.value.message == pg_err.value.diag.message_primary, (type_sql, text)


def test_decode_param_length_checks():
    with pytest.raises(SqlError) as e:
        decode_param(column_type("varchar", 3), 0, b"abcd")
    assert (e.value.sqlstate, e.value.message) == ("22001", "value too long for type character varying(3)")
    assert decode_param(column_type("varchar", 3), 0, b"ab  ") == "ab "
    assert decode_param(column_type("char", 3), 0, b"a") == "a  "


def test_decode_param_binary_round_trip(pg):
    exprs = {
        "bool": ("true", True), "int2": ("(-5)::int2", -5), "int4": ("123456", 123456),
        "int8": (f"{2**40}::int8", 2**40), "float4": ("1.5::float4", 1.5), "float8": ("(-2.25)::float8", -2.25),
        "numeric": ("(-12345.678900)::numeric", D("-12345.678900")), "text": ("'héllo'::text", "héllo"),
        "jsonb": ("'{\"a\": 1}'::jsonb", '{"a": 1}'), "bytea": ("'\\x00ff'::bytea", b"\x00\xff"),
        "uuid": ("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        "date": ("'1999-12-31'::date", dt.date(1999, 12, 31)), "time": ("'10:11:12.5'::time", dt.time(10, 11, 12, 500000)),
        "timestamp": ("'2024-01-01 10:00:00.000001'::timestamp", dt.datetime(2024, 1, 1, 10, 0, 0, 1)),
        "timestamptz": ("'1960-05-05 05:05:05+00'::timestamptz", dt.datetime(1960, 5, 5, 5, 5, 5, tzinfo=dt.timezone.utc)),
        "interval": ("make_interval(months => -14, days => 3, secs => 1.5)", Interval(-14, 3, 1_500_000)),
        "integer[]": ("ARRAY[1,NULL,3]", [1, None, 3]), "text[]": ("ARRAY[]::text[]", []),
    }
    names = list(exprs)
    raw = pg_binary(pg, [exprs[n][0] for n in names])
    for n, data in zip(names, raw):
        assert decode_param(column_type(n), 1, data) == exprs[n][1], n
    with pytest.raises(SqlError) as e:
        decode_param(column_type("int4"), 1, b"\x00\x01")
    assert e.value.sqlstate == "22P03"


def test_format_interval_unit_names():
    assert format_interval(1, 1, 0) == "1 mon 1 day"
    assert format_interval(0, 0, 0) == "00:00:00"


# ------------------------------------------------------------------------------------------------
# COPY

COPY_FIELDS = [ResultField("id", column_type("int8")), ResultField("name", column_type("text")),
               ResultField("x", column_type("float8")), ResultField("ts", column_type("timestamp")),
               ResultField("n", column_type("numeric", 10, 2)), ResultField("ok", column_type("bool")),
               ResultField("tags", column_type("text[]")), ResultField("b", column_type("bytea")),
               ResultField("tz", column_type("timestamptz")), ResultField("d", column_type("date")),
               ResultField("iv", column_type("interval")), ResultField("u", column_type("uuid")),
               ResultField("j", column_type("jsonb")), ResultField("t", column_type("time"))]

COPY_QUERY = """SELECT id, name, x, ts, n::numeric(10,2) AS n, ok, tags, b, tz, d, iv, u, j, t FROM (VALUES
  (1::int8, 'plain'::text, 1.5::float8, '2024-01-01 10:00:00'::timestamp, 1.50::numeric(10,2), true,
   ARRAY['a','b c']::text[], '\\x00ff'::bytea, '2024-01-01 10:00:00.25+00'::timestamptz, '2024-02-29'::date,
   '1 year 2 mons -3 days 04:05:06.5'::interval, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid,
   '{"a": [1, "x\\ty"]}'::jsonb, '10:11:12.5'::time),
  (2, E'tab\\there\\nnewline\\\\back,comma"quote', 'NaN', '1999-12-31 23:59:59.999999', -0.01, false,
   ARRAY[NULL,'"q"',''], ''::bytea, NULL, '0001-01-01', '-00:00:01', NULL, 'null', '00:00:00'),
  (3, '', '-Infinity', NULL, NULL, NULL, NULL, NULL, '1970-01-01 00:00:00+00', NULL, NULL, NULL, NULL, NULL),
  (NULL, NULL, 1e300, '2000-01-01', 99999999.99, true, ARRAY[]::text[], '\\x0a', NULL, '2000-01-01', '0', NULL,
   '[]', '23:59:59.999999'),
  (5, '\\N', 0.1, '2024-01-01 00:00:00.5', 0, true, ARRAY['NULL'], NULL, NULL, NULL, NULL, NULL, NULL, NULL)
) v(id, name, x, ts, n, ok, tags, b, tz, d, iv, u, j, t) ORDER BY 1 NULLS LAST"""


def expected_table() -> pa.Table:
    fields = COPY_FIELDS
    rows = [
        [1, "plain", 1.5, dt.datetime(2024, 1, 1, 10), D("1.50"), True, ["a", "b c"], b"\x00\xff",
         dt.datetime(2024, 1, 1, 10, 0, 0, 250000, tzinfo=dt.timezone.utc), dt.date(2024, 2, 29),
         Interval(14, -3, 14706_500_000).to_arrow(), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", '{"a": [1, "x\\ty"]}',
         dt.time(10, 11, 12, 500000)],
        [2, 'tab\there\nnewline\\back,comma"quote', math.nan, dt.datetime(1999, 12, 31, 23, 59, 59, 999999),
         D("-0.01"), False, [None, '"q"', ""], b"", None, dt.date(1, 1, 1), Interval(0, 0, -10**6).to_arrow(), None,
         "null", dt.time(0)],
        [3, "", -math.inf, None, None, None, None, None, dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), None,
         None, None, None, None],
        [5, "\\N", 0.1, dt.datetime(2024, 1, 1, 0, 0, 0, 500000), D("0.00"), True, ["NULL"], None, None, None,
         None, None, None, None],
        [None, None, 1e300, dt.datetime(2000, 1, 1), D("99999999.99"), True, [], b"\n", None, dt.date(2000, 1, 1),
         Interval(0, 0, 0).to_arrow(), None, "[]", dt.time(23, 59, 59, 999999)],
    ]
    cols = list(zip(*rows))
    return pa.table({f.name: pa.array(list(c), f.type.arrow()) for f, c in zip(fields, cols)})


def assert_tables_equal(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema
    for name in want.column_names:
        g, w = got.column(name).to_pylist(), want.column(name).to_pylist()
        for a, b in zip(g, w):
            if isinstance(b, float) and math.isnan(b):
                assert isinstance(a, float) and math.isnan(a), name
            else:
                assert a == b, (name, a, b)
        assert len(g) == len(w)


def decode_all(dec: CopyDecoder, data: bytes, chunk: int = 7) -> pa.Table:
    batches = []
    for i in range(0, len(data), chunk):
        batches += dec.feed(data[i:i + chunk])
    batches += dec.finish()
    schema = pa.schema([pa.field(f.name, f.type.arrow()) for f in dec.fields])
    return pa.Table.from_batches(batches, schema=schema)


@pytest.mark.parametrize("fmt,options", [("text", "(FORMAT text)"), ("csv", "(FORMAT csv)"),
                                         ("csv", "(FORMAT csv, HEADER true, DELIMITER ';', NULL 'nil')"),
                                         ("text", "(FORMAT text, DELIMITER '|', NULL 'NUL')"),
                                         ("binary", "(FORMAT binary)")])
def test_copy_decode_postgres_output(pg, fmt, options):
    data = pg_copy_out(pg, COPY_QUERY, options)
    kw = {}
    if "DELIMITER ';'" in options:
        kw = {"delimiter": ";", "null": "nil", "header": True}
    if "DELIMITER '|'" in options:
        kw = {"delimiter": "|", "null": "NUL"}
    for chunk in (3, 64, 1 << 20):
        dec = CopyDecoder(COPY_FIELDS, fmt, block_bytes=50, **kw)
        assert_tables_equal(decode_all(dec, data, chunk), expected_table())


@pytest.mark.parametrize("fmt,options,kw", [("text", "(FORMAT text)", {}), ("csv", "(FORMAT csv)", {}),
                                            ("csv", "(FORMAT csv, HEADER true, DELIMITER ';', NULL 'nil')",
                                             {"delimiter": ";", "null": "nil", "header": True}),
                                            ("binary", "(FORMAT binary)", {})])
def test_copy_encode_matches_postgres_bytes(pg, fmt, options, kw):
    expected = pg_copy_out(pg, COPY_QUERY, options)
    enc = CopyEncoder(COPY_FIELDS, fmt, **kw)
    table = expected_table()
    got = enc.header_bytes() + b"".join(enc.encode(b) for b in table.to_batches(max_chunksize=2)) + enc.trailer()
    assert got == expected


def test_copy_round_trip_large():
    n = 200_000
    rng = np.random.default_rng(1)
    table = pa.table({
        "id": pa.array(np.arange(n)), "name": pa.array([f"n{i}\t{i % 7}" for i in range(n)]),
        "x": pa.array(rng.standard_normal(n)),
        "ts": pa.array((np.arange(n) * 1_000_003 + 1_700_000_000_000_000).astype("datetime64[us]")),
    })
    fields = [ResultField("id", column_type("int8")), ResultField("name", column_type("text")),
              ResultField("x", column_type("float8")), ResultField("ts", column_type("timestamp"))]
    for fmt in ("text", "csv", "binary"):
        enc = CopyEncoder(fields, fmt)
        data = enc.header_bytes() + b"".join(enc.encode(b) for b in table.to_batches(max_chunksize=50_000)) + enc.trailer()
        dec = CopyDecoder(fields, fmt, block_bytes=1 << 20)
        got = decode_all(dec, data, chunk=65536)
        assert got.equals(table), fmt
        assert dec.rows == n


def test_copy_errors():
    fields = [ResultField("id", column_type("int4")), ResultField("name", column_type("text"))]
    with pytest.raises(SqlError) as e:
        decode_all(CopyDecoder(fields, "text", table="t"), b"1\ta\n2\tb\nabc\tc\n")
    assert e.value.sqlstate == "22P02"
    assert e.value.message == 'invalid input syntax for type integer: "abc"'
    assert e.value.detail == 'COPY t, line 3, column id: "abc"'
    with pytest.raises(SqlError) as e:
        decode_all(CopyDecoder(fields, "text", table="t"), b"1\ta\n2\n")
    assert (e.value.sqlstate, e.value.message) == ("22P04", 'missing data for column "name"')
    assert e.value.detail == "COPY t, line 2"
    with pytest.raises(SqlError) as e:
        decode_all(CopyDecoder(fields, "csv", table="t"), b"1,a,extra\n")
    assert (e.value.sqlstate, e.value.message) == ("22P04", "extra data after last expected column")
    with pytest.raises(SqlError) as e:
        decode_all(CopyDecoder(fields, "csv"), b'1,"unterminated\n')
    assert e.value.sqlstate == "22P04"
    with pytest.raises(SqlError) as e:
        decode_all(CopyDecoder(fields, "binary"), b"NOTPGCOPY-------------")
    assert (e.value.sqlstate, e.value.message) == ("22P04", "COPY file signature not recognized")
    enc = CopyEncoder(fields, "binary")
    body = enc.header_bytes() + enc.encode(pa.record_batch({"id": pa.array([1], pa.int32()), "name": ["x"]}))
    # no trailer: PostgreSQL takes EOF at a tuple boundary as the end (ADBC's adbc_ingest sends none)
    assert decode_all(CopyDecoder(fields, "binary"), body).column("id").to_pylist() == [1]
    with pytest.raises(SqlError) as e:
        decode_all(CopyDecoder(fields, "binary"), body[:-3])  # truncated tuple
    assert e.value.sqlstate == "22P04"
    with pytest.raises(SqlError) as e:
        decode_all(CopyDecoder([ResultField("d", column_type("date"))], "text", table="t"), b"2024-01-01\nnot a date\n")
    assert e.value.sqlstate == "22007" and e.value.detail == 'COPY t, line 2, column d: "not a date"'


def test_copy_text_end_marker_and_crlf():
    fields = [ResultField("id", column_type("int4")), ResultField("name", column_type("text"))]
    got = decode_all(CopyDecoder(fields, "text"), b"1\ta\r\n2\t\\N\n\\.\n")
    assert got.column("id").to_pylist() == [1, 2]
    assert got.column("name").to_pylist() == ["a", None]


# ------------------------------------------------------------------------------------------------
# randomized grids against PostgreSQL (one round trip each)


def pg_column_text(conn: psycopg.Connection, query: str) -> list[str | None]:
    res = conn.pgconn.exec_(query.encode())
    assert res.status == psycopg.pq.ExecStatus.TUPLES_OK, res.error_message
    return [None if res.get_value(i, 0) is None else bytes(res.get_value(i, 0)).decode() for i in range(res.ntuples)]


def pg_column_binary(conn: psycopg.Connection, query: str) -> list[bytes | None]:
    return [r[0] for r in parse_pgcopy(pg_copy_out(conn, query, "(FORMAT binary)"))]


def test_random_floats_text(pg):
    rng = np.random.default_rng(7)
    vals = rng.standard_normal(400) * 10.0 ** rng.integers(-30, 30, 400)
    big = np.concatenate([(2.0**53 + np.arange(0, 400, 2)) * 4, 2.0**60 + np.arange(0, 2**12 * 50, 2**8)])
    vals = np.concatenate([vals, np.round(vals[:100], 3), 10.0 ** np.arange(-10, 20), big, -big[:50]])
    array_lit = "ARRAY[" + ",".join(f"'{float(v)!r}'" for v in vals) + "]::float8[]"
    expected = pg_column_text(pg, f"SELECT x FROM unnest({array_lit}) WITH ORDINALITY u(x, i) ORDER BY i")
    assert encode_text_column(pa.array(vals), column_type("float8")).to_pylist() == expected
    f4 = np.concatenate([vals, (2.0**21 + np.arange(0, 300)) * 2 ** rng.integers(0, 40, 300)]).astype(np.float32)
    f4 = f4[np.isfinite(f4) & (f4 != 0)]
    array_lit = "ARRAY[" + ",".join(f"'{float(v)!r}'" for v in f4) + "]::float4[]"
    expected = pg_column_text(pg, f"SELECT x FROM unnest({array_lit}) WITH ORDINALITY u(x, i) ORDER BY i")
    assert encode_text_column(pa.array(f4), column_type("float4")).to_pylist() == expected


def test_random_numerics_text_and_binary(pg):
    rng = np.random.default_rng(11)
    vals = []
    for _ in range(300):
        digits = "".join(str(d) for d in rng.integers(0, 10, int(rng.integers(1, 38))))
        point = int(rng.integers(max(0, len(digits) - 18), len(digits) + 1))
        if len(digits) - point > 18 or point > 20:
            continue
        txt = (digits[:point] or "0") + "." + (digits[point:] or "0")
        vals.append(("-" if rng.random() < 0.4 else "") + txt)
    decs = [D(v) for v in vals]
    arr = pa.array(decs, pa.decimal128(38, 18))
    array_lit = "ARRAY[" + ",".join(f"'{v}'" for v in vals) + "]::numeric[]"
    query = f"SELECT trim_scale(x) FROM unnest({array_lit}) WITH ORDINALITY u(x, i) ORDER BY i"
    assert encode_text_column(arr, column_type("numeric")).to_pylist() == pg_column_text(pg, query)
    assert encode_binary_column(arr, column_type("numeric")).to_pylist() == pg_column_binary(pg, query)
    arr = pa.array([d.quantize(D("0.0001"), rounding=decimal.ROUND_HALF_UP) for d in decs if abs(d) < 10**13],
                   pa.decimal128(18, 4))
    query = (f"SELECT x::numeric(18,4) FROM unnest({array_lit}) WITH ORDINALITY u(x, i) "
             f"WHERE abs(x) < 10^13 ORDER BY i")
    assert encode_text_column(arr, column_type("numeric", 18, 4)).to_pylist() == pg_column_text(pg, query)
    assert encode_binary_column(arr, column_type("numeric", 18, 4)).to_pylist() == pg_column_binary(pg, query)


def test_random_small_decimals_binary(pg):
    """Decimals of up to 18 digits are sent from their unscaled integers (no text): every
    precision and scale of that path, with zeros, trailing zeros, negatives and NULLs, as
    PostgreSQL sends numeric(p,s) and the unconstrained numeric of the same values."""
    rng = np.random.default_rng(23)
    for p, s in [(1, 0), (4, 4), (5, 1), (9, 3), (12, 2), (15, 7), (18, 0), (18, 9), (18, 16), (17, 13)]:
        vals: list[D | None] = []
        for _ in range(60):
            nd = int(rng.integers(0, p + 1))
            u = int(rng.integers(0, 10 ** nd)) if nd else 0
            if rng.random() < 0.3:
                u -= u % 10 ** int(rng.integers(0, p + 1))
            vals.append(None if rng.random() < 0.05 else D(-u if rng.random() < 0.4 else u).scaleb(-s))
        arr = pa.array(vals, pa.decimal128(p, s))
        lit_ = "ARRAY[" + ",".join("NULL" if v is None else f"'{v}'" for v in vals) + f"]::numeric({p},{s})[]"
        typed = f"SELECT x FROM unnest({lit_}) WITH ORDINALITY u(x, i) ORDER BY i"
        trimmed = f"SELECT trim_scale(x) FROM unnest({lit_}) WITH ORDINALITY u(x, i) ORDER BY i"
        assert encode_binary_column(arr, column_type("numeric", p, s)).to_pylist() == pg_column_binary(pg, typed), (p, s)
        assert encode_binary_column(arr, column_type("numeric")).to_pylist() == pg_column_binary(pg, trimmed), (p, s)
        assert encode_binary_column(arr.slice(5), column_type("numeric", p, s)).to_pylist() == \
            pg_column_binary(pg, typed)[5:], (p, s)


def test_random_timestamps_text_and_binary(pg):
    rng = np.random.default_rng(5)
    us = rng.integers(-62_000_000_000_000_000, 250_000_000_000_000_000, 300)
    us = np.concatenate([us, (us[:50] // 1_000_000) * 1_000_000, (us[50:100] // 1000) * 1000])
    array_lit = "ARRAY[" + ",".join(str(int(v)) for v in us) + "]::int8[]"
    for sqltype, arrow_type in (("timestamp", pa.timestamp("us")), ("timestamptz", pa.timestamp("us", tz="UTC"))):
        # exact arithmetic (interval * bigint goes through float8, so split seconds and micros)
        expr = f"'epoch'::{sqltype} + (x / 1000000) * interval '1 second' + (x % 1000000) * interval '1 microsecond'"
        query = f"SELECT {expr} FROM unnest({array_lit}) WITH ORDINALITY u(x, i) ORDER BY i"
        arr = pa.array(us, pa.int64()).cast(arrow_type)
        assert encode_text_column(arr, column_type(sqltype)).to_pylist() == pg_column_text(pg, query), sqltype
        assert encode_binary_column(arr, column_type(sqltype)).to_pylist() == pg_column_binary(pg, query), sqltype


def test_copy_csv_checks_declared_lengths_and_pads_char():
    fields = [ResultField("v", column_type("varchar", 3)), ResultField("c", column_type("char", 4))]
    got = decode_all(CopyDecoder(fields, "csv"), b'ab,x\n"abc  ",\n')
    assert got.column("v").to_pylist() == ["ab", "abc"]
    assert got.column("c").to_pylist() == ["x   ", None]
    with pytest.raises(SqlError) as e:
        decode_all(CopyDecoder(fields, "csv", table="t"), b"abcd,x\n")
    assert (e.value.sqlstate, e.value.message) == ("22001", "value too long for type character varying(3)")
    assert e.value.detail == 'COPY t, line 1, column v: "abcd"'


def test_copy_decode_postgres_accepts_postgres_spellings(pg):
    fields = [ResultField("b", column_type("bool")), ResultField("f", column_type("float8")),
              ResultField("tz", column_type("timestamptz")), ResultField("d", column_type("date"))]
    data = (b"yes\tInfinity\t2024-07-01 12:00:00\t20240315\n"
            b"OFF\t-inf\t2024-01-01 00:00:00-08\tepoch\n"
            b"1\t1e3\t2024-01-01 12:00 America/New_York\t2024-03-15 10:00\n")
    got = decode_all(CopyDecoder(fields, "text", timezone="Europe/Amsterdam"), data)
    assert got.column("b").to_pylist() == [True, False, True]
    assert got.column("f").to_pylist() == [math.inf, -math.inf, 1000.0]
    expected = pg.execute("SELECT x::timestamptz FROM unnest(ARRAY['2024-07-01 12:00:00 Europe/Amsterdam', "
                          "'2024-01-01 00:00:00-08', '2024-01-01 12:00 America/New_York']) x").fetchall()
    assert got.column("tz").to_pylist() == [r[0] for r in expected]
    days = pg.execute("SELECT x::date FROM unnest(ARRAY['20240315', 'epoch', '2024-03-15 10:00']) x").fetchall()
    assert got.column("d").to_pylist() == [r[0] for r in days]


@pytest.mark.parametrize("value", [b"infinity", b"-infinity", b"0044-03-15 BC"])
def test_copy_decode_refuses_dates_the_tables_cannot_store(value):
    """PostgreSQL stores these; Spark and Delta store years 1 to 9999: refused with 0A000 as an
    INSERT refuses them, never written as some other date."""
    decoder = CopyDecoder([ResultField("d", column_type("date"))], "text")
    with pytest.raises(SqlError) as e:
        decode_all(decoder, b"2024-01-01\n" + value + b"\n")
    assert e.value.sqlstate == "0A000"


PARITY_INPUTS = [
    ("int4", " 12 "), ("int2", "-32768"), ("int8", "-9223372036854775808"), ("float8", " 1.5 "), ("float8", "-inf"),
    ("float4", "3.4e38"), ("numeric", " 1.5 "), ("numeric", "1e5"), ("numeric", "-0.000"), ("numeric", "1.5e-3"),
    ("bool", "YES"), ("bool", " f "), ("uuid", "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}"),
    ("uuid", "A0EEBC999C0B4EF8BB6D6BB9BD380A11"), ("date", "20240101"), ("date", "2024-1-2"),
    ("time", "10:00:00+02"), ("time", "1:2"), ("timestamp", "2024-01-01 10:00:00+02"), ("timestamp", "2024-01-01"),
    ("timestamptz", "2024-01-01 10:00:00 UTC"), ("timestamptz", "2024-01-01T10:00:00Z"),
    ("timestamptz", "2024-01-01 10:00:00.123456789+05:30"), ("interval", "1 day ago"), ("interval", "1:2"),
    ("interval", "-1 2:03:04"), ("interval", "10"), ("interval", "1.5 years"), ("interval", "P1Y2M3W4DT5H6M7.5S"),
    ("interval", "2 weeks 3 hours 4.5 seconds"), ("interval", "-1 year -2 mons +3 days -04:05:06"),
    ("bytea", "\\x0A0b"), ("bytea", "ab\\\\c\\001"), ("text[]", '{"a b",NULL, c ,"NULL"}'), ("int8[]", "{}"),
    ("float8[]", "{1.5,NaN,-Infinity}"), ("date[]", "{2024-01-01,NULL}"),
]


def test_decode_param_text_parity_with_postgres(pg):
    """What PostgreSQL accepts, decode_param accepts, to the same value (compared by text output)."""
    for type_sql, text in PARITY_INPUTS:
        # unconstrained numeric is stored at scale 18 and printed without trailing zeros
        expr = "trim_scale(%s::numeric)" if type_sql == "numeric" else f"%s::{type_sql}"
        (expected,) = pg.execute(f"SELECT ({expr})::text", (text,)).fetchone()
        if type_sql == "bool":
            expected = expected[0]
        ctype = column_type(type_sql)
        value = parse_text_value(ctype, text)
        arrow_value = pa.array([value.to_arrow() if isinstance(value, Interval) else value], ctype.arrow()) \
            if not ctype.is_array else pa.array([value], ctype.arrow())
        got = encode_text_column(arrow_value, ctype).to_pylist()[0]
        assert got == expected, (type_sql, text)


def test_sliced_arrays_encode_like_their_parents():
    """Batches are often slices of bigger buffers (non-zero offsets); every encoder must honour them."""
    cols = [
        (pa.array([1, None, 3, 4, None, 6], pa.int64()), "int8"),
        (pa.array([1.5, None, 1e20, -0.0, 1e-7, None]), "float8"),
        (pa.array(["a", None, "b\tc", "", "x", "y"]), "text"),
        (pa.array([True, None, False, True, False, None]), "bool"),
        (pa.array([D("1.5"), None, D("-2.25"), D("0"), D("1e-10"), D("12345678901234567890")],
                  pa.decimal128(38, 18)), "numeric"),
        (pa.array([0, None, 10**15, -(10**12), 1, 2**40], pa.int64()).cast(pa.timestamp("us", tz="UTC")), "timestamptz"),
        (pa.array([0, None, 10**15, -(10**12), 1, 2**40], pa.int64()).cast(pa.timestamp("us")), "timestamp"),
        (pa.array([0, None, 100, -1000, 20000, 7], pa.int32()).cast(pa.date32()), "date"),
        (pa.array([0, None, 10**6, 5, 86_399_999_999, 1], pa.int64()).cast(pa.time64("us")), "time"),
        (pa.array([b"\x00", None, b"ab", b"", b"\xff" * 20, b"z"]), "bytea"),
        (pa.array([Interval(1, 2, 3).to_arrow(), None, Interval(-1, 0, -5).to_arrow(), Interval().to_arrow(),
                   Interval(0, 0, 10**9).to_arrow(), Interval(25, 1, 1).to_arrow()], pa.month_day_nano_interval()),
         "interval"),
        (pa.array([[1, None], None, [], [3], [4, 5, 6], None], pa.list_(pa.int32())), "integer[]"),
        (pa.array([["a b"], None, [], [None], ['"'], ["x"]], pa.list_(pa.string())), "text[]"),
    ]
    for arr, type_sql in cols:
        ctype = column_type(type_sql)
        for enc in (encode_text_column, encode_binary_column):
            full = enc(arr, ctype).to_pylist()
            for off, ln in ((1, 4), (2, 3), (5, 1), (3, 0)):
                assert enc(arr.slice(off, ln), ctype).to_pylist() == full[off:off + ln], (type_sql, enc.__name__, off)


def test_random_intervals_text_and_binary(pg):
    rng = np.random.default_rng(3)
    n = 300
    months = rng.integers(-300, 300, n) * (rng.random(n) < 0.6)
    days = rng.integers(-400, 400, n) * (rng.random(n) < 0.6)
    us = rng.integers(-(10**12), 10**12, n) * (rng.random(n) < 0.7)
    us = np.where(rng.random(n) < 0.3, (us // 1_000_000) * 1_000_000, us)
    ivs = [Interval(int(m), int(d), int(u)) for m, d, u in zip(months, days, us)]
    arr = pa.array([iv.to_arrow() for iv in ivs], pa.month_day_nano_interval())
    lits = ",".join(f"({iv.months},{iv.days},{iv.microseconds},{i})" for i, iv in enumerate(ivs))
    query = (f"SELECT make_interval(months => m, days => d) + (u / 1000000) * interval '1 second' "
             f"+ (u % 1000000) * interval '1 microsecond' FROM (VALUES {lits}) v(m, d, u, i) ORDER BY i")
    expected = pg_column_text(pg, query)
    assert encode_text_column(arr, column_type("interval")).to_pylist() == expected
    assert [format_interval(iv.months, iv.days, iv.microseconds) for iv in ivs] == expected
    assert encode_binary_column(arr, column_type("interval")).to_pylist() == pg_column_binary(pg, query)


def test_copy_text_escapes_are_bytes():
    fields = [ResultField("id", column_type("int4")), ResultField("name", column_type("text"))]
    got = decode_all(CopyDecoder(fields, "text"), b"1\tcaf\\xc3\\xa9 \\101\\q\\\\N\n2\t\\N\n")
    assert got.column("name").to_pylist() == ["caf\u00e9 Aq\\N", None]


def test_interval_params_bind_forms():
    """Intervals bind as timedelta when they have no months (the engine contract), else as Interval."""
    iv = decode_param(column_type("interval"), 0, b"1 year 2 mons -3 days +04:05:06.000007")
    assert str(iv) == "1 year 2 mons -3 days +04:05:06.000007"
    assert decode_param(column_type("interval"), 0, str(iv).encode()) == iv
    assert decode_param(column_type("interval"), 1, struct.pack(">qii", 5, 2, 0)) == dt.timedelta(days=2, microseconds=5)
    assert decode_param(column_type("interval[]"), 0, b'{"1 day",NULL}') == [dt.timedelta(days=1), None]


def test_binary_of_values_carried_as_text(pg):
    """A column announced as interval/int/date[] but carried as PostgreSQL text is sent in the type's binary form."""
    cases = [
        (pa.array(["1 day 02:03:04", None]), "interval", ["'1 day 02:03:04'::interval", "NULL::interval"]),
        (pa.array(["42"], pa.large_string()), "int4", ["42"]),
        (pa.array(["{1,NULL}"]), "bigint[]", ["ARRAY[1,NULL]::int8[]"]),
        (pa.array([["1 mon", "-00:00:01"]], pa.list_(pa.string())), "interval[]",
         ["ARRAY['1 mon', '-00:00:01']::interval[]"]),
    ]
    for arr, type_sql, exprs in cases:
        assert _bin(arr, type_sql) == pg_binary(pg, exprs), type_sql


# -- a few rows, value by value ---------------------------------------------------------------------
# encode_data_rows computes up to 16 rows value by value in Python; the bytes must be the column
# encoders' (which the tests above hold to PostgreSQL's) for every value, format and time zone.

_FEW_ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Europe/Amsterdam"]


def _few_case(rnd: random.Random, kind: str) -> tuple[pa.Array, str]:
    def pick(make, edges):
        vals = [rnd.choice(edges) if rnd.random() < 0.3 else make() for _ in range(rnd.randint(1, 16))]
        return [None if rnd.random() < 0.15 else v for v in vals]

    if kind in ("int2", "int4", "int8"):
        bits = {"int2": 16, "int4": 32, "int8": 64}[kind]
        lo, hi = -2 ** (bits - 1), 2 ** (bits - 1) - 1
        arrow = {"int2": pa.int16(), "int4": pa.int32(), "int8": pa.int64()}[kind]
        carried = rnd.choice([arrow, pa.int64()]) if kind != "int8" else arrow
        return pa.array(pick(lambda: rnd.randint(lo, hi), [lo, hi, 0, -1, 1]), carried), kind
    if kind == "bool":
        return pa.array(pick(lambda: rnd.random() < 0.5, [True, False]), pa.bool_()), kind
    if kind in ("text", "varchar(20)", "jsonb", "char(4)"):
        alphabet = "ab é€😀\t\\\"'{}"
        make = (lambda: '{"k": %d}' % rnd.randint(-9, 9)) if kind == "jsonb" else \
            (lambda: "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6))))
        return pa.array(pick(make, [""]), pa.string()), kind
    if kind in ("float4", "float8"):
        arrow = pa.float32() if kind == "float4" else pa.float64()
        edges = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-310, 3.4e38]
        return pa.array(pick(lambda: rnd.uniform(-1e6, 1e6), edges), arrow), kind
    if kind.startswith("numeric"):
        p, sc = (38, rnd.choice([0, 2, 10])) if kind == "numeric" else (12, 2)
        q = D(1).scaleb(-sc)

        def make():
            digits = rnd.randint(0, p - sc)
            v = D(rnd.randint(1 - 10 ** digits, 10 ** digits - 1)) / (10 ** rnd.randint(0, sc) or 1)
            return v.quantize(q, context=decimal.Context(prec=100))
        big = decimal.Context(prec=100)
        edges = [D(0).quantize(q), big.subtract(big.power(10, p - sc), q),
                 (-D(1) / 10 ** sc).quantize(q, context=decimal.Context(prec=100)) if sc else D(-1)]
        return pa.array(pick(make, edges), pa.decimal128(p, sc)), kind
    if kind == "date":
        edges = [-719162, 2932896, 0, 2**31 - 1, -(2**31), -800000, 10957]
        return pa.array(pick(lambda: rnd.randint(-750000, 3000000), edges), pa.int32()).cast(pa.date32()), kind
    if kind in ("timestamp", "timestamptz"):
        edges = [0, 2**63 - 1, -(2**63), -62135596800000000, 253402300799999999, -62135596800000000 - 86400 * 10**6,
                 1699155000 * 10**6, 1710054000 * 10**6]  # year 1 and 9999, BC, DST changes in New York
        make = lambda: rnd.choice([rnd.randint(-3 * 10**17, 3 * 10**17), rnd.randint(0, 2 * 10**9) * 10**6,
                                   rnd.randint(-2 * 10**9, 2 * 10**9) * 10**6 + rnd.randint(0, 999999)])
        tz = rnd.choice([None, "UTC"]) if kind == "timestamptz" else None
        return pa.array(pick(make, edges), pa.int64()).cast(pa.timestamp("us", tz=tz)), kind
    raise AssertionError(kind)


_FEW_KINDS = ["int2", "int4", "int8", "bool", "text", "varchar(20)", "jsonb", "char(4)", "float4", "float8",
              "numeric", "numeric(12,2)", "date", "timestamp", "timestamptz"]


@pytest.mark.parametrize("kind", _FEW_KINDS)
def test_few_rows_encode_as_the_column_encoders_do(kind: str) -> None:
    rnd = random.Random(kind)
    for _ in range(150):
        arr, type_name = _few_case(rnd, kind)
        name, _, args = type_name.rstrip(")").partition("(")
        ctype = column_type(name, *(int(a) for a in args.split(",") if a))
        zone = rnd.choice(_FEW_ZONES)
        batch = pa.record_batch([arr], names=["c"])
        for fmt in (0, 1):
            got = encode_data_rows(batch, [ResultField("c", ctype)], [fmt], timezone=zone)
            enc = encode_binary_column if fmt else encode_text_column
            want = assemble_rows([enc(arr, ctype, timezone=zone)], datarow=True)
            assert got == want, (kind, fmt, zone, arr.cast(pa.int64()) if kind == "date" else arr)
