"""The data-plane dispatch, as pure ASGI in front of the framework app.

Every HTTP request is routed here, once, by exact match in the route table
(proxy/http/route_table.py) on the path decoded once (proxy/http/paths.py): anything else
is a 404 in the envelope, a known path with the wrong method a 405; the raw path is
never relayed.

The OpenAI routes that carry traffic go straight to the forwarder: no framework
routing, no Request object, no exception middleware on the hot path (profiled, the
framework layers were ≈ 30 % of the proxy's CPU per request). The control routes
(/v1/models, /v1/compress, /healthz, /readyz, /metrics, /openapi.json) stay ordinary
Starlette routes; the keyed ones need a valid key first when tenancy is on.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from proxy.errors import MethodNotAllowed, NotFound, ProxyError
from proxy.http.paths import normalise
from proxy.http.route_table import Match, match
from proxy.request.forward import Forwarder
from proxy.response.relay import Reply
from proxy.upstream.headers import RawHeaders


def route_of(scope: Scope) -> Match | None:
    path = normalise(scope.get("raw_path"), scope["path"])
    return None if path is None else match(path)


class DataPlane:
    def __init__(self, app: ASGIApp, forwarder: Forwarder):
        self.app = app
        self.forwarder = forwarder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        found = route_of(scope)
        refused = self._refusal(scope, found)
        if refused is not None:
            await Reply(send).error(*refused)
        elif found is not None and found.route.kind == "control":
            scope["path"] = found.path  # what the control app routes on: the table's path
            await self.app(scope, receive, send)
        elif found is not None:
            await self.forwarder(scope, receive, send, found)

    def _refusal(self, scope: Scope, found: Match | None) -> tuple[ProxyError, RawHeaders] | None:
        if found is None:
            shown = scope["path"][:200]
            return NotFound(f"no route {shown!r} in ragtrim", code="not_found"), []
        methods = found.route.methods
        if scope["method"] not in methods:
            message = f"{scope['method']} is not allowed on {found.path}"
            return MethodNotAllowed(message), [(b"allow", ", ".join(sorted(methods)).encode())]
        if found.route.keyed:
            try:
                self.forwarder.identity.of(scope).require()  # 401 before any work
            except ProxyError as exc:
                return exc, []
        return None
