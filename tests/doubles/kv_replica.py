"""A simulated GPU replica that publishes KV events as vLLM 0.32 does (issue 30).

It is sched_sim's Scheduler (vLLM v1's step loop on an ideal clock) whose prefix cache
reports what vLLM's BlockPool reports (vllm/v1/core/block_pool.py):
- when a request's new full blocks are cached: one BlockStored with their hashes, the
  hash of the block before them as parent (None from the first block), their token
  ids, block_size, medium "GPU", group_idx 0, kv_cache_spec_kind "full_attention",
  and `extra_keys` one entry per block:
  `(cache_salt,)` on the prompt's first block when salted, else None
  (kv_cache_utils.to_event_extra_keys);
- when a cached block is evicted (least recently used beyond capacity): one
  BlockRemoved per block, before the BlockStored of the step that evicted it;
- on reset (POST /stub/reset, vLLM's /reset_prefix_cache): AllBlocksCleared.
A step's events go out as one batch stamped at the step's end (vLLM takes them from the
scheduler in update_from_output) through kv_publisher.ZmqPublisher.

Block hashes are the simulator's own (chained blake2b, sent as unsigned 64-bit ints
like vLLM 0.32's); ragtrim never reads
vLLM's (they are random per process): it re-hashes token ids and extra keys
(proxy/routing/kv/chain.py). Token ids: with a tokenizer dir, vLLM's chat path
(the template rendered, then encoded without special tokens) as proxy/routing/kv/chat_tokens.py
computes it (checked against vLLM's /tokenize in tests/integration/test_kv_events.py),
and /tokenize answers the same ids; without one, word tokens.

Capacity (`FLEET_PRESETS`), as vLLM sizes it (vllm/v1/worker/gpu_worker.py
determine_available_memory): total × gpu_memory_utilization (0.9) − weights − the
profiled peak of activations and non-torch memory (≈ 2.5-3 GiB at 8192 batched
tokens with CUDA graphs, an estimate), divided by a 16-token block's KV bytes
(layers × KV heads per GPU × head_dim × 2 (K, V) × 2 B × 16). An H100 SXM reports 79.2
GiB (torch total_memory), so 71.3 GiB usable. Model shapes from their config.json:
- 8b-h100, Llama-3.1-8B: 16.1 GB of weights (14.96 GiB); 32 layers × 8 KV heads × 128
  → 2 MiB a block; 71.3 − 15.0 − 2.5 ≈ 53.8 GiB → 27,500 blocks (440k tokens).
- 70b-4xh100, Llama-3.1-70B, TP 4: 131.5 GiB / 4 = 32.9 GiB a GPU; 80 layers × 2 KV
  heads a GPU × 128 → 1.25 MiB a block; 71.3 − 32.9 − 3 ≈ 35.4 GiB → 29,000 blocks.
- qwen3-32b-2xh100, Qwen3-32B, TP 2 (llm-d's 16 H100s are 8 such replicas): 61.1
  GiB / 2 = 30.6 GiB a GPU; 64 layers × 4 KV heads a GPU × 128 → 2 MiB a block;
  71.3 − 30.6 − 3 ≈ 37.7 GiB → 19,300 blocks (309k tokens). Its step law, derived as
  sched_sim's: 2 × 32.8 G FLOPs a token over 2 × 989 TFLOPS at ~45 % MFU ≈ 0.074 ms;
  base 12 ms (30.6 GiB of weights at 3.35 TB/s: 9.8 ms, plus all-reduces and
  scheduling); 0.06 ms a decoding sequence (128 KiB of KV a token, ~1.5k tokens).
  Measured (tests/doubles/calibrate_step_law.py, one H200, 2026-12-04): a random
  Qwen3-32B-shaped model in HF transformers (bf16, SDPA) prefilled 2,048 and 6,144
  tokens in 265 and 828 ms, 0.13 ms a token on one GPU (~62 % of the 790 TFLOP/s
  bf16 matmul rate measured on that chip); split over TP 2 that is ~0.065 ms before
  the all-reduces, beside the preset's 0.074. HF's eager decode is launch-bound (120
  ms a step at batch 1, no CUDA graph), so base_ms and per_seq_ms stay derived.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.doubles.kv_publisher import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    KVCacheEvent,
    ZmqPublisher,
)
from tests.doubles.prefill_sim import PrefixCache
from tests.doubles.sched_sim import PRESETS, Scheduler, SchedVllm, Seq, StepLaw
from tests.doubles.stub_vllm import _json


@dataclass(frozen=True)
class FleetPreset:
    law: StepLaw
    capacity_blocks: int
    gpus: int
    model: str


FLEET_PRESETS = {
    "8b-h100": FleetPreset(PRESETS["8b-h100"], 27_500, 1, "Llama-3.1-8B"),
    "70b-4xh100": FleetPreset(PRESETS["70b-4xh100"], 29_000, 4, "Llama-3.1-70B"),
    "qwen3-32b-2xh100": FleetPreset(
        StepLaw(per_prefill_token_ms=0.074, base_ms=12.0, per_seq_ms=0.06), 19_300, 2, "Qwen3-32B"
    ),
}


def _ext(block: bytes) -> int:
    """The published form of a block hash: an unsigned 64-bit int, as vLLM 0.32 sends it
    (the captured fixtures), from the simulator's own chained digest."""
    return int.from_bytes(block[:8], "big")


class EventedPrefixCache(PrefixCache):
    """PrefixCache that queues the KV events vLLM's BlockPool would emit."""

    def __init__(self, block_size: int = 16, capacity_blocks: int = 65_536):
        super().__init__(block_size, capacity_blocks)
        self.events: list[KVCacheEvent] = []

    def admit(self, tokens: list[int], salt: str | None = None) -> int:
        hashes = self._chain(tokens, salt)
        usable = min((len(tokens) - 1) // self.block_size, len(hashes))  # never the last token
        hits = 0
        while hits < usable and hashes[hits] in self._blocks:
            hits += 1
        for h in hashes:
            self._blocks[h] = None
            self._blocks.move_to_end(h)
        while len(self._blocks) > self.capacity:
            gone, _ = self._blocks.popitem(last=False)
            self.events.append(BlockRemoved(block_hashes=[_ext(gone)], medium="GPU", group_idx=0))
        if hits < len(hashes):
            self.events.append(self._stored(tokens, hashes, hits, salt))
        return hits * self.block_size

    def _stored(self, tokens: list[int], hashes: list[bytes], start: int,
                salt: str | None) -> BlockStored:  # fmt: skip
        bs = self.block_size
        extra = [(salt,) if salt and i == 0 else None for i in range(start, len(hashes))]
        return BlockStored(
            block_hashes=[_ext(h) for h in hashes[start:]],
            parent_block_hash=_ext(hashes[start - 1]) if start else None,
            token_ids=list(tokens[start * bs : len(hashes) * bs]), block_size=bs,
            lora_id=None, medium="GPU", lora_name=None, extra_keys=extra, group_idx=0,
            kv_cache_spec_kind="full_attention",
        )  # fmt: skip

    def take_events(self) -> list[KVCacheEvent]:
        events, self.events = self.events, []
        return events


@dataclass
class KvScheduler(Scheduler):
    """A Scheduler whose steps publish their KV events (one batch a step)."""

    publisher: ZmqPublisher | None = None
    chat_tokenizer: Any = None  # routing.kv.chat_tokens.ChatTokenizer, or None: word tokens
    evicted: int = field(default=0)

    def reset(self) -> None:
        old = getattr(self, "cache", None)
        super().reset()
        self.cache = EventedPrefixCache(self.law.block_size, self.capacity_blocks)
        if old is not None and self.publisher is not None:
            self.publisher.publish([AllBlocksCleared()])

    def tokens_of(self, req: dict, chat: bool) -> list[int]:
        """The prompt's ids as vLLM's OpenAI server makes them."""
        tok = self.chat_tokenizer
        if tok is None:
            return super().tokens_of(req, chat)
        if not chat:
            return tok.encode(str(req.get("prompt", "")), special=True)
        return tok.chat(req)  # its system-prompt cache encodes a long shared context once

    def advance(self, work: list[tuple[Seq, int]], end: float) -> None:
        super().advance(work, end)
        events = self.cache.take_events()
        self.evicted += sum(isinstance(e, BlockRemoved) for e in events)
        if events and self.publisher is not None:
            self.publisher.publish(events)

    def metrics_text(self, model: str) -> str:
        usage = len(self.cache._blocks) / max(1, self.capacity_blocks)
        labels = f'engine="0",model_name="{model}"'
        return super().metrics_text(model) + (
            f"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{{labels}}} {usage}\n"
        )


class KvReplica(SchedVllm):
    """SchedVllm with vLLM's /tokenize (real ids) over a KvScheduler."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/tokenize":
            return await super().__call__(scope, receive, send)
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        req = json.loads(body or b"{}")
        ids = self.prefill.tokens_of(req, "messages" in req)
        await _json(send, 200, {"count": len(ids), "max_model_len": 131_072, "tokens": ids,
                                "token_strs": None})  # fmt: skip
