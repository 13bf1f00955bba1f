"""Background health checks on the event loop (no threads).

Each round asks every backend for `/v1/models`: 200 with a model list = healthy.
A busy backend is not a dead one: it is ejected only after `unhealthy_after`
consecutive failed checks (or at once when it refuses connections), and every
request it answers counts as a passed check (proxy/upstream/exchange.py).
A check that fails for ragtrim's own reasons (no descriptors left: EMFILE...) says
nothing about the backend and changes nothing (proxy/upstream/resources.py).
`on_healthy` callbacks fire when a backend turns healthy (start or restart); the
warm-up of hot prefixes hangs off that hook.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import httpx

from proxy.routing.endpoint import Endpoint, EndpointPool
from proxy.settings import HealthSettings
from proxy.upstream.resources import local_os_error

log = logging.getLogger("ragtrim.health")
OnHealthy = Callable[[Endpoint], Awaitable[None]]


class HealthChecker:
    def __init__(self, pool: EndpointPool, client: httpx.AsyncClient, settings: HealthSettings):
        self.pool = pool
        self.client = client
        self.settings = settings
        self.on_healthy: list[OnHealthy] = []
        self._task: asyncio.Task[None] | None = None
        self._spawned: set[asyncio.Task[None]] = set()

    async def check(self, ep: Endpoint) -> None:
        was_healthy = ep.healthy
        try:
            resp = await self.client.get(f"{ep.url}/v1/models", timeout=self.settings.timeout)
            resp.raise_for_status()
            cards = tuple(resp.json().get("data", []))
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            if local_os_error(exc) is not None:
                log.warning("health check of %s skipped: ragtrim is out of local resources "
                            "(%s)", ep.url, exc)  # fmt: skip
                return
            ep.failures += 1
            ep.last_error = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, httpx.ConnectError):
                ep.refuses()
            elif ep.failures >= self.settings.unhealthy_after or not ep.checked:
                ep.healthy = False
        else:
            ep.failures, ep.healthy, ep.refused, ep.last_error = 0, True, False, ""
            ep.model_cards = cards
            ep.models = frozenset(c.get("id", "") for c in cards)
        ep.checked = True
        if ep.healthy != was_healthy:
            log.info("backend %s is %s", ep.url, "healthy" if ep.healthy else "unhealthy")
        if ep.healthy and not was_healthy:
            for hook in self.on_healthy:
                task = asyncio.create_task(hook(ep))
                self._spawned.add(task)
                task.add_done_callback(self._spawned.discard)

    async def check_all(self) -> None:
        await asyncio.gather(*(self.check(ep) for ep in self.pool.endpoints))

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.interval)
            await self.check_all()

    async def start(self) -> None:
        await self.check_all()
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        tasks = [t for t in [self._task, *self._spawned] if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
