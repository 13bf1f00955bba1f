"""A simulated GPU-speed vLLM prefill for StubVllm: time law, prefix cache, metrics.

    TTFT = base_ms + per_token_ms × uncached prompt tokens

(the shape of vLLM's prefill: a fixed step cost plus compute linear in the tokens not
served from the prefix cache; published orders of magnitude: an 8B model on one H100
≈ 0.03 ms per token, a 70B on four ≈ 0.1, a saturated replica several times more).
Concurrent prefills overlap (a GPU batches them): no queueing is modelled, which is the
side least favourable to compression.

The prefix cache works like vLLM's (vllm/v1/core/kv_cache_utils.py): the prompt's
tokens in full blocks of `block_size` (16 on GPU), each block's hash chained to its
parent's, the first one mixed with `cache_salt`; a request is served the longest run
of leading blocks found, never its last token (vLLM recomputes at least one token to
produce logits); every full block is then stored, least recently used evicted beyond
`capacity_blocks`. So one changed token invalidates every block after it.

Tokens: a local Hugging Face `tokenizer.json` when given (the benchmark gives the same
one to ragtrim, so both count alike), else words and punctuation as tokens.
`metrics_text()` renders the series vLLM 0.32 exports that ragtrim reads
(proxy/backends/scrape.py) plus the prefix-cache counters.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass, field

_PIECES = re.compile(r"\w+|[^\w\s]")


class WordTokenizer:
    """Words and punctuation; ids from a stable hash (deterministic across processes)."""

    def __call__(self, text: str) -> list[int]:
        return [int.from_bytes(hashlib.blake2b(p.encode(), digest_size=4).digest(), "big")
                for p in _PIECES.findall(text)]  # fmt: skip


class HFTokenizer:
    def __init__(self, path: str):
        from pathlib import Path

        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))

    def __call__(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids


def render_chat(messages: list[dict]) -> str:
    """ChatML-like rendering: the system prompt first, so it forms the shared prefix."""
    parts = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"<|im_start|>{m.get('role', 'user')}\n{content or ''}<|im_end|>\n")
    return "".join(parts) + "<|im_start|>assistant\n"


class PrefixCache:
    def __init__(self, block_size: int = 16, capacity_blocks: int = 65_536):
        self.block_size = block_size
        self.capacity = capacity_blocks
        self._blocks: OrderedDict[bytes, None] = OrderedDict()

    def _chain(self, tokens: list[int], salt: str | None) -> list[bytes]:
        hashes, parent = [], (salt or "").encode()
        for start in range(0, len(tokens) - self.block_size + 1, self.block_size):
            block = tokens[start : start + self.block_size]
            h = hashlib.blake2b(parent + repr(block).encode(), digest_size=16).digest()
            hashes.append(h)
            parent = h
        return hashes

    def admit(self, tokens: list[int], salt: str | None = None) -> int:
        """Cached tokens for this prompt; then its full blocks are stored."""
        chain = self._chain(tokens, salt)
        usable = (len(tokens) - 1) // self.block_size  # never the last token
        hits = 0
        while hits < min(usable, len(chain)) and chain[hits] in self._blocks:
            hits += 1
        for h in chain:
            self._blocks[h] = None
            self._blocks.move_to_end(h)
        while len(self._blocks) > self.capacity:
            self._blocks.popitem(last=False)
        return hits * self.block_size


@dataclass
class PrefillSim:
    per_token_ms: float
    base_ms: float = 15.0
    block_size: int = 16
    capacity_blocks: int = 65_536
    tokenizer: str = ""  # a local HF model dir; empty = WordTokenizer
    totals: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cache = PrefixCache(self.block_size, self.capacity_blocks)
        self.tokenize = HFTokenizer(self.tokenizer) if self.tokenizer else WordTokenizer()
        self.reset()

    def reset(self) -> None:
        self.cache = PrefixCache(self.block_size, self.capacity_blocks)
        self.totals = dict.fromkeys(("requests", "prefill_s", "computed", "prompt", "cached"), 0.0)

    def admit(self, req: dict, chat: bool) -> tuple[int, int, float]:
        """(prompt tokens, cached tokens, prefill seconds) of one request."""
        text = render_chat(req.get("messages") or []) if chat else str(req.get("prompt", ""))
        tokens = self.tokenize(text)
        cached = self.cache.admit(tokens, req.get("cache_salt"))
        seconds = (self.base_ms + self.per_token_ms * (len(tokens) - cached)) / 1000
        return len(tokens), cached, seconds

    def record(self, prompt: int, cached: int, seconds: float) -> None:
        """Counted when the prefill ends, before the first byte leaves (as vLLM does)."""
        t = self.totals
        t["requests"] += 1
        t["prefill_s"] += seconds
        t["computed"] += prompt - cached
        t["prompt"] += prompt
        t["cached"] += cached

    def metrics_text(self, model: str) -> str:
        t, labels = self.totals, f'engine="0",model_name="{model}"'
        lines = []
        for name, total in (("request_prefill_time_seconds", t["prefill_s"]),
                            ("time_to_first_token_seconds", t["prefill_s"]),
                            ("request_prefill_kv_computed_tokens", t["computed"])):  # fmt: skip
            lines += [f"# TYPE vllm:{name} histogram",
                      f'vllm:{name}_bucket{{{labels},le="+Inf"}} {t["requests"]}',
                      f"vllm:{name}_sum{{{labels}}} {total}",
                      f"vllm:{name}_count{{{labels}}} {t['requests']}"]  # fmt: skip
        for name, total in (("prompt_tokens", t["prompt"]), ("prompt_tokens_cached", t["cached"]),
                            ("prefix_cache_queries", t["prompt"]),
                            ("prefix_cache_hits", t["cached"])):  # fmt: skip
            lines += [f"# TYPE vllm:{name} counter", f"vllm:{name}_total{{{labels}}} {total}"]
        return "\n".join(lines) + "\n"
