"""Issue 33 item 2: no request teaches the gate for others (gate poisoning).

Tenant A ("acme") runs each attack of the probe, and new shapes of it, against the real
compress stage, cost gate and engine with the real default compressor (fast_extractive,
wired by proxy/components.py); tenant B ("globex") then sends one ~1.6k-token request.
What B's decision must be, per attack:

- characters per token (whitespace-padded documents, ingested then named ~40 times;
  fresh padded documents; no-break spaces; runs of dots, which push it down): the same
  as without the attack, to the byte of its reason (the estimate is per tenant);
- the job-cost law (giant questions): the same as without the attack, to the byte; and
  with tenancy off (A and B one tenant) the same action, since the question's part of a
  job is timed apart and no longer teaches the context's price;
- the prefill law (TTFTs inflated by A's own queueing): the same as without the attack,
  to the byte, on a backend with vLLM's prefill metrics and on one without.

A's own poisoned values come back within 60 s (proxy/gate/learning.py `MAX_AGE_S`), shown
with a fake clock.
"""

import asyncio

import pytest

from cache.store import MemoryStore
from compressors.tokens import ApproxTokenCounter
from proxy.backends.endpoint import EndpointPool
from proxy.compression.parts import make_engine, make_gate
from proxy.compression.service import CompressionService
from proxy.metrics import Metrics
from proxy.outcome.decision import Decision, Why
from proxy.outcome.request import RequestOutcome
from proxy.response.feedback import Feedback
from proxy.settings import Settings

BACKEND = "http://vllm:8000"
RATE = 0.5
QUESTION = "How much did output rise at plant 7?"


def prose(topic: str, sentences: int = 20, salt: str = "") -> str:
    """English prose, ~20 approximate tokens a sentence (400 for 20)."""
    return " ".join(
        f"The {topic} report {salt}{i} notes that output at plant {i} rose by {i % 9 + 1} "
        "percent in the quarter."
        for i in range(sentences)
    )


VICTIM = [prose(topic) for topic in ("steel", "grain", "timber", "copper")]  # ~1.6k tokens


class Ctx:
    prefix_key = None

    def __init__(self, tenant: str):
        self.tenant, self.outcome = tenant, RequestOutcome()


class Proxy:
    """The compress stage and feedback as proxy/components.py wires them (one backend)."""

    def __init__(self):
        settings = Settings(backends=[BACKEND])
        c = settings.compression
        self.pool = EndpointPool.from_urls([BACKEND])
        self.engine = make_engine(c, MemoryStore(), ApproxTokenCounter())
        self.engine.compressor.load()  # as warm-up would (no calibration: B's price is the prior)
        self.gate = make_gate(c, self.engine.compressor, self.pool)
        metrics = Metrics()
        self.stage = CompressionService(self.engine, self.gate, metrics, False, c.limits)
        self.feedback = Feedback(metrics, self.gate, None, self.pool)

    async def send(self, tenant: str, docs: list[str], question: str = QUESTION) -> Decision:
        ctx = Ctx(tenant)
        sizes = self.stage.estimate.sizes(tenant, docs)
        await self.stage._shrink(ctx, docs, question, RATE, sizes)
        return ctx.outcome.decision

    def vllm_metrics(self, ms_per_token: float) -> None:
        """Samples from the backend's own prefill metrics (proxy/backends/scrape.py)."""
        for tokens in (500, 1000, 2000):
            self.pool.get(BACKEND).prefill.add(5 + tokens * ms_per_token, tokens, "metrics")

    def streamed(self, tenant: str, tokens: int, ttft_ms: float) -> None:
        """A streamed answer's usage and TTFT (proxy/response/feedback.py)."""
        self.feedback.observe(Ctx(tenant), BACKEND, {"prompt_tokens": tokens}, ttft_ms)


def victim_decision(attack=None, *, victim: str = "globex", setup=None) -> Decision:
    """B's decision on a fresh proxy, after `attack(proxy)` when given."""

    async def run() -> str:
        proxy = Proxy()
        try:
            (setup or (lambda p: p.vllm_metrics(0.2)))(proxy)
            if attack is not None:
                await attack(proxy)
            return await proxy.send(victim, VICTIM)
        finally:
            proxy.engine.close()

    return asyncio.run(run())


def padded(pad: str, salt: str = "", count: int = 30_000) -> list[str]:
    """Two documents of ~300 tokens of prose each, padded with `count` characters of `pad`."""
    return [prose(topic, 15, salt) + pad * count for topic in ("tin", "zinc")]


@pytest.mark.parametrize("pad", [" ", "\u00a0", ". "], ids=["spaces", "nbsp", "dots"])
def test_padded_documents_ingested_then_named_leave_b_as_it_was(pad):
    """The probe's shape: /v1/compress of padded documents (engine.compress, as
    proxy/compression/ingest.py calls it), then ~40 chat requests naming them (memo hits)."""

    async def attack(proxy: Proxy) -> None:
        docs = padded(pad)
        await proxy.engine.compress(docs, QUESTION, RATE, "acme")
        for _ in range(40):
            await proxy.send("acme", docs)

    baseline = victim_decision()
    assert baseline.why is Why.AUTO, baseline
    assert victim_decision(attack).reason == baseline.reason


def test_fresh_padded_documents_leave_b_as_it_was():
    async def attack(proxy: Proxy) -> None:
        for i in range(40):  # every request new documents: misses, counted by the compressor
            await proxy.send("acme", padded(" ", salt=f"r{i}-"))

    assert victim_decision(attack).reason == victim_decision().reason


def giant_questions(n: int = 10, chars: int = 200_000):
    """A's small contexts (~540 tokens) asked with giant questions, each one new."""
    words = " ".join(f"what about word{i} and river{i % 100}" for i in range(chars // 30))

    async def attack(proxy: Proxy) -> None:
        docs = [prose("tin", 14), prose("zinc", 13)]
        for i in range(n):
            await proxy.send("acme", docs, f"{i} {words}")

    return attack


def test_giant_questions_leave_b_as_it_was():
    baseline = victim_decision()
    assert victim_decision(giant_questions()).reason == baseline.reason


def test_giant_questions_teach_no_fixed_cost_within_one_tenant():
    """Tenancy off: A and B are one tenant, so they share the law. The question's part
    is timed apart (compressors/base.py `question_ms`): B still compresses."""
    baseline = victim_decision(victim="acme")
    after = victim_decision(giant_questions(), victim="acme")
    assert baseline.why is after.why is Why.AUTO, after


def fast_gpu(proxy: Proxy) -> None:
    proxy.vllm_metrics(0.015)  # B's 1.6k tokens save ~12 ms: not worth the job


def queued_streams(proxy: Proxy) -> None:
    """A floods the backend: its own TTFTs wait behind each other (2 ms per token)."""
    for i in range(40):
        tokens = 300 + 50 * i
        proxy.streamed("acme", tokens, 2.0 * tokens)


def test_inflated_ttfts_leave_b_as_it_was_on_a_backend_with_metrics():
    async def attack(proxy: Proxy) -> None:
        queued_streams(proxy)

    baseline = victim_decision(setup=fast_gpu)
    assert baseline.why is Why.NOT_WORTH_IT, baseline
    assert victim_decision(attack, setup=fast_gpu).reason == baseline.reason


def test_inflated_ttfts_leave_b_as_it_was_on_a_backend_without_metrics():
    def own_streams(proxy: Proxy) -> None:  # B's own TTFTs: a fast GPU
        for tokens in (500, 1000, 2000):
            proxy.streamed("globex", tokens, 5 + 0.015 * tokens)

    async def attack(proxy: Proxy) -> None:
        queued_streams(proxy)

    baseline = victim_decision(setup=own_streams)
    assert baseline.why is Why.NOT_WORTH_IT, baseline
    assert victim_decision(attack, setup=own_streams).reason == baseline.reason


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_attackers_own_estimate_recovers_within_60_s():
    """A poisons its own estimate as far as the band lets it (8 characters a token);
    60 s after its last sample it is the prior again."""
    clock = Clock()

    async def run() -> list[float]:
        proxy = Proxy()
        proxy.stage.estimate.clock = clock
        proxy.vllm_metrics(0.2)
        try:
            seen = [proxy.stage.estimate.chars_per_token("acme")]
            for i in range(10):
                await proxy.send("acme", padded("\u00a0", salt=f"r{i}-", count=3000))
            seen.append(proxy.stage.estimate.chars_per_token("acme"))
            clock.now += 61
            return [*seen, proxy.stage.estimate.chars_per_token("acme")]
        finally:
            proxy.engine.close()

    assert asyncio.run(run()) == [3.5, 8.0, 3.5]


def test_the_attackers_own_view_of_a_backend_without_metrics_recovers_within_60_s():
    proxy = Proxy()
    proxy.pool.get(BACKEND).prefill.clock = clock = Clock()
    try:
        queued_streams(proxy)
        assert proxy.gate.prefill_ms_per_token("acme") == pytest.approx(2.0)
        assert proxy.gate.prefill_ms_per_token("globex") is None
        clock.now += 61
        assert proxy.gate.prefill_ms_per_token("acme") is None
    finally:
        proxy.engine.close()
