"""create_app: builds every component from settings and wires them together.

The order of the request pipeline and of the middleware stack is written here,
in one place. Tests inject `transport` (httpx) and `store`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from proxy.errors import InvalidRequest, NotFound, ProxyError
from proxy.forward import Forwarder
from proxy.metrics import Metrics
from proxy.middleware.metrics import MetricsMiddleware
from proxy.passthrough import PassThrough
from proxy.pipeline import Pipeline
from proxy.relay import ClientDisconnected
from proxy.routes import build_router
from proxy.routing.endpoint import EndpointPool
from proxy.routing.health import HealthChecker
from proxy.routing.router import Router, Weighted
from proxy.routing.scorers import RoundRobin
from proxy.settings import Settings
from proxy.upstream import Upstream, make_client

log = logging.getLogger("ragtrim")


def _error_response(exc: ProxyError) -> Response:
    return Response(exc.body(), exc.status, media_type="application/json")


def _install_error_handlers(app: FastAPI) -> None:
    async def proxy_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, ProxyError)
        return _error_response(exc)

    async def http_error(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        err = NotFound if exc.status_code == 404 else InvalidRequest
        wrapped = err(str(exc.detail), code="not_found" if exc.status_code == 404 else None)
        wrapped.status = exc.status_code
        return _error_response(wrapped)

    async def disconnected(_: Request, __: Exception) -> Response:
        return Response(status_code=499)  # nobody is listening any more

    app.add_exception_handler(ProxyError, proxy_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(ClientDisconnected, disconnected)


def create_app(settings: Settings, *, transport: httpx.AsyncBaseTransport | None = None) -> FastAPI:
    metrics = Metrics()
    pool = EndpointPool.from_urls(settings.backends)
    client = make_client(settings.timeouts, transport)
    upstream = Upstream(client, settings.timeouts)
    health = HealthChecker(pool, client, settings.health)
    router = Router([Weighted(RoundRobin(), 1.0)])
    stages: list = []  # pipeline order, first to last
    pipeline = Pipeline(stages, metrics)
    forwarder = Forwarder(pool, router, upstream, pipeline, metrics, settings.max_body_bytes)
    passthrough = PassThrough(pool, router, upstream, settings.max_body_bytes)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await health.start()
        try:
            yield
        finally:
            await health.stop()
            await client.aclose()

    middleware = [Middleware(MetricsMiddleware, metrics=metrics)]  # outermost first
    app = FastAPI(
        title="ragtrim", lifespan=lifespan, middleware=middleware, docs_url=None, redoc_url=None
    )
    _install_error_handlers(app)
    app.include_router(build_router(forwarder, passthrough, pool, metrics))
    return app
