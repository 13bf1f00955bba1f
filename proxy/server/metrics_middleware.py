"""Counts requests by route and status, and the number in flight."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from proxy.metrics import Metrics

KNOWN_ROUTES = frozenset(
    {
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/models",
        "/v1/compress",
        "/tokenize",
        "/detokenize",
        "/healthz",
        "/readyz",
        "/metrics",
        "/v1/ragtrim/usage",
    }
)


def route_label(path: str) -> str:
    if path in KNOWN_ROUTES:
        return path
    return "/v1/*" if path.startswith("/v1/") else "other"


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [499]  # stays 499 when the client left before any response

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.in_flight.dec()
            self.metrics.requests.labels(route_label(scope["path"]), str(status[0])).inc()
