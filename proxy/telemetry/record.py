"""The per-request record the telemetry middleware keeps while a request runs.

The middleware (proxy/telemetry/middleware.py) creates it when a request arrives and
fills it from what it sees pass (the status, the response headers, the first body
byte). The forwarder leaves the request's context in the ASGI scope
(proxy/context.py SCOPE_KEY); `AnswerHook` writes what a finished generation taught
into the request's outcome (`ctx.outcome.answer`). Once the app returns, the middleware takes the
context from the scope and reads the record once: for the access log, the server
span and accounting. Everything travels in objects handed along, nothing from afar
(docs/decisions/0042-telemetry-operations.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from proxy.context import SCOPE_KEY, RequestContext
from proxy.outcome.request import Answer, Usage
from proxy.response.hooks import taught
from proxy.response.usage_tap import sane_usage, usage_from_chunks
from proxy.tenancy.ledger import entry_of


@dataclass
class RequestRecord:
    started: float  # perf_counter() when the request arrived
    ctx: RequestContext | None = None
    status: int = 499  # stays 499 when the client left before any response
    first_byte: float | None = None  # perf_counter() of the first body byte sent
    headers: dict[str, str] = field(default_factory=dict)  # the response's, lower-case

    def close(self, scope: dict[str, Any]) -> None:
        """Take the request's context from the ASGI scope, once the app has returned."""
        found = scope.get(SCOPE_KEY)
        self.ctx = found if isinstance(found, RequestContext) else None

    @property
    def answer(self) -> Answer | None:
        return self.ctx.outcome.answer if self.ctx is not None else None

    @property
    def backend(self) -> str | None:
        return self.answer.backend if self.answer is not None else None

    @property
    def usage(self) -> Usage | None:
        return self.answer.usage if self.answer is not None else None

    @cached_property
    def ledger(self) -> dict[str, int]:
        """The answered request's ledger entry (proxy/tenancy/ledger.py), made once for
        the server span and accounting; read only after `close`, when `answered`."""
        assert self.ctx is not None
        return entry_of(self.ctx.outcome, self.ctx.requests)

    @property
    def answered(self) -> bool:
        """A backend answered and the client got a 200 (what accounting counts)."""
        return self.answer is not None and self.status == 200


class AnswerHook:
    """A response hook (proxy/response/__init__.py): what the answer taught (the
    backend, vLLM's usage), written into the request's context for the access log,
    the server span and accounting. Placed after `feedback` in make_hooks,
    on the same answers as the feedback hook (a finished generation on a compressible
    route), and on a metered pass-through route's (the table's `meter`, a
    model run that accounting counts like chat), with the usage of its JSON answer
    (embeddings, pooling and the batch route report it as chat does)."""

    def body(self, ctx: RequestContext, ex: Any, parts: list[bytes]) -> list:
        if _metered_pass_through(ctx) and ex.status == 200:
            ex.usage = sane_usage(usage_from_chunks(parts)[0])
        return []

    def done(self, ctx: RequestContext, ex: Any, error: BaseException | None) -> None:
        learned = taught(ctx, ex, error)
        if learned is not None:
            usage, _ttft = learned
            ctx.outcome.answer = Answer(ex.url, Usage.of(usage), usage)
        elif error is None and _metered_pass_through(ctx):
            ctx.outcome.answer = Answer(ex.url, Usage.of(ex.usage), ex.usage)


def _metered_pass_through(ctx: RequestContext) -> bool:
    found = ctx.route_match
    return ctx.route == "other" and found is not None and bool(found.route.meter)
