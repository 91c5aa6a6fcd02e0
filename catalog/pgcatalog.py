"""In-process answers to pg_catalog / information_schema and constant queries.

Clients (psql, pgJDBC, SQLAlchemy, asyncpg, DBeaver) interrogate the catalog constantly; these
queries must never wait for Spark. They run on an in-memory DuckDB database that mirrors
PostgreSQL's catalog relations from :class:`catalog.store.Catalog` (rebuilt whenever
``catalog.version`` moves). DuckDB's parser is PostgreSQL's, so a client's text is handed over
almost verbatim after token-level rewrites (:func:`rewrite`); PostgreSQL's functions are DuckDB
macros or Python UDFs that read the calling session from a thread-local. Result columns are named
and typed as PostgreSQL would (``relname`` is ``name``, ``relkind`` is ``"char"``) from what the
select list says (:func:`select_items`), falling back to the Arrow type DuckDB produced.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import functools
import os
import re
import threading
import time
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import duckdb
import pyarrow as pa
import warnings

from catalog import active as activemeta
from catalog import flows as flowmeta
from catalog import jobs as jobsmeta
from catalog import refresh as refreshmeta
from tidegate import pg_keywords
from catalog import pg_relations as rels
from tidegate import pgvalues, sqllex
from tidegate.sqllex import Token, closing, scan, split_ident_chain, tokenize
from catalog.store import Catalog, SequenceParams, TableDef, is_temp_schema
from tidegate.errors import SqlError
from tidegate.pgtypes import TYPES_BY_NAME, TYPES_BY_OID, ColumnType, lookup_type_name, pg_type_for_arrow
from tidegate.results import ResultField, RowStream
from tidegate.session import SessionInfo

SERVER_VERSION = "16.4"
SERVER_VERSION_NUM = "160004"
VERSION_STRING = (f"PostgreSQL {SERVER_VERSION} (tidegate 0.1.0) on x86_64-pc-linux-gnu, "
                  "compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit")

# Settings pg_settings / current_setting() report when the session has not set them.
DEFAULT_SETTINGS: dict[str, str] = {
    "application_name": "", "bytea_output": "hex", "client_encoding": "UTF8",
    "client_min_messages": "notice", "datestyle": "ISO, MDY", "default_transaction_isolation": "read committed",
    "default_transaction_read_only": "off", "extra_float_digits": "1", "idle_in_transaction_session_timeout": "0",
    "integer_datetimes": "on", "intervalstyle": "postgres", "is_superuser": "on", "lc_collate": "C.UTF-8",
    "lc_ctype": "C.UTF-8", "lc_messages": "C.UTF-8", "lc_monetary": "C.UTF-8", "lc_numeric": "C.UTF-8",
    "lc_time": "C.UTF-8", "lock_timeout": "0", "max_connections": "1000", "max_identifier_length": "63",
    "max_index_keys": "32", "block_size": "8192", "search_path": '"$user", public', "server_encoding": "UTF8",
    "server_version": SERVER_VERSION, "server_version_num": SERVER_VERSION_NUM, "standard_conforming_strings": "on",
    "statement_timeout": "0", "timezone": "UTC", "transaction_isolation": "read committed",
    "transaction_read_only": "off", "default_tablespace": "", "row_security": "on", "port": "5433",
    "listen_addresses": "127.0.0.1", "data_directory_mode": "0700", "jit": "off", "ssl": "off",
    "password_encryption": "scram-sha-256", "session_authorization": "tidegate", "in_hot_standby": "off",
    "default_with_oids": "off", "escape_string_warning": "on", "wal_level": "replica",
    "default_table_access_method": "heap", "default_toast_compression": "pglz",
    "default_text_search_config": "pg_catalog.english", "default_transaction_deferrable": "off",
    "synchronous_commit": "on", "work_mem": "4MB", "maintenance_work_mem": "64MB", "shared_buffers": "128MB",
    "temp_buffers": "8MB", "effective_cache_size": "4GB", "max_locks_per_transaction": "64",
    "wal_block_size": "8192", "segment_size": "1GB", "data_checksums": "off", "track_commit_timestamp": "off",
    "xmloption": "content", "array_nulls": "on", "backslash_quote": "safe_encoding",
    "check_function_bodies": "on", "quote_all_identifiers": "off", "transform_null_equals": "off",
    "plan_cache_mode": "auto", "log_timezone": "UTC", "cluster_name": "", "enable_seqscan": "on",
    "join_collapse_limit": "8", "from_collapse_limit": "8", "lo_compat_privileges": "off",
    "session_replication_role": "origin", "vacuum_freeze_min_age": "50000000", "ssl_library": "",
    "tcp_keepalives_idle": "0", "hot_standby": "on", "max_wal_senders": "10", "shared_preload_libraries": "",
    "krb_caseins_users": "off",
}
# How PostgreSQL spells the mixed-case GUC names in pg_settings.name.
_SETTING_DISPLAY = {"datestyle": "DateStyle", "intervalstyle": "IntervalStyle", "timezone": "TimeZone"}

# Return type OIDs of functions whose result column PostgreSQL types more precisely than Arrow can.
_FUNCTION_TYPES: dict[str, int] = {
    "current_database": 19, "current_schema": 19, "current_user": 19, "session_user": 19, "user": 19,
    "current_role": 19, "current_catalog": 19, "pg_get_userbyid": 19, "pg_encoding_to_char": 19,
    "current_schemas": 1003, "version": 25, "current_setting": 25, "set_config": 25, "format_type": 25,
    "obj_description": 25, "col_description": 25, "shobj_description": 25, "pg_get_expr": 25,
    "pg_get_indexdef": 25, "pg_get_constraintdef": 25, "pg_get_viewdef": 25, "pg_get_partkeydef": 25,
    "pg_get_serial_sequence": 25, "pg_size_pretty": 25, "quote_ident": 25, "array_to_string": 25,
    "parse_ident": 1009, "string_to_array": 1009,
    "pg_get_function_result": 25, "pg_get_function_arguments": 25, "pg_get_triggerdef": 25,
    "pg_get_function_identity_arguments": 25,
    "pg_backend_pid": 23, "pg_is_in_recovery": 16, "pg_table_is_visible": 16, "pg_type_is_visible": 16,
    "pg_postmaster_start_time": 1184, "txid_current": 20, "count": 20, "pg_total_relation_size": 20,
    "pg_relation_size": 20, "pg_relation_filepath": 25, "pg_table_size": 20, "pg_indexes_size": 20, "pg_database_size": 20,
    "to_regclass": 26, "to_regtype": 26, "to_regnamespace": 26, "inet_server_port": 23,
    "array_length": 23, "array_upper": 23, "array_lower": 23, "generate_subscripts": 23, "length": 23,
    "char_length": 23, "octet_length": 23, "strpos": 23, "position": 23, "array_ndims": 23,
    "nextval": 20, "currval": 20, "setval": 20, "lastval": 20,
    "row_number": 20, "rank": 20, "dense_rank": 20, "unnest_name": 19, "json_build_object": 114, "jsonb_build_object": 114,
}
# Cast targets (canonical names) -> reported type OID.
_CAST_TYPES: dict[str, int] = {
    "name": 19, "char": 18, "oid": 26, "regclass": 2205, "regtype": 2206, "regproc": 24, "regprocedure": 25,
    "regnamespace": 25, "regrole": 25, "text": 25, "varchar": 1043, "bpchar": 1042, "int2": 21, "int4": 23,
    "int8": 20, "bool": 16, "float4": 700, "float8": 701, "numeric": 1700, "xid": 20, "_text": 1009,
    "_name": 1003, "_oid": 1028, "_int2": 1005, "_int4": 1007, "int2vector": 1005, "oidvector": 1028,
    "_char": 1002, "_regtype": 1009, "date": 1082, "timestamp": 1114, "timestamptz": 1184, "json": 114, "jsonb": 3802,
}
def parse_ident(text: str, strict: bool) -> list[str]:
    """PostgreSQL's parse_ident: a qualified identifier split into its parts (quotes removed,
    unquoted parts folded to lower case); with ``strict`` nothing may follow it."""
    try:
        toks = scan(text.strip())
        parts, end = split_ident_chain(toks, 0)
    except SqlError:
        parts, end, toks = [], 0, []
    if not parts or (strict and end != len(toks)):
        raise _UdfError("22023", f'string is not a valid identifier: "{text}"')
    return parts


def setting_value(info: SessionInfo, name: str, missing_ok: bool) -> str | None:
    """current_setting(name [, missing_ok]): the session's value, else the server's default."""
    key = name.lower()
    if key in info.settings:
        return info.settings[key]
    if key in DEFAULT_SETTINGS:
        if key == "application_name":
            return info.application_name
        if key in ("session_authorization",):
            return info.user
        return DEFAULT_SETTINGS[key]
    if missing_ok or "." in key:
        return None
    raise SqlError("42704", f'unrecognized configuration parameter "{name}"')


# Scalar functions a query may call in FROM (as a one-row relation).
_SCALAR_IN_FROM = {"current_schemas", "current_schema", "current_database", "current_setting", "version",
                   "string_to_array", "parse_ident",
                   "current_user", "session_user", "pg_backend_pid", "format_type", "pg_get_userbyid",
                   "to_regclass", "to_regtype", "pg_is_in_recovery", "pg_postmaster_start_time", "txid_current"}
_KEYWORD_FUNCS = {"current_user", "session_user", "user", "current_role", "current_catalog", "current_schema"}

_CATALOG_COLUMN_TYPES = rels.column_pg_types()
# INFORMATION_SCHEMA relations whose rows change without a catalog version bump (flow runs,
# refresh and job state): reloaded into the evaluator per query that mentions them, never cached.
_LIVE_RELATIONS = (
    (flowmeta.mentions_flow_relations, flowmeta.load_into_duckdb),
    (refreshmeta.mentions_refresh_relations, refreshmeta.load_into_duckdb),
    (jobsmeta.mentions_job_relations, jobsmeta.load_into_duckdb),
    (activemeta.mentions_gateway_relations, activemeta.load_into_duckdb),
)
# regproc columns hold function names in the mirror; compared with a number (ADBC: ``typreceive != 0``)
# or cast to oid they are the function's OID (tg_regproc_oid), as PostgreSQL's regproc is an OID.
_REGPROC_COLUMNS = {c for rel in rels.RELATIONS.values() for c, t in rel.columns if t == "regproc"}
_COMPARISONS = {"=", "<>", "!=", "<", ">", "<=", ">="}
_VECTOR_COLUMNS = {c for rel in rels.RELATIONS.values() for c, t in rel.columns if t in ("int2vector", "oidvector")}
_VOLATILE = {"now", "random", "clock_timestamp", "statement_timestamp", "timeofday", "txid_current",
             "pg_current_xact_id", "current_timestamp", "current_time", "localtime", "localtimestamp",
             "current_date", "transaction_timestamp", "gen_random_uuid", "pg_stat_activity", "setseed",
             "pg_postmaster_start_time", "uuid", "pg_sleep", "nextval", "currval", "setval", "lastval"}
_MARK = re.compile(r"TGERR\[(\w{5})\](.*?)\[/TGERR\]", re.S)
_REL_WORDS = {"from", "join"}
_CLAUSE_END = {"where", "group", "having", "order", "limit", "offset", "union", "intersect", "except",
               "window", "fetch", "for", "returning", "on", "using"}
_FORBIDDEN = {"insert", "update", "delete", "merge", "copy", "create", "drop", "alter", "into", "truncate",
              "grant", "revoke", "lock", "call", "do", "vacuum", "analyze"}
_STATEMENT_START = {"select", "with", "values", "table"}


class _UdfError(Exception):
    """Raised inside a UDF; DuckDB carries the text out, and :func:`_map_error` restores the SQLSTATE."""

    def __init__(self, sqlstate: str, message: str) -> None:
        super().__init__(f"TGERR[{sqlstate}]{message}[/TGERR]")


# ---------------------------------------------------------------------------------------------
# the rewrite


def _type_after_cast(toks: list[Token], i: int) -> tuple[str, str, int]:
    """Read the type name after ``::`` at significant index ``i``.

    Returns (canonical key, the type's text as DuckDB should read it, next index). The key is
    PostgreSQL's typname for known types (``int4``, ``_text``, ``char``, ``regclass``).
    """
    j = i
    if j + 1 < len(toks) and toks[j].ident == "pg_catalog" and toks[j + 1].text == ".":
        j += 2
    words: list[str] = []
    quoted = False
    while j < len(toks) and toks[j].ident is not None:
        if toks[j].kind == "qid":
            words.append(toks[j].ident or "")
            quoted = True
            j += 1
            break
        w = toks[j].lower
        if words and w not in ("precision", "varying", "with", "without", "time", "zone"):
            break
        words.append(w)
        j += 1
    mods = ""
    if j < len(toks) and toks[j].text == "(":
        k = j
        while k < len(toks) and toks[k].text != ")":
            k += 1
        mods = "".join(t.text for t in toks[j:k + 1])
        j = k + 1
    dims = 0
    while j + 1 < len(toks) and toks[j].text == "[" and toks[j + 1].text == "]":
        dims += 1
        j += 2
    spelled = " ".join(words)
    if quoted and spelled == "char":
        base = "char"
    elif spelled in ("int2vector", "oidvector", "regclass", "regtype", "regproc", "regprocedure", "regnamespace",
                     "regrole", "name", "oid", "xid", "xid8", "cid", "tid", "aclitem", "pg_node_tree", "regoper",
                     "regconfig", "regdictionary", "regcollation", "regoperator", "pg_lsn", "inet", "cidr"):
        base = spelled
    else:
        pg = lookup_type_name(spelled)
        base = pg.name if pg is not None else spelled
    duck_base = {
        "char": "VARCHAR", "name": "VARCHAR", "oid": "BIGINT", "xid": "BIGINT", "xid8": "BIGINT", "cid": "BIGINT",
        "tid": "VARCHAR", "aclitem": "VARCHAR", "pg_node_tree": "VARCHAR", "int2vector": "SMALLINT[]",
        "oidvector": "BIGINT[]", "regoper": "BIGINT", "regconfig": "BIGINT", "regdictionary": "BIGINT",
        "regcollation": "BIGINT", "regoperator": "BIGINT", "pg_lsn": "VARCHAR", "inet": "VARCHAR",
        "cidr": "VARCHAR", "bpchar": "VARCHAR", "json": "VARCHAR", "jsonb": "VARCHAR", "uuid": "UUID",
    }.get(base)
    text = (duck_base if duck_base else " ".join(words) + mods) + "[]" * dims
    key = ("_" + base) if dims else base
    return key, text, j


def _pop_operand(out: list[str], kinds: list[str]) -> tuple[str, str]:
    """Remove the primary expression that ends ``out`` (a cast's operand); returns (text, kind)."""
    k = len(out) - 1
    while k >= 0 and kinds[k] in ("ws", "comment"):
        k -= 1
    if k < 0:
        return "", "none"
    end = k
    kind = kinds[k]
    if out[k] in (")", "]"):
        depth = 0
        while k >= 0:
            if out[k] in (")", "]"):
                depth += 1
            elif out[k] in ("(", "["):
                depth -= 1
                if depth == 0:
                    break
            k -= 1
        inner = [kinds[x] for x in range(k + 1, end) if kinds[x] != "ws"]
        kind = inner[0] if out[k] == "(" and len(inner) == 1 and inner[0] in ("str", "param") else "expr"
        j = k - 1
        while j >= 0 and kinds[j] == "ws":
            j -= 1
        if j >= 0 and kinds[j] in ("word", "qid") and out[j].lower() not in _NOT_FUNCTIONS:
            k = _chain_start(out, kinds, j)
    elif kind in ("word", "qid"):
        k = _chain_start(out, kinds, k)
        kind = "expr"
    text = "".join(out[k:end + 1])
    del out[k:]
    del kinds[k:]
    return text, kind


_NOT_FUNCTIONS = {"and", "or", "not", "in", "select", "where", "on", "when", "then", "else", "case", "as",
                  "from", "by", "is", "like", "ilike", "any", "all", "some", "between", "exists"}


def _chain_start(out: list[str], kinds: list[str], k: int) -> int:
    """Start of the ``a.b.c`` identifier chain ending at ``out[k]`` (whitespace-tolerant)."""
    while True:
        j = k - 1
        while j >= 0 and kinds[j] == "ws":
            j -= 1
        if j < 1 or out[j] != ".":
            return k
        m = j - 1
        while m >= 0 and kinds[m] == "ws":
            m -= 1
        if m < 0 or kinds[m] not in ("word", "qid"):
            return k
        k = m


def _pg_array_literal(text: str, element: str) -> str:
    """'{a,b}' (PostgreSQL array text) -> DuckDB list literal, for ``'{..}'::T[]`` casts."""
    items = pgvalues.parse_flat_array(text)
    rendered = ", ".join("NULL" if v is None else "'" + v.replace("'", "''") + "'" for v in items)
    return f"[{rendered}]"


def _quantified_arrays(sig: list[Token]) -> tuple[set[int], set[int]]:
    """``= ANY(...)`` / ``ALL(...)`` / ``SOME(...)`` whose operand is one string literal or one
    parameter: (significant indexes of those string literals, the parameter numbers)."""
    literals: set[int] = set()
    params: set[int] = set()
    for k in range(1, len(sig) - 3):
        if sig[k].is_word("any", "all", "some") and sig[k - 1].kind == "op" and sig[k + 1].text == "(":
            close = closing(sig, k + 1)
            if close is None:
                continue
            j = k + 2
            if sig[j].kind == "str" and (j + 1 == close or sig[j + 1].kind == "cast"):
                if j + 1 == close:
                    literals.add(j)
            elif sig[j].kind == "param":
                params.add(int(sig[j].text[1:]))
    return literals, params


def rewrite(sql: str) -> str:
    """PostgreSQL catalog-query text -> text DuckDB runs against the mirror (see module doc)."""
    raw = tokenize(sql)
    sig: list[Token] = []
    spaced: list[bool] = []
    gap = False
    for t in raw:
        if t.kind in ("ws", "comment"):
            gap = True
            continue
        sig.append(t)
        spaced.append(gap)
        gap = False
    sig, spaced = _cast_calls_to_operators(sig, spaced)
    sig, spaced = _name_inner_calls(sig, spaced)
    array_literals, _ = _quantified_arrays(sig)
    db_dropped = -1
    out: list[str] = []
    kinds: list[str] = []

    def emit(text: str, kind: str) -> None:
        out.append(text)
        kinds.append(kind)

    i = 0
    n = len(sig)
    while i < n:
        t = sig[i]
        low = t.lower if t.kind == "word" else ""
        prev = sig[i - 1].text if i else ""
        nxt = sig[i + 1].text if i + 1 < n else ""
        if spaced[i] and out:
            emit(" ", "ws")
        if t.kind == "word" and low == "operator" and nxt == "(":
            k = i + 2
            op = ""
            while k < n and sig[k].text != ")":
                if sig[k].kind == "op":
                    op = sig[k].text
                k += 1
            emit(op, "op")
            i = k + 1
            continue
        if t.kind == "word" and low == "collate":
            _, k = split_ident_chain(sig, i + 1)
            i = k
            continue
        if t.ident is not None and nxt == "." and prev != "." and i + 3 < n \
                and sig[i + 2].ident in ("pg_catalog", "information_schema") and sig[i + 3].text == ".":
            # db.pg_catalog.x: the database was checked against the session's (_check_databases)
            db_dropped = i + 2
            i += 2
            continue
        if t.ident in ("pg_catalog", "information_schema") and nxt == "." and (prev != "." or i == db_dropped):
            if t.ident == "information_schema":
                emit("isx", "word")
                emit(".", "punct")
            i += 2
            continue
        if t.kind == "word" and low in _KEYWORD_FUNCS and prev != "." and nxt != "." and nxt != "(" and prev != "::":
            if low == "current_schema":
                emit("current_schema()", "expr")
            elif low == "current_catalog":
                emit("current_database()", "expr")
            else:
                emit("tg_current_user()", "expr")
            i += 1
            continue
        if t.ident in _VECTOR_COLUMNS and nxt == "[" and prev != "::":
            # int2vector / oidvector subscripts start at 0 in PostgreSQL; DuckDB lists at 1
            close = closing(sig, i + 1)
            if close is not None and not any(sig[k].text == ":" for k in _top_level(sig, i + 2, close)):
                inner = rewrite(_join(sig[i + 2:close]))
                emit(f"{t.text}[({inner}) + 1]", "expr")
                i = close + 1
                continue
        if t.kind == "word" and low == "array_to_string" and nxt == "(":
            close = closing(sig, i + 1)
            if close is not None:
                args = _split_args_idx(sig, i + 2, close)
                if args and any(sig[k].text == "||" for k in _top_level(sig, args[0][0], args[0][1])):
                    pieces = []
                    start = args[0][0]
                    for k in _top_level(sig, args[0][0], args[0][1]):
                        if sig[k].text == "||":
                            pieces.append(rewrite(_join(sig[start:k])))
                            start = k + 1
                    pieces.append(rewrite(_join(sig[start:args[0][1]])))
                    rest = rewrite(_join(sig[args[0][1]:close]))
                    emit(f"array_to_string(list_concat({', '.join(pieces)}){rest})", "expr")
                    i = close + 1
                    continue
        if t.kind == "word" and low == "as" and i + 1 < n and sig[i + 1].kind == "word" and not (
                i + 2 < n and sig[i + 2].text == "("):
            # AS label: any keyword may be a column label in PostgreSQL (d.datcollate AS collate);
            # DuckDB reserves some, so the label goes quoted (folded to lower case as PostgreSQL does)
            emit(t.text, "word")
            emit(" ", "ws")
            emit('"' + sig[i + 1].lower + '"', "expr")
            i += 2
            continue
        if t.kind == "word" and low in ("json_build_object", "jsonb_build_object") and nxt == "(":
            emit("json_object", "word")
            i += 1
            continue
        if t.kind == "word" and low in ("current_user", "session_user", "user", "current_role") and nxt == "(":
            emit("tg_current_user", "word")
            i += 1
            continue
        if i and _scalar_in_from(sig, i):
            # a scalar function in FROM is a one-row relation whose column is named after the
            # function, or after the alias when there is one (SELECT * FROM current_schemas(true))
            close = closing(sig, i + 1)
            if close is not None:
                call = rewrite(_join(sig[i:close + 1]))
                col, alias = _from_function_column(sig, i)
                emit(f'(SELECT {call} AS "{col}")', "expr")
                if alias is None:
                    emit(f' AS "{low}"', "expr")
                i = close + 1
                continue
        if i in array_literals:
            # col = ANY('{r,p}'): the unknown literal is an array of the column's type (pgcli \\d)
            emit(_pg_array_literal(t.value, ""), "expr")
            i += 1
            continue
        if t.kind == "op" and t.text in _COMPARISONS and i + 1 < n and sig[i + 1].kind == "num" \
                and i and sig[i - 1].ident in _REGPROC_COLUMNS:
            while out and kinds[-1] == "ws":
                out.pop()
                kinds.pop()
            operand, _ = _pop_operand(out, kinds)
            emit(f"tg_regproc_oid({operand}) {t.text}", "expr")
            i += 1
            continue
        if t.ident in _REGPROC_COLUMNS and prev in _COMPARISONS and i >= 2 and sig[i - 2].kind == "num" \
                and nxt != "." and nxt != "::":
            emit(f"tg_regproc_oid({t.text})", "expr")
            i += 1
            continue
        if t.kind == "cast":
            key, ttext, k = _type_after_cast(sig, i + 1)
            while out and kinds[-1] == "ws":
                out.pop()
                kinds.pop()
            operand, okind = _pop_operand(out, kinds)
            if key in ("oid", "int4", "int8") and i and sig[i - 1].ident in _REGPROC_COLUMNS:
                emit(f"tg_regproc_oid({operand})", "expr")
                i = k
                continue
            to_text = k + 1 < n and sig[k].kind == "cast" and _type_after_cast(sig, k + 1)[0] in ("text", "varchar", "name")
            if key == "regclass":
                emit(f"tg_relname(tg_regclass({operand}))" if to_text else f"tg_regclass({operand})", "expr")
            elif key == "regtype":
                emit(f"format_type(tg_regtype({operand}), NULL)" if to_text else f"tg_regtype({operand})", "expr")
            elif key == "_regtype":
                # oidvector / oid[] -> the types' names (pgcli: proargtypes::regtype[]::text[])
                emit(f"list_transform(CAST({operand} AS BIGINT[]), lambda tg_t: format_type(tg_t, NULL))", "expr")
            elif key in ("regproc", "regprocedure") and k + 1 < n and sig[k].kind == "cast" \
                    and _type_after_cast(sig, k + 1)[0] in ("oid", "int4", "int8"):
                # 'int4recv'::regproc::oid: the function's OID
                emit(f"tg_regproc_oid(CAST({operand} AS VARCHAR))", "expr")
                i = _type_after_cast(sig, k + 1)[2]
                continue
            elif key in ("regproc", "regprocedure"):
                # regproc columns hold function names; 'pg_catalog.f'::regproc names the same one
                emit(f"regexp_replace(CAST({operand} AS VARCHAR), '^pg_catalog\\.', '')", "expr")
            elif key == "regnamespace":
                emit(f"tg_nspname(tg_regnamespace({operand}))" if to_text else f"tg_regnamespace({operand})", "expr")
            elif key == "regrole":
                emit(f"pg_get_userbyid(tg_regrole({operand}))" if to_text else f"tg_regrole({operand})", "expr")
            elif key.startswith("_") and okind == "str":
                emit(f"CAST({_pg_array_literal(Token(okind, operand).value, key)} AS {ttext})", "expr")
            else:
                emit(f"CAST({operand} AS {ttext})", "expr")
            i = k
            continue
        emit(t.text, t.kind)
        i += 1
    return "".join(out).strip().rstrip(";").strip()


def _join(toks: list[Token]) -> str:
    return " ".join(t.text for t in toks)


def _top_level(sig: list[Token], start: int, end: int) -> list[int]:
    """Indexes in [start, end) at parenthesis depth 0."""
    out = []
    depth = 0
    for k in range(start, end):
        if sig[k].text in ("(", "["):
            depth += 1
        elif sig[k].text in (")", "]"):
            depth -= 1
        elif depth == 0:
            out.append(k)
    return out


def _split_args_idx(sig: list[Token], start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) split at top-level commas into (from, to) index pairs."""
    args = []
    s = start
    for k in _top_level(sig, start, end):
        if sig[k].text == ",":
            args.append((s, k))
            s = k + 1
    args.append((s, end))
    return args


# Calls PostgreSQL names differently from the function (or that are syntax, not calls).
_NOT_NAMED_AFTER_CALL = {"cast", "trim", "exists", "array", "row", "values", "in", "any", "all", "some", "not",
                         "and", "or", "case", "select", "lateral", "on", "using", "over", "filter", "within"}


def _name_inner_calls(sig: list[Token], spaced: list[bool]) -> tuple[list[Token], list[bool]]:
    """``SELECT count(1) FROM ...`` inside a CTE or subquery: give the unnamed call PostgreSQL's
    column name (``count``), which DuckDB would call ``count(1)``, so that the outer query can
    refer to it (pgcli's ``ORDER BY Count``). Top-level names are set on the result instead."""
    inserts: dict[int, str] = {}
    for s_idx, t in enumerate(sig):
        if not t.is_word("select") or s_idx == 0:
            continue
        depth = 0
        start = s_idx + 1
        if start < len(sig) and sig[start].is_word("distinct", "all"):
            start += 1
            if start < len(sig) and sig[start].is_word("on") and start + 1 < len(sig) and sig[start + 1].text == "(":
                close = closing(sig, start + 1)
                start = close + 1 if close is not None else start
        k = start
        item_start = start
        while k <= len(sig):
            tok = sig[k] if k < len(sig) else None
            ends_list = tok is None or (depth == 0 and (
                tok.text in (")", ";") or (tok.kind == "word" and (tok.lower == "from" or tok.lower in _CLAUSE_END))))
            if tok is not None and not ends_list:
                if tok.text in ("(", "["):
                    depth += 1
                elif tok.text in (")", "]"):
                    depth -= 1
            if ends_list or (depth == 0 and tok is not None and tok.text == ","):
                name = _unnamed_call(sig[item_start:k])
                if name is not None:
                    inserts[k - 1] = name
                item_start = k + 1
                if ends_list:
                    break
            k += 1
    if not inserts:
        return sig, spaced
    out_t: list[Token] = []
    out_s: list[bool] = []
    for k, (tok, sp) in enumerate(zip(sig, spaced)):
        out_t.append(tok)
        out_s.append(sp)
        if k in inserts:
            out_t.extend([Token("word", "AS"), Token("qid", '"' + inserts[k].replace('"', '""') + '"')])
            out_s.extend([True, True])
    return out_t, out_s


def _unnamed_call(item: list[Token]) -> str | None:
    """The column name PostgreSQL gives a select item that is a bare function call (optionally
    qualified, with OVER/FILTER), or None (an alias, an expression, a form PostgreSQL names otherwise)."""
    if len(item) < 3 or item[0].kind != "word" or item[0].lower in _NOT_NAMED_AFTER_CALL:
        return None
    j = 0
    while j + 2 < len(item) and item[j + 1].text == "." and item[j + 2].kind in ("word", "qid"):
        j += 2
    if item[j].kind not in ("word", "qid") or j + 1 >= len(item) or item[j + 1].text != "(":
        return None
    close = closing(item, j + 1)
    if close is None:
        return None
    rest = item[close + 1:]
    while rest and rest[0].is_word("over", "filter"):
        if len(rest) > 1 and rest[1].text == "(":
            end = closing(rest, 1)
            if end is None:
                return None
            rest = rest[end + 1:]
        elif rest[0].is_word("over") and len(rest) > 1 and rest[1].kind in ("word", "qid"):
            rest = rest[2:]
        else:
            return None
    if rest:
        return None
    return item[j].ident


def _cast_calls_to_operators(sig: list[Token], spaced: list[bool]) -> tuple[list[Token], list[bool]]:
    """``CAST(x AS T)`` -> ``(x)::T`` so that one code path rewrites PostgreSQL-only casts."""
    k = 0
    while k < len(sig):
        if sig[k].is_word("cast") and k + 1 < len(sig) and sig[k + 1].text == "(":
            close = closing(sig, k + 1)
            if close is not None:
                depth = 0
                as_idx = None
                for j in range(k + 2, close):
                    if sig[j].text in ("(", "["):
                        depth += 1
                    elif sig[j].text in (")", "]"):
                        depth -= 1
                    elif depth == 0 and sig[j].is_word("as"):
                        as_idx = j
                if as_idx is not None:
                    new = sig[k + 1:as_idx] + [Token("punct", ")"), Token("cast", "::")] + sig[as_idx + 1:close]
                    new_sp = spaced[k + 1:as_idx] + [False, False] + [False] + spaced[as_idx + 2:close]
                    sig = sig[:k] + new + sig[close + 1:]
                    spaced = spaced[:k] + [spaced[k]] + new_sp[1:] + spaced[close + 1:]
                    continue
        k += 1
    return sig, spaced


# ---------------------------------------------------------------------------------------------
# reading a query: is it a catalog query, and what are its result columns


@dataclass(frozen=True)
class SelectItem:
    name: str | None  # the column name PostgreSQL gives it; None for ``*`` expansions
    source: str | None  # the catalog column it is, for typing (``relname``)
    type_oid: int | None  # from a cast or a known function
    star: bool = False
    post: str | None = None  # "regclass" / "regtype": an OID the client expects printed as a name
    strong: bool = True  # False when the name is only a cast's type name (FigureColname strength 1)


@dataclass(frozen=True)
class Analysis:
    catalog_only: bool
    items: list[SelectItem] | None
    mentions_settings: bool
    inner: dict[str, SelectItem] | None = None  # named items of subqueries/CTEs, for ``*`` columns
    volatile: bool = True  # calls something whose value changes between executions (now(), txid)
    array_params: frozenset[int] = frozenset()  # $n of ``= ANY($n)``: an array (text form is parsed)
    # database-qualified names (db.pg_catalog.x): (database, the name as PostgreSQL reports it)
    databases: tuple[tuple[str, str], ...] = ()
    from_functions: dict[str, str] | None = None  # column -> the scalar function called in FROM
    # column -> type OID over just the catalog relations the query names (see column_pg_types_in)
    column_types: dict[str, int] | None = None


# Relation-free queries are answered here only when they read session or catalog facts
# (drivers send these on every connect); anything that computes (arithmetic, casts to data types,
# date/time or string functions) goes to the engine, whose translation follows PostgreSQL's semantics.
_SESSION_WORDS = {
    "select", "as", "and", "or", "not", "is", "null", "true", "false", "case", "when", "then", "else", "end",
    "like", "ilike", "in", "distinct", "from", "where", "limit", "offset", "order", "by", "asc", "desc",
    "current_user", "session_user", "user", "current_catalog", "current_schema", "current_role", "values",
    "current_timestamp", "current_date", "localtimestamp",
}
_SESSION_FUNCTIONS = {
    "version", "current_setting", "set_config", "current_database", "current_schema", "current_schemas",
    "current_user", "session_user", "pg_backend_pid", "pg_postmaster_start_time", "pg_is_in_recovery",
    "format_type", "obj_description", "col_description", "shobj_description", "quote_ident", "parse_ident",
    "array_lower", "array_upper", "array_length",
    "quote_literal", "to_regclass", "to_regtype", "to_regnamespace", "txid_current", "pg_encoding_to_char",
    "pg_get_userbyid", "pg_get_viewdef", "pg_relation_filepath", "pg_get_expr", "pg_get_indexdef", "pg_get_constraintdef",
    "pg_table_is_visible", "pg_type_is_visible", "array_to_string", "string_agg", "coalesce", "lower", "upper",
    "inet_server_addr", "inet_server_port", "inet_client_addr", "pg_get_keywords", "pg_sleep",
    "now", "statement_timestamp", "transaction_timestamp", "clock_timestamp",
    "has_table_privilege", "has_any_column_privilege", "has_column_privilege", "has_schema_privilege",
    "has_database_privilege", "pg_has_role", "has_function_privilege", "has_sequence_privilege",
    "has_type_privilege", "has_language_privilege", "has_tablespace_privilege", "has_server_privilege",
    "has_foreign_data_wrapper_privilege", "has_parameter_privilege",
    "nextval", "currval", "setval", "lastval", "pg_get_serial_sequence",
}
# Functions that compute on their arguments rather than read a session or catalog fact: in a
# relation-free query they go to the engine, whose translation follows PostgreSQL (DuckDB's
# upper('ß') is 'ẞ', its coalesce(1, 2.5) prints 1.0, its quote_literal has no E'' form).
_COMPUTING_FUNCTIONS = {"lower", "upper", "coalesce", "array_to_string", "array_length", "array_lower",
                        "array_upper", "quote_literal", "string_agg"}
_SESSION_CASTS = {"text", "name", "oid", "regclass", "regtype", "regproc", "regprocedure", "regnamespace",
                  "regrole", "varchar", "bool", "boolean"}
_SESSION_OPS = {"=", "<>", "!=", ","}


# pg_* functions that compute on their arguments (PostgreSQL's type rules live in the engine).
_PG_COMPUTING_FUNCTIONS = {"pg_typeof", "pg_column_size"}


def _references_catalog(toks: list[Token]) -> bool:
    return any(t.kind == "word" and (t.lower.startswith("pg_") or t.lower in ("information_schema",))
               and t.lower not in _SESSION_FUNCTIONS and t.lower not in _PG_COMPUTING_FUNCTIONS for t in toks)


# Words whose operands PostgreSQL requires to be boolean (42804 for a number or a text there, a
# literal read by boolean input: ' on ', 'tr'); DuckDB casts either by its own rules.
_BOOLEAN_CONTEXT_WORDS = frozenset({"not", "and", "or", "where", "when", "is", "having"})


def _literal_as_boolean(toks: list[Token]) -> bool:
    """Whether a number or a string literal stands next to a word that wants a boolean
    (``WHERE 1``, ``NOT 'abc'``, ``1 IS TRUE``): the engine's typing answers those as PostgreSQL."""
    for k, t in enumerate(toks):  # direct neighbours only: to_regclass('x') IS NULL is a call's argument
        if t.kind in ("num", "str"):
            around = toks[max(k - 1, 0):k] + toks[k + 1:k + 2]
            if any(n.kind == "word" and n.lower in _BOOLEAN_CONTEXT_WORDS for n in around):
                return True
    return False


def _session_constant_query(toks: list[Token], names: frozenset[str] = frozenset()) -> bool:
    """True when a relation-free query only reads session/catalog facts (see above); ``names``:
    the columns of scalar functions in FROM (``SELECT s FROM current_schemas(true) s``)."""
    if _literal_as_boolean(toks):
        return False
    for k, t in enumerate(toks):
        if t.kind in ("word", "qid") and t.ident in names and not (k + 1 < len(toks) and toks[k + 1].text == "("):
            continue
        if t.is_word("unnest") and _unnests_current_schemas(toks, k):
            continue  # pgcli: SELECT * FROM unnest(current_schemas(true))
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        if t.kind == "word":
            if nxt is not None and nxt.text == "(":
                if (t.lower not in _SESSION_FUNCTIONS and t.lower not in ("pg_catalog", "values")) \
                        or t.lower in _COMPUTING_FUNCTIONS:
                    return False
            elif t.lower not in _SESSION_WORDS and t.lower not in _SESSION_FUNCTIONS \
                    and t.lower not in _SESSION_CASTS and t.lower != "pg_catalog" \
                    and not (k and toks[k - 1].is_word("as")):
                return False
        elif t.kind == "cast":
            # drivers qualify the types they cast parameters to (asyncpg: $1::"pg_catalog"."int4")
            qualified = nxt is not None and nxt.ident == "pg_catalog"
            if nxt is None or (nxt.lower not in _SESSION_CASTS and not qualified):
                return False
            # a literal read as a boolean ('off', 'yes') or any array: PostgreSQL's input and
            # output rules live in the engine's translation (DuckDB's differ)
            if (nxt.is_word("bool", "boolean") and k and toks[k - 1].kind == "str") \
                    or (k + 2 < len(toks) and toks[k + 2].text == "["):
                return False
        elif t.kind == "num" and not (t.text.isdigit() and int(t.text) < 2**63):
            return False  # 1.5, 1e10, a numeric past bigint: PostgreSQL's numeric, typed by the engine
        elif t.kind == "op" and t.text not in _SESSION_OPS \
                and not (t.text == "*" and k and (toks[k - 1].is_word("select") or toks[k - 1].text in (".", ","))):
            return False
    return True


# DuckDB's own functions that read files, run SQL text or tell its settings and paths (none is a
# PostgreSQL function). The catalog path never runs them: a query calling one (or calling a
# function qualified by anything but pg_catalog / information_schema, e.g. system.main.f) is left
# to the engine, whose function allow-list refuses it with 42883 (engine/pgfunctions.py). DuckDB's
# external access is off and its configuration locked as well (_create_database).
_DUCKDB_INTERNAL = frozenset({"glob", "query", "query_table", "getenv", "which_secret", "checkpoint",
                              "force_checkpoint", "getvariable", "sniff_csv", "load_extension"})
_DUCKDB_INTERNAL_PREFIXES = ("read_", "duckdb_", "pragma_", "parquet_", "json_execute", "json_serialize",
                             "json_deserialize", "iceberg_", "delta_", "sqlite_", "postgres_", "mysql_")
_FUNCTION_QUALIFIERS = {"pg_catalog", "information_schema"}


def _calls_duckdb_internals(toks: list[Token]) -> bool:
    for k in range(1, len(toks)):
        if toks[k].text != "(":
            continue
        name = toks[k - 1].ident
        if name is None:
            continue
        name = name.lower()
        if name in _DUCKDB_INTERNAL or name.startswith(_DUCKDB_INTERNAL_PREFIXES):
            return True
        if k >= 3 and toks[k - 2].text == "." and toks[k - 3].ident is not None \
                and toks[k - 3].ident.lower() not in _FUNCTION_QUALIFIERS:
            return True
    return False


def _is_relation_catalog(parts: list[str]) -> bool:
    if len(parts) >= 2:
        schema = parts[-2]
        return schema in ("pg_catalog", "information_schema")
    return parts[0].startswith("pg_") or parts[0] in rels.PG_CATALOG_NAMES


def analyze(sql: str) -> Analysis:
    """Decide whether ``sql`` is answerable here and read its outer select list."""
    try:
        toks = scan(sql)
    except SqlError:
        return Analysis(False, None, False)
    while toks and toks[-1].text == ";":
        toks.pop()
    if not toks or any(t.text == ";" for t in toks):
        return Analysis(False, None, False)
    first = next((t for t in toks if t.text != "("), None)
    if first is None or not first.is_word(*_STATEMENT_START):
        return Analysis(False, None, False)
    if _calls_duckdb_internals(toks):
        return Analysis(False, None, False)
    ctes = set()
    for k, t in enumerate(toks):
        if t.kind == "word" and t.lower in _FORBIDDEN:
            return Analysis(False, None, False)
        # a CTE: name [ (cols) ] AS [NOT] [MATERIALIZED] (
        if t.ident is not None and k + 1 < len(toks):
            j = k + 1
            if toks[j].text == "(" and (k == 0 or toks[k - 1].is_word("with", "recursive") or toks[k - 1].text == ","):
                while j < len(toks) and toks[j].text != ")":
                    j += 1
                j += 1
            if j < len(toks) and toks[j].is_word("as") and (k == 0 or toks[k - 1].is_word("with", "recursive") or toks[k - 1].text == ","):
                j += 1
                while j < len(toks) and toks[j].is_word("not", "materialized"):
                    j += 1
                if j < len(toks) and toks[j].text == "(":
                    ctes.add(t.ident)
    catalog_only = True
    mentions_settings = False
    expect_rel = False
    for k, t in enumerate(toks):
        if t.is_word(*_REL_WORDS):
            expect_rel = True
            continue
        if t.kind == "word" and t.lower == "pg_settings":
            mentions_settings = True
        if not expect_rel:
            continue
        if t.is_word("lateral", "only"):
            continue
        expect_rel = False
        if t.text == "(":
            continue
        if t.ident is None:
            continue
        parts, j = split_ident_chain(toks, k)
        if j < len(toks) and toks[j].text == "(":
            continue  # a table function (generate_series, unnest, pg_get_keywords)
        if len(parts) == 1 and parts[0] in ctes:
            continue
        if not _is_relation_catalog(parts):
            catalog_only = False
    # FROM a, b: relations after top-level commas of a FROM list
    depth = 0
    in_from: list[bool] = [False]
    for k, t in enumerate(toks):
        if t.text == "(":
            depth += 1
            in_from.append(False)
        elif t.text == ")":
            depth -= 1
            in_from.pop() if len(in_from) > 1 else None
        elif t.is_word("from"):
            in_from[-1] = True
        elif t.kind == "word" and t.lower in _CLAUSE_END | {"select"}:
            in_from[-1] = False
        elif t.text == "," and in_from[-1] and k + 1 < len(toks):
            nt = toks[k + 1]
            if nt.ident is not None and not nt.is_word("lateral"):
                parts, j = split_ident_chain(toks, k + 1)
                if not (j < len(toks) and toks[j].text == "(") and not (len(parts) == 1 and parts[0] in ctes):
                    if not _is_relation_catalog(parts):
                        catalog_only = False
    from_functions = {_from_function_column(toks, k)[0]: toks[k].lower
                      for k in range(1, len(toks) - 1) if _scalar_in_from(toks, k)}
    for k in range(1, len(toks) - 1):
        if toks[k].is_word("unnest") and toks[k - 1].is_word("from") and _unnests_current_schemas(toks, k):
            from_functions[_from_function_column(toks, k)[0]] = "unnest_name"  # a name per row
    if catalog_only and not _references_catalog(toks) and not _session_constant_query(toks, frozenset(from_functions)):
        catalog_only = False  # a relation-free query with real computation: PostgreSQL semantics live in the engine
    items = _select_items(toks)
    inner = _inner_items(toks)
    if items is not None:
        items = [_resolve_alias(it, inner) for it in items]
    volatile = any(t.kind == "word" and t.lower in _VOLATILE for t in toks)
    array_params = frozenset(_quantified_arrays(toks)[1])
    read = {t.ident for t in toks if t.ident in rels.PG_CATALOG_NAMES or t.ident in rels.INFORMATION_SCHEMA_NAMES}
    return Analysis(catalog_only, items, mentions_settings, inner, volatile, array_params, _database_refs(toks),
                    from_functions, rels.column_pg_types_in(read) if read else None)


def _unnests_current_schemas(toks: list[Token], k: int) -> bool:
    """``unnest([pg_catalog.]current_schemas(`` at ``k``."""
    j = k + 2
    if j + 1 < len(toks) and toks[j].ident == "pg_catalog" and toks[j + 1].text == ".":
        j += 2
    return k + 1 < len(toks) and toks[k + 1].text == "(" and j + 1 < len(toks) \
        and toks[j].is_word("current_schemas") and toks[j + 1].text == "("


def _from_function_column(toks: list[Token], k: int) -> tuple[str, str | None]:
    """(column name, alias) of the scalar function called in FROM at ``k``: the column is named
    after the alias when there is one without a column list, else after the function."""
    close = closing(toks, k + 1)
    j = (close if close is not None else len(toks) - 1) + 1
    if j < len(toks) and toks[j].is_word("as"):
        j += 1
    alias = toks[j].ident if j < len(toks) and toks[j].kind in ("word", "qid") and not toks[j].is_word(
        *(_CLAUSE_END | _REL_WORDS | {"cross", "left", "right", "inner", "full", "natural", "lateral"})) else None
    if alias is not None and not (j + 1 < len(toks) and toks[j + 1].text == "("):
        return alias, alias
    return toks[k].lower, alias


def _in_from_list(toks: list[Token], comma: int) -> bool:
    """Whether the comma at ``comma`` separates items of a FROM list (FROM a, f(x) s)."""
    depth = 0
    for j in range(comma - 1, -1, -1):
        t = toks[j]
        if t.text == ")":
            depth += 1
        elif t.text == "(":
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and t.kind == "word":
            if t.lower == "from":
                return True
            if t.lower == "select" or t.lower in _CLAUSE_END:
                return False
    return False


def _scalar_in_from(toks: list[Token], k: int) -> bool:
    """``FROM [pg_catalog.]f(`` with f in :data:`_SCALAR_IN_FROM`."""
    if not (toks[k].kind == "word" and toks[k].lower in _SCALAR_IN_FROM and k + 1 < len(toks)
            and toks[k + 1].text == "("):
        return False
    if toks[k - 1].is_word("from", "join") or (toks[k - 1].text == "," and _in_from_list(toks, k - 1)):
        return True
    return k >= 3 and toks[k - 1].text == "." and toks[k - 2].ident == "pg_catalog" and toks[k - 3].is_word("from", "join")


def _database_refs(toks: list[Token]) -> tuple[tuple[str, str], ...]:
    """``db.pg_catalog.x`` / ``db.information_schema.x`` names: (db, text of PostgreSQL's 0A000)."""
    out = []
    for k in range(len(toks) - 4):
        if toks[k].ident is None or (k and toks[k - 1].text == ".") or toks[k + 1].text != "." \
                or toks[k + 2].ident not in _FUNCTION_QUALIFIERS or toks[k + 3].text != "." \
                or toks[k + 4].ident is None:
            continue
        name = f"{toks[k].ident}.{toks[k + 2].ident}.{toks[k + 4].ident}"
        is_call = k + 5 < len(toks) and toks[k + 5].text == "("
        out.append((toks[k].ident or "", name if is_call else f'"{name}"'))
    return tuple(out)


def _inner_items(toks: list[Token]) -> dict[str, SelectItem]:
    inner: dict[str, SelectItem] = {}
    for k, t in enumerate(toks):
        if k and t.is_word("select"):
            for it in _select_items(toks[k:]) or []:
                passthrough = it.source == it.name and it.type_oid is None
                if it.name and (it.source is not None or it.type_oid is not None) and it.name not in inner \
                        and not passthrough:
                    inner[it.name] = it
    return inner


def _resolve_alias(it: SelectItem, inner: dict[str, SelectItem]) -> SelectItem:
    """Type outer columns that come from subqueries/CTEs: ``sub.alias`` -> the inner item's type."""
    if not inner:
        return it
    if True:
        seen = 0
        cur = it
        while cur.type_oid is None and cur.source is not None and cur.source in inner and seen < 5:
            nxt = inner[cur.source]
            if nxt.source == cur.source and nxt.type_oid is None:
                break
            cur = SelectItem(it.name, nxt.source, nxt.type_oid, it.star, it.post or nxt.post, it.strong)
            seen += 1
        return cur


def _select_items(toks: list[Token]) -> list[SelectItem] | None:
    """The outer SELECT's items, named by PostgreSQL's FigureColname rules."""
    depth = 0
    start = None
    for k, t in enumerate(toks):
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif depth == 0 and t.is_word("select"):
            start = k + 1
            break
        elif depth == 0 and t.is_word("values"):
            return None
    if start is None:
        return None
    if start < len(toks) and toks[start].is_word("distinct"):
        start += 1
        if start < len(toks) and toks[start].is_word("on"):
            d = 0
            start += 1
            while start < len(toks):
                if toks[start].text == "(":
                    d += 1
                elif toks[start].text == ")":
                    d -= 1
                    if d == 0:
                        start += 1
                        break
                start += 1
    elif start < len(toks) and toks[start].is_word("all"):
        start += 1
    items: list[list[Token]] = [[]]
    depth = 0
    k = start
    while k < len(toks):
        t = toks[k]
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and (t.kind == "word" and t.lower in ({"from", "into"} | _CLAUSE_END - {"on", "using"})):
            break
        if depth == 0 and t.text == ",":
            items.append([])
        else:
            items[-1].append(t)
        k += 1
    return [_figure_item(it) for it in items if it]


def _figure_item(it: list[Token]) -> SelectItem:
    if len(it) >= 2 and it[-2].is_word("as") and it[-1].ident is not None:
        inner = _figure_item(it[:-2])
        return SelectItem(it[-1].ident, inner.source, inner.type_oid, post=inner.post)
    if (len(it) >= 2 and it[-1].ident is not None and it[-1].kind in ("word", "qid")
            and it[-2].text != "." and it[-2].text != "::"
            and (it[-2].kind in ("word", "qid", "str", "num") or it[-2].text in (")", "]"))
            and not (it[-1].kind == "word" and it[-1].lower in ("end", "null", "true", "false", "zone", "precision", "varying"))
            and not (it[-2].kind == "word" and it[-2].lower in ("case", "when", "then", "else", "and", "or", "not", "is", "distinct", "from", "as", "in", "like", "ilike", "between", "interval", "array", "row"))):
        inner = _figure_item(it[:-1])
        return SelectItem(it[-1].ident, inner.source, inner.type_oid, post=inner.post)
    # trailing casts: the last one types the column (and names it if the operand has no name)
    cast_key = None
    body = it
    first_cast = next((k for k, t in enumerate(it) if t.kind == "cast" and _depth_at(it, k) == 0), None)
    if first_cast is not None and first_cast > 0:
        j = first_cast
        ok = True
        while j < len(it):
            if it[j].kind != "cast":
                ok = False
                break
            cast_key, _, j = _type_after_cast(it, j + 1)
        if ok and _is_primary(it[:first_cast]):
            body = it[:first_cast]
        else:
            cast_key = None
    if len(body) == 1 and body[0].text == "*" or (len(body) >= 3 and body[-1].text == "*" and body[-2].text == "."):
        return SelectItem(None, None, None, star=True)
    name, source, fn_oid = _figure_body(body)
    cast_oid = None
    if cast_key is not None:
        cast_oid = _CAST_TYPES.get(cast_key)
        if cast_oid is None:
            pg = TYPES_BY_NAME.get(cast_key)
            cast_oid = pg.oid if pg else None
    strong = name is not None
    if name is None and cast_key is not None:
        name = {"_text": "text", "_name": "name", "_oid": "oid", "_int2": "int2", "_int4": "int4",
                "_char": "char"}.get(cast_key, cast_key)
    post = cast_key if cast_key in ("regclass", "regtype", "regnamespace", "regrole") else None
    return SelectItem(name or "?column?", source, cast_oid if cast_oid is not None else fn_oid, post=post,
                      strong=strong)


def _is_primary(body: list[Token]) -> bool:
    """A single operand a trailing ``::type`` applies to (not ``a = b``)."""
    if len(body) == 1:
        return True
    if body[0].text == "(" and closing(body, 0) == len(body) - 1:
        return True
    if body[0].ident is not None:
        _, j = split_ident_chain(body, 0)
        if j == len(body):
            return True
        if j < len(body) and body[j].text == "(" and closing(body, j) == len(body) - 1:
            return True
    if body[0].is_word("case") and _case_end(body, 0) == len(body) - 1:
        return True
    return False


def _depth_at(toks: list[Token], idx: int) -> int:
    depth = 0
    for t in toks[:idx]:
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
    return depth


def _figure_body(body: list[Token]) -> tuple[str | None, str | None, int | None]:
    """(name, source column, type oid) of an expression without alias or trailing cast."""
    if not body:
        return None, None, None
    while len(body) >= 2 and body[0].text == "(" and body[-1].text == ")" and closing(body, 0) == len(body) - 1 \
            and not body[1].is_word("select", "with", "values"):
        body = body[1:-1]
    first = body[0]
    if first.ident is not None:
        parts, j = split_ident_chain(body, 0)
        if j == len(body) and first.kind in ("word", "qid"):
            name = parts[-1]
            if first.kind == "word" and len(parts) == 1 and name in _KEYWORD_FUNCS:
                fn = "current_database" if name == "current_catalog" else name
                return name, None, _FUNCTION_TYPES.get(fn)
            if first.kind == "word" and len(parts) == 1 and name in ("true", "false", "null"):
                return None, None, None
            return name, name, None
        if j < len(body) and body[j].text == "[":
            k = j
            while k < len(body) and body[k].text == "[":
                close = closing(body, k)
                if close is None:
                    break
                k = close + 1
            if k == len(body):
                return parts[-1], None, None  # x[i] is named after x
        if j < len(body) and body[j].text == "(" and closing(body, j) == len(body) - 1:
            fname = parts[-1]
            if fname in ("coalesce", "nullif", "greatest", "least", "array_agg", "min", "max"):
                args = _split_args(body[j + 1:-1])
                if args:
                    arg = _figure_item(args[0])
                    oid = arg.type_oid
                    if oid is None and arg.source is not None:
                        oid = _CATALOG_COLUMN_TYPES.get(arg.source)
                    if fname == "array_agg":
                        pg = TYPES_BY_OID.get(oid) if oid is not None else None
                        oid = pg.array_oid if pg is not None and pg.array_oid else None
                    return fname, None, oid
            return fname, None, _FUNCTION_TYPES.get(fname)
        if j < len(body) and body[j].text == "(":
            close = closing(body, j)
            if (close is not None and close + 2 < len(body) and body[close + 1].is_word("over")
                    and body[close + 2].text == "(" and closing(body, close + 2) == len(body) - 1):
                fname = parts[-1]
                return fname, None, _FUNCTION_TYPES.get(fname)
        if j < len(body) and body[j].text == "(" and j + 1 < len(body) and first.kind == "word":
            close = closing(body, j)
            if close is not None and close + 1 < len(body) and body[close + 1].text == "." and close + 2 < len(body):
                # (func(x)).field
                return body[-1].ident, None, None
        if first.kind == "word" and first.lower == "case":
            # PostgreSQL names a CASE after its ELSE branch when that has a real name
            close = _case_end(body, 0)
            else_idx = None
            then_idx = None
            depth = 0
            for k in range(1, close if close is not None else len(body)):
                tk = body[k]
                if tk.text in ("(", "["):
                    depth += 1
                elif tk.text in (")", "]"):
                    depth -= 1
                elif tk.is_word("case"):
                    depth += 1
                elif tk.is_word("end"):
                    depth -= 1
                elif depth == 0 and tk.is_word("else"):
                    else_idx = k
                elif depth == 0 and tk.is_word("then") and then_idx is None:
                    then_idx = k
            if else_idx is not None and close is not None and close == len(body) - 1:
                inner = _figure_item(body[else_idx + 1:close])
                if inner.strong and inner.name != "?column?":
                    return inner.name, inner.source, inner.type_oid
            if then_idx is not None:
                stop = next((k for k in range(then_idx + 1, len(body)) if _depth_at(body, k) == 0 and
                             body[k].is_word("when", "else", "end")), len(body))
                inner = _figure_item(body[then_idx + 1:stop])
                return "case", inner.source, inner.type_oid
            return "case", None, None
        if first.kind == "word" and first.lower == "array":
            return "array", None, None
        if first.kind == "word" and first.lower in ("exists", "coalesce", "greatest", "least", "nullif", "row"):
            if first.lower in ("coalesce", "greatest", "least", "nullif", "row"):
                return first.lower, None, None
            return "exists", None, 16
    if first.text == "(" and len(body) > 1 and body[1].is_word("select", "with"):
        close = closing(body, 0)
        if close == len(body) - 1:
            inner = _select_items(body[1:-1])
            if inner:
                return inner[0].name, inner[0].source, inner[0].type_oid
    return None, None, None


def _split_args(toks: list[Token]) -> list[list[Token]]:
    """Top-level comma-separated arguments (an ORDER BY inside an aggregate ends the last one)."""
    args: list[list[Token]] = [[]]
    depth = 0
    for t in toks:
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        if depth == 0 and t.text == ",":
            args.append([])
            continue
        if depth == 0 and t.is_word("order"):
            break
        args[-1].append(t)
    return [a for a in args if a]


def _case_end(toks: list[Token], case_idx: int) -> int | None:
    depth = 0
    for k in range(case_idx, len(toks)):
        if toks[k].is_word("case"):
            depth += 1
        elif toks[k].is_word("end"):
            depth -= 1
            if depth == 0:
                return k
    return None


def bare_param_columns(sql: str) -> dict[int, int]:
    """Output columns of the outermost SELECT list that are a bare parameter (``SELECT $1``,
    ``SELECT $2 AS x``): {column index: parameter number}. PostgreSQL gives such a column the
    parameter's type, which the client declared."""
    try:
        toks = scan(sql)
    except SqlError:
        return {}
    if not toks or not toks[0].is_word("select"):
        return {}
    out: dict[int, int] = {}
    item, start, depth = 0, 1, 0
    for k in range(1, len(toks) + 1):
        t = toks[k] if k < len(toks) else None
        if t is not None and t.text in ("(", "["):
            depth += 1
            continue
        if t is not None and t.text in (")", "]"):
            depth -= 1
            continue
        if depth:
            continue
        ends = t is None or t.text in (",", ";") or t.is_word("from", "where", "group", "having", "order",
                                                                    "limit", "offset", "union", "intersect",
                                                                    "except", "window", "fetch", "for", "into")
        if not ends:
            continue
        if t is not None and t.is_word("union", "intersect", "except"):
            return {}  # the column's type is then resolved across the branches
        body = toks[start:k]
        if len(body) >= 2 and body[-2].is_word("as"):
            body = body[:-2]
        elif len(body) == 2 and body[0].kind == "param" and body[1].ident is not None:
            body = body[:1]
        if len(body) == 1 and body[0].kind == "param":
            out[item] = int(body[0].text[1:])
        if t is None or t.text != ",":
            break
        item, start = item + 1, k + 1
    return out


def typed_param_columns(sql: str, fields: list[ResultField] | None,
                        declared: Sequence[ColumnType | None]) -> list[ResultField] | None:
    """``fields`` with each bare-parameter column (``SELECT $1``) typed as its declared parameter."""
    if not fields or not any(declared):
        return fields
    out = list(fields)
    for column, n in bare_param_columns(sql).items():
        t = declared[n - 1] if n - 1 < len(declared) else None
        if t is not None and column < len(out):
            out[column] = replace(out[column], type=t)
    return out


def infer_param_types(sql: str) -> list[ColumnType | None]:
    """Parameter types PostgreSQL would infer, from what the text says about each ``$n``:
    an explicit cast, a comparison with a catalog column, LIMIT/OFFSET. None where unknown
    (reported as text, as PostgreSQL does for an unknown-typed parameter it cannot resolve)."""
    try:
        toks = scan(sql)
    except SqlError:
        return []
    found: dict[int, ColumnType | None] = {}
    for k, t in enumerate(toks):
        if t.kind != "param":
            continue
        n = int(t.text[1:])
        ct: ColumnType | None = None
        if k + 1 < len(toks) and toks[k + 1].kind == "cast":
            key, _, _ = _type_after_cast(toks, k + 2)
            if key.lstrip("_").startswith("reg"):
                ct = ColumnType(TYPES_BY_NAME["text"])  # reg* input is the object's name
            else:
                pg = TYPES_BY_NAME.get(key) or lookup_type_name(key)
                ct = ColumnType(pg) if pg is not None else None
        elif k >= 2 and toks[k - 1].kind == "op" and toks[k - 1].text in ("=", "<>", "!=", "<", ">", "<=", ">=") \
                and toks[k - 2].ident is not None:
            oid = _CATALOG_COLUMN_TYPES.get(toks[k - 2].ident or "")
            ct = ColumnType(TYPES_BY_OID[oid]) if oid in TYPES_BY_OID else None
        elif k + 2 < len(toks) and toks[k + 1].kind == "op" and toks[k + 1].text in ("=", "<>", "!=") \
                and toks[k + 2].ident is not None:
            parts, _ = split_ident_chain(toks, k + 2)
            oid = _CATALOG_COLUMN_TYPES.get(parts[-1]) if parts else None
            ct = ColumnType(TYPES_BY_OID[oid]) if oid in TYPES_BY_OID else None
        elif k >= 1 and toks[k - 1].is_word("limit", "offset"):
            ct = ColumnType(TYPES_BY_NAME["int8"])
        elif k >= 4 and toks[k - 1].text == "(" and toks[k - 2].is_word("any", "all", "some") \
                and toks[k - 3].kind == "op" and toks[k - 3].text in _COMPARISONS and toks[k - 4].ident is not None:
            # col = ANY($1): an array of the column's type
            oid = _CATALOG_COLUMN_TYPES.get(toks[k - 4].ident or "")
            pg = TYPES_BY_OID.get(oid) if oid is not None else None
            if pg is not None and pg.name in ("regproc", "regclass", "regtype"):
                pg = TYPES_BY_NAME["text"]
            arr = TYPES_BY_OID.get(pg.array_oid) if pg is not None and pg.array_oid else None
            ct = ColumnType(arr) if arr is not None else None
        if ct is not None and ct.pg.name in ("regproc", "regclass", "regtype"):
            ct = ColumnType(TYPES_BY_NAME["text"])
        if found.get(n) is None:
            found[n] = ct
    if not found:
        return []
    return [found.get(i) for i in range(1, max(found) + 1)]


# ---------------------------------------------------------------------------------------------
# the mirror


def _duck_arrow_type(duck: str) -> pa.DataType:
    base = duck.removesuffix("[]")
    t = {"BIGINT": pa.int64(), "VARCHAR": pa.string(), "BOOLEAN": pa.bool_(), "SMALLINT": pa.int16(),
         "INTEGER": pa.int32(), "REAL": pa.float32(), "DOUBLE": pa.float64(),
         "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"), "INTERVAL": pa.month_day_nano_interval()}[base]
    return pa.list_(t) if duck.endswith("[]") else t


class _Mirror:
    """The lookups of one catalog version (the DuckDB rows of that version are loaded alongside)."""

    def __init__(self, catalog: Catalog, version: int) -> None:
        self.version = version
        self.tables: dict[int, TableDef] = {t.oid: t for t in catalog.list_tables()}
        self.by_name: dict[tuple[str, str], int] = {(t.schema, t.name): t.oid for t in self.tables.values()}
        for (schema, name) in rels.RELATIONS:
            self.by_name[(schema, name)] = rels.system_rel_oid(name)
        self.rel_names: dict[int, tuple[str, str]] = {oid: key for key, oid in self.by_name.items()}
        # index / constraint oid -> (table, its name; None for the primary key's)
        self.index_of: dict[int, tuple[TableDef, str | None]] = {}
        self.constraint_of: dict[int, tuple[TableDef, str | None]] = {}
        for t in self.tables.values():
            for ix in rels.table_indexes(t):
                key = None if ix.primary else ix.name
                self.index_of[ix.oid] = (t, key)
                if ix.constraint_oid is not None:
                    self.constraint_of[ix.constraint_oid] = (t, key)
                self.rel_names[ix.oid] = (t.schema, ix.name)
                self.by_name[(t.schema, ix.name)] = ix.oid
            for con in t.constraints:
                if con["type"] == "f":
                    self.constraint_of[rels.extra_oid(t, con["n"]) + 1] = (t, con["name"])
        self.namespaces: dict[str, int] = {s.name: s.oid for s in catalog.list_schemas()}
        self.namespaces.update({"pg_catalog": rels.PG_CATALOG_NS, "information_schema": rels.INFORMATION_SCHEMA_NS,
                                "pg_toast": rels.PG_TOAST_NS})
        self.ns_names = {v: k for k, v in self.namespaces.items()}
        self.role_oids = rels.role_oids(catalog)
        self.role_names = {v: k for k, v in self.role_oids.items()}
        self.rows = rels.build_rows(catalog)
        self.descriptions: dict[tuple[int, int, int], str] = {
            (r["objoid"], r["classoid"], r["objsubid"]): r["description"]
            for r in self.rows[("pg_catalog", "pg_description")]}


def _create_database(owner: "CatalogQueries") -> duckdb.DuckDBPyConnection:
    """The DuckDB database: every mirrored relation (empty), keywords, UDFs and macros. Built once;
    catalog changes only replace rows (:meth:`CatalogQueries._load`)."""
    # integer_division: 5/2 is 2 as in PostgreSQL (DuckDB's / is float division by default)
    # No files, extensions or network for client SQL (read_text, glob, COPY, ATTACH, INSTALL);
    # the mirror is filled from Arrow tables and Python UDFs, which need neither.
    con = duckdb.connect(":memory:", config={"threads": 1, "integer_division": True, "enable_external_access": False,
                                             "autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    con.execute("CREATE SCHEMA isx")
    for rel in rels.RELATIONS.values():
        con.execute(rels.ddl(rel))
    words = sorted(pg_keywords.CATEGORY)
    codes = [pg_keywords.CATEGORY[w] for w in words]
    bare = [w not in pg_keywords.REQUIRES_AS for w in words]
    con.register("tg_kw_load", pa.table({
        "word": words, "catcode": codes, "barelabel": bare,
        "catdesc": [pg_keywords.CATEGORY_DESCRIPTIONS[c] for c in codes],
        "baredesc": ["can be bare label" if b else "requires AS" for b in bare]}))
    con.execute("CREATE TABLE tg_keywords AS SELECT * FROM tg_kw_load")
    con.unregister("tg_kw_load")
    owner._install_functions(con)
    for _, load in _LIVE_RELATIONS:  # FLOWS, FLOW_STATISTICS, REFRESH_TABLES, JOBS (empty until asked)
        load(con, owner._catalog, create=True)
    con.execute("SET lock_configuration = true")  # no SET can turn external access back on
    return con


def _rows_table(rel: rels.Relation, data: list[dict[str, Any]]) -> pa.Table:
    return pa.table({c: pa.array([r.get(c) for r in data], type=_duck_arrow_type(rels.PG_COLUMN_TYPES[t][0]))
                     for c, t in rel.columns})


# Privilege inquiry functions answered from catalog.roles (tg_has_privilege): kind per function.
_CHECKED_PRIVILEGE_FUNCS = {"has_table_privilege": "r", "has_any_column_privilege": "r", "has_schema_privilege": "n",
                            "has_database_privilege": "d", "pg_has_role": "role"}
# On objects tidegate has only as PostgreSQL's builtins, which PUBLIC may use: always true.
_PRIVILEGE_FUNCS = ("has_function_privilege", "has_sequence_privilege", "has_foreign_data_wrapper_privilege",
                    "has_server_privilege", "has_tablespace_privilege", "has_language_privilege",
                    "has_type_privilege", "has_parameter_privilege")

_MACROS = [
    "CREATE MACRO tg_regclass(x) AS tg_regclass_in(CAST(x AS VARCHAR))",
    "CREATE MACRO tg_regtype(x) AS tg_regtype_in(CAST(x AS VARCHAR))",
    "CREATE MACRO tg_regnamespace(x) AS tg_regnamespace_in(CAST(x AS VARCHAR))",
    "CREATE MACRO tg_regrole(x) AS tg_regrole_in(CAST(x AS VARCHAR))",
    f"CREATE MACRO version() AS '{VERSION_STRING}'",
    "CREATE MACRO current_database() AS tg_current_database()",
    "CREATE MACRO current_schema() AS tg_current_schema()",
    "CREATE MACRO current_schemas(b) AS tg_current_schemas(b)",
    "CREATE MACRO current_setting(n) AS tg_current_setting(n, false), (n, m) AS tg_current_setting(n, m)",
    "CREATE MACRO set_config(n, v, l) AS v",
    "CREATE MACRO pg_backend_pid() AS tg_backend_pid()",
    "CREATE MACRO pg_table_is_visible(o) AS tg_table_is_visible(o)",
    "CREATE MACRO format_type(o, m) AS tg_format_type(o, m)",
    "CREATE MACRO pg_get_expr(e, r) AS e, (e, r, p) AS e",
    "CREATE MACRO pg_get_indexdef(o) AS tg_indexdef(o, 0, false), (o, c, p) AS tg_indexdef(o, c, p)",
    "CREATE MACRO pg_get_constraintdef(o) AS tg_constraintdef(o), (o, p) AS tg_constraintdef(o)",
    "CREATE MACRO pg_get_userbyid(o) AS tg_userbyid(o)",
    "CREATE MACRO obj_description(o) AS tg_description(o, '', 0), (o, c) AS tg_description(o, c, 0)",
    "CREATE MACRO col_description(o, n) AS tg_description(o, 'pg_class', n)",
    "CREATE MACRO shobj_description(o, c) AS CAST(NULL AS VARCHAR)",
    "CREATE MACRO pg_get_keywords() AS TABLE SELECT * FROM tg_keywords",
    "CREATE MACRO pg_encoding_to_char(e) AS CASE WHEN e = 6 THEN 'UTF8' WHEN e = 0 THEN 'SQL_ASCII' ELSE '' END",
    "CREATE MACRO pg_char_to_encoding(s) AS CASE WHEN upper(s) IN ('UTF8', 'UTF-8') THEN 6 ELSE -1 END",
    "CREATE MACRO pg_client_encoding() AS 'UTF8'",
    "CREATE MACRO pg_is_in_recovery() AS false",
    "CREATE MACRO pg_postmaster_start_time() AS tg_start_time()",
    "CREATE MACRO txid_current() AS tg_txid()",
    "CREATE MACRO pg_current_xact_id() AS tg_txid()",
    "CREATE MACRO pg_get_partkeydef(o) AS CAST(NULL AS VARCHAR)",
    "CREATE MACRO pg_total_relation_size(o) AS CAST(0 AS BIGINT)",
    "CREATE MACRO pg_relation_size(o) AS CAST(0 AS BIGINT), (o, f) AS CAST(0 AS BIGINT)",
    "CREATE MACRO pg_table_size(o) AS CAST(0 AS BIGINT)",
    "CREATE MACRO pg_indexes_size(o) AS CAST(0 AS BIGINT)",
    "CREATE MACRO pg_database_size(o) AS CAST(0 AS BIGINT)",
    "CREATE MACRO pg_size_pretty(n) AS tg_size_pretty(n)",
    "CREATE MACRO quote_ident(s) AS tg_quote_ident(s)",
    "CREATE MACRO parse_ident(s) AS tg_parse_ident(CAST(s AS VARCHAR), true), "
    "(s, strict) AS tg_parse_ident(CAST(s AS VARCHAR), CAST(strict AS BOOLEAN))",
    "CREATE MACRO quote_literal(s) AS '''' || replace(CAST(s AS VARCHAR), '''', '''''') || ''''",
    "CREATE MACRO quote_nullable(s) AS CASE WHEN s IS NULL THEN 'NULL' "
    "ELSE '''' || replace(CAST(s AS VARCHAR), '''', '''''') || '''' END",
    "CREATE MACRO pg_get_viewdef(o) AS tg_viewdef(o), (o, p) AS tg_viewdef(o)",
    "CREATE MACRO pg_relation_filepath(o) AS tg_relation_filepath(CAST(o AS VARCHAR))",
    "CREATE MACRO pg_get_serial_sequence(t, c) AS tg_serial_sequence(CAST(t AS VARCHAR), CAST(c AS VARCHAR))",
    "CREATE MACRO nextval(s) AS tg_nextval(CAST(s AS VARCHAR))",
    "CREATE MACRO currval(s) AS tg_currval(CAST(s AS VARCHAR))",
    "CREATE MACRO setval(s, v) AS tg_setval(CAST(s AS VARCHAR), CAST(v AS BIGINT), true), "
    "(s, v, c) AS tg_setval(CAST(s AS VARCHAR), CAST(v AS BIGINT), CAST(c AS BOOLEAN))",
    "CREATE MACRO lastval() AS tg_lastval()",
    "CREATE MACRO pg_get_function_result(o) AS tg_function_result(o)",
    "CREATE MACRO pg_get_function_arguments(o) AS tg_function_arguments(o, true)",
    "CREATE MACRO pg_get_function_identity_arguments(o) AS tg_function_arguments(o, false)",
    "CREATE MACRO pg_get_function_sqlbody(o) AS CAST(NULL AS VARCHAR)",
    "CREATE MACRO pg_get_triggerdef(o) AS CAST(NULL AS VARCHAR), (o, p) AS CAST(NULL AS VARCHAR)",
    "CREATE MACRO pg_get_ruledef(o) AS CAST(NULL AS VARCHAR), (o, p) AS CAST(NULL AS VARCHAR)",
    "CREATE MACRO pg_get_statisticsobjdef_columns(o) AS CAST(NULL AS VARCHAR)",
    "CREATE MACRO to_regclass(s) AS tg_to_regclass(s)",
    "CREATE MACRO to_regtype(s) AS tg_to_regtype(s)",
    "CREATE MACRO to_regnamespace(s) AS tg_to_regnamespace(s)",
    "CREATE MACRO pg_type_is_visible(o) AS true",
    "CREATE MACRO pg_function_is_visible(o) AS true",
    "CREATE MACRO pg_collation_is_visible(o) AS true",
    "CREATE MACRO pg_opclass_is_visible(o) AS true",
    "CREATE MACRO pg_operator_is_visible(o) AS true",
    "CREATE MACRO pg_conversion_is_visible(o) AS true",
    "CREATE MACRO pg_ts_config_is_visible(o) AS true",
    "CREATE MACRO pg_tablespace_location(o) AS ''",
    "CREATE MACRO pg_my_temp_schema() AS tg_my_temp_schema()",
    "CREATE MACRO pg_is_other_temp_schema(o) AS false",
    "CREATE MACRO pg_relation_is_publishable(o) AS false",
    "CREATE MACRO pg_get_replica_identity_index(o) AS CAST(NULL AS BIGINT)",
    "CREATE MACRO pg_jit_available() AS false",
    "CREATE MACRO row_security_active(o) AS false",
    "CREATE MACRO inet_server_addr() AS CAST(NULL AS VARCHAR)",
    "CREATE MACRO inet_server_port() AS CAST(NULL AS INTEGER)",
    "CREATE MACRO inet_client_addr() AS CAST(NULL AS VARCHAR)",
    "CREATE MACRO array_lower(a, d) AS CASE WHEN len(a) > 0 THEN 1 END",
    "CREATE MACRO array_upper(a, d) AS CASE WHEN len(a) > 0 THEN len(a) END",
    "CREATE MACRO pg_stat_get_numscans(o) AS CAST(0 AS BIGINT)",
    "CREATE MACRO isx._pg_expandarray(a) AS unnest(list_transform(range(1, len(a) + 1), lambda i: {'x': a[i], 'n': CAST(i AS INTEGER)}))",
    "CREATE MACRO _pg_expandarray(a) AS unnest(list_transform(range(1, len(a) + 1), lambda i: {'x': a[i], 'n': CAST(i AS INTEGER)}))",
] + [f"CREATE MACRO {f}(a) AS true, (a, b) AS true, (a, b, c) AS true, (a, b, c, d) AS true" for f in _PRIVILEGE_FUNCS] + [
    f"CREATE MACRO {f}(a, b) AS tg_has_privilege('{k}', NULL, CAST(a AS VARCHAR), CAST(b AS VARCHAR)), "
    f"(a, b, c) AS tg_has_privilege('{k}', CAST(a AS VARCHAR), CAST(b AS VARCHAR), CAST(c AS VARCHAR))"
    for f, k in _CHECKED_PRIVILEGE_FUNCS.items()] + [
    "CREATE MACRO has_column_privilege(a, b, c) AS tg_has_privilege('r', NULL, CAST(a AS VARCHAR), CAST(c AS VARCHAR)), "
    "(a, b, c, d) AS tg_has_privilege('r', CAST(a AS VARCHAR), CAST(b AS VARCHAR), CAST(d AS VARCHAR))"]


_INSTANCES: "weakref.WeakSet[CatalogQueries]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Close DuckDB before interpreter teardown (open connections holding Python UDFs make
    DuckDB's bindings report leaked objects at exit)."""
    for q in list(_INSTANCES):
        q.close()


class CatalogQueries:
    """Answers catalog and constant queries from an in-memory mirror of the catalog (thread-safe)."""

    def __init__(self, catalog: Catalog | Any, warm: bool = True) -> None:
        self._catalog = catalog  # the catalog, or a transaction block's view of it (catalog.txn)
        self._lock = threading.Lock()
        self._mirror: _Mirror | None = None
        self._db: duckdb.DuckDBPyConnection | None = None
        self._loaded: set[tuple[str, str]] = set()  # relations holding rows now
        self._tls = threading.local()
        self._analysis: OrderedDict[str, Analysis] = OrderedDict()
        self._rewritten: OrderedDict[str, str] = OrderedDict()
        # Results of deterministic catalog queries per (text, params, session view); clients
        # repeat the same metadata queries constantly. Entries carry the catalog version.
        self._results: OrderedDict[tuple, tuple[int, list[ResultField], pa.Table]] = OrderedDict()
        self._started = _dt.datetime.now(_dt.timezone.utc)
        _INSTANCES.add(self)
        # Build the mirror in the background so the first client query does not pay for it.
        if warm:
            threading.Thread(target=self._warm, name="pgcatalog-warm", daemon=True).start()
        self._txid = 1000
        self._column_types = rels.column_pg_types()

    # -- public API -----------------------------------------------------------------------------

    def handles(self, sql: str) -> bool:
        """True when ``sql`` references only pg_catalog / information_schema relations or none."""
        return self._analyze(sql).catalog_only

    def execute(self, sql: str, params: Sequence[Any], info: SessionInfo) -> RowStream:
        fast = self._fast_path(sql, info)
        if fast is not None:
            return fast
        analysis = self._analyze(sql)
        key = None
        if not analysis.volatile and "pg_sequences" not in sqllex.identifiers(sql) \
                and not any(mentions(sql) for mentions, _ in _LIVE_RELATIONS):
            try:
                key = (sql, _freeze(params), info.user, info.database, info.backend_pid, info.application_name,
                       tuple(sorted(info.settings.items())))
                hash(key)
            except TypeError:
                key = None
        version = self._catalog.version
        if key is not None:
            hit = self._results.get(key)
            if hit is not None and hit[0] == version:
                return RowStream.from_table(hit[1], hit[2])
        fields, table = self._run(sql, params, info)
        if key is not None:
            with self._lock:
                self._results[key] = (version, fields, table)
                if len(self._results) > 512:
                    self._results.popitem(last=False)
        return RowStream.from_table(fields, table)

    def describe(self, sql: str, param_types: Sequence[ColumnType | None], info: SessionInfo
                 ) -> tuple[list[ColumnType], list[ResultField] | None]:
        """Parameter types (unknown ones reported as text) and the result columns.

        Catalog queries are cheap, so the columns are learned by running the query with NULL
        parameters (the mirror has no side effects).
        """
        inferred = infer_param_types(sql)
        count = max(len(inferred), len(param_types))
        ptypes: list[ColumnType] = []
        for k in range(count):
            given = param_types[k] if k < len(param_types) else None
            guess = inferred[k] if k < len(inferred) else None
            ptypes.append(given or guess or ColumnType(TYPES_BY_NAME["text"]))
        fast = self._fast_path(sql, info)
        if fast is not None:
            return ptypes, fast.fields
        self._tls.describing = True
        try:
            fields, _ = self._run(sql, [None] * count, info)
        finally:
            self._tls.describing = False
        return ptypes, typed_param_columns(sql, fields, param_types)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._mirror = None

    # -- internals ------------------------------------------------------------------------------

    def _warm(self) -> None:
        try:
            self._current()
        except Exception:  # noqa: BLE001 - a failure here resurfaces on the first query
            pass

    def _analyze(self, sql: str) -> Analysis:
        a = self._analysis.get(sql)
        if a is None:
            a = analyze(sql)
            with self._lock:
                self._analysis[sql] = a
                if len(self._analysis) > 2048:
                    self._analysis.popitem(last=False)
        return a

    def _rewrite(self, sql: str) -> str:
        r = self._rewritten.get(sql)
        if r is None:
            r = rewrite(sql)  # an unlexable text is 42601 from the lexer
            with self._lock:
                self._rewritten[sql] = r
                if len(self._rewritten) > 2048:
                    self._rewritten.popitem(last=False)
        return r

    _FAST_FUNCTIONS = ("version", "current_schema", "current_database", "pg_backend_pid", "current_user",
                       "session_user", "current_setting")

    def _fast_path(self, sql: str, info: SessionInfo) -> RowStream | None:
        """Trivial constant queries answered without DuckDB (drivers send them on every checkout):
        ``SELECT <integer>``, ``SELECT [pg_catalog.]version()`` and the like, ``SELECT current_setting('x')``."""
        toks = [t for t in sqllex.leading(sql, 10) if t.text != ";"]
        if len(toks) < 2 or not toks[0].is_word("select"):
            return None
        body = toks[1:]
        if [t.text for t in body[:1]] == ["-"]:
            body = [Token("num", "-" + body[1].text)] if len(body) == 2 and body[1].kind == "num" else []
        if len(body) == 1 and body[0].kind == "num" and body[0].text.lstrip("-").isdigit() \
                and len(body[0].text.lstrip("-")) <= 9:
            return _one("?column?", ColumnType(TYPES_BY_NAME["int4"]), int(body[0].text), pa.int32())
        if len(body) > 2 and body[0].is_word("pg_catalog") and body[1].text == ".":
            body = body[2:]
        if not body or not body[0].is_word(*self._FAST_FUNCTIONS):
            return None
        fn, args = body[0].lower, [t.text for t in body[1:]]
        if fn == "current_setting":
            if len(body) == 4 and args[0] == "(" and body[2].kind == "str" and args[2] == ")" \
                    and body[2].value and all(c.isalnum() or c in "_." for c in body[2].value):
                value = self._setting(info, body[2].value, False)
                return _one("current_setting", ColumnType(TYPES_BY_NAME["text"]), value, pa.string())
            return None
        if fn in ("current_user", "session_user"):
            if args:  # SQL keywords: no parentheses
                return None
            return _one(fn, ColumnType(TYPES_BY_NAME["name"]), info.user, pa.string())
        if args != ["(", ")"] and not (fn == "current_schema" and not args):
            return None
        if fn == "version":
            return _one("version", ColumnType(TYPES_BY_NAME["text"]), VERSION_STRING, pa.string())
        if fn == "pg_backend_pid":
            return _one("pg_backend_pid", ColumnType(TYPES_BY_NAME["int4"]), info.backend_pid, pa.int32())
        if fn == "current_database":
            return _one(fn, ColumnType(TYPES_BY_NAME["name"]), info.database, pa.string())
        return _one(fn, ColumnType(TYPES_BY_NAME["name"]), self._current_schema(info), pa.string())

    def _current(self) -> _Mirror:
        version = self._catalog.version
        mirror = self._mirror
        if mirror is not None and mirror.version == version:
            return mirror
        with self._lock:
            mirror = self._mirror
            if mirror is None or mirror.version != version:
                mirror = _Mirror(self._catalog, version)
                if self._db is None:
                    self._db = _create_database(self)
                self._load(mirror, self._mirror)
                self._mirror = mirror
        return mirror

    def _load(self, mirror: _Mirror, previous: _Mirror | None) -> None:
        """Replace the mirror's rows with ``mirror``'s in one DuckDB transaction: statements running
        on other threads keep reading the previous version."""
        assert self._db is not None
        con = self._db.cursor()
        try:
            con.execute("BEGIN TRANSACTION")
            filled = set()
            for key, rel in rels.RELATIONS.items():
                data = mirror.rows.get(key)
                if previous is not None and previous.rows.get(key) == data:
                    if data:
                        filled.add(key)
                    continue  # unchanged by this catalog change
                if key in self._loaded:
                    con.execute(f"DELETE FROM {rel.duck_name}")
                if data:
                    con.register("tg_load", _rows_table(rel, data))
                    con.execute(f"INSERT INTO {rel.duck_name} SELECT * FROM tg_load")
                    con.unregister("tg_load")
                    filled.add(key)
            con.execute("COMMIT")
            self._loaded = filled
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.close()

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        tls = self._tls
        cur = getattr(tls, "cursor", None)
        if cur is None or getattr(tls, "db", None) is not self._db:
            assert self._db is not None
            cur = tls.cursor = self._db.cursor()
            tls.db = self._db
            tls.settings_key = None
        return cur

    def _run(self, sql: str, params: Sequence[Any], info: SessionInfo) -> tuple[list[ResultField], pa.Table]:
        analysis = self._analyze(sql)
        duck_sql = self._rewrite(sql)
        mirror = self._current()
        for mentions, load in _LIVE_RELATIONS:
            if mentions(sql):
                with self._lock:
                    assert self._db is not None
                    loader = self._db.cursor()
                    try:
                        load(loader, self._catalog)
                    finally:
                        loader.close()
        if "pg_sequences" in sqllex.identifiers(sql):  # last_value moves with every nextval, without a version bump
            rel = rels.RELATIONS[("pg_catalog", "pg_sequences")]
            with self._lock:
                assert self._db is not None
                loader = self._db.cursor()
                try:
                    loader.execute("BEGIN TRANSACTION")
                    loader.execute(f"DELETE FROM {rel.duck_name}")
                    data = rels.pg_sequences_rows(self._catalog)
                    if data:
                        loader.register("tg_seq_load", _rows_table(rel, data))
                        loader.execute(f"INSERT INTO {rel.duck_name} SELECT * FROM tg_seq_load")
                        loader.unregister("tg_seq_load")
                    loader.execute("COMMIT")
                    self._loaded.add(("pg_catalog", "pg_sequences"))
                finally:
                    loader.close()
        for database, name in analysis.databases:
            if database not in (info.database, self._catalog.database):
                raise SqlError("0A000", f"cross-database references are not implemented: {name}")
        if analysis.array_params and params:
            # = ANY($1) with the array sent as text (an unknown-typed or text-format parameter)
            # and with a NULL array, which is NULL in PostgreSQL (DuckDB: false; [NULL] gives NULL)
            params = [v if k + 1 not in analysis.array_params else
                      pgvalues.parse_flat_array(v) if isinstance(v, str) else [None] if v is None else v
                      for k, v in enumerate(params)]
        cur = self._cursor()
        self._tls.info = info
        self._tls.active = mirror
        if analysis.mentions_settings:
            self._load_settings(cur, info)
        try:
            res = cur.execute(duck_sql, list(params) if params else None)
            desc = res.description or []
            table = _fetch(res, desc) if desc else pa.table({})
        except duckdb.Error as e:
            raise _map_error(e, sql) from None
        finally:
            self._tls.info = None
            self._tls.active = None
        return self._shape(analysis, desc, table)

    def _shape(self, analysis: Analysis, desc: list, table: pa.Table) -> tuple[list[ResultField], pa.Table]:
        """Name and type the DuckDB result as PostgreSQL would; cast columns to the wire's Arrow form."""
        items = analysis.items
        ncols = table.num_columns
        mapped: list[SelectItem | None] = [None] * ncols
        if items is not None:
            stars = [k for k, it in enumerate(items) if it.star]
            if not stars and len(items) == ncols:
                mapped = list(items)
            elif len(stars) == 1:
                expand = ncols - (len(items) - 1)
                pos = 0
                for it in items:
                    if it.star:
                        pos += expand
                    elif pos < ncols:
                        mapped[pos] = it
                        pos += 1
        fields: list[ResultField] = []
        arrays = []
        column_types = {**self._column_types, **(analysis.column_types or {})}
        for k in range(ncols):
            col = table.column(k)
            it = mapped[k]
            name = it.name if it is not None and it.name else desc[k][0]
            if it is None and items is None and re.fullmatch(r"col\d+", name):
                name = f"column{int(name[3:]) + 1}"  # VALUES columns, as PostgreSQL names them
            oid = None
            if it is not None:
                oid = it.type_oid
                if oid is None and it.source is not None:
                    oid = column_types.get(it.source)
                if oid is None and analysis.from_functions and it.source in analysis.from_functions:
                    oid = _FUNCTION_TYPES.get(analysis.from_functions[it.source])
            elif analysis.inner and desc[k][0] in analysis.inner:
                src = _resolve_alias(SelectItem(desc[k][0], desc[k][0], None), analysis.inner)
                oid = src.type_oid if src.type_oid is not None else column_types.get(src.source or "")
            elif desc[k][0] in column_types:
                oid = column_types[desc[k][0]]
            elif analysis.from_functions and desc[k][0] in analysis.from_functions:
                oid = _FUNCTION_TYPES.get(analysis.from_functions[desc[k][0]])
            if it is not None and it.post and pa.types.is_integer(col.type):
                col = pa.chunked_array([pa.array(self._oid_names(it.post, col.to_pylist()), pa.string())],
                                       type=pa.string())
            ct = _column_type_for(oid, col.type)
            if ct.pg.name in ("int2vector", "oidvector") and pa.types.is_list(col.type):
                col = pa.chunked_array([pa.array([None if v is None else " ".join(str(x) for x in v)
                                                  for v in col.to_pylist()], pa.string())], type=pa.string())
            if ct.pg.name in ("regclass", "regtype", "regproc") and pa.types.is_integer(col.type):
                col = pa.chunked_array([pa.array(self._oid_names(ct.pg.name, col.to_pylist()), pa.string())],
                                       type=pa.string())
            try:
                target = _wire_arrow(ct)
                col = col.cast(target) if col.type != target else col
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                ct = pg_type_for_arrow(col.type) if not pa.types.is_null(col.type) else ColumnType(TYPES_BY_NAME["text"])
                col = col.cast(ct.arrow()) if pa.types.is_null(col.type) else col
            fields.append(ResultField(name, ct))
            arrays.append(col)
        return fields, pa.Table.from_arrays(arrays, names=[f.name for f in fields]) if arrays else pa.table({})

    def _oid_names(self, kind: str, oids: list[int | None]) -> list[str | None]:
        """regclass/regtype output: OIDs printed as PostgreSQL prints those types."""
        mirror = self._current()
        out: list[str | None] = []
        for o in oids:
            if o is None:
                out.append(None)
            elif kind == "regtype":
                pg = TYPES_BY_OID.get(o)
                out.append(pg.sql_name if pg else (rels.extra_type_name(o) or str(o)))
            elif kind == "regnamespace":
                out.append(mirror.ns_names.get(o, str(o)))
            elif kind == "regrole":
                out.append(mirror.role_names.get(o, str(o)))
            elif kind == "regproc":
                out.append("-" if o == 0 else rels.proc_names().get(o, str(o)))
            else:
                key = mirror.rel_names.get(o)
                out.append(key[1] if key and key[0] in ("pg_catalog", "public") else
                           (f"{key[0]}.{key[1]}" if key else str(o)))
        return out

    def _load_settings(self, cur: duckdb.DuckDBPyConnection, info: SessionInfo) -> None:
        """pg_settings reflects the session: a per-cursor temp table, reloaded when settings change."""
        merged = dict(DEFAULT_SETTINGS)
        merged.update({k.lower(): v for k, v in info.settings.items()})
        key = tuple(sorted(merged.items()))
        if getattr(self._tls, "settings_key", None) == key:
            return
        names = sorted(merged)
        data = {
            "name": [_SETTING_DISPLAY.get(n, n) for n in names], "setting": [merged[n] for n in names],
            "unit": [None] * len(names), "category": ["Client Connection Defaults"] * len(names),
            "short_desc": [""] * len(names), "extra_desc": [None] * len(names),
            "context": ["user"] * len(names), "vartype": ["string"] * len(names),
            "source": ["session" if n in info.settings else "default" for n in names],
            "min_val": [None] * len(names), "max_val": [None] * len(names),
            "enumvals": pa.array([None] * len(names), pa.list_(pa.string())),
            "boot_val": [DEFAULT_SETTINGS.get(n) for n in names], "reset_val": [merged[n] for n in names],
            "sourcefile": [None] * len(names), "sourceline": pa.array([None] * len(names), pa.int32()),
            "pending_restart": [False] * len(names),
        }
        cur.register("tg_settings_load", pa.table(data))
        cur.execute("CREATE OR REPLACE TEMP TABLE pg_settings AS SELECT * FROM tg_settings_load")
        cur.unregister("tg_settings_load")
        self._tls.settings_key = key

    # -- session-dependent values -----------------------------------------------------------------

    def _info(self) -> SessionInfo:
        info = getattr(self._tls, "info", None)
        return info if info is not None else SessionInfo()

    def _mirror_now(self) -> _Mirror:
        m = getattr(self._tls, "active", None)
        return m if m is not None else self._current()

    def _current_schema(self, info: SessionInfo) -> str | None:
        mirror = self._mirror_now()
        explicit_temp = "pg_temp" in info.settings.get("search_path", "")
        for s in info.search_path:
            if s in mirror.namespaces and (explicit_temp or not is_temp_schema(s)):
                return s
        return None

    def _setting(self, info: SessionInfo, name: str, missing_ok: bool) -> str | None:
        return setting_value(info, name, missing_ok)

    def _resolve_relation(self, text: str, soft: bool) -> int | None:
        mirror = self._mirror_now()
        info = self._info()
        try:
            toks = scan(text.strip())
            parts, end = split_ident_chain(toks, 0)
        except SqlError:
            toks, parts, end = [], [], 0
        if not parts or end != len(toks):
            if soft:
                return None
            raise _UdfError("42602", "invalid name syntax")
        name = parts[-1]
        if len(parts) >= 2:
            schema = info.temp_schema if parts[-2] == "pg_temp" else parts[-2]
            oid = mirror.by_name.get((schema, name))
        else:
            oid = None
            for s in ["pg_catalog"] + [p for p in info.search_path if p != "pg_catalog"]:
                oid = mirror.by_name.get((s, name))
                if oid is not None:
                    break
        if oid is None and not soft:
            raise _UdfError("42P01", f'relation "{text}" does not exist')
        return oid

    def _install_functions(self, con: duckdb.DuckDBPyConnection) -> None:
        """Python UDFs (session- and catalog-dependent), then the macros that present them under
        PostgreSQL's names."""
        T = duckdb.sqltypes
        this = self

        def udf(name: str, fn: Any, args: list, ret: Any, special: bool = False) -> None:
            # NULL in -> NULL out unless the function handles NULLs itself (DuckDB's default
            # null handling rejects UDFs that return NULL, which several of these do).
            @functools.wraps(fn)
            def guarded(*a: Any) -> Any:
                if any(x is None for x in a):
                    return None
                return fn(*a)

            con.create_function(name, fn if special else guarded, args, ret, null_handling="special",
                                side_effects=True, exception_handling="default")

        def current_user() -> str:
            return this._info().user

        def current_database() -> str:
            return this._info().database

        def job_visible(submitted_by: str) -> bool:  # INFORMATION_SCHEMA.JOBS shows statements to these
            info = this._info()
            return submitted_by == info.user or bool(this._catalog.roles.is_superuser(info))

        def current_schema() -> str | None:
            return this._current_schema(this._info())

        def current_schemas(implicit: bool) -> list[str]:
            m = this._mirror_now()
            path = [s for s in this._info().search_path if s in m.namespaces]
            return (["pg_catalog"] if implicit and "pg_catalog" not in path else []) + path

        def current_setting(name: str, missing_ok: bool | None) -> str | None:
            try:
                return this._setting(this._info(), name, bool(missing_ok))
            except SqlError as e:
                raise _UdfError(e.sqlstate, e.message) from None

        def backend_pid() -> int:
            return this._info().backend_pid

        def table_is_visible(oid: int) -> bool:
            m = this._mirror_now()
            key = m.rel_names.get(oid)
            if key is None:
                return False
            path = ["pg_catalog"] + [p for p in this._info().search_path if p != "pg_catalog"]
            for s in path:
                if (s, key[1]) in m.by_name:
                    return s == key[0]
            return False

        def format_type(oid: int | None, typmod: int | None) -> str | None:
            if oid is None:
                return None
            if oid == 0:
                return "-"
            pg = TYPES_BY_OID.get(oid)
            if pg is None:
                return rels.extra_type_name(oid) or "???"
            if typmod is None or typmod < 0:
                return pg.sql_name
            base = TYPES_BY_OID[pg.element_oid] if pg.element_oid else pg
            ct = ColumnType(base)
            if base.name in ("varchar", "bpchar"):
                ct = ColumnType(base, length=typmod - 4)
            elif base.name == "numeric":
                ct = ColumnType(base, precision=((typmod - 4) >> 16) & 0xFFFF, scale=(typmod - 4) & 0xFFFF)
            elif base.name in ("time", "timestamp", "timestamptz"):
                ct = ColumnType(base, precision=typmod)
            s = ct.sql()
            return s + "[]" if pg.element_oid else s

        def indexdef(oid: int, column: int, pretty: bool) -> str | None:
            # PostgreSQL qualifies the table unless pretty-printing and the table is visible
            found = this._mirror_now().index_of.get(oid)
            if found is None:
                return None
            t, name = found
            return rels.index_definition(t, column or 0, qualify=not (pretty and table_is_visible(t.oid)), name=name)

        def constraintdef(oid: int) -> str | None:
            found = this._mirror_now().constraint_of.get(oid)
            return rels.constraint_definition(*found) if found else None

        def userbyid(oid: int) -> str:
            return this._mirror_now().role_names.get(oid, f"unknown (OID={oid})")

        classes = {"pg_class": 1259, "pg_namespace": 2615, "pg_type": 1247, "pg_proc": 1255,
                   "pg_constraint": 2606, "pg_database": 1262, "pg_index": 2610}

        def description(oid: int, cls: str, sub: int) -> str | None:
            d = this._mirror_now().descriptions
            if cls:
                return d.get((oid, classes.get(cls.split(".")[-1], -1), sub))
            for (o, _, s), text in d.items():
                if o == oid and s == 0:
                    return text
            return None

        def start_time() -> str:
            return this._started.isoformat()

        def txid() -> int:
            this._txid += 1
            return this._txid

        def size_pretty(n: int) -> str:
            units = ["bytes", "kB", "MB", "GB", "TB", "PB"]
            v = n
            for u in units:
                if abs(v) < 10 * 1024 or u == units[-1]:
                    return f"{v} {u}"
                v = (v + 512) // 1024 if v >= 0 else -((-v + 512) // 1024)
            return f"{v} PB"

        def viewdef(oid: int) -> str | None:
            t = this._mirror_now().tables.get(oid)
            return t.view_sql if t is not None and t.kind == "view" else None

        def relation_filepath(rel: str) -> str | None:
            # Where a table's Delta files are, relative to the data dir (PostgreSQL's form, e.g.
            # warehouse/2200/16385); NULL for views. Operators find a table's files by it.
            oid = int(rel) if rel.strip().isdigit() else this._resolve_relation(rel, soft=False)
            t = this._mirror_now().tables.get(oid)
            if t is None or not t.location:
                return None
            data_dir = os.path.dirname(os.path.abspath(this._catalog.path))
            inside = os.path.commonpath([data_dir, os.path.abspath(t.location)]) == data_dir
            return os.path.relpath(t.location, data_dir) if inside else t.location

        def has_privilege(kind: str, who: str | None, obj: str | None, privs: str | None) -> bool | None:
            # has_table_privilege & co. from catalog.roles (PostgreSQL's answer, never a blanket true)
            if obj is None or privs is None:
                return None
            from catalog.roles import DATABASE_OID, PRIVILEGES

            info = this._info()
            roles = this._catalog.roles
            if who is not None:
                name = this._mirror_now().role_names.get(int(who)) if who.strip().isdigit() else who
                if name is None or (roles.get(name) is None and name != info.user):
                    raise _UdfError("42704", f'role "{who}" does not exist')
                if name != info.user:
                    info = SessionInfo(user=name, superuser=False)
            asked = [p.strip().upper() for p in privs.split(",")]
            # only owners (and superusers) hold grant options: tidegate grants none to others
            grant_option = [p.endswith(" WITH GRANT OPTION") for p in asked]
            wanted = [p.removesuffix(" WITH GRANT OPTION").strip() for p in asked]
            if kind == "role":
                target = this._mirror_now().role_names.get(int(obj)) if obj.strip().isdigit() else obj
                if target is None or (roles.get(target) is None and target not in this._mirror_now().role_oids):
                    raise _UdfError("42704", f'role "{obj}" does not exist')
                for p in wanted:
                    if p not in ("MEMBER", "USAGE", "SET"):
                        raise _UdfError("22023", f"unrecognized privilege type: \"{p.lower()}\"")
                return roles.is_member(info, target)
            allowed = PRIVILEGES[kind]
            for p in wanted:
                if p not in allowed and not (kind == "d" and p == "TEMP"):
                    raise _UdfError("22023", f"unrecognized privilege type: \"{p.lower()}\"")
            wanted = ["TEMPORARY" if p == "TEMP" else p for p in wanted]

            def holds(kind: str, oid: int, owner: str | None) -> bool:
                return any(roles.has(info, kind, oid, owner, p) and (not g or roles.is_member(info, owner))
                           for p, g in zip(wanted, grant_option))

            if kind == "d":
                return holds("d", DATABASE_OID, None)
            if kind == "n":
                s = this._catalog.get_schema(obj)
                if s is None and obj.strip().isdigit():
                    s = next((x for x in this._catalog.list_schemas() if x.oid == int(obj)), None)
                if s is None:
                    if obj in ("pg_catalog", "information_schema"):
                        return "USAGE" in wanted
                    raise _UdfError("3F000", f'schema "{obj}" does not exist')
                return holds("n", s.oid, s.owner)
            oid = int(obj) if obj.strip().isdigit() else this._resolve_relation(obj, soft=False)
            t = this._mirror_now().tables.get(oid)
            if t is None:  # a system catalog: PUBLIC may read them
                return "SELECT" in wanted
            return holds("r", t.oid, t.owner)

        def regclass_in(text: str) -> int:
            # regclass input accepts a name or a numeric OID, like PostgreSQL's regclassin
            if text.strip().isdigit():
                return int(text)
            return this._resolve_relation(str(text), soft=False) or 0

        def regrole_in(text: str) -> int:
            if text.strip().isdigit():
                return int(text)
            name = text.strip()
            name = name[1:-1].replace('""', '"') if name.startswith('"') and name.endswith('"') else name.lower()
            oid = this._mirror_now().role_oids.get(name)
            if oid is None:
                raise ValueError(f'role "{name}" does not exist')
            return oid

        def to_regclass(text: str) -> int | None:
            return this._resolve_relation(str(text), soft=True)

        def relname(oid: int) -> str:
            m = this._mirror_now()
            key = m.rel_names.get(oid)
            if key is None:
                return str(oid)
            return key[1] if table_is_visible(oid) else f"{rels.quote_ident(key[0])}.{rels.quote_ident(key[1])}"

        def regtype_lookup(text: str, soft: bool) -> int | None:
            raw = str(text).strip()
            name = raw.split(".", 1)[1] if raw.lower().startswith("pg_catalog.") else raw
            name = name.strip('"')
            pg = TYPES_BY_NAME.get(name) or lookup_type_name(name)
            if pg is None and name.endswith("[]"):
                base = lookup_type_name(name[:-2])
                pg = TYPES_BY_OID.get(base.array_oid) if base else None
            if pg is None and name.lower() in ('"char"', "char"):
                pg = TYPES_BY_NAME["char"]
            if pg is None and name in rels.extra_type_oids():
                return rels.extra_type_oids()[name]
            if pg is None:
                if soft:
                    return None
                raise _UdfError("42704", f'type "{raw}" does not exist')
            return pg.oid

        def regtype_in(text: str) -> int:
            if text.strip().isdigit():
                return int(text)
            return regtype_lookup(text, False) or 0

        def to_regtype(text: str) -> int | None:
            return regtype_lookup(text, True)

        def regnamespace_in(text: str) -> int:
            if text.strip().isdigit():
                return int(text)
            m = this._mirror_now()
            name = str(text).strip().strip('"')
            if name not in m.namespaces:
                raise _UdfError("3F000", f'schema "{name}" does not exist')
            return m.namespaces[name]

        def to_regnamespace(text: str) -> int | None:
            return this._mirror_now().namespaces.get(str(text).strip().strip('"'))

        def nspname(oid: int) -> str:
            return this._mirror_now().ns_names.get(oid, str(oid))

        procs = {r["oid"]: r for r in rels.proc_rows()}

        def function_result(oid: int) -> str | None:
            p = procs.get(oid)
            if p is None:
                return None
            modes = p["proargmodes"] or []
            if "t" in modes:
                cols = [f"{n} {format_type(t, None)}" for t, m, n in
                        zip(p["proallargtypes"], modes, p["proargnames"]) if m == "t"]
                return f"TABLE({', '.join(cols)})"
            ret = format_type(p["prorettype"], None)
            return f"SETOF {ret}" if p["proretset"] else ret

        def function_arguments(oid: int, defaults: bool) -> str | None:
            # PostgreSQL's pg_get_function_arguments / _identity_arguments
            p = procs.get(oid)
            if p is None:
                return None
            types = p["proallargtypes"] or p["proargtypes"]
            modes = p["proargmodes"] or ["i"] * len(types)
            names = p["proargnames"] or [""] * len(types)
            out = []
            inputs = sum(1 for m in modes if m in ("i", "b", "v"))
            seen_in = 0
            for t, m, nm in zip(types, modes, names):
                if m == "t":
                    continue
                prefix = {"o": "OUT ", "b": "INOUT ", "v": "VARIADIC "}.get(m, "")
                text = prefix + (f"{rels.quote_ident(nm)} " if nm else "") + format_type(t, None)
                if m in ("i", "b", "v"):
                    seen_in += 1
                    first_default = inputs - p["pronargdefaults"]
                    if defaults and seen_in > first_default:
                        given = rels.PROC_ARG_DEFAULTS.get(oid, [])
                        k = seen_in - first_default - 1
                        text += " DEFAULT " + (given[k] if k < len(given) else "NULL")
                out.append(text)
            return ", ".join(out)

        def regproc_oid(name: str) -> int:
            name = str(name).strip()
            if name == "-":
                return 0
            if name.isdigit():
                return int(name)
            name = name.removeprefix("pg_catalog.").strip('"')
            oid = rels.proc_oids().get(name)
            return oid if oid is not None else (zlib.crc32(name.encode()) & 0x3FFFFFFF) | 1

        def sequence_call(fn: str, args: list[Any]) -> Any:
            if getattr(this._tls, "describing", False):
                return 0  # Describe learns the columns by running the query: no value is taken
            info = this._info()
            values = getattr(this._catalog, "sequences", None)
            if values is None:
                raise _UdfError("0A000", f"{fn}() is not available here")
            try:
                return values.call(this._catalog, fn, args, info.search_path, info.backend_pid)
            except SqlError as e:
                raise _UdfError(e.sqlstate, e.message) from None

        def nextval(s: str) -> int:
            return sequence_call("nextval", [s])

        def currval(s: str) -> int:
            return sequence_call("currval", [s])

        def setval(s: str, v: int, called: bool) -> int:
            return sequence_call("setval", [s, v, called])

        def lastval() -> int:
            return sequence_call("lastval", [])

        def serial_sequence(table: str, column: str) -> str | None:
            m = this._mirror_now()
            oid = this._resolve_relation(str(table), soft=False)
            t = m.tables.get(oid or 0)
            if t is None or t.column(column) is None:
                name = t.name if t is not None else table
                raise _UdfError("42703", f'column "{column}" of relation "{name}" does not exist')
            for seq in m.tables.values():
                if seq.kind == "sequence" and SequenceParams.of(seq).owned_by == (t.oid, column):
                    return f"{rels.quote_ident(seq.schema)}.{rels.quote_ident(seq.name)}"
            return None

        udf("tg_nextval", nextval, [T.VARCHAR], T.BIGINT)
        udf("tg_currval", currval, [T.VARCHAR], T.BIGINT)
        udf("tg_setval", setval, [T.VARCHAR, T.BIGINT, T.BOOLEAN], T.BIGINT)
        udf("tg_lastval", lastval, [], T.BIGINT)
        udf("tg_serial_sequence", serial_sequence, [T.VARCHAR, T.VARCHAR], T.VARCHAR)
        udf("tg_function_result", function_result, [T.BIGINT], T.VARCHAR)
        udf("tg_function_arguments", function_arguments, [T.BIGINT, T.BOOLEAN], T.VARCHAR)
        udf("tg_regproc_oid", regproc_oid, [T.VARCHAR], T.BIGINT)
        udf("tg_current_user", current_user, [], T.VARCHAR)
        udf("tg_job_visible", job_visible, [T.VARCHAR], T.BOOLEAN)
        udf("tg_current_database", current_database, [], T.VARCHAR)
        udf("tg_current_schema", current_schema, [], T.VARCHAR)
        udf("tg_current_schemas", current_schemas, [T.BOOLEAN], duckdb.list_type(T.VARCHAR))
        udf("tg_current_setting", current_setting, [T.VARCHAR, T.BOOLEAN], T.VARCHAR, special=True)
        udf("tg_backend_pid", backend_pid, [], T.INTEGER)

        def my_temp_schema() -> int:
            return this._mirror_now().namespaces.get(this._info().temp_schema, 0)

        udf("tg_my_temp_schema", my_temp_schema, [], T.BIGINT)
        udf("tg_table_is_visible", table_is_visible, [T.BIGINT], T.BOOLEAN)
        udf("tg_format_type", format_type, [T.BIGINT, T.BIGINT], T.VARCHAR, special=True)
        udf("tg_indexdef", indexdef, [T.BIGINT, T.BIGINT, T.BOOLEAN], T.VARCHAR)
        udf("tg_constraintdef", constraintdef, [T.BIGINT], T.VARCHAR)
        udf("tg_userbyid", userbyid, [T.BIGINT], T.VARCHAR)
        udf("tg_description", description, [T.BIGINT, T.VARCHAR, T.BIGINT], T.VARCHAR)
        udf("tg_start_time", start_time, [], T.TIMESTAMP_TZ)
        udf("tg_txid", txid, [], T.BIGINT)
        udf("tg_size_pretty", size_pretty, [T.BIGINT], T.VARCHAR)
        udf("tg_quote_ident", rels.quote_ident, [T.VARCHAR], T.VARCHAR)
        udf("tg_parse_ident", parse_ident, [T.VARCHAR, T.BOOLEAN], duckdb.list_type(T.VARCHAR))
        udf("tg_viewdef", viewdef, [T.BIGINT], T.VARCHAR)
        udf("tg_relation_filepath", relation_filepath, [T.VARCHAR], T.VARCHAR)
        udf("tg_has_privilege", has_privilege, [T.VARCHAR, T.VARCHAR, T.VARCHAR, T.VARCHAR], T.BOOLEAN, special=True)
        udf("tg_regclass_in", regclass_in, [T.VARCHAR], T.BIGINT)
        udf("tg_regrole_in", regrole_in, [T.VARCHAR], T.BIGINT)
        udf("tg_to_regclass", to_regclass, [T.VARCHAR], T.BIGINT)
        udf("tg_relname", relname, [T.BIGINT], T.VARCHAR)
        udf("tg_regtype_in", regtype_in, [T.VARCHAR], T.BIGINT)
        udf("tg_to_regtype", to_regtype, [T.VARCHAR], T.BIGINT)
        udf("tg_regnamespace_in", regnamespace_in, [T.VARCHAR], T.BIGINT)
        udf("tg_to_regnamespace", to_regnamespace, [T.VARCHAR], T.BIGINT)
        udf("tg_nspname", nspname, [T.BIGINT], T.VARCHAR)
        for stmt in _MACROS:
            con.execute(stmt)


_SIMPLE_ARROW = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(), "SMALLINT": pa.int16(),
                 "BOOLEAN": pa.bool_(), "DOUBLE": pa.float64(), "FLOAT": pa.float32(), "TINYINT": pa.int8(),
                 "UBIGINT": pa.uint64(), "UINTEGER": pa.uint32(), "HUGEINT": pa.decimal128(38, 0), "NULL": pa.null()}


def _fetch(res: duckdb.DuckDBPyConnection, desc: list) -> pa.Table:
    """The result as Arrow. Catalog results are small and mostly scalar: building Arrow from
    Python rows is faster than DuckDB's Arrow export for them; other shapes use the export."""
    types: list[pa.DataType] = []
    for d in desc:
        name = str(d[1])
        t = _SIMPLE_ARROW.get(name)
        if t is None and name.endswith("[]") and name[:-2] in _SIMPLE_ARROW:
            t = pa.list_(_SIMPLE_ARROW[name[:-2]])
        if t is None:
            with warnings.catch_warnings():
                # catalog results are small; the extra copy DuckDB warns about does not matter
                warnings.simplefilter("ignore", UserWarning)
                return res.to_arrow_table()
        types.append(t)
    rows = res.fetchall()
    cols = list(zip(*rows)) if rows else [()] * len(desc)
    return pa.Table.from_arrays([pa.array(list(c), type=t) for c, t in zip(cols, types)],
                                names=[f"c{i}" for i in range(len(desc))])


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def _one(name: str, ct: ColumnType, value: Any, arrow: pa.DataType) -> RowStream:
    table = pa.Table.from_arrays([pa.array([value], type=arrow)], names=[name])
    return RowStream([ResultField(name, ct)], iter(table.to_batches()))


def _column_type_for(oid: int | None, arrow: pa.DataType) -> ColumnType:
    if oid is not None and oid in TYPES_BY_OID:
        pg = TYPES_BY_OID[oid]
        # A text-typed catalog column over a non-string Arrow column (or vice versa) means the
        # name lookup guessed wrong: trust what the query produced.
        stringy = pa.types.is_string(arrow) or pa.types.is_large_string(arrow) or pa.types.is_null(arrow)
        if pg.category == "S" and not stringy:
            return pg_type_for_arrow(arrow)
        if pg.name in ("oid", "int2", "int4", "int8", "bool") and (stringy and not pa.types.is_null(arrow)):
            return pg_type_for_arrow(arrow)
        if pg.element_oid and not (pa.types.is_list(arrow) or pa.types.is_null(arrow)):
            return pg_type_for_arrow(arrow)
        if pg.name == "numeric" and pa.types.is_decimal(arrow):
            return ColumnType(pg, precision=arrow.precision, scale=arrow.scale)
        if pg.name in ("int2vector", "oidvector") and not (pa.types.is_list(arrow) or pa.types.is_null(arrow)):
            return pg_type_for_arrow(arrow)
        return ColumnType(pg)
    if pa.types.is_null(arrow):
        return ColumnType(TYPES_BY_NAME["text"])
    if pa.types.is_decimal(arrow):
        return ColumnType(TYPES_BY_NAME["numeric"], precision=arrow.precision, scale=arrow.scale)
    return pg_type_for_arrow(arrow)


def _wire_arrow(ct: ColumnType) -> pa.DataType:
    """Arrow form of a result column: reg* types travel as their text (the names), like
    PostgreSQL's text output; int2vector/oidvector as their space-separated text."""
    if ct.pg.name in ("regclass", "regtype", "regproc", "int2vector", "oidvector"):
        return pa.string()
    if ct.pg.name == "oid":
        return pa.int64()
    if ct.pg.name == "char":
        return pa.string()
    return ct.arrow()


def _map_error(e: duckdb.Error, sql: str) -> SqlError:
    text = str(e)
    m = _MARK.search(text)
    if m:
        return SqlError(m.group(1), m.group(2))
    first = text.splitlines()[0] if text else "internal error"
    if isinstance(e, duckdb.ParserException):
        return SqlError("42601", first.split(":", 1)[-1].strip() or "syntax error")
    if isinstance(e, duckdb.CatalogException):
        m2 = re.search(r'Table with name "?([^"!\s]+)"? does not exist', first) or re.search(r"Table with name (\S+) does not exist", first)
        if m2:
            return SqlError("42P01", f'relation "{m2.group(1)}" does not exist')
        m2 = re.search(r"Function with name \"?([^\"!\s(]+)\"? does not exist", first)
        if m2:
            return SqlError("42883", f"function {m2.group(1)} does not exist",
                            hint="No function matches the given name and argument types.")
        m2 = re.search(r"Type with name \"?([^\"!\s]+)\"? does not exist", first)
        if m2:
            return SqlError("42704", f'type "{m2.group(1)}" does not exist')
        return SqlError("42P01", first.split(":", 1)[-1].strip())
    if isinstance(e, duckdb.BinderException):
        m2 = re.search(r'Referenced column "([^"]+)" not found', first)
        if m2:
            return SqlError("42703", f'column "{m2.group(1)}" does not exist')
        m2 = re.search(r'Referenced table "([^"]+)" not found', first)
        if m2:
            return SqlError("42P01", f'missing FROM-clause entry for table "{m2.group(1)}"')
        m2 = re.search(r"No function matches the given name and argument types '([^(']+)", first)
        if m2:
            return SqlError("42883", f"function {m2.group(1)} does not exist",
                            hint="No function matches the given name and argument types. You might need to add explicit type casts.")
        return SqlError("42804" if "type" in first.lower() else "42601", first.split(":", 1)[-1].strip())
    if isinstance(e, duckdb.ConversionException):
        return SqlError("22P02", first.split(":", 1)[-1].strip())
    if isinstance(e, duckdb.OutOfRangeException):
        return SqlError("22003", first.split(":", 1)[-1].strip())
    if isinstance(e, duckdb.InvalidInputException) and "division by zero" in first.lower():
        return SqlError("22012", "division by zero")
    return SqlError("XX000", first)


def _timing_ms(fn: Any, n: int = 200) -> float:
    """Median milliseconds of ``fn()`` (used by tests and the performance report)."""
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return samples[len(samples) // 2]
