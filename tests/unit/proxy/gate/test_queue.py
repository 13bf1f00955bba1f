"""The gate knows the backend's queue: under requests waiting, a removed token saves its
own prefill and the wait of every request behind it (proxy/gate/decide.py, BackendQueue); the
gauges come from vLLM's /metrics (proxy/backends/scrape.py). Both directions, unit and app."""

import uuid

import httpx

from proxy.backends.endpoint import EndpointPool
from proxy.gate.decide import CostGate
from proxy.gate.prefill_law import BackendQueue, queue_multiplier
from proxy.outcome.decision import Why
from tests.doubles.prefill_sim import PrefillSim
from tests.doubles.stub_vllm import StubVllm
from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import SYSTEM
from tests.support.servers import serving


def gate() -> CostGate:
    g = CostGate("auto", prior_ms_per_1k=20.0, min_context_tokens=200, max_added_ms=250.0,
                 pool=EndpointPool.from_urls(["b"]))  # fmt: skip
    for tokens in (500, 1000, 2000):
        g.observe_prefill("b", tokens, tokens * 0.03)  # an 8B model on an H100
    return g


def decide(g: CostGate):
    return g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.5)


def test_idle_gpu_skips_and_a_queue_makes_the_same_compression_pay():
    g = gate()  # saves 1000 × 0.03 = 30 ms, costs 2000 × 0.02 = 40 ms
    assert decide(g).why is Why.NOT_WORTH_IT
    g.pool.get("b").observe_queue(waiting=3, running=12)  # 4 prefills' worth: 120 ms saved
    d = decide(g)
    assert d.action == "compress" and round(d.figures.queued) == 3, d
    g.pool.get("b").observe_queue(waiting=0, running=12)  # one reading: the mean still says 1.5
    assert decide(g).action == "compress"
    for _ in range(3):  # drained (the window's 4 readings all 0): one request's saving
        g.pool.get("b").observe_queue(waiting=0, running=12)
    assert decide(g).action == "skip"


def test_a_saturated_ragtrim_cpu_outweighs_a_backend_queue():
    # the issue-18 contention term: 8 compressions in flight on 2 cores, each 4x slower
    g = CostGate("auto", prior_ms_per_1k=20.0, min_context_tokens=200, max_added_ms=1000.0,
                 cores=2, pool=EndpointPool.from_urls(["b"]))  # fmt: skip
    for tokens in (500, 1000, 2000):
        g.observe_prefill("b", tokens, tokens * 0.03)
    g.pool.get("b").observe_queue(waiting=1, running=4)  # 60 ms saved vs 40 ms of work: pays
    assert g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.5).action == "compress"
    busy = g.decide(context_tokens=2000, cached_docs=0, total_docs=4, rate=0.5, in_flight=8)
    assert busy.why is Why.NOT_WORTH_IT, busy  # 160 ms of work


def test_queue_multiplier_counts_itself_and_those_behind():
    assert queue_multiplier(0) == 1 and queue_multiplier(4) == 5 and queue_multiplier(-1) == 1


def test_stale_or_partial_readings_count_as_no_queue():
    pool = EndpointPool.from_urls(["a", "b"])
    q = BackendQueue(pool, fresh_s=2.0)
    pool.get("a").observe_queue(5, 1, at=100.0)
    assert q.waiting(now=101.0) == 5
    assert q.waiting(now=103.0) == 0  # no response since: the gauge may be long gone
    pool.get("b").observe_queue(2, 1, at=101.0)
    assert q.waiting(now=101.5) == 2  # the least-queued backend (routing comes later)
    for at, waiting in ((104.0, 0), (104.5, 1), (105.0, 0), (105.5, 1)):
        pool.get("a").observe_queue(waiting, 1, at=at)
        pool.get("b").observe_queue(2, 1, at=at)
    assert q.waiting(now=105.6) == 0.5  # a blip counts for its share of the time
    for ep in pool.endpoints:
        ep.queue.clear()
    pool.get("a").observe_queue(5, 1, at=100.0)
    pool.get("b").observe_queue(1, 1, at=90.0)  # b idle (stale): the request may well go there
    assert q.waiting(now=100.5) == 0


class QueuedSim(PrefillSim):
    """A PrefillSim whose /metrics also reports a settable queue (vLLM's gauges)."""

    waiting = 0

    def metrics_text(self, model: str) -> str:
        labels = f'engine="0",model_name="{model}"'
        return super().metrics_text(model) + (
            f"# TYPE vllm:num_requests_waiting gauge\n"
            f"vllm:num_requests_waiting{{{labels}}} {float(self.waiting)}\n"
            f"# TYPE vllm:num_requests_running gauge\n"
            f"vllm:num_requests_running{{{labels}}} 8.0\n"
        )


def rag_body() -> dict:
    tag = uuid.uuid4().hex[:8]
    docs = [" ".join(f"fact{tag}{d}w{i} is true." for i in range(60)) for d in range(2)]
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(docs)},
                {"role": "user", "content": "Which fact is true?"}]  # fmt: skip
    return {"model": "stub-model", "messages": messages}


def decisions(url: str, n: int) -> list[str]:
    out = []
    for _ in range(n):
        resp = httpx.post(f"{url}/v1/chat/completions", json=rag_body(), timeout=30)
        assert resp.status_code == 200, resp.text
        out.append(resp.headers["x-ragtrim-decision"])
    return out


AUTO = {"policy": "auto", "min_context_tokens": 0, "rate": 0.5, "compressor": "extractive",
        "prefill_scrape_interval_s": 0.05}  # fmt: skip


def test_app_compresses_under_a_backend_queue_and_stops_when_it_drains(make_proxy):
    # as test_prefill's not-worth-it case: ≈ 0.19 ms saved a token vs ≈ 0.23 of cost
    sim = QueuedSim(per_token_ms=0.35)
    with serving(StubVllm(prefill=sim)) as stub:
        proxy = make_proxy([stub.url], compressor=HalfWords(delay=0.2), compression=AUTO)
        idle = decisions(proxy.url, 4)
        sim.waiting = 6
        queued = decisions(proxy.url, 4)
        sim.waiting = 0
        drained = []  # until the gate's window of readings has refilled with zeros
        while len(drained) < 16 and drained[-1:] != ["skip"]:
            drained += [d.split(":")[0] for d in decisions(proxy.url, 1)]
    assert any(d.startswith("skip:not-worth-it") for d in idle), idle
    assert not any(d.startswith("compress:auto") for d in idle), idle
    assert any(d.startswith("compress:auto") and "queued=" in d for d in queued), queued
    assert drained[-1] == "skip", drained
