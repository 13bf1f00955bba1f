"""Sizes in telemetry: what a client sends reaches logs and traces only bounded.

- every string a log line or a span attribute carries passes `capped`: at most
  `telemetry.max_value_chars` characters, the cut marked `…[+N]` (N characters left out),
  so a reader sees that it was cut and by how much;
- the client's x-request-id is kept only when it is short printable ASCII
  (`request_id_of`); anything else is replaced by a generated id, which is what the
  client, the logs, the spans and the backend then see;
- a span is named from the route table (`route_name`: `/v1/responses/{id}`, never the
  id), and a method outside HTTP's registered ones is `_OTHER`, as OpenTelemetry's
  semantic conventions name it.

Why: docs/decisions/0021-bounded-work-per-request.md.
"""

from __future__ import annotations

import uuid
from typing import Any

from proxy.http.paths import normalise
from proxy.http.route_table import match

UNMATCHED = "unmatched"  # a path outside the table (a 404): one name for all of them
METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"}
)
_PRINTABLE = frozenset(range(0x21, 0x7F))  # visible ASCII: no spaces, controls or bytes > 127


def capped(value: Any, limit: int) -> Any:
    """`value` when it is not a string or fits in `limit` characters; else its first
    `limit` characters and the mark `…[+N]`."""
    if not isinstance(value, str) or len(value) <= limit:
        return value
    return f"{value[:limit]}…[+{len(value) - limit}]"


def capped_all(values: dict[str, Any], limit: int) -> dict[str, Any]:
    return {k: capped(v, limit) for k, v in values.items()}


def request_id_of(given: str | None, limit: int) -> str:
    """The client's x-request-id when it is 1..`limit` visible ASCII characters;
    otherwise (absent, too long, spaces, control or non-ASCII bytes) a new one."""
    if given and len(given) <= limit and _PRINTABLE.issuperset(given.encode("latin-1")):
        return given
    return uuid.uuid4().hex


def method_name(method: str) -> str:
    return method if method in METHODS else "_OTHER"


def route_name(scope: dict[str, Any]) -> str:
    """The route table's name for this request's path, or `unmatched`."""
    path = normalise(scope.get("raw_path"), scope.get("path", ""))
    found = None if path is None else match(path)
    return UNMATCHED if found is None else found.name
