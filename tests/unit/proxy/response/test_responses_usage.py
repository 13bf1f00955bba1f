"""Usage from the Responses API (issue 31): read from `response.completed` (streamed) or
the JSON body, renamed to chat's names; the stream is relayed byte for byte."""

import json

import pytest

from proxy.context import RequestContext
from proxy.http.route_table import match
from proxy.metrics import Metrics
from proxy.response.events import EventStream
from proxy.response.hooks import OwnerHook, UsageHook
from proxy.response.ids import ResponseIds
from proxy.response.usage_tap import ResponsesUsage, responses_usage
from tests.support.exchanges import URL, exchange
from tests.support.tapped import Tapped

USAGE = {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 64},
         "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0},
         "total_tokens": 127}  # fmt: skip
CHAT = {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127,
        "prompt_tokens_details": {"cached_tokens": 64}}  # fmt: skip


def event(kind: str, data: dict) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


STREAM = b"".join([
    event("response.created", {"response": {"id": "resp_1", "status": "in_progress"}}),
    event("response.output_text.delta", {"delta": 'say "usage": 3'}),
    event("response.completed", {"response": {"id": "resp_1", "usage": USAGE}}),
])  # fmt: skip


def ctx(stream=True) -> RequestContext:
    body = {"model": "m", "input": "hi", "stream": stream}
    return RequestContext("req-1", "responses", b"{}", body, {}, route_match=match("/v1/responses"))


def test_responses_usage_in_chats_names():
    assert responses_usage(USAGE) == CHAT
    assert responses_usage({"input_tokens": 3}) == {"prompt_tokens": 3, "completion_tokens": None,
                                                    "total_tokens": None}  # fmt: skip
    assert responses_usage({"input_tokens": "lots"}) is None
    assert responses_usage({"input_tokens_details": [1]}) is None
    assert responses_usage(None) is None


@pytest.mark.parametrize("size", [1, 7, 64, len(STREAM)])
def test_the_tap_reads_usage_and_changes_no_byte_whatever_the_chunking(size):
    tap = Tapped(ResponsesUsage())
    out = b"".join(tap(STREAM[i : i + size]) for i in range(0, len(STREAM), size)) + tap.flush()
    assert out == STREAM
    assert tap.usage == CHAT and tap.bad == 0


def test_an_incomplete_response_has_usage_and_bad_usage_is_counted():
    tap = Tapped(ResponsesUsage())
    tap(event("response.incomplete", {"response": {"usage": {**USAGE, "output_tokens": -1}}}))
    assert tap.usage is None and tap.bad == 1


def test_an_event_too_long_to_hold_is_relayed_unread():
    tap = Tapped(ResponsesUsage(), 64)
    big = event("response.completed", {"response": {"output": "x" * 500, "usage": USAGE}})
    out = b"".join(tap(big[i : i + 50]) for i in range(0, len(big), 50))
    assert out == big and tap.usage is None


def test_the_usage_hook_reads_a_responses_stream_and_a_json_body():
    hook = UsageHook(Metrics(), False)
    ex = exchange()
    found = hook.stream(ctx(), ex)
    assert isinstance(found, ResponsesUsage)
    ex.tap = EventStream([found])
    assert ex.tap(STREAM) == STREAM
    hook.done(ctx(), ex, None)
    assert ex.usage == CHAT
    ex = exchange()
    body = json.dumps({"id": "resp_2", "output": [], "usage": USAGE}).encode()
    assert hook.body(ctx(stream=False), ex, [body]) == [(b"x-ragtrim-cached-tokens", b"64")]
    assert ex.usage == CHAT


class Owners:
    enforced = True

    def __init__(self):
        self.recorded = []

    def record(self, tenant: str, rid: str) -> None:
        self.recorded.append((tenant, rid))


def test_the_owner_and_usage_hooks_read_one_parse_of_the_stream_neither_wrapping():
    owners, c, ex = Owners(), ctx(), exchange()
    c.tenant = "t1"
    usage = UsageHook(Metrics(), False).stream(c, ex)
    ids = OwnerHook(owners).stream(c, ex)
    assert isinstance(usage, ResponsesUsage) and isinstance(ids, ResponseIds)
    ex.tap = EventStream([usage, ids])
    assert b"".join(ex.tap(STREAM[i : i + 9]) for i in range(0, len(STREAM), 9)) == STREAM
    assert owners.recorded == [("t1", "resp_1")] and usage.usage == CHAT
    assert ex.url == URL
