"""bench.abuse's traffic: the normal RAG requests it measures, and the hostile shapes
of issue 23 sent alongside them, each from its own loop at a bounded rate.

Every request that reaches a backend carries a tag `tenant:kind:i` in `stub.tag`
(forwarded unchanged; stub_vllm records it with the cache_salt it received), so the
salts and the contexts can be checked at the backend afterwards.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections import Counter
from dataclasses import dataclass, field

import aiohttp
import orjson

from bench.lib.outcome import CHUNKS, SYSTEM, classify

KEYS = {"key-alpha-0123456789abcdef": "alpha", "key-beta-0123456789abcdef": "beta"}
KEY_OF = {tenant: key for key, tenant in KEYS.items()}
HOSTILE_MODEL = "hostile-model"
HOSTILE_MODES = ["bad_usage", "status_999", "text_500", "json_500", "redirect_307",
                 "text_200", "json_for_stream", "crlf_sse", "cr_sse", "mixed_sse",
                 "bad_usage_sse", "endless_event", "huge_body"]  # fmt: skip
STREAMED_MODES = {"json_for_stream", "crlf_sse", "cr_sse", "mixed_sse", "bad_usage_sse",
                  "endless_event"}  # fmt: skip
CJK = "北京是中华人民共和国的首都，也是全国的政治、文化和国际交往中心。" * 46  # 1,472 chars
JAPANESE = "東京は日本の首都です。人口は約千四百万人です。多くの観光客が毎年訪れます。"
THAI = "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย มีประชากรประมาณสิบล้านคน " * 30
EMOJI = "🌍🚀🎉🔥💡📚🧭🗺️ " * 120
TABLE = "| city | river | port |\n|---|---|---|\n" + "".join(
    f"| city {i}. Old | river {i}. Long | port {i} |\n" for i in range(60))  # fmt: skip
JSON_ARRAY = "[\n" + ",\n".join(f'  {{"id": {i}, "note": "item {i}. See also."}}'
                                 for i in range(80)) + "\n]"  # fmt: skip
# issue 23's shapes, then issue 33's (scripts without sentence marks, tables, JSON arrays)
CONTEXT_SHAPES = [CJK, JAPANESE, base64.b64encode(bytes(range(256)) * 24).decode(),
                  "https://example.com/" + "a1b2c3/" * 430, THAI, EMOJI, TABLE,
                  JSON_ARRAY]  # fmt: skip


@dataclass
class Tally:
    normal: list[tuple[str, float]] = field(default_factory=list)  # (outcome, ms)
    hostile: Counter = field(default_factory=Counter)  # "shape:result" -> n
    sent_context: dict[str, int] = field(default_factory=dict)  # tag -> context chars
    slowest_hostile_ms: dict[str, float] = field(default_factory=dict)
    healthz_ms: list[float] = field(default_factory=list)  # the event loop's responsiveness

    def hostile_done(self, shape: str, result: str, started: float) -> None:
        self.hostile[f"{shape}:{result}"] += 1
        ms = (time.perf_counter() - started) * 1000
        self.slowest_hostile_ms[shape] = round(max(ms, self.slowest_hostile_ms.get(shape, 0)))


def auth(tenant: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEY_OF[tenant]}", "content-type": "application/json"}


def rag_body(tag: str, docs: list[str], question: str, stream: bool) -> dict:
    body = {"model": "stub-model", "max_tokens": 8, "stream": stream, "stub": {"tag": tag},
            "messages": [{"role": "system", "content": SYSTEM + "\n\n".join(docs)},
                         {"role": "user", "content": question}]}  # fmt: skip
    if stream:
        body["stub"] |= {"chunks": CHUNKS, "chunk_delay": 0.01}
    return body


def normal_body(i: int, tenant: str, phase: str) -> dict:
    topic = f"topic{i % 40}"
    docs = [f"{topic} document {d}: the {topic} archive holds {d} boxes of letters. It was "
            f"founded in {1900 + d} by a society of readers. Visitors may read the letters on "
            f"weekdays. The {topic} archive also keeps maps of the old harbour." for d in
            range(3)]  # fmt: skip
    return rag_body(f"{tenant}:{phase}:{i}", docs, f"What does the {topic} archive hold?",
                    stream=i % 2 == 1)  # fmt: skip


async def one_normal(session: aiohttp.ClientSession, base: str, i: int, phase: str,
                     tally: Tally) -> None:  # fmt: skip
    tenant = ("alpha", "beta")[i % 2]
    body = normal_body(i, tenant, phase)
    tally.sent_context[body["stub"]["tag"]] = len(body["messages"][0]["content"]) - len(SYSTEM)
    start = time.perf_counter()
    try:
        async with asyncio.timeout(30):
            async with session.post(f"{base}/v1/chat/completions", data=orjson.dumps(body),
                                    headers=auth(tenant)) as resp:  # fmt: skip
                raw = await resp.read()
        outcome = classify(resp.status, raw, body["stream"])[0]
    except TimeoutError:
        outcome = "hung"
    except (aiohttp.ClientError, orjson.JSONDecodeError, ValueError):
        outcome = "lost"
    tally.normal.append((outcome, (time.perf_counter() - start) * 1000))


async def normal_traffic(session, base: str, rate: float, seconds: float, phase: str,
                         tally: Tally) -> None:  # fmt: skip
    """Open loop: one request every 1/rate s, whatever the answers' latency."""
    tasks, t0, i = [], time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        tasks.append(asyncio.create_task(one_normal(session, base, i, phase, tally)))
        i += 1
        await asyncio.sleep(max(0.0, t0 + i / rate - time.perf_counter()))
    await asyncio.gather(*tasks)


async def probe_healthz(session, base: str, stop: asyncio.Event, tally: Tally) -> None:
    """GET /healthz every 0.1 s: a stalled event loop shows here first."""
    while not stop.is_set():
        start = time.perf_counter()
        async with session.get(f"{base}/healthz") as resp:
            await resp.read()
        tally.healthz_ms.append((time.perf_counter() - start) * 1000)
        await asyncio.sleep(0.1)


def envelope_or_stream_error(status: int, raw: bytes) -> str:
    """ok (200, no error), clean (an error in the envelope, or a stream that ends with
    an error event), or broken (anything else: empty, plain text, a leak)."""
    if b"Traceback" in raw or b"/srv/vllm" in raw or b"10.0.0.7" in raw:
        return "leaked"
    if status == 200:
        return "clean" if b'"error"' in raw[-400:] else "ok"
    try:
        error = orjson.loads(raw)["error"]
        return "clean" if isinstance(error["message"], str) else "broken"
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return "broken"
