"""create_app: the HTTP face of one ragtrim instance.

Components (and the pipeline's stage order) are built in proxy/components.py; the
middleware stack and the routes are assembled here, outermost first:

    MetricsMiddleware   every request: count by route and status, in flight
    TelemetryMiddleware server span, access log, accounting (only when one is on)
    DataPlane           the OpenAI traffic routes → Forwarder (pure ASGI, no framework)
    FastAPI             control routes: /v1/models, /v1/compress, health, metrics;
                        it also runs the lifespan (components start and stop)

The traffic routes sit outside FastAPI on purpose: its own per-request layers (error
middleware, body limit, telemetry hooks) cost ≈ 40 µs of CPU per request, measured
with cProfile against tests/doubles/fast_stub.py, and the forwarder renders its errors itself.

Tests inject `transport` (a proxy.upstream.transport.Transport), `store` and
`compressor`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from cache.store import KVStore
from compressors import Compressor
from proxy.components import build
from proxy.errors import InvalidRequest, MethodNotAllowed, NotFound, ProxyError
from proxy.response.relay import ClientDisconnected
from proxy.server.control_routes import build_routes
from proxy.server.dataplane import DataPlane
from proxy.server.metrics_middleware import MetricsMiddleware
from proxy.server.openapi import openapi_document
from proxy.settings import Settings
from proxy.upstream.transport import Transport


def _error_response(exc: ProxyError) -> Response:
    return Response(exc.body(), exc.status, media_type="application/json")


def _install_error_handlers(app: FastAPI) -> None:
    async def proxy_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, ProxyError)
        return _error_response(exc)

    async def http_error(_: Request, exc: Exception) -> Response:
        """Starlette's own 4xx (404, 405) in the envelope too, never text/plain."""
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            wrapped: ProxyError = NotFound(str(exc.detail), code="not_found")
        elif exc.status_code == 405:
            wrapped = MethodNotAllowed(str(exc.detail))
        else:
            wrapped = InvalidRequest(str(exc.detail))
            wrapped.status = exc.status_code
        response = _error_response(wrapped)
        response.headers.update(exc.headers or {})  # e.g. Allow on a 405
        return response

    async def disconnected(_: Request, __: Exception) -> Response:
        return Response(status_code=499)  # nobody is listening any more

    app.add_exception_handler(ProxyError, proxy_error)
    app.add_exception_handler(ClientDisconnected, disconnected)
    app.add_exception_handler(HTTPException, http_error)


def create_app(
    settings: Settings,
    *,
    transport: Transport | None = None,
    store: KVStore | None = None,
    compressor: Compressor | None = None,
    on_loaded: Callable[[], None] | None = None,
) -> ASGIApp:
    """`on_loaded`: called after each load of long-lived objects (proxy/server/heap.py)."""
    parts = build(
        settings, transport=transport, store=store, compressor=compressor, on_loaded=on_loaded
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await parts.start()
        try:
            yield
        finally:
            await parts.stop()

    control = FastAPI(
        title="ragtrim",
        lifespan=lifespan,
        routes=build_routes(parts),
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    control.openapi = openapi_document  # FastAPI sees none of the routes: proxy/server/openapi.py
    _install_error_handlers(control)
    plane = parts.ops.wrap_app(DataPlane(control, parts.forwarder))  # telemetry
    return MetricsMiddleware(plane, parts.metrics)  # outermost first
