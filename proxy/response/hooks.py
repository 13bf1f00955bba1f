"""The response hooks ragtrim ships: plain classes, each with the hook points it needs
(the points are listed in proxy/response/__init__.py; the order of the list is
`make_hooks` in proxy/components.py).

- `UsageHook`: vLLM's usage, from the SSE stream's events (proxy/response/usage_tap.py) or
  from a whole JSON body, kept only when sane; `x-ragtrim-cached-tokens` on a JSON
  answer; bad usage counted, never raised.
- `HeadersHook`: `x-request-id`, `x-ragtrim-backend` (off by default with tenants)
  and the request's outcome as `x-ragtrim-*` headers (proxy/outcome/render.py).
- `TimingHook`: a streamed answer's TTFT and TPOT per backend, from the exchange's
  own chunk times (recorded once, in proxy/upstream/exchange.py).
- `FeedbackHook`: `Feedback.observe`, which feeds the cost gate, Prometheus and the
  prefix registry (proxy/response/feedback.py).
- `OwnerHook`: the tenant of each response id /v1/responses answers with.
- `PrefixRecordHook`: what was sent to which backend, and what vLLM then reported it
  held, into the record of forwarded prompts (proxy/compression/cache_view.py).

Pass-through routes (`route == "other"`) get the headers and their owner record and
nothing else: their bodies are not OpenAI completions, so there is no usage to read or
learn from. Stream hooks return event observers, which one parser per stream feeds
(proxy/response/events.py): on a Responses stream the usage observer and the response
id observer read the same events, neither wrapping the other. The Responses and
Messages APIs send usage unasked, in their own names: read from their final events
(or the JSON body) and renamed to chat's.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from proxy.compression.cache_view import CacheView
from proxy.context import RequestContext
from proxy.errors import UpstreamError
from proxy.metrics import Metrics
from proxy.outcome import render
from proxy.response.events import EventStream
from proxy.response.ids import ResponseIds, body_id
from proxy.response.usage_tap import (
    ChatUsage,
    MessagesUsage,
    ResponsesUsage,
    cached_tokens,
    messages_usage,
    reported_cached_tokens,
    responses_usage,
    sane_usage,
    usage_from_chunks,
)
from proxy.tenancy.owners import ResponseOwners
from proxy.upstream.exchange import Exchange
from proxy.upstream.headers import RawHeaders

# The APIs whose usage comes unasked, in their own names: the stream observer that reads
# it and the renaming to chat's names (proxy/response/usage_tap.py).
_OWN_USAGE = MappingProxyType(
    {
        "responses": (ResponsesUsage, responses_usage),
        "messages": (MessagesUsage, messages_usage),
    }
)


class UsageHook:
    def __init__(self, metrics: Metrics, backend_forces_usage: bool):
        self.metrics = metrics
        self.backend_forces_usage = backend_forces_usage

    def stream(self, ctx: RequestContext, ex: Exchange) -> ChatUsage | ResponsesUsage | None:
        """What reads (and, when ragtrim added it, strips) the usage chunk.
        With `upstream.backend_forces_usage` nothing is stripped: vLLM's
        --enable-force-include-usage sends that chunk to every client."""
        if ctx.route == "other":
            return None
        if ctx.route in _OWN_USAGE:  # sent unasked (response.completed, message_delta)
            return _OWN_USAGE[ctx.route][0]()
        strip = ctx.usage_added and not self.backend_forces_usage
        return ChatUsage(strip)

    def body(self, ctx: RequestContext, ex: Exchange, parts: list[bytes]) -> RawHeaders:
        if ctx.route == "other" or ex.status != 200:
            return []
        raw, _ = usage_from_chunks(parts)
        ex.usage = _OWN_USAGE[ctx.route][1](raw) if ctx.route in _OWN_USAGE else sane_usage(raw)
        if ex.usage is None:
            if raw is not None and ex.counted:  # ignored, counted: never a 500
                self.metrics.upstream_bad_usage.labels(ex.url).inc()
            return []
        return [(render.CACHED_TOKENS.encode(), str(cached_tokens(ex.usage)).encode())]

    def done(self, ctx: RequestContext, ex: Exchange, error: BaseException | None) -> None:
        """A stream's usage, once it is over: kept when it ended well; its bad usage
        counted also when the backend failed after sending it."""
        events = ex.tap
        if not isinstance(events, EventStream):
            return
        reader = events.rewriter if isinstance(events.rewriter, ChatUsage) else None
        reader = reader or events.first(ResponsesUsage)
        if reader is None or not (error is None or isinstance(error, UpstreamError)):
            return
        if reader.bad and ex.counted:
            self.metrics.upstream_bad_usage.labels(ex.url).inc(reader.bad)
        if error is None:
            ex.usage = reader.usage


class HeadersHook:
    """The one place the request's outcome leaves for the client as headers. `hidden`:
    the names never sent (with tenancy on, those that show a cache hit by its time or
    count: a tenant must not learn what another sent); the access log and spans still
    read the typed outcome."""

    def __init__(self, show_backend: bool, hidden: frozenset[str]):
        self.show_backend = show_backend  # tenancy.backend_header
        self.hidden = hidden

    def headers(self, ctx: RequestContext, ex: Exchange) -> RawHeaders:
        out = [(b"x-request-id", ctx.request_id.encode("latin-1"))]
        if self.show_backend:
            out.append((render.BACKEND.encode(), ex.url.encode("latin-1")))
        for name, value in render.headers(ctx.outcome).items():
            if name not in self.hidden:
                out.append((name.encode("latin-1"), value.encode("latin-1")))
        return out


class TimingHook:
    def __init__(self, metrics: Metrics):
        self.metrics = metrics

    def done(self, ctx: RequestContext, ex: Exchange, error: BaseException | None) -> None:
        ttft_ms = ex.ttft_ms()
        if error is not None or ctx.route == "other" or not ctx.stream or ttft_ms is None:
            return
        if not ex.counted:  # its backend left the pool meanwhile: its series are gone
            return
        self.metrics.upstream_ttft.labels(ex.url).observe(ttft_ms / 1000)
        tpot = ex.tpot_s(int((ex.usage or {}).get("completion_tokens") or 0))
        if tpot is not None:
            self.metrics.upstream_tpot.labels(ex.url).observe(tpot)


def taught(ctx: RequestContext, ex: Exchange, error: BaseException | None):
    """What a finished generation teaches, (usage, TTFT ms when streamed), or None for
    an answer that teaches nothing (an error, a pass-through route). The feedback hook
    and the telemetry record's hook read the same answers."""
    if error is not None or ctx.route == "other":
        return None
    return ex.usage, (ex.ttft_ms() if ctx.stream else None)


class FeedbackHook:
    def __init__(self, feedback: Any):  # proxy/response/feedback.py Feedback
        self.feedback = feedback

    def done(self, ctx: RequestContext, ex: Exchange, error: BaseException | None) -> None:
        learned = taught(ctx, ex, error)
        if learned is not None:
            self.feedback.observe(ctx, ex.url, *learned)


class OwnerHook:
    """The tenant of every response id a /v1/responses answer names, from
    the JSON body's `id` or the stream's `response.created` event (proxy/response/ids.py):
    later GETs, cancels and continuations are checked against it (proxy/tenancy/owners.py).
    Only the `creates` routes of the table, only answers of 200, only with tenants, and
    only stored answers: `store` absent or not false (vLLM's default is true); an answer
    vLLM does not store has nothing to read, cancel or continue.
    Why: docs/decisions/0041-tenancy-quotas-accounting-owners.md."""

    def __init__(self, owners: ResponseOwners):
        self.owners = owners

    def _records(self, ctx: RequestContext, ex: Exchange) -> bool:
        found = ctx.route_match
        owned = found is not None and found.route.owner == "creates"
        stored = ctx.body.get("store", True) is not False
        return owned and stored and ex.status == 200 and self.owners.enforced

    def stream(self, ctx: RequestContext, ex: Exchange) -> ResponseIds | None:
        if not self._records(ctx, ex):
            return None
        return ResponseIds(lambda rid: self.owners.record(ctx.tenant, rid))

    def body(self, ctx: RequestContext, ex: Exchange, parts: list[bytes]) -> RawHeaders:
        if self._records(ctx, ex):
            rid = body_id(parts)
            if rid is not None:
                self.owners.record(ctx.tenant, rid)
        return []


class PrefixRecordHook:
    """The record's prediction once the backend is known (its response headers: the
    request is on its way), and its confirmation with vLLM's `cached_tokens` once the
    answer ended well (after UsageHook, which reads them)."""

    def __init__(self, view: CacheView):
        self.view = view

    def headers(self, ctx: RequestContext, ex: Exchange) -> RawHeaders:
        if ex.status == 200:
            self.view.expect(ctx.cache_plan, ex.url)
        return []

    def done(self, ctx: RequestContext, ex: Exchange, error: BaseException | None) -> None:
        if error is None:
            self.view.confirm(ctx.cache_plan, reported_cached_tokens(ex.usage))
