"""Re-measure the compressor while the gate skips for cost and nothing has taught it.

Why: the gate learns a compressor's cost from the jobs it lets run (proxy/gate/job_cost.py),
and its first sample is the start-up calibration (compressors/calibration.py). A
calibration taken on a busy CPU (a pod starting beside others, a noisy neighbour) makes
compression look dear; the gate then skips every request for cost, no job runs, and no
later sample can correct it: the pessimism sticks for the life of the process (seen in
bench.ttft_sim runs that started on a loaded machine: every 0.03 ms/token cell skipped).
So while decisions skip for cost and no job has taught the gate for `every_s`, the
calibration workload runs again in a compression worker, off the request path (one at a
time, only when no compression is in flight: it never queues ahead of a request), and
its sample joins the calibration law (`CostGate.calibrated`: per tenant, the gate prices
with a tenant's own jobs while it has fresh ones, else with this). The law is a
median over its window, so two quiet samples outvote a bad one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from compressors import calibration
from proxy.compression.engine import CompressionEngine
from proxy.gate.decide import CostGate


class Recalibration:
    def __init__(
        self,
        engine: CompressionEngine,
        gate: CostGate,
        every_s: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        """`every_s` 0: never (the start-up calibration and the jobs only)."""
        self.engine, self.gate, self.every_s, self.clock = engine, gate, every_s, clock
        self.last_learned = clock()
        self.runs = 0
        self.small_ms = float("inf")  # the last base-size run: every other run is wide, if cheap
        self._task: asyncio.Task | None = None

    def learned(self) -> None:
        """A job taught the gate: no re-measurement needed for a while."""
        self.last_learned = self.clock()

    def after_skip(self) -> None:
        """A decision skipped for its cost: re-measure when nothing taught the gate lately."""
        stale = self.clock() - self.last_learned >= self.every_s
        if self.every_s and stale and self._task is None and self.engine.idle:
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            wide = self.runs % 2 == 1 and calibration.wide_pays(self.small_ms)
            outcome = await self.engine.calibrate(calibration.WIDE_COPIES if wide else 1)
            if outcome is not None:
                self.small_ms = self.small_ms if wide else outcome.ms
                self.gate.observe_calibration(outcome)
                self.runs += 1
        finally:
            self.last_learned = self.clock()
            self._task = None
