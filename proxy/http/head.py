"""The client request's head, read once: every header ragtrim reads comes from here."""

from __future__ import annotations

from starlette.types import Scope

from proxy.errors import Unauthorized


def head_headers(scope: Scope) -> dict[str, str]:
    """The request's headers by name. Every key ragtrim reads comes from here, so one
    rule holds on every route: a second Authorization (or x-api-key) header is a 401.
    Why: docs/decisions/0022-edge-and-tenant-isolation.md."""
    headers: dict[str, str] = {}
    for k, v in scope["headers"]:
        name = k.decode("latin-1")
        if k in (b"authorization", b"x-api-key") and name in headers:
            which = "Authorization" if k == b"authorization" else "x-api-key"
            raise Unauthorized(f"More than one {which} header: send exactly one.")
        headers[name] = v.decode("latin-1")
    return headers
