"""Every Prometheus instrument ragtrim exports (prefix `ragtrim_`), on a registry
owned by one app instance — no process-global registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "ragtrim_requests", "HTTP requests by route and status", ["route", "status"], registry=r
        )
        self.in_flight = Gauge("ragtrim_in_flight", "Requests in progress", registry=r)
        self.upstream_ttft = Histogram(
            "ragtrim_upstream_ttft_seconds",
            "Time from sending upstream to its first body byte",
            ["backend"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.upstream_errors = Counter(
            "ragtrim_upstream_errors", "Upstream failures by kind", ["backend", "kind"], registry=r
        )
        self.failovers = Counter(
            "ragtrim_failovers", "Requests retried on the next backend", registry=r
        )
        self.client_disconnects = Counter(
            "ragtrim_client_disconnects",
            "Clients that left; upstream closed",
            ["phase"],
            registry=r,
        )
        self.stage_failures = Counter(
            "ragtrim_stage_failures", "Pipeline stages that failed open", ["stage"], registry=r
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
