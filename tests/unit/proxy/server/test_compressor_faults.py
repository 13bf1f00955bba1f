"""Issue 11 item 9: a compressor that raises, kills its worker or hangs.

Through a real ragtrim and the stub (which echoes what it received): the request is
answered with the original prompt, the failure is counted by reason, and the next
request is compressed again, by a fresh worker when the old one is stuck.
"""

import re
import threading
import time

import httpx
import pytest

from tests.support.compressor_doubles import HalfWords

SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)
TIMEOUT = 0.3


class Faulty(HalfWords):
    """HalfWords, or a fault chosen by the test: raise, SystemExit, or hang."""

    def __init__(self):
        super().__init__()
        self.mode = "ok"
        self.unblock = threading.Event()

    def compress(self, documents, *, question, budget):
        if self.mode == "raise":
            raise ValueError("compressor failed on: " + documents[0][:40])
        if self.mode == "exit":
            raise SystemExit(3)  # as a library calling sys.exit() would
        if self.mode == "hang":
            self.unblock.wait(30)  # a deadlocked model call
        return super().compress(documents, question=question, budget=budget)


def body(topic: str) -> dict:
    docs = [f"{topic} note {i}: a long sentence about {topic} and its many details." for i in
            range(3)]  # fmt: skip
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(docs)},
                {"role": "user", "content": f"What about {topic}?"}]  # fmt: skip
    return {"model": "stub-model", "messages": messages, "stub": {"echo": True}}


def failures(url: str, reason: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    found = re.search(rf'^ragtrim_compress_failures_total\{{reason="{reason}"\}} (\S+)$', text,
                      re.M)  # fmt: skip
    return float(found.group(1)) if found else 0.0


@pytest.fixture
def faulty():
    compressor = Faulty()
    yield compressor
    compressor.unblock.set()  # let a hung worker thread end


@pytest.fixture
def proxy(stub, make_proxy, faulty):
    compression = {"policy": "always", "min_context_tokens": 0, "timeout_s": TIMEOUT}
    return make_proxy([stub.url], compressor=faulty, compression=compression)


def send(proxy, topic: str) -> tuple[httpx.Response, dict, float]:
    sent = body(topic)
    start = time.perf_counter()
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=sent, timeout=10)
    elapsed = time.perf_counter() - start
    assert resp.status_code == 200, resp.text
    return resp, sent, elapsed


@pytest.mark.parametrize(("mode", "reason"), [("raise", "error"), ("exit", "crash"),
                                              ("hang", "timeout")])  # fmt: skip
def test_fault_forwards_the_original_and_the_next_request_compresses(proxy, faulty, mode,
                                                                     reason):  # fmt: skip
    faulty.mode = mode
    resp, sent, elapsed = send(proxy, f"fault-{mode}")
    assert resp.json()["echo"]["messages"] == sent["messages"]  # the original, unchanged
    assert resp.headers["x-ragtrim-decision"] == f"failed-open:{reason}"
    assert failures(proxy.url, reason) == 1
    assert elapsed < TIMEOUT + 1.0

    faulty.mode = "ok"  # the hung call still holds its thread: a fresh worker must serve
    resp, sent, elapsed = send(proxy, f"after-{mode}")
    assert resp.headers["x-ragtrim-decision"] != f"failed-open:{reason}"
    assert int(resp.headers["x-ragtrim-tokens-after"]) < int(
        resp.headers["x-ragtrim-tokens-before"]
    )
    assert resp.json()["echo"]["messages"] != sent["messages"]  # compressed this time
    assert elapsed < TIMEOUT + 1.0


def test_repeated_hangs_keep_being_replaced(proxy, faulty):
    faulty.mode = "hang"
    for i in range(3):
        resp, sent, _ = send(proxy, f"hang-{i}")
        assert resp.json()["echo"]["messages"] == sent["messages"]
    assert failures(proxy.url, "timeout") == 3
    faulty.mode = "ok"
    resp, _, _ = send(proxy, "after-hangs")
    assert "x-ragtrim-tokens-after" in resp.headers
