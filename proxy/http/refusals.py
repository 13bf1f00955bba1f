"""The errors the HTTP edge answers itself, before or beside the app (issue 23). They
are ProxyErrors, so they leave in the one envelope proxy/errors.py renders."""

from __future__ import annotations

from proxy.errors import InvalidRequest, ProxyError


class RequestTimeout(ProxyError):
    """The head or the body did not arrive within http.head_timeout / body_timeout."""

    status, type, code = 408, "invalid_request_error", "request_timeout"


class HeadTooLarge(ProxyError):
    """More header fields than http.max_headers, or a head above http.max_head_bytes."""

    status, type, code = 431, "invalid_request_error", "request_header_fields_too_large"


class TooManyConnections(ProxyError):
    """The worker holds http.max_connections client connections already."""

    status, type, code = 503, "server_error", "too_many_connections"
    retry_after = 1


def malformed(message: str) -> InvalidRequest:
    """What the HTTP parser rejected (uvicorn answers these in text/plain)."""
    return InvalidRequest(f"malformed HTTP request: {message}", code="bad_http_request")


def raw_response(exc: ProxyError) -> bytes:
    """The error as a whole HTTP/1.1 response that closes the connection, for the
    protocol to write straight to the transport (no ASGI cycle may exist yet)."""
    body = exc.body()
    head = [f"HTTP/1.1 {exc.status} {_REASONS.get(exc.status, 'Error')}",
            "content-type: application/json", f"content-length: {len(body)}",
            "connection: close"]  # fmt: skip
    head += [f"{k.decode()}: {v.decode()}" for k, v in exc.headers()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


_REASONS = {400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large",
            503: "Service Unavailable"}  # fmt: skip
