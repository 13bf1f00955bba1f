"""Settings: the only code in ragtrim that reads the environment.

Precedence, highest first: CLI flags, `RAGTRIM_*` environment variables (nested
fields with `__`, e.g. `RAGTRIM_TIMEOUTS__CONNECT=1`), the optional YAML file,
then the defaults below. Components receive their own sub-settings as arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict


class TimeoutSettings(BaseModel):
    connect: float = Field(2.0, gt=0, description="Seconds to open a connection to a backend.")
    first_byte: float = Field(
        120.0, gt=0, description="Seconds until the backend's response headers arrive."
    )
    idle: float = Field(60.0, gt=0, description="Seconds allowed between two streamed chunks.")
    total: float = Field(900.0, gt=0, description="Seconds for a whole request, stream included.")


class HealthSettings(BaseModel):
    interval: float = Field(5.0, gt=0, description="Seconds between backend health checks.")
    timeout: float = Field(2.0, gt=0, description="Seconds a health check may take.")


class Settings(BaseSettings):
    """Every option of `ragtrim serve`; each field is also a CLI flag."""

    model_config = SettingsConfigDict(
        env_prefix="RAGTRIM_", env_nested_delimiter="__", extra="forbid"
    )

    host: str = Field("127.0.0.1", description="Address to listen on.")
    port: int = Field(8080, ge=0, le=65535, description="Port to listen on.")
    backends: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["http://127.0.0.1:8000"],
        description="vLLM base URLs, comma-separated (without /v1).",
    )
    timeouts: TimeoutSettings = Field(default_factory=TimeoutSettings)
    health: HealthSettings = Field(default_factory=HealthSettings)
    max_body_bytes: int = Field(
        16 * 1024 * 1024, gt=0, description="Largest request body accepted (413 above)."
    )
    redis_url: str = Field("", description="Redis URL for shared state; empty = in-process store.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Log level."
    )

    @field_validator("backends", mode="before")
    @classmethod
    def _split_backends(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part for part in value.replace(" ", ",").split(",") if part]
        return [url.rstrip("/") for url in value]


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_settings(
    config_file: str | Path | None = None, overrides: dict[str, Any] | None = None
) -> Settings:
    """Defaults ← YAML file ← environment ← overrides (CLI flags)."""
    data: dict[str, Any] = {}
    if config_file:
        data = yaml.safe_load(Path(config_file).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{config_file}: top level must be a mapping")
    data = _deep_merge(data, EnvSettingsSource(Settings)())
    data = _deep_merge(data, overrides or {})
    return Settings.model_validate(data)
