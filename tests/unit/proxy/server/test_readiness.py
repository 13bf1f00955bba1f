"""/readyz waits for the compressor's warm-up (issue 43, item 7): requests sent while it
loaded shared the CPU with the load (2k-token first turns +29-114 ms p90 on 2 cores).
Through a real ragtrim in front of the stub, with a compressor whose load the test
releases."""

import threading
import time

import httpx

from proxy.server.app import create_app
from proxy.settings import Settings
from tests.doubles.stub_vllm import StubVllm
from tests.support.compressor_doubles import HalfWords
from tests.support.servers import serving


class HeldLoad(HalfWords):
    """HalfWords whose first call (the warm-up's) waits for the test."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def compress(self, documents, *, question, budget):
        self.release.wait(30)
        return super().compress(documents, question=question, budget=budget)


def readiness(url: str, want: int, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while (resp := httpx.get(f"{url}/readyz")).status_code != want:
        assert time.monotonic() < deadline, resp.json()
        time.sleep(0.05)
    return resp.json()


def test_ready_only_once_the_compressor_has_loaded():
    held = HeldLoad()
    with serving(StubVllm()) as stub:
        settings = Settings(backends=[stub.url], health={"interval_s": 0.1})
        with serving(create_app(settings, compressor=held)) as proxy:
            time.sleep(0.5)  # several health rounds: the backend is healthy
            body = readiness(proxy.url, 503)
            assert body["ready"] is False and body["compressor"] == "loading"
            answer = httpx.post(f"{proxy.url}/v1/chat/completions",
                                json={"model": "stub-model", "messages": [
                                    {"role": "user", "content": "hi"}]})  # fmt: skip
            assert answer.status_code == 200  # not ready is advice to probes, not a refusal
            held.release.set()
            assert readiness(proxy.url, 200)["compressor"] == "ready"


def test_a_load_that_outlasts_ready_wait_s_is_not_waited_for():
    held = HeldLoad()
    with serving(StubVllm()) as stub:
        settings = Settings(backends=[stub.url], health={"interval_s": 0.1},
                            compression={"ready_wait_s": 0.3})  # fmt: skip
        with serving(create_app(settings, compressor=held)) as proxy:
            assert readiness(proxy.url, 200)["compressor"] == "loading"
            held.release.set()
