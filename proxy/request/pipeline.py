"""The request pipeline: stages run in the order of one list (see app.py).

A stage is `async __call__(ctx) -> None` with a `name`. A stage may reject bad
input by raising a ProxyError (a 4xx); any other failure fails open: it is
logged and counted, and the request goes on with what the previous stages left.
Stages therefore change `ctx` only once their work has succeeded.

With tracing on, the stages that cost time (TRACED_STAGES) each run in a span
(proxy/telemetry/tracing.py). Every stage's time goes to `ragtrim_stage_seconds{stage}`
(a count and a sum, ~1 µs a stage): where ragtrim's own time per request goes, at GPU
speed the figure that decides whether compressing pays (bench.path_cost).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Protocol

from proxy.context import RequestContext
from proxy.errors import ProxyError, describe_error
from proxy.metrics import Metrics
from proxy.telemetry.tracing import TRACED_STAGES, Tracing

log = logging.getLogger("ragtrim.pipeline")


class Stage(Protocol):
    name: str

    async def __call__(self, ctx: RequestContext) -> None: ...


class Pipeline:
    def __init__(
        self,
        stages: Sequence[Stage],
        metrics: Metrics,
        log_prompts: bool,
        tracing: Tracing | None = None,
    ):
        self.stages = list(stages)
        self.metrics = metrics
        self.log_prompts = log_prompts
        self.tracing = tracing
        self.timers = [metrics.stage_seconds.labels(stage.name) for stage in self.stages]

    async def run(self, ctx: RequestContext) -> None:
        tracing, clock = self.tracing, time.perf_counter
        for stage, timer in zip(self.stages, self.timers, strict=True):
            start = clock()
            try:
                if tracing is not None and stage.name in TRACED_STAGES:
                    await tracing.run_stage(stage, ctx)
                else:
                    await stage(ctx)
            except ProxyError:
                raise
            except Exception as exc:  # noqa: BLE001 - fail open, by design
                detail = describe_error(exc, self.log_prompts)
                log.warning(
                    "stage %s failed open: %s", stage.name, detail, exc_info=self.log_prompts
                )
                self.metrics.stage_failures.labels(stage.name).inc()
            finally:
                timer.observe(clock() - start)
