"""How the HTTP edge answers before or beside the app: its errors are in the
one tree of proxy/errors.py (RequestTimeout, HeadTooLarge, TooManyConnections); here is
what it makes of the HTTP parser's refusals, and the raw response it writes when no
ASGI cycle exists yet."""

from __future__ import annotations

from proxy.errors import InvalidRequest, ProxyError


def malformed(message: str) -> InvalidRequest:
    """What the HTTP parser rejected (uvicorn answers these in text/plain)."""
    return InvalidRequest(f"malformed HTTP request: {message}", code="bad_http_request")


def raw_response(exc: ProxyError) -> bytes:
    """The error as a whole HTTP/1.1 response that closes the connection, for the
    protocol to write straight to the transport (no ASGI cycle may exist yet)."""
    body = exc.body()
    head = [
        f"HTTP/1.1 {exc.status} {_REASONS.get(exc.status, 'Error')}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
    ]
    head += [f"{k.decode()}: {v.decode()}" for k, v in exc.headers()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


_REASONS = {
    400: "Bad Request",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
