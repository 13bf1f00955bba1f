"""Issue 11 item 8: Redis down, hung or restarted under a running ragtrim.

A real redis-server (its own port, stopped by PID) holds the chunk memo and the prefix
registry. RAG requests go through ragtrim to the stub the whole time; every one must be
answered (compressed, from the in-process fallback while Redis is out), errors are
counted in ragtrim_store_errors, and once Redis is back memo entries are written to and
read from it again.

Added p99: a second ragtrim whose Redis stays healthy gets the same requests,
alternating one by one with the first, so both see the same load on the machine (on
2 shared cores the p99 of one ragtrim alone moved by ±7 ms between identical runs).
"""

import re
import time

import httpx
import pytest
import redis

from tests.support.compressor_doubles import HalfWords
from tests.support.redis_server import RedisServer
from tests.support.servers import free_port

pytestmark = pytest.mark.integration  # a real Redis server
SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)
# the memo is what these requests exercise: stable forms (issue 29) would answer repeats
ALWAYS = {"policy": "always", "min_context_tokens": 0, "stable": {"enabled": False}}
PER_PHASE = 200
# Added p99: the better of the two halves of a phase (p99 of 100 is the second slowest:
# the one request that met the hang may go). A ragtrim that waits on its store is slow
# in both halves; a stall of the shared machine lands in one (CI, stop 46: 7.1 ms once,
# where a local run reads ±2 ms).
HALVES = (slice(0, PER_PHASE // 2), slice(PER_PHASE // 2, PER_PHASE))


def rag_body(topic: str) -> dict:
    docs = [f"{topic} fact {i}: the river {topic} flows past {i} old mills and towns." for i in
            range(3)]  # fmt: skip
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(docs)},
                {"role": "user", "content": f"Where does {topic} flow?"}]  # fmt: skip
    return {"model": "stub-model", "messages": messages, "max_tokens": 4}


def phase(client: httpx.Client, urls: tuple[str, str], tag: str) -> dict[str, list]:
    """PER_PHASE requests over 12 prompts (each seen 20 times) to each ragtrim,
    alternating: latencies and cache hits of each."""
    out: dict[str, list] = {"lat0": [], "lat1": [], "hits0": [], "hits1": []}
    for i in range(PER_PHASE):
        for side, url in enumerate(urls):
            start = time.perf_counter()
            resp = client.post(f"{url}/v1/chat/completions", json=rag_body(f"{tag}{i % 12}"))
            out[f"lat{side}"].append((time.perf_counter() - start) * 1000)
            assert resp.status_code == 200, resp.text
            assert resp.json()["choices"][0]["message"]["content"] == "hello"
            out[f"hits{side}"].append(resp.headers["x-ragtrim-cache-hits"])  # compressed
    return out


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def store_errors(client: httpx.Client, url: str) -> float:
    text = client.get(f"{url}/metrics").text
    return sum(float(v) for v in re.findall(r"^ragtrim_store_errors_total\{[^}]*\} (\S+)$",
                                            text, re.M))  # fmt: skip


def wait_for_redis_memo(client, url, direct: redis.Redis, tag: str) -> None:
    """After a restart: ragtrim leaves the fallback and writes memo entries to Redis."""
    deadline = time.monotonic() + 10
    while not direct.keys("ragtrim:memo:*"):
        assert time.monotonic() < deadline, "ragtrim never wrote to the restarted Redis"
        client.post(f"{url}/v1/chat/completions", json=rag_body(f"{tag}-{time.monotonic()}"))
        time.sleep(0.1)


@pytest.fixture
def redis_pair():
    servers = [RedisServer(free_port()).start(), RedisServer(free_port()).start()]
    yield servers
    for server in servers:
        server.kill()


def test_redis_hung_down_and_restarted(stub, make_proxy, redis_pair):
    redis_server, control = redis_pair
    opts = {"compressor": HalfWords(), "compression": ALWAYS}
    proxy = make_proxy([stub.url], redis={"url": redis_server.url}, **opts)
    other = make_proxy([stub.url], redis={"url": control.url}, **opts)  # Redis always healthy
    urls, added = (proxy.url, other.url), {}
    direct = redis.Redis.from_url(redis_server.url)

    def record(name: str, result: dict) -> list[str]:
        added[name] = min(p99(result["lat0"][half]) - p99(result["lat1"][half])
                          for half in HALVES)  # fmt: skip
        return result["hits0"]

    with httpx.Client(timeout=10) as client:
        record("healthy", phase(client, urls, "healthy"))
        # a call slower than redis.timeout_s (0.1 s) counts as an outage, as it should: on 2
        # shared cores a stall of the machine did that once in 400 requests (CI, stop 38)
        healthy_errors = store_errors(client, proxy.url)
        assert direct.keys("ragtrim:memo:*") and healthy_errors <= 2

        redis_server.pause()  # hung: connections open, nothing answers
        assert record("hung", phase(client, urls, "hung"))[-1] == "3/3"  # the fallback serves
        assert store_errors(client, proxy.url) > healthy_errors

        redis_server.kill()  # down: connection refused
        assert record("down", phase(client, urls, "down"))[-1] == "3/3"

        redis_server.start()  # restarted, empty, on the same port
        direct = redis.Redis.from_url(redis_server.url)
        wait_for_redis_memo(client, proxy.url, direct, "back")
        errors_after = store_errors(client, proxy.url)
        back_hits = record("back", phase(client, urls, "back"))
        assert back_hits[:1] == ["0/3"] and back_hits[-1] == "3/3"
        assert len(direct.keys("ragtrim:memo:*")) >= 36  # 12 prompts × 3 documents, in Redis
        assert store_errors(client, proxy.url) - errors_after <= 2  # recovered: as healthy
    print(f"added p99 (ms) against a ragtrim with healthy Redis: {added}")
    assert all(v <= 5.0 for v in added.values()), added
