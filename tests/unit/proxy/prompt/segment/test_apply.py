"""Pass-through, message shapes and the apply_* contract."""

import copy

import pytest

from proxy.prompt.segment import Segmentation, Slot, apply_chat, apply_prompt
from tests.support.rag_requests import SYSTEM as STUFF_SYSTEM
from tests.support.segmenting import segment_chat, segment_prompt


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{"role": "user", "content": "What is the capital of France?"}],
        [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hi"}],
        [{"role": "user", "content": None, "tool_calls": []}],
        ["not a dict"],
    ],
)
def test_unrecognised_chat_is_none(messages):
    assert segment_chat(messages) is None


def test_unrecognised_prompt_is_none():
    assert segment_prompt("Once upon a time") is None
    assert segment_prompt("") is None


def test_list_content_with_one_text_part():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [
        {"role": "system", "content": [{"type": "text", "text": STUFF_SYSTEM + "d1\n\nd2"}]},
        {"role": "user", "content": [image, {"type": "text", "text": "q?"}]},
    ]
    before = copy.deepcopy(messages)
    seg = segment_chat(messages)
    assert seg.template == "langchain_stuff"
    assert [d.text for d in seg.documents] == ["d1", "d2"]
    assert seg.question == "q?"
    out = apply_chat(messages, seg, ["x", "y"])
    assert out[0]["content"] == [{"type": "text", "text": STUFF_SYSTEM + "x\n\ny"}]
    assert out[1] is messages[1]
    assert messages == before


def test_list_content_with_several_text_parts_is_skipped():
    parts = [{"type": "text", "text": STUFF_SYSTEM}, {"type": "text", "text": "d1"}]
    messages = [{"role": "system", "content": parts}, {"role": "user", "content": "q"}]
    assert segment_chat(messages) is None


def test_template_with_empty_context_is_recognised_with_no_documents():
    messages = [{"role": "system", "content": STUFF_SYSTEM}, {"role": "user", "content": "q"}]
    seg = segment_chat(messages)
    assert seg.documents == ()
    assert seg.static_end == (0, len(STUFF_SYSTEM))
    assert apply_chat(messages, seg, []) == messages


def test_wrong_number_of_texts_is_an_error():
    seg = Segmentation("t", (Slot(None, 0, 1, "a"),), "q")
    with pytest.raises(ValueError):
        apply_prompt("abc", seg, [])


def test_chat_segmentation_on_a_prompt_is_an_error():
    seg = Segmentation("t", (Slot(0, 0, 1, "a"),), "q")
    with pytest.raises(ValueError):
        apply_prompt("abc", seg, ["x"])
    with pytest.raises(ValueError):
        apply_chat(
            [{"role": "user", "content": "abc"}],
            Segmentation("t", (Slot(3, 0, 1, "a"),), "q"),
            ["x"],
        )
