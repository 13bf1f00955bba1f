"""The seam between ragtrim and an HTTP client: a `Transport` is one method, `send`.

The default is aiohttp: measured side by side on these machines, a bare pass-through
app added 0.33 ms and 0.34 CPU-ms per request with aiohttp and 1.43 ms / 1.45 CPU-ms
with httpx (measured on the 2-core dev machines); LiteLLM (PR 11097) and vLLM's
production-stack router moved to aiohttp for the same reason. One `ClientSession` per
worker process, created lazily inside its event loop, with:

- no cookie jar (`DummyCookieJar`): a proxy must never carry one client's cookies to
  another; no redirects; no automatic headers beyond Host and Content-Length;
- `auto_decompress=False`: bytes are relayed exactly as the backend sent them;
- an unbounded keep-alive pool (the in-flight limits live in the router, not here).

Tests may pass any object with the same `send`/`aclose` (see tests/unit/proxy).
"""

from __future__ import annotations

import errno
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Protocol

import aiohttp

from proxy.errors import LocalResourceError, UpstreamTimeout, UpstreamUnavailable
from proxy.upstream.headers import RawHeaders, client_response_headers
from proxy.upstream.resources import local_os_error

_SKIP_AUTO = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")


class UpstreamResponse(Protocol):
    status: int
    headers: RawHeaders  # lower-case names, ready for the client

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def read(self) -> bytes: ...

    def release(self) -> None: ...  # body read to the end: connection back to the pool

    def abort(self) -> None: ...  # anything else: close it (vLLM sees the abort)


class Transport(Protocol):
    async def send(
        self, method: str, url: str, headers: list[tuple[str, str]], body: bytes
    ) -> UpstreamResponse: ...

    async def aclose(self) -> None: ...


@contextmanager
def upstream_errors(backend: str, phase: str) -> Iterator[None]:
    """Lower-layer failures talking to `backend` become the ProxyError tree; nothing
    from aiohttp or the socket layer leaks past this. A shortage of ragtrim's own
    descriptors or buffers is not the backend's failure (resources.py)."""
    try:
        yield
    except TimeoutError as exc:
        raise UpstreamTimeout(f"backend {backend} timed out ({phase})") from exc
    except (aiohttp.ClientError, OSError) as exc:
        local = local_os_error(exc)
        if local is not None:
            name = errno.errorcode.get(local.errno or 0, "?")
            raise LocalResourceError(f"ragtrim is out of local resources ({name})") from exc
        if isinstance(exc, aiohttp.ClientConnectorError):
            err = UpstreamUnavailable(f"backend {backend} refused the connection ({phase})")
            err.connect_failed = True
            raise err from exc
        raise UpstreamUnavailable(
            f"backend {backend} failed ({phase}): {type(exc).__name__}"
        ) from exc


class _AiohttpResponse:
    __slots__ = ("_resp", "status", "headers")

    def __init__(self, resp: aiohttp.ClientResponse):
        self._resp = resp
        self.status = resp.status
        self.headers = client_response_headers(list(resp.raw_headers))

    async def chunks(self) -> AsyncIterator[bytes]:
        content = self._resp.content
        while True:
            chunk = await content.readany()
            if not chunk:
                return
            yield chunk

    async def read(self) -> bytes:
        return await self._resp.read()

    def release(self) -> None:
        self._resp.release()

    def abort(self) -> None:
        self._resp.close()


class AiohttpTransport:
    def __init__(self, connect_timeout: float):
        self._timeout = aiohttp.ClientTimeout(
            total=None, connect=None, sock_connect=connect_timeout, sock_read=None
        )
        self._session: aiohttp.ClientSession | None = None

    def _open_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=60, ttl_dns_cache=10)
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            timeout=self._timeout,
            skip_auto_headers=_SKIP_AUTO,
        )
        return self._session

    async def send(
        self, method: str, url: str, headers: list[tuple[str, str]], body: bytes
    ) -> _AiohttpResponse:
        session = self._session or self._open_session()
        resp = await session.request(
            method, url, data=body or None, headers=headers, allow_redirects=False
        )
        return _AiohttpResponse(resp)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
