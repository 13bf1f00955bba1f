"""bench.load's load generator (bench/lib/load_run.py) against the step-loop simulator:
open-loop arrivals queue behind each other, the closed loop's rate follows the steps."""

from __future__ import annotations

import asyncio

from bench.lib.load_run import closed_loop, open_loop
from tests.doubles.sched_sim import Scheduler, SchedVllm, StepLaw
from tests.support.servers import serving


def test_open_loop_measures_queueing_on_the_simulator():
    law = StepLaw(per_prefill_token_ms=0.2, base_ms=2.0, per_seq_ms=0.0, max_num_batched_tokens=256)

    def body(k: int) -> dict:  # distinct first words: no prefix-cache hits between them
        return {"model": "m", "max_tokens": 2, "stream": True,
                "messages": [{"role": "user", "content": f"r{k} " + "word " * 200}]}  # fmt: skip

    with serving(SchedVllm("m", Scheduler(law))) as stub:
        alone = asyncio.run(open_loop(stub.url, [(0.0, body(0))], 10))[0]
        burst = asyncio.run(open_loop(stub.url, [(0.0, body(k)) for k in range(1, 7)], 10))
        rps = asyncio.run(closed_loop(stub.url, [body(k) for k in range(10, 22)], 4, 10))
    assert not alone.error and alone.ttft_ms >= 40  # ~210 tokens at 0.2 ms
    assert max(r.ttft_ms for r in burst) > 3 * alone.ttft_ms  # the last waits behind five
    assert 5 < rps < 25  # ~one 256-token step of ~53 ms per request
