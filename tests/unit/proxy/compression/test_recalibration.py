"""Recalibration: a pessimistic start-up measurement no longer sticks (issue 18)."""

import asyncio

from proxy.backends.endpoint import EndpointPool
from proxy.compression.recalibration import Recalibration
from proxy.gate.decide import CostGate
from tests.support.jobs import job


def Outcome(ms: float, tokens: int = 450):  # noqa: N802 - what calibrate reports
    return job(tokens, ms)


class Engine:
    def __init__(self, ms: float):
        self.ms, self.idle, self.calls = ms, True, 0

    async def calibrate(self, copies: int = 1):
        self.calls += 1
        self.copies = [*getattr(self, "copies", []), copies]
        return Outcome(self.ms)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def gate() -> CostGate:
    g = CostGate("auto", prior_ms_per_1k=10.0, min_context_tokens=200, max_added_ms=1e4,
                 pool=EndpointPool.from_urls(["b"]))  # fmt: skip
    for tokens in (500, 1000, 2000):
        g.observe_prefill("b", tokens, tokens * 0.1)  # 0.1 ms per prompt token
    return g


def decide(g: CostGate):
    return g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.33)


async def skip_then_settle(recal: Recalibration) -> None:
    recal.after_skip()
    await asyncio.sleep(0)  # the re-measurement task runs to its end
    await asyncio.sleep(0)


def test_a_busy_start_up_measurement_is_outvoted_by_quiet_ones():
    g, clock = gate(), Clock()
    g.observe_calibration(Outcome(ms=450 * 1.0))  # 1 ms per token: a loaded machine
    assert decide(g).for_cost  # 2000 tokens cost 2 s, save 134 ms: skipped for cost
    recal = Recalibration(Engine(ms=450 * 0.01), g, every_s=30, clock=clock)
    for _ in range(2):
        clock.now += 30
        asyncio.run(skip_then_settle(recal))
    assert recal.runs == 2
    assert decide(g).action == "compress"


def test_no_rerun_before_the_interval_nor_while_a_job_runs_nor_when_off():
    clock = Clock()
    engine = Engine(ms=5.0)
    recal = Recalibration(engine, gate(), every_s=30, clock=clock)
    clock.now = 29
    asyncio.run(skip_then_settle(recal))
    assert engine.calls == 0
    clock.now, engine.idle = 30, False
    asyncio.run(skip_then_settle(recal))
    assert engine.calls == 0
    off = Recalibration(Engine(ms=5.0), gate(), every_s=0, clock=clock)
    clock.now = 1e6
    asyncio.run(skip_then_settle(off))
    assert off.engine.calls == 0


def test_a_job_that_taught_the_gate_postpones_it():
    clock = Clock()
    engine = Engine(ms=5.0)
    recal = Recalibration(engine, gate(), every_s=30, clock=clock)
    clock.now = 40
    recal.learned()
    clock.now = 60
    asyncio.run(skip_then_settle(recal))
    assert engine.calls == 0
    clock.now = 70
    asyncio.run(skip_then_settle(recal))
    assert engine.calls == 1


def test_every_other_rerun_is_wide_only_where_a_run_is_cheap():
    """The wide size gives the law its fixed part (compressors/calibration.py); a run
    that would hold the worker past MAX_WIDE_MS (LLMLingua on a CPU) is never made."""
    for ms, expected in ((450 * 0.01, [1, 4, 1, 4]), (450 * 1.0, [1, 1, 1, 1])):
        g, clock, engine = gate(), Clock(), Engine(ms=ms)
        recal = Recalibration(engine, g, every_s=30, clock=clock)
        for _ in range(4):
            clock.now += 30
            asyncio.run(skip_then_settle(recal))
        assert engine.copies == expected
