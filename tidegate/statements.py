"""What kind of statement a text is: decided once, here, for every layer.

The gateway runs the session statements itself (transaction control, SET/SHOW of settings,
cursors, COPY: ``gateway.dispatch.classify``) and hands everything else to the engine; both read
the statement's kind from :func:`classify`, and the engine routes each kind to the one module
that runs it (``engine.executor.EngineSession``'s handler table). Statements the sqlglot dialect
parses (queries, UPDATE, DELETE, MERGE, CREATE VIEW / SCHEMA, DROP, ALTER, TRUNCATE) are then
routed by the type of their tree; tidegate's own statements (flows, jobs, refresh) and the
PostgreSQL statements with a grammar of their own here (roles, sequences, CREATE TABLE, indexes)
are routed by their kind before any parse.

The decision reads the leading tokens of the one lexer (:mod:`tidegate.sqllex`), never a regular
expression over the text; it is cached per text, as statements repeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from tidegate import sqllex


class Kind(Enum):
    SQL = "sql"  # parsed by the sqlglot dialect and routed by the type of its tree
    INSERT = "insert"  # INSERT: the in-process path for constant VALUES first, else the dialect
    ROLE = "role"  # GRANT, REVOKE, CREATE / ALTER / DROP ROLE|USER|GROUP, ALTER ... OWNER TO
    FLOW = "flow"  # CREATE [OR REPLACE] FLOW, DROP FLOW, SHOW FLOWS / FLOW ... / CREATE FLOW, ADMIN FLUSH_FLOW, COMMENT ON FLOW
    SEQUENCE = "sequence"  # CREATE [TEMP] / ALTER / DROP SEQUENCE
    DATABASE = "database"  # CREATE / DROP DATABASE
    TABLE_OPTIONS = "table_options"  # ALTER TABLE t SET (k = v) | RESET (k) | SET 'k' = v | UNSET 'k'
    CREATE_TABLE = "create_table"  # CREATE [TEMP|UNLOGGED] TABLE [AS], with GreptimeDB's clauses
    INDEX = "index"  # CREATE [UNIQUE] INDEX, DROP INDEX
    JOB = "job"  # SUBMIT JOB, SHOW JOBS, FETCH / WAIT / CANCEL JOB
    REFRESH = "refresh"  # REFRESH TABLE, SHOW REFRESH STATUS
    SHOW = "show"  # SHOW TABLES / CREATE TABLE / ... (the gateway answers SHOW of a setting)
    EXPLAIN = "explain"
    VACUUM = "vacuum"  # VACUUM [(options)] [tables]: a table's upkeep now (engine.vacuum)
    COMMENT = "comment"  # COMMENT ON (but FLOW)
    SESSION = "session"  # transaction control and settings: the gateway's, refused by the engine
    EMPTY = "empty"


_ROLE_WORDS = ("ROLE", "USER", "GROUP")
_SESSION_WORDS = ("BEGIN", "COMMIT", "ROLLBACK", "START", "END", "ABORT", "SET", "RESET")
# Row-changing statements (an implicit transaction in a batch) and, with them, every statement
# refused in a read-only transaction.
_DML = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT"})
_WRITES = _DML | {"CREATE", "DROP", "ALTER", "TRUNCATE", "COMMENT", "GRANT", "REVOKE", "ADMIN", "COPY"}


@dataclass(frozen=True)
class Statement:
    kind: Kind
    command: str  # the first keyword, upper case ("cannot execute INSERT in a read-only transaction")
    is_dml: bool = False
    is_write: bool = False


@lru_cache(maxsize=8192)
def classify(sql: str) -> Statement:
    """The kind of one statement (text without its trailing ';')."""
    toks = sqllex.leading(sql, 12)
    if not toks:
        return Statement(Kind.EMPTY, "")
    w = [t.upper for t in toks[:6]] + [""] * 6
    first = w[0]
    kind = _kind(sql, toks, w)
    return Statement(kind, first, is_dml=first in _DML, is_write=first in _WRITES)


def _kind(sql: str, toks: list[sqllex.Token], w: list[str]) -> Kind:
    first, second = w[0], w[1]
    if first in ("GRANT", "REVOKE") or (first in ("CREATE", "ALTER", "DROP") and second in _ROLE_WORDS):
        return Kind.ROLE
    if first == "ALTER" and _is_owner_change(sql):
        return Kind.ROLE
    if _is_flow(w):
        return Kind.FLOW
    created = w[2] if second in ("TEMP", "TEMPORARY", "UNLOGGED") else second
    if (first in ("ALTER", "DROP") and second == "SEQUENCE") or (first == "CREATE" and created == "SEQUENCE"):
        return Kind.SEQUENCE
    if first in ("CREATE", "DROP") and second == "DATABASE":
        return Kind.DATABASE
    if first == "ALTER" and second == "TABLE" and _is_table_options(toks):
        return Kind.TABLE_OPTIONS
    if first == "CREATE" and created == "TABLE":
        return Kind.CREATE_TABLE
    if first == "INSERT":
        return Kind.INSERT
    if (first == "CREATE" and (second == "INDEX" or w[1:3] == ["UNIQUE", "INDEX"])) or w[:2] == ["DROP", "INDEX"]:
        return Kind.INDEX
    if (first in ("SUBMIT", "WAIT", "CANCEL") and second == "JOB") or w[:2] == ["SHOW", "JOBS"] or (
            first == "FETCH" and second == "JOB" and len(toks) > 2 and toks[2].kind in ("str", "param")):
        return Kind.JOB
    if w[:2] == ["REFRESH", "TABLE"] or w[:3] == ["SHOW", "REFRESH", "STATUS"]:
        return Kind.REFRESH
    if first == "SHOW":
        return Kind.SHOW
    if first == "VACUUM":
        return Kind.VACUUM
    if first == "EXPLAIN":
        return Kind.EXPLAIN
    if first == "COMMENT":
        return Kind.COMMENT
    if first in _SESSION_WORDS:
        return Kind.SESSION
    return Kind.SQL


def _is_flow(w: list[str]) -> bool:
    first = w[0]
    if first == "CREATE":
        return w[3 if w[1:3] == ["OR", "REPLACE"] else 1] == "FLOW"
    if first == "DROP":
        return w[1] == "FLOW"
    if first == "SHOW":
        return w[1] in ("FLOWS", "FLOW") or w[1:3] == ["CREATE", "FLOW"]
    if first == "ADMIN":
        return w[1] == "FLUSH_FLOW"
    if first == "COMMENT":
        return w[1:3] == ["ON", "FLOW"]
    return False


def _is_owner_change(sql: str) -> bool:
    """``ALTER TABLE|VIEW|SCHEMA name OWNER TO role``."""
    words = [t.upper for t in sqllex.scan(sql) if t.text != ";"]
    return (len(words) >= 5 and words[1] in ("TABLE", "VIEW", "SCHEMA")
            and words[-3:-1] == ["OWNER", "TO"])


def _is_table_options(toks: list[sqllex.Token]) -> bool:
    """ALTER TABLE [IF EXISTS] [ONLY] name SET (...) | RESET (...) | SET 'k' = v | UNSET 'k'."""
    i = 2
    if [t.upper for t in toks[i:i + 2]] == ["IF", "EXISTS"]:
        i += 2
    if i < len(toks) and toks[i].upper == "ONLY":
        i += 1
    parts, i = sqllex.split_ident_chain(toks, i)
    if not 1 <= len(parts) <= 2 or i + 1 >= len(toks):
        return False
    verb, nxt = toks[i].upper, toks[i + 1]
    return (verb in ("SET", "RESET") and nxt.text == "(") or (verb == "SET" and nxt.kind == "str") or verb == "UNSET"
