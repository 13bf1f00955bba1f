"""The response hooks, called directly: each point with a real Exchange whose backend
answered (no transport, no app)."""

import json

import pytest

from proxy.errors import UpstreamTimeout
from proxy.metrics import Metrics
from proxy.outcome.decision import Why, skip
from proxy.response.events import EventStream
from proxy.response.hooks import FeedbackHook, HeadersHook, TimingHook, UsageHook
from proxy.response.relay import ClientDisconnected
from proxy.response.usage_tap import ChatUsage
from proxy.upstream.exchange import Exchange
from tests.support.exchanges import URL, USAGE, ctx, exchange
from tests.support.tapped import Tapped


def count(metric, *labels) -> float:
    return metric.labels(*labels)._value.get()


def observed(histogram) -> list[float]:
    return [s.value for m in histogram.collect() for s in m.samples if s.name.endswith("_sum")]


def test_usage_from_a_json_body_sets_the_cached_tokens_header():
    hook, ex = UsageHook(Metrics(), False), exchange()
    body = json.dumps({"choices": [], "usage": USAGE}).encode()
    assert hook.body(ctx(), ex, [body[:20], body[20:]]) == [(b"x-ragtrim-cached-tokens", b"4")]
    assert ex.usage == USAGE


@pytest.mark.parametrize(("route", "status"), [("other", 200), ("chat", 429)])
def test_no_usage_is_read_from_pass_through_or_error_answers(route, status):
    hook, ex = UsageHook(Metrics(), False), exchange(status)
    assert hook.body(ctx(route=route), ex, [json.dumps({"usage": USAGE}).encode()]) == []
    assert ex.usage is None


def test_bad_usage_in_a_json_body_is_counted_and_adds_no_header():
    metrics = Metrics()
    hook, ex = UsageHook(metrics, False), exchange()
    assert hook.body(ctx(), ex, [b'{"usage": {"prompt_tokens": "lots"}}']) == []
    assert ex.usage is None and count(metrics.upstream_bad_usage, URL) == 1


def test_the_stream_tap_strips_only_what_ragtrim_added_and_none_on_pass_through():
    hook, ex = UsageHook(Metrics(), False), exchange()
    assert hook.stream(ctx(stream=True, usage_added=True), ex).strip is True
    assert hook.stream(ctx(stream=True), ex).strip is False
    assert hook.stream(ctx(route="other"), ex) is None


@pytest.mark.parametrize(("forced", "kept"), [(True, True), (False, False)])
def test_a_backend_that_forces_usage_keeps_the_usage_chunk(forced, kept):
    """vLLM's --enable-force-include-usage ORs with the request's include_usage: the
    chunk ragtrim asked for is one vLLM sends every client (issue 31)."""
    hook, ex = UsageHook(Metrics(), forced), exchange()
    tap = Tapped(hook.stream(ctx(stream=True, usage_added=True), ex))
    chunk = b"data: " + json.dumps({"choices": [], "usage": USAGE}).encode() + b"\n\n"
    out = tap(chunk) + tap.flush()
    assert (b'"usage"' in out) is kept and tap.usage == USAGE


def _tapped(usage) -> EventStream:
    tap = Tapped(ChatUsage(strip=True))
    tap(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n")
    return tap.stream


@pytest.mark.parametrize(
    ("error", "kept", "bad"),
    [(None, True, 1), (UpstreamTimeout("idle"), False, 1), (ClientDisconnected(), False, 0)],
)
def test_a_streams_usage_is_kept_when_it_ended_well_bad_usage_counted_on_backend_faults(
    error, kept, bad
):
    metrics = Metrics()
    hook, good, broken = UsageHook(metrics, False), exchange(), exchange()
    good.tap, broken.tap = _tapped(USAGE), _tapped({"prompt_tokens": -1})
    hook.done(ctx(stream=True), good, error)
    hook.done(ctx(stream=True), broken, error)
    assert (good.usage == USAGE) is kept and broken.usage is None
    assert count(metrics.upstream_bad_usage, URL) == bad


def test_headers_name_the_request_the_backend_and_what_the_stages_set():
    c = ctx()
    c.outcome.decision = skip(Why.CACHED, uncached=3, form=9)
    assert HeadersHook(show_backend=True, hidden=frozenset()).headers(c, exchange()) == [
        (b"x-request-id", b"req-1"), (b"x-ragtrim-backend", URL.encode()),
        (b"x-ragtrim-decision", b"skip:cached(uncached=3,form=9)"),
    ]  # fmt: skip
    assert (b"x-ragtrim-backend", URL.encode()) not in HeadersHook(False, frozenset()).headers(
        c, exchange()
    )


def _timed(first=1.25, last=1.65) -> Exchange:
    ex = exchange()
    ex.sent_at, ex.first_chunk_at, ex.last_chunk_at = 1.0, first, last
    ex.usage = {"completion_tokens": 5}
    return ex


def test_ttft_and_tpot_of_a_stream_are_observed_per_backend():
    metrics = Metrics()
    TimingHook(metrics).done(ctx(stream=True), _timed(), None)
    assert observed(metrics.upstream_ttft) == [pytest.approx(0.25)]
    assert observed(metrics.upstream_tpot) == [pytest.approx(0.1)]  # 0.4 s over 4 tokens


@pytest.mark.parametrize(("stream", "route", "error"), [
    (False, "chat", None), (True, "other", None), (True, "chat", UpstreamTimeout("idle")),
])  # fmt: skip
def test_no_timing_without_a_stream_that_ended_well(stream, route, error):
    metrics = Metrics()
    TimingHook(metrics).done(ctx(stream=stream, route=route), _timed(), error)
    assert observed(metrics.upstream_ttft) == [] and observed(metrics.upstream_tpot) == []


class Recorder:
    def __init__(self):
        self.calls = []

    def observe(self, ctx, url, usage, ttft_ms):
        self.calls.append((url, usage, ttft_ms))


def test_feedback_hears_the_backend_its_usage_and_a_streams_ttft():
    feedback = Recorder()
    hook = FeedbackHook(feedback)
    hook.done(ctx(stream=True), _timed(), None)
    hook.done(ctx(), _timed(), None)
    assert feedback.calls == [(URL, {"completion_tokens": 5}, pytest.approx(250.0)),
                              (URL, {"completion_tokens": 5}, None)]  # fmt: skip


@pytest.mark.parametrize(("route", "error"), [("other", None), ("chat", UpstreamTimeout("x"))])
def test_feedback_hears_nothing_of_pass_through_or_failed_exchanges(route, error):
    feedback = Recorder()
    FeedbackHook(feedback).done(ctx(route=route), _timed(), error)
    assert feedback.calls == []
