"""The Anthropic Messages API body as a prompt (issue 31): `system` (a string or blocks)
is the static prefix, context in content blocks is found as on chat and rewritten in
its own block; the rest stays byte for byte."""

import copy

from proxy.prompt.anthropic import MessagesPrompt
from proxy.prompt.body import prompt_for
from proxy.prompt.cache_text import cache_text
from proxy.prompt.prefix import CanonicalRules
from tests.support.rag_requests import LLAMA_USER, QUESTION
from tests.support.rag_requests import SYSTEM as STUFF_SYSTEM
from tests.support.segmenting import DEFAULT

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}


def test_a_system_string_holds_the_context_and_the_user_turn_the_question():
    prompt = MessagesPrompt({"model": "m", "max_tokens": 9, "system": STUFF_SYSTEM + "d1\n\nd2",
                             "messages": [{"role": "user", "content": QUESTION}]})  # fmt: skip
    seg = prompt.segment(DEFAULT, None)
    assert seg.template == "langchain_stuff" and seg.texts == ["d1", "d2"]
    assert seg.question == QUESTION and seg.static_end == (0, len(STUFF_SYSTEM))
    prompt.apply(seg, ["c1", "c2"])
    assert prompt.body["system"] == STUFF_SYSTEM + "c1\n\nc2" and prompt.modified


def test_system_blocks_and_a_template_in_the_last_text_block():
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    user = {"role": "user", "content": [IMAGE, {"type": "text", "text": LLAMA_USER}]}
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, user]
    client = {"system": system, "messages": turns}
    original = copy.deepcopy(client)
    prompt = MessagesPrompt(client)
    messages, where = prompt.view()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "item", "user"]
    assert where[0] == ("system", 0, "text") and where[4] == ("messages", 2, "content", 1, "text")
    seg = prompt.segment(DEFAULT, None)
    assert seg.template == "llamaindex_text_qa" and seg.texts == ["d1", "d2"]
    prompt.apply(seg, ["x1", "x2"])
    block = prompt.body["messages"][2]["content"][1]
    assert block["text"] == LLAMA_USER.replace("d1", "x1").replace("d2", "x2")
    assert prompt.body["messages"][2]["content"][0] is IMAGE
    assert user == original["messages"][2] and system == original["system"]  # never changed
    assert prompt.body["messages"][:2] == original["messages"][:2]


def test_tags_in_a_tool_result():
    tagged = {"type": "text", "text": "<ragtrim:doc>Paris is in France.</ragtrim:doc>"}
    result = {"type": "tool_result", "tool_use_id": "t", "content": [tagged]}
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "s", "input": {}}],
        },
        {"role": "user", "content": [result, {"type": "text", "text": QUESTION}]},
    ]
    prompt = MessagesPrompt({"messages": messages})
    seg = prompt.segment(DEFAULT, None)
    assert seg.template == "tags" and seg.question == QUESTION
    prompt.apply(seg, ["Paris: France."])
    assert prompt.body["messages"][1]["content"][0]["content"][0]["text"] == "Paris: France."
    assert prompt.body["messages"][1]["content"][1]["text"] == QUESTION
    assert prompt.body["messages"][0] is messages[0]


def test_canonical_system_replay_and_no_usage_added():
    prompt = MessagesPrompt({"model": "m", "system": "Answer well.\r\n", "stream": True,
                             "messages": [{"role": "user", "content": QUESTION}]})  # fmt: skip
    assert prompt.request_usage() is False
    result = prompt.canonicalize(CanonicalRules(), None)
    assert result.changed and prompt.body["system"] == "Answer well.\n"
    replay = prompt.replay(result.static_end)
    assert replay["messages"] == [{"role": "system", "content": "Answer well.\n"}]
    assert cache_text(prompt) is None


def test_unrecognised_or_unchanged_leaves_the_client_bytes():
    prompt = MessagesPrompt({"messages": [{"role": "user", "content": QUESTION}]})
    assert prompt.segment(DEFAULT, None) is None
    prompt = MessagesPrompt({"system": STUFF_SYSTEM + "d1", "messages": "odd"})
    seg = prompt.segment(DEFAULT, None)
    prompt.apply(seg, seg.texts)
    assert not prompt.modified and prompt.encode(b"raw") == b"raw"


def test_the_route_gives_the_adapter():
    assert isinstance(prompt_for("messages", {"messages": []}), MessagesPrompt)


def test_the_replay_joins_system_blocks_as_vllm_does_and_only_for_system_text():
    texts = ("x-anthropic-billing-header: cc=1a2b", "You answer. ", "Briefly.")
    system = [{"type": "text", "text": t} for t in texts]
    prompt = MessagesPrompt({"model": "m", "system": system,
                             "messages": [{"role": "user", "content": QUESTION}]})  # fmt: skip
    assert prompt.replay(None)["messages"] == [{"role": "system",
                                                 "content": "You answer. Briefly."}]  # fmt: skip
    user_static = MessagesPrompt({"messages": [{"role": "user", "content": LLAMA_USER}]})
    seg = user_static.segment(DEFAULT, None)
    assert seg.static_end[0] == 0 and user_static.replay(seg.static_end) is None
