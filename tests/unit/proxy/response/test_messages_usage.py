"""Usage from the Anthropic Messages API (issue 31): vLLM puts the whole usage on the last
`message_delta` event (and in the JSON body), input_tokens without the cached ones."""

import json

import pytest

from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.response.events import EventStream
from proxy.response.hooks import UsageHook
from proxy.response.usage_tap import MessagesUsage, messages_usage
from tests.support.exchanges import exchange
from tests.support.tapped import Tapped

USAGE = {"input_tokens": 56, "output_tokens": 7, "cache_read_input_tokens": 64}
CHAT = {
    "prompt_tokens": 120,
    "completion_tokens": 7,
    "prompt_tokens_details": {"cached_tokens": 64},
}


def event(kind: str, data: dict) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


STREAM = b"".join([
    event("message_start", {"message": {"id": "m1", "usage": {"input_tokens": 56,
                                                                "output_tokens": 0}}}),
    event("content_block_delta", {"index": 0, "delta": {"type": "text_delta",
                                                         "text": '"message_delta"'}}),
    event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": USAGE}),
    event("message_stop", {}),
])  # fmt: skip


def ctx(stream=True) -> RequestContext:
    body = {"model": "m", "max_tokens": 9, "messages": [], "stream": stream}
    return RequestContext("req-1", "messages", b"{}", body, {})


def test_messages_usage_in_chats_names():
    assert messages_usage(USAGE) == CHAT
    assert messages_usage({"input_tokens": 5, "output_tokens": 1}) == {
        "prompt_tokens": 5, "completion_tokens": 1}  # fmt: skip
    creation = {"input_tokens": 5, "output_tokens": 1, "cache_creation_input_tokens": 10}
    assert messages_usage(creation)["prompt_tokens"] == 15
    assert messages_usage({"input_tokens": -1}) is None
    assert messages_usage({"input_tokens": 1, "cache_read_input_tokens": "x"}) is None
    assert messages_usage([]) is None


@pytest.mark.parametrize("size", [1, 13, len(STREAM)])
def test_the_tap_reads_the_last_delta_and_changes_no_byte(size):
    tap = Tapped(MessagesUsage())
    out = b"".join(tap(STREAM[i : i + size]) for i in range(0, len(STREAM), size)) + tap.flush()
    assert out == STREAM and tap.usage == CHAT and tap.bad == 0


def test_the_usage_hook_on_a_messages_stream_and_json_body():
    hook = UsageHook(Metrics(), False)
    ex = exchange()
    found = hook.stream(ctx(), ex)
    assert isinstance(found, MessagesUsage)
    ex.tap = EventStream([found])
    assert ex.tap(STREAM) == STREAM
    hook.done(ctx(), ex, None)
    assert ex.usage == CHAT
    ex = exchange()
    body = json.dumps({"id": "m1", "type": "message", "content": [], "usage": USAGE}).encode()
    assert hook.body(ctx(False), ex, [body]) == [(b"x-ragtrim-cached-tokens", b"64")]
    assert ex.usage == CHAT
