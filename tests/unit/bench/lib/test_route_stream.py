"""bench/lib/route_stream.py: TTFT at the first event carrying output text, the text,
and usage in chat's names, from Responses and Messages streams shaped as vLLM's."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from bench.lib.route_stream import read_events, stream_route

DELAY = 0.05


def sse(kind: str, data: dict) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


RESPONSES = [
    sse("response.created", {"response": {"status": "in_progress"}}),
    sse("response.output_text.delta", {"delta": ""}),
    None,  # a pause: the text comes later than the first events
    sse("response.output_text.delta", {"delta": "Par"}),
    sse("response.output_text.delta", {"delta": "is"}),
    sse("response.completed", {"response": {"usage": {
        "input_tokens": 42, "output_tokens": 2, "total_tokens": 44,
        "input_tokens_details": {"cached_tokens": 32}}}}),
]  # fmt: skip
MESSAGES = [
    sse("message_start", {"message": {"usage": {"input_tokens": 0, "output_tokens": 0}}}),
    sse("content_block_start", {"index": 0, "content_block": {"type": "thinking"}}),
    sse("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "h"}}),
    None,
    sse("content_block_delta", {"index": 1, "delta": {"type": "text_delta", "text": "Par"}}),
    sse("content_block_delta", {"index": 1, "delta": {"type": "text_delta", "text": "is"}}),
    sse("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {
        "input_tokens": 10, "cache_read_input_tokens": 32, "output_tokens": 2}}),
    sse("message_stop", {}),
]  # fmt: skip


def backend(events: list[bytes | None], status: int = 200) -> httpx.Client:
    """A client whose every POST streams `events` (None: a pause of DELAY s)."""

    def stream():
        for event in events:
            if event is None:
                time.sleep(DELAY)
            else:
                yield event

    def answer(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(status, content=stream(), headers={"x-ragtrim-decision": "d"})

    return httpx.Client(transport=httpx.MockTransport(answer))


@pytest.mark.parametrize(("route", "events"), [("responses", RESPONSES), ("messages", MESSAGES)])
def test_ttft_is_the_first_text_and_usage_is_chats(route, events):
    timing = stream_route(backend(events), "http://v", route, {"model": "m"})
    assert timing.text == "Paris"
    assert timing.ttft_ms >= DELAY * 1000  # not the first event, nor the empty delta
    assert timing.usage["prompt_tokens"] == 42
    assert timing.usage["prompt_tokens_details"] == {"cached_tokens": 32}
    assert timing.headers["x-ragtrim-decision"] == "d"


@pytest.mark.parametrize(("route", "events"), [("responses", RESPONSES), ("messages", MESSAGES)])
def test_the_other_routes_events_carry_nothing(route, events):
    other = "messages" if route == "responses" else "responses"
    lines = b"".join(e for e in events if e).decode().splitlines()
    assert read_events(other, lines) == (None, "", {})


def test_without_text_ttft_is_the_whole_answer():
    timing = stream_route(backend([None, MESSAGES[-2]]), "http://v", "messages", {})
    assert timing.text == "" and timing.ttft_ms == timing.total_ms


def test_an_error_answer_raises():
    with pytest.raises(RuntimeError, match="responses 400"):
        stream_route(backend([b'{"error": {}}'], 400), "http://v", "responses", {})
