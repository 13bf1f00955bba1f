"""Everything else under /v1 and /tokenize goes to a healthy backend unchanged."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from proxy.context import RequestContext
from proxy.forward import read_body
from proxy.relay import RelayResponse, race_disconnect
from proxy.routing.endpoint import EndpointPool
from proxy.routing.router import Router, healthy_serving_model
from proxy.upstream import Upstream, forwardable, response_headers


@dataclass
class PassThrough:
    pool: EndpointPool
    router: Router
    upstream: Upstream
    max_body_bytes: int

    async def handle(self, request: Request) -> RelayResponse:
        raw = await read_body(request, self.max_body_bytes)
        ctx = RequestContext("", "other", raw, {}, {})
        ranked = self.router.rank(ctx, healthy_serving_model(self.pool, None))
        path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        opened = await race_disconnect(
            request.receive,
            self.upstream.open_first(
                ranked, request.method, path, raw, forwardable(request.headers)
            ),
        )

        async def close(_error: BaseException | None) -> None:
            await opened.response.aclose()

        sse = opened.response.headers.get("content-type", "").startswith("text/event-stream")
        return RelayResponse(
            opened.response.status_code,
            response_headers(opened.response.headers),
            self.upstream.chunks(opened),
            close,
            sse=sse,
        )
