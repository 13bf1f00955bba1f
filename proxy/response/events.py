"""One SSE parser per stream: `EventStream` frames the bytes into events once
(proxy/response/sse.py `EventSplitter`) and hands each whole event to the stream's
observers (usage, response ids) and to at most one rewriter (the chat usage chunk that
ragtrim asked for and the client did not, stripped). The stream hooks
(proxy/response/points.py `OnStream`) return observers, never byte filters, so no hook
replaces or wraps another's and their order does not matter.

Bytes nobody needs framed pass as they came: a chunk of whole events that no observer
`wants` is neither split nor copied. Without a rewriter every byte goes out as it came,
and an event too long to hold only stops the observing; with one, the rewriter's events
are what goes out, and an over-long event is the backend's error (UpstreamTooLarge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar, runtime_checkable

from proxy.errors import UpstreamTooLarge
from proxy.response.sse import EventSplitter

T = TypeVar("T")


@runtime_checkable
class EventObserver(Protocol):
    def wants(self, chunk: bytes) -> bool:
        """Whether `chunk` (whole events) may hold an event this observer reads."""
        ...

    def event(self, event: bytes) -> None: ...


@runtime_checkable
class EventRewriter(Protocol):
    def wants(self, chunk: bytes) -> bool: ...

    def rewrite(self, event: bytes) -> bytes:
        """What to send now for `event` (it may hold events back until a later one)."""
        ...

    def flush(self) -> bytes: ...


Observer = EventObserver | EventRewriter


class EventStream:
    """The stream's chunk filter (proxy/upstream/exchange.py `ChunkFilter`)."""

    def __init__(self, found: Sequence[Observer], max_event: int = 4 << 20):
        rewriters = [o for o in found if isinstance(o, EventRewriter)]
        if len(rewriters) > 1:
            raise ValueError("a stream has one rewriter at most")
        self.rewriter = rewriters[0] if rewriters else None
        self.observers = [o for o in found if isinstance(o, EventObserver)]
        self._events: EventSplitter | None = EventSplitter(max_event)

    def first(self, kind: type[T]) -> T | None:
        """The observer of type `kind` (the hook that made it reads what it learnt)."""
        return next((o for o in self.observers if isinstance(o, kind)), None)

    def __call__(self, chunk: bytes) -> bytes:
        if self.rewriter is not None:
            return self._rewrite(chunk)
        events = self._events
        if events is not None and (events.pending or self._wanted(chunk)):
            try:
                self._observe(events.feed(chunk))
            except UpstreamTooLarge:
                self._events = None  # observing stops; the bytes still go out
        return chunk

    def _rewrite(self, chunk: bytes) -> bytes:
        events = self._events
        assert events is not None and self.rewriter is not None
        if not events.pending and not self._wanted(chunk) and not self.rewriter.wants(chunk):
            return chunk  # the common case: whole events, nothing to read or change
        found = events.feed(chunk)
        self._observe(found)
        return b"".join(self.rewriter.rewrite(e) for e in found)

    def _wanted(self, chunk: bytes) -> bool:
        return not chunk.endswith(b"\n\n") or any(o.wants(chunk) for o in self.observers)

    def _observe(self, events: list[bytes]) -> None:
        for observer in self.observers:
            for event in events:
                observer.event(event)

    def flush(self) -> bytes:
        held = self.rewriter.flush() if self.rewriter is not None else b""
        tail = self._events.flush() if self._events is not None else b""
        return held + tail if self.rewriter is not None else b""
