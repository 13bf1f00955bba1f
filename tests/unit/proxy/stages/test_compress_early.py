"""Decisions that need no lookup are made before any (proxy/stages/compress.py `_decide`):
a request the gate skips for its policy or a short context pays neither the memo's nor the
features' lookup; one it prices does both, as before."""

import asyncio

from proxy.backends.endpoint import EndpointPool
from proxy.compression.service import CompressionService
from proxy.gate.decide import CostGate
from proxy.metrics import Metrics
from proxy.outcome.decision import Decision, Why, failed_open
from proxy.outcome.request import RequestOutcome
from proxy.settings import CompressionLimitSettings

DOCS = ["Paris is the capital of France. " * 20, "The Seine flows through Paris. " * 20]


class CountingEngine:
    """The engine's surface the stage reads; counts the lookups."""

    name, calibration = "counting", None

    def __init__(self):
        self.lookups = self.seen_lookups = self.compressions = 0

    async def lookup(self, texts, question, rate, tenant):
        self.lookups += 1
        return [None] * len(texts)

    async def seen_documents(self, texts, tenant):
        self.seen_lookups += 1
        return 0

    def expected_wait_ms(self, per_char):
        return 0.0

    def in_flight(self):
        return 1

    async def compress(self, texts, question, rate, tenant, memo=True):
        self.compressions += 1
        raise RuntimeError("not needed here")


class Ctx:
    tenant = ""

    def __init__(self):
        self.outcome = RequestOutcome()


def shrink(policy: str, min_context_tokens: int) -> tuple[CountingEngine, Decision]:
    engine = CountingEngine()
    gate = CostGate(policy, prior_ms_per_1k=10.0, min_context_tokens=min_context_tokens,
                    max_added_ms=1e4, pool=EndpointPool())  # fmt: skip
    stage = CompressionService(engine, gate, Metrics(), False, CompressionLimitSettings())
    ctx = Ctx()
    sizes = stage.estimate.sizes(ctx.tenant, DOCS)
    texts, ended = asyncio.run(stage._shrink(ctx, DOCS, "What is the capital?", 0.33, sizes))
    assert texts == DOCS and ended is None  # no job ran
    return engine, ctx.outcome.decision


def test_a_short_context_skips_without_a_lookup():
    engine, decision = shrink("auto", 10_000)
    assert decision.why is Why.SHORT_CONTEXT and engine.lookups == 0
    assert engine.seen_lookups == 0


def test_always_goes_to_the_engine_without_the_stage_looking_up():
    engine, decision = shrink("always", 0)
    assert engine.lookups == engine.seen_lookups == 0 and engine.compressions == 1
    assert decision == failed_open(Why.ERROR)  # the double refuses: the original goes on


def test_a_priced_decision_looks_up_the_memo_and_the_features():
    engine, decision = shrink("auto", 0)
    assert decision.why is Why.NO_PREFILL_MEASUREMENT
    assert engine.lookups == 1 and engine.seen_lookups == 1
