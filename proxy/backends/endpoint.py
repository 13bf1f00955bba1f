"""A backend (one vLLM server) and the pool of them. State is per app, never global.

`Endpoint` is THE record of one replica: everything ragtrim knows about it
lives here, keyed by nothing else, so it is created and dropped with the pool entry:
- in-flight requests (the data path and warm-up take and give back a slot);
- the health state machine: every transition is a method here; the health checker
  and the exchange only report what they saw;
- what the cost gate learns from it: the prefill law and the queue readings
  (proxy/gate/decide.py aggregates over the pool's records, so a departed pod stops counting);
- prefix-cache hit totals (proxy/response/feedback.py) and the `/metrics` scrape cursor
  (proxy/backends/scrape.py).
State that lives outside the record (Prometheus label series, a scrape in progress) is
dropped by the pool's `on_removed` hooks. Before, the same URL keyed five structures and
discovery pruned only the pool entry: a departed pod's law kept feeding the gate's min.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from proxy.gate.prefill_law import QUEUE_WINDOW, PrefillLaw


@dataclass(eq=False)
class ScrapeCursor:
    """Where the `/metrics` reads of this backend stand (proxy/backends/scrape.py)."""

    last: dict[str, float] | None = None  # the counters of the last read
    read_at: float = -1e9  # time.monotonic() of the last read
    off_until: float = 0.0  # no metrics here (404, not vLLM): left alone until then
    again: bool = False  # a response came during a read: read once more
    task: asyncio.Task[None] | None = None


@dataclass(eq=False)
class Endpoint:
    """One replica. Equal only to itself, hashed by identity (object's hash, in C): a
    ranking keys its scores, shares and costs by endpoint, ~20 lookups per endpoint a
    request (a Python `__hash__` over the URL was 320 calls a request at 16 replicas)."""

    url: str
    healthy: bool = False
    models: frozenset[str] = frozenset()
    model_cards: tuple[dict[str, Any], ...] = ()
    in_flight: int = 0
    last_error: str = ""
    checked: bool = False
    failures: int = 0  # consecutive failed health checks
    refused: bool = False  # its last failure was a refused connection: dead, not busy
    prefill: PrefillLaw = field(default_factory=PrefillLaw)
    queue: deque[tuple[float, float, float]] = field(
        default_factory=lambda: deque(maxlen=QUEUE_WINDOW)
    )  # (waiting, running, monotonic time) gauges
    prompt_tokens: int = 0  # totals vLLM reported, for the prefix hit ratio
    cached_tokens: int = 0
    scrape: ScrapeCursor = field(default_factory=ScrapeCursor)
    left: bool = False  # removed from the pool: requests still on it count in no series

    # what the gate reads --------------------------------------------------------
    def observe_queue(self, waiting: float, running: float, at: float | None = None) -> None:
        """vLLM's (waiting, running) gauges as read now (proxy/backends/scrape.py); the
        gate's `BackendQueue` reads the window."""
        at = time.monotonic() if at is None else at
        self.queue.append((max(0.0, waiting), max(0.0, running), at))

    # in flight ------------------------------------------------------------------
    def take(self) -> None:
        self.in_flight += 1

    def give_back(self) -> None:
        self.in_flight -= 1

    # the health state machine ---------------------------------------------------
    def passed(self) -> None:
        """A request or a check succeeded: it is alive (passive health)."""
        self.failures, self.refused = 0, False
        if not self.healthy and self.models:
            self.healthy = True

    def refuses(self) -> None:
        """It refused a connection: eject it at once (its circuit opens); only a
        passed health check closes it again."""
        self.healthy, self.refused = False, True

    def check_passed(self, cards: tuple[dict[str, Any], ...]) -> None:
        """A health check got its model list: healthy, circuit closed."""
        self.failures, self.healthy, self.refused, self.last_error = 0, True, False, ""
        self.model_cards = cards
        self.models = frozenset(c.get("id", "") for c in cards)
        self.checked = True

    def check_failed(self, error: str, *, refused: bool, unhealthy_after: int) -> None:
        """A health check failed: a refusal ejects at once; otherwise a busy backend is
        not a dead one, ejected after `unhealthy_after` failures in a row (or on the
        very first check, when it never was known healthy)."""
        self.failures += 1
        self.last_error = error
        if refused:
            self.refuses()
        elif self.failures >= unhealthy_after or not self.checked:
            self.healthy = False
        self.checked = True

    def __repr__(self) -> str:
        return f"Endpoint({self.url}, healthy={self.healthy}, in_flight={self.in_flight})"


OnRemoved = Callable[[Endpoint], None]


@dataclass
class EndpointPool:
    endpoints: list[Endpoint] = field(default_factory=list)
    on_removed: list[OnRemoved] = field(default_factory=list)  # drop state kept elsewhere

    @classmethod
    def from_urls(cls, urls: list[str]) -> EndpointPool:
        return cls([Endpoint(url) for url in urls])

    def get(self, url: str) -> Endpoint | None:
        return next((ep for ep in self.endpoints if ep.url == url), None)

    def add(self, url: str) -> Endpoint:
        """Join a replica (unhealthy until its first health check); idempotent per URL.

        The list is replaced, never mutated: a caller iterating the old one is unaffected.
        """
        existing = self.get(url)
        if existing is not None:
            return existing
        ep = Endpoint(url)
        self.endpoints = [*self.endpoints, ep]
        return ep

    def remove(self, url: str) -> Endpoint | None:
        """Drop a replica and everything known about it. Requests already relaying hold
        their own reference to the Endpoint and finish on it (its in_flight still counts
        down); what they report afterwards finds no record and is dropped."""
        ep = self.get(url)
        if ep is not None:
            self.endpoints = [e for e in self.endpoints if e is not ep]
            ep.left = True  # a request finishing on it must not bring its series back
            for hook in self.on_removed:
                hook(ep)
        return ep

    def healthy(self) -> list[Endpoint]:
        return [ep for ep in self.endpoints if ep.healthy]

    def model_cards(self) -> list[dict[str, Any]]:
        """Model cards merged across healthy backends, first backend wins per id."""
        seen: dict[str, dict[str, Any]] = {}
        for ep in self.healthy():
            for card in ep.model_cards:
                seen.setdefault(card.get("id", ""), card)
        return list(seen.values())
