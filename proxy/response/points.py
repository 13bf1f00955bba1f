"""The response hook points, one Protocol each (the list and their contracts:
proxy/response/__init__.py). A hook implements any of them; `HookPoints.of` sorts the
hooks by point once, at start-up, and refuses an object that implements none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from proxy.context import RequestContext
from proxy.response.events import Observer
from proxy.upstream.exchange import Exchange
from proxy.upstream.headers import RawHeaders


@runtime_checkable
class OnHeaders(Protocol):
    def headers(self, ctx: RequestContext, ex: Exchange) -> RawHeaders: ...


@runtime_checkable
class OnStream(Protocol):
    def stream(self, ctx: RequestContext, ex: Exchange) -> Observer | None:
        """What reads this SSE answer's events (proxy/response/events.py)."""
        ...


@runtime_checkable
class OnBody(Protocol):
    def body(self, ctx: RequestContext, ex: Exchange, parts: list[bytes]) -> RawHeaders: ...


@runtime_checkable
class OnDone(Protocol):
    def done(self, ctx: RequestContext, ex: Exchange, error: BaseException | None) -> None: ...


Hook = OnHeaders | OnStream | OnBody | OnDone
POINTS = (OnHeaders, OnStream, OnBody, OnDone)


@dataclass(frozen=True)
class HookPoints:
    headers: tuple[OnHeaders, ...]
    stream: tuple[OnStream, ...]
    body: tuple[OnBody, ...]
    done: tuple[OnDone, ...]

    @classmethod
    def of(cls, hooks: Sequence[Hook]) -> HookPoints:
        """The hooks of each point, in list order; a TypeError names an object that
        implements no point (a misspelt method would otherwise never be called)."""
        idle = [type(h).__name__ for h in hooks if not isinstance(h, POINTS)]
        if idle:
            raise TypeError(f"response hooks with no hook point: {', '.join(idle)}")
        return cls(
            tuple(h for h in hooks if isinstance(h, OnHeaders)),
            tuple(h for h in hooks if isinstance(h, OnStream)),
            tuple(h for h in hooks if isinstance(h, OnBody)),
            tuple(h for h in hooks if isinstance(h, OnDone)),
        )
