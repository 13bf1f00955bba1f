"""HTTP routes. Handlers are closures over the components create_app built —
nothing is looked up on app.state."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from proxy.components import Components
from proxy.forward import read_body
from proxy.ingest import compress_documents

PASS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


def build_router(parts: Components) -> APIRouter:
    router = APIRouter()
    forwarder, passthrough, pool, metrics = (
        parts.forwarder,
        parts.passthrough,
        parts.pool,
        parts.metrics,
    )

    @router.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        return await forwarder.handle(request, "chat")

    @router.post("/v1/completions")
    async def completions(request: Request):
        return await forwarder.handle(request, "completions")

    @router.post("/v1/compress")
    async def compress(request: Request) -> JSONResponse:
        raw = await read_body(request, parts.settings.max_body_bytes)
        rate = parts.settings.compression.rate
        return JSONResponse(await compress_documents(parts.engine, raw, rate))

    @router.get("/v1/models")
    async def models() -> JSONResponse:
        return JSONResponse({"object": "list", "data": pool.model_cards()})

    @router.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "alive"})

    @router.get("/readyz")
    async def readyz() -> JSONResponse:
        healthy = [ep.url for ep in pool.healthy()]
        return JSONResponse({"ready": bool(healthy), "healthy": healthy}, 200 if healthy else 503)

    @router.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    @router.api_route("/v1/{rest:path}", methods=PASS_METHODS)
    async def v1_passthrough(request: Request, rest: str):
        return await passthrough.handle(request)

    @router.post("/tokenize")
    async def tokenize(request: Request):
        return await passthrough.handle(request)

    @router.post("/detokenize")
    async def detokenize(request: Request):
        return await passthrough.handle(request)

    return router
