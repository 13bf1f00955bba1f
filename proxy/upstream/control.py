"""Control-plane calls to a backend (health checks, `/metrics` scrapes, warm-up
replays) over the data plane's own `Transport` and `upstream_errors` (issue 21).

Before, these three went through an httpx client of their own and each caught
`httpx.HTTPError` itself, while the data plane mapped aiohttp errors in one place: two
connection pools and three error mappings for one backend. Now a control call fails
with the same ProxyError tree as a request: `UpstreamUnavailable` (`connect_failed`
when the connection was refused), `UpstreamTimeout`, or `LocalResourceError` when
ragtrim itself ran out of descriptors (proxy/upstream/resources.py), which callers
treat as saying nothing about the backend.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from proxy.upstream.transport import Transport, upstream_errors


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes


async def call(transport: Transport, method: str, url: str, *, timeout: float, phase: str,
               body: bytes = b"",
               headers: list[tuple[str, str]] | None = None) -> Reply:  # fmt: skip
    """Send one request and read the whole answer within `timeout` seconds; the
    connection goes back to the pool only after a complete read."""
    with upstream_errors(url, phase):
        async with asyncio.timeout(timeout):
            resp = await transport.send(method, url, headers or [], body)
            try:
                data = await resp.read()
            except BaseException:
                resp.abort()
                raise
            resp.release()
    return Reply(resp.status, data)


JSON = [("content-type", "application/json")]
