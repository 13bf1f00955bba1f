"""A stream observer (or rewriter) behind its own EventStream, as the response path
puts it (proxy/response/events.py): call it with chunks, read what it learnt."""

from typing import Any

from proxy.response.events import EventStream, Observer


class Tapped:
    def __init__(self, observer: Observer, max_event: int = 4 << 20):
        self.observer = observer
        self.stream = EventStream([observer], max_event)

    def __call__(self, chunk: bytes) -> bytes:
        return self.stream(chunk)

    def flush(self) -> bytes:
        return self.stream.flush()

    @property
    def usage(self) -> Any:
        return self.observer.usage  # type: ignore[union-attr]

    @property
    def bad(self) -> int:
        return self.observer.bad  # type: ignore[union-attr]
