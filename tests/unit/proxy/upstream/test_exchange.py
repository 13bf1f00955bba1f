"""Exchange, called directly with a scripted transport (a test double of the
one-method seam): slot accounting, the failover walk, deadlines, release."""

import asyncio

import pytest

from proxy.backends.endpoint import Endpoint
from proxy.errors import UpstreamBadResponse, UpstreamTimeout, UpstreamTooLarge, UpstreamUnavailable
from proxy.metrics import Metrics
from proxy.settings import TimeoutSettings
from proxy.upstream.exchange import Exchange


class Scripted:
    """An upstream response: status, SSE or JSON, chunks with optional gaps."""

    def __init__(self, status=200, chunks=(b"data: 1\n\n",), sse=True, gap=0.0):
        self.status = status
        ctype = b"text/event-stream" if sse else b"application/json"
        self.headers = [(b"content-type", ctype)]
        self._chunks, self.gap = list(chunks), gap
        self.released = self.aborted = False

    async def chunks(self):
        for chunk in self._chunks:
            await asyncio.sleep(self.gap)
            yield chunk

    async def read(self):
        return b"".join(self._chunks)

    def release(self):
        self.released = True

    def abort(self):
        self.aborted = True


class Transport:
    """Answers per URL with a Scripted response, an exception, or a hang."""

    def __init__(self, script, pool):
        self.script, self.pool, self.seen = script, pool, []

    async def send(self, method, url, headers, body):
        self.seen.append((url, [ep.in_flight for ep in self.pool]))
        answer = self.script[url.removesuffix("/v1/chat/completions")]
        if answer == "hang":
            await asyncio.sleep(60)
        if isinstance(answer, tuple):  # (seconds, answer): a slow head
            await asyncio.sleep(answer[0])
            answer = answer[1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def aclose(self):
        pass


def _make(script, timeouts=None, whole_answer=False):
    pool = [Endpoint("http://a", healthy=True), Endpoint("http://b", healthy=True)]
    transport = Transport(script, pool)
    ex = Exchange(transport, timeouts or TimeoutSettings(), Metrics(), "POST",
                  "/v1/chat/completions", b"{}", [], whole_answer=whole_answer)  # fmt: skip
    return ex, pool, transport


async def test_in_flight_slot_is_taken_before_sending_and_released_on_close():
    answer = Scripted(sse=False, chunks=(b"{}",))
    ex, pool, transport = _make({"http://a": answer})
    await ex.open(pool)
    assert transport.seen == [("http://a/v1/chat/completions", [1, 0])]
    assert await ex.read(1024) == [b"{}"]
    await ex.close(None)
    assert [ep.in_flight for ep in pool] == [0, 0]
    assert answer.released and not answer.aborted


async def test_failover_moves_the_slot_and_marks_a_refusing_replica_unhealthy():
    refused = UpstreamUnavailable("refused")
    refused.connect_failed = True
    ex, pool, transport = _make({"http://a": refused, "http://b": Scripted()})
    await ex.open(pool)
    assert [seen for _, seen in transport.seen] == [[1, 0], [0, 1]]
    assert ex.endpoint is pool[1] and pool[0].healthy is False
    await ex.close(None)
    assert [ep.in_flight for ep in pool] == [0, 0]


async def test_retryable_status_goes_to_the_next_replica_but_the_last_answer_stands():
    first, last = Scripted(status=503), Scripted(status=503)
    ex, pool, _ = _make({"http://a": first, "http://b": last})
    await ex.open(pool)
    assert first.aborted and ex.response is last
    await ex.close(None)


async def test_first_byte_deadline_is_a_504_at_once_never_retried_elsewhere():
    timeouts = TimeoutSettings(first_byte_s=0.05)
    ex, pool, transport = _make({"http://a": "hang", "http://b": Scripted()}, timeouts)
    with pytest.raises(UpstreamTimeout):
        await ex.open(pool)
    assert [url for url, _ in transport.seen] == ["http://a/v1/chat/completions"]
    assert [ep.in_flight for ep in pool] == [0, 0]
    assert pool[0].healthy  # a slow replica is not a dead one


async def test_a_non_streamed_generation_waits_for_its_head_up_to_the_total_deadline():
    """Issue 31: vLLM sends a non-streamed answer's headers only once the whole
    generation is done; a long one is not a hung one (it was a 504 after first_byte)."""
    timeouts = TimeoutSettings(first_byte_s=0.05, total_s=5)
    ex, pool, _ = _make({"http://a": (0.2, Scripted(sse=False))}, timeouts, whole_answer=True)
    await ex.open(pool)
    assert ex.status == 200
    await ex.close(None)
    late = TimeoutSettings(first_byte_s=0.05, total_s=0.1)
    ex, pool, _ = _make({"http://a": (0.3, Scripted(sse=False))}, late, whole_answer=True)
    with pytest.raises(UpstreamTimeout):
        await ex.open(pool)
    ex, pool, _ = _make({"http://a": (0.2, Scripted())}, timeouts)  # a stream: first_byte
    with pytest.raises(UpstreamTimeout):
        await ex.open(pool)


async def test_all_refused_raises_the_last_error():
    refused = UpstreamUnavailable("refused")
    ex, pool, transport = _make({"http://a": refused, "http://b": refused})
    with pytest.raises(UpstreamUnavailable):
        await ex.open(pool)
    assert len(transport.seen) == 2 and [ep.in_flight for ep in pool] == [0, 0]


async def test_idle_deadline_mid_stream_and_abort_on_close():
    answer = Scripted(chunks=(b"a", b"b"), gap=0.2)
    ex, pool, _ = _make({"http://a": answer}, TimeoutSettings(idle_s=0.05))
    await ex.open(pool)
    with pytest.raises(UpstreamTimeout):
        async for _ in ex.chunks():
            pass
    await ex.close(UpstreamTimeout("idle"))
    assert answer.aborted and not answer.released and pool[0].in_flight == 0


async def test_ttft_and_tpot_come_from_the_chunk_times():
    answer = Scripted(chunks=(b"a", b"b", b"c"), gap=0.02)
    ex, pool, _ = _make({"http://a": answer})
    await ex.open(pool)
    assert [c async for c in ex.chunks()] == [b"a", b"b", b"c"]
    await ex.close(None)
    assert ex.ttft_ms() >= 15
    assert 0.005 <= ex.tpot_s(completion_tokens=3) <= 0.5
    assert ex.tpot_s(completion_tokens=1) is None


async def test_a_body_over_the_cap_is_refused_while_reading_never_held_whole():
    answer = Scripted(sse=False, chunks=(b"x" * 600, b"x" * 600, b"never read"))
    ex, pool, _ = _make({"http://a": answer})
    await ex.open(pool)
    with pytest.raises(UpstreamTooLarge):
        await ex.read(1000)
    await ex.close(UpstreamTooLarge("big"))
    assert answer.aborted and pool[0].in_flight == 0


@pytest.mark.parametrize(
    ("status", "sse", "expect"),
    [(500, False, "json"), (307, False, "json"), (999, False, "json"), (200, False, "sse"),
     (200, True, "json"), (502, False, None)],
)  # fmt: skip
async def test_answers_ragtrim_does_not_relay_are_refused_and_counted(status, sse, expect):
    ex, pool, _ = _make({"http://a": Scripted(status=status, sse=sse)})
    ex.metrics = metrics = Metrics()
    await ex.open(pool[:1])
    with pytest.raises(UpstreamBadResponse):
        ex.accept(expect)
    assert sum(s.value for m in metrics.upstream_bad_responses.collect() for s in m.samples
               if s.name.endswith("_total")) == 1  # fmt: skip


@pytest.mark.parametrize(
    ("status", "sse", "expect"),
    [(200, True, "sse"), (200, False, "json"), (429, False, "sse"), (200, True, None)],
)
async def test_answers_ragtrim_relays_pass(status, sse, expect):
    ex, pool, _ = _make({"http://a": Scripted(status=status, sse=sse)})
    await ex.open(pool[:1])
    ex.accept(expect)
