"""The stub remembers what each completion carried (bench.abuse reads it): the
client's tag, the cache_salt as the backend received it, the characters per message."""

import httpx

from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import serving


def test_the_stub_records_tag_salt_and_sizes_and_reset_clears_them():
    with serving(StubVllm()) as stub:
        parts = [{"type": "text", "text": "hi"}]
        messages = [{"role": "system", "content": "abc"}, {"role": "user", "content": parts}]
        chat = {"model": "stub-model", "cache_salt": "s1", "stub": {"tag": "A-1"},
                "messages": messages}  # fmt: skip
        httpx.post(f"{stub.url}/v1/chat/completions", json=chat)
        httpx.post(f"{stub.url}/v1/completions", json={"model": "stub-model", "prompt": "xyz"})
        records = httpx.get(f"{stub.url}/stub/requests").json()["requests"]
        assert records == [
            {"path": "/v1/chat/completions", "tag": "A-1", "cache_salt": "s1", "chars": [3, 2]},
            {"path": "/v1/completions", "tag": None, "cache_salt": None, "chars": [3]},
        ]
        httpx.post(f"{stub.url}/stub/reset")
        assert httpx.get(f"{stub.url}/stub/requests").json()["requests"] == []
