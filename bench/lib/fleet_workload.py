"""bench.fleet's workloads: one arrival schedule, replayed identically for every mode
(the RAG regime's is bench/lib/fleet_rag.py).

Shared-context regime (llm-d's, blog of 2025-09-24: 150 tenants, each with a 6k-token
shared context and many short questions, on 16 H100s serving Qwen3-32B, i.e. 8 TP-2
replicas): `tenants` tenants each own a system prompt of about `context_tokens` tokens
(distinct words, so no two tenants share a block); each arrival (Poisson at `rate` per
second, a fixed seed) picks a tenant uniformly and asks a new short question. With the
preset qwen3-32b-2xh100 (19,300 blocks, 309k tokens a replica) and the defaults (150 ×
6k = 900k tokens of context), no replica can hold every tenant (2.9× its cache), as in
llm-d's run; a router that keeps tenants apart needs about 1/N of them per replica.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

TOKENS_PER_WORD = 8.9  # SmolLM2's BPE on these synthetic words ("t3w123456"), measured


@dataclass(frozen=True)
class Arrival:
    at: float  # seconds from the start
    tenant: int
    body: dict


def _context(rng: random.Random, tenant: int, tokens: int) -> str:
    words = [f"t{tenant}w{rng.randrange(10**6)}" for _ in range(int(tokens / TOKENS_PER_WORD))]
    return f"Tenant {tenant} manual. " + " ".join(words)


def shared_context(tenants: int, context_tokens: int, rate: float, duration: float,
                   output_tokens: int = 16, seed: int = 0) -> list[Arrival]:  # fmt: skip
    """The schedule: Poisson arrivals over `duration` seconds, uniform tenants."""
    rng = random.Random(seed)
    contexts = [_context(rng, t, context_tokens) for t in range(tenants)]
    out, now, n = [], 0.0, 0
    while True:
        now += rng.expovariate(rate)
        if now >= duration:
            return out
        tenant = rng.randrange(tenants)
        question = f"Question {n}: what does section {rng.randrange(1000)} say about item {n}?"
        msgs = [
            {"role": "system", "content": contexts[tenant]},
            {"role": "user", "content": question},
        ]
        out.append(Arrival(now, tenant, _body(msgs, output_tokens)))
        n += 1


def _body(messages: list[dict], output_tokens: int) -> dict:
    return {"model": "stub-model", "max_tokens": output_tokens, "stream": True,
            "stream_options": {"include_usage": True}, "stub": {"chunks": output_tokens},
            "messages": messages}  # fmt: skip


def one_application(rate: float, duration: float, turns: int = 5, gap: float = 2.5,
                    rules: int = 24, sentences: int = 10, output_tokens: int = 16,
                    seed: int = 0) -> list[Arrival]:  # fmt: skip
    """Issue 20's regime (bench/lib/one_application.py's conversations): one system
    prompt; new conversations start as Poisson arrivals at `rate` a second over
    `duration` seconds, and each sends its `turns` turns `gap` seconds apart (a user
    reads the answer before asking again), every turn the last one's prompt plus a
    fixed answer and a new question (~400 tokens a turn at 10 sentences). `tenant` is
    the conversation. Sorted by time."""
    from bench.lib.one_application import conversation

    rng = random.Random(seed)
    out, now, c = [], 0.0, 0
    while True:
        now += rng.expovariate(rate)
        if now >= duration:
            return sorted(out, key=lambda a: a.at)
        for t in range(1, turns + 1):
            msgs = conversation(0, c, t, rules, sentences)
            out.append(Arrival(now + (t - 1) * gap, c, _body(msgs, output_tokens)))
        c += 1
