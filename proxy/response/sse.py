"""Server-sent events framing, as the spec defines it, over bytes that pass through
unchanged.

WHATWG HTML, "Server-sent events", §9.2.5 (event stream interpretation): a line ends
with CRLF, a lone LF or a lone CR, and an event ends at an empty line, i.e. two line
ends in a row: `\\n\\n`, `\\r\\n\\r\\n`, `\\r\\r`, or any mix (`\\n\\r\\n`, `\\r\\n\\n`...).
Why every one of them: docs/decisions/0043-response-path-and-hooks.md.

`EventSplitter` cuts a byte stream into whole events, each with its own delimiter
(so joining them gives back the input), and holds at most `max_event` bytes of an
unfinished event: a backend that never ends an event gets an error, not our memory.

A CR at the very end of a chunk is taken as a line end at once: waiting for a
possible LF would delay every event of a CR-delimited stream by one chunk. When the
LF does follow, it starts the next event's bytes, which the spec reads as an empty
line before it (no event is dispatched for it): nothing changes for the client.
"""

from __future__ import annotations

import re

from proxy.errors import UpstreamTooLarge

# one line end: CRLF, or a CR not followed by LF, or LF; an event ends at two of them
_LINE_END = rb"(?:\r\n|\r(?!\n)|\n)"
_EVENT_END = re.compile(_LINE_END + _LINE_END)
_LINES = re.compile(_LINE_END)


class EventSplitter:
    def __init__(self, max_event: int):
        self.max_event = max_event
        self._parts: list[bytes] = []  # the unfinished event, as it arrived (never re-joined
        self._size = 0  # per chunk: a long event costs linear time, not quadratic)

    def feed(self, chunk: bytes) -> list[bytes]:
        """The events this chunk completes, delimiters included; the rest is held."""
        edge = self._parts[-1][-3:] if self._parts else b""  # a delimiter may straddle
        if not _EVENT_END.search(edge + chunk):
            return self._hold(chunk)
        buffer = b"".join([*self._parts, chunk])
        self._parts, self._size = [], 0
        events, start = [], 0
        for match in _EVENT_END.finditer(buffer, max(0, len(buffer) - len(chunk) - 3)):
            events.append(buffer[start : match.end()])
            start = match.end()
        self._hold(buffer[start:])
        return events

    def _hold(self, data: bytes) -> list[bytes]:
        if data:
            self._parts.append(data)
            self._size += len(data)
        if self._size > self.max_event:
            self._parts, self._size = [], 0
            raise UpstreamTooLarge(
                f"backend sent an SSE event over {self.max_event} bytes",
                code="upstream_event_too_large",
            )
        return []

    @property
    def pending(self) -> bool:
        """Bytes of an unfinished event are held."""
        return bool(self._parts)

    def flush(self) -> bytes:
        tail = b"".join(self._parts)
        self._parts, self._size = [], 0
        return tail


def event_data(event: bytes) -> bytes:
    """The `data` field of one event: its data lines joined by LF (spec §9.2.6:
    `data:` then at most one space removed)."""
    parts = []
    for line in _LINES.split(event):
        if line.startswith(b"data:"):
            value = line[5:]
            parts.append(value[1:] if value.startswith(b" ") else value)
    return b"\n".join(parts)
