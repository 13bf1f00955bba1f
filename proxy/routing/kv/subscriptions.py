"""A KV-event subscriber for every backend in the pool, following it as it changes.

Event endpoints follow the backend's address: `http://10.0.0.5:8000` publishes on
`tcp://10.0.0.5:<kv_events.port>` and replays on `tcp://10.0.0.5:<replay_port>` (vLLM
binds `tcp://*:<port>`), unless `kv_events.endpoints` names that backend's own.
DNS discovery (proxy/routing/discovery.py) replaces the pool's list as replicas join
and leave; every `interval` seconds the subscribers are reconciled with it: a joiner
is subscribed, a leaver's subscriber stops and its blocks are forgotten. The zmq
context and the tasks live on the event loop, started and stopped by the components'
lifespan (proxy/components.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from urllib.parse import urlsplit

import zmq.asyncio

from proxy.routing.endpoint import EndpointPool
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.subscriber import Hooks, KvSubscriber
from proxy.settings import KvEventsSettings

log = logging.getLogger("ragtrim.kv")


def event_endpoints(url: str, s: KvEventsSettings) -> tuple[str, str | None]:
    """(PUB endpoint, replay endpoint or None) of the backend at `url`."""
    if url in s.endpoints:
        own = s.endpoints[url]
        return own.pub, own.replay or None
    host = urlsplit(url).hostname or "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    replay = f"tcp://{host}:{s.replay_port}" if s.replay_port else None
    return f"tcp://{host}:{s.port}", replay


class KvSubscriptions:
    def __init__(self, pool: EndpointPool, index: KvIndex, settings: KvEventsSettings,
                 hooks: Hooks | None = None):  # fmt: skip
        self.pool, self.index, self.settings = pool, index, settings
        self.hooks = hooks or Hooks()
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._zctx: zmq.asyncio.Context | None = None
        self._follow: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._zctx = zmq.asyncio.Context()
        self.reconcile()
        self._follow = asyncio.create_task(self._follow_pool())

    async def _follow_pool(self) -> None:
        while True:
            await asyncio.sleep(self.settings.interval)
            self.reconcile()

    def reconcile(self) -> None:
        """Subscribe joiners, drop leavers (and their blocks); restart a dead task."""
        urls = {ep.url for ep in self.pool.endpoints}
        for url in list(self.tasks):
            if url not in urls:
                self.tasks.pop(url).cancel()
                self.index.forget(url)
        for url in urls:
            task = self.tasks.get(url)
            if task is None or task.done():
                self.tasks[url] = asyncio.create_task(self._run(url))

    async def _run(self, url: str) -> None:
        assert self._zctx is not None
        pub, replay = event_endpoints(url, self.settings)
        sub = KvSubscriber(url, pub, replay, self.settings.topic, self.index, self._zctx,
                           self.hooks, self.settings.replay_timeout)  # fmt: skip
        try:
            await sub.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - logged; reconcile() restarts it
            log.warning("kv events of %s failed: %r", url, exc)
            state = self.index.backend(url)
            if state is not None:
                state.synced = False

    async def stop(self) -> None:
        tasks = [t for t in (self._follow, *self.tasks.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.tasks.clear()
        if self._zctx is not None:
            self._zctx.term()
            self._zctx = None
