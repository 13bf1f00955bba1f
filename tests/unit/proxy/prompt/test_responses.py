"""The Responses API body as a prompt (issue 31): context in `instructions` or in `input`
items is found as on chat and rewritten in its own place; the rest stays byte for byte."""

import copy

from proxy.prompt.body import prompt_for
from proxy.prompt.cache_text import cache_text
from proxy.prompt.prefix import CanonicalRules
from proxy.prompt.responses import ResponsesPrompt
from tests.support.rag_requests import LLAMA_USER, QUESTION
from tests.support.rag_requests import SYSTEM as STUFF_SYSTEM
from tests.support.segmenting import DEFAULT

IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}


def test_instructions_are_the_system_message_and_a_string_input_the_user_turn():
    prompt = ResponsesPrompt({"model": "m", "instructions": STUFF_SYSTEM + "d1\n\nd2",
                              "input": QUESTION})  # fmt: skip
    seg = prompt.segment(DEFAULT, None)
    assert seg.template == "langchain_stuff" and seg.texts == ["d1", "d2"]
    assert seg.question == QUESTION and seg.static_end == (0, len(STUFF_SYSTEM))
    prompt.apply(seg, ["c1", "c2"])
    assert prompt.body["instructions"] == STUFF_SYSTEM + "c1\n\nc2"
    assert prompt.body["input"] == QUESTION and prompt.modified


def test_context_in_input_items_is_found_and_written_back_in_its_part():
    items = [
        {"role": "system", "content": STUFF_SYSTEM + "d1\n\nd2"},
        {
            "type": "message",
            "role": "user",
            "content": [IMAGE, {"type": "input_text", "text": QUESTION}],
        },  # fmt: skip
    ]
    client = {"model": "m", "input": items}
    original = copy.deepcopy(client)
    prompt = ResponsesPrompt(client)
    seg = prompt.segment(DEFAULT, None)
    assert seg.texts == ["d1", "d2"] and seg.question == QUESTION
    prompt.apply(seg, ["c1", ""])
    assert prompt.body["input"][0] == {"role": "system", "content": STUFF_SYSTEM + "c1\n\n"}
    assert prompt.body["input"][1] is items[1]  # an unchanged item is shared, not copied
    assert items == original["input"]  # the client's list and items never changed


def test_a_framework_template_in_an_input_text_part():
    part = {"type": "input_text", "text": LLAMA_USER}
    prompt = ResponsesPrompt({"instructions": "Be brief.",
                              "input": [{"role": "user", "content": [IMAGE, part]}]})  # fmt: skip
    seg = prompt.segment(DEFAULT, None)
    assert seg.template == "llamaindex_text_qa" and seg.texts == ["d1", "d2"]
    prompt.apply(seg, ["x1", "x2"])
    content = prompt.body["input"][0]["content"]
    assert content[0] is IMAGE and content[1]["text"] == LLAMA_USER.replace("d1", "x1").replace(
        "d2", "x2"
    )
    assert prompt.body["instructions"] == "Be brief."


def test_tags_in_a_tool_output_and_items_without_text_keep_their_place():
    items = [
        {"type": "function_call", "call_id": "c", "name": "search", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "c",
            "output": "<ragtrim:doc>Paris is in France.</ragtrim:doc>",
        },  # fmt: skip
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
        },  # fmt: skip
        {"role": "user", "content": QUESTION},
    ]
    prompt = ResponsesPrompt({"input": items})
    messages, where = prompt.view()
    assert [m["role"] for m in messages] == ["item", "tool", "user", "user"]
    assert where == [None, ("input", 1, "output"), None, ("input", 3, "content")]
    seg = prompt.segment(DEFAULT, None)
    assert seg.template == "tags" and seg.question == QUESTION
    prompt.apply(seg, ["Paris: France."])
    assert prompt.body["input"][1]["output"] == "Paris: France."
    assert prompt.body["input"][0] is items[0] and prompt.body["input"][2] is items[2]


def test_unchanged_texts_and_unrecognised_bodies_leave_the_client_bytes():
    prompt = ResponsesPrompt({"instructions": STUFF_SYSTEM + "d1", "input": QUESTION})
    seg = prompt.segment(DEFAULT, None)
    prompt.apply(seg, seg.texts)
    assert not prompt.modified and prompt.encode(b"raw") == b"raw"
    assert ResponsesPrompt({"input": "hello"}).segment(DEFAULT, None) is None
    assert ResponsesPrompt({"previous_response_id": "resp_1"}).segment(DEFAULT, None) is None


def test_canonical_instructions_key_and_replay():
    prompt = ResponsesPrompt({"model": "m", "instructions": "Answer well.  \r\n",
                              "input": QUESTION, "cache_salt": "s"})  # fmt: skip
    result = prompt.canonicalize(CanonicalRules(), None)
    assert result.changed and prompt.body["instructions"] == "Answer well.\n"
    assert result.static_prefix == '[["system","Answer well.\\n"]]'
    replay = prompt.replay(result.static_end)
    assert replay == {"max_tokens": 1, "temperature": 0, "model": "m", "cache_salt": "s",
                      "messages": [{"role": "system", "content": "Answer well.\n"}]}  # fmt: skip
    assert ResponsesPrompt({"input": QUESTION}).replay(None) is None
    tools = [{"type": "function", "name": "f", "parameters": {}}]
    assert ResponsesPrompt({"instructions": "x", "input": "q", "tools": tools}).replay(None) is None


def test_usage_is_never_added_and_cache_text_has_nothing_for_it():
    prompt = ResponsesPrompt({"input": QUESTION, "stream": True})
    assert prompt.stream and prompt.request_usage() is False and not prompt.modified
    assert cache_text(prompt) is None


def test_the_route_gives_the_adapter():
    assert isinstance(prompt_for("responses", {"input": QUESTION}), ResponsesPrompt)
