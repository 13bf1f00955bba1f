"""The request-shape caps of proxy/request/parse.py (issue 33): refused before parsing when
the raw bytes bound too many JSON values, then per field, each error naming it."""

import json
import threading

import pytest

from proxy.errors import InvalidRequest, PayloadTooLarge
from proxy.prompt.exact_json import BigInt, dumps
from proxy.request.parse import RequestParser, parse_body
from proxy.settings import RequestLimitSettings

LIMITS = RequestLimitSettings(max_json_values=5_000, max_json_containers=1_000, max_messages=8,
                              max_content_parts=6, max_tools=3, max_tool_calls=4)  # fmt: skip
USER = {"role": "user", "content": "hi"}


def raw(**body) -> bytes:
    return json.dumps({"model": "m", "messages": [USER], **body}).encode()


@pytest.mark.parametrize(("body", "param"), [
    ({"messages": [USER] * 9}, "messages"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}] * 4}] * 2},
     "messages.1.content"),
    ({"tools": [{"type": "function"}] * 4}, "tools"),
    ({"functions": [{"name": "f"}] * 4}, "functions"),
    ({"messages": [USER, {"role": "assistant", "tool_calls": [{}] * 5}]}, "messages.1.tool_calls"),
])  # fmt: skip
def test_each_count_cap_is_a_400_naming_its_field(body, param):
    with pytest.raises(InvalidRequest) as refused:
        parse_body(raw(**body), "chat", LIMITS)
    assert refused.value.param == param and refused.value.code == "array_above_max_length"
    assert refused.value.status == 400 and "array too long" in refused.value.message


@pytest.mark.parametrize(("body", "what"), [
    ({"x": [1] * 5_000}, "max_json_values"),
    ({"x": [[]] * 1_001}, "max_json_containers"),
])  # fmt: skip
def test_too_many_values_is_a_413_before_parsing(body, what):
    with pytest.raises(PayloadTooLarge) as refused:
        parse_body(raw(**body), "chat", LIMITS)
    assert refused.value.code == "request_too_complex" and what in refused.value.message


def test_at_the_caps_a_body_is_accepted():
    body = {"messages": [USER] * 8, "tools": [{"type": "function"}] * 3, "x": [1] * 4_900}
    assert len(parse_body(raw(**body), "chat", LIMITS)["messages"]) == 8


async def test_a_big_body_is_parsed_in_a_worker_thread(monkeypatch):
    seen = []

    def parse_json(*args):
        seen.append(threading.current_thread())
        return {"model": "m", "prompt": ""}

    monkeypatch.setattr("proxy.request.parse.parse_json", parse_json)
    parser = RequestParser(RequestLimitSettings(), offload_bytes=100)
    await parser.parse(b"x" * 50, "completions")
    await parser.parse(b"x" * 500, "completions")
    assert seen[0] is threading.main_thread() and seen[1] is not threading.main_thread()


def test_big_integers_stay_exact_and_are_written_by_orjson():
    body = parse_body(raw(seed=10**20, n=2), "chat")
    assert type(body["seed"]) is BigInt and type(body["n"]) is int
    assert json.loads(dumps(body))["seed"] == 10**20
