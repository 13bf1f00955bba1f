"""A request path, percent-decoded exactly once, or None when it is not a path ragtrim
routes.

Nothing is resolved (an HTTP client would resolve `..`, RFC 3986 §5.2.4): a `.` or
`..` segment, or a character that would change a URL's meaning once decoded (`?`, `#`,
`\\`, `%` left over from double encoding, control characters), makes the path unroutable
(a 404 in the envelope). Routing is then an exact lookup in proxy/http/route_table.py.
Why: docs/decisions/0022-edge-and-tenant-isolation.md.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

# One scan (≈ 1 µs, on the hot path): a forbidden character, or a `.`/`..` segment.
_UNROUTABLE = re.compile(r"[\x00-\x1f\x7f?#\\%]|/\.\.?(?=/|$)")


def normalise(raw_path: bytes | None, decoded: str) -> str | None:
    """The decoded path, from the raw bytes when the server gives them (uvicorn's
    `raw_path`), else from the already decoded `path` (decoded once, not twice)."""
    if raw_path is not None:
        try:
            text = raw_path.decode("ascii")
            path = unquote(text, errors="strict") if "%" in text else text
        except UnicodeDecodeError:
            return None
    else:
        path = decoded
    if path[:1] != "/" or _UNROUTABLE.search(path):
        return None
    return path
