"""A fleet of simulated replicas starts and stops cleanly, and ragtrim's kv scorer,
fed by their events through its own subscribers, prefers the replica that holds a
request's blocks."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx
import pytest
import zmq

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.scorer import KvCacheScorer
from proxy.routing.kv.subscriber import KvSubscriber
from tests.doubles.fleet import Fleet

BODY = {"model": "stub-model", "max_tokens": 2,
        "messages": [{"role": "system", "content": "You answer from the manual. " * 40},
                     {"role": "user", "content": "What does the red light mean?"}]}  # fmt: skip


async def test_sixteen_replicas_start_and_stop():
    began = time.monotonic()
    async with Fleet(16) as fleet:
        assert len(set(fleet.urls)) == 16
        ports = {e["pub"] for e in fleet.endpoints().values()}
        assert len(ports) == 16
        async with httpx.AsyncClient() as client:
            answers = await asyncio.gather(*(client.get(f"{u}/v1/models") for u in fleet.urls))
        assert all(a.status_code == 200 for a in answers)
    assert time.monotonic() - began < 20
    assert not [t for t in threading.enumerate() if t.name == "kv-publisher"]


class Ids:
    def __init__(self, ids):
        self.value = ids

    def ids(self, route, body, model, wait=True):
        return self.value


async def test_kv_scorer_prefers_the_replica_holding_the_blocks():
    async with Fleet(3) as fleet:
        index, zctx, subs = KvIndex(), zmq.Context(), []
        for url, ends in fleet.endpoints().items():
            sub = KvSubscriber(url, ends["pub"], ends["replay"], "kv", index, zctx)
            threading.Thread(target=sub.run, daemon=True).start()
            subs.append(sub)
        try:
            holder = fleet.urls[1]
            async with httpx.AsyncClient(timeout=10) as client:
                ids = (await client.post(f"{holder}/tokenize", json=BODY)).json()["tokens"]
                assert (await client.post(f"{holder}/v1/chat/completions", json=BODY)).is_success
            for _ in range(100):
                state = index.backend(holder)
                if state is not None and state.leading(_chain(ids)) > 0:
                    break
                await asyncio.sleep(0.05)
            endpoints = [Endpoint(u) for u in fleet.urls]
            ctx = RequestContext("r", "chat", b"", dict(BODY), {}, prefix_key="k")
            scores = KvCacheScorer(index, Ids(ids), thread_bytes=1 << 30).score(ctx, endpoints)
            assert max(scores, key=scores.get).url == holder
            assert scores[endpoints[1]] > 0.9
        finally:
            for sub in subs:
                sub.stopping.set()
            await asyncio.sleep(0.3)
            zctx.term()


def _chain(ids):
    from proxy.routing.kv.chain import chain

    return chain(ids, 16)


MODEL_DIR = Path(__file__).resolve().parents[3] / ".models" / "smollm2-135m-instruct"


@pytest.mark.skipif(not (MODEL_DIR / "tokenizer.json").exists(), reason="make setup's model")
async def test_replica_tokenizes_as_ragtrims_scorer_does():
    from proxy.routing.kv.chat_tokens import ChatTokenizer, vllm_messages

    async with Fleet(1, tokenizer=str(MODEL_DIR)) as fleet, httpx.AsyncClient(timeout=30) as c:
        ids = (await c.post(f"{fleet.urls[0]}/tokenize", json=BODY)).json()["tokens"]
        done = await c.post(f"{fleet.urls[0]}/v1/chat/completions", json=BODY)
    tok = ChatTokenizer(str(MODEL_DIR))
    whole = tok.encode(tok.render(vllm_messages(BODY["messages"]), BODY, True))
    assert ids == whole  # vLLM's path: the whole template rendered, then encoded
    assert done.json()["usage"]["prompt_tokens"] == len(ids)
