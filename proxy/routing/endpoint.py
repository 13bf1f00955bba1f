"""A backend (one vLLM server) and the pool of them. State is per app, never global."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Endpoint:
    url: str
    healthy: bool = False
    models: frozenset[str] = frozenset()
    model_cards: tuple[dict[str, Any], ...] = ()
    in_flight: int = 0
    last_error: str = ""
    checked: bool = False
    failures: int = 0  # consecutive failed health checks
    refused: bool = False  # its last failure was a refused connection: dead, not busy

    def passed(self) -> None:
        """A request or a check succeeded: it is alive (passive health)."""
        self.failures, self.refused = 0, False
        if not self.healthy and self.models:
            self.healthy = True

    def refuses(self) -> None:
        """It refused a connection: eject it at once (its circuit opens); only a
        passed health check closes it again."""
        self.healthy, self.refused = False, True

    def __hash__(self) -> int:
        return hash(self.url)

    def __repr__(self) -> str:
        return f"Endpoint({self.url}, healthy={self.healthy}, in_flight={self.in_flight})"


@dataclass
class EndpointPool:
    endpoints: list[Endpoint] = field(default_factory=list)

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
        """Drop a replica for new picks only: requests already relaying hold their own
        reference to the Endpoint and finish on it (its in_flight still counts down)."""
        ep = self.get(url)
        if ep is not None:
            self.endpoints = [e for e in self.endpoints if e is not ep]
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
