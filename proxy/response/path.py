"""Everything after ranking, end to end: `ResponsePath.relay` is the one call the
forwarder makes into the response half.

    relay  →  Exchange.open (failover, in-flight slot)  →  accept (answer.py: a 502?)
           →  hooks.headers  →  SSE: hooks.stream, relayed chunk by chunk
                                JSON: read whole (capped), hooks.body, sent as read
           →  Exchange.close (released or aborted, errors counted)  →  hooks.done

Errors travel one way: raised. An upstream failure before the first byte becomes
its status in the envelope (proxy/request/forward.py answers it); after it, the same raise
ends the SSE stream with an error event (`Reply.error`), never a silent truncation.
A client that leaves cancels the work (`race_disconnect`), counted by phase; a
server stopping at its drain deadline ends an open stream with `shutting_down`.

The hook lists are resolved once, here, by the points each hook implements
(proxy/response/points.py, checked at start-up): a request pays for the points that some
hook defines, and nothing per chunk beyond the stream's one event parser
(proxy/response/events.py), whose common case is a chunk of whole events passed through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from starlette.types import Receive

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.errors import ShuttingDown
from proxy.metrics import Metrics
from proxy.response.events import EventStream
from proxy.response.points import Hook, HookPoints
from proxy.response.relay import ClientDisconnected, Reply, race_disconnect, relay_stream
from proxy.settings import TimeoutSettings, UpstreamSettings
from proxy.upstream.exchange import Exchange
from proxy.upstream.transport import Transport


class ResponsePath:
    def __init__(self, transport: Transport, timeouts: TimeoutSettings, metrics: Metrics,
                 upstream: UpstreamSettings, hooks: Sequence[Hook]):  # fmt: skip
        self.transport, self.timeouts, self.metrics = transport, timeouts, metrics
        self.max_response_bytes = upstream.max_response_bytes
        self.max_event = upstream.max_sse_event_bytes
        self.hooks = list(hooks)
        self._at = HookPoints.of(self.hooks)

    async def relay(self, ctx: RequestContext, ranked: Sequence[Endpoint], reply: Reply,
                    receive: Receive, method: str, path: str,
                    headers: list[tuple[str, str]]) -> None:  # fmt: skip
        work = self._exchange(ctx, ranked, reply, method, path, headers)
        try:
            await race_disconnect(receive, work)
        except ClientDisconnected:
            phase = "mid_stream" if reply.started else "before_first_byte"
            self.metrics.client_disconnects.labels(phase).inc()
            raise
        except asyncio.CancelledError:  # the server stopping at its drain deadline
            if not reply.started:
                raise
            await reply.error(ShuttingDown("ragtrim is shutting down; stream cut"))
            asyncio.current_task().uncancel()  # ended cleanly: nothing left to cancel

    async def _exchange(self, ctx: RequestContext, ranked: Sequence[Endpoint], reply: Reply,
                        method: str, path: str,
                        headers: list[tuple[str, str]]) -> None:  # fmt: skip
        body = ctx.upstream_body()
        whole = method == "POST" and not ctx.stream  # a generation's head comes at its end
        ex = Exchange(self.transport, self.timeouts, self.metrics, method, path, body, headers,
                      whole_answer=whole)  # fmt: skip
        error: BaseException | None = None
        try:
            await ex.open(ranked)
            ex.accept(None if ctx.route == "other" else "sse" if ctx.stream else "json")
            assert ex.response is not None
            out = list(ex.response.headers)
            for hook in self._at.headers:
                out += hook.headers(ctx, ex)
            if ex.is_sse:
                found = [o for h in self._at.stream if (o := h.stream(ctx, ex)) is not None]
                ex.tap = EventStream(found, self.max_event) if found else None
                await reply.start(ex.status, out)
                await relay_stream(reply, ex.chunks(), ex.tap)
            else:
                parts = await ex.read(self.max_response_bytes)
                for hook in self._at.body:
                    out += hook.body(ctx, ex, parts)
                await reply.parts(ex.status, out, parts)
        except BaseException as exc:  # a client leaving cancels this task: also here
            error = exc
            raise
        finally:
            await ex.close(error)
            for hook in self._at.done:
                hook.done(ctx, ex, error)
