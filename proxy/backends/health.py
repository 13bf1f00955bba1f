"""Background health checks on the event loop (no threads).

Each round asks every backend for `/v1/models`: 200 with a model list = healthy, over
the data plane's transport and error mapping (proxy/upstream/control.py).
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
import json
import logging
from collections.abc import Awaitable, Callable

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.errors import LocalResourceError, UpstreamError
from proxy.settings import HealthSettings
from proxy.upstream.control import call
from proxy.upstream.transport import Transport

log = logging.getLogger("ragtrim.health")
OnHealthy = Callable[[Endpoint], Awaitable[None]]
# Each check on a connection of its own, as the kubelet's HTTP probes (DisableKeepAlives,
# kubernetes pkg/probe/http): it proves the backend still accepts connections, and it
# leaves no idle connection in the data plane's pool.
CLOSE = [("connection", "close")]


class CheckFailed(Exception):
    """The backend answered, but not with a model list."""


class HealthChecker:
    """Asks and reports; the transitions are the record's (Endpoint.check_passed/failed)."""

    def __init__(self, pool: EndpointPool, transport: Transport, settings: HealthSettings):
        self.pool = pool
        self.transport = transport
        self.settings = settings
        self.on_healthy: list[OnHealthy] = []
        self._task: asyncio.Task[None] | None = None
        self._spawned: set[asyncio.Task[None]] = set()

    async def models(self, ep: Endpoint) -> tuple[dict, ...]:
        """The backend's model cards; an UpstreamError or CheckFailed otherwise."""
        reply = await call(
            self.transport,
            "GET",
            f"{ep.url}/v1/models",
            headers=CLOSE,
            timeout=self.settings.timeout_s,
            phase="health check",
        )
        if reply.status != 200:
            raise CheckFailed(f"HTTP {reply.status}")
        try:
            return tuple(json.loads(reply.body).get("data", []))
        except (ValueError, AttributeError, TypeError) as exc:
            raise CheckFailed(f"not a model list: {exc}") from exc

    async def check(self, ep: Endpoint) -> None:
        was_healthy = ep.healthy
        try:
            cards = await self.models(ep)
        except LocalResourceError as exc:
            log.warning("health check of %s skipped: %s", ep.url, exc.message)
            return
        except (UpstreamError, CheckFailed) as exc:
            refused = getattr(exc, "connect_failed", False)
            ep.check_failed(
                f"{type(exc).__name__}: {exc}",
                refused=refused,
                unhealthy_after=self.settings.unhealthy_after,
            )
        else:
            ep.check_passed(cards)
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
            await asyncio.sleep(self.settings.interval_s)
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
