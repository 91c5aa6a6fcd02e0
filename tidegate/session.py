"""The per-connection facts a backend may need to evaluate a statement.

The gateway owns the session (it parses SET/SHOW and tracks the transaction); backends receive
this read-only view with every call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class SessionInfo:
    user: str = "tidegate"
    database: str = "tidegate"
    application_name: str = ""
    backend_pid: int = 0
    # Every GUC currently set in the session, lower-case names -> PostgreSQL text values
    # (e.g. "search_path" -> '"$user", public', "timezone" -> "UTC", "datestyle" -> "ISO, MDY").
    settings: dict[str, str] = field(default_factory=dict)
    in_transaction: bool = False
    # Whether the session may act as a superuser when its user is no catalog role (a trusted
    # loopback name); for a catalog role its current SUPERUSER attribute decides
    # (catalog.roles.Roles.is_superuser). Set by the gateway at connection start.
    superuser: bool = True
    # Work the server does on its own behalf (flow runs, scheduled refreshes): no privilege checks.
    internal: bool = False
    # Sends a NOTICE to the client while the statement still runs (thread-safe; None outside the
    # gateway). Long statements (REFRESH TABLE ... WAIT) report progress through it.
    notice: Callable[[str], None] | None = field(default=None, repr=False, compare=False)

    @property
    def search_path(self) -> list[str]:
        """Schemas named by search_path, unquoted, with "$user" expanded and kept only if it is a name."""
        raw = self.settings.get("search_path", '"$user", public')
        out: list[str] = []
        for part in raw.split(","):
            name = part.strip()
            if name.startswith('"') and name.endswith('"'):
                name = name[1:-1]
            else:
                name = name.lower()
            if name == "$user":
                name = self.user
            if name == "pg_temp":  # the alias of this session's temporary schema
                name = self.temp_schema
            if name and name not in out:
                out.append(name)
        # As in PostgreSQL, the session's temporary schema is searched first for relations unless
        # search_path names pg_temp elsewhere (it exists only once a temporary table was created).
        if self.temp_schema not in out:
            out.insert(0, self.temp_schema)
        return out

    @property
    def temp_schema(self) -> str:
        """This session's temporary schema (``pg_temp_<backend pid>``)."""
        return f"pg_temp_{self.backend_pid}"

    @property
    def timezone(self) -> str:
        return self.settings.get("timezone", "UTC")
