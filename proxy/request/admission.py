"""Overload protection: a fast 429 with Retry-After instead of unbounded queueing.

Two limits, both off by default (vLLM queues requests itself; the limits are for a
fleet that prefers shedding to queueing, e.g. behind a load balancer that retries
elsewhere):
- `admission.max_in_flight`: requests in flight in this worker, counted from the moment the
  body is read to the last byte relayed. The key is checked on the head and the body
  read before a slot is taken (proxy/request/forward.py), so an unauthenticated client, or one
  that stalls its body until http.body_timeout_s cuts it, never holds one;
- the per-backend cap is a routing filter, `room:N` (proxy/routing/filters.py):
  a backend at its limit is not a candidate; when every candidate is full the request
  gets the same 429 with Retry-After.
"""

from __future__ import annotations

from proxy.errors import Overloaded
from proxy.metrics import Metrics
from proxy.settings import AdmissionSettings


class Admission:
    def __init__(self, settings: AdmissionSettings, metrics: Metrics):
        self.settings = settings
        self.metrics = metrics
        self.in_flight = 0

    def _refuse(self, scope: str, message: str) -> Overloaded:
        self.metrics.overloaded.labels(scope).inc()
        exc = Overloaded(message)
        exc.retry_after = self.settings.retry_after_s
        return exc

    def enter(self) -> None:
        cap = self.settings.max_in_flight
        if cap and self.in_flight >= cap:
            raise self._refuse("global", f"ragtrim is at its limit of {cap} requests in flight")
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1
