"""ResponsePath, the one call after ranking, with a scripted transport and a recording
client: hooks at their points in order, errors raised (never returned), the slot
released, the bytes relayed unchanged."""

import asyncio

import pytest

from proxy.backends.endpoint import Endpoint
from proxy.errors import UpstreamBadResponse, UpstreamTimeout, UpstreamUnavailable
from proxy.metrics import Metrics
from proxy.response.path import ResponsePath
from proxy.response.relay import Reply
from proxy.settings import TimeoutSettings, UpstreamSettings
from tests.support.exchanges import ctx


class Answer:
    def __init__(self, status=200, chunks=(b"data: 1\n\n",), sse=True, fail=None):
        self.status = status
        ctype = b"text/event-stream" if sse else b"application/json"
        self.headers = [(b"content-type", ctype)]
        self._chunks, self.fail = chunks, fail
        self.released = self.aborted = False

    async def chunks(self):
        for chunk in self._chunks:
            yield chunk
        if self.fail is not None:
            raise self.fail

    def release(self):
        self.released = True

    def abort(self):
        self.aborted = True


class Transport:
    def __init__(self, answer):
        self.answer = answer

    async def send(self, method, url, headers, body):
        return self.answer


class Hook:
    """Records every point it is called at."""

    def __init__(self, name, seen):
        self.name, self.seen = name, seen

    def headers(self, ctx, ex):
        self.seen.append((self.name, "headers"))
        return [(b"x-" + self.name.encode(), b"1")]

    def body(self, ctx, ex, parts):
        self.seen.append((self.name, "body", b"".join(parts)))
        return []

    def done(self, ctx, ex, error):
        self.seen.append((self.name, "done", type(error).__name__ if error else None))


async def _never_disconnects():
    await asyncio.sleep(60)
    return {"type": "http.disconnect"}


async def relay(answer, hooks, c=None):
    sent, pool = [], [Endpoint("http://a", healthy=True)]

    async def send(message):
        sent.append(message)

    path = ResponsePath(Transport(answer), TimeoutSettings(), Metrics(), UpstreamSettings(),
                        hooks)  # fmt: skip
    reply = Reply(send)
    try:
        await path.relay(c or ctx(), pool, reply, _never_disconnects, "POST", "/v1/x", [])
    finally:
        assert pool[0].in_flight == 0
    return sent


async def test_a_json_answer_passes_each_point_in_list_order_and_is_sent_whole():
    seen = []
    sent = await relay(Answer(sse=False, chunks=(b'{"a":', b"1}")),
                       [Hook("one", seen), Hook("two", seen)])  # fmt: skip
    body = b'{"a":1}'
    assert seen == [("one", "headers"), ("two", "headers"), ("one", "body", body),
                    ("two", "body", body), ("one", "done", None),
                    ("two", "done", None)]  # fmt: skip
    start = sent[0]
    assert start["status"] == 200
    assert start["headers"][-3:] == [(b"x-one", b"1"), (b"x-two", b"1"), (b"content-length", b"7")]
    assert b"".join(m["body"] for m in sent[1:]) == b'{"a":1}'


async def test_a_stream_without_hooks_is_relayed_byte_for_byte():
    answer = Answer(chunks=(b"data: 1\n\n", b"data: [DO", b"NE]\n\n"))
    sent = await relay(answer, [], ctx(stream=True))
    assert [m.get("body") for m in sent[1:]] == [b"data: 1\n\n", b"data: [DO", b"NE]\n\n", b""]
    assert answer.released and not answer.aborted


async def test_a_failure_mid_stream_is_raised_after_the_start_and_reaches_done():
    seen, answer = [], Answer(fail=UpstreamTimeout("idle"))
    with pytest.raises(UpstreamTimeout):
        await relay(answer, [Hook("h", seen)], ctx(stream=True))
    assert seen[-1] == ("h", "done", "UpstreamTimeout") and answer.aborted


async def test_an_answer_ragtrim_does_not_relay_is_raised_before_anything_is_sent():
    seen = []
    with pytest.raises(UpstreamBadResponse):
        await relay(Answer(status=500, sse=False), [Hook("h", seen)])
    assert seen == [("h", "done", "UpstreamBadResponse")]


async def test_no_backend_answering_is_raised_and_done_hears_it():
    class Refusing:
        async def send(self, *args):
            raise UpstreamUnavailable("refused")

    seen, pool = [], [Endpoint("http://a", healthy=True)]
    path = ResponsePath(Refusing(), TimeoutSettings(), Metrics(), UpstreamSettings(),
                        [Hook("h", seen)])  # fmt: skip
    with pytest.raises(UpstreamUnavailable):
        await path.relay(ctx(), pool, Reply(None), _never_disconnects, "POST", "/v1/x", [])
    assert seen == [("h", "done", "UpstreamUnavailable")] and pool[0].in_flight == 0
