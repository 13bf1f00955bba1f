"""HTTP routes, as plain Starlette routes (ragtrim parses and validates bodies
itself, once; FastAPI's per-route dependency machinery would only add latency).
Handlers are closures over the components create_app built — nothing on app.state."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from proxy.components import Components
from proxy.forward import read_body
from proxy.ingest import compress_documents

PASS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def build_routes(parts: Components) -> list[BaseRoute]:
    forwarder, passthrough, pool, metrics = (
        parts.forwarder, parts.passthrough, parts.pool, parts.metrics,
    )  # fmt: skip

    async def chat_completions(request: Request):
        return await forwarder.handle(request, "chat")

    async def completions(request: Request):
        return await forwarder.handle(request, "completions")

    async def compress(request: Request) -> JSONResponse:
        raw = await read_body(request, parts.settings.max_body_bytes)
        rate = parts.settings.compression.rate
        return JSONResponse(await compress_documents(parts.engine, raw, rate))

    async def models(_: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": pool.model_cards()})

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "alive"})

    async def readyz(_: Request) -> JSONResponse:
        healthy = [ep.url for ep in pool.healthy()]
        body = {"ready": bool(healthy), "healthy": healthy, "compressor": parts.engine.state}
        return JSONResponse(body, 200 if healthy else 503)

    async def metrics_endpoint(_: Request) -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    async def passthrough_endpoint(request: Request):
        return await passthrough.handle(request)

    return [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/v1/compress", compress, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/v1/{rest:path}", passthrough_endpoint, methods=PASS_METHODS),
        Route("/tokenize", passthrough_endpoint, methods=["POST"]),
        Route("/detokenize", passthrough_endpoint, methods=["POST"]),
    ]
