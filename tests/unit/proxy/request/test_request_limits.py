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


# issue 44: an object's keys, and the lists of /v1/messages and /v1/responses

KEYS = RequestLimitSettings(max_json_values=5_000, max_json_containers=1_000, max_messages=8,
                            max_content_parts=6, max_tools=3, max_object_keys=100)  # fmt: skip


def test_an_objects_keys_count_as_values_before_parsing():
    """2,600 keys: 2,600 commas alone, under the cap; with their keys, over it."""
    body = raw(logit_bias={str(i): -100 for i in range(2_600)})
    with pytest.raises(PayloadTooLarge) as refused:
        parse_body(body, "chat", LIMITS)
    assert "max_json_values" in refused.value.message


def test_keys_are_counted_whatever_the_spacing_before_their_colon_and_prose_is_no_key():
    spaced = b'{"model": "m", "messages": [], "x": {' + b", ".join(
        b'"k%d" \t\n :1' % i for i in range(2_600)) + b"}}"  # fmt: skip
    with pytest.raises(PayloadTooLarge):
        parse_body(spaced, "chat", LIMITS)
    prose = "Rule: answer briefly. " * 4_000  # 4,000 colons, no key among them
    body = parse_body(raw(messages=[{"role": "system", "content": prose}, USER]), "chat", KEYS)
    assert body["messages"][0]["content"] == prose


@pytest.mark.parametrize(("body", "param"), [
    ({"logit_bias": {str(i): 1 for i in range(101)}}, "logit_bias"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {f"p{i}": {} for i in range(101)}}}}]},
     "tools.0.function.parameters.properties"),
])  # fmt: skip
def test_an_object_with_too_many_keys_is_a_400_naming_it(body, param):
    with pytest.raises(InvalidRequest) as refused:
        parse_body(raw(**body), "chat", KEYS)
    assert refused.value.status == 400 and refused.value.param == param
    assert refused.value.code == "object_above_max_keys"
    at_cap = {"logit_bias": {str(i): 1 for i in range(100)}, "messages": [USER] * 8}
    assert len(parse_body(raw(**at_cap), "chat", KEYS)["logit_bias"]) == 100  # walked: 119 keys


def test_the_default_key_cap_refuses_the_probes_290k_key_object_before_parsing():
    """The probe's body (issue 44): one 290k-key object held the parse 70-150 ms."""
    body = raw(x={f"k{i:07d}": i for i in range(290_000)})
    with pytest.raises(PayloadTooLarge):
        parse_body(body, "chat", RequestLimitSettings())
    assert RequestLimitSettings().max_object_keys == 10_000


TEXT = {"type": "text", "text": "x"}


@pytest.mark.parametrize(("body", "param"), [
    ({"messages": [USER] * 9}, "messages"),
    ({"system": [TEXT] * 7, "messages": [USER]}, "system"),
    ({"system": [TEXT] * 3, "messages": [{"role": "user", "content": [TEXT] * 4}]},
     "messages.0.content"),
    ({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": [TEXT] * 6}]}]},
     "messages.0.content.0.content"),
])  # fmt: skip
def test_messages_api_lists_count_toward_chats_caps(body, param):
    with pytest.raises(InvalidRequest) as refused:
        parse_body(raw(max_tokens=4, **body), "messages", LIMITS)
    assert refused.value.param == param and refused.value.code == "array_above_max_length"
    at_caps = {"system": [TEXT] * 2, "messages": [{"role": "user", "content": [TEXT] * 4}]}
    assert parse_body(raw(**at_caps), "messages", LIMITS)["system"] == [TEXT] * 2


@pytest.mark.parametrize(("body", "param"), [
    ({"input": [USER] * 9}, "input"),
    ({"input": [{"role": "user", "content": [{"type": "input_text", "text": "x"}] * 4}] * 2},
     "input.1.content"),
    ({"input": [{"type": "function_call_output", "call_id": "c",
                 "output": [{"type": "input_text", "text": "x"}] * 7}]}, "input.0.output"),
])  # fmt: skip
def test_responses_api_lists_count_toward_chats_caps(body, param):
    with pytest.raises(InvalidRequest) as refused:
        parse_body(json.dumps({"model": "m", **body}).encode(), "responses", LIMITS)
    assert refused.value.param == param and refused.value.code == "array_above_max_length"
    items = [{"role": "user", "content": [{"type": "input_text", "text": "x"}] * 3}] * 2
    at_caps = json.dumps({"model": "m", "input": items}).encode()
    assert len(parse_body(at_caps, "responses", LIMITS)["input"]) == 2


@pytest.mark.parametrize("route", ["chat", "messages", "responses"])
def test_tools_past_openais_128_are_accepted_as_vllm_accepts_them(route):
    """vLLM has no tool cap; ragtrim's is as large as its other list caps (issue 44)."""
    tools = [{"type": "function", "function": {"name": f"f{i}"}} for i in range(200)]
    body = {"model": "m", "tools": tools, "messages": [USER], "input": "hi"}
    limits = RequestLimitSettings()
    assert len(parse_body(json.dumps(body).encode(), route, limits)["tools"]) == 200
    assert limits.max_tools == limits.max_messages == limits.max_content_parts
