"""A KV-event subscriber for every backend in the pool, following it as it changes.

Event endpoints follow the backend's address: `http://10.0.0.5:8000` publishes on
`tcp://10.0.0.5:<kv_events.port>` and replays on `tcp://10.0.0.5:<replay_port>` (vLLM
binds `tcp://*:<port>`), unless `kv_events.endpoints` names that backend's own.
DNS discovery (proxy/backends/discovery.py) replaces the pool's list as replicas join
and leave; every `interval` seconds the subscribers are reconciled with it: a joiner
is subscribed, a leaver's subscriber stops and its blocks are forgotten. Each
subscriber runs on its own thread (proxy/routing/kv/subscriber.py says why); the
following task runs on the event loop; all are started and stopped by the
components' lifespan (proxy/components.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from urllib.parse import urlsplit

import zmq

from proxy.backends.endpoint import EndpointPool
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.subscriber import POLL_MS, Hooks, KvSubscriber
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
    def __init__(
        self,
        pool: EndpointPool,
        index: KvIndex,
        settings: KvEventsSettings,
        hooks: Hooks | None = None,
    ):
        self.pool, self.index, self.settings = pool, index, settings
        self.hooks = hooks or Hooks()
        self.subscribers: dict[str, tuple[KvSubscriber, threading.Thread]] = {}
        self._zctx: zmq.Context | None = None
        self._follow: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._zctx = zmq.Context()
        self.reconcile()
        self._follow = asyncio.create_task(self._follow_pool())

    async def _follow_pool(self) -> None:
        while True:
            await asyncio.sleep(self.settings.interval_s)
            self.reconcile()

    def reconcile(self) -> None:
        """Subscribe joiners, drop leavers (and their blocks); restart a dead thread."""
        urls = {ep.url for ep in self.pool.endpoints}
        for url in list(self.subscribers):
            if url not in urls:
                sub, _ = self.subscribers.pop(url)
                with self.index.lock:  # after this, its thread changes nothing
                    sub.stopping.set()
                    self.index.forget(url)
        for url in urls:
            entry = self.subscribers.get(url)
            if entry is None or not entry[1].is_alive():
                self.subscribers[url] = self._spawn(url)

    def _spawn(self, url: str) -> tuple[KvSubscriber, threading.Thread]:
        assert self._zctx is not None
        pub, replay = event_endpoints(url, self.settings)
        sub = KvSubscriber(
            url,
            pub,
            replay,
            self.settings.topic,
            self.index,
            self._zctx,
            self.hooks,
            self.settings.replay_timeout_s,
            self.settings.max_message_bytes,
        )
        thread = threading.Thread(
            target=self._run, args=(sub,), name=f"kv-events {url}", daemon=True
        )
        thread.start()
        return sub, thread

    def _run(self, sub: KvSubscriber) -> None:
        try:
            sub.run()
        except Exception as exc:  # noqa: BLE001 - logged; reconcile() restarts it
            log.warning("kv events of %s failed: %r", sub.url, exc)
            state = self.index.backend(sub.url)
            if state is not None:
                state.synced = False

    async def stop(self) -> None:
        """Stop every thread (each returns within a poll or a replay timeout), then the
        context; waited for off the loop."""
        if self._follow is not None:
            self._follow.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._follow
        entries = list(self.subscribers.values())
        self.subscribers.clear()
        for sub, _ in entries:
            sub.stopping.set()
        limit = self.settings.replay_timeout_s + POLL_MS / 1000 + 1.0
        for _, thread in entries:
            await asyncio.to_thread(thread.join, limit)
        if self._zctx is not None:
            zctx, self._zctx = self._zctx, None
            if all(not thread.is_alive() for _, thread in entries):
                zctx.term()  # else a stuck thread's socket would block term() forever
