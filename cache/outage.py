"""Outage: when the shared store stops answering, stop asking it on the request path.

A store that is down answers fast (connection refused); one that hangs (a stopped
process, a full network buffer) costs its whole timeout on every call. After the first
failure the store is marked down and calls go straight to the in-process fallback; a
background probe (one PING every `retry_after` seconds, never on a request) marks it
up again. Only requests already waiting when the store failed pay its timeout, which
is what keeps the added p99 within a few milliseconds through an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("ragtrim.cache")
Probe = Callable[[], Awaitable[object]]
# A Redis call slower than this counts as an outage by default: redis.timeout_s
# (proxy/config/tenancy.py). A cache read that waits longer costs more than a miss.
REDIS_TIMEOUT_S = 0.1


class Outage:
    def __init__(self, probe: Probe, *, retry_after: float, timeout: float):
        self.probe = probe
        self.retry_after = retry_after
        self.timeout = timeout
        self.down = False
        self.outages = 0  # times the store went down (tests and logs)
        self._prober: asyncio.Task[None] | None = None

    def failed(self) -> None:
        """A call failed: go down (if not already) and probe in the background."""
        if not self.down:
            self.down = True
            self.outages += 1
            log.warning("shared store down: serving from the in-process fallback")
        if self._prober is None or self._prober.done():
            self._prober = asyncio.create_task(self._probe_until_up())

    async def _probe_until_up(self) -> None:
        while self.down:
            await asyncio.sleep(self.retry_after)
            try:
                async with asyncio.timeout(self.timeout):
                    await self.probe()
            except Exception:  # noqa: BLE001 - still down; the next probe retries
                continue
            self.down = False
            log.warning("shared store back: leaving the in-process fallback")

    async def aclose(self) -> None:
        if self._prober is not None:
            self._prober.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._prober
