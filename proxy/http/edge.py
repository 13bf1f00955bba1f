"""uvicorn's httptools protocol with the limits a proxy at the edge needs.

uvicorn 0.54's HttpToolsProtocol (uvicorn/protocols/http/httptools_impl.py) has none of
them: it accepts any number of header fields of any size (llhttp buffers a header value
until it ends), waits for a partial head or a short body forever (its only timer is the
keep-alive one, armed after a response), and answers a malformed request with a
text/plain 400. Why: docs/decisions/0022-edge-and-tenant-isolation.md.

    limit                          answer (always the OpenAI envelope, then close)
    http.max_headers               431 at the first field beyond it
    http.max_head_bytes            431 as soon as the head (line + fields) passes it
    http.head_timeout_s            408 when the head is not whole in time (from the
                                   connection, or from the request's first byte);
                                   a connection that sent nothing is just closed
    http.body_timeout_s            408 when the body is not whole in time (from the
                                   end of the head); the app sees a disconnect
    http.max_connections           503 at accept, beyond it per worker
    malformed request              400 (httptools' parse error)

`edge_protocol(limits, on_refusal)` makes the class uvicorn.Config(http=...) takes: a
subclass carrying the settings (uvicorn builds protocols with its own arguments only);
`on_refusal(reason)` counts each refusal (ragtrim_http_refused_total, proxy/server/workers.py).
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from proxy.errors import HeadTooLarge, ProxyError, RequestTimeout, TooManyConnections
from proxy.http.refusals import malformed, raw_response
from proxy.settings import HttpSettings


def connection_cap(configured: int) -> int:
    """The configured cap, or half the soft open-file limit: the other half stays for
    backend connections, so a flood of clients cannot turn into EMFILE upstream."""
    if configured:
        return configured
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, (soft if soft != resource.RLIM_INFINITY else 1 << 20) // 2)


def edge_protocol(
    limits: HttpSettings, on_refusal: Callable[[str], None] | None = None
) -> type[HttpToolsProtocol]:
    attrs = {
        "limits": limits,
        "max_connections": connection_cap(limits.max_connections),
        "on_refusal": staticmethod(on_refusal or _ignore),
    }
    return type("EdgeProtocol", (EdgeProtocol,), attrs)


def _ignore(_reason: str) -> None:
    pass


class _Refused(Exception):
    """Raised from a parser callback to stop parsing; the refusal is on the protocol."""


class EdgeProtocol(HttpToolsProtocol):
    limits: HttpSettings
    max_connections: int
    on_refusal: Callable[[str], None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._in_head = True  # until the head of the current request is whole
        self._raw = 0  # bytes received while in a head (a long field llhttp still buffers)
        self._exact = 0  # the head's size as the parser reports it (a head in one read)
        self._fields = 0
        self._refusal: ProxyError | None = None

    # connection
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self._refuse(TooManyConnections(f"over {self.max_connections} connections"))
            return
        self._arm(self.limits.head_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._raw += len(data)
        super().data_received(data)
        over = self._in_head and self._raw > self.limits.max_head_bytes
        if over and not self.transport.is_closing():
            self._refuse(HeadTooLarge(f"request head above {self.limits.max_head_bytes} bytes"))

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a parse error, and ours to a refusal raised while parsing."""
        self._refuse(self._refusal or malformed(msg))

    # parser callbacks
    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._in_head:  # a later request on a kept-alive connection
            self._in_head, self._raw = True, 0
            if not self._busy():  # pipelined behind a running one: its clock starts later
                self._arm(self.limits.head_timeout_s)
        self._exact = self._fields = 0

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields += 1
        if self._fields > self.limits.max_headers:
            self._stop(HeadTooLarge(f"more than {self.limits.max_headers} header fields"))
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        busy = self._busy()
        self._disarm()
        super().on_headers_complete()
        if not busy:  # a pipelined request waits, unread: its clock starts with it
            self._arm(self.limits.body_timeout_s)

    def on_response_complete(self) -> None:
        """The clocks of a pipelined request start when the one before it is done (as
        nginx reads a request only when it is the connection's turn)."""
        super().on_response_complete()
        if self._timer is not None or self.transport.is_closing():
            return
        cycle = self.cycle
        if self._in_head:
            self._arm(self.limits.head_timeout_s)
        elif not self.pipeline and cycle.more_body and not cycle.response_complete:
            self._arm(self.limits.body_timeout_s)

    def _busy(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    # refusing
    def _count(self, size: int) -> None:
        """Exact sizes from the parser, for a head that arrives in one read."""
        self._exact += size
        if self._exact > self.limits.max_head_bytes:
            self._stop(HeadTooLarge(f"request head above {self.limits.max_head_bytes} bytes"))

    def _stop(self, exc: ProxyError) -> None:
        self._refusal = exc
        raise _Refused()  # httptools turns it into HttpParserCallbackError → send_400

    def _expired(self) -> None:
        self._timer = None
        if self._in_head and self._raw == self._exact == 0:
            self.on_refusal("idle")
            self.transport.close()  # nothing sent: nobody to answer
            return
        where = "head" if self._in_head else "body"
        limit = self.limits.head_timeout_s if self._in_head else self.limits.body_timeout_s
        exc = RequestTimeout(f"request {where} not received within {limit:g} s")
        self._refuse(exc, f"{where}_timeout")

    def _refuse(self, exc: ProxyError, reason: str = "") -> None:
        """Answer `exc` and close; in a body, only when the app has not answered yet
        (it may have: a 401 on the head). An app still running sees a disconnect, so it
        ends and frees what it holds."""
        self._disarm()
        self.on_refusal(reason or exc.code or "error")
        cycle = self.cycle
        started = cycle is not None and cycle.response_started
        # in a head, `cycle` is the previous request's: a response still going out on
        # this connection must not get another one in the middle of it
        answered = started and (not self._in_head or not cycle.response_complete)
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        if not self.transport.is_closing():
            if not answered:
                self.transport.write(raw_response(exc))
            self.transport.close()

    def _arm(self, delay: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(delay, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
