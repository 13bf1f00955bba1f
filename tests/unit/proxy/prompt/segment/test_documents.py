"""vLLM's `documents` field on chat is the context (issue 31): its entries' texts are
documents, compressed in place; nothing else of the body changes."""

import copy

import pytest

from proxy.prompt.body import prompt_for
from proxy.prompt.cache_text import cache_text
from proxy.prompt.segment import Segmentation, apply_chat, apply_documents, with_documents
from proxy.prompt.segment.documents import field_slots
from proxy.prompt.segment.model import DOCUMENTS
from tests.support.rag_requests import SYSTEM as STUFF_SYSTEM
from tests.support.segmenting import DEFAULT

QUESTION = "What is the capital of France?"
FIELD = [
    {"title": "Paris", "text": "Paris is the capital of France."},
    {"title": "Seine", "content": "The Seine flows through Paris."},
]


def body(documents, messages=None) -> dict:
    messages = messages or [{"role": "user", "content": QUESTION}]
    return {"model": "m", "messages": messages, "documents": documents}


def test_each_entry_with_a_text_is_a_document_and_the_question_is_the_last_user_turn():
    seg = prompt_for("chat", body(FIELD)).segment(DEFAULT, None)
    assert seg is not None and seg.template == "documents"
    assert seg.texts == ["Paris is the capital of France.", "The Seine flows through Paris."]
    assert {slot.source for slot in seg.documents} == {DOCUMENTS}
    assert seg.question == QUESTION and seg.static_end is None


@pytest.mark.parametrize("documents", [None, [], "text", [{"title": "no text"}],
                                       [{"text": ""}], [{"text": 3}], ["a string"]])  # fmt: skip
def test_a_field_without_texts_is_nothing_to_segment(documents):
    assert prompt_for("chat", body(documents)).segment(DEFAULT, None) is None


def test_entries_without_text_keep_their_place_and_are_not_documents():
    documents = [{"title": "t"}, {"text": "kept"}, "odd", {"content": "second"}]
    assert [(s.message, s.text) for s in field_slots(documents)] == [(1, "kept"), (3, "second")]


def test_apply_rewrites_only_the_texts_and_never_the_client_list():
    client = body(FIELD)
    original = copy.deepcopy(client)
    prompt = prompt_for("chat", client)
    seg = prompt.segment(DEFAULT, None)
    prompt.apply(seg, ["Paris: capital.", "Seine: Paris."])
    assert prompt.modified
    assert prompt.body["documents"] == [
        {"title": "Paris", "text": "Paris: capital."},
        {"title": "Seine", "content": "Seine: Paris."},
    ]
    assert prompt.body["messages"] == original["messages"]
    assert original["documents"] == FIELD  # the entries were copied, not changed


def test_unchanged_texts_leave_the_body_unmodified():
    prompt = prompt_for("chat", body(FIELD))
    seg = prompt.segment(DEFAULT, None)
    prompt.apply(seg, seg.texts)
    assert not prompt.modified
    assert prompt.encode(b"raw") == b"raw"


def test_the_field_joins_a_template_found_in_the_messages():
    messages = [{"role": "system", "content": STUFF_SYSTEM + "d1\n\nd2"},
                {"role": "user", "content": QUESTION}]  # fmt: skip
    prompt = prompt_for("chat", body(FIELD, messages))
    seg = prompt.segment(DEFAULT, None)
    assert seg.template == "langchain_stuff+documents"
    assert seg.texts == [d.get("text") or d.get("content") for d in FIELD] + ["d1", "d2"]
    assert seg.static_end == (0, len(STUFF_SYSTEM))  # the messages' own
    prompt.apply(seg, ["A", "B", "c1", "c2"])
    assert prompt.body["messages"][0]["content"] == STUFF_SYSTEM + "c1\n\nc2"
    assert [d.get("text") or d.get("content") for d in prompt.body["documents"]] == ["A", "B"]


def test_apply_chat_leaves_the_field_slots_alone_and_apply_documents_the_message_slots():
    messages = [{"role": "user", "content": QUESTION}]
    seg = with_documents(None, FIELD, messages)
    assert apply_chat(messages, seg, ["x", "y"]) == messages
    plain = Segmentation("t", (), "q")
    assert apply_documents(FIELD, plain, []) is None


def test_a_field_changed_since_segmentation_is_refused():
    seg = with_documents(None, FIELD, [{"role": "user", "content": QUESTION}])
    with pytest.raises(ValueError, match="not the one segmented"):
        apply_documents([{"text": "another"}, FIELD[1]], seg, ["x", "y"])


def test_a_chat_with_the_field_has_no_cache_text_and_one_without_keeps_its_own():
    with_field = prompt_for("chat", body(FIELD))
    assert cache_text(with_field) is None
    assert cache_text(prompt_for("chat", body([{"title": "no text"}]))) is not None
