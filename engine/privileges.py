"""Role and privilege statements: CREATE/ALTER/DROP ROLE, GRANT, REVOKE, ALTER ... OWNER TO.

They change only the catalog (``catalog.roles``), so they never wait for Spark. The grammar is
PostgreSQL's, less what tidegate does not model; every such clause is refused with 0A000 rather
than accepted and ignored (WITH GRANT OPTION, column privileges, CONNECTION LIMIT, ...).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from catalog.roles import DATABASE_OID, PRIVILEGES, PUBLIC, RoleDef, make_verifier
from catalog.store import is_temp_schema
from engine import ddl
from engine.ddl import TokenReader
from tidegate.errors import SqlError
from tidegate.results import CommandResult
from tidegate.session import SessionInfo
from tidegate.sqllex import Token

if TYPE_CHECKING:
    from engine.executor import EngineSession

_ROLE_WORDS = ("ROLE", "USER", "GROUP")


def execute(session: EngineSession, sql: str, info: SessionInfo) -> CommandResult:
    p = TokenReader(sql)
    verb = p.one_of("CREATE", "ALTER", "DROP", "GRANT", "REVOKE")
    if verb in ("GRANT", "REVOKE"):
        return _grant(session, p, info, verb == "GRANT")
    if p.word() in _ROLE_WORDS:
        kind = p.one_of(*_ROLE_WORDS)
        if verb == "CREATE":
            return _create_role(session, p, info, kind)
        if verb == "ALTER":
            return _alter_role(session, p, info)
        return _drop_role(session, p, info)
    return _owner_to(session, p, info)


# -- roles -----------------------------------------------------------------------------------------

def _role_options(p: TokenReader, role: RoleDef, *, creating: bool) -> tuple[RoleDef, list[str], list[str]]:
    """Apply CREATE/ALTER ROLE options; returns the role and, for CREATE, IN ROLE / ROLE lists."""
    in_roles: list[str] = []
    members: list[str] = []
    p.accept("WITH")
    flags = {"SUPERUSER": "superuser", "LOGIN": "login", "INHERIT": "inherit", "CREATEROLE": "createrole",
             "CREATEDB": "createdb"}
    while p.peek() is not None:
        w = p.word()
        if w in flags:
            p.i += 1
            role = replace(role, **{flags[w]: True})
        elif w.startswith("NO") and w[2:] in flags:
            p.i += 1
            role = replace(role, **{flags[w[2:]]: False})
        elif w == "PASSWORD":
            p.i += 1
            if p.accept("NULL"):
                role = replace(role, verifier=None)
            else:
                role = replace(role, verifier=make_verifier(p.string()))
        elif w == "ENCRYPTED" and p.peek(1) is not None and p.peek(1).upper == "PASSWORD":
            p.i += 1
        elif creating and w == "IN" and p.peek(1) is not None and p.peek(1).upper in ("ROLE", "GROUP"):
            p.i += 2
            in_roles += p.comma_list(p.ident)
        elif creating and w in ("ROLE", "USER"):
            p.i += 1
            members += p.comma_list(p.ident)
        elif w in ("REPLICATION", "NOREPLICATION", "BYPASSRLS", "NOBYPASSRLS", "CONNECTION", "VALID", "ADMIN",
                   "SYSID"):
            raise SqlError("0A000", f"role option {w} is not supported",
                           hint="tidegate models SUPERUSER, LOGIN, INHERIT, CREATEROLE, CREATEDB and PASSWORD.")
        else:
            raise p.error()
    return role, in_roles, members


def _create_role(session: EngineSession, p: TokenReader, info: SessionInfo, kind: str) -> CommandResult:
    roles = session.catalog.roles
    name = p.ident()
    role, in_roles, members = _role_options(p, RoleDef(name, 0, login=kind == "USER"), creating=True)
    _may_manage_roles(session, info, role, "create")
    for r in in_roles + members:
        if roles.get(r) is None:
            raise SqlError("42704", f'role "{r}" does not exist')
    roles.create(role)
    for r in in_roles:
        roles.grant_role(r, name)
    for m in members:
        roles.grant_role(name, m)
    return CommandResult("CREATE ROLE")


def _may_manage_roles(session: EngineSession, info: SessionInfo, target: RoleDef, verb: str) -> None:
    roles = session.catalog.roles
    if roles.is_superuser(info):
        return
    if target.superuser:
        raise SqlError("42501", f"permission denied to {verb} role", detail=f'Only roles with the SUPERUSER attribute may {verb} roles with the SUPERUSER attribute.')
    me = roles.get(info.user)
    if me is None or not me.createrole:
        raise SqlError("42501", f"permission denied to {verb} role",
                       detail=f"Only roles with the CREATEROLE attribute may {verb} roles.")


def _alter_role(session: EngineSession, p: TokenReader, info: SessionInfo) -> CommandResult:
    roles = session.catalog.roles
    t = p.peek()
    name = info.user if p.word() in ("CURRENT_USER", "SESSION_USER", "CURRENT_ROLE") and t.kind == "word" else None
    if name is not None:
        p.i += 1
    else:
        name = p.ident()
    if p.word() in ("RENAME", "SET", "RESET"):
        raise SqlError("0A000", f"ALTER ROLE ... {p.word()} is not supported",
                       hint="Create a new role and grant it what the old one had.")
    role = roles.get(name)
    if role is None:
        raise SqlError("42704", f'role "{name}" does not exist')
    new, _, _ = _role_options(p, role, creating=False)
    only_password = replace(new, verifier=role.verifier) == role
    if not (only_password and name == info.user):  # everyone may change their own password
        _may_manage_roles(session, info, role if role.superuser else new, "alter")
    if role.configured and (new.superuser != role.superuser or new.login != role.login):
        raise SqlError("55006", f'role "{name}" is defined in the configuration file',
                       hint="Change its entry in [[users]] and restart the gateway.")
    roles.alter(new)
    return CommandResult("ALTER ROLE")


def _drop_role(session: EngineSession, p: TokenReader, info: SessionInfo) -> CommandResult:
    roles = session.catalog.roles
    if_exists = p.accept("IF")
    if if_exists:
        p.expect("EXISTS")
    names = p.comma_list(p.ident)
    p.done()
    notices = []
    for name in names:
        if name == info.user:
            raise SqlError("55006", "current user cannot be dropped")
        role = roles.get(name)
        if role is None:
            if if_exists:
                notices.append(f'role "{name}" does not exist, skipping')
                continue
            raise SqlError("42704", f'role "{name}" does not exist')
        _may_manage_roles(session, info, role, "drop")
        roles.drop(name, _owned_by(session, name))
    return CommandResult("DROP ROLE", notices=notices)


def _owned_by(session: EngineSession, name: str) -> list[str]:
    """What keeps role ``name`` from being dropped, as PostgreSQL's DETAIL lists it: objects it
    owns and privileges granted to it (memberships go with the role)."""
    cat = session.catalog
    roles = cat.roles
    owned = []
    for s in cat.list_schemas():
        # A session's temporary schema is the system's in PostgreSQL (its tables are the role's):
        # one whose session just ended, and is being dropped, does not keep the role.
        if s.owner == name and not is_temp_schema(s.name):
            owned.append(f"owner of schema {s.name}")
        if name in roles.grants_on("n", s.oid):
            owned.append(f"privileges for schema {s.name}")
    for t in cat.list_tables():
        word = "view" if t.kind == "view" else "table"
        if t.owner == name:
            owned.append(f"owner of {word} {t.qualified_name}")
        if name in roles.grants_on("r", t.oid):
            owned.append(f"privileges for {word} {t.qualified_name}")
    if name in roles.grants_on("d", DATABASE_OID):
        owned.append(f"privileges for database {cat.database}")
    owned += [f"owner of flow {f.name}" for f in session.engine.flows.flows.list() if f.owner == name]
    return owned


# -- GRANT / REVOKE --------------------------------------------------------------------------------

def _grant(session: EngineSession, p: TokenReader, info: SessionInfo, grant: bool) -> CommandResult:
    tag = "GRANT" if grant else "REVOKE"
    if not grant and p.word() in ("GRANT", "ADMIN"):
        raise SqlError("0A000", f"REVOKE {p.word()} OPTION FOR is not supported (tidegate keeps no grant options)")
    # Privilege list, up to ON (or a role list, up to TO/FROM).
    start = p.i
    while p.peek() is not None and p.word() not in ("ON", "TO", "FROM"):
        p.i += 1
    if p.peek() is None:
        raise p.error()
    if p.word() != "ON":
        p.i = start
        granted = p.comma_list(p.ident)
        p.one_of("TO" if grant else "FROM")
        members = p.comma_list(lambda: _grantee(p, info, allow_public=False))
        if p.word() == "WITH":
            raise SqlError("0A000", "WITH ADMIN OPTION is not supported")
        _granted_by(p)
        p.done()
        roles = session.catalog.roles
        me = roles.get(info.user)
        if not roles.is_superuser(info) and not (me is not None and me.createrole):
            raise SqlError("42501", f"permission denied to {tag.lower()} role",
                           detail="Only roles with the CREATEROLE attribute may grant or revoke roles.")
        notices = []
        for r in granted:
            target = roles.get(r)
            if target is None:
                raise SqlError("42704", f'role "{r}" does not exist')
            if target.superuser and not roles.is_superuser(info):
                raise SqlError("42501", f'permission denied to {tag.lower()} role "{r}"')
            for m in members:
                note = roles.grant_role(r, m) if grant else roles.revoke_role(r, m)
                if note:
                    notices.append(note)
        return CommandResult(f"{tag} ROLE", notices=notices)
    privs_toks = p.toks[start:p.i]
    p.expect("ON")
    kind, objects = _objects(session, p, info)
    privileges = _privileges(privs_toks, kind, p.sql)
    p.one_of("TO" if grant else "FROM")
    grantees = p.comma_list(lambda: _grantee(p, info, allow_public=True))
    if grant and p.word() == "WITH":
        raise SqlError("0A000", "WITH GRANT OPTION is not supported (tidegate keeps no grant options)",
                       hint="Only owners and superusers grant privileges.")
    _granted_by(p)
    if not grant and p.word() in ("CASCADE", "RESTRICT"):
        p.i += 1
    p.done()
    roles = session.catalog.roles
    for g in grantees:
        if g != PUBLIC and roles.get(g) is None:
            raise SqlError("42704", f'role "{g}" does not exist')
    for oid, name, owner, kind_word in objects:
        if not roles.is_member(info, owner):
            raise SqlError("42501", f"permission denied for {kind_word} {name}")
        if grant:
            roles.grant(kind, oid, grantees, privileges, info.user)
        else:
            roles.revoke(kind, oid, grantees, privileges)
    return CommandResult(tag)


def _relation_name(p: TokenReader) -> tuple[str | None, str]:
    parts = p.qualified()
    if len(parts) > 2:
        raise SqlError("0A000", "cross-database references are not implemented")
    return (parts[0] if len(parts) == 2 else None), parts[-1]


def _granted_by(p: TokenReader) -> None:
    if p.word() == "GRANTED":
        raise SqlError("0A000", "GRANTED BY is not supported")


def _grantee(p: TokenReader, info: SessionInfo, *, allow_public: bool) -> str:
    p.accept("GROUP")
    t = p.peek()
    if t is not None and t.kind == "word":
        w = t.upper
        if w == "PUBLIC":
            p.i += 1
            if not allow_public:
                raise SqlError("42704", 'role "public" does not exist')
            return PUBLIC
        if w in ("CURRENT_USER", "SESSION_USER", "CURRENT_ROLE"):
            p.i += 1
            return info.user
    return p.ident()


def _objects(session: EngineSession, p: TokenReader, info: SessionInfo) -> tuple[str, list[tuple[int, str, str | None, str]]]:
    """The ON clause: (object kind, [(oid, name, owner, kind word)])."""
    cat = session.catalog
    if p.accept("SCHEMA"):
        out = []
        for name in p.comma_list(p.ident):
            s = cat.get_schema(name)
            if s is None:
                raise SqlError("3F000", f'schema "{name}" does not exist')
            out.append((s.oid, s.name, s.owner, "schema"))
        return "n", out
    if p.accept("DATABASE"):
        out = []
        for name in p.comma_list(p.ident):
            if name != cat.database:
                raise SqlError("3D000", f'database "{name}" does not exist')
            out.append((DATABASE_OID, name, None, "database"))
        return "d", out
    if p.accept("ALL"):
        p.expect("TABLES")
        p.expect("IN")
        p.expect("SCHEMA")
        out = []
        for name in p.comma_list(p.ident):
            if cat.get_schema(name) is None:
                raise SqlError("3F000", f'schema "{name}" does not exist')
            out += [(t.oid, t.name, t.owner, "view" if t.kind == "view" else "table") for t in cat.list_tables(name)]
        return "r", out
    if p.word() in ("SEQUENCE", "FUNCTION", "PROCEDURE", "ROUTINE", "TYPE", "DOMAIN", "LANGUAGE", "TABLESPACE",
                    "FOREIGN", "LARGE", "PARAMETER"):
        raise SqlError("0A000", f"GRANT ON {p.word()} is not supported")
    p.accept("TABLE")
    out = []
    for schema, name in p.comma_list(lambda: _relation_name(p)):
        t = cat.resolve_table(name, schema, info.search_path)
        out.append((t.oid, t.name, t.owner, "view" if t.kind == "view" else "table"))
    return "r", out


def _privileges(toks: list[Token], kind: str, sql: str) -> list[str]:
    allowed = PRIVILEGES[kind]
    words = [t.upper for t in toks]
    if not words:
        raise SqlError("42601", 'syntax error at or near "ON"')
    if words[0] == "ALL" and (len(words) == 1 or words[1:] == ["PRIVILEGES"]):
        return list(allowed)
    if "(" in words:
        raise SqlError("0A000", "column privileges are not supported", hint="Grant on the whole table, or a view of the columns.")
    out = []
    for j, w in enumerate(words):
        if j % 2 == 1:
            if w != ",":
                raise SqlError("42601", f'syntax error at or near "{toks[j].text}"', position=toks[j].start + 1)
            continue
        w = "TEMPORARY" if w == "TEMP" else w
        if w not in allowed:
            what = {"r": "relation", "n": "schema", "d": "database"}[kind]
            raise SqlError("0LP01", f"invalid privilege type {w} for {what}")
        out.append(w)
    return out


# -- ALTER ... OWNER TO ----------------------------------------------------------------------------

def _owner_to(session: EngineSession, p: TokenReader, info: SessionInfo) -> CommandResult:
    cat = session.catalog
    roles = cat.roles
    kind = p.one_of("TABLE", "VIEW", "SCHEMA")
    if kind == "SCHEMA":
        name = p.ident()
        p.expect("OWNER")
        p.expect("TO")
        new_owner = _grantee(p, info, allow_public=False)
        p.done()
        s = cat.get_schema(name)
        if s is None:
            raise SqlError("3F000", f'schema "{name}" does not exist')
        _check_new_owner(session, info, "schema", s.name, s.owner, new_owner)
        cat.set_schema_owner(s.name, new_owner)
        return CommandResult("ALTER SCHEMA")
    schema, name = _relation_name(p)
    p.expect("OWNER")
    p.expect("TO")
    new_owner = _grantee(p, info, allow_public=False)
    p.done()
    t = cat.resolve_table(name, schema, info.search_path)
    word = "view" if t.kind == "view" else "table"
    _check_new_owner(session, info, word, t.name, t.owner, new_owner, schema=t.schema)
    if not roles.is_superuser(info):
        roles.check_schema(info, t.schema, "CREATE")
    cat.replace_table(replace(t, owner=new_owner))
    return CommandResult(f"ALTER {kind}")


def _check_new_owner(session: EngineSession, info: SessionInfo, word: str, name: str, owner: str | None,
                     new_owner: str, *, schema: str | None = None) -> None:
    roles = session.catalog.roles
    if roles.get(new_owner) is None:
        raise SqlError("42704", f'role "{new_owner}" does not exist')
    roles.check_owner(info, word, name, owner, schema=schema)
    if not roles.is_member(info, new_owner):
        raise SqlError("42501", f'must be able to SET ROLE "{new_owner}"')
