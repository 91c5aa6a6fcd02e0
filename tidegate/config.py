"""Gateway settings: built-in defaults < TOML file < TIDEGATE_* environment < command-line flags."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass
class UserConfig:
    name: str
    password: str
    superuser: bool = False  # ``superuser = true`` on a [[users]] entry; others are ordinary roles


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 5433
    data_dir: Path = Path("./tidegate-data")
    # Where the catalog (tables, views, roles, flows, refresh state, jobs) is kept: empty for the
    # embedded SQLite file under data_dir, or a postgresql:// URL (catalog/db.py).
    catalog: str = ""
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Configured users (TOML ``[[users]] name=.., password=..`` or TIDEGATE_USERS="u:p,u2:p2").
    # With none, loopback connections are trusted and non-loopback binding is refused.
    users: list[UserConfig] = field(default_factory=list)
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    max_message_bytes: int = 64 * 1024 * 1024  # after authentication; before it, gateway.auth.MAX_AUTH_MESSAGE
    # Every open client socket counts, including ones still in startup or authentication.
    max_connections: int = 1000
    # Seconds a client has to finish startup (SSL negotiation, StartupMessage) and authentication,
    # PostgreSQL's authentication_timeout; 0 or less: no limit.
    authentication_timeout: float = 60.0
    log_level: str = "INFO"
    # Background maintenance of Delta tables: a compaction check every maintenance_interval_s
    # (cheap: the cached log's file list), a vacuum every vacuum_interval_s.
    compact_min_files: int = 16
    # A compaction whose small files hold more bytes than this runs on Spark (Delta Lake's OPTIMIZE,
    # the files written by the executors) instead of delta-rs in the gateway's process.
    spark_compact_bytes: int = 8 * 1024 * 1024
    vacuum_retention_hours: float = 168.0
    maintenance_interval_s: float = 5.0
    vacuum_interval_s: float = 600.0
    # ttl clean-up: files wholly expired go on every pass; a file straddling the horizon is
    # rewritten without its expired rows at most this often per table.
    ttl_rewrite_interval_s: float = 600.0
    # An 'instant' table's rows stay stored (never visible) this long for its streaming flows.
    instant_retention_s: float = 3600.0
    # Flows: how often a flow without EVAL INTERVAL runs, and how many run at once.
    flow_default_interval_s: float = 5.0
    flow_workers: int = 2
    # Directories refreshable tables with connector = 'file' may read (TOML list, or
    # TIDEGATE_FILE_CONNECTOR_ROOTS="dir1,dir2" / "dir1:dir2"). Empty: the file connector is refused.
    # The data dir and the config file are never readable, even under a root.
    file_connector_roots: list[str] = field(default_factory=list)
    # The events table tidegate_private.events (engine/events.py): its retention (the table's ttl
    # option), whether anything is recorded, and the recorder's writer: a batch is committed every
    # events_flush_interval_s or every events_batch_size events; at most events_queue_size events
    # wait (more are dropped and counted); a failed commit is retried events_commit_retries times
    # with exponential backoff before its events are dropped and counted.
    events_enabled: bool = True
    events_ttl: str = "90 days"
    events_flush_interval_s: float = 1.0
    events_batch_size: int = 1000
    events_queue_size: int = 10000
    events_commit_retries: int = 5
    # Memory for the interactive path's decoded data files (engine/storage.py's column cache),
    # MiB; their key indexes get a quarter of it more. Lookups of a table that fits answer from
    # memory, others read files.
    interactive_cache_mb: int = 1024
    # Jobs (SUBMIT JOB, engine/jobs.py): how many run at once, how long a finished job's result
    # is kept for FETCH JOB, and the lease a running job is held by (renewed every third of it).
    max_running_jobs: int = 2
    job_result_ttl: str = "1 day"
    job_lease_s: float = 12.0
    # The TOML file these settings were read from (set by load_settings, never by a layer).
    config_file: Path | None = None

    @property
    def warehouse_dir(self) -> Path:
        return self.data_dir / "warehouse"

    @property
    def catalog_path(self) -> Path:
        """The embedded catalog's SQLite file (used when ``catalog`` is empty)."""
        return self.data_dir / "catalog.sqlite"

    @property
    def catalog_target(self) -> str:
        """What the catalog stores open: the ``catalog`` URL, else the embedded SQLite file."""
        return self.catalog or str(self.catalog_path)


_PATH_FIELDS = {"data_dir", "tls_cert", "tls_key"}


def _coerce(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _PATH_FIELDS:
        return Path(value)
    if name in ("port", "max_message_bytes", "max_connections", "compact_min_files", "spark_compact_bytes", "flow_workers",
                "events_batch_size", "events_queue_size", "events_commit_retries", "max_running_jobs"):
        return int(value)
    if name in ("vacuum_retention_hours", "maintenance_interval_s", "vacuum_interval_s", "flow_default_interval_s",
                "authentication_timeout", "ttl_rewrite_interval_s", "instant_retention_s", "events_flush_interval_s",
                "job_lease_s"):
        return float(value)
    if name == "events_enabled":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in ("true", "false", "on", "off", "1", "0", "yes", "no"):
            raise ValueError(f"events_enabled must be true or false, got {value!r}")
        return text in ("true", "on", "1", "yes")
    if name == "catalog":
        text = str(value).strip()
        if text and not text.startswith(("postgresql://", "postgres://")):
            raise ValueError("catalog must be a postgresql:// URL, or empty for the embedded catalog under data_dir")
        return text
    if name in ("events_ttl", "job_result_ttl"):
        return str(value)
    if name == "host" and not isinstance(value, str):
        # asyncio binds every address of a list; one string keeps the loopback check meaningful.
        raise ValueError(f"host must be one address, got {value!r}")
    if name == "users":
        if isinstance(value, str):
            pairs = [p.split(":", 1) for p in value.split(",") if p]
            return [UserConfig(n, pw) for n, pw in pairs]
        return [UserConfig(**u) if isinstance(u, dict) else u for u in value]
    if name == "file_connector_roots":
        if isinstance(value, str):
            value = value.replace(os.pathsep, ",").split(",")
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, os.PathLike)) for v in value):
            raise ValueError("file_connector_roots must be a list of directories")
        return [str(v).strip() for v in value if str(v).strip()]
    if name == "spark_conf" and isinstance(value, str):
        return dict(kv.split("=", 1) for kv in value.split(",") if kv)
    return value


def load_settings(config_file: str | Path | None = None, overrides: dict[str, Any] | None = None,
                  environ: dict[str, str] | None = None) -> Settings:
    """Merge the sources in precedence order; ``overrides`` are command-line values (None = unset)."""
    env = os.environ if environ is None else environ
    settings = Settings()
    known = {f.name for f in fields(Settings)}
    config_file = config_file or env.get("TIDEGATE_CONFIG")
    layers: list[dict[str, Any]] = []
    if config_file:
        with open(config_file, "rb") as fh:
            doc = tomllib.load(fh)
        layers.append({k.replace("-", "_"): v for k, v in doc.items()})
    layers.append({k[len("TIDEGATE_"):].lower(): v for k, v in env.items() if k.startswith("TIDEGATE_")})
    layers.append({k: v for k, v in (overrides or {}).items() if v is not None})
    for layer in layers:
        for key, value in layer.items():
            if key in known and key != "config_file":
                setattr(settings, key, _coerce(key, value))
    settings.config_file = Path(config_file).resolve() if config_file else None
    return settings
