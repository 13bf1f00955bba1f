"""Which headers cross the proxy. Kept as raw ASGI bytes: decoding every header of
every request only to re-encode it costs more than the filtering itself.

The client's credentials stay here, out of vLLM's logs and traces: `authorization` and
the other key headers clients send are never forwarded. ragtrim has no key of its own for
the backends (its health checks, scrapes and warm-up send none, so a vLLM behind it
runs without --api-key, reachable only from ragtrim). The request id the backend sees
is ragtrim's, bounded (proxy/http/capped.py), never the client's raw header."""

from __future__ import annotations

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
CREDENTIALS = frozenset({b"authorization", b"x-api-key", b"api-key"})  # the client's own
REPLACED = frozenset({b"x-request-id"})  # ragtrim's value is sent instead
_NOT_UP = HOP_BY_HOP | CREDENTIALS | REPLACED
# uvicorn writes its own; forwarding the backend's would duplicate them.
SERVER_SET = frozenset({b"date", b"server"})
_NOT_BACK = HOP_BY_HOP | SERVER_SET

RawHeaders = list[tuple[bytes, bytes]]


def upstream_request_headers(
    raw: RawHeaders, client: tuple[str, int] | list | None = None, request_id: str = ""
) -> list[tuple[str, str]]:
    """ASGI request headers (lower-case names) worth forwarding: hop-by-hop and the
    client's credentials dropped, `request_id` as x-request-id (when given), the
    client's address appended to X-Forwarded-For (one field, as RFC 7239 §7.4
    describes the de-facto header: earlier hops first, this hop's client last)."""
    out, forwarded = [], []
    for k, v in raw:
        if k == b"x-forwarded-for":
            forwarded.append(v.decode("latin-1").strip())
        elif k not in _NOT_UP:
            out.append((k.decode("latin-1"), v.decode("latin-1")))
    if request_id:
        out.append(("x-request-id", request_id))
    if client:
        forwarded.append(str(client[0]))
    if forwarded:
        out.append(("x-forwarded-for", ", ".join(f for f in forwarded if f)))
    return out


def client_response_headers(raw: RawHeaders) -> RawHeaders:
    """Backend response headers for the client: lower-cased, hop-by-hop and the ones
    the server writes itself dropped."""
    out = []
    for k, v in raw:
        name = k.lower()
        if name not in _NOT_BACK:
            out.append((name, v))
    return out


def header_value(raw: RawHeaders, name: bytes) -> bytes:
    for k, v in raw:
        if k == name:
            return v
    return b""
