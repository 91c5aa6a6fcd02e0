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


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 5433
    data_dir: Path = Path("./tidegate-data")
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Configured users (TOML ``[[users]] name=.., password=..`` or TIDEGATE_USERS="u:p,u2:p2").
    # With none, loopback connections are trusted and non-loopback binding is refused.
    users: list[UserConfig] = field(default_factory=list)
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    max_message_bytes: int = 64 * 1024 * 1024
    max_connections: int = 1000
    log_level: str = "INFO"
    # Background maintenance of Delta tables: a compaction check every maintenance_interval_s
    # (cheap: the cached log's file list), a vacuum every vacuum_interval_s.
    compact_min_files: int = 16
    vacuum_retention_hours: float = 168.0
    maintenance_interval_s: float = 5.0
    vacuum_interval_s: float = 600.0
    # Flows: how often a flow without EVAL INTERVAL runs, and how many run at once.
    flow_default_interval_s: float = 5.0
    flow_workers: int = 2

    @property
    def warehouse_dir(self) -> Path:
        return self.data_dir / "warehouse"

    @property
    def catalog_path(self) -> Path:
        return self.data_dir / "catalog.sqlite"


_PATH_FIELDS = {"data_dir", "tls_cert", "tls_key"}


def _coerce(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _PATH_FIELDS:
        return Path(value)
    if name in ("port", "max_message_bytes", "max_connections", "compact_min_files", "flow_workers"):
        return int(value)
    if name in ("vacuum_retention_hours", "maintenance_interval_s", "vacuum_interval_s", "flow_default_interval_s"):
        return float(value)
    if name == "users":
        if isinstance(value, str):
            pairs = [p.split(":", 1) for p in value.split(",") if p]
            return [UserConfig(n, pw) for n, pw in pairs]
        return [UserConfig(**u) if isinstance(u, dict) else u for u in value]
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
            if key in known:
                setattr(settings, key, _coerce(key, value))
    return settings
