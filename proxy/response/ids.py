"""The id a Responses API answer names, read without joining or parsing it whole on the
loop (ids are recorded per tenant: proxy/tenancy/owners.py).

vLLM writes its pydantic models in field order: a /v1/responses JSON body starts with
`{"id": "resp_…"`, and a stream's first event (`response.created`) carries
`"response": {"id": "resp_…"`. Both are found by a regex on the first bytes; a JSON
body whose `id` is not first (another backend) is parsed when it is small. The stream
passes through unchanged: only its first `WINDOW` bytes are looked at. Keys can
only come from the backend's own structure: text the model wrote is inside JSON
strings, where every quote is escaped, so it can never match `"id"\\s*:`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import orjson

_ID = rb'"id"\s*:\s*"([A-Za-z0-9_-]{1,256})"'
_FIRST_ID = re.compile(rb"\s*\{\s*" + _ID)
_RESPONSE_ID = re.compile(rb'"response"\s*:\s*\{\s*' + _ID)
WINDOW = 64 << 10  # the stream's first bytes looked at (the id is in its first event)
PARSE_LIMIT = 1 << 20  # a JSON body whose id is not first is parsed up to this size


def body_id(parts: Sequence[bytes]) -> str | None:
    """The top-level `id` of a JSON body read as `parts`."""
    head = b""
    for part in parts:
        head += part[: 4096 - len(head)]
        if len(head) >= 4096:
            break
    found = _FIRST_ID.match(head)
    if found is not None:
        return found.group(1).decode()
    if sum(map(len, parts)) > PARSE_LIMIT:
        return None
    try:
        data = orjson.loads(b"".join(parts))
    except orjson.JSONDecodeError:
        return None
    rid = data.get("id") if isinstance(data, dict) else None
    return rid if isinstance(rid, str) else None


class ResponseIds:
    """An `EventStream` observer (proxy/response/events.py) that hands `on_id` the first
    `response.id` in the stream's first `WINDOW` bytes of events."""

    def __init__(self, on_id: Callable[[str], None]):
        self.on_id = on_id
        self._seen = 0
        self._done = False

    def wants(self, chunk: bytes) -> bool:
        return not self._done

    def event(self, event: bytes) -> None:
        if self._done:
            return
        found = _RESPONSE_ID.search(event, 0, WINDOW - self._seen)
        self._seen += len(event)
        if found is not None:
            self.on_id(found.group(1).decode())
        self._done = found is not None or self._seen >= WINDOW
