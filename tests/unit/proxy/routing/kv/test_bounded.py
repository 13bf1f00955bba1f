"""Issue 44, item 5: the KV path is bounded. A 4 MB chat costs little CPU (only the
leading max_prefix_tokens are tokenized and hashed), a 300k-block batch never makes the
loop wait, every socket has MAXMSGSIZE, and malformed events are counted and dropped
with the thread and the index kept."""

from __future__ import annotations

import asyncio
import gc
import math
import threading
import time
from array import array
from pathlib import Path

import msgspec
import pytest
import zmq

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.context import RequestContext
from proxy.routing.kv.chain import chain
from proxy.routing.kv.events import BlockStored, EventBatch
from proxy.routing.kv.index import KvIndex, slices
from proxy.routing.kv.scorer import KvCacheScorer
from proxy.routing.kv.subscriber import KvSubscriber
from proxy.settings import KvEventsSettings
from tests.support.waiting import until
from tests.unit.proxy.routing.kv.test_subscriber import URL, held, payload, rig, running, stored

TINY = Path(__file__).resolve().parents[5] / ".models" / "tiny-llama"
needs_tiny = pytest.mark.skipif(not (TINY / "tokenizer.json").exists(), reason="make setup")
A = Endpoint("http://a:8000", healthy=True, model_cards=({"id": "tiny-llama", "root": str(TINY)},))
WORDS = "the permit for the bridge was approved by the council after a long review "


@needs_tiny
async def test_a_4mb_chat_costs_at_most_0_2_s_of_cpu():
    from proxy.routing.kv.chat_tokens import RequestTokens

    cap = KvEventsSettings().max_prefix_tokens
    tokens = RequestTokens(EndpointPool([A]), max_tokens=cap)
    assert tokens.tokenizer("tiny-llama") is not None  # loaded before: as warm() does
    index = KvIndex()
    index.reset(A.url).synced = True
    index.apply(A.url, [BlockStored(["h"], None, list(range(16)), 16, "GPU")])
    scorer = KvCacheScorer(index, tokens, thread_bytes=KvEventsSettings().tokenize_thread_bytes)
    text = (WORDS * (4_000_000 // len(WORDS)))[:4_000_000]
    body = {"model": "tiny-llama", "cache_salt": "t", "messages": [
        {"role": "system", "content": "You answer from the documents."},
        {"role": "user", "content": text}]}  # fmt: skip
    ctx = RequestContext("r", "chat", b"", body, {}, prefix_key="k")
    t0 = time.process_time()  # every thread's CPU: prepare's worker included
    await scorer.prepare(ctx)
    scorer.score(ctx, [A])
    spent = time.process_time() - t0
    assert 0 < len(ctx.token_ids) <= cap and spent <= 0.2, spent
    short = {**body, "messages": [body["messages"][0], {"role": "user", "content": text[:99_999]}]}
    assert ctx.token_ids[:20_000] == tokens.tokenizer("tiny-llama").chat(short)[:20_000]


@needs_tiny
def test_a_tenants_cached_prefix_is_a_miss_for_another_tenant():
    """Issue 44 item 3: the token-id caches are keyed by the request's cache_salt (the
    tenant's, with tenancy on): B's request with A's system prompt encodes it again."""
    from proxy.routing.kv.chat_tokens import ChatTokenizer

    tok = ChatTokenizer(str(TINY), max_tokens=KvEventsSettings().max_prefix_tokens)
    encoded: list[int] = []
    real = tok.encode
    tok.encode = lambda text, special=False: encoded.append(len(text)) or real(text, special)
    system = {"role": "system", "content": WORDS * 270}  # ~20k characters

    def big() -> int:  # encodings of the system prompt
        return sum(1 for n in encoded if n > 10_000)

    def ask(salt: str, question: str) -> list[int]:
        return tok.chat({"cache_salt": salt,
                         "messages": [system, {"role": "user", "content": question}]})  # fmt: skip

    first = ask("tenant-a", "Who approved it?")
    assert big() == 1 and ask("tenant-a", "When?") and big() == 1  # A's hit
    assert ask("tenant-b", "Who approved it?") == first and big() == 2  # B's miss
    assert ask("tenant-b", "When?") and big() == 2  # B's own entry now


def decoded_batch(blocks: int, per_event: int) -> EventBatch:
    events, parent = [], None
    for start in range(0, blocks, per_event):
        n = min(per_event, blocks - start)
        hashes = list(range(start + 1, start + n + 1))
        events.append(BlockStored(hashes, parent, array("I", [7] * (16 * n)), 16, "GPU"))
        parent = hashes[-1]
    return EventBatch(time.time(), events, 0)


@pytest.mark.parametrize("per_event", [300_000, 1_000])
def test_the_loop_never_waits_long_on_a_300k_block_batch(per_event):
    """The subscriber's thread applies a 300k-block batch while the main thread (the
    loop) ranks a request every ~5 ms, as /healthz and every request would."""
    index = KvIndex(max_blocks=400_000)
    index.reset(URL).synced = True
    index.apply(URL, [BlockStored(["h"], None, list(range(16)), 16, "GPU")])
    sub = KvSubscriber(URL, "tcp://127.0.0.1:1", None, "kv", index, zmq.Context.instance())
    batch = decoded_batch(300_000, per_event)
    scorer, ctx = KvCacheScorer(index, None, thread_bytes=0), RequestContext(
        "r", "chat", b"", {"messages": []}, {}, prefix_key="k")  # fmt: skip
    ctx.token_ids = list(range(16)) * 4
    ep = Endpoint(URL)
    gc.freeze()  # as a served process does after start-up (proxy/server/heap.py)
    thread = threading.Thread(target=sub.apply_batch, args=(0, batch), kwargs={"live": True})
    waits = []
    thread.start()
    while thread.is_alive():
        t0 = time.perf_counter()
        assert ep in scorer.shares(ctx, [ep])
        waits.append(time.perf_counter() - t0)
        time.sleep(0.005)
        waits[-1] = max(waits[-1], time.perf_counter() - t0 - 0.005)  # the sleep's overrun too
    thread.join()
    gc.unfreeze()
    assert len(index.backend(URL)) == 300_001
    assert len(waits) > 10 and max(waits) <= 0.05, (len(waits), max(waits))


def test_slices_apply_as_the_whole_batch_does():
    batch = decoded_batch(9_000, 4_500).events
    whole, sliced = KvIndex(max_blocks=5_000), KvIndex(max_blocks=5_000)
    whole.apply("u", batch)
    parts = list(slices(batch, 2_000))
    assert all(sum(len(e.block_hashes) for e in p) <= 2_000 for p in parts) and len(parts) == 6
    for part in parts:
        sliced.apply("u", part)
    assert whole.backend("u").by_vllm == sliced.backend("u").by_vllm


BAD_SHAPES = [
    lambda i: msgspec.msgpack.encode(["yesterday", [stored(1000 + i, [1, 2, 3, 4])], 0]),
    lambda i: msgspec.msgpack.encode([math.nan, [stored(1000 + i, [1, 2, 3, 4])], 0]),
    lambda i: msgspec.msgpack.encode([math.inf, [], 0]),
    lambda i: payload({**stored(1000 + i, [1, 2, 3, 4]), "block_hashes": [[1, 2]]}),
    lambda i: payload(stored(1000 + i, [1, 2, 3, 2**32 + i])),
    lambda i: payload(stored(1000 + i, [1, 2, -3, 4])),
    lambda i: payload(stored(1000 + i, [1, 2, 3.5, 4])),
    lambda i: payload({**stored(1000 + i, [1, 2, 3, 4]), "block_size": "4"}),
    lambda i: payload({**stored(1000 + i, [1, 2, 3, 4]), "parent_block_hash": [1]}),
    lambda i: payload({**stored(1000 + i, [1, 2, 3, 4]), "extra_keys": "salt"}),
    lambda i: payload({**stored(1000 + i, [1, 2, 3, 4]), "medium": 3}),
    lambda i: payload({"type": "BlockRemoved", "block_hashes": [{"h": 1}]}),
    lambda i: payload({"type": "BlockRemoved", "block_hashes": "abc"}),
    lambda i: payload(7),
    lambda i: msgspec.msgpack.encode([1.0, [], "rank"]),
    lambda i: msgspec.msgpack.encode("not a batch"),
    lambda i: b"\xc1 not msgpack",
]


async def test_a_thousand_malformed_messages_are_counted_and_the_index_kept():
    async with rig() as (pub, index, seen):
        await pub.send(payload(stored(1, [1, 2, 3, 4])))
        await until(lambda: held(index, [1, 2, 3, 4]) == 1)
        resyncs = len(seen["resync"])
        for i in range(1000):
            await pub.send(BAD_SHAPES[i % len(BAD_SHAPES)](i))
            if i % 100 == 99:  # within the PUB socket's high-water mark
                await until(lambda i=i: len(seen["bad"]) == i + 1, timeout=10)
        assert len(seen["bad"]) == 1000 and len(seen["resync"]) == resyncs
        assert held(index, [1, 2, 3, 4]) == 1 and all(math.isfinite(x) for x in seen["lag"])
        await pub.send(payload(stored(2, [5, 6, 7, 8], parent=1)))
        await until(lambda: held(index, [1, 2, 3, 4, 5, 6, 7, 8]) == 2)


async def test_every_socket_has_maxmsgsize_and_a_bigger_message_is_dropped():
    """zmq drops the bigger message unread (and the peer's connection: a reconnect
    resyncs, here without a replay endpoint); the next one is applied."""
    index = KvIndex()
    async with rig() as (pub, _, _):
        sub = KvSubscriber(URL, f"tcp://127.0.0.1:{pub.pub_port}", None, "kv", index,
                           zmq.Context.instance(), max_message_bytes=4096)  # fmt: skip
        for kind in (zmq.SUB, zmq.DEALER):
            sock = sub._socket(kind)
            assert sock.getsockopt(zmq.MAXMSGSIZE) == 4096
            sock.close(0)
        with running(sub):
            await until(lambda: index.backend(URL) is not None and index.backend(URL).synced)
            await asyncio.sleep(0.2)
            await pub.send(payload({**stored(1, [0, 1, 2, 3]), "lora_name": "x" * 8192}))
            for n in range(50):  # until the reconnect: each a block of its own
                await pub.send(payload(stored(100 + n, [n, n, n, n])))
                await asyncio.sleep(0.05)
                if any(index.backend(URL).leading(chain([k] * 4, 4)) for k in range(n + 1)):
                    break
            assert index.backend(URL).leading(chain([0, 1, 2, 3], 4)) == 0
            assert any(index.backend(URL).leading(chain([k] * 4, 4)) for k in range(50))
