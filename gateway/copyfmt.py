"""COPY text / csv / binary payloads <-> Arrow record batches, streamed in bounded memory.

Decoding accumulates CopyData payloads until ~8 MB, cuts at the last complete row and parses
the block with pyarrow.csv (multi-threaded, converting straight to the columns' Arrow types);
rows may straddle chunks. A block Arrow cannot convert is re-parsed as strings and converted
with PostgreSQL's input rules (``codec.text_to_arrow``), which also pins the error on the first
bad value with PostgreSQL's message and a COPY context (line, column).

Encoding reuses the result codecs of ``gateway.codec`` column-wise.
"""

from __future__ import annotations

import io
import re
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from gateway.codec import (
    PG_EPOCH_DAYS,
    PG_EPOCH_US,
    _array_bytes,
    assemble_rows,
    encode_binary_column,
    encode_text_column,
    parse_binary_value,
    python_to_arrow,
    text_to_arrow,
)
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType
from tidegate.results import ResultField

__all__ = ["CopyDecoder", "CopyEncoder", "BINARY_SIGNATURE"]

BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
BINARY_HEADER = BINARY_SIGNATURE + struct.pack(">ii", 0, 0)
BINARY_TRAILER = struct.pack(">h", -1)

_BLOCK_BYTES = 8 << 20
_BINARY_PARSE_BYTES = 1 << 20
_BATCH_ROWS = 65536
_TRUE_VALUES = ["t", "true", "y", "yes", "on", "1", "T", "TRUE", "True", "Y", "YES", "ON"]
_FALSE_VALUES = ["f", "false", "n", "no", "off", "0", "F", "FALSE", "False", "N", "NO", "OFF"]

# Types pyarrow.csv parses exactly as PostgreSQL's input functions would (for what they accept).
# Not numbers: its integer parser also reads 0x1F and its float parser overflows to infinity, so
# they go through codec.text_to_arrow (tidegate.pgvalues' rules, vectorised for plain spellings).
_DIRECT = {"date", "timestamp", "timestamptz", "bool", "text", "varchar", "name", "unknown", "char"}
def _is_direct(ctype: ColumnType) -> bool:
    """True when pyarrow.csv can convert the column straight to its Arrow type."""
    name = ctype.pg.name
    return (name in _DIRECT and not ctype.is_array
            and not (name in ("varchar", "bpchar") and ctype.length is not None))


# Types whose text output can never contain a delimiter / escape-worthy character for the usual
# delimiters, so text COPY output skips the escape pass.
_PLAIN_OUTPUT = {"int2", "int4", "int8", "oid", "float4", "float8", "numeric", "bool", "date", "time",
                 "timestamp", "timestamptz", "uuid"}


def _check_options(fmt: str, delimiter: str | None, null: str | None, quote: str | None,
                   escape: str | None) -> tuple[str, str, str, str]:
    """Validate COPY options as PostgreSQL does and fill in each format's defaults."""
    quote = '"' if quote is None else quote
    if fmt not in ("text", "csv", "binary"):
        raise SqlError("22023", f'COPY format "{fmt}" not recognized')
    delim = delimiter if delimiter is not None else ("," if fmt == "csv" else "\t")
    if fmt != "binary" and len(delim.encode()) != 1:
        raise SqlError("0A000", "COPY delimiter must be a single one-byte character")
    if fmt == "text" and delim == "\\":
        raise SqlError("22023", "COPY delimiter cannot be backslash")
    nul = null if null is not None else ("" if fmt == "csv" else "\\N")
    esc = escape if escape is not None else quote
    if fmt == "csv":
        if len(quote.encode()) != 1:
            raise SqlError("0A000", "COPY quote must be a single one-byte character")
        if len(esc.encode()) != 1:
            raise SqlError("0A000", "COPY escape must be a single one-byte character")
        if quote == delim:
            raise SqlError("22023", "COPY delimiter and quote must be different")
    return delim, nul, quote, esc


class CopyDecoder:
    """Parses ``COPY ... FROM STDIN`` payloads into batches of the fields' Arrow types."""

    def __init__(self, fields: list[ResultField], format: str = "text", delimiter: str | None = None,
                 null: str | None = None, header: bool = False, quote: str | None = '"', escape: str | None = None,
                 *, table: str = "", timezone: str = "UTC", block_bytes: int = _BLOCK_BYTES) -> None:
        self.fields = list(fields)
        self.format = format.lower()
        self.delimiter, self.null, self.quote, self.escape = _check_options(self.format, delimiter, null, quote, escape)
        self.header = header
        self.table = table
        self.timezone = timezone
        self.block_bytes = block_bytes
        self.rows = 0  # rows decoded so far
        self._lines = 0  # physical lines consumed so far (text/csv), for error context
        self._buf = bytearray()
        self._header_pending = header and self.format != "binary"
        self._done = False
        self._schema = pa.schema([pa.field(f.name, f.type.arrow()) for f in self.fields])
        # binary state
        self._bin_header_seen = False
        self._pending: list[list[pa.Array]] = []
        self._pending_rows = 0

    # -- public API ------------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[pa.RecordBatch]:
        """Accept one CopyData payload; returns the batches completed by it (often none)."""
        if self._done:
            return []
        self._buf += chunk
        if self.format == "binary":
            return self._feed_binary(final=False)
        if len(self._buf) < self.block_bytes:
            return []
        cut = self._cut_point()
        if cut <= 0:
            return []
        block = bytes(self._buf[:cut])
        del self._buf[:cut]
        return self._parse_block(block)

    def finish(self) -> list[pa.RecordBatch]:
        """End of data (CopyDone): parse what is left and check the stream was complete."""
        if self.format == "binary":
            out = self._feed_binary(final=True)
            self._done = True
            return out
        block = bytes(self._buf)
        self._buf.clear()
        self._done = True
        if not block:
            return []
        if self.format == "csv":
            q, e = self.quote.encode(), self.escape.encode()
            quotes = block.count(q) - (block.count(e + q) if e != q else 0)
            if quotes % 2:
                raise SqlError("22P04", "unterminated CSV quoted field",
                               detail=self._context(self._lines + block.count(b"\n") + 1, None))
        if not block.endswith(b"\n"):
            block += b"\n"
        return self._parse_block(block)

    # -- text / csv ------------------------------------------------------------------------------

    def _cut_point(self) -> int:
        """Offset just past the last complete row in the buffer (0: none yet)."""
        buf = self._buf
        end = buf.rfind(b"\n")
        if self.format != "csv":
            return end + 1
        q = self.quote.encode()
        e = self.escape.encode()
        while end >= 0:
            quotes = buf.count(q, 0, end)
            if e != q:
                quotes -= buf.count(e + q, 0, end)
            if quotes % 2 == 0:
                return end + 1
            end = buf.rfind(b"\n", 0, end)
        return 0

    def _strip_end_marker(self, block: bytes) -> bytes:
        """Drop a final '\\.' end-of-data line (psql and older clients send it)."""
        for marker in (b"\\.\n", b"\\.\r\n"):
            if block.endswith(marker):
                head = block[: -len(marker)]
                if not head or head.endswith(b"\n"):
                    self._done = True
                    return head
        return block

    def _parse_block(self, block: bytes) -> list[pa.RecordBatch]:
        block = self._strip_end_marker(block)
        skip = 0
        if self._header_pending and block:
            self._header_pending = False
            skip = 1
        if not block:
            return []
        if not self.fields:
            n = block.count(b"\n") - skip
            self.rows += n
            self._lines += n + skip
            return []
        table = self._read(block, skip, direct=True)
        first_line = self._lines + skip + 1
        self._lines += block.count(b"\n")
        if table is None:
            strings = self._read(block, skip, direct=False, first_line=first_line)
            assert strings is not None
            table = self._convert(strings, first_line)
        else:
            table = self._postprocess(table, first_line)
        self.rows += table.num_rows
        return table.combine_chunks().to_batches(max_chunksize=_BATCH_ROWS)

    def _read(self, block: bytes, skip: int, *, direct: bool, first_line: int = 0) -> pa.Table | None:
        names = [f"c{i}" for i in range(len(self.fields))]
        types: dict[str, pa.DataType] = {}
        for name, f in zip(names, self.fields):
            if direct and _is_direct(f.type):
                types[name] = f.type.arrow()
            else:
                types[name] = pa.string()
        read_opts = pacsv.ReadOptions(column_names=names, skip_rows=skip, block_size=1 << 22)
        if self.format == "csv":
            parse_opts = pacsv.ParseOptions(
                delimiter=self.delimiter, quote_char=self.quote, double_quote=self.escape == self.quote,
                escape_char=self.escape if self.escape != self.quote else False, newlines_in_values=True,
                ignore_empty_lines=False)
            conv = pacsv.ConvertOptions(column_types=types, null_values=[self.null], strings_can_be_null=True,
                                        quoted_strings_can_be_null=False, true_values=_TRUE_VALUES,
                                        false_values=_FALSE_VALUES)
        else:
            parse_opts = pacsv.ParseOptions(delimiter=self.delimiter, quote_char=False, double_quote=False,
                                            escape_char=False, newlines_in_values=False, ignore_empty_lines=False)
            conv = pacsv.ConvertOptions(column_types=types, null_values=[self.null], strings_can_be_null=True,
                                        true_values=_TRUE_VALUES, false_values=_FALSE_VALUES)
        try:
            return pacsv.read_csv(io.BytesIO(block), read_options=read_opts, parse_options=parse_opts,
                                  convert_options=conv)
        except pa.ArrowInvalid as e:
            msg = str(e)
            if msg.startswith("CSV parse error"):
                if "Expected" in msg and "columns" in msg:
                    self._column_count_error(block, skip, first_line or (self._lines + skip + 1))
                raise SqlError("22P04", f"malformed COPY data: {msg.splitlines()[0]}",
                               detail=self._context(None, None)) from None
            if direct:
                return None
            raise SqlError("22P04", f"malformed COPY data: {msg}", detail=self._context(None, None)) from None

    def _context(self, line: int | None, column: str | None, value: str | None = None) -> str:
        out = f"COPY {self.table}" if self.table else "COPY"
        if line is not None:
            out += f", line {line}"
        if column is not None:
            out += f", column {column}"
            if value is not None:
                out += f': "{value}"'
        return out

    def _column_count_error(self, block: bytes, skip: int, first_line: int) -> None:
        """Find the first row with a wrong number of fields and raise PostgreSQL's error for it."""
        rows = self._split_rows(block)
        for i, fields in enumerate(rows[skip:]):
            line = first_line + i
            if len(fields) < len(self.fields):
                missing = self.fields[len(fields)].name
                raise SqlError("22P04", f'missing data for column "{missing}"', detail=self._context(line, None))
            if len(fields) > len(self.fields):
                raise SqlError("22P04", "extra data after last expected column", detail=self._context(line, None))
        raise SqlError("22P04", "wrong number of fields in COPY data", detail=self._context(None, None))

    def _split_rows(self, block: bytes) -> list[list[str]]:
        text = block.decode("utf-8", errors="replace")
        if self.format == "csv":
            import csv

            reader = csv.reader(io.StringIO(text, newline=""), delimiter=self.delimiter, quotechar=self.quote,
                                doublequote=self.escape == self.quote,
                                escapechar=None if self.escape == self.quote else self.escape, strict=False)
            return [r for r in reader]
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [ln.rstrip("\r").split(self.delimiter) for ln in lines]

    def _postprocess(self, table: pa.Table, first_line: int) -> pa.Table:
        """Text-format escapes and PostgreSQL-only checks on a directly converted table."""
        cols = []
        for i, f in enumerate(self.fields):
            col = table.column(i).combine_chunks() if table.column(i).num_chunks != 1 else table.column(i).chunk(0)
            if self.format == "text" and pa.types.is_string(col.type):
                col = _unescape_text(col)
            if not _is_direct(f.type):
                col = self._convert_column(col, f, first_line)
            cols.append(col)
        return pa.Table.from_arrays(cols, schema=self._schema)

    def _convert(self, strings: pa.Table, first_line: int) -> pa.Table:
        cols = []
        for i, f in enumerate(self.fields):
            col = strings.column(i)
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            if self.format == "text":
                col = _unescape_text(col)
            cols.append(self._convert_column(col, f, first_line))
        return pa.Table.from_arrays(cols, schema=self._schema)

    def _convert_column(self, col: pa.Array, f: ResultField, first_line: int) -> pa.Array:
        try:
            return text_to_arrow(col, f.type, timezone=self.timezone)
        except SqlError as e:
            row = getattr(e, "row_index", None)
            bad = getattr(e, "bad_value", None)
            e.detail = self._context(first_line + row if row is not None else None, f.name, bad)
            raise

    # -- binary ----------------------------------------------------------------------------------

    def _feed_binary(self, *, final: bool) -> list[pa.RecordBatch]:
        buf = self._buf
        if not final and len(buf) < min(self.block_bytes, _BINARY_PARSE_BYTES):
            return []
        pos = 0
        if not self._bin_header_seen:
            if len(buf) < 19:
                if final:
                    raise SqlError("22P04", "COPY file signature not recognized")
                return []
            if bytes(buf[:11]) != BINARY_SIGNATURE:
                raise SqlError("22P04", "COPY file signature not recognized")
            flags, ext = struct.unpack_from(">ii", buf, 11)
            if flags & 0x10000:
                raise SqlError("22P04", "invalid COPY file header (WITH OIDS)")
            if flags & 0xFFFE0000:
                raise SqlError("22P04", "unrecognized critical flags in COPY file header")
            if ext < 0 or len(buf) < 19 + ext:
                if final or ext < 0:
                    raise SqlError("22P04", "invalid COPY file header (wrong length)")
                return []
            pos = 19 + ext
            self._bin_header_seen = True
        ncols = len(self.fields)
        unpack_h = struct.Struct(">h").unpack_from
        unpack_i = struct.Struct(">i").unpack_from
        blen = len(buf)
        starts: list[int] = []
        lens: list[int] = []
        nrows = 0
        while not self._done:
            if pos + 2 > blen:
                break
            (nf,) = unpack_h(buf, pos)
            if nf == -1:
                pos += 2
                self._done = True
                break
            if nf != ncols:
                raise SqlError("22P04", f"row field count is {nf}, expected {ncols}",
                               detail=self._context(self.rows + self._pending_rows + nrows + 1, None))
            p = pos + 2
            row_ok = True
            for _ in range(ncols):
                if p + 4 > blen:
                    row_ok = False
                    break
                (ln,) = unpack_i(buf, p)
                p += 4
                starts.append(p)
                lens.append(ln)
                if ln > 0:
                    p += ln
                    if p > blen:
                        row_ok = False
                        break
                elif ln < -1:
                    raise SqlError("22P04", "invalid field size",
                                   detail=self._context(self.rows + self._pending_rows + nrows + 1, None))
            if not row_ok:
                del starts[nrows * ncols:], lens[nrows * ncols:]
                break
            nrows += 1
            pos = p
        if nrows:
            self._convert_binary_rows(buf, starts, lens, nrows)
        del buf[:pos]
        out: list[pa.RecordBatch] = []
        if final and not self._done:
            if buf:
                raise SqlError("22P04", "unexpected EOF in COPY data")
            # EOF where a tuple would start ends the data, as in PostgreSQL (which does not
            # require the -1 trailer; the ADBC driver's adbc_ingest sends none)
            self._done = True
        if self._done and len(buf) > 0:
            # PostgreSQL ignores nothing after the trailer: it must be the end of the data.
            raise SqlError("22P04", "received copy data after EOF marker")
        if self._pending_rows and (self._done or final or self._pending_rows >= _BATCH_ROWS):
            out.append(self._binary_batch())
        return out

    def _convert_binary_rows(self, buf: bytearray, starts: list[int], lens: list[int], nrows: int) -> None:
        ncols = len(self.fields)
        mem = np.frombuffer(buf, dtype=np.uint8)
        st = np.array(starts, dtype=np.int64).reshape(nrows, ncols)
        ln = np.array(lens, dtype=np.int64).reshape(nrows, ncols)
        first_row = self.rows + self._pending_rows + 1
        arrays = []
        for j, f in enumerate(self.fields):
            arrays.append(self._binary_column(f, mem, st[:, j], ln[:, j], first_row))
        del mem
        self._pending.append(arrays)
        self._pending_rows += nrows

    def _binary_batch(self) -> pa.RecordBatch:
        cols = [pa.concat_arrays([chunk[j] for chunk in self._pending]) for j in range(len(self.fields))]
        self.rows += self._pending_rows
        self._pending = []
        self._pending_rows = 0
        return pa.RecordBatch.from_arrays(cols, schema=self._schema)

    def _binary_column(self, f: ResultField, mem: np.ndarray, st: np.ndarray, ln: np.ndarray,
                       first_row: int) -> pa.Array:
        ctype = f.type
        name = ctype.pg.name
        nulls = ln < 0
        mask = nulls if nulls.any() else None
        fast = _BINARY_FAST.get(name) if not ctype.is_array else None
        if fast is not None:
            np_type, width, convert = fast
            ok = (ln == width) | nulls
            if not ok.all():
                bad = int(np.flatnonzero(~ok)[0])
                raise SqlError("22P03", f"incorrect binary data format for type {ctype.pg.sql_name}",
                               detail=self._context(first_row + bad, f.name))
            idx = np.where(nulls, 0, st)[:, None] + np.arange(width)[None, :]
            raw = mem[idx].reshape(-1).view(np_type) if len(mem) else np.zeros(len(st), np_type)
            return convert(raw, mask, ctype)
        # Variable-length values: gather them into one Arrow binary array.
        sizes = np.where(nulls, 0, ln)
        offsets = np.zeros(len(st) + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        total = int(offsets[-1])
        if total:
            idx = np.repeat(st - offsets[:-1], sizes) + np.arange(total)
            data = mem[idx]
        else:
            data = np.zeros(0, np.uint8)
        values = pa.Array.from_buffers(pa.large_binary(), len(st), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        if mask is not None:
            values = pc.if_else(pa.array(~mask), values, pa.scalar(None, pa.large_binary()))
        if name in ("text", "varchar", "bpchar", "name", "char", "json", "unknown") and not ctype.is_array and not (
                name in ("varchar", "bpchar") and ctype.length is not None):
            try:
                return values.cast(pa.large_string()).cast(pa.string())
            except pa.ArrowInvalid:
                raise SqlError("22021", 'invalid byte sequence for encoding "UTF8"',
                               detail=self._context(None, f.name)) from None
        if name == "bytea" and not ctype.is_array:
            return values.cast(pa.binary())
        out: list[Any] = []
        for i, v in enumerate(values.to_pylist()):
            if v is None:
                out.append(None)
                continue
            try:
                out.append(parse_binary_value(ctype, v, timezone=self.timezone))
            except SqlError as e:
                e.detail = self._context(first_row + i, f.name)
                raise
        try:
            return python_to_arrow(out, ctype)
        except SqlError as e:
            e.detail = self._context(None, f.name)
            raise


def _mk_int(t: pa.DataType):
    def conv(raw: np.ndarray, mask: np.ndarray | None, ctype: ColumnType) -> pa.Array:
        return pa.array(raw.astype(t.to_pandas_dtype()), t, mask=mask)
    return conv


def _conv_float(raw: np.ndarray, mask: np.ndarray | None, ctype: ColumnType) -> pa.Array:
    t = ctype.arrow()
    return pa.array(raw.astype(t.to_pandas_dtype()), t, mask=mask)


def _conv_bool(raw: np.ndarray, mask: np.ndarray | None, ctype: ColumnType) -> pa.Array:
    return pa.array(raw != 0, pa.bool_(), mask=mask)


def _conv_date(raw: np.ndarray, mask: np.ndarray | None, ctype: ColumnType) -> pa.Array:
    days = raw.astype(np.int64)
    special = (days == 2**31 - 1) | (days == -(2**31))  # +/-infinity keep their sentinels
    out = np.where(special, days, days + PG_EPOCH_DAYS).astype(np.int32)
    return pa.array(out, pa.int32(), mask=mask).cast(pa.date32())


def _conv_ts(raw: np.ndarray, mask: np.ndarray | None, ctype: ColumnType) -> pa.Array:
    us = raw.astype(np.int64)
    special = (us == np.iinfo(np.int64).max) | (us == np.iinfo(np.int64).min)
    out = np.where(special, us, us + np.where(special, 0, PG_EPOCH_US))
    return pa.array(out, pa.int64(), mask=mask).cast(ctype.arrow())


def _conv_time(raw: np.ndarray, mask: np.ndarray | None, ctype: ColumnType) -> pa.Array:
    return pa.array(raw.astype(np.int64), pa.int64(), mask=mask).cast(pa.time64("us"))


_BINARY_FAST: dict[str, tuple[str, int, Any]] = {
    "int2": (">i2", 2, _mk_int(pa.int16())),
    "int4": (">i4", 4, _mk_int(pa.int32())),
    "int8": (">i8", 8, _mk_int(pa.int64())),
    "float4": (">f4", 4, _conv_float),
    "float8": (">f8", 8, _conv_float),
    "bool": ("u1", 1, _conv_bool),
    "date": (">i4", 4, _conv_date),
    "timestamp": (">i8", 8, _conv_ts),
    "timestamptz": (">i8", 8, _conv_ts),
    "time": (">i8", 8, _conv_time),
}

_ESCAPES = {b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"v": b"\v"}
_ESC_RE = re.compile(rb"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.S)


def _unescape_one(s: str) -> str:
    """One COPY text value with its backslash escapes resolved (octal/hex escapes are bytes)."""

    def rep(m: re.Match[bytes]) -> bytes:
        g = m.group(1)
        if g[:1] == b"x" and len(g) > 1:
            return bytes([int(g[1:], 16)])
        if g[:1] in b"01234567" and g[:1] != b"":
            return bytes([int(g, 8) & 0xFF])
        return _ESCAPES.get(g, g)

    raw = _ESC_RE.sub(rep, s.encode("utf-8"))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SqlError("22021", 'invalid byte sequence for encoding "UTF8"') from None


def _unescape_text(col: pa.Array) -> pa.Array:
    """Undo COPY text-format backslash escapes; only the values containing a backslash are touched."""
    has = pc.fill_null(pc.match_substring(col, "\\"), False)
    mask = has.to_numpy(zero_copy_only=False)
    if not mask.any():
        return col
    idx = np.flatnonzero(mask)
    fixed = [_unescape_one(v) for v in col.take(pa.array(idx)).to_pylist()]
    return pc.replace_with_mask(col, pa.array(mask), pa.array(fixed, col.type))


class CopyEncoder:
    """Builds ``COPY ... TO STDOUT`` payloads (text, csv, binary) from Arrow batches."""

    def __init__(self, fields: list[ResultField], format: str = "text", delimiter: str | None = None,
                 null: str | None = None, header: bool = False, quote: str | None = '"', escape: str | None = None,
                 *, timezone: str = "UTC") -> None:
        self.fields = list(fields)
        self.format = format.lower()
        self.delimiter, self.null, self.quote, self.escape = _check_options(self.format, delimiter, null, quote, escape)
        self.header = header
        self.timezone = timezone
        self._quote_re = "[" + "".join(re.escape(c) for c in {self.delimiter, self.quote, "\n", "\r"}) + "]"

    def header_bytes(self) -> bytes:
        """The binary signature+header, or the header line of text/csv with HEADER (else b'')."""
        if self.format == "binary":
            return BINARY_HEADER
        if not self.header:
            return b""
        names = pa.array([f.name for f in self.fields], pa.string())
        cells = self._csv_quote(names) if self.format == "csv" else self._text_escape(names)
        return (self.delimiter.join(cells.to_pylist()) + "\n").encode()

    def trailer(self) -> bytes:
        return BINARY_TRAILER if self.format == "binary" else b""

    def encode(self, batch: pa.RecordBatch) -> bytes:
        """The rows of ``batch`` in the COPY format (may be sent as one or several CopyData)."""
        if batch.num_rows == 0:
            return b""
        if self.format == "binary":
            cols = [encode_binary_column(batch.column(i), f.type, timezone=self.timezone)
                    for i, f in enumerate(self.fields)]
            if not cols:
                return struct.pack(">h", 0) * batch.num_rows
            return assemble_rows(cols, datarow=False)
        cells = []
        for i, f in enumerate(self.fields):
            txt = encode_text_column(batch.column(i), f.type, timezone=self.timezone)
            plain = (f.type.pg.name in _PLAIN_OUTPUT and not f.type.is_array
                     and self.delimiter in ("\t", ",", "|", ";"))
            if self.format == "csv":
                txt = self._csv_quote(txt, check=not plain)
            elif not plain:
                txt = self._text_escape(txt)
            cells.append(txt)
        if not cells:
            return b"\n" * batch.num_rows
        joined = pc.binary_join_element_wise(*[pc.fill_null(c, self.null) for c in cells], self.delimiter)
        with_nl = pc.binary_join_element_wise(joined, "\n", "")
        return _array_bytes(with_nl)

    def _text_escape(self, col: pa.Array) -> pa.Array:
        specials = "[\\\\\n\r\t\b\f\v" + re.escape(self.delimiter) + "]"
        if not pc.any(pc.match_substring_regex(col, specials)).as_py():
            return col
        col = pc.replace_substring(col, "\\", "\\\\")
        for ch, rep in (("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\b", "\\b"), ("\f", "\\f"), ("\v", "\\v")):
            col = pc.replace_substring(col, ch, rep)
        if self.delimiter not in "\n\r\t\b\f\v":
            col = pc.replace_substring(col, self.delimiter, "\\" + self.delimiter)
        return col

    def _csv_quote(self, col: pa.Array, check: bool = True) -> pa.Array:
        need = pc.equal(col, self.null)
        if check:
            need = pc.or_(need, pc.match_substring_regex(col, self._quote_re))
            if len(self.fields) == 1:
                need = pc.or_(need, pc.equal(col, "\\."))
        need = pc.fill_null(need, False)
        if not pc.any(need).as_py():
            return col
        body = col
        if self.escape != self.quote:
            body = pc.replace_substring(body, self.escape, self.escape + self.escape)
        body = pc.replace_substring(body, self.quote, self.escape + self.quote)
        quoted = pc.binary_join_element_wise(self.quote, body, self.quote, "")
        return pc.if_else(need, quoted, col)


def copy_row_count(batches: list[pa.RecordBatch]) -> int:
    return sum(b.num_rows for b in batches)


__all__ += ["copy_row_count", "BINARY_HEADER", "BINARY_TRAILER"]
