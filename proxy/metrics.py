"""Every Prometheus instrument ragtrim exports (prefix `ragtrim_`), on a registry
owned by one app instance — no process-global registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics import MetricWrapperBase

TPOT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.3, 0.6, 1.2)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
# KV-event lag: fine between 50 and 500 ms, where a loaded 2-core replica pair puts its p99
# (bench.prefix_routing), so the bench's histogram_quantile is not a guess across one bucket
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4,
               0.5, 1, 5)  # fmt: skip


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._edge_instruments(r)
        self._compression_instruments(r)
        self._routing_instruments(r)
        self._tenant_instruments(r)
        self._kv_instruments(r)

    def _edge_instruments(self, r: CollectorRegistry) -> None:
        """Requests, the HTTP edge, the upstream exchange, admission and failover."""
        self.requests = Counter(
            "ragtrim_requests", "HTTP requests by route and status", ["route", "status"], registry=r
        )
        self.in_flight = Gauge("ragtrim_in_flight", "Requests in progress", registry=r)
        self.http_refused = Counter(
            "ragtrim_http_refused",
            "Requests the HTTP edge refused or cut (proxy/http/edge.py), by reason",
            ["reason"],
            registry=r,
        )
        self._upstream_instruments(r)

    def _upstream_instruments(self, r: CollectorRegistry) -> None:
        """The upstream exchange: timings, errors, bad answers."""
        self.upstream_ttft = Histogram(
            "ragtrim_upstream_ttft_seconds",
            "Time from sending upstream to its first body byte",
            ["backend"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.upstream_tpot = Histogram(
            "ragtrim_upstream_tpot_seconds",
            "Time per output token after the first, streamed answers",
            ["backend"],
            buckets=TPOT_BUCKETS,
            registry=r,
        )
        self.upstream_errors = Counter(
            "ragtrim_upstream_errors", "Upstream failures by kind", ["backend", "kind"], registry=r
        )
        self.upstream_bad_responses = Counter(
            "ragtrim_upstream_bad_responses", "Backend answers turned into a 502 (status, type)",
            ["backend", "reason"], registry=r,
        )  # fmt: skip
        self.upstream_bad_usage = Counter(
            "ragtrim_upstream_bad_usage", "Usage objects from a backend that were ignored",
            ["backend"], registry=r,
        )  # fmt: skip
        self.local_resource_errors = Counter(
            "ragtrim_local_resource_errors", "ragtrim's own resources ran out (EMFILE, ENOBUFS...)",
            ["where"], registry=r,
        )  # fmt: skip
        self._admission_instruments(r)

    def _admission_instruments(self, r: CollectorRegistry) -> None:
        """Admission, routing spills, failover and client disconnects."""
        self.overloaded = Counter(
            "ragtrim_overloaded", "Requests refused with 429 by the in-flight limits", ["scope"],
            registry=r,
        )  # fmt: skip
        self.panic_routes = Counter(
            "ragtrim_panic_routes", "Requests routed to every backend: none was healthy",
            registry=r,
        )  # fmt: skip
        self.route_spills = Counter(
            "ragtrim_route_spills", "Requests the bounded-load picker moved off their best-scored "
            "backend (it was over the load bound)", ["backend"], registry=r,
        )  # fmt: skip
        self.failovers = Counter(
            "ragtrim_failovers", "Requests retried on the next backend", registry=r
        )
        self.client_disconnects = Counter(
            "ragtrim_client_disconnects",
            "Clients that left; upstream closed",
            ["phase"],
            registry=r,
        )

    def _compression_instruments(self, r: CollectorRegistry) -> None:
        """Stages, compression, the memos and the shared store."""
        self.stage_failures = Counter(
            "ragtrim_stage_failures", "Pipeline stages that failed open", ["stage"], registry=r
        )

        self.compress_decisions = Counter(
            "ragtrim_compress_decisions", "Cost-gate decisions", ["action"], registry=r
        )
        self.stable_choices = Counter(  # proxy/compression/stable.py
            "ragtrim_stable_choices", "Cache-aware choices: cached (the client's prompt), "
            "reused (a compressed form as sent before), grown, first", ["choice"], registry=r,
        )  # fmt: skip
        self.compress_failures = Counter(
            "ragtrim_compress_failures", "Compressions that failed open", ["reason"], registry=r
        )
        self.compress_tokens = Counter(
            "ragtrim_compress_tokens", "Context tokens before/after compression", ["stage"],
            registry=r,
        )  # fmt: skip
        self.compress_seconds = Histogram(
            "ragtrim_compress_seconds", "Compression time per request", buckets=LATENCY_BUCKETS,
            registry=r,
        )  # fmt: skip
        self.stage_seconds = Summary(
            "ragtrim_stage_seconds", "Time each pipeline stage took (bench.path_cost)", ["stage"],
            registry=r,
        )  # fmt: skip
        self._memo_instruments(r)

    def _memo_instruments(self, r: CollectorRegistry) -> None:
        """The output memo, the feature cache and the shared store behind both."""
        self.memo_lookups = Counter(
            "ragtrim_memo_lookups", "Chunk memo lookups by result", ["result"], registry=r
        )
        self.feature_lookups = Counter(
            "ragtrim_feature_lookups", "Per-chunk feature cache lookups (local: in-process, "
            "shared: the store, miss: computed)", ["result"], registry=r,
        )  # fmt: skip
        self.feature_bytes_written = Counter(
            "ragtrim_feature_bytes_written", "Bytes of chunk features computed and stored",
            registry=r,
        )  # fmt: skip
        self.feature_cache_bytes = Gauge(
            "ragtrim_feature_cache_bytes", "Bytes held by the in-process feature cache",
            registry=r,
        )  # fmt: skip
        self.store_errors = Counter(
            "ragtrim_store_errors", "Shared store failures (read as misses)", ["op"], registry=r
        )

    def _routing_instruments(self, r: CollectorRegistry) -> None:
        """The prefix cache, prefill learning, warm-up and discovery."""
        self.canonical_rewrites = Counter(
            "ragtrim_canonical_rewrites", "Requests whose static prefix was rewritten",
            registry=r,
        )  # fmt: skip
        self.prompt_tokens = Counter(
            "ragtrim_prompt_tokens", "Prompt tokens vLLM reported", ["backend"], registry=r
        )
        self.cached_tokens = Counter(
            "ragtrim_cached_tokens", "Prompt tokens vLLM served from its prefix cache",
            ["backend"], registry=r,
        )  # fmt: skip
        self.prefix_hit_ratio = Gauge(
            "ragtrim_prefix_hit_ratio", "cached / prompt tokens since start", ["backend"],
            registry=r,
        )  # fmt: skip
        self.prefill_samples = Counter(
            "ragtrim_prefill_samples", "Prefill-cost samples the cost gate learned from",
            ["backend", "source"], registry=r,
        )  # fmt: skip
        self.warmup_replays = Counter(
            "ragtrim_warmup_replays", "Hot prefixes replayed to a replica", ["result"],
            registry=r,
        )  # fmt: skip

        self.discovery_refreshes = Counter(
            "ragtrim_discovery_refreshes",
            "DNS look-ups of discovered backends by result (error/empty keep the last good set)",
            ["target", "result"], registry=r,
        )  # fmt: skip
        self.discovery_changes = Counter(
            "ragtrim_discovery_changes", "Replicas that joined or left a discovered backend",
            ["target", "change"], registry=r,
        )  # fmt: skip
        self.discovery_endpoints = Gauge(
            "ragtrim_discovery_endpoints", "Replicas a discovered backend resolves to",
            ["target"], registry=r,
        )  # fmt: skip

    def _kv_instruments(self, r: CollectorRegistry) -> None:
        """KV-event routing (proxy/routing/kv)."""
        self.kv_index_blocks = Gauge(
            "ragtrim_kv_index_blocks", "Blocks in the KV index, all backends", registry=r
        )
        self.kv_index_bytes = Gauge(
            "ragtrim_kv_index_bytes", "KV index memory, blocks x bytes per block (upper bound)",
            registry=r,
        )  # fmt: skip
        self.kv_event_lag = Histogram(
            "ragtrim_kv_event_lag_seconds", "A live KV-event batch: vLLM's ts to its events "
            "in the index (proxy/routing/kv/subscriber.py Hooks)",
            buckets=LAG_BUCKETS, registry=r,
        )  # fmt: skip
        self.kv_batches = Counter(
            "ragtrim_kv_event_batches", "KV-event batches applied to the index", registry=r
        )
        self.kv_bad_messages = Counter(
            "ragtrim_kv_bad_messages", "KV-event messages that did not decode", registry=r
        )
        self.kv_resyncs = Counter(
            "ragtrim_kv_resyncs", "KV index rebuilds or replays by reason (connect, reconnect, "
            "gap, restart, replay_failed)", ["reason"], registry=r,
        )  # fmt: skip
        self.kv_orphans = Counter(
            "ragtrim_kv_orphan_blocks", "Stored blocks whose parent the index lacked", registry=r
        )
        self.kv_evicted = Counter(
            "ragtrim_kv_evicted_blocks", "Blocks the index cap (LRU) dropped", registry=r
        )
        self.kv_fallbacks = Counter(
            "ragtrim_kv_fallbacks", "kv_cache scores that fell back to rendezvous affinity "
            "(stale: a backend's events not in sync; no_tokens: no token ids; cold: held nowhere)",
            ["reason"], registry=r,
        )  # fmt: skip
        self.kv_tokenize_cost = Histogram(
            "ragtrim_kv_tokenize_ms_per_1k", "Chat template + tokenization per request, "
            "ms per 1k tokens", buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32), registry=r,
        )  # fmt: skip

    def _tenant_instruments(self, r: CollectorRegistry) -> None:
        """Per tenant; the label is bounded to the configured tenants, any
        other name is counted as "other" (proxy/tenancy/accounting.py)."""

        def per_tenant(name: str, text: str) -> Counter:
            return Counter(f"ragtrim_tenant_{name}", f"{text}, per tenant", ["tenant"], registry=r)

        self.tenant_requests = per_tenant("requests", "Requests answered by a backend")
        self.tenant_prompt_tokens = per_tenant("prompt_tokens", "Prompt tokens sent (vLLM's usage)")
        self.tenant_tokens_removed = per_tenant("tokens_removed", "Tokens compression removed")
        self.tenant_cached_tokens = per_tenant("cached_tokens", "Prompt tokens vLLM had cached")
        self.tenant_computed_tokens = per_tenant(
            "computed_tokens", "Prompt tokens vLLM prefilled (sent, less its prefix-cache hits)"
        )
        self.tenant_completion_tokens = per_tenant("completion_tokens", "Tokens vLLM generated")
        self.quota_refusals = Counter(
            "ragtrim_quota_refusals", "Requests refused with 429 by a tenant's limits",
            ["tenant", "limit"], registry=r,
        )  # fmt: skip
        self.quota_fail_open = Counter(
            "ragtrim_quota_fail_open", "Requests admitted unchecked: the shared store was down "
            "(tenancy.quotas.redis_down=open)", registry=r,
        )  # fmt: skip

    def watch_pool(self, pool) -> None:
        """Export per-backend in-flight, health and prefill law, read from the pool at
        scrape time, and drop every series of a backend that leaves the pool (discovery):
        a departed pod's counters would otherwise stay exported, one set per pod ever seen."""
        self.registry.register(_PoolCollector(pool))
        pool.on_removed.append(lambda ep: self.forget_backend(ep.url))

    def forget_backend(self, url: str) -> None:
        """Remove the label series of `url` from every instrument with a `backend`
        label (prometheus_client's remove_by_labels matches on that label alone)."""
        for instrument in vars(self).values():
            if isinstance(instrument, MetricWrapperBase) and "backend" in instrument._labelnames:
                instrument.remove_by_labels({"backend": url})

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _PoolCollector:
    def __init__(self, pool) -> None:
        self.pool = pool

    def collect(self):
        in_flight = GaugeMetricFamily(
            "ragtrim_backend_in_flight", "Requests relaying to each backend", labels=["backend"]
        )
        healthy = GaugeMetricFamily(
            "ragtrim_backend_healthy", "1 when the backend passed its health check",
            labels=["backend"],
        )  # fmt: skip
        prefill = GaugeMetricFamily(
            "ragtrim_backend_prefill_ms_per_token", "Each backend's learned prefill law "
            "(proxy/gate/prefill_law.py), once measured", labels=["backend"],
        )  # fmt: skip
        for ep in self.pool.endpoints:
            in_flight.add_metric([ep.url], ep.in_flight)
            healthy.add_metric([ep.url], 1.0 if ep.healthy else 0.0)
            if (law := ep.prefill.value()) is not None:
                prefill.add_metric([ep.url], law)
        return [in_flight, healthy, prefill]
