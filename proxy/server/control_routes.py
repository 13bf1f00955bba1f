"""The control routes, as plain Starlette routes. The traffic routes (chat,
completions, pass-through) never get here: proxy/server/dataplane.py routes every request by
the table in proxy/http/route_table.py, and checks the key of the keyed ones, first.
Handlers are closures over the components create_app built — nothing on app.state.
The caller is the request's Principal, resolved once at the edge
(proxy/http/principal.py), as on the traffic routes: one rule for a duplicated
Authorization header everywhere (a 401)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from proxy.components import Components
from proxy.request.forward import read_body
from proxy.tenancy.usage_report import usage_report

Endpoint = Callable[[Request], Awaitable[Response]]


def build_routes(parts: Components) -> list[BaseRoute]:
    pool, metrics = parts.pool, parts.metrics

    async def models(_: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": pool.model_cards()})

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "alive"})

    async def readyz(request: Request) -> JSONResponse:
        return _readiness(parts, request.scope)

    async def metrics_endpoint(_: Request) -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    return [
        Route("/v1/compress", _compress(parts), methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/v1/ragtrim/usage", _usage(parts), methods=["GET"]),
    ]


def _compress(parts: Components) -> Endpoint:
    async def compress(request: Request) -> JSONResponse:
        tenant = parts.identity.of(request.scope).require()  # 401 before any work
        declared = request.headers.get("content-length")
        with parts.ingest.slot(tenant):  # 429 before the body is read (proxy/compression/ingest.py)
            raw = await read_body(request.receive, declared, parts.settings.max_body_bytes)
            return JSONResponse(await parts.ingest.compress(raw, tenant))

    return compress


def _usage(parts: Components) -> Endpoint:
    async def usage(request: Request) -> JSONResponse:
        """Per-tenant totals: a tenant its own, the admin key all."""
        principal = parts.identity.of(request.scope)
        report = await usage_report(parts.tenancy.accounting, parts.settings, principal)
        return JSONResponse(report)

    return usage


def _readiness(parts: Components, scope: dict) -> JSONResponse:
    """A bare {"ready": …} for probes: a healthy backend and the compressor's warm-up
    over (Components.warmed); the backend URLs only to a valid key when tenancy is on
    (they tell a tenant where the fleet is)."""
    healthy = [ep.url for ep in parts.pool.healthy()]
    ready = bool(healthy) and parts.warmed()
    body: dict = {"ready": ready}
    if _may_see_details(parts, scope):
        body |= {"healthy": healthy, "compressor": parts.compression.engine.state}
    return JSONResponse(body, 200 if ready else 503)


def _may_see_details(parts: Components, scope: dict) -> bool:
    """A probe is never refused: a bad or duplicated key only hides the details."""
    return parts.identity.vouches(scope)
