"""bench.abuse's hostile loops of issue 33: bodies whose cost scales with one field,
headers that probe the tenancy rules and the telemetry sizes. Each loop sends at a
bounded rate until `stop` is set and tallies `shape:result` with its slowest time.

The field bombs are the probe's shapes, each under the 16 MiB body cap: 25,000 tools
(~14 MB), 300,000 system messages, 300,000 content parts, a 12 MB `response_format`
schema, a 900,000-character question, a completion prompt of 100,000 token ids. Each
must be refused with a clear 4xx or answered without stalling the event loop (the
/healthz probe beside them times that). Their bytes are built once per process: the
client's own work must not be what slows the run.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from functools import cache

import aiohttp
import orjson

from bench.lib.abuse_traffic import KEY_OF, Tally, auth, rag_body
from tests.doubles.hostile_bodies import schema, tool

REQUEST_ID_BYTES = 60_000
MODEL_NAME_BYTES = 1 << 20


@cache
def field_bombs() -> tuple[tuple[str, str, bytes], ...]:
    """(shape, path, body bytes): each scales one field, all under 16 MiB."""
    user = [{"role": "user", "content": "hi"}]
    chat = {"model": "stub-model", "max_tokens": 4}
    shapes = {
        "tools_25k": {**chat, "messages": user, "tools": [tool(i) for i in range(25_000)]},
        "system_300k": {**chat, "messages": [{"role": "system", "content": "x"}] * 300_000 + user},
        "parts_300k": {
            **chat,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}] * 300_000}],
        },  # fmt: skip
        "schema_12mb": {**chat, "messages": user, "response_format": schema(180_000)},
        "question_900k": rag_body(
            "beta:bomb:question", ["the archive holds letters."], "what? " * 150_000, stream=False
        ),  # fmt: skip
        "token_ids_100k": {
            "model": "stub-model",
            "max_tokens": 4,
            "prompt": list(range(100_000)),
        },  # fmt: skip
    }
    return tuple(
        (name, "/v1/completions" if "prompt" in body else "/v1/chat/completions",
         orjson.dumps(body))
        for name, body in shapes.items()
    )  # fmt: skip


async def field_loops(session: aiohttp.ClientSession, base: str, stop: asyncio.Event,
                      tally: Tally) -> None:  # fmt: skip
    """One bomb every 1.5 s, the shapes in turn, from tenant beta."""
    await bombs_in_turn(session, base, stop, tally, field_bombs)


async def bombs_in_turn(session: aiohttp.ClientSession, base: str, stop: asyncio.Event,
                        tally: Tally, build) -> None:  # fmt: skip
    """`build()`'s (shape, path, bytes) posted one every 1.5 s, in turn, as tenant beta."""
    bombs = await asyncio.to_thread(build)
    for i in itertools.count():
        if stop.is_set():
            return
        shape, path, raw = bombs[i % len(bombs)]
        started = time.perf_counter()
        try:
            async with session.post(base + path, data=raw, headers=auth("beta")) as resp:
                await resp.read()
            tally.hostile_done(shape, str(resp.status), started)
        except (aiohttp.ClientError, TimeoutError) as exc:
            tally.hostile_done(shape, type(exc).__name__, started)
        await asyncio.sleep(1.5)


def _raw_request(body: bytes, headers: list[tuple[str, str]]) -> bytes:
    head = "".join(f"{k}: {v}\r\n" for k, v in headers)
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json"
        f"\r\n{head}content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


async def _answer(port: int, payload: bytes) -> tuple[str, bytes]:
    """Status and head of the answer to raw `payload` (aiohttp would merge duplicates)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        async with asyncio.timeout(10):
            head = await reader.readuntil(b"\r\n\r\n")
        return head.split(b" ")[1].decode(), head
    except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, IndexError):
        return "reset", b""
    finally:
        writer.close()


async def header_loops(port: int, stop: asyncio.Event, tally: Tally) -> None:
    """Duplicated Authorization (a bad key, then alpha's: must be refused), an oversized
    x-request-id (must not be echoed) and a 1 MB model name (a clear 4xx), in turn."""
    body = orjson.dumps(rag_body("alpha:headers", ["the archive holds letters."], "what?",
                                 stream=False))  # fmt: skip
    huge_model = orjson.dumps({"model": "m" * MODEL_NAME_BYTES,
                               "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    good = ("authorization", f"Bearer {KEY_OF['alpha']}")
    for i in itertools.count():
        if stop.is_set():
            return
        started = time.perf_counter()
        if i % 3 == 0:
            status, _ = await _answer(port, _raw_request(body, [
                ("authorization", "Bearer not-a-key"), good]))  # fmt: skip
            tally.hostile_done("duplicate_auth", "admitted" if status == "200" else status,
                               started)  # fmt: skip
        elif i % 3 == 1:
            rid = "r" * REQUEST_ID_BYTES
            status, head = await _answer(port, _raw_request(body, [good, ("x-request-id", rid)]))
            echoed = rid.encode() in head
            tally.hostile_done("huge_request_id", "echoed" if echoed else status, started)
        else:
            status, _ = await _answer(port, _raw_request(huge_model, [good]))
            tally.hostile_done("huge_model_name", status, started)
        await asyncio.sleep(0.5)
