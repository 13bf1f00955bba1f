"""bench.litellm's measurement: what a response says (ragtrim's headers, bare or behind
LiteLLM's llm_provider- prefix), the interleaving and warm-up, and the summaries."""

import json

import httpx
import pytest

from bench.lib import litellm_hop as hop

DIRECT = hop.Target("ragtrim", "http://ragtrim/v1", "unused", "")
VIA = hop.Target("litellm", "http://litellm/v1", "sk-key", hop.PROVIDER)


def _backend(seen: list[tuple[str, dict]]):
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.host, json.loads(request.content)))
        prefix = hop.PROVIDER if request.url.host == "litellm" else ""
        headers = {f"{prefix}x-ragtrim-tokens-before": "1000",
                   f"{prefix}x-ragtrim-tokens-after": "400",
                   f"{prefix}x-ragtrim-decision": "compress"}  # fmt: skip
        if prefix:
            headers["x-litellm-overhead-duration-ms"] = "3.5"
        return httpx.Response(200, headers=headers, json={"usage": {"prompt_tokens": 450}})

    return answer


def _sample(ms: float, before: int = 10, after: int = 5) -> hop.Sample:
    return hop.Sample(ms, before, after, "compress:auto(saved=9ms,cost=1ms)", 7, None)


def test_send_reads_ragtrims_headers_bare_and_behind_litellm():
    seen: list = []
    client = httpx.Client(transport=httpx.MockTransport(_backend(seen)))
    direct = hop.send(client, DIRECT, "m", [{"role": "user", "content": "q"}])
    via = hop.send(client, VIA, "m", [{"role": "user", "content": "q"}])
    assert (direct.tokens_before, direct.tokens_after, direct.prompt_tokens) == (1000, 400, 450)
    assert (via.tokens_before, via.tokens_after, via.decision) == (1000, 400, "compress")
    assert direct.overhead_ms is None and via.overhead_ms == 3.5
    assert seen[1][1]["max_tokens"] == hop.MAX_TOKENS and seen[1][1]["model"] == "m"


def test_a_response_without_ragtrims_headers_is_not_compressed():
    client = httpx.Client(transport=httpx.MockTransport(
        lambda r: httpx.Response(200, json={"usage": {"prompt_tokens": 9}})))  # fmt: skip
    sample = hop.send(client, VIA, "m", [])
    assert sample.tokens_after == sample.tokens_before == 0
    assert hop.summary([sample])["compressed"] is False


def test_interleaved_alternates_the_first_path_and_drops_warmup():
    seen: list = []
    requests = [[{"role": "user", "content": str(i)}] for i in range(8)]
    out = hop.interleaved((DIRECT, VIA), "m", requests, warmup=1,
                          transport=httpx.MockTransport(_backend(seen)))  # fmt: skip
    assert [host for host, _ in seen] == ["ragtrim", "litellm", "litellm", "ragtrim"] * 2
    assert [body["messages"][0]["content"] for _, body in seen] == [str(i) for i in range(8)]
    assert len(out["ragtrim"]) == len(out["litellm"]) == 3


def test_summary_and_paired_difference():
    base = [_sample(10), _sample(20), _sample(30)]
    via = [_sample(14), _sample(21), _sample(60, before=10, after=10)]
    summary = hop.summary(via)
    assert summary["p50_ms"] == 21 and summary["compressed"] is False
    assert summary["compressed_share"] == pytest.approx(2 / 3)
    assert summary["decisions"] == {"compress:auto": 3}
    assert hop.paired_added_ms(base, via) == 4
