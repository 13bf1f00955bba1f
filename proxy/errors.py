"""ragtrim's errors, and the one place they are rendered.

    ProxyError                    any error ragtrim itself raises (OpenAI envelope)
    ├── InvalidRequest      400   malformed JSON, wrong types, bad header values
    ├── Unauthorized        401   unknown API key (when tenancy is configured)
    ├── NotFound            404   unknown model or route
    ├── MethodNotAllowed    405   e.g. GET on /v1/chat/completions
    ├── RequestTimeout      408   the head or body came too slowly (the HTTP edge)
    ├── PayloadTooLarge     413   body above max_body_bytes
    ├── HeadTooLarge        431   too many header fields or bytes (the HTTP edge)
    ├── Overloaded          429   admission refused (carries Retry-After)
    ├── ShuttingDown        503   a stream cut at the drain deadline
    ├── TooManyConnections  503   the worker's client-connection cap (the HTTP edge)
    ├── LocalResourceError  503   ragtrim's own sockets/buffers ran out (EMFILE, ENOBUFS):
    │                               never counted against a backend
    └── UpstreamError             the backend side failed
        ├── UpstreamUnavailable   502   connection refused/reset
        ├── UpstreamBadResponse   502   an answer ragtrim cannot vouch for: a 5xx, a 3xx,
        │                               an unknown status, a content type that does not
        │                               match the request (proxy/upstream/answer.py)
        ├── UpstreamTooLarge      502   a body or SSE event above its cap
        ├── NoHealthyBackend      503   no backend is healthy / serves the model
        └── UpstreamTimeout       504   connect, first-byte, idle or total timeout

Client-library exceptions never leak: `proxy.upstream.transport.upstream_errors()`
turns them into this tree. Upstream 4xx responses are not errors here: they are
forwarded unchanged (they answer the client's request). Upstream 5xx bodies are never
forwarded, not even vLLM's own JSON errors: their messages can quote internal paths
and exception text; the backend's status is in the 502's message and the log.
"""

from __future__ import annotations

import json
import traceback


class ProxyError(Exception):
    status = 500
    type = "internal_error"
    code: str | None = None
    retry_after: int | None = None  # seconds; sent as Retry-After when set

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code

    def headers(self) -> list[tuple[bytes, bytes]]:
        """Extra response headers this error carries: Retry-After when it has one."""
        if self.retry_after is None:
            return []
        return [(b"retry-after", str(self.retry_after).encode())]

    def envelope(self) -> dict:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def body(self) -> bytes:
        return json.dumps(self.envelope()).encode()

    def sse_event(self) -> bytes:
        """The error as a final SSE event (the OpenAI SDK raises on `error`)."""
        return b"data: " + self.body() + b"\n\n"


class InvalidRequest(ProxyError):
    status, type, code = 400, "invalid_request_error", "invalid_request"


class Unauthorized(ProxyError):
    status, type, code = 401, "authentication_error", "invalid_api_key"


class NotFound(ProxyError):
    status, type, code = 404, "invalid_request_error", "model_not_found"


class MethodNotAllowed(ProxyError):
    status, type, code = 405, "invalid_request_error", "method_not_allowed"


class PayloadTooLarge(ProxyError):
    status, type, code = 413, "invalid_request_error", "payload_too_large"


class RequestTimeout(ProxyError):
    """The head or the body did not arrive within http.head_timeout_s / body_timeout_s."""

    status, type, code = 408, "invalid_request_error", "request_timeout"


class HeadTooLarge(ProxyError):
    """More header fields than http.max_headers, or a head above http.max_head_bytes."""

    status, type, code = 431, "invalid_request_error", "request_header_fields_too_large"


class TooManyConnections(ProxyError):
    """The worker holds http.max_connections client connections already."""

    status, type, code = 503, "server_error", "too_many_connections"
    retry_after = 1


class Overloaded(ProxyError):
    status, type, code = 429, "rate_limit_error", "overloaded"
    retry_after: int = 1


class ShuttingDown(ProxyError):
    """Ends a stream still open at the drain deadline (the server is stopping)."""

    status, type, code = 503, "server_error", "shutting_down"


class UpstreamError(ProxyError):
    status, type, code = 502, "upstream_error", "upstream_error"
    kind = "error"


class UpstreamUnavailable(UpstreamError):
    status, code, kind = 502, "upstream_unavailable", "unavailable"
    connect_failed = False  # True when no connection could be opened at all


class UpstreamBadResponse(UpstreamError):
    status, code, kind = 502, "upstream_bad_response", "bad_response"


class UpstreamTooLarge(UpstreamError):
    status, code, kind = 502, "upstream_response_too_large", "too_large"


class LocalResourceError(ProxyError):
    """ragtrim itself ran out of file descriptors, socket buffers or memory for a
    socket: the backend is not at fault, so no failover and no ejection."""

    status, type, code = 503, "server_error", "local_resources_exhausted"
    retry_after = 1


class NoHealthyBackend(UpstreamError):
    status, code, kind = 503, "no_healthy_backend", "no_backend"


class UpstreamTimeout(UpstreamError):
    status, code, kind = 504, "upstream_timeout", "timeout"


def describe_error(exc: BaseException, with_text: bool) -> str:
    """An exception for a log line. Its message may quote the prompt (a KeyError on a
    document, a tokenizer complaining about a span), so unless `with_text` only its
    type and the line that raised it are shown."""
    if with_text:
        return repr(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}"
