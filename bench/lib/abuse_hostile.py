"""bench.abuse's hostile loops (issue 23's shapes), each at a bounded rate until
`stop` is set; every answer is tallied as `shape:result` with its slowest time.

Raw sockets where an HTTP client would fix the request up (slow heads, `..` paths
that aiohttp would resolve, heads with thousands of headers)."""

from __future__ import annotations

import asyncio
import itertools
import time

import aiohttp
import orjson

from bench.lib.abuse_bodies import body_loops, kv_publisher
from bench.lib.abuse_fields import field_loops, header_loops
from bench.lib.abuse_traffic import (
    CONTEXT_SHAPES,
    HOSTILE_MODEL,
    HOSTILE_MODES,
    KEY_OF,
    STREAMED_MODES,
    Tally,
    auth,
    envelope_or_stream_error,
    rag_body,
)  # fmt: skip
from bench.lib.outcome import SYSTEM
from proxy.tenancy.identity import tenant_salt

TRICK_PATHS = ["/v1/x/../chat/completions", "/v1/%2e%2e/v1/chat/completions",
               "/v1/chat/completions"]  # fmt: skip
LEAK_PATHS = ["/v1/../metrics", "/v1/%2e%2e/metrics", "/v1/../v1/../stub/requests"]


async def _status(reader: asyncio.StreamReader, wait: float) -> str:
    try:
        async with asyncio.timeout(wait):
            line = await reader.readline()
    except TimeoutError:
        return "no_answer"
    return line.split(b" ")[1].decode() if line.count(b" ") >= 1 else "closed"


async def _raw(port: int, payload: bytes, wait: float = 10.0) -> str:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        return await _status(reader, wait)
    except ConnectionError:
        return "reset"
    finally:
        writer.close()


async def _trickle(port: int, first: bytes, stop: asyncio.Event) -> str:
    """Send `first`, then one byte a second until the server answers or closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(first)
        while not stop.is_set():
            try:
                async with asyncio.timeout(1.0):
                    data = await reader.read(64)
                return data.split(b" ")[1].decode() if data.count(b" ") else "closed"
            except TimeoutError:
                writer.write(b"a")
                await writer.drain()
        return "held_to_the_end"
    except (ConnectionError, IndexError):
        return "reset"
    finally:
        writer.close()


async def slow_clients(port: int, stop: asyncio.Event, tally: Tally, kind: str, n: int):
    """`n` connections at a time, each reopened at most once a second: a head sent a
    byte a second, or a body sent a byte a second after its head (with a key, or
    without one: then a 401 on the head is the right answer)."""
    first = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
    if kind == "slow_head":
        first += b"x-slow: "
    else:
        if kind == "slow_body":
            first += f"authorization: Bearer {KEY_OF['beta']}\r\n".encode()
        first += b"content-type: application/json\r\ncontent-length: 100000\r\n\r\n{"

    async def one() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            tally.hostile_done(kind, await _trickle(port, first, stop), started)
            await asyncio.sleep(max(0.0, started + 1.0 - time.perf_counter()))

    await asyncio.gather(*(one() for _ in range(n)))


async def huge_heads(port: int, stop: asyncio.Event, tally: Tally) -> None:
    filler = b"x" * 1000
    lines = b"".join(b"x-h%d: %s\r\n" % (i, filler) for i in range(2000))
    payload = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n" + lines + b"\r\n"
    while not stop.is_set():
        started = time.perf_counter()
        tally.hostile_done("huge_head", await _raw(port, payload), started)
        await asyncio.sleep(1.0)


def _request(path: str, body: dict, tenant: str | None) -> bytes:
    raw = orjson.dumps(body)
    key = f"authorization: Bearer {KEY_OF[tenant]}\r\n" if tenant else ""
    return (f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{key}"
            f"content-length: {len(raw)}\r\nconnection: close\r\n\r\n").encode() + raw  # fmt: skip


async def path_tricks(port: int, stop: asyncio.Event, tally: Tally, secret: str) -> None:
    """Tenant alpha's key with beta's salt, on dot-segment paths (each must be a 404)
    and on the real path (200, and the backend must see alpha's salt); control paths
    reached through dot segments (404)."""
    foreign = tenant_salt("beta", secret)
    for i in itertools.count():
        if stop.is_set():
            return
        path = TRICK_PATHS[i % len(TRICK_PATHS)]
        real = path == "/v1/chat/completions"  # the salt must be overwritten there
        tag = f"alpha:{'salt' if real else 'trick'}:{i}"
        body = rag_body(tag, ["the alpha archive"], "what?", stream=False)
        body["cache_salt"] = foreign
        if not real:  # a rate the real route rejects: must not pass by another path
            body["ragtrim"] = {"rate": 7}
        started = time.perf_counter()
        tally.hostile_done(f"trick{i % len(TRICK_PATHS)}", await _raw(port, _request(
            path, body, "alpha")), started)  # fmt: skip
        leak = LEAK_PATHS[i % len(LEAK_PATHS)]
        started = time.perf_counter()
        tally.hostile_done(f"leak{i % len(LEAK_PATHS)}",
                           await _raw(port, _request(leak, {}, "alpha")), started)  # fmt: skip
        await asyncio.sleep(0.25)


def _bomb(i: int) -> tuple[dict, str]:
    if i % 2 == 0:
        prompt = "word " * 400_000  # 2 MB
        docs = [f"absent document number {d} " * 3 for d in range(20_000)]
        body = {"model": "stub-model", "messages": [{"role": "user", "content": prompt}],
                "ragtrim": {"documents": docs}, "stub": {"tag": f"beta:bomb:{i}"}}  # fmt: skip
        return body, "bomb_documents"
    return rag_body(f"beta:bomb:{i}", ["{" * 20_000], "what?", stream=False), "bomb_braces"


async def cpu_bombs(session: aiohttp.ClientSession, base: str, stop: asyncio.Event,
                    tally: Tally) -> None:  # fmt: skip
    for i in itertools.count():
        if stop.is_set():
            return
        body, shape = _bomb(i)
        started = time.perf_counter()
        try:
            async with session.post(f"{base}/v1/chat/completions", data=orjson.dumps(body),
                                    headers=auth("beta")) as resp:  # fmt: skip
                await resp.read()
            tally.hostile_done(shape, str(resp.status), started)
        except (aiohttp.ClientError, TimeoutError) as exc:
            tally.hostile_done(shape, type(exc).__name__, started)
        await asyncio.sleep(2.0)


async def context_shapes(session, base: str, stop: asyncio.Event, tally: Tally) -> None:
    """CJK, Japanese, base64 and URL documents: each must reach the backend non-empty."""
    for i in itertools.count():
        if stop.is_set():
            return
        doc = CONTEXT_SHAPES[i % len(CONTEXT_SHAPES)]
        body = rag_body(f"alpha:context:{i}", [doc], "这是什么？", stream=False)
        tally.sent_context[body["stub"]["tag"]] = len(body["messages"][0]["content"]) - len(
            SYSTEM
        )  # fmt: skip
        started = time.perf_counter()
        async with session.post(f"{base}/v1/chat/completions", data=orjson.dumps(body),
                                headers=auth("alpha")) as resp:  # fmt: skip
            await resp.read()
        tally.hostile_done(f"context{i % len(CONTEXT_SHAPES)}", str(resp.status), started)
        await asyncio.sleep(0.5)


async def hostile_upstream(session, base: str, stop: asyncio.Event, tally: Tally) -> None:
    """Every misbehaviour of tests/doubles/hostile_upstream.py in turn, two a second."""
    for i in itertools.count():
        if stop.is_set():
            return
        mode = HOSTILE_MODES[i % len(HOSTILE_MODES)]
        body = {"model": HOSTILE_MODEL, "messages": [{"role": "user", "content": "hi"}],
                "hostile": mode, "stream": mode in STREAMED_MODES, "gap": 0.05,
                "mb": 100 if mode == "huge_body" else 8}  # fmt: skip
        started = time.perf_counter()
        try:
            async with session.post(f"{base}/v1/chat/completions", data=orjson.dumps(body),
                                    headers=auth("beta")) as resp:  # fmt: skip
                raw = await resp.read()
            result = envelope_or_stream_error(resp.status, raw)
        except (aiohttp.ClientError, TimeoutError) as exc:
            result = f"broken_{type(exc).__name__}"
        tally.hostile_done(f"upstream_{mode}", result, started)
        await asyncio.sleep(0.5)


async def run_all(port: int, seconds: float, secret: str, kv_pub: str) -> Tally:
    """Every hostile loop for `seconds`, then each stops after its current request;
    `kv_pub`: the hostile KV-event publisher's endpoint."""
    base, tally, stop = f"http://127.0.0.1:{port}", Tally(), asyncio.Event()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        loops = [asyncio.create_task(c) for c in (
            slow_clients(port, stop, tally, "slow_head", 8),
            slow_clients(port, stop, tally, "slow_body", 8),
            slow_clients(port, stop, tally, "slow_body_nokey", 8),
            huge_heads(port, stop, tally),
            path_tricks(port, stop, tally, secret),
            cpu_bombs(session, base, stop, tally),
            context_shapes(session, base, stop, tally),
            hostile_upstream(session, base, stop, tally),
            field_loops(session, base, stop, tally),  # issue 33's shapes
            header_loops(port, stop, tally),
            body_loops(session, base, stop, tally),  # issue 44's shapes
            kv_publisher(kv_pub, stop, tally),
        )]  # fmt: skip
        await asyncio.sleep(seconds)
        stop.set()
        for result in await asyncio.gather(*loops, return_exceptions=True):
            if isinstance(result, Exception):
                tally.hostile[f"loop_failed:{type(result).__name__}"] += 1
    return tally


def process_main(port: int, seconds: float, secret: str, kv_pub: str, queue) -> None:
    """The hostile traffic in a process of its own: its client work must not slow
    the event loop that times the normal requests."""
    queue.put(asyncio.run(run_all(port, seconds, secret, kv_pub)))
