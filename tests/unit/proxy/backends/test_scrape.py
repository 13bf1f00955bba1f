"""The gate learns prefill cost without streaming clients: vLLM's metrics, read after
responses (proxy/backends/scrape.py), and streamed TTFTs (proxy/response/feedback.py); the `auto`
policy end to end through the app."""

import uuid

import httpx
import pytest

from proxy.backends.scrape import parse_totals, sample_between
from tests.doubles.prefill_sim import PrefillSim
from tests.doubles.stub_vllm import StubVllm
from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import SYSTEM
from tests.support.servers import serving

VLLM_PAGE = """# HELP vllm:request_prefill_time_seconds Histogram of time spent in PREFILL phase.
# TYPE vllm:request_prefill_time_seconds histogram
vllm:request_prefill_time_seconds_bucket{engine="0",le="0.3",model_name="m"} 1.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="m"} 1.5
vllm:request_prefill_time_seconds_count{engine="0",model_name="m"} 2.0
vllm:request_prefill_time_seconds_sum{engine="1",model_name="m"} 0.5
vllm:request_prefill_time_seconds_count{engine="1",model_name="m"} 2.0
vllm:request_prefill_time_seconds_created{engine="0",model_name="m"} 1.7e+09
vllm:request_prefill_kv_computed_tokens_sum{engine="0",model_name="m"} 3000.0
vllm:request_prefill_kv_computed_tokens_count{engine="0",model_name="m"} 4.0
vllm:request_prefill_kv_computed_tokens_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 9.0
"""


def test_parse_sums_engines_and_ignores_other_series():
    t = parse_totals(VLLM_PAGE)
    assert t == {"vllm:request_prefill_time_seconds_sum": 2.0,
                 "vllm:request_prefill_time_seconds_count": 4.0,
                 "vllm:request_prefill_kv_computed_tokens_sum": 3000.0,
                 "vllm:request_prefill_kv_computed_tokens_count": 4.0}  # fmt: skip
    assert sample_between(None, t) == (750.0, 500.0)
    later = {**t, "vllm:request_prefill_time_seconds_sum": 2.1,
             "vllm:request_prefill_time_seconds_count": 5.0,
             "vllm:request_prefill_kv_computed_tokens_sum": 4000.0,
             "vllm:request_prefill_kv_computed_tokens_count": 5.0}  # fmt: skip
    assert sample_between(t, later) == (1000.0, pytest.approx(100.0))
    assert sample_between(later, t) is None  # counters fell: a restarted vLLM
    assert sample_between(t, t) is None and sample_between(None, {}) is None


def rag_body(stream: bool = False) -> dict:
    """A LangChain stuff prompt with fresh documents (no prefix-cache hits on them)."""
    tag = uuid.uuid4().hex[:8]
    docs = [" ".join(f"fact{tag}{d}w{i} is true." for i in range(60)) for d in range(2)]
    system = SYSTEM + "\n\n".join(docs)
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": "Which fact is true?"}]  # fmt: skip
    extra = {"stream": True} if stream else {}
    return {"model": "stub-model", "messages": messages, **extra}


def decisions(proxy, n: int, stream: bool = False) -> list[str]:
    out = []
    for _ in range(n):
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=rag_body(stream), timeout=30)
        assert resp.status_code == 200, resp.text
        out.append(resp.headers["x-ragtrim-decision"].split("(")[0])
    return out


# the gate's prior is extractive's (0.12 ms per token): the doubles are measured at start-up
AUTO = {"policy": "auto", "min_context_tokens": 0, "rate": 0.5, "compressor": "extractive"}


def test_non_streamed_traffic_alone_reaches_compress_auto(make_proxy):
    # 1 ms per token: a slow replica; compression (prior 0.12 ms/token) pays
    with serving(StubVllm(prefill=PrefillSim(per_token_ms=1.0))) as stub:
        proxy = make_proxy([stub.url], compressor=HalfWords(), compression=AUTO)
        seen = decisions(proxy, 5)
        metrics = httpx.get(f"{proxy.url}/metrics").text
    assert seen[0] == "skip:no-prefill-measurement"
    assert "compress:auto" in seen[:4], seen
    assert f'ragtrim_prefill_samples_total{{backend="{stub.url}",source="metrics"}}' in metrics


def test_measured_costs_make_compression_not_worth_it(make_proxy):
    # prefill ≈ 0.38 ms per token (law + base): half the context saves ≈ 0.19 ms a token;
    # the compressor costs ≈ 0.23 (0.2 s per call, measured at start-up) — the gate's
    # prior for it (0.12) would have compressed
    with serving(StubVllm(prefill=PrefillSim(per_token_ms=0.35))) as stub:
        proxy = make_proxy([stub.url], compressor=HalfWords(delay=0.2), compression=AUTO)
        seen = decisions(proxy, 5)
    assert "skip:not-worth-it" in seen[:4] and "compress:auto" not in seen, seen


def test_streamed_ttft_feeds_the_gate_without_metrics(make_proxy):
    with serving(StubVllm(prefill=PrefillSim(per_token_ms=1.0))) as stub:
        settings = {**AUTO, "prefill_metrics": False}
        proxy = make_proxy([stub.url], compressor=HalfWords(), compression=settings)
        assert decisions(proxy, 2) == ["skip:no-prefill-measurement"] * 2  # nothing learned
        seen = decisions(proxy, 3, stream=True)
        metrics = httpx.get(f"{proxy.url}/metrics").text
    assert seen[0] == "skip:no-prefill-measurement" and "compress:auto" in seen[1:], seen
    assert f'ragtrim_prefill_samples_total{{backend="{stub.url}",source="stream"}}' in metrics
    assert 'source="metrics"' not in metrics


async def _scraper(status: int | None, page: bytes = b""):
    """A scraper over the Transport seam; `status` None: the read fails locally (EMFILE)."""
    import errno

    from proxy.backends.endpoint import EndpointPool
    from proxy.backends.scrape import MetricsScraper
    from proxy.metrics import Metrics
    from tests.support.compressor_doubles import HandlerTransport

    async def answer(method, url, headers, body):
        if status is None:
            raise OSError(errno.EMFILE, "Too many open files")
        return status, page

    pool = EndpointPool.from_urls(["http://b"])
    scraper = MetricsScraper(pool, HandlerTransport(answer), Metrics(), min_interval=0.0,
                             retry_s=60.0)  # fmt: skip
    ep = pool.get("http://b")
    return scraper, ep, ep.prefill.samples


async def test_a_backend_without_metrics_is_left_alone_but_a_local_failure_is_not_its():
    scraper, ep, seen = await _scraper(404)
    assert await scraper.scrape(ep) is None and ep.scrape.off_until > 0
    scraper.poke(ep.url)
    assert ep.scrape.task is None  # off for retry_s: no read started
    scraper, ep, seen = await _scraper(None)
    assert await scraper.scrape(ep) is None and ep.scrape.off_until == 0
    scraper, ep, seen = await _scraper(200, VLLM_PAGE.encode())
    assert await scraper.scrape(ep) == (750.0, 500.0) and list(seen) == [(750.0, 500.0)]
    assert ep.scrape.last is not None
