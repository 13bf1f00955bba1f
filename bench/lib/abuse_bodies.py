"""bench.abuse's hostile loops of issue 44: bodies whose cost is per key or per list
item on every generation route, and a hostile KV-event publisher.

Bodies (each under the 16 MiB body cap, built once per process): one object of
290,000 keys (`chat_template_kwargs`, ~5 MB), `logit_bias` with 290,000 entries, 49,000
system blocks on /v1/messages, 49,000 input items on /v1/responses, 200 tools on chat
(vLLM accepts them: ragtrim must too, and bound the work instead), and a 4 MB chat,
which `kv_cache` routing must tokenize no further than its leading blocks. Each must be
refused with a clear 4xx, or answered, without stalling the event loop.

The KV publisher stands at one replica's event endpoints (ragtrim subscribes to it,
with `kv_cache` routing on): batches of 20,000 blocks, runs of malformed messages
(string timestamps, lists as hashes, token ids >= 2**32, NaN timestamps, garbage) and
messages larger than ragtrim's MAXMSGSIZE. Its counts go in the tally as
`kv_<kind>:sent`; ragtrim's /metrics says what it made of them.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from functools import cache

import aiohttp
import msgspec
import orjson

from bench.lib.abuse_fields import bombs_in_turn
from bench.lib.abuse_traffic import Tally
from tests.doubles.kv_publisher import BlockStored, EventBatch

BIG_BATCH_BLOCKS = 20_000  # a 320k-token prompt prefilled in one step
OVERSIZED_BYTES = 24 << 20  # above ragtrim's MAXMSGSIZE (2 MiB by default)


@cache
def body_bombs() -> tuple[tuple[str, str, bytes], ...]:
    """(shape, path, body bytes), all under 16 MiB."""
    user = [{"role": "user", "content": "hi"}]
    chat = {"model": "stub-model", "max_tokens": 4, "messages": user}
    many = {f"k{i}": 0 for i in range(290_000)}
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    shapes = {
        "keys_290k": ("/v1/chat/completions", {**chat, "chat_template_kwargs": many}),
        "logit_bias_290k": ("/v1/chat/completions",
                            {**chat, "logit_bias": {str(i): 1 for i in range(290_000)}}),
        "messages_system_49k": ("/v1/messages", {
            "model": "stub-model", "max_tokens": 4, "messages": user,
            "system": [{"type": "text", "text": "x"}] * 49_000}),
        "responses_items_49k": ("/v1/responses", {
            "model": "stub-model", "max_output_tokens": 4,
            "input": [{"role": "user", "content": "x"}] * 49_000}),
        "tools_200": ("/v1/chat/completions", {**chat, "tools": [tool] * 200}),
        "chat_4mb": ("/v1/chat/completions", {**chat, "messages": [
            {"role": "user", "content": "The archive holds letters and maps. " * 115_000}]}),
    }  # fmt: skip
    return tuple((name, path, orjson.dumps(body)) for name, (path, body) in shapes.items())


async def body_loops(session: aiohttp.ClientSession, base: str, stop: asyncio.Event,
                     tally: Tally) -> None:  # fmt: skip
    """One body every 1.5 s, the shapes in turn, from tenant beta."""
    await bombs_in_turn(session, base, stop, tally, body_bombs)


def _big_batch(seq: int) -> bytes:
    """10 BlockStored events of 2,000 chained blocks each, token ids spread over a 150k
    vocabulary (~1.4 MB, under MAXMSGSIZE: it must be applied, in slices)."""
    events, parent, step = [], None, BIG_BATCH_BLOCKS // 10
    ids = [(i * 7919) % 150_000 for i in range(16 * step)]
    for part in range(10):
        first = seq * BIG_BATCH_BLOCKS + part * step
        hashes = list(range(first, first + step))
        events.append(BlockStored(hashes, parent, ids, 16, None, None, None))
        parent = hashes[-1]
    return msgspec.msgpack.encode(EventBatch(time.time(), events, 0))


def _malformed(i: int) -> bytes:
    stored = {"type": "BlockStored", "block_hashes": [i], "parent_block_hash": None,
              "token_ids": [1, 2], "block_size": 16, "lora_id": None}  # fmt: skip
    shapes = [
        ["not a time", [stored], 0],
        [time.time(), [{**stored, "block_hashes": [[1, 2]]}], 0],
        [time.time(), [{**stored, "token_ids": [2**40]}], 0],
        [float("nan"), [stored], 0],
        [time.time(), "events", 0],
    ]
    if i % 6 == 5:
        return b"\xc1garbage"
    return msgspec.msgpack.encode(shapes[i % 6])


async def kv_publisher(endpoint: str, stop: asyncio.Event, tally: Tally) -> None:
    """Bind a PUB socket at `endpoint` and send, in turn: a 20,000-block batch, 1,000
    malformed messages in a row, a message over MAXMSGSIZE; then a pause."""
    import zmq
    import zmq.asyncio

    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.PUB)
    sock.setsockopt(zmq.SNDHWM, 100_000)
    sock.bind(endpoint)
    seq = itertools.count(1)
    try:
        await asyncio.sleep(1.0)  # let ragtrim's SUB (re)connect
        while not stop.is_set():
            big = await asyncio.to_thread(_big_batch, next(seq))
            await sock.send_multipart([b"", next(seq).to_bytes(8, "big"), big])
            tally.hostile["kv_big_batch:sent"] += 1
            for i in range(1000):
                await sock.send_multipart([b"", next(seq).to_bytes(8, "big"), _malformed(i)])
            tally.hostile["kv_malformed:sent"] += 1000
            await sock.send_multipart([b"", next(seq).to_bytes(8, "big"), b"\0" * OVERSIZED_BYTES])
            tally.hostile["kv_oversized:sent"] += 1
            await asyncio.sleep(2.0)
    finally:
        sock.close(linger=0)
        ctx.term()
