"""Warm-up: when a replica turns healthy (start or restart), replay the hot static
prefixes that rendezvous hashing sends to it, with max_tokens=1, in the background,
bounded in count, concurrency and time. Its prefix cache is then warm before real
traffic for those prefixes arrives."""

from __future__ import annotations

import asyncio
import logging

import httpx

from cache.prefixes import PrefixRegistry
from proxy.metrics import Metrics
from proxy.routing.affinity import rendezvous_order
from proxy.routing.endpoint import Endpoint, EndpointPool
from proxy.settings import WarmupSettings

log = logging.getLogger("ragtrim.warmup")


class Warmer:
    def __init__(self, settings: WarmupSettings, pool: EndpointPool, prefixes: PrefixRegistry,
                 client: httpx.AsyncClient, metrics: Metrics):  # fmt: skip
        self.settings = settings
        self.pool = pool
        self.prefixes = prefixes
        self.client = client
        self.metrics = metrics

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

    async def _warm(self, ep: Endpoint) -> list[bool]:
        urls = [e.url for e in self.pool.endpoints]
        hot = await self.prefixes.hot(self.settings.top_n)
        mine = [
            body for key, body in hot
            if rendezvous_order(key, urls)[0] == ep.url and body.get("model") in ep.models
        ]  # fmt: skip
        gate = asyncio.Semaphore(self.settings.concurrency)
        return await asyncio.gather(*(self._replay(ep, body, gate) for body in mine))

    async def _replay(self, ep: Endpoint, body: dict, gate: asyncio.Semaphore) -> bool:
        path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
        async with gate:
            try:
                resp = await self.client.post(ep.url + path, json=body)
                ok = resp.status_code == 200
            except httpx.HTTPError:
                ok = False
        self.metrics.warmup_replays.labels("ok" if ok else "failed").inc()
        return ok
