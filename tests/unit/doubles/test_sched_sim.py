"""The capacity-limited simulator: vLLM v1's step loop (budget, chunked prefill, FCFS,
decode one token per step), its step law, and the gauges ragtrim reads."""

import asyncio
import time

import httpx

from proxy.backends.scrape import parse_gauges, parse_totals
from tests.doubles.sched_sim import PRESETS, Scheduler, SchedVllm, Seq, StepLaw
from tests.support.servers import serving

LAW = StepLaw(per_prefill_token_ms=0.01, base_ms=1.0, per_seq_ms=0.1,
              max_num_batched_tokens=100, max_num_seqs=3)  # fmt: skip


def seq(n: int, decode: int = 2, start: int = 0) -> Seq:
    loop = asyncio.new_event_loop()
    return Seq(list(range(start, start + n)), None, decode, 0.0, loop.create_future(),
               loop.create_future())  # fmt: skip


def test_step_law_is_base_plus_prefill_tokens_plus_decoding_sequences():
    assert LAW.step_ms(100, 3) == 1.0 + 1.0 + 0.3
    assert {p.max_num_batched_tokens for p in PRESETS.values()} == {8192}
    assert PRESETS["8b-h100"].per_prefill_token_ms == 0.03
    assert PRESETS["70b-4xh100"].per_prefill_token_ms == 0.1


def test_budget_chunks_a_long_prefill_and_waiting_is_fcfs():
    sched = Scheduler(LAW)
    a, b, c = seq(150), seq(30, start=1000), seq(30, start=2000)
    sched.waiting.extend([a, b, c])
    work, prefill, decoding = sched.schedule(0.0)
    assert [(s, n) for s, n in work] == [(a, 100)] and (prefill, decoding) == (100, 0)
    sched.advance(work, 0.01)
    assert a.prefilling and not a.first_token.done()
    work, prefill, _ = sched.schedule(0.01)  # a's rest first (running), then b, then c
    assert [(s, n) for s, n in work] == [(a, 50), (b, 30), (c, 20)] and prefill == 100
    sched.advance(work, 0.02)
    assert a.first_token.done() and b.first_token.done() and not c.first_token.done()
    work, prefill, decoding = sched.schedule(0.02)  # a and b decode one token each
    assert [(s, n) for s, n in work] == [(a, 1), (b, 1), (c, 10)]
    assert (prefill, decoding) == (10, 2)
    sched.advance(work, 0.03)
    assert a.done.done() and b.done.done() and sched.running == [c]


def test_max_num_seqs_keeps_the_rest_waiting():
    sched = Scheduler(LAW)
    sched.waiting.extend(seq(10, decode=50, start=k * 100) for k in range(5))
    sched.advance(*sched.schedule(0.0)[:1], 0.01)
    assert len(sched.running) == 3 and len(sched.waiting) == 2
    gauges = parse_gauges(sched.metrics_text("m"))
    assert gauges == {"vllm:num_requests_waiting": 2.0, "vllm:num_requests_running": 3.0}


def test_prefix_cache_skips_cached_blocks_when_first_scheduled():
    sched = Scheduler(LAW)
    first, again = seq(40), seq(40)
    sched.waiting.append(first)
    sched.advance(sched.schedule(0.0)[0], 0.01)
    sched.waiting.append(again)
    work, prefill, _ = sched.schedule(0.01)
    assert again.cached == 32 and (again, 8) in work  # 2 full blocks; the last token computed


async def test_a_queue_delays_ttft_and_metrics_split_queue_from_prefill():
    law = StepLaw(per_prefill_token_ms=0.5, base_ms=2.0, per_seq_ms=0.0, max_num_batched_tokens=64)
    sched = Scheduler(law)
    text = " ".join(f"w{i}" for i in range(60))
    bodies = [{"messages": [{"role": "user", "content": f"{k} {text}"}], "stream": True,
               "max_tokens": 4} for k in range(4)]  # fmt: skip
    start = time.monotonic()
    done = []

    async def one(body):
        await sched.serve(body, chat=True)
        done.append(time.monotonic() - start)

    await asyncio.gather(*(one(b) for b in bodies))
    # ~70 tokens each, 64 per step: 4 prompts need >= 5 steps of >= 2 + 32 ms
    assert max(done) >= 5 * 0.034 * 0.9  # the ideal clock never runs ahead of the law
    totals = parse_totals(sched.metrics_text("m"))
    assert totals["vllm:request_prefill_kv_computed_tokens_count"] == 4
    page = sched.metrics_text("m")
    assert "vllm:request_queue_time_seconds_sum" in page
    queue = float(page.split("vllm:request_queue_time_seconds_sum")[1].split()[1])
    assert queue > 0.05  # later requests waited behind earlier prefills
    # each first token is kept with its arrival, on this host's monotonic clock
    assert len(sched.first_tokens) == 4
    assert all(start <= at <= start + max(done) for at, _ in sched.first_tokens)
    assert max(ttft for _, ttft in sched.first_tokens) >= 5 * 0.034 * 0.9


def test_server_answers_with_usage_and_exports_gauges():
    sched = Scheduler(PRESETS["8b-h100"])
    with serving(SchedVllm("stub-model", sched)) as stub:
        body = {"model": "stub-model", "max_tokens": 3,
                "messages": [{"role": "user", "content": "word " * 200}]}  # fmt: skip
        usage = httpx.post(f"{stub.url}/v1/chat/completions", json=body, timeout=30).json()["usage"]
        again = httpx.post(f"{stub.url}/v1/chat/completions", json=body, timeout=30).json()
        page = httpx.get(f"{stub.url}/metrics").text
    assert usage["prompt_tokens"] > 200 and usage["prompt_tokens_details"]["cached_tokens"] == 0
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] > 150
    assert parse_gauges(page) == {"vllm:num_requests_waiting": 0.0,
                                  "vllm:num_requests_running": 0.0}  # fmt: skip
    assert sched.counters["steps"] >= 6  # 2 × (1 prefill step + 2 decode steps)
