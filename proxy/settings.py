"""Settings: the only code in ragtrim that reads the environment.

Precedence, highest first: CLI flags, `RAGTRIM_*` environment variables (nested
fields with `__`, e.g. `RAGTRIM_TIMEOUTS__CONNECT_S=1`), the optional YAML file,
then the defaults below. Components receive their own sub-settings as arguments.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict

from proxy.config.compression import (  # noqa: F401 - re-exported: `from proxy.settings import X`
    CanonicalSettings,
    CompressionLimitSettings,
    CompressionSettings,
)
from proxy.config.edge import (  # noqa: F401 - re-exported: `from proxy.settings import X`
    AdmissionSettings,
    DiscoverySettings,
    HealthSettings,
    HttpSettings,
    RequestLimitSettings,
    TimeoutSettings,
    UpstreamSettings,
)
from proxy.config.operations import (  # noqa: F401 - re-exported: `from proxy.settings import X`
    AccessLogSettings,
    AccountingSettings,
    QuotaSettings,
    TelemetrySettings,
    TenantQuota,
)
from proxy.config.redis import RedisSettings
from proxy.config.removed import reject_removed
from proxy.config.routing import (  # noqa: F401 - re-exported: `from proxy.settings import X`
    FilterSpec,
    KvEndpoint,
    KvEventsSettings,
    PickerSettings,
    RoutingSettings,
    WeightedScorer,
)
from proxy.config.section import Section
from proxy.config.tenancy import (  # noqa: F401 - re-exported: `from proxy.settings import X`
    MIN_SALT_SECRET,
    StoreSettings,
    TenancySettings,
    WarmupSettings,
)


class TracingSettings(Section):
    """OpenTelemetry traces over OTLP/HTTP (the `otel` extra: proxy/telemetry/tracing.py).
    The standard OTEL_* variables are read here, with the rest of the configuration."""

    enabled: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Export traces; auto = on when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or "
        "OTEL_EXPORTER_OTLP_ENDPOINT is set (and OTEL_SDK_DISABLED is not true).",
    )
    endpoint: str = Field(
        "",
        description="OTLP/HTTP traces URL; empty = OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else "
        "OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, else http://127.0.0.1:4318/v1/traces.",
    )
    service_name: str = Field("", description="service.name; empty = OTEL_SERVICE_NAME or ragtrim.")
    sample_ratio: float = Field(
        1.0, ge=0, le=1, description="Share of new traces kept (a client's sampled flag wins)."
    )
    _from_env: bool = PrivateAttr(False)

    @model_validator(mode="after")
    def _otel_env(self) -> TracingSettings:
        env = os.environ
        traces, base = (
            env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            env.get("OTEL_EXPORTER_OTLP_ENDPOINT"),
        )
        disabled = env.get("OTEL_SDK_DISABLED", "").lower() == "true"
        self._from_env = bool(traces or base) and not disabled
        if not self.endpoint:
            self.endpoint = traces or (base.rstrip("/") + "/v1/traces" if base else "")
            self.endpoint = self.endpoint or "http://127.0.0.1:4318/v1/traces"
        self.service_name = self.service_name or env.get("OTEL_SERVICE_NAME") or "ragtrim"
        return self

    @property
    def on(self) -> bool:
        return self.enabled == "on" or (self.enabled == "auto" and self._from_env)


class Settings(BaseSettings):
    """Every option of `ragtrim serve`; each field is also a CLI flag."""

    model_config = SettingsConfigDict(
        env_prefix="RAGTRIM_", env_nested_delimiter="__", extra="forbid"
    )

    host: str = Field("127.0.0.1", description="Address to listen on.")
    port: int = Field(8080, ge=0, le=65535, description="Port to listen on.")
    workers: int = Field(
        1, ge=1, le=64, description="Worker processes, each with its own SO_REUSEPORT listener."
    )
    backends: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["http://127.0.0.1:8000"],
        description="vLLM base URLs, comma-separated (without /v1); dns+http://name:port "
        "is resolved to one backend per address (a headless Service) every discovery interval.",
    )
    timeouts: TimeoutSettings = Field(default_factory=TimeoutSettings)
    health: HealthSettings = Field(default_factory=HealthSettings)
    admission: AdmissionSettings = Field(default_factory=AdmissionSettings)
    upstream: UpstreamSettings = Field(default_factory=UpstreamSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    requests: RequestLimitSettings = Field(default_factory=RequestLimitSettings)
    discovery: DiscoverySettings = Field(default_factory=DiscoverySettings)
    max_body_bytes: int = Field(
        16 * 1024 * 1024, gt=0, description="Largest request body accepted (413 above)."
    )
    redis: RedisSettings = Field(default_factory=RedisSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    compression: CompressionSettings = Field(default_factory=CompressionSettings)
    canonical: CanonicalSettings = Field(default_factory=CanonicalSettings)
    routing: RoutingSettings = Field(default_factory=RoutingSettings)
    tenancy: TenancySettings = Field(default_factory=TenancySettings)
    warmup: WarmupSettings = Field(default_factory=WarmupSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    access_log: AccessLogSettings = Field(default_factory=AccessLogSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Log level."
    )
    log_prompts: bool = Field(
        False,
        description="Let logs carry text from requests (exception messages of failed stages "
        "and compressions can quote prompts); off: only error types and where they arose.",
    )

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: Any) -> Any:
        return reject_removed(data)

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
