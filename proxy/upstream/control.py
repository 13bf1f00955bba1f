"""Control-plane calls to a backend (health checks, `/metrics` scrapes, warm-up
replays) over the data plane's own `Transport` and `upstream_errors`: one connection
pool and one error mapping per backend. A control call fails with the same ProxyError
tree as a request: `UpstreamUnavailable` (`connect_failed` when the connection was
refused), `UpstreamTimeout`, or `LocalResourceError` when ragtrim itself ran out of
descriptors (proxy/upstream/resources.py), which callers treat as saying nothing about
the backend.
Why: docs/decisions/0025-settings-and-component-layout.md.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from proxy.upstream.transport import Transport, upstream_errors


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes


async def call(
    transport: Transport,
    method: str,
    url: str,
    *,
    timeout: float,
    phase: str,
    body: bytes = b"",
    headers: list[tuple[str, str]] | None = None,
) -> Reply:
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
