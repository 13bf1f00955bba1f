"""The data-plane dispatch, as pure ASGI in front of the framework app.

The OpenAI routes that carry traffic go straight to the forwarder: no framework
routing, no Request object, no exception middleware on the hot path (profiled, the
framework layers were ≈ 30 % of the proxy's CPU per request). The control routes
(/v1/models, /v1/compress, /healthz, /readyz, /metrics) stay ordinary Starlette routes.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from proxy.errors import MethodNotAllowed
from proxy.forward import Forwarder
from proxy.relay import Reply

FORWARDED = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}
CONTROL = frozenset({"/v1/models", "/v1/compress"})
PASSED = frozenset({"/tokenize", "/detokenize"})


def data_route(path: str) -> str | None:
    """ "chat" | "completions" | "other" (relayed unchanged) | None (a control route)."""
    route = FORWARDED.get(path)
    if route is not None:
        return route
    if path in CONTROL:
        return None
    return "other" if path.startswith("/v1/") or path in PASSED else None


class DataPlane:
    def __init__(self, app: ASGIApp, forwarder: Forwarder):
        self.app = app
        self.forwarder = forwarder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = data_route(scope["path"]) if scope["type"] == "http" else None
        if route is None:
            await self.app(scope, receive, send)
        elif route != "other" and scope["method"] != "POST":
            exc = MethodNotAllowed(f"{scope['method']} is not allowed on {scope['path']}")
            await Reply(send).error(exc, [(b"allow", b"POST")])
        else:
            await self.forwarder(scope, receive, send, route)
