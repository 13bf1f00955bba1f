"""Warm-up: when a replica turns healthy (start or restart), replay the hot static
prefixes the configured router would send to it, with max_tokens=1, in the background,
bounded in count, concurrency and time. Its prefix cache is then warm before real
traffic for those prefixes arrives.

The owner of a prefix is the first backend `Router.rank` gives for the replayed body
with its prefix key, so warm-up agrees with the routing policy in force. A replay is
a request to the backend like any other: it holds an in-flight slot on the record while
it runs (so load-aware routing and the per-backend cap see it) and goes over the data
plane's transport and error mapping (proxy/upstream/control.py)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cache.prefixes import PrefixRegistry
from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.context import RequestContext
from proxy.errors import ProxyError
from proxy.metrics import Metrics
from proxy.settings import WarmupSettings
from proxy.upstream.control import JSON, call
from proxy.upstream.transport import Transport

log = logging.getLogger("ragtrim.warmup")


def replay_context(key: str, body: dict) -> RequestContext:
    """What the router sees of a replay: the body and its prefix key."""
    route = "chat" if "messages" in body else "completions"
    raw = json.dumps(body).encode()
    return RequestContext(
        request_id=f"warmup-{key[:16]}", route=route, raw=raw, body=body, headers={}, prefix_key=key
    )


class Ranker(Protocol):
    """The router as warm-up asks it (proxy/routing/router.py `Router`): backends/ stays
    below routing/, which ranks these records."""

    def rank(self, ctx: RequestContext, endpoints: Sequence[Endpoint]) -> list[Endpoint]: ...


@dataclass(eq=False)  # a health callback: compared by identity
class Warmer:
    settings: WarmupSettings
    pool: EndpointPool
    prefixes: PrefixRegistry
    transport: Transport
    metrics: Metrics
    router: Ranker

    async def __call__(self, ep: Endpoint) -> None:
        if not self.settings.enabled or self.settings.top_n == 0:
            return
        try:
            async with asyncio.timeout(self.settings.budget_s):
                await self._warm(ep)
        except TimeoutError:
            log.info("warm-up of %s stopped at its time budget", ep.url)
        except Exception as exc:  # noqa: BLE001 - warm-up is best effort
            log.warning("warm-up of %s failed: %r", ep.url, exc)

    def owns(self, ep: Endpoint, key: str, body: dict) -> bool:
        """The router's first choice for this replay is `ep`; a replay without a model
        (vLLM's served model) is checked by the router alone."""
        model = body.get("model")
        if model is not None and model not in ep.models:
            return False
        try:
            ranked = self.router.rank(replay_context(key, body), self.pool.endpoints)
        except ProxyError:  # nobody may take it now (no backend serves it, all full)
            return False
        return bool(ranked) and ranked[0] is ep

    async def _warm(self, ep: Endpoint) -> list[bool]:
        hot = await self.prefixes.hot(self.settings.top_n)
        mine = [body for key, body in hot if self.owns(ep, key, body)]
        gate = asyncio.Semaphore(self.settings.concurrency)
        return await asyncio.gather(*(self._replay(ep, body, gate) for body in mine))

    async def _replay(self, ep: Endpoint, body: dict, gate: asyncio.Semaphore) -> bool:
        path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
        async with gate:
            ep.take()
            try:
                reply = await call(
                    self.transport,
                    "POST",
                    ep.url + path,
                    body=json.dumps(body).encode(),
                    headers=JSON,
                    timeout=self.settings.budget_s,
                    phase="warm-up",
                )
                ok = reply.status == 200
            except ProxyError:
                ok = False
            finally:
                ep.give_back()
        self.metrics.warmup_replays.labels("ok" if ok else "failed").inc()
        return ok
