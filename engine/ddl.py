"""CREATE TABLE: PostgreSQL's, with GreptimeDB's TIME INDEX, WITH options, ENGINE and COMMENT.

The dialect (:mod:`tidegate.dialect`) parses the whole statement, GreptimeDB's clauses and a
refreshable table's ``FORMAT ... ENCODE`` included, into sqlglot's ``exp.Create``;
:func:`create_table` reads that tree into the table to create and checks it. The inverse,
:func:`render_create_table`, prints the statement SHOW CREATE TABLE returns. Also here: the token
reader the PostgreSQL utility statements (roles, sequences, indexes) are read with, and a
sequence's options.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlglot import exp

from catalog.store import DATABASE_NAME, ColumnDef, TableDef
from tidegate.dialect import (FormatEncodeProperty, IdentityColumnConstraint, OnCommitDropProperty, OptionsProperty,
                              PartitionOnColumnsProperty, Tidegate, TimeIndexColumnConstraint)
from tidegate.errors import SqlError
from tidegate.pgtypes import ColumnType, column_type
from tidegate.sqllex import Token, scan

T = TypeVar("T")


class TokenReader:
    """A cursor over a statement's tokens (:func:`scan`) with PostgreSQL-style syntax errors, for the
    statements sqlglot does not parse (flows, roles and grants)."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.toks = scan(sql)
        while self.toks and self.toks[-1].text == ";":
            self.toks.pop()
        self.i = 0

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def word(self, k: int = 0) -> str:
        t = self.peek(k)
        return t.upper if t is not None and t.kind == "word" else ""

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def error(self, tok: Token | None = None) -> SqlError:
        tok = tok if tok is not None else self.peek()
        if tok is None:
            return SqlError("42601", "syntax error at end of input", position=len(self.sql.rstrip().rstrip(";")) + 1)
        return SqlError("42601", f'syntax error at or near "{tok.text}"', position=tok.start + 1)

    def accept(self, *words: str) -> bool:
        if all(self.word(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        for w in words:
            if self.word() != w:
                raise self.error()
            self.i += 1

    def expect_text(self, text: str) -> None:
        t = self.peek()
        if t is None or t.text != text:
            raise self.error()
        self.i += 1

    def ident(self) -> str:
        t = self.peek()
        if t is None or t.kind not in ("word", "qid"):
            raise self.error()
        self.i += 1
        return ident_value(t)

    def qualified(self) -> list[str]:
        parts = [self.ident()]
        while self.peek() is not None and self.peek().text == "." and self.i + 1 < len(self.toks):
            self.i += 1
            parts.append(self.ident())
        return parts

    def string(self) -> str:
        t = self.peek()
        if t is None or t.kind != "str":
            raise self.error()
        self.i += 1
        return t.value

    def done(self) -> None:
        if not self.at_end():
            raise self.error()

    def one_of(self, *words: str) -> str:
        """The next word, which must be one of ``words``."""
        w = self.word()
        if w not in words:
            raise self.error()
        self.i += 1
        return w

    def comma_list(self, item: Callable[[], T]) -> list[T]:
        out = [item()]
        while self.peek() is not None and self.peek().text == ",":
            self.i += 1
            out.append(item())
        return out


def ident_value(tok: Token) -> str:
    """An identifier token's name: quoted kept as is, unquoted folded to lower case."""
    return tok.ident if tok.ident is not None else tok.text.lower()


@dataclass
class CreateTable:
    schema: str | None
    name: str
    if_not_exists: bool
    columns: list[ColumnDef] = field(default_factory=list)
    primary_key: list[str] = field(default_factory=list)
    time_index: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    as_query: exp.Expression | None = None
    as_query_sql: str | None = None
    as_columns: list[str] = field(default_factory=list)  # CREATE TABLE t (a, b) AS query: the names
    # columns backed by a sequence: SERIAL types (identity None) and identity columns ("a" / "d"),
    # with the sequence options given (parse_sequence_options)
    generated: dict[str, tuple[str | None, dict]] = field(default_factory=dict)
    temp: bool = False  # CREATE TEMP[ORARY] TABLE: the session's own (pg_temp)
    on_commit: str | None = None  # ON COMMIT PRESERVE ROWS / DELETE ROWS / DROP: "preserve" | "delete" | "drop"
    notices: list[str] = field(default_factory=list)  # sent with the command's result
    # UNIQUE / FOREIGN KEY constraints (see catalog.store.TableDef.constraints); "name" None until
    # the executor chooses PostgreSQL's default name (choose_constraint_names)
    constraints: list[dict] = field(default_factory=list)


# A temporary table's ON COMMIT action other than PRESERVE ROWS, kept in TableDef.options.
ON_COMMIT_OPTION = "on_commit"


def _position(node: exp.Expression | None) -> int | None:
    start = node.meta.get("start") if node is not None else None
    return start + 1 if isinstance(start, int) else None


def create_table(tree: exp.Create) -> CreateTable:
    """The table a ``CREATE [TEMP] TABLE`` tree of the dialect (:mod:`tidegate.dialect`) asks for:
    PostgreSQL's columns and constraints, GreptimeDB's TIME INDEX, table options, ENGINE and
    COMMENT, a refreshable table's FORMAT ... ENCODE, ``ON COMMIT`` of a temporary table, or the
    query of CREATE TABLE AS. A clause tidegate does not implement is 0A000, never ignored."""
    schema_node = tree.this if isinstance(tree.this, exp.Schema) else None
    target = schema_node.this if schema_node is not None else tree.this
    if not isinstance(target, exp.Table) or isinstance(target.this, exp.Dot):
        raise SqlError("42601", f"improper qualified name (too many dotted names): {target.sql(dialect=Tidegate)}")
    if target.catalog and target.catalog != DATABASE_NAME:
        raise SqlError("0A000", f'cross-database references are not implemented: "{target.sql(dialect=Tidegate)}"')
    ct = CreateTable(target.db or None, target.name, bool(tree.args.get("exists")))
    for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
        _table_property(prop, ct)
    query = tree.expression
    if query is not None:
        _check_on_commit(ct)
        ct.as_query = query
        ct.as_query_sql = query.sql(dialect=Tidegate)
        if schema_node is not None:  # CREATE TABLE t (a, b) AS query: the result's column names
            ct.as_columns = [_ident_name(e) for e in schema_node.expressions]
        return ct
    elements = schema_node.expressions if schema_node is not None else []
    if not elements:
        raise SqlError("42601", "a table must have at least one column")
    for node in elements:
        if isinstance(node, exp.ColumnDef):
            ct.columns.append(_column_def(node, ct, creating=True))
            continue
        name = _ident_name(node.this) if isinstance(node, exp.Constraint) else None
        inner = node.expressions[0] if isinstance(node, exp.Constraint) and len(node.expressions) == 1 else node
        if isinstance(inner, TimeIndexColumnConstraint) and inner.expressions:
            _time_index(ct, _ident_name(inner.expressions[0]))
        elif isinstance(inner, exp.PrimaryKey):
            if ct.primary_key:
                raise SqlError("42P16", f'multiple primary keys for table "{ct.name}" are not allowed')
            ct.primary_key = [_ident_name(e) for e in inner.expressions]
        elif isinstance(inner, (exp.UniqueColumnConstraint, exp.ForeignKey)):
            ct.constraints.append(table_constraint(inner, name))
        elif isinstance(inner, (exp.Constraint, exp.CheckColumnConstraint)) or isinstance(node, exp.Constraint):
            raise SqlError("0A000", f"table constraint {node.sql(dialect=Tidegate)} is not supported",
                           hint="PRIMARY KEY, UNIQUE and FOREIGN KEY constraints are supported.")
        else:
            raise SqlError("0A000", f"table element {node.sql(dialect=Tidegate)} is not supported")
    for c in ct.columns:
        gen = ct.generated.get(c.name)
        if gen is None:
            continue
        if c.default is not None:
            if gen[0] is None:
                raise SqlError("42601", f'multiple default values specified for column "{c.name}" of table "{ct.name}"')
            raise SqlError("42601", f'both default and identity specified for column "{c.name}" of table "{ct.name}"')
        if c.type.pg.name not in ("int2", "int4", "int8"):
            raise SqlError("22023", "identity column type must be smallint, integer, or bigint")
        c.not_null = True
        c.identity = gen[0]
    _check_on_commit(ct)
    _validate(ct)
    return ct


def _time_index(ct: CreateTable, column: str) -> None:
    if ct.time_index is not None and ct.time_index != column:
        raise SqlError("42P16", f'multiple TIME INDEX columns for table "{ct.name}" are not allowed')
    ct.time_index = column


# GreptimeDB's table engines: mito is the time-series table every tidegate table is.
_ENGINES = ("mito",)


def _table_property(prop: exp.Expression, ct: CreateTable) -> None:
    """One clause after the column list (sqlglot and the dialect read them in any order)."""
    if isinstance(prop, exp.TemporaryProperty):
        ct.temp = True
    elif isinstance(prop, exp.UnloggedProperty):
        raise SqlError("0A000", "CREATE UNLOGGED TABLE is not supported",
                       hint="Create an ordinary table (every table is logged in its Delta log).")
    elif isinstance(prop, (exp.OnCommitProperty, OnCommitDropProperty)):
        if ct.on_commit is not None:
            raise SqlError("42601", "conflicting or redundant options")
        ct.on_commit = "drop" if isinstance(prop, OnCommitDropProperty) else (
            "delete" if prop.args.get("delete") else "preserve")
    elif isinstance(prop, OptionsProperty):
        for p in prop.expressions:
            ct.options[p.this.name.lower()] = p.args["value"].name
    elif isinstance(prop, FormatEncodeProperty):
        _format_encode(prop, ct.options)
    elif isinstance(prop, exp.SchemaCommentProperty):
        ct.comment = prop.this.name
    elif isinstance(prop, exp.EngineProperty):
        engine = prop.this.name.lower()
        if engine not in _ENGINES:
            raise SqlError("0A000", f"ENGINE = {prop.this.name} is not supported: every table is GreptimeDB's "
                                    "mito engine's kind (a time-series table stored as a Delta table)",
                           hint="Write ENGINE = mito, or leave the ENGINE clause out.")
    elif isinstance(prop, PartitionOnColumnsProperty):
        # GreptimeDB's partition rules spread a table's regions over datanodes; one Delta table
        # has no regions, and Delta partitions (one directory per distinct value) are not ranges.
        raise SqlError("0A000", "PARTITION ON COLUMNS is not supported: a table is stored as one Delta table",
                       hint="Remove the PARTITION ON COLUMNS (...) (...) clause; queries return the same rows "
                            "without it.")
    else:
        raise SqlError("0A000", f"CREATE TABLE ... {prop.sql(dialect=Tidegate)} is not supported")


def _check_on_commit(ct: CreateTable) -> None:
    if ct.on_commit is not None and not ct.temp:
        raise SqlError("42P16", "ON COMMIT can only be used on temporary tables",
                       hint="Write CREATE TEMP TABLE, or leave ON COMMIT out.")


_SERIALS = {"SERIAL": "integer", "SERIAL4": "integer", "BIGSERIAL": "bigint", "SERIAL8": "bigint",
            "SMALLSERIAL": "smallint", "SERIAL2": "smallint"}


# -- sequences ----------------------------------------------------------------------------------

_SEQ_TYPES = {"smallint": "int2", "int2": "int2", "integer": "int4", "int": "int4", "int4": "int4",
              "bigint": "int8", "int8": "int8"}


@dataclass
class SequenceStatement:
    action: str  # "create" | "alter" | "drop"
    names: list[list[str]]  # qualified names (one for CREATE/ALTER)
    if_exists: bool = False  # IF NOT EXISTS for CREATE
    options: dict = field(default_factory=dict)
    cascade: bool = False


def _signed(r: TokenReader) -> int:
    sign = 1
    t = r.peek()
    if t is not None and t.text in ("-", "+"):
        sign = -1 if t.text == "-" else 1
        r.i += 1
        t = r.peek()
    if t is None or t.kind != "num" or not t.text.isdigit():
        raise r.error()
    r.i += 1
    value = sign * int(t.text)
    if not -2 ** 63 <= value < 2 ** 63:
        raise SqlError("22003", f'value "{value}" is out of range for type bigint')
    return value


def parse_sequence_options(r: TokenReader, *, alter: bool = False, in_identity: bool = False) -> dict:
    """Sequence options up to the end of ``r`` -> {"type", "increment", "min", "max", "start",
    "restart", "cache", "cycle", "owned_by"}; a missing MIN/MAXVALUE is absent, NO MINVALUE is None.
    Options tidegate does not implement are refused (0A000) with what to do instead."""
    out: dict = {}

    def put(key: str, value: object) -> None:
        if key in out:
            raise SqlError("42601", "conflicting or redundant options")
        out[key] = value

    while not r.at_end():
        w = r.word()
        if w == "AS" and not in_identity:
            r.i += 1
            t = r.peek()
            name = ident_value(t) if t is not None and t.kind in ("word", "qid") else ""
            r.i += 1
            if name == "pg_catalog" and r.peek() is not None and r.peek().text == ".":
                r.i += 1
                name = r.ident()
            if name == "double" or name not in _SEQ_TYPES:
                raise SqlError("22023", "sequence type must be smallint, integer, or bigint")
            put("type", _SEQ_TYPES[name])
        elif w == "INCREMENT":
            r.i += 1
            r.accept("BY")
            put("increment", _signed(r))
        elif w == "MINVALUE":
            r.i += 1
            put("min", _signed(r))
        elif w == "MAXVALUE":
            r.i += 1
            put("max", _signed(r))
        elif w == "NO" and r.word(1) in ("MINVALUE", "MAXVALUE", "CYCLE"):
            which = r.word(1)
            r.i += 2
            put({"MINVALUE": "min", "MAXVALUE": "max", "CYCLE": "cycle"}[which], None if which != "CYCLE" else False)
        elif w == "START":
            r.i += 1
            r.accept("WITH")
            put("start", _signed(r))
        elif w == "RESTART" and alter:
            r.i += 1
            if r.accept("WITH") or (r.peek() is not None and (r.peek().kind == "num" or r.peek().text in "-+")):
                put("restart", _signed(r))
            else:
                put("restart", "start")
        elif w == "CACHE":
            r.i += 1
            cache = _signed(r)
            if cache <= 0:
                raise SqlError("22023", f"CACHE ({cache}) must be greater than zero")
            if cache != 1:
                raise SqlError("0A000", "sequence CACHE greater than 1 is not supported",
                               hint="Omit CACHE: tidegate reserves each value durably and hands out no gaps on restart.")
            put("cache", cache)
        elif w == "CYCLE":
            r.i += 1
            put("cycle", True)
        elif w == "OWNED" and r.word(1) == "BY" and not in_identity:
            r.i += 2
            if r.accept("NONE"):
                put("owned_by", None)
            else:
                parts = r.qualified()
                if len(parts) < 2:
                    raise SqlError("42601", "invalid OWNED BY option", hint="Specify OWNED BY table.column or OWNED BY NONE.")
                put("owned_by", parts)
        elif w in ("SEQUENCE", "LOGGED", "UNLOGGED") or (w == "SET" and r.word(1) in ("LOGGED", "UNLOGGED", "SCHEMA")):
            raise SqlError("0A000", f"sequence option {w}{' ' + r.word(1) if w == 'SET' else ''} is not supported",
                           hint="Leave it out; create the sequence with CREATE SEQUENCE name instead.")
        else:
            raise r.error()
    return out


def parse_sequence_statement(sql: str) -> SequenceStatement:
    """CREATE [IF NOT EXISTS] / ALTER [IF EXISTS] / DROP [IF EXISTS] SEQUENCE."""
    r = TokenReader(sql)
    verb = r.one_of("CREATE", "ALTER", "DROP")
    if verb == "CREATE" and r.word() in ("TEMP", "TEMPORARY", "UNLOGGED"):
        raise SqlError("0A000", f"CREATE {r.word()} SEQUENCE is not supported",
                       hint="Create an ordinary sequence (CREATE SEQUENCE name).")
    r.expect("SEQUENCE")
    stmt = SequenceStatement(verb.lower(), [])
    if verb == "CREATE" and r.accept("IF", "NOT", "EXISTS"):
        stmt.if_exists = True
    elif verb != "CREATE" and r.accept("IF", "EXISTS"):
        stmt.if_exists = True
    if verb == "DROP":
        stmt.names = r.comma_list(r.qualified)
        if r.accept("CASCADE"):
            stmt.cascade = True
        else:
            r.accept("RESTRICT")
        r.done()
        return stmt
    stmt.names = [r.qualified()]
    if verb == "ALTER" and r.word() in ("RENAME", "OWNER"):
        raise SqlError("0A000", f"ALTER SEQUENCE ... {r.word()} {r.word(1)} is not supported",
                       hint="Create a new sequence (and setval it) instead.")
    stmt.options = parse_sequence_options(r, alter=verb == "ALTER")
    if verb == "ALTER" and not stmt.options:
        raise r.error()
    return stmt


def sequence_params(options: dict, old: "SequenceParams | None" = None) -> "SequenceParams":
    """The definition CREATE (``old`` None) or ALTER SEQUENCE gives, checked as PostgreSQL's
    init_params does (22023)."""
    from catalog.store import SEQUENCE_TYPE_NAMES, SEQUENCE_TYPE_RANGES, SequenceParams

    base = old or SequenceParams()
    typ = options.get("type", base.type)
    lo, hi = SEQUENCE_TYPE_RANGES[typ]
    inc = options.get("increment", base.increment)
    if inc == 0:
        raise SqlError("22023", "INCREMENT must not be zero")
    if "max" in options and options["max"] is not None:
        mx = options["max"]
    elif old is None or options.get("max", 0) is None or ("type" in options and old.max == SEQUENCE_TYPE_RANGES[old.type][1]) \
            or ("increment" in options and old is not None and (old.increment > 0) != (inc > 0)
                and old.max in (-1, SEQUENCE_TYPE_RANGES[old.type][1])):
        mx = hi if inc > 0 else -1
    else:
        mx = base.max
    if "min" in options and options["min"] is not None:
        mn = options["min"]
    elif old is None or options.get("min", 0) is None or ("type" in options and old.min == SEQUENCE_TYPE_RANGES[old.type][0]) \
            or ("increment" in options and old is not None and (old.increment > 0) != (inc > 0)
                and old.min in (1, SEQUENCE_TYPE_RANGES[old.type][0])):
        mn = 1 if inc > 0 else lo
    else:
        mn = base.min
    tname = SEQUENCE_TYPE_NAMES[typ]
    if not lo <= mx <= hi:
        raise SqlError("22023", f"MAXVALUE ({mx}) is out of range for sequence data type {tname}")
    if not lo <= mn <= hi:
        raise SqlError("22023", f"MINVALUE ({mn}) is out of range for sequence data type {tname}")
    if mn >= mx:
        raise SqlError("22023", f"MINVALUE ({mn}) must be less than MAXVALUE ({mx})")
    if "start" in options:
        start = options["start"]
    elif old is None:
        start = mn if inc > 0 else mx
    else:
        start = base.start
    if start < mn:
        raise SqlError("22023", f"START value ({start}) cannot be less than MINVALUE ({mn})")
    if start > mx:
        raise SqlError("22023", f"START value ({start}) cannot be greater than MAXVALUE ({mx})")
    restart = options.get("restart")
    if restart is not None and restart != "start":
        if restart < mn:
            raise SqlError("22023", f"RESTART value ({restart}) cannot be less than MINVALUE ({mn})")
        if restart > mx:
            raise SqlError("22023", f"RESTART value ({restart}) cannot be greater than MAXVALUE ({mx})")
    return SequenceParams(typ, start, inc, mn, mx, options.get("cache", base.cache),
                          bool(options.get("cycle", base.cycle)),
                          base.owned_by)


def _ident_name(e: exp.Expression) -> str:
    if isinstance(e, exp.Identifier):
        return e.this if e.quoted else e.this.lower()
    if isinstance(e, exp.Column):
        return _ident_name(e.this)
    if isinstance(e, exp.Ordered):
        return _ident_name(e.this)
    return e.name.lower()


_TYPE_TEXT = re.compile(r"^\s*([A-Za-z ]+?)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*((?:\[\d*\])*)\s*$")
_SQLGLOT_NAMES = {"DECIMAL": "numeric", "INT": "integer", "TIMESTAMPTZ": "timestamptz", "DOUBLE PRECISION": "float8",
                  "CHAR": "char", "VARCHAR": "varchar", "SERIAL": "integer", "BIGSERIAL": "bigint",
                  "SMALLSERIAL": "smallint", "DATETIME": "timestamp", "TIMESTAMPNTZ": "timestamp"}


def type_from_sqlglot(dt: exp.DataType) -> ColumnType:
    """A sqlglot DataType (as parsed from PostgreSQL) -> ColumnType."""
    text = dt.sql("postgres")
    m = _TYPE_TEXT.match(text)
    if not m:
        raise SqlError("42704", f'type "{text.lower()}" does not exist')
    name, p1, p2, arr = m.groups()
    name = _SQLGLOT_NAMES.get(name.upper(), name.lower())
    params = [int(p) for p in (p1, p2) if p is not None]
    if name == "timestamptz" and params:
        return column_type("timestamptz", *params)
    ct = column_type(name + ("[]" if arr else ""), *params)
    if ct.pg.name in ("varchar", "bpchar") and ct.length is not None and ct.length < 1:
        raise SqlError("22023", f"length for type {ct.pg.name} must be at least 1")
    if ct.pg.name == "numeric" and ct.precision is not None:
        if not 1 <= ct.precision <= 38:
            raise SqlError("22023", f"NUMERIC precision {ct.precision} must be between 1 and 38")
        if ct.scale is not None and not 0 <= ct.scale <= ct.precision:
            raise SqlError("22023", f"NUMERIC scale {ct.scale} must be between 0 and precision {ct.precision}")
    return ct


def type_from_text(text: str) -> ColumnType:
    """A PostgreSQL type spelling (``varchar(20)``, ``timestamp with time zone``) -> ColumnType."""
    try:
        dt = exp.DataType.build(text, dialect=Tidegate)
    except Exception:  # noqa: BLE001 - sqlglot raises several kinds
        raise SqlError("42704", f'type "{text}" does not exist') from None
    return type_from_sqlglot(dt)


_SERIAL_TYPES = {exp.DataType.Type.SERIAL: "integer", exp.DataType.Type.BIGSERIAL: "bigint",
                 exp.DataType.Type.SMALLSERIAL: "smallint"}
_SERIAL_NAMES = {"serial4": "integer", "serial8": "bigint", "serial2": "smallint"}


def _serial_type(kind: exp.DataType) -> str | None:
    """The integer type a SERIAL spelling stands for, or None."""
    if kind.this in _SERIAL_TYPES:
        return _SERIAL_TYPES[kind.this]
    named = kind.args.get("kind")
    if kind.this == exp.DataType.Type.USERDEFINED and isinstance(named, exp.Identifier):
        return _SERIAL_NAMES.get(named.name.lower())
    return None


def _column_def(node: exp.ColumnDef, ct: CreateTable, *, creating: bool = False) -> ColumnDef:
    """A column of CREATE TABLE (``creating``) or of ALTER TABLE ADD COLUMN."""
    name = _ident_name(node.this)
    kind = node.args.get("kind")
    if kind is None:
        raise SqlError("42601", f'column "{name}" needs a type')
    serial = _serial_type(kind)
    if serial is not None and not creating:
        raise SqlError("0A000", "ALTER TABLE ADD COLUMN with a SERIAL type is not supported",
                       hint="Add an integer column, fill it, then CREATE SEQUENCE ... OWNED BY and ALTER COLUMN ... SET DEFAULT nextval(...).")
    if serial is not None:
        if name in ct.generated:
            raise SqlError("42701", f'column "{name}" specified more than once')
        ct.generated[name] = (None, {})
        kind = exp.DataType.build(serial, dialect=Tidegate)
    col = ColumnDef(name, type_from_sqlglot(kind))
    for cons in node.constraints:
        k = cons.args.get("kind")
        if isinstance(k, exp.NotNullColumnConstraint):
            col.not_null = not k.args.get("allow_null")
        elif isinstance(k, exp.DefaultColumnConstraint):
            col.default = default_text(k.this)
        elif isinstance(k, exp.PrimaryKeyColumnConstraint):
            if ct.primary_key:
                raise SqlError("42P16", f'multiple primary keys for table "{ct.name}" are not allowed')
            ct.primary_key = [name]
        elif isinstance(k, exp.CommentColumnConstraint):
            col.comment = k.this.name
        elif isinstance(k, exp.UniqueColumnConstraint):
            ct.constraints.append(unique_constraint(k, _ident_name(cons.this) if cons.this else None, [name]))
        elif isinstance(k, exp.Reference):
            ct.constraints.append(foreign_key(k, _ident_name(cons.this) if cons.this else None, [name]))
        elif isinstance(k, TimeIndexColumnConstraint) and creating and not k.expressions:
            _time_index(ct, name)
        elif isinstance(k, IdentityColumnConstraint) and creating:
            if name in ct.generated:
                raise SqlError("42601", f'multiple identity specifications for column "{name}" of table "{ct.name}"'
                               if ct.generated[name][0] else
                               f'both default and identity specified for column "{name}" of table "{ct.name}"')
            text = k.args.get("options")
            options = parse_sequence_options(TokenReader(text), in_identity=True) if text else {}
            ct.generated[name] = ("a" if k.this else "d", options)
        else:
            raise SqlError("0A000", f"column constraint {cons.sql(dialect=Tidegate)} is not supported")
    return col


# -- UNIQUE and FOREIGN KEY constraints ----------------------------------------------------------

def table_constraint(node: exp.Expression, name: str | None) -> dict:
    """A table-level UNIQUE (cols) / FOREIGN KEY (cols) REFERENCES ... as a constraint dict."""
    if isinstance(node, exp.UniqueColumnConstraint):
        schema = node.this
        if not isinstance(schema, exp.Schema) or not schema.expressions:
            raise SqlError("42601", "UNIQUE needs a column list: UNIQUE (col, ...)")
        return unique_constraint(node, name, [_ident_name(e) for e in schema.expressions])
    return foreign_key(node.args["reference"], name, [_ident_name(e) for e in node.expressions])


def unique_constraint(node: exp.UniqueColumnConstraint, name: str | None, columns: list[str]) -> dict:
    if node.args.get("nulls"):
        raise SqlError("0A000", "UNIQUE NULLS NOT DISTINCT is not supported",
                       hint="Use UNIQUE (NULLs distinct, the default) and declare the columns NOT NULL.")
    include = node.args.get("include")
    if include is not None and (include.args.get("include") or include.args.get("with_storage")
                                or include.args.get("tablespace")):
        raise SqlError("0A000", f"UNIQUE with index parameters ({include.sql('postgres')}) is not supported",
                       hint="Write UNIQUE (col, ...) without INCLUDE, WITH or USING INDEX TABLESPACE.")
    for opt in node.args.get("options") or []:
        if str(opt).upper() not in ("NOT DEFERRABLE", "INITIALLY IMMEDIATE"):
            raise SqlError("0A000", f"UNIQUE ... {opt} is not supported: constraints are checked immediately",
                           hint="Drop the DEFERRABLE clause.")
    if len(set(columns)) != len(columns):
        raise SqlError("42701", f'column "{next(c for c in columns if columns.count(c) > 1)}" appears twice in unique constraint')
    return {"type": "u", "name": name, "columns": columns}


_FK_ACTIONS = {"NO ACTION": "a", "RESTRICT": "r"}


def foreign_key(ref: exp.Reference, name: str | None, columns: list[str]) -> dict:
    """REFERENCES t [(cols)] [ON DELETE/UPDATE NO ACTION|RESTRICT] [MATCH SIMPLE]."""
    target = ref.this
    ref_columns: list[str] = []
    if isinstance(target, exp.Schema):
        ref_columns = [_ident_name(e) for e in target.expressions]
        target = target.this
    if not isinstance(target, exp.Table):
        raise SqlError("42601", "REFERENCES needs a table name")
    if target.args.get("catalog") is not None and _ident_name(target.args["catalog"]) != "tidegate":
        raise SqlError("0A000", f'cross-database references are not implemented: "{target.sql("postgres")}"')
    schema = _ident_name(target.args["db"]) if target.args.get("db") is not None else None
    fk: dict = {"type": "f", "name": name, "columns": columns, "ref": [schema, _ident_name(target.this)],
                "ref_columns": ref_columns, "on_delete": "a", "on_update": "a"}
    for opt in ref.args.get("options") or []:
        words = " ".join(str(opt).upper().split())
        if words.startswith(("ON DELETE ", "ON UPDATE ")):
            action = words[10:]
            if action not in _FK_ACTIONS:
                raise SqlError("0A000", f"FOREIGN KEY ... {words} is not supported",
                               hint="Use ON DELETE/ON UPDATE NO ACTION or RESTRICT (the default) and delete or "
                                    "update the referencing rows yourself.")
            fk["on_delete" if words.startswith("ON DELETE") else "on_update"] = _FK_ACTIONS[action]
        elif words in ("MATCH SIMPLE", "NOT DEFERRABLE", "INITIALLY IMMEDIATE"):
            continue
        else:
            raise SqlError("0A000", f"FOREIGN KEY ... {words} is not supported",
                           hint="Foreign keys are MATCH SIMPLE and checked immediately; drop the clause.")
    return fk


def choose_constraint_names(table: str, constraints: list[dict], taken: set[str]) -> list[dict]:
    """PostgreSQL's default names for unnamed constraints (``<table>_<cols>_key`` / ``_fkey``, a
    number appended while the name is taken); 42710 for a name given twice."""
    out = []
    for c in constraints:
        c = dict(c)
        if c["name"] is None:
            base = f"{table}_{'_'.join(c['columns'])}_{'key' if c['type'] == 'u' else 'fkey'}"
            name, k = base, 0
            while name in taken:
                k += 1
                name = f"{base}{k}"
            c["name"] = name
        elif c["name"] in taken:
            if c["type"] == "u":
                raise SqlError("42P07", f'relation "{c["name"]}" already exists')
            raise SqlError("42710", f'constraint "{c["name"]}" for relation "{table}" already exists')
        taken.add(c["name"])
        out.append(c)
    return out


def default_text(node: exp.Expression) -> str:
    """A DEFAULT expression's stored text; nextval('s') is kept as PostgreSQL shows it,
    ``nextval('s'::regclass)``."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == "nextval" and len(node.expressions) == 1:
        arg = node.expressions[0]
        if isinstance(arg, exp.Cast) and arg.to.sql("postgres").lower() == "regclass":
            arg = arg.this
        if isinstance(arg, exp.Literal) and arg.is_string:
            return f"nextval({quote_literal(arg.this)}::regclass)"
    return node.sql("postgres")


def _validate(ct: CreateTable) -> None:
    seen: set[str] = set()
    for c in ct.columns:
        if c.name in seen:
            raise SqlError("42701", f'column "{c.name}" specified more than once')
        seen.add(c.name)
    names = seen
    for k in ct.primary_key:
        if k not in names:
            raise SqlError("42703", f'column "{k}" named in key does not exist')
    for con in ct.constraints:
        for k in con["columns"]:
            if k not in names:
                raise SqlError("42703", f'column "{k}" named in key does not exist')
    if ct.time_index is not None:
        if ct.time_index not in names:
            raise SqlError("42703", f'column "{ct.time_index}" named in TIME INDEX does not exist')
        col = next(c for c in ct.columns if c.name == ct.time_index)
        if col.type.pg.name not in ("timestamp", "timestamptz", "int8", "date"):
            raise SqlError("42804", f'TIME INDEX column "{col.name}" must be a timestamp, not {col.type.sql()}')
    for c in ct.columns:
        if c.type.pg.name in ("timestamp", "timestamptz") and (c.type.precision or 0) > 6:
            word = "TIMESTAMP" if c.type.pg.name == "timestamp" else "TIMESTAMP WITH TIME ZONE"
            if c.name == ct.time_index:
                # GreptimeDB's TIMESTAMP(9) time index: kept (integers written to it are nanoseconds)
                ct.notices.append(f'{word}({c.type.precision}) time index "{c.name}" keeps its precision, but '
                                  "values are stored with microsecond resolution (Delta Lake's): "
                                  "digits below the microsecond are rounded")
            else:  # PostgreSQL's rule for every other column
                ct.notices.append(f"{word}({c.type.precision}) precision reduced to maximum allowed, 6")
                c.type = dataclasses.replace(c.type, precision=6)
    for c in ct.columns:
        # PostgreSQL: PRIMARY KEY implies NOT NULL. A time-series table's PRIMARY KEY columns are
        # GreptimeDB tags, which may be NULL (a NULL tag is one series); its time index may not.
        if c.name == ct.time_index or (ct.time_index is None and c.name in ct.primary_key):
            c.not_null = True

    validate_options(ct.options, ct.primary_key)
    from engine import ttl

    ttl.validate(ct.options, ct.time_index, ct.name)
    for key, value in ct.options.items():
        if key == "append_mode" and value.lower() not in ("true", "false"):
            raise SqlError("22023", f"invalid value for option append_mode: {value!r}")


# -- SHOW CREATE TABLE --------------------------------------------------------------------------

def quote_ident(name: str) -> str:
    if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) and name.upper() not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def quote_literal(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


_RESERVED = {"ALL", "AND", "ANY", "ARRAY", "AS", "ASC", "CASE", "CAST", "CHECK", "COLUMN", "CONSTRAINT", "CREATE",
             "DEFAULT", "DESC", "DISTINCT", "DO", "ELSE", "END", "FALSE", "FOR", "FOREIGN", "FROM", "GRANT", "GROUP",
             "HAVING", "IN", "INDEX", "INTO", "IS", "JOIN", "KEY", "LIMIT", "NOT", "NULL", "ON", "OR", "ORDER", "PRIMARY",
             "REFERENCES", "SELECT", "TABLE", "THEN", "TIME", "TIMESTAMP", "TO", "TRUE", "UNION", "UNIQUE", "USER",
             "USING", "WHEN", "WHERE", "WITH", "USER", "OFFSET", "WINDOW"}


def render_create_table(t: TableDef) -> str:
    """The CREATE TABLE statement that re-creates ``t`` (SHOW CREATE TABLE)."""
    lines = []
    for c in t.columns:
        line = f"  {quote_ident(c.name)} {c.type.sql()}"
        if c.not_null:
            line += " NOT NULL"
        if c.identity is not None:
            line += f" GENERATED {'ALWAYS' if c.identity == 'a' else 'BY DEFAULT'} AS IDENTITY"
        elif c.default is not None:
            line += f" DEFAULT {c.default}"
        if c.comment is not None:
            line += f" COMMENT {quote_literal(c.comment)}"
        lines.append(line)
    if t.time_index:
        lines.append(f"  TIME INDEX ({quote_ident(t.time_index)})")
    if t.primary_key:
        lines.append(f"  PRIMARY KEY ({', '.join(quote_ident(k) for k in t.primary_key)})")
    for con in t.constraints:
        lines.append(f"  {constraint_definition(con, t.schema, name_it=True)}")
    temp = t.schema.startswith("pg_temp_")
    name = quote_ident(t.name) if t.schema == "public" or temp else f"{quote_ident(t.schema)}.{quote_ident(t.name)}"
    out = f"CREATE {'TEMPORARY ' if temp else ''}TABLE IF NOT EXISTS {name} (\n" + ",\n".join(lines) + "\n)"

    options, format_clause = split_format_clause(masked_secrets(t.options))
    on_commit = options.pop(ON_COMMIT_OPTION, None)
    if on_commit is not None:
        out += " ON COMMIT " + {"delete": "DELETE ROWS", "drop": "DROP"}.get(on_commit, "PRESERVE ROWS")
    if options:
        out += "\nWITH(\n" + ",\n".join(f"  {k} = {quote_literal(v)}" for k, v in sorted(options.items())) + "\n)"
    out += format_clause
    if t.comment is not None:
        out += f"\nCOMMENT {quote_literal(t.comment)}"
    return out


def constraint_definition(con: dict, schema: str, *, name_it: bool = False) -> str:
    """``UNIQUE (a, b)`` / ``FOREIGN KEY (a) REFERENCES p(id)`` as pg_get_constraintdef shows it."""
    cols = ", ".join(quote_ident(c) for c in con["columns"])
    head = f"CONSTRAINT {quote_ident(con['name'])} " if name_it else ""
    if con["type"] == "u":
        return f"{head}UNIQUE ({cols})"
    ref_schema, ref_table = con["ref"]
    target = quote_ident(ref_table) if ref_schema in (None, "public", schema) else f"{quote_ident(ref_schema)}.{quote_ident(ref_table)}"
    out = f"{head}FOREIGN KEY ({cols}) REFERENCES {target}({', '.join(quote_ident(c) for c in con['ref_columns'])})"
    if con.get("on_update") == "r":
        out += " ON UPDATE RESTRICT"
    if con.get("on_delete") == "r":
        out += " ON DELETE RESTRICT"
    return out


# -- refreshable tables: FORMAT ... ENCODE ... and the connector options of CREATE TABLE

CONNECTORS = ("file", "postgres")
ENCODES = ("CSV", "PARQUET", "JSON")
REFRESH_MODES = ("FULL_RELOAD", "STREAMING")


def _format_encode(prop: FormatEncodeProperty, options: dict[str, str]) -> None:
    """``FORMAT PLAIN ENCODE CSV [(k = v, ...)]`` into ``options`` (``format``, ``encode`` and
    ``encode.<k>``)."""
    fmt, enc = prop.this.name.upper(), prop.args["encode"].name.upper()
    if fmt != "PLAIN":
        raise SqlError("0A000", f"FORMAT {fmt} is not supported: accepted formats are PLAIN")
    if enc not in ENCODES:
        raise SqlError("22023", f"unknown encode '{enc}': accepted encodes are CSV, PARQUET and JSON")
    options["format"], options["encode"] = fmt, enc
    for p in prop.args.get("options") or []:
        options[f"encode.{p.this.name.lower()}"] = p.args["value"].name


_URL_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*", re.I)
_URL_PASSWORD = re.compile(r"(://[^:/@]*:).*@(?=[^@]*$)")  # through the last '@': passwords may hold one


def masked_secrets(options: dict[str, str]) -> dict[str, str]:
    """Options as shown to clients (SHOW CREATE TABLE): a source's password, alone or inside its
    url, is never shown (as PostgreSQL shows rolpassword as ********)."""
    shown = dict(options)
    if "password" in shown:
        shown["password"] = "********"
    if "url" in shown:
        shown["url"] = _URL_QUERY_PASSWORD.sub(r"\1********", _URL_PASSWORD.sub(r"\1********@", shown["url"]))
    return shown


def split_format_clause(options: dict[str, str]) -> tuple[dict[str, str], str]:
    """SHOW CREATE TABLE: the WITH options without the FORMAT clause, and that clause's text."""
    if "encode" not in options:
        return dict(options), ""
    rest = {k: v for k, v in options.items() if k not in ("format", "encode") and not k.startswith("encode.")}
    enc = {k[len("encode."):]: v for k, v in sorted(options.items()) if k.startswith("encode.")}
    text = f"\nFORMAT {options.get('format', 'PLAIN')} ENCODE {options['encode']}"
    if enc:
        text += " (" + ", ".join(f"{k} = '" + v.replace("'", "''") + "'" for k, v in enc.items()) + ")"
    return rest, text


def validate_options(options: dict[str, str], primary_key: list[str]) -> None:
    """Check (and normalise) the refresh options of a CREATE TABLE; errors say what is accepted."""
    mode = options.get("refresh_mode")
    if mode is not None:
        if mode.upper() not in REFRESH_MODES:
            raise SqlError("22023", f"invalid refresh_mode '{mode}': accepted values are 'FULL_RELOAD' and 'STREAMING'")
        options["refresh_mode"] = mode = mode.upper()
    interval = options.get("refresh_interval_sec")
    if interval is not None:
        if mode != "FULL_RELOAD":
            raise SqlError("22023", "refresh_interval_sec is only allowed with refresh_mode = 'FULL_RELOAD'")
        if not re.fullmatch(r"\s*\+?\d+\s*", interval) or int(interval) <= 0:
            raise SqlError("22023", f"invalid refresh_interval_sec '{interval}': must be a positive integer")
        options["refresh_interval_sec"] = str(int(interval))
    connector = options.get("connector")
    writer = options.get("spark_writes")
    if writer is not None:
        if writer.lower() not in ("auto", "on", "off"):
            raise SqlError("22023", f"invalid spark_writes '{writer}': accepted values are 'auto', 'on' and 'off'")
        if connector is None:
            raise SqlError("22023", "spark_writes is an option of refreshable tables (WITH (connector = ...)): it "
                                    "chooses whether REFRESH TABLE loads on Spark",
                           hint="For statements, use SET tidegate.spark_writes.")
        options["spark_writes"] = writer.lower()
    if mode == "FULL_RELOAD":
        if not primary_key:
            raise SqlError("42P16", "Refreshable tables must have a PRIMARY KEY")
        if connector is None:
            raise SqlError("22023", "refresh_mode = 'FULL_RELOAD' needs a connector: accepted connectors are 'file' and 'postgres'")
    if connector is None:
        return
    if connector.lower() not in CONNECTORS:
        raise SqlError("22023", f"unknown connector '{connector}': accepted connectors are 'file' and 'postgres'")
    options["connector"] = connector = connector.lower()
    if connector == "file":
        if not options.get("path"):
            raise SqlError("22023", "connector 'file' needs the option path (a folder or file) and optionally match_pattern")
        if "encode" not in options:
            raise SqlError("22023", "connector 'file' needs FORMAT PLAIN ENCODE CSV | PARQUET | JSON")
        check_match_pattern(options.get("match_pattern", "*"))
    else:
        missing = [k for k in ("url", "source_table") if not options.get(k)]
        if missing:
            raise SqlError("22023", f"connector 'postgres' needs the option{'s' if len(missing) > 1 else ''} "
                                    f"{' and '.join(missing)} (url = 'postgresql://user:password@host:port/db', "
                                    "source_table = 'schema.table')")
    tolerance = options.get("on_source_error")
    if tolerance is not None and tolerance.lower() not in ("fail", "ignore"):
        raise SqlError("22023", f"invalid on_source_error '{tolerance}': accepted values are 'fail' and 'ignore'")
    for name in ("chunk_rows", "chunk_bytes"):
        chunk = options.get(name)
        if chunk is not None and (not chunk.strip().isdigit() or int(chunk) <= 0):
            raise SqlError("22023", f"invalid {name} '{chunk}': must be a positive integer")


def check_match_pattern(pattern: str) -> None:
    """``match_pattern`` is matched against the names in the ``path`` folder: a plain name pattern."""
    if "/" in pattern or os.sep in pattern or ".." in pattern or "\0" in pattern:
        raise SqlError("22023", f"invalid match_pattern '{pattern}': must be a file name pattern such as '*.csv' "
                                "(no '/' and no '..'); put the folder in path")
