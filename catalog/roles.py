"""Roles and privileges in PostgreSQL's model: who may read, write and change which objects.

Kept in the catalog's database next to the relations they govern:

* ``roles``: every role by name, with its attributes (SUPERUSER, LOGIN, INHERIT, CREATEROLE,
  CREATEDB) and, for roles created with a PASSWORD, a SCRAM-SHA-256 verifier (never the
  password). Users listed in the configuration file are synced in at start-up (``configured``).
* ``role_members``: ``GRANT role TO member``.
* ``grants``: one row per (object kind, object oid, grantee, privilege); the grantee ``''``
  stands for PUBLIC (a zero-length identifier can name no role).

An object's owner holds every privilege on it implicitly, as in PostgreSQL; superusers bypass
every check. The defaults are PostgreSQL 15's: PUBLIC has USAGE on schema ``public`` and
CONNECT/TEMPORARY on the database, and nothing else; in particular ordinary roles may not create
tables in ``public`` until granted CREATE on it.

The checks (:meth:`Roles.check_table` and friends) raise PostgreSQL's errors (42501). They read an
in-memory snapshot rebuilt when the catalog version moves, so a check costs a few dict lookups.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tidegate.errors import SqlError
from tidegate.session import SessionInfo

if TYPE_CHECKING:
    from catalog.store import Catalog, SchemaDef, TableDef

PUBLIC = ""  # the grantee PUBLIC in ``grants``
# The server's own schema (the events table, engine/events.py). Its relations are written by the
# server only: every client may read them (SELECT is granted to PUBLIC), and no one, superusers
# included, may write, alter or drop them, create anything in the schema or drop it (42501). The
# server's own writers never go through these checks (they commit to storage directly).
PRIVATE_SCHEMA = "tidegate_private"
DATABASE_OID = 16384 - 1  # pg_database's oid of the one database (catalog.pg_relations uses the same)

# Privilege names and their aclitem letters, per object kind ('r' relation, 'n' schema, 'd' database).
PRIVILEGES: dict[str, dict[str, str]] = {
    "r": {"INSERT": "a", "SELECT": "r", "UPDATE": "w", "DELETE": "d", "TRUNCATE": "D",
          "REFERENCES": "x", "TRIGGER": "t"},
    "n": {"USAGE": "U", "CREATE": "C"},
    "d": {"CREATE": "C", "TEMPORARY": "T", "CONNECT": "c"},
}
RESERVED_ROLE_NAMES = ("public", "none", "current_user", "session_user", "current_role")

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS roles (
    name TEXT PRIMARY KEY, oid INTEGER NOT NULL UNIQUE, superuser INTEGER NOT NULL,
    login INTEGER NOT NULL, inherit INTEGER NOT NULL, createrole INTEGER NOT NULL,
    createdb INTEGER NOT NULL, verifier TEXT, configured INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS role_members (
    role TEXT NOT NULL REFERENCES roles(name), member TEXT NOT NULL REFERENCES roles(name),
    PRIMARY KEY (role, member));
CREATE TABLE IF NOT EXISTS grants (
    kind TEXT NOT NULL, object_oid INTEGER NOT NULL, grantee TEXT NOT NULL, privilege TEXT NOT NULL,
    grantor TEXT NOT NULL, PRIMARY KEY (kind, object_oid, grantee, privilege));
"""


@dataclass(frozen=True)
class RoleDef:
    name: str
    oid: int
    superuser: bool = False
    login: bool = False
    inherit: bool = True
    createrole: bool = False
    createdb: bool = False
    verifier: str | None = None  # "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>"
    configured: bool = False


@dataclass
class _Snapshot:
    version: int
    roles: dict[str, RoleDef]
    members: dict[str, set[str]]  # member -> roles it was granted directly
    grants: dict[tuple[str, int], dict[str, dict[str, str]]]  # (kind, oid) -> grantee -> privilege -> grantor


def _quote(name: str) -> str:
    return name if name.isidentifier() and name == name.lower() else '"' + name.replace('"', '""') + '"'


class Roles:
    """The roles and grants of one catalog, and the privilege checks over them."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._conn = catalog._conn
        self._snap: _Snapshot | None = None
        self._guard = threading.Lock()
        with catalog.transaction():
            self._conn.create_tables(_SCHEMA_SQL)
            seeded = self._conn.execute("SELECT value FROM meta WHERE key = 'grants_seeded'").fetchone()
            if seeded is None:
                # PostgreSQL 15's defaults: PUBLIC may use (not create in) schema public and connect.
                self._conn.executemany("INSERT INTO grants VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", [
                    ("n", 2200, PUBLIC, "USAGE", ""), ("d", DATABASE_OID, PUBLIC, "CONNECT", ""),
                    ("d", DATABASE_OID, PUBLIC, "TEMPORARY", "")])
                self._conn.execute("INSERT INTO meta VALUES ('grants_seeded', '1')")

    # -- snapshot ---------------------------------------------------------------------------------

    def _snapshot(self) -> _Snapshot:
        version = self._catalog.version
        snap = self._snap
        if snap is not None and snap.version == version:
            return snap
        with self._catalog._lock:
            rows = self._conn.execute(
                "SELECT name, oid, superuser, login, inherit, createrole, createdb, verifier, configured "
                "FROM roles").fetchall()
            members = self._conn.execute("SELECT role, member FROM role_members").fetchall()
            # in grant order: aclitem[] lists grantees in the order they were first granted
            grants = self._conn.execute(
                "SELECT kind, object_oid, grantee, privilege, grantor FROM grants ORDER BY rowid").fetchall()
        roles = {r[0]: RoleDef(r[0], r[1], bool(r[2]), bool(r[3]), bool(r[4]), bool(r[5]), bool(r[6]), r[7],
                               bool(r[8])) for r in rows}
        member_map: dict[str, set[str]] = {}
        for role, member in members:
            member_map.setdefault(member, set()).add(role)
        grant_map: dict[tuple[str, int], dict[str, dict[str, str]]] = {}
        for kind, oid, grantee, priv, grantor in grants:
            grant_map.setdefault((kind, oid), {}).setdefault(grantee, {})[priv] = grantor
        snap = _Snapshot(version, roles, member_map, grant_map)
        self._snap = snap
        return snap

    # -- roles ------------------------------------------------------------------------------------

    def get(self, name: str) -> RoleDef | None:
        return self._snapshot().roles.get(name)

    def list(self) -> list[RoleDef]:
        return sorted(self._snapshot().roles.values(), key=lambda r: r.oid)

    def memberships(self) -> list[tuple[str, str]]:
        """(role, member) pairs of ``GRANT role TO member``."""
        snap = self._snapshot()
        return sorted((role, member) for member, rs in snap.members.items() for role in rs)

    def create(self, role: RoleDef) -> RoleDef:
        name = role.name
        if not name:
            raise SqlError("42601", "zero-length delimited identifier")
        if name in RESERVED_ROLE_NAMES or name.startswith("pg_"):
            raise SqlError("42939", f'role name "{name}" is reserved',
                           detail='Role names starting with "pg_" are reserved.' if name.startswith("pg_") else None)
        with self._catalog.transaction():
            if self.get(name) is not None:
                raise SqlError("42710", f'role "{name}" already exists')
            oid = self._catalog.next_oid()
            self._conn.execute("INSERT INTO roles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (name, oid, role.superuser, role.login, role.inherit, role.createrole,
                                role.createdb, role.verifier, role.configured))
            self._catalog._bump()
        return self.get(name) or role

    def alter(self, role: RoleDef) -> None:
        with self._catalog.transaction():
            self._conn.execute(
                "UPDATE roles SET superuser=?, login=?, inherit=?, createrole=?, createdb=?, verifier=? "
                "WHERE name=?", (role.superuser, role.login, role.inherit, role.createrole, role.createdb,
                                 role.verifier, role.name))
            self._catalog._bump()

    def drop(self, name: str, owned: list[str]) -> None:
        """Drop a role that owns nothing (``owned``: descriptions of what it still owns)."""
        role = self.get(name)
        if role is None:
            raise SqlError("42704", f'role "{name}" does not exist')
        if role.configured:
            raise SqlError("55006", f'role "{name}" is defined in the configuration file',
                           hint="Remove it from [[users]] in the configuration and restart the gateway.")
        if owned:
            raise SqlError("2BP01", f'role "{name}" cannot be dropped because some objects depend on it',
                           detail="\n".join(owned))
        with self._catalog.transaction():
            self._conn.execute("DELETE FROM role_members WHERE role=? OR member=?", (name, name))
            self._conn.execute("DELETE FROM grants WHERE grantee=?", (name,))
            self._conn.execute("DELETE FROM roles WHERE name=?", (name,))
            self._catalog._bump()

    def sync_configured(self, users: list[tuple[str, bool]]) -> None:
        """Make each configured (name, superuser) user a LOGIN role; roles no longer configured
        stay (they may own objects) but lose the ``configured`` mark."""
        with self._catalog.transaction():
            self._conn.execute("UPDATE roles SET configured = 0")
            for name, superuser in users:
                if self.get(name) is None:
                    self._conn.execute("INSERT INTO roles VALUES (?, ?, ?, 1, 1, ?, ?, NULL, 1)",
                                       (name, self._catalog.next_oid(), superuser, superuser, superuser))
                else:
                    self._conn.execute("UPDATE roles SET superuser=?, login=1, configured=1 WHERE name=?",
                                       (superuser, name))
            self._catalog._bump()

    def grant_role(self, role: str, member: str) -> str | None:
        """``GRANT role TO member``; returns a NOTICE when it was already granted."""
        for n in (role, member):
            if self.get(n) is None:
                raise SqlError("42704", f'role "{n}" does not exist')
        if role == member or member in self.closure(self._snapshot(), role, inherit_only=False):
            raise SqlError("0LP01", f'role "{member}" is a member of role "{role}"' if role != member
                           else f'role "{role}" cannot be a member of itself')
        with self._catalog.transaction():
            cur = self._conn.execute("INSERT INTO role_members VALUES (?, ?) ON CONFLICT DO NOTHING", (role, member))
            self._catalog._bump()
        return None if cur.rowcount else f'role "{member}" is already a member of role "{role}"'

    def revoke_role(self, role: str, member: str) -> str | None:
        with self._catalog.transaction():
            cur = self._conn.execute("DELETE FROM role_members WHERE role=? AND member=?", (role, member))
            self._catalog._bump()
        return None if cur.rowcount else f'role "{member}" has not been granted membership in role "{role}"'

    # -- grants -----------------------------------------------------------------------------------

    def grant(self, kind: str, oid: int, grantees: list[str], privileges: list[str], grantor: str) -> None:
        with self._catalog.transaction():
            for g in grantees:
                for p in privileges:
                    self._conn.execute("INSERT INTO grants VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", (kind, oid, g, p, grantor))
            self._catalog._bump()

    def revoke(self, kind: str, oid: int, grantees: list[str], privileges: list[str]) -> None:
        with self._catalog.transaction():
            for g in grantees:
                for p in privileges:
                    self._conn.execute("DELETE FROM grants WHERE kind=? AND object_oid=? AND grantee=? AND privilege=?",
                                       (kind, oid, g, p))
            self._catalog._bump()

    def forget_object(self, kind: str, oid: int) -> None:
        """Drop an object's grants (the object was dropped)."""
        with self._catalog.transaction():
            self._conn.execute("DELETE FROM grants WHERE kind=? AND object_oid=?", (kind, oid))

    def acl(self, kind: str, oid: int, owner: str | None) -> list[str] | None:
        """The object's aclitem[] as PostgreSQL prints it (``role=arwdDxt/grantor``), or None when
        only the defaults apply (as ``relacl`` is NULL in PostgreSQL)."""
        granted = self._snapshot().grants.get((kind, oid))
        if not granted:
            return None
        letters = PRIVILEGES[kind]
        owner_name = owner or ""
        items = []
        if owner_name:
            items.append(f"{_quote(owner_name)}={''.join(letters.values())}/{_quote(owner_name)}")
        for grantee, privs in granted.items():
            by_grantor: dict[str, str] = {}
            for p in letters:
                if p in privs:
                    by_grantor[privs[p]] = by_grantor.get(privs[p], "") + letters[p]
            for grantor, chars in by_grantor.items():
                items.append(f"{_quote(grantee) if grantee else ''}={chars}/{_quote(grantor or owner_name)}")
        return items

    def grants_on(self, kind: str, oid: int) -> dict[str, dict[str, str]]:
        return self._snapshot().grants.get((kind, oid), {})

    # -- checks -----------------------------------------------------------------------------------

    @staticmethod
    def closure(snap: _Snapshot, user: str, *, inherit_only: bool = True) -> set[str]:
        """``user`` and every role it is a member of, through roles that INHERIT."""
        seen = {user}
        todo = [user]
        while todo:
            r = todo.pop()
            role = snap.roles.get(r)
            if inherit_only and role is not None and not role.inherit:
                continue
            for parent in snap.members.get(r, ()):
                if parent not in seen:
                    seen.add(parent)
                    todo.append(parent)
        return seen

    def is_superuser(self, info: SessionInfo) -> bool:
        """A catalog role's current attribute; a trusted name that is no role keeps the gateway's flag."""
        if info.internal:
            return True
        role = self._snapshot().roles.get(info.user)
        return role.superuser if role is not None else info.superuser

    def is_member(self, info: SessionInfo, role: str | None) -> bool:
        """``info``'s user is ``role`` or inherits from it (or is a superuser)."""
        if self.is_superuser(info):
            return True
        if not role:
            return False
        return role in self.closure(self._snapshot(), info.user)

    def has(self, info: SessionInfo, kind: str, oid: int, owner: str | None, privilege: str) -> bool:
        if self.is_superuser(info):
            return True
        snap = self._snapshot()
        mine = self.closure(snap, info.user) | {PUBLIC}
        if owner and owner in mine:
            return True
        granted = snap.grants.get((kind, oid), {})
        return any(privilege in granted.get(g, ()) for g in mine)

    def check_table(self, info: SessionInfo, table: TableDef, *privileges: str) -> None:
        """42501 unless ``info``'s user holds every privilege on the relation and USAGE on its schema.
        A relation of :data:`PRIVATE_SCHEMA` can only be read, whoever asks."""
        if table.schema == PRIVATE_SCHEMA and any(p != "SELECT" for p in privileges) and not info.internal:
            raise SqlError("42501", f"permission denied for {'view' if table.kind == 'view' else 'table'} {table.name}")
        if self.is_superuser(info):
            return
        self.check_schema(info, table.schema, "USAGE")
        for p in privileges:
            if not self.has(info, "r", table.oid, table.owner, p):
                what = "view" if table.kind == "view" else "table"
                raise SqlError("42501", f"permission denied for {what} {table.name}")

    def check_schema(self, info: SessionInfo, schema: str | SchemaDef, privilege: str) -> None:
        name = schema if isinstance(schema, str) else schema.name
        if name == PRIVATE_SCHEMA and privilege != "USAGE" and not info.internal:
            raise SqlError("42501", f"permission denied for schema {name}")
        if self.is_superuser(info):
            return
        s = self._catalog.get_schema(schema) if isinstance(schema, str) else schema
        if s is None:
            return  # the caller reports the missing schema
        if not self.has(info, "n", s.oid, s.owner, privilege):
            raise SqlError("42501", f"permission denied for schema {s.name}")

    def check_database(self, info: SessionInfo, privilege: str) -> None:
        if not self.has(info, "d", DATABASE_OID, None, privilege):
            raise SqlError("42501", f"permission denied for database {self._catalog.database}")

    def check_owner(self, info: SessionInfo, kind: str, name: str, owner: str | None, *,
                    schema: str | None = None) -> None:
        """42501 "must be owner of ..." unless the user is the owner (or a member of it) or a superuser.
        ``schema``: the schema of the object (a relation); :data:`PRIVATE_SCHEMA` and its relations
        are nobody's to change (42501 "permission denied for ...")."""
        if (schema == PRIVATE_SCHEMA or (kind == "schema" and name == PRIVATE_SCHEMA)) and not info.internal:
            raise SqlError("42501", f"permission denied for {kind} {name}")
        if self.is_member(info, owner):
            return
        raise SqlError("42501", f"must be owner of {kind} {name}")


# -- SCRAM verifiers (PostgreSQL's rolpassword form) ------------------------------------------------

SCRAM_ITERATIONS = 4096


def make_verifier(password: str) -> str:
    """``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`` for ``password``; a text that
    already is such a verifier is kept (as PostgreSQL does for pre-hashed passwords)."""
    import base64

    import scramp

    if parse_verifier(password) is not None:
        return password
    salt, stored, server, iterations = scramp.ScramMechanism("SCRAM-SHA-256").make_auth_info(
        password, iteration_count=SCRAM_ITERATIONS)
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored)}:{b64(server)}"


def parse_verifier(text: str | None) -> tuple[bytes, bytes, bytes, int] | None:
    """(salt, stored key, server key, iterations) of a verifier, or None if ``text`` is none."""
    import base64
    import binascii

    if not text or not text.startswith("SCRAM-SHA-256$"):
        return None
    try:
        head, keys = text[len("SCRAM-SHA-256$"):].split("$", 1)
        iterations, salt = head.split(":", 1)
        stored, server = keys.split(":", 1)
        return (base64.b64decode(salt, validate=True), base64.b64decode(stored, validate=True),
                base64.b64decode(server, validate=True), int(iterations))
    except (ValueError, binascii.Error):
        return None
