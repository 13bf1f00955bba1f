"""What operators observe a gateway with, held together for the composition root:
tracing, the access log, and the ledger's writer (the tenancy policy's accounting,
proxy/tenancy/policy.py, which also owns the limits).
Why: docs/decisions/0042-telemetry-operations.md.

proxy/components.py builds one `Operations` (`make_operations`) and lets it wrap the
parts it observes: the transport and the router (spans, only with tracing on), the
answer hook (what a finished generation taught, for the request's record) with the
quota's settlement after it (tenancy.quotas.charge=computed), and the
data plane (the telemetry middleware, left out when tracing, the access log and
accounting are all off).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Scope

from proxy.metrics import Metrics
from proxy.response.points import Hook
from proxy.response.quota_settle import QuotaSettleHook
from proxy.telemetry.accesslog import AccessLog
from proxy.telemetry.middleware import TelemetryMiddleware
from proxy.telemetry.record import AnswerHook
from proxy.telemetry.traced import TracedRouter, TracedTransport
from proxy.telemetry.tracing import Tracing
from proxy.tenancy.accounting import Accounting


@dataclass
class Operations:
    metrics: Metrics
    tracing: Tracing | None = None
    access_log: AccessLog | None = None
    accounting: Accounting | None = None
    settle: QuotaSettleHook | None = None  # tenancy.quotas.charge=computed
    vouches: Callable[[Scope], bool] | None = None  # may a client steer its trace

    @property
    def observing(self) -> bool:
        return any((self.tracing, self.access_log, self.accounting))

    def wrap_transport(self, transport: Any) -> Any:
        return transport if self.tracing is None else TracedTransport(transport, self.tracing)

    def wrap_router(self, router: Any) -> Any:
        return router if self.tracing is None else TracedRouter(router, self.tracing)

    def hooks(self) -> list[Hook]:
        """The response hooks operations add: the answer's, when anything reads it, and
        the quota's settlement, which reads it."""
        if self.settle is not None:
            return [AnswerHook(), self.settle]
        return [AnswerHook()] if self.observing else []

    def wrap_app(self, app: ASGIApp) -> ASGIApp:
        if not self.observing:
            return app
        return TelemetryMiddleware(
            app,
            self.metrics,
            tracing=self.tracing,
            access_log=self.access_log,
            accounting=self.accounting,
            vouches=self.vouches,
        )

    async def aclose(self) -> None:
        if self.tracing is not None:
            self.tracing.shutdown()
        if self.settle is not None:
            await self.settle.writes.drain()
