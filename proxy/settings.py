"""Settings: the only code in ragtrim that reads the environment.

Precedence, highest first: CLI flags, `RAGTRIM_*` environment variables (nested
fields with `__`, e.g. `RAGTRIM_TIMEOUTS__CONNECT=1`), the optional YAML file,
then the defaults below. Components receive their own sub-settings as arguments.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict

MIN_SALT_SECRET = 16


class TimeoutSettings(BaseModel):
    connect: float = Field(2.0, gt=0, description="Seconds to open a connection to a backend.")
    first_byte: float = Field(
        120.0, gt=0, description="Seconds until the backend's response headers arrive."
    )
    idle: float = Field(60.0, gt=0, description="Seconds allowed between two streamed chunks.")
    total: float = Field(900.0, gt=0, description="Seconds for a whole request, stream included.")
    drain: float = Field(
        30.0, ge=0, description="Seconds open requests may take to finish on shutdown (SIGTERM)."
    )


class HealthSettings(BaseModel):
    interval: float = Field(5.0, gt=0, description="Seconds between backend health checks.")
    timeout: float = Field(2.0, gt=0, description="Seconds a health check may take.")
    unhealthy_after: int = Field(
        3,
        ge=1,
        description="Consecutive failed checks or timeouts before a backend is ejected "
        "(a refused connection ejects at once).",
    )
    panic: bool = Field(
        True, description="With no healthy backend, route to every known one rather than refuse."
    )


class UpstreamSettings(BaseModel):
    """Limits on what a backend may send back (proxy/upstream/answer.py, proxy/sse.py)."""

    max_response_bytes: int = Field(
        64 << 20,
        ge=1024,
        description="Largest non-streamed backend body relayed (bytes); above it: 502.",
    )
    max_sse_event_bytes: int = Field(
        4 << 20,
        ge=1024,
        description="Largest SSE event held while looking for its end (bytes); above it the "
        "stream ends with an error event.",
    )


class LimitSettings(BaseModel):
    max_in_flight: int = Field(
        0, ge=0, description="Requests in flight per worker before new ones get 429 (0 = no limit)."
    )
    max_in_flight_per_backend: int = Field(
        0,
        ge=0,
        description="Requests in flight per backend before it takes no more (0 = no limit).",
    )
    retry_after_s: int = Field(1, ge=0, description="Retry-After sent with an overload 429.")


class DiscoverySettings(BaseModel):
    interval: float = Field(
        5.0, gt=0, description="Seconds between DNS look-ups of dns+http:// backends."
    )
    timeout: float = Field(2.0, gt=0, description="Seconds a DNS look-up may take.")
    nameserver: str = Field(
        "",
        description="DNS server (host or host:port) for dns+http:// backends; empty = the "
        "system resolver (getaddrinfo).",
    )


class CompressionLimitSettings(BaseModel):
    """Bounds on the work one request's context can cause (issue 23): every step that
    grows with the context (locating documents, segmentation, patterns, protected spans,
    the compressor) is linear, and these caps bound its size. Documents named in the
    request's `ragtrim` field or sent to /v1/compress beyond them are refused (400 too
    many, 413 too long); a context found by a recogniser beyond them is forwarded
    uncompressed (`x-ragtrim-decision: skip:limits`)."""

    max_documents: int = Field(
        1024,
        ge=1,
        description="Most context documents per request (a template's context counts one per "
        "blank-line-separated piece).",
    )
    max_document_chars: int = Field(
        262_144, ge=1, description="Most characters in one context document."
    )
    max_request_chars: int = Field(
        1_048_576, ge=1, description="Most characters of context documents per request, in all."
    )
    pattern_timeout_ms: float = Field(
        50.0, gt=0, description="Time limit of the operator `patterns` on one request."
    )
    offload_bytes: int = Field(
        65_536,
        ge=0,
        description="Request bodies larger than this (bytes) are segmented in a worker thread "
        "(smaller ones on the event loop, where a thread hop would cost more than the work).",
    )
    ingest_concurrency: int = Field(
        2, ge=1, description="/v1/compress requests in flight per tenant (429 beyond)."
    )


class CompressionSettings(BaseModel):
    enabled: bool = Field(True, description="Find and compress retrieved context.")
    compressor: str = Field(
        "fast_extractive",
        description="fast_extractive | extractive | llmlingua2 | longllmlingua | identity "
        "(fast_extractive: BM25 + static MiniLM embeddings, no model forward, ~10 ms per 1k "
        "tokens cold on one CPU thread; extractive runs all-MiniLM-L6-v2).",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto",
        description="Where the torch compressors (extractive, llmlingua2, longllmlingua) run; "
        "auto = cuda when torch sees a GPU. Passed to the compressor with its options.",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Constructor options of the compressor (JSON/YAML)."
    )
    rate: float = Field(0.5, gt=0, le=1, description="Share of context tokens kept by default.")
    policy: Literal["auto", "always", "never"] = Field(
        "auto", description="auto: compress only when predicted to lower TTFT."
    )
    min_context_tokens: int = Field(
        200, ge=0, description="Contexts shorter than this are never compressed."
    )
    max_added_ms: float = Field(
        2500.0, ge=0, description="Most compression time the cost gate may add to a request."
    )
    timeout: float = Field(5.0, gt=0, description="Seconds a compression may take (fail open).")
    workers: int = Field(1, ge=1, description="Compression worker threads.")
    torch_threads: int = Field(
        1,
        ge=0,
        description="torch intra-op threads for compression (0 = torch's default); "
        "1 leaves the other cores to the request path and a co-located vLLM.",
    )
    tokenizer: str = Field(
        "",
        description="Tokenizer dir of the target model for token counts; empty = the "
        "backend model's own dir when local, else an approximation.",
    )
    patterns: list[str] = Field(
        default_factory=list,
        description="Regexes with a named group `context` (and optional `question`).",
    )
    memo_ttl: float = Field(7 * 24 * 3600, gt=0, description="Seconds a compressed chunk is kept.")
    feature_cache_bytes: int = Field(
        256 << 20,
        ge=0,
        description="In-process byte cap of the per-chunk feature cache (question-independent "
        "compressor features, also kept in the shared store for memo_ttl); 0 = off.",
    )
    prefill_metrics: bool = Field(
        True,
        description="Learn each backend's prefill cost from its vLLM /metrics after responses "
        "(non-streamed traffic gives no TTFT).",
    )
    prefill_scrape_interval: float = Field(
        0.5, gt=0, description="Fewest seconds between two /metrics reads of one backend."
    )
    limits: CompressionLimitSettings = Field(default_factory=CompressionLimitSettings)


class CanonicalSettings(BaseModel):
    normalize_newlines: bool = Field(
        False, description="CRLF/CR to LF in the static prefix (opt-in: changes client bytes)."
    )
    strip_trailing_whitespace: bool = Field(
        False, description="Strip trailing spaces per line in the static prefix (opt-in)."
    )
    sort_tools: bool = Field(True, description="Serialise tool definitions deterministically.")
    move_volatile: bool = Field(
        False, description="Move dates, times and UUIDs out of the static prefix (opt-in)."
    )
    extra_volatile: list[str] = Field(
        default_factory=list, description="More regexes of volatile text to move."
    )


class WeightedScorer(BaseModel):
    name: str
    weight: float = Field(1.0, ge=0)


class KvEndpoint(BaseModel):
    pub: str = Field(description="The backend's KV-event PUB endpoint, tcp://host:port.")
    replay: str = Field("", description="Its replay ROUTER endpoint; empty = none.")


class KvEventsSettings(BaseModel):
    """vLLM's KV-cache events (issue 20): ragtrim subscribes to every backend and routes
    by the blocks each one holds (the `kv_cache` scorer). vLLM publishes them with
    `--kv-events-config '{"enable_kv_cache_events": true, "publisher": "zmq",
    "endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5558", "topic": ""}'`."""

    enabled: bool = Field(
        False, description="Subscribe to the backends' KV events; kv_cache becomes the default "
        "scorer.",
    )  # fmt: skip
    port: int = Field(5557, gt=0, lt=65536, description="KV-event PUB port on each backend's host.")
    replay_port: int = Field(
        5558, ge=0, lt=65536, description="Replay ROUTER port on each backend's host; 0 = none."
    )
    topic: str = Field("", description="The topic vLLM publishes on (kv-events-config topic).")
    endpoints: dict[str, KvEndpoint] = Field(
        default_factory=dict, description="Backend URL -> its own {pub, replay} endpoints."
    )
    max_blocks_per_backend: int = Field(
        262_144, gt=0, description="Index cap per backend (LRU beyond; ~400 bytes a block)."
    )
    replay_timeout: float = Field(2.0, gt=0, description="Seconds a replay answer may take.")
    interval: float = Field(
        1.0, gt=0, description="Seconds between reconciling subscribers with the backend pool."
    )


# With KV events a spill costs one miss, not a lost home: the index then knows where
# the spilled blocks are (proxy/routing/kv/scorer.py), so the bound may bite early.
KV_MIN_IN_FLIGHT = 2


class RoutingSettings(BaseModel):
    """The router composed in configuration, as the Gateway API Inference Extension's
    endpoint picker: filters, weighted scorers (each 0..1), a picker. Names are checked
    at start-up (proxy/routing/registry.py)."""

    policy: Literal["affinity", "roundrobin"] = Field(
        "affinity",
        description="Shorthand when `scorers` is empty: affinity = affinity (affinity_weight; "
        "kv_cache instead when kv_events.enabled) + load (load_weight), bounded picker; "
        "roundrobin = roundrobin, highest picker.",
    )
    filters: list[str] = Field(
        default_factory=lambda: ["healthy", "serves_model"],
        description="Filters of the candidates, in order (comma-separated).",
    )
    scorers: list[WeightedScorer] = Field(
        default_factory=list,
        description='[{"name": "affinity", "weight": 1}, ...] (JSON) or name:weight,...; '
        "empty = the policy's.",
    )
    picker: Literal["", "bounded", "highest"] = Field(
        "", description="bounded (bounded load) | highest (best total); empty = the policy's."
    )
    affinity_weight: float = Field(1.0, ge=0, description="policy affinity: affinity's weight.")
    load_weight: float = Field(0.3, ge=0, description="policy affinity: load's weight.")
    epsilon: float = Field(
        0.25, ge=0, description="Bounded load: no replica above (1+ε)× the mean in-flight."
    )
    bounded_min_in_flight: int = Field(
        8, ge=0, description="Bounded load: a replica with fewer in flight never spills "
        "(2 by default with kv_events.enabled).",
    )  # fmt: skip
    kv_events: KvEventsSettings = Field(default_factory=KvEventsSettings)

    @field_validator("filters", "scorers", mode="before")
    @classmethod
    def _split(cls, value: Any, info: ValidationInfo) -> Any:
        """Comma-separated (CLI, env); a scorer as `name:weight` (weight 1 when left out)."""
        if not isinstance(value, str):
            return value
        parts = [part for part in value.replace(" ", ",").split(",") if part]
        if info.field_name == "filters":
            return parts
        pairs = (part.partition(":") for part in parts)
        return [{"name": name, "weight": weight or 1.0} for name, _, weight in pairs]

    @model_validator(mode="after")
    def _apply_policy(self) -> RoutingSettings:
        """Resolve the shorthand once: `scorers` and `picker` are what the router uses."""
        rr = self.policy == "roundrobin"
        if not self.scorers:
            first = "kv_cache" if self.kv_events.enabled else "affinity"
            pairs = [("roundrobin", 1.0)] if rr else [(first, self.affinity_weight),
                                                       ("load", self.load_weight)]  # fmt: skip
            self.scorers = [WeightedScorer(name=n, weight=w) for n, w in pairs]
        self.picker = self.picker or ("highest" if rr else "bounded")
        if self.kv_events.enabled and "bounded_min_in_flight" not in self.model_fields_set:
            self.bounded_min_in_flight = KV_MIN_IN_FLIGHT
        return self


class TenancySettings(BaseModel):
    api_keys: dict[str, str] = Field(
        default_factory=dict, description="API key → tenant. When set, other keys get 401."
    )
    default_tenant: str = Field(
        "", description="Tenant of requests without tenancy; empty = cache_salt left as sent."
    )
    salt_secret: str = Field(
        "",
        description="Secret mixed into each tenant's cache_salt (makes salts unguessable); "
        "required (16+ characters) when api_keys are set: ragtrim refuses to start without it.",
    )
    backend_header: Literal["auto", "on", "off"] = Field(
        "auto",
        description="Send x-ragtrim-backend (the backend URL) on responses; auto = on "
        "without api_keys, off with them (a tenant has no need to learn backend URLs).",
    )

    @model_validator(mode="after")
    def _secret_with_keys(self) -> TenancySettings:
        """Without a secret, anyone who knows a tenant's name can compute its salt
        (issue 23): tenancy without one is a configuration error, not a default."""
        if self.api_keys and len(self.salt_secret) < MIN_SALT_SECRET:
            raise ValueError(
                f"tenancy.api_keys is set but tenancy.salt_secret is "
                f"{'empty' if not self.salt_secret else 'too short'}: set "
                f"RAGTRIM_TENANCY__SALT_SECRET (or --tenancy-salt-secret) to a random string "
                f"of {MIN_SALT_SECRET}+ characters, e.g. `openssl rand -hex 32`, and keep it "
                "stable across restarts and replicas (it keys every tenant's cache_salt)"
            )
        return self

    def shows_backend(self) -> bool:
        return self.backend_header == "on" or (self.backend_header == "auto" and not self.api_keys)


class HttpSettings(BaseModel):
    """Limits on the client side of the HTTP edge (proxy/http/protocol.py)."""

    max_headers: int = Field(
        100, ge=1, description="Most header fields in a request head (431 above)."
    )
    max_head_bytes: int = Field(
        64 * 1024,
        ge=1024,
        description="Most bytes in a request head, request line and headers (431 above).",
    )
    head_timeout: float = Field(
        10.0, gt=0, description="Seconds a client may take to send a whole request head (408)."
    )
    body_timeout: float = Field(
        30.0, gt=0, description="Seconds a client may take to send a whole request body (408)."
    )
    keep_alive_timeout: float = Field(
        5.0, gt=0, description="Seconds an idle keep-alive connection stays open."
    )
    max_connections: int = Field(
        0,
        ge=0,
        description="Open client connections per worker; more are answered 503 and closed "
        "(0 = half the open-file limit, RLIMIT_NOFILE, leaving the rest to backend "
        "connections).",
    )


class StoreSettings(BaseModel):
    """Bounded memory in the stores (issue 23: unique 1 MB system prompts grew RSS by
    380 MB and kept it; the Redis prefix hashes and hot set never expired)."""

    memory_bytes: int = Field(
        128 * 1024 * 1024,
        ge=1024,
        description="Bytes the in-process store may hold (keys, values, hashes, sorted sets; "
        "least recently used go first). Also the Redis store's outage fallback.",
    )
    prefix_ttl: float = Field(
        7 * 24 * 3600,
        gt=0,
        description="Seconds a prefix's statistics live after its last request.",
    )
    hot_prefixes: int = Field(
        1024, ge=1, description="Prefixes the hot set keeps (warm-up reads its top N)."
    )


class WarmupSettings(BaseModel):
    enabled: bool = Field(True, description="Replay hot prefixes to a replica turning healthy.")
    top_n: int = Field(16, ge=0, description="How many hot prefixes to replay.")
    concurrency: int = Field(2, ge=1, description="Replays in flight at once.")
    budget_s: float = Field(60.0, gt=0, description="Seconds a warm-up may take in all.")


class TracingSettings(BaseModel):
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


class AccessLogSettings(BaseModel):
    enabled: bool = Field(
        False, description="One JSON line per request on stderr (logger ragtrim.access)."
    )


class AccountingSettings(BaseModel):
    """Per-tenant usage counters in the shared store (proxy/accounting.py)."""

    enabled: bool = Field(
        True, description="Count requests and tokens per tenant, per day and month."
    )
    price_per_1k_prompt_tokens: float = Field(
        0.0, ge=0, description="Price of 1k prompt tokens, for the costs /v1/ragtrim/usage shows."
    )
    currency: str = Field("USD", description="Currency of the price (shown as is).")
    admin_key: str = Field(
        "", description="Bearer key that sees every tenant's usage; empty = none does."
    )


class TenantQuota(BaseModel):
    requests_per_minute: int | None = Field(None, ge=0, description="Requests per window.")
    tokens_per_minute: int | None = Field(None, ge=0, description="Prompt tokens per window.")


class QuotaSettings(BaseModel):
    """Per-tenant limits shared by every replica (proxy/ratelimit.py): a fixed window
    aligned to the Redis server's clock, one atomic Lua script per request."""

    requests_per_minute: int = Field(
        0, ge=0, description="Requests per tenant per window (0 = no limit)."
    )
    tokens_per_minute: int = Field(
        0,
        ge=0,
        description="Prompt tokens per tenant per window, counted after compression "
        "(0 = no limit).",
    )
    tenants: dict[str, TenantQuota] = Field(
        default_factory=dict,
        description='Per-tenant overrides: {"acme": {"requests_per_minute": 600}} (JSON/YAML).',
    )
    window_s: float = Field(
        60.0, gt=0, description="Window length in seconds (60: the limits are per minute)."
    )
    redis_timeout_s: float = Field(
        0.25,
        gt=0,
        description="Seconds the limit script may take on Redis (its own connections, apart "
        "from the cache's); slower counts as Redis down.",
    )
    redis_down: Literal["open", "local"] = Field(
        "open",
        description="Redis unreachable: open = admit (counted), local = each replica "
        "enforces the limits alone.",
    )

    def limits_of(self, tenant: str) -> tuple[int, int]:
        """(requests, tokens) per window for `tenant`; 0 = no limit."""
        own = self.tenants.get(tenant) or TenantQuota()
        rpm = (
            self.requests_per_minute if own.requests_per_minute is None else own.requests_per_minute
        )
        tpm = self.tokens_per_minute if own.tokens_per_minute is None else own.tokens_per_minute
        return rpm, tpm

    @property
    def active(self) -> bool:
        tenants = self.tenants.values()
        per_tenant = any(q.requests_per_minute or q.tokens_per_minute for q in tenants)
        return bool(self.requests_per_minute or self.tokens_per_minute or per_tenant)


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
    limits: LimitSettings = Field(default_factory=LimitSettings)
    upstream: UpstreamSettings = Field(default_factory=UpstreamSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    discovery: DiscoverySettings = Field(default_factory=DiscoverySettings)
    max_body_bytes: int = Field(
        16 * 1024 * 1024, gt=0, description="Largest request body accepted (413 above)."
    )
    redis_url: str = Field("", description="Redis URL for shared state; empty = in-process store.")
    store: StoreSettings = Field(default_factory=StoreSettings)
    compression: CompressionSettings = Field(default_factory=CompressionSettings)
    canonical: CanonicalSettings = Field(default_factory=CanonicalSettings)
    routing: RoutingSettings = Field(default_factory=RoutingSettings)
    tenancy: TenancySettings = Field(default_factory=TenancySettings)
    warmup: WarmupSettings = Field(default_factory=WarmupSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    access_log: AccessLogSettings = Field(default_factory=AccessLogSettings)
    accounting: AccountingSettings = Field(default_factory=AccountingSettings)
    quotas: QuotaSettings = Field(default_factory=QuotaSettings)
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Log level."
    )
    log_prompts: bool = Field(
        False,
        description="Let logs carry text from requests (exception messages of failed stages "
        "and compressions can quote prompts); off: only error types and where they arose.",
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
