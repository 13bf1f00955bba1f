"""Store writes nobody waits for, awaited together at shutdown.

Contract: a write spawned here changes nothing for the request that spawned it; a later
request that arrives before it lands reads a miss (or what the writer keeps in process
meanwhile, as `ChunkMemo.put_later` does). The stores fail open (cache/store.py), so a
write raises nothing. Why: docs/decisions/0001-request-path-at-gpu-speed.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable


class BackgroundWrites:
    """The writes in flight, held so that none is garbage-collected half-done."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Future] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, write: Awaitable[object]) -> None:
        task = asyncio.ensure_future(write)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for every write in flight (shutdown, tests); their errors are dropped."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
