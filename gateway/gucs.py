"""Session settings (GUCs) and the session statements answered by the gateway itself.

SET / RESET / SHOW / SET TIME ZONE / SET TRANSACTION / SET SESSION CHARACTERISTICS / DISCARD /
DEALLOCATE never reach a backend: the gateway owns the session, and backends read the effective
values through ``SessionInfo.settings`` (lower-case names -> PostgreSQL text values).

Transaction semantics follow PostgreSQL: a SET inside a transaction block is undone by ROLLBACK,
SET LOCAL lasts until the end of the block, and SET LOCAL outside a block only warns.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from tidegate import __version__, sqllex
from tidegate.errors import SqlError
from tidegate.pgtypes import TEXT, ColumnType
from tidegate.results import ResultField, RowStream

SERVER_VERSION = f"16.4 (tidegate {__version__})"
SERVER_VERSION_NUM = "160004"

_TEXT = ColumnType(TEXT)


def _bool(name: str, raw: str) -> str:
    v = raw.strip().lower()
    if v in ("on", "true", "yes", "1", "t", "y", "tr", "tru", "ye"):
        return "on"
    if v in ("off", "false", "no", "0", "f", "n", "of", "fa", "fal", "fals"):
        return "off"
    raise SqlError("22023", f'parameter "{name}" requires a Boolean value')


def _int_factory(lo: int, hi: int) -> Callable[[str, str], str]:
    def check(name: str, raw: str) -> str:
        try:
            v = int(raw.strip())
        except ValueError:
            raise SqlError("22023", f'invalid value for parameter "{name}": "{raw}"') from None
        if not lo <= v <= hi:
            raise SqlError("22023", f"{v} is outside the valid range for parameter \"{name}\" ({lo} .. {hi})")
        return str(v)
    return check


_TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60000, "h": 3600000, "d": 86400000}
_TIME_RE = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?)\s*(us|ms|s|min|h|d)?\s*$")


def _ms(name: str, raw: str) -> str:
    """Millisecond GUCs (statement_timeout...): accept units, print as PostgreSQL does (largest exact unit)."""
    m = _TIME_RE.match(raw)
    if not m:
        raise SqlError("22023", f'invalid value for parameter "{name}": "{raw}"',
                       hint='Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".')
    ms = int(round(float(m.group(1)) * _TIME_UNITS[m.group(2) or "ms"]))
    if ms < 0 or ms > 2147483647:
        raise SqlError("22023", f'{ms} ms is outside the valid range for parameter "{name}" (0 .. 2147483647)')
    return format_ms(ms)


def format_ms(ms: int) -> str:
    if ms == 0:
        return "0"
    for unit, factor in (("d", 86400000), ("h", 3600000), ("min", 60000), ("s", 1000)):
        if ms % factor == 0:
            return f"{ms // factor}{unit}"
    return f"{ms}ms"


def parse_ms(value: str) -> int:
    m = _TIME_RE.match(value)
    return int(round(float(m.group(1)) * _TIME_UNITS[m.group(2) or "ms"])) if m else 0


def _enum(*choices: str, canonical: dict[str, str] | None = None) -> Callable[[str, str], str]:
    def check(name: str, raw: str) -> str:
        v = raw.strip().lower()
        if canonical and v in canonical:
            return canonical[v]
        if v in choices:
            return v
        raise SqlError("22023", f'invalid value for parameter "{name}": "{raw}"',
                       hint="Available values: " + ", ".join(choices) + ".")
    return check


def _unsupported_output(name: str, value: str, hint: str) -> SqlError:
    """A value of an output setting the codec does not print in: refused, never ignored."""
    return SqlError("0A000", f'{name} "{value}" is not supported', hint=hint)


def _only(check: Callable[[str, str], str], supported: Callable[[str], bool], hint: str) -> Callable[[str, str], str]:
    """``check``, then refuse (0A000) a valid value tidegate's output does not follow."""
    def inner(name: str, raw: str) -> str:
        value = check(name, raw)
        if not supported(value):
            raise _unsupported_output(name, value, hint)
        return value
    return inner


def _any(name: str, raw: str) -> str:
    return raw


def _encoding(name: str, raw: str) -> str:
    if re.sub(r"[^A-Za-z0-9]", "", raw).upper() in ("UTF8", "UNICODE"):
        return "UTF8"
    raise SqlError("22023", f'invalid value for parameter "{name}": "{raw}"',
                   detail="tidegate supports only the UTF8 client encoding.")


def _datestyle(name: str, raw: str) -> str:
    out_style, order = "ISO", "MDY"
    seen_order = False
    for part in re.split(r"[\s,]+", raw.strip()):
        p = part.lower()
        if not p:
            continue
        if p in ("iso", "sql", "postgres", "german"):
            out_style = {"iso": "ISO", "sql": "SQL", "postgres": "Postgres", "german": "German"}[p]
            if p == "german" and not seen_order:
                order = "DMY"
        elif p in ("mdy", "us", "noneuropean", "non-european"):
            order, seen_order = "MDY", True
        elif p in ("dmy", "euro", "european"):
            order, seen_order = "DMY", True
        elif p == "ymd":
            order, seen_order = "YMD", True
        elif p == "default":
            continue
        else:
            raise SqlError("22023", f'invalid value for parameter "{name}": "{raw}"',
                           detail=f'Unrecognized key word: "{part}".')
    if out_style != "ISO":  # the input order (MDY / DMY / YMD) is kept: non-ISO input is refused by itself
        raise _unsupported_output(name, f"{out_style}, {order}",
                                  "Dates and times are printed in the ISO style only: SET DateStyle = 'ISO, "
                                  f"{order}'.")
    return f"{out_style}, {order}"


_OFFSET_RE = re.compile(r"^[+-]?[0-9]{1,2}(:[0-9]{2})?$")


def _timezone(name: str, raw: str) -> str:
    v = raw.strip()
    if v.upper() in ("UTC", "GMT", "Z", "ZULU"):
        return "UTC" if v.upper() != "GMT" else "GMT"
    if v.lower() == "local" or v.lower() == "default":
        return "UTC"
    if _OFFSET_RE.match(v) or re.match(r"^<[+-][0-9]{2}(:[0-9]{2})?>[+-][0-9]{2}(:[0-9]{2})?$", v):
        return v
    if re.match(r"^(UTC|GMT)[+-][0-9]{1,2}(:[0-9]{2})?$", v, re.I):
        return v
    try:
        zoneinfo.ZoneInfo(v)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, IsADirectoryError, OSError):
        raise SqlError("22023", f'invalid value for parameter "TimeZone": "{raw}"') from None
    return v


def _search_path(name: str, raw: str) -> str:
    return raw


@dataclass(frozen=True)
class Guc:
    name: str  # canonical spelling (SHOW column name, ParameterStatus name)
    default: str
    description: str
    check: Callable[[str, str], str] = _any
    reported: bool = False  # sent as ParameterStatus at startup and when it changes
    readonly: bool = False


_LEVELS = ("debug5", "debug4", "debug3", "debug2", "debug1", "log", "info", "notice", "warning", "error")

_GUC_LIST: list[Guc] = [
    Guc("application_name", "", "Sets the application name to be reported in statistics and logs.", reported=True),
    Guc("array_nulls", "on", "Enable input of NULL elements in arrays.", _bool),
    Guc("backslash_quote", "safe_encoding", "Sets whether \"\\'\" is allowed in string literals.",
        _enum("safe_encoding", "on", "off")),
    Guc("block_size", "8192", "Shows the size of a disk block.", readonly=True),
    Guc("bytea_output", "hex", "Sets the output format for bytea.",
        _only(_enum("hex", "escape"), lambda v: v == "hex", "bytea is printed in the hex format only.")),
    Guc("client_encoding", "UTF8", "Sets the client's character set encoding.", _encoding, reported=True),
    Guc("client_min_messages", "notice", "Sets the message levels that are sent to the client.",
        _enum(*_LEVELS, canonical={"debug": "debug2"})),
    Guc("DateStyle", "ISO, MDY", "Sets the display format for date and time values.", _datestyle, reported=True),
    Guc("default_text_search_config", "pg_catalog.simple", "Sets default text search configuration."),
    Guc("default_transaction_deferrable", "off", "Sets the default deferrable status of new transactions.", _bool),
    Guc("default_transaction_isolation", "read committed", "Sets the transaction isolation level of each new transaction.",
        _enum("serializable", "repeatable read", "read committed", "read uncommitted")),
    Guc("default_transaction_read_only", "off", "Sets the default read-only status of new transactions.", _bool,
        reported=True),
    Guc("escape_string_warning", "on", "Warn about backslash escapes in ordinary string literals.", _bool),
    Guc("extra_float_digits", "1", "Sets the number of digits displayed for floating-point values.",
        _only(_int_factory(-15, 3), lambda v: int(v) >= 1,
              "Floating-point values are printed exactly (shortest round-trip form, extra_float_digits 1 to 3); "
              "round them with round() or a cast to numeric.")),
    Guc("idle_in_transaction_session_timeout", "0", "Sets the maximum allowed idle time between queries, when in a transaction.", _ms),
    Guc("idle_session_timeout", "0", "Sets the maximum allowed idle time between queries, when not in a transaction.", _ms),
    Guc("in_hot_standby", "off", "Shows whether hot standby is currently active.", readonly=True, reported=True),
    Guc("integer_datetimes", "on", "Shows whether datetimes are integer based.", readonly=True, reported=True),
    Guc("IntervalStyle", "postgres", "Sets the display format for interval values.",
        _only(_enum("postgres", "postgres_verbose", "sql_standard", "iso_8601"), lambda v: v == "postgres",
              "Intervals are printed in the postgres style only."), reported=True),
    Guc("is_superuser", "on", "Shows whether the current user is a superuser.", readonly=True, reported=True),
    Guc("jit", "off", "Allow JIT compilation.", _bool),
    Guc("lc_collate", "C.UTF-8", "Shows the collation order locale.", readonly=True),
    Guc("lc_ctype", "C.UTF-8", "Shows the character classification and case conversion locale.", readonly=True),
    Guc("lc_messages", "C.UTF-8", "Sets the language in which messages are displayed."),
    Guc("lc_monetary", "C.UTF-8", "Sets the locale for formatting monetary amounts."),
    Guc("lc_numeric", "C.UTF-8", "Sets the locale for formatting numbers."),
    Guc("lc_time", "C.UTF-8", "Sets the locale for formatting date and time values."),
    Guc("lock_timeout", "0", "Sets the maximum allowed duration of any wait for a lock.", _ms),
    Guc("max_connections", "100", "Sets the maximum number of concurrent connections.", readonly=True),
    Guc("max_identifier_length", "63", "Shows the maximum identifier length.", readonly=True),
    Guc("max_index_keys", "32", "Shows the maximum number of index keys.", readonly=True),
    Guc("plan_cache_mode", "auto", "Controls the planner's selection of custom or generic plan.",
        _enum("auto", "force_generic_plan", "force_custom_plan")),
    Guc("row_security", "on", "Enable row security.", _bool),
    Guc("search_path", '"$user", public', "Sets the schema search order for names that are not schema-qualified.",
        _search_path),
    Guc("server_encoding", "UTF8", "Shows the server (database) character set encoding.", readonly=True, reported=True),
    Guc("server_version", SERVER_VERSION, "Shows the server version.", readonly=True, reported=True),
    Guc("server_version_num", SERVER_VERSION_NUM, "Shows the server version as an integer.", readonly=True),
    Guc("session_authorization", "tidegate", "Sets the session user name.", readonly=True, reported=True),
    Guc("standard_conforming_strings", "on", "Causes '...' strings to treat backslashes literally.", _bool,
        reported=True),
    Guc("statement_timeout", "0", "Sets the maximum allowed duration of any statement.", _ms),
    Guc("synchronous_commit", "on", "Sets the current transaction's synchronization level.",
        _enum("local", "remote_write", "remote_apply", "on", "off")),
    Guc("tidegate.interactive", "on", "Answers small reads of one table from its files in the gateway (off: on Spark).",
        _bool),
    Guc("tidegate.spark_writes", "auto", "Writes INSERT ... SELECT and CREATE TABLE AS results with Delta Lake's Spark "
        "connector (auto: results the optimizer expects to exceed 8 MB; on: every one it can; off: none).",
        _enum("auto", "on", "off")),
    Guc("TimeZone", "UTC", "Sets the time zone for displaying and interpreting time stamps.", _timezone, reported=True),
    Guc("timezone_abbreviations", "Default", "Selects a file of time zone abbreviations."),
    Guc("transaction_deferrable", "off", "Whether to defer a read-only serializable transaction until it can be executed with no possible serialization failures.", _bool),
    Guc("transaction_isolation", "read committed", "Sets the current transaction's isolation level.",
        _enum("serializable", "repeatable read", "read committed", "read uncommitted")),
    Guc("transaction_read_only", "off", "Sets the current transaction's read-only status.", _bool),
    Guc("work_mem", "4MB", "Sets the maximum memory to be used for query workspaces."),
    Guc("xmloption", "content", "Sets whether XML data in implicit parsing and serialization operations is to be considered as documents or content fragments.",
        _enum("content", "document")),
]

GUCS: dict[str, Guc] = {g.name.lower(): g for g in _GUC_LIST}
REPORTED: tuple[str, ...] = tuple(k for k, g in GUCS.items() if g.reported)
_TX_ONLY = {"transaction_isolation", "transaction_read_only", "transaction_deferrable"}


def unrecognized(name: str) -> SqlError:
    return SqlError("42704", f'unrecognized configuration parameter "{name}"')


class SessionSettings:
    """Effective GUC values of one session, with PostgreSQL's transactional SET semantics.

    ``values`` is a live dict (lower-case name -> text) shared with ``SessionInfo.settings``.
    """

    def __init__(self, user: str = "tidegate", max_connections: int = 100) -> None:
        self.defaults: dict[str, str] = {k: g.default for k, g in GUCS.items()}
        self.defaults["session_authorization"] = user
        self.defaults["max_connections"] = str(max_connections)
        self.session: dict[str, str] = dict(self.defaults)  # SET values outside any transaction scope
        self.local: dict[str, str] = {}  # SET LOCAL / SET TRANSACTION values of the open block
        self.snapshot: dict[str, str] | None = None  # session layer at BEGIN, restored by ROLLBACK
        self.values: dict[str, str] = dict(self.session)
        self.reported_sent: dict[str, str] = {}

    # ----------------------------------------------------------------- lookups
    def canonical(self, name: str) -> tuple[str, str]:
        """(lower-case key, display name) for ``name``; 42704 if it is neither known nor a custom dotted name."""
        key = name.lower()
        if key in GUCS:
            return key, GUCS[key].name
        if key in self.values:
            return key, key
        raise unrecognized(name)

    def get(self, name: str) -> str:
        key, _ = self.canonical(name)
        return self.values[key]

    def _refresh(self) -> None:
        self.values.clear()
        self.values.update(self.session)
        self.values.update(self.local)

    # ----------------------------------------------------------------- changes
    def _validate(self, name: str, value: str, *, startup: bool = False) -> tuple[str, str]:
        key = name.lower()
        guc = GUCS.get(key)
        if guc is None:
            if "." not in key or key.startswith(".") or key.endswith("."):
                raise unrecognized(name)
            return key, value
        if guc.readonly and not startup:
            if key == "session_authorization":
                raise SqlError("42501", "permission denied to set session authorization")
            raise SqlError("55P02", f'parameter "{guc.name}" cannot be changed')
        if guc.readonly:
            return key, self.defaults[key]
        canon = guc.check(guc.name, value)
        if key in ("transaction_isolation", "default_transaction_isolation"):
            check_isolation(canon)
        return key, canon

    def set(self, name: str, value: str, *, local: bool = False, in_block: bool = False) -> None:
        key, canon = self._validate(name, value)
        if key in _TX_ONLY:
            local = True
        if local:
            if in_block:
                self.local[key] = canon
        else:
            self.session[key] = canon
            self.local.pop(key, None)
        self._refresh()

    def set_startup(self, name: str, value: str) -> None:
        """A startup-packet parameter or ``-c`` option: becomes this session's default (RESET returns to it)."""
        key, canon = self._validate(name, value, startup=True)
        self.defaults[key] = canon
        self.session[key] = canon
        self._refresh()

    def reset(self, name: str, *, in_block: bool = False) -> None:
        key = name.lower()
        if key not in GUCS and key not in self.values:
            if "." not in key:
                raise unrecognized(name)
            self.session[key] = ""  # PostgreSQL creates a placeholder for custom names
            self._refresh()
            return
        guc = GUCS.get(key)
        if guc is not None and guc.readonly:
            raise SqlError("55P02", f'parameter "{guc.name}" cannot be changed')
        if key in self.defaults:
            self.session[key] = self.defaults[key]
        else:
            self.session.pop(key, None)
        self.local.pop(key, None)
        self._refresh()

    def reset_all(self) -> None:
        keep = {k: v for k, v in self.session.items() if k in GUCS and GUCS[k].readonly}
        self.session = {k: v for k, v in self.defaults.items()}
        self.session.update(keep)
        self.local.clear()
        self._refresh()

    # ----------------------------------------------------------------- transactions
    def begin(self, isolation: str | None = None, read_only: bool | None = None,
              deferrable: bool | None = None) -> None:
        self.snapshot = dict(self.session)
        self.local = {
            "transaction_isolation": isolation or self.session["default_transaction_isolation"],
            "transaction_read_only": ("on" if read_only else "off") if read_only is not None
            else self.session["default_transaction_read_only"],
            "transaction_deferrable": ("on" if deferrable else "off") if deferrable is not None
            else self.session["default_transaction_deferrable"],
        }
        self._refresh()

    def end(self, committed: bool) -> None:
        if not committed and self.snapshot is not None:
            self.session = self.snapshot
        self.snapshot = None
        self.local.clear()
        self._refresh()

    def changed_reported(self) -> list[tuple[str, str]]:
        """Reported parameters whose value differs from the last ParameterStatus sent (and marks them sent)."""
        out = []
        for key in REPORTED:
            v = self.values.get(key, "")
            if self.reported_sent.get(key) != v:
                self.reported_sent[key] = v
                out.append((GUCS[key].name, v))
        return out

    def show_all(self) -> list[tuple[str, str, str]]:
        rows = [(g.name, self.values.get(k, g.default), g.description) for k, g in GUCS.items()]
        rows += [(k, v, "") for k, v in self.values.items() if k not in GUCS]
        rows.sort(key=lambda r: r[0].lower())
        return rows


# ------------------------------------------------------------------------- statement parsing

@dataclass
class Tok:
    kind: str  # str | qid | num | word | punct
    text: str  # value: unquoted string, identifier as written, lower-cased word


def tokenize(sql: str) -> list[Tok]:
    """The tokens of a session statement (SET, SHOW, BEGIN's modes, COPY's options) from the one
    lexer, with values: strings unquoted and unescaped, words lower-cased and joined across dots
    (``pg_catalog.set_config``, ``tidegate.interactive``), a sign joined to its number."""
    out: list[Tok] = []
    toks = sqllex.scan(sql)
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "word":
            end, j = t.end, i + 1
            while j < len(toks) and toks[j].start == end and (toks[j].text == "." or toks[j].kind in ("word", "num")):
                end, j = toks[j].end, j + 1
            out.append(Tok("word", sql[t.start:end].lower()))
            i = j
            continue
        if t.text in ("+", "-") and i + 1 < len(toks) and toks[i + 1].kind == "num" and toks[i + 1].start == t.end:
            out.append(Tok("num", t.text + toks[i + 1].text))
            i += 2
            continue
        if t.kind == "str":
            out.append(Tok("str", t.value))
        elif t.kind == "qid":
            out.append(Tok("qid", t.ident or ""))
        elif t.kind == "num":
            out.append(Tok("num", t.text))
        elif t.text in ("=", ",", "(", ")", ";", ".", "+", "-"):
            out.append(Tok("punct", t.text))
        else:
            raise SqlError("42601", f'syntax error at or near "{t.text}"', position=t.start + 1)
        i += 1
    return out


@dataclass
class Notice:
    severity: str
    sqlstate: str
    message: str


@dataclass
class SessionReply:
    """Outcome of a session statement; ``action`` asks the connection for state it owns."""

    tag: str
    rows: RowStream | None = None
    notices: list[Notice] = field(default_factory=list)
    # ("discard_all" | "discard_temp" | "discard_plans", None) | ("deallocate", name|None)
    action: tuple[str, str | None] | None = None


def _show_stream(column: str, rows: list[tuple[str, ...]], columns: list[str] | None = None) -> RowStream:
    names = columns or [column]
    fields = [ResultField(n, _TEXT) for n in names]
    table = pa.table({n: pa.array([r[i] for r in rows], pa.string()) for i, n in enumerate(names)})
    return RowStream(fields, iter(table.to_batches()), command="SHOW")


def _value_text(toks: list[Tok], name: str) -> str:
    """The value list of SET as PostgreSQL flattens it (comma-joined; identifiers lower-cased)."""
    parts: list[str] = []
    cur: list[str] = []
    seen = False
    for t in toks:
        if t.kind == "punct" and t.text == ",":
            if not seen:
                raise SqlError("42601", 'syntax error at or near ","')
            parts.append("".join(cur))
            cur, seen = [], False
            continue
        seen = True
        if t.kind == "qid":
            cur.append(f'"{t.text}"' if name == "search_path" else t.text)
        elif t.kind == "str" and name == "search_path" and t.text == "":
            cur.append('""')
        elif t.kind == "punct" and t.text in "+-.":
            cur.append(t.text)
        elif t.kind == "punct":
            raise SqlError("42601", f'syntax error at or near "{t.text}"')
        else:
            cur.append(t.text)
    if not seen:
        raise SqlError("42601", "syntax error at end of input")
    parts.append("".join(cur))
    return ", ".join(parts)


def check_isolation(level: str) -> str:
    """The isolation levels tidegate keeps its promise for: READ COMMITTED (and READ UNCOMMITTED,
    which PostgreSQL runs as READ COMMITTED). Snapshot levels are refused, not run weaker."""
    if level in ("repeatable read", "serializable"):
        raise SqlError("0A000", f"transaction isolation level {level.upper()} is not supported",
                       detail="tidegate runs transactions at READ COMMITTED: each statement reads the latest "
                              "committed data, writes of a table wait for each other, and COMMIT is all or nothing.",
                       hint="Use READ COMMITTED (the default).")
    return level


def parse_tx_modes(toks: list[Tok]) -> dict[str, str]:
    """ISOLATION LEVEL x, READ ONLY|WRITE, [NOT] DEFERRABLE, comma-separated or not."""
    out: dict[str, str] = {}
    words = [t.text if t.kind == "word" else t.text for t in toks if not (t.kind == "punct" and t.text == ",")]
    i = 0
    while i < len(words):
        w = words[i]
        if w == "isolation" and i + 1 < len(words) and words[i + 1] == "level":
            rest = words[i + 2:i + 4]
            if rest[:1] == ["serializable"]:
                out["transaction_isolation"], i = check_isolation("serializable"), i + 3
            elif rest == ["repeatable", "read"]:
                out["transaction_isolation"], i = check_isolation("repeatable read"), i + 4
            elif rest == ["read", "committed"]:
                out["transaction_isolation"], i = "read committed", i + 4
            elif rest == ["read", "uncommitted"]:
                out["transaction_isolation"], i = "read uncommitted", i + 4
            else:
                raise SqlError("42601", f'syntax error at or near "{" ".join(rest) or "end of input"}"')
        elif w == "read" and i + 1 < len(words) and words[i + 1] in ("only", "write"):
            out["transaction_read_only"] = "on" if words[i + 1] == "only" else "off"
            i += 2
        elif w == "deferrable":
            out["transaction_deferrable"], i = "on", i + 1
        elif w == "not" and i + 1 < len(words) and words[i + 1] == "deferrable":
            out["transaction_deferrable"], i = "off", i + 2
        else:
            raise SqlError("42601", f'syntax error at or near "{w}"')
    return out


# SHOW forms the engine answers (SHOW TABLES, SHOW CREATE TABLE x, ...), never GUC lookups.
ENGINE_SHOW_WORDS = {"tables", "create", "databases", "schemas", "flow", "flows", "views", "columns", "index",
                     "indexes", "full", "jobs", "variables", "refresh", "gateways"}


def is_session_show(words: list[str]) -> bool:
    """Whether ``SHOW ...`` (first words of a statement) is a GUC lookup."""
    if len(words) < 2:
        return True
    return words[1] not in ENGINE_SHOW_WORDS


def describe(sql: str, settings: SessionSettings) -> list[ResultField] | None:
    """RowDescription of a session statement without running it (extended-protocol Describe)."""
    if is_advisory_unlock_all(sql):
        return [ResultField("pg_advisory_unlock_all", _TEXT)]
    toks = tokenize(sql)
    if not toks or toks[0].text != "show":
        return None
    rest = [t.text for t in toks[1:]]
    if rest == ["all"]:
        return [ResultField(n, _TEXT) for n in ("name", "setting", "description")]
    if rest[:3] == ["transaction", "isolation", "level"]:
        return [ResultField("transaction_isolation", _TEXT)]
    if rest[:2] == ["time", "zone"]:
        return [ResultField("TimeZone", _TEXT)]
    if rest[:2] == ["session", "authorization"]:
        return [ResultField("session_authorization", _TEXT)]
    if len(rest) == 1:
        _, display = settings.canonical(rest[0])
        return [ResultField(display, _TEXT)]
    raise SqlError("42601", f'syntax error at or near "{rest[1] if len(rest) > 1 else "SHOW"}"')


def execute(sql: str, settings: SessionSettings, in_block: bool) -> SessionReply:
    """Run one session statement (SET/RESET/SHOW/DISCARD/DEALLOCATE) against ``settings``."""
    if _is_unlisten(sql):
        return SessionReply("UNLISTEN")  # LISTEN is refused, so there is never anything to stop
    toks = tokenize(sql)
    if not toks:
        raise SqlError("42601", "syntax error at end of input")
    head = toks[0].text
    if head == "use" and toks[0].kind == "word":
        # GreptimeDB's USE db: a database is a schema here, so USE sets the search path to it
        if len(toks) != 2 or toks[1].kind not in ("word", "qid"):
            raise SqlError("42601", f'syntax error at or near "{toks[2].text if len(toks) > 2 else "USE"}"',
                           hint="USE takes one database (schema) name: USE name")
        name = toks[1].text
        shown = name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'
        settings.set("search_path", shown, local=False, in_block=in_block)
        return SessionReply("SET")
    if head == "show":
        fields = describe(sql, settings)
        assert fields is not None
        rest = [t.text for t in toks[1:]]
        if rest == ["all"]:
            return SessionReply("SHOW", _show_stream("", settings.show_all(), ["name", "setting", "description"]))
        key = {"transaction_isolation": "transaction_isolation", "TimeZone": "timezone",
               "session_authorization": "session_authorization"}.get(fields[0].name, fields[0].name.lower())
        value = settings.get(key)
        return SessionReply("SHOW", _show_stream(fields[0].name, [(value,)]))
    if head == "reset":
        rest = [t.text for t in toks[1:]]
        if rest == ["time", "zone"]:  # PostgreSQL's special form of RESET timezone
            settings.reset("timezone", in_block=in_block)
            return SessionReply("RESET")
        if rest == ["session", "authorization"]:  # there is only one role
            return SessionReply("RESET")
        if len(toks) != 2:
            raise SqlError("42601", f'syntax error at or near "{toks[2].text if len(toks) > 2 else "RESET"}"')
        name = toks[1].text
        if name == "all":
            settings.reset_all()
        elif name == "session" or name == "role":
            pass  # RESET SESSION AUTHORIZATION / RESET ROLE: there is only one role
        else:
            settings.reset(name, in_block=in_block)
        return SessionReply("RESET")
    if head == "discard":
        what = toks[1].text if len(toks) > 1 else ""
        if what not in ("all", "plans", "sequences", "temp", "temporary") or len(toks) != 2:
            raise SqlError("42601", f'syntax error at or near "{what or "DISCARD"}"')
        if what == "all":
            if in_block:
                raise SqlError("25001", "DISCARD ALL cannot run inside a transaction block")
            settings.reset_all()
            return SessionReply("DISCARD ALL", action=("discard_all", None))
        if what in ("temp", "temporary"):  # the backend drops the session's temporary relations
            return SessionReply("DISCARD TEMP", action=("discard_temp", None))
        if what == "plans":  # the backend forgets the translations it kept (engine/plans.py)
            return SessionReply("DISCARD PLANS", action=("discard_plans", None))
        return SessionReply("DISCARD " + what.upper())
    if head == "deallocate":
        rest = toks[1:]
        if rest and rest[0].text == "prepare":
            rest = rest[1:]
        if len(rest) != 1 or rest[0].kind not in ("word", "qid"):
            raise SqlError("42601", "syntax error at or near \"DEALLOCATE\"")
        name = rest[0].text
        return SessionReply("DEALLOCATE ALL" if name == "all" and rest[0].kind == "word" else "DEALLOCATE",
                            action=("deallocate", None if name == "all" and rest[0].kind == "word" else name))
    if head == "set":
        return _execute_set(toks[1:], settings, in_block)
    if head == "select" and is_advisory_unlock_all(sql):
        table = pa.table({"pg_advisory_unlock_all": pa.array([""], pa.string())})
        fields = [ResultField("pg_advisory_unlock_all", _TEXT)]
        return SessionReply("SELECT 1", RowStream(fields, iter(table.to_batches())))
    raise SqlError("42601", f'syntax error at or near "{toks[0].text}"')


def _execute_set(toks: list[Tok], settings: SessionSettings, in_block: bool) -> SessionReply:
    local = False
    notices: list[Notice] = []
    if toks and toks[0].kind == "word" and toks[0].text in ("session", "local"):
        is_local = toks[0].text == "local"
        nxt = toks[1].text if len(toks) > 1 else ""
        # SET SESSION CHARACTERISTICS AS TRANSACTION ... / SET SESSION AUTHORIZATION ...
        if not is_local and nxt == "characteristics":
            if len(toks) < 4 or toks[2].text != "as" or toks[3].text != "transaction":
                raise SqlError("42601", "syntax error at or near \"CHARACTERISTICS\"")
            for key, value in parse_tx_modes(toks[4:]).items():
                settings.set("default_" + key, value)
            return SessionReply("SET")
        if not is_local and nxt == "authorization":
            value = toks[2].text if len(toks) > 2 else ""
            if value in ("default", settings.get("session_authorization")):
                return SessionReply("SET")
            raise SqlError("42501", "permission denied to set session authorization")
        local = is_local
        toks = toks[1:]
    if not toks:
        raise SqlError("42601", "syntax error at end of input")
    if local and not in_block:
        notices.append(Notice("WARNING", "25P01", "SET LOCAL can only be used in transaction blocks"))
    first = toks[0]
    if first.text == "transaction" and first.kind == "word":
        if not in_block:
            notices.append(Notice("WARNING", "25P01", "SET TRANSACTION can only be used in transaction blocks"))
        for key, value in parse_tx_modes(toks[1:]).items():
            settings.set(key, value, local=True, in_block=in_block)
        return SessionReply("SET", notices=notices)
    if first.text == "time" and len(toks) > 1 and toks[1].text == "zone":
        vals = toks[2:]
        if not vals:
            raise SqlError("42601", "syntax error at end of input")
        if vals[0].kind == "word" and vals[0].text in ("local", "default") and len(vals) == 1:
            settings.reset("timezone", in_block=in_block) if not local else settings.set(
                "timezone", settings.defaults["timezone"], local=True, in_block=in_block)
            return SessionReply("SET", notices=notices)
        if vals[0].kind == "word" and vals[0].text == "interval":
            if len(vals) < 2 or vals[1].kind != "str":
                raise SqlError("42601", "syntax error at or near \"INTERVAL\"")
            text = vals[1].text.strip()
            m = re.match(r"^([+-]?)([0-9]{1,2})(?::([0-9]{2}))?(?::00)?$", text)
            if not m:
                raise SqlError("22023", f'invalid value for parameter "TimeZone": "{text}"')
            value = _numeric_zone(m.group(1), int(m.group(2)), int(m.group(3) or 0))
        elif len(vals) == 1 and vals[0].kind == "num" or (
                len(vals) == 2 and vals[0].text in "+-" and vals[1].kind == "num"):
            num = "".join(t.text for t in vals)
            try:
                hours = float(num)
            except ValueError:
                raise SqlError("22023", f'invalid value for parameter "TimeZone": "{num}"') from None
            sign = "-" if hours < 0 else "+"
            total = int(round(abs(hours) * 60))
            value = _numeric_zone(sign, total // 60, total % 60)
        else:
            value = _value_text(vals, "timezone")
        settings.set("timezone", value, local=local, in_block=in_block)
        return SessionReply("SET", notices=notices)
    if first.text in ("names",) and first.kind == "word" and len(toks) <= 2:
        value = toks[1].text if len(toks) > 1 else "UTF8"
        if value != "default":
            settings.set("client_encoding", value, local=local, in_block=in_block)
        return SessionReply("SET", notices=notices)
    if first.text == "schema" and first.kind == "word" and len(toks) == 2 and toks[1].kind == "str":
        settings.set("search_path", toks[1].text, local=local, in_block=in_block)
        return SessionReply("SET", notices=notices)
    if first.text == "role" and first.kind == "word":
        # Only the session's own role can be "set": acting as another role is not modelled.
        value = toks[1].text if len(toks) == 2 else ""
        if value in ("none", "default", settings.get("session_authorization")):
            return SessionReply("SET", notices=notices)
        raise SqlError("0A000", "SET ROLE to another role is not supported",
                       hint="Connect as that role instead.")
    if first.kind not in ("word", "qid"):
        raise SqlError("42601", f'syntax error at or near "{first.text}"')
    name = first.text
    if len(toks) < 3 or not (toks[1].kind == "punct" and toks[1].text == "=" or toks[1].text == "to"):
        raise SqlError("42601", f'syntax error at or near "{toks[1].text if len(toks) > 1 else name}"')
    vals = toks[2:]
    if len(vals) == 1 and vals[0].kind == "word" and vals[0].text == "default":
        if local:
            key, _ = settings.canonical(name) if name.lower() in settings.values or name.lower() in GUCS \
                else (name.lower(), name)
            if in_block and key in settings.defaults:
                settings.set(key, settings.defaults[key], local=True, in_block=True)
        else:
            try:
                settings.reset(name, in_block=in_block)
            except SqlError:
                if "." not in name:
                    raise
        return SessionReply("SET", notices=notices)
    settings.set(name, _value_text(vals, name.lower()), local=local, in_block=in_block)
    return SessionReply("SET", notices=notices)


def _numeric_zone(sign: str, hours: int, minutes: int) -> str:
    """PostgreSQL's spelling of a numeric zone offset, e.g. SET TIME ZONE -7 -> '<-07>+07'."""
    if hours > 15:
        raise SqlError("22023", "invalid interval value for time zone: out of range")
    hm = f"{hours:02d}" + (f":{minutes:02d}" if minutes else "")
    posix = ("-" if sign != "-" else "+") + hm
    return f"<{'-' if sign == '-' else '+'}{hm}>{posix}"


def _significant_words(sql: str) -> list[sqllex.Token]:
    """The statement's tokens without a trailing ';' ([] when the lexer refuses the text)."""
    try:
        toks = sqllex.scan(sql)
    except SqlError:
        return []
    while toks and toks[-1].text == ";":
        toks.pop()
    return toks


def _call(toks: list[sqllex.Token], name: str) -> int | None:
    """Index after ``SELECT [pg_catalog.]name(`` at the start of ``toks``, else None."""
    if not toks or not toks[0].is_word("select"):
        return None
    i = 3 if len(toks) > 3 and toks[1].is_word("pg_catalog") and toks[2].text == "." else 1
    if len(toks) > i + 1 and toks[i].is_word(name) and toks[i + 1].text == "(":
        return i + 2
    return None


def match_set_config(sql: str) -> tuple[str, str, bool, str] | None:
    """``SELECT set_config('name', 'value', is_local) [AS alias]`` with literal arguments, else None."""
    toks = _significant_words(sql)
    i = _call(toks, "set_config")
    if i is None or len(toks) < i + 6:
        return None
    name, c1, value, c2, local, close = toks[i:i + 6]
    if not (name.kind == value.kind == "str" and c1.text == c2.text == "," and close.text == ")"):
        return None
    if local.is_word("true", "false"):
        is_local = local.lower == "true"
    elif local.kind == "str" and local.value.isalpha():
        is_local = local.value.lower() in ("true", "t", "on", "yes", "1")
    else:
        return None
    rest = toks[i + 6:]
    if not rest:
        alias = "set_config"
    elif len(rest) == 2 and rest[0].is_word("as") and rest[1].kind in ("word", "qid"):
        alias = rest[1].ident or ""
    else:
        return None
    return name.value, value.value, is_local, alias


def is_advisory_unlock_all(sql: str) -> bool:
    """``SELECT pg_advisory_unlock_all()`` (tidegate takes no advisory locks: nothing to release)."""
    toks = _significant_words(sql)
    i = _call(toks, "pg_advisory_unlock_all")
    return i is not None and len(toks) == i + 1 and toks[i].text == ")"


def _is_unlisten(sql: str) -> bool:
    toks = _significant_words(sql)
    return len(toks) == 2 and toks[0].is_word("unlisten") and (toks[1].text == "*" or toks[1].kind in ("word", "qid"))


def run_set_config(sql: str, settings: SessionSettings, in_block: bool) -> SessionReply | None:
    """Apply a literal set_config() call in the gateway (the GUC state lives here) and return its value."""
    hit = match_set_config(sql)
    if hit is None:
        return None
    name, value, is_local, alias = hit
    settings.set(name, value, local=is_local, in_block=in_block)
    shown = settings.values.get(name.lower(), value) if (not is_local or in_block) else value
    fields = [ResultField(alias, _TEXT)]
    table = pa.table({alias: pa.array([shown], pa.string())})
    return SessionReply("SELECT 1", RowStream(fields, iter(table.to_batches())))
