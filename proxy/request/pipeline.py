"""The request pipeline: stages run in the order of one list (see app.py).

A stage is `async __call__(ctx) -> None` with a `name`. A stage may reject bad
input by raising a ProxyError (a 4xx); any other failure fails open: it is
logged and counted, and the request goes on with what the previous stages left.
Stages therefore change `ctx` only once their work has succeeded.

With tracing on, the stages that cost time (TRACED_STAGES) each run in a span
(proxy/telemetry/tracing.py).
"""

from __future__ import annotations

import logging
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
    def __init__(self, stages: Sequence[Stage], metrics: Metrics, log_prompts: bool,
                 tracing: Tracing | None = None):  # fmt: skip
        self.stages = list(stages)
        self.metrics = metrics
        self.log_prompts = log_prompts
        self.tracing = tracing

    async def run(self, ctx: RequestContext) -> None:
        tracing = self.tracing
        for stage in self.stages:
            try:
                if tracing is not None and stage.name in TRACED_STAGES:
                    await tracing.run_stage(stage, ctx)
                else:
                    await stage(ctx)
            except ProxyError:
                raise
            except Exception as exc:  # noqa: BLE001 - fail open, by design
                detail = describe_error(exc, self.log_prompts)
                log.warning("stage %s failed open: %s", stage.name, detail,
                            exc_info=self.log_prompts)  # fmt: skip
                self.metrics.stage_failures.labels(stage.name).inc()
