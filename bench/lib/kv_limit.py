"""Whether a bench replica's KV-cache limit binds, from vLLM itself, and a clean start
per mode.

`--num-gpu-blocks-override N` only caps the cache if vLLM applies it: its log says
"Overriding num_gpu_blocks=<profiled> with num_gpu_blocks_override=<N>" and "... KV
cache size: <tokens> tokens", and /metrics carries `vllm:cache_config_info` with the
`num_gpu_blocks` label. The prefix-cache counters (vllm:prefix_cache_queries/hits,
tokens) per mode say what each replica reused.

`reset(client, base)`: POST /reset_prefix_cache (a development endpoint:
VLLM_SERVER_DEV_MODE=1, set by prefix_kv.kv_replicas), so each mode of a regime starts
from empty caches rather than the previous mode's leftovers; vLLM publishes
AllBlocksCleared with its next engine step (one_application sends each replica one
unrelated request), and the kv index forgets the replica's blocks.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

DEV_ENV = {"VLLM_SERVER_DEV_MODE": "1"}
_OVERRIDE = re.compile(r"Overriding num_gpu_blocks=(\d+) with num_gpu_blocks_override=(\d+)")
_SIZE = re.compile(r"KV cache size: ([\d,]+) tokens")
_INFO = re.compile(r'^vllm:cache_config_info\{.*num_gpu_blocks="(\d+)"', re.M)
COUNTERS = ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total")


def from_log(path: Path) -> dict:
    text = Path(path).read_text(errors="replace") if Path(path).exists() else ""
    over, size = _OVERRIDE.search(text), _SIZE.search(text)
    return {
        "profiled_blocks": int(over.group(1)) if over else None,
        "override_blocks": int(over.group(2)) if over else None,
        "kv_cache_tokens": int(size.group(1).replace(",", "")) if size else None,
    }


def counters(client: httpx.Client, base: str) -> dict:
    text = client.get(f"{base}/metrics", timeout=10).text
    info = _INFO.search(text)
    out = {"num_gpu_blocks": int(info.group(1)) if info else None}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in COUNTERS:
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def delta(after: dict, before: dict) -> dict:
    """Prefix-cache tokens queried and hit during one mode, and their ratio."""
    q = after.get(COUNTERS[0], 0.0) - before.get(COUNTERS[0], 0.0)
    h = after.get(COUNTERS[1], 0.0) - before.get(COUNTERS[1], 0.0)
    return {"queried_tokens": q, "hit_tokens": h, "hit_ratio": round(h / q, 4) if q else None}


def reset(client: httpx.Client, base: str, tries: int = 20) -> None:
    """Empty `base`'s prefix cache; vLLM refuses while blocks are in use, so retry."""
    for _ in range(tries):
        resp = client.post(f"{base}/reset_prefix_cache", timeout=30)
        if resp.status_code == 200 and resp.json().get("success"):
            return
        time.sleep(0.5)
    raise RuntimeError(f"{base}: /reset_prefix_cache answered {resp.status_code} {resp.text}")
