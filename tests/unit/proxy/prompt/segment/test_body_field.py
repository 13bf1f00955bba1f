"""The optional `ragtrim` request body field."""

from proxy.prompt.segment import apply_chat, apply_prompt
from tests.support.segmenting import segment_chat, segment_prompt

DOCS = (
    "Kafka stores streams of records in topics, split into partitions.",
    "Each partition is an ordered, immutable log; consumers track their offset.",
    "Replication copies every partition to several brokers for fault tolerance.",
)
QUESTION = "How does Kafka tolerate broker failures?"
SYSTEM = "You answer questions about the documents.\n\nDocuments:\n"


def chat(docs=DOCS):
    return [
        {"role": "system", "content": SYSTEM + "\n---\n".join(docs)},
        {"role": "user", "content": QUESTION},
    ]


def test_documents_located_verbatim_in_order():
    messages = chat()
    seg = segment_chat(messages, body_field={"documents": list(DOCS), "question": QUESTION})
    assert seg.template == "body_field"
    assert [d.text for d in seg.documents] == list(DOCS)
    assert seg.question == QUESTION
    assert seg.static_end == (0, len(SYSTEM))
    assert apply_chat(messages, seg, DOCS) == messages
    assert apply_chat(messages, seg, ["a", "b", "c"]) == chat(("a", "b", "c"))


def test_missing_documents_are_ignored_and_question_defaults():
    body = {"documents": [DOCS[0], "not in the prompt", DOCS[2], 7, ""]}
    seg = segment_chat(chat(), body_field=body)
    assert [d.text for d in seg.documents] == [DOCS[0], DOCS[2]]
    assert seg.question == QUESTION


def test_repeated_text_takes_the_next_occurrence():
    prompt = "A. A. B."
    seg = segment_prompt(prompt, body_field={"documents": ["A.", "A.", "B."], "question": "q"})
    assert [(d.start, d.end) for d in seg.documents] == [(0, 2), (3, 5), (6, 8)]
    assert apply_prompt(prompt, seg, ["x", "y", "z"]) == "x y z"


def test_documents_are_searched_in_later_messages():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": f"{DOCS[0]}\n\n{DOCS[1]}\n\n{QUESTION}"},
    ]
    seg = segment_chat(messages, body_field={"documents": list(DOCS[:2])})
    assert [(d.message, d.text) for d in seg.documents] == [(1, DOCS[0]), (1, DOCS[1])]
    assert seg.question == QUESTION


def test_nothing_found_falls_through_to_the_next_recogniser():
    assert segment_chat(chat(), body_field={"documents": ["absent"]}) is None
    assert segment_chat(chat(), body_field={"documents": "not a list"}) is None
    tagged = [{"role": "user", "content": "<ragtrim:doc>d</ragtrim:doc>"}]
    assert segment_chat(tagged, body_field={"documents": ["absent"]}).template == "tags"


def test_body_field_wins_over_tags():
    messages = [{"role": "user", "content": "<ragtrim:doc>d</ragtrim:doc>"}]
    seg = segment_chat(messages, body_field={"documents": ["d"], "question": "q"})
    assert seg.template == "body_field"


# -- issue 33: only the context is rewritten ----------------------------------------------


def test_a_system_prompt_or_an_assistant_turn_quoting_a_document_is_left_alone():
    """The first occurrence was taken: the system prompt's instruction (47 -> 14 tokens)
    or an earlier assistant turn that quoted the document was rewritten instead."""
    context = "\n\n".join(DOCS)
    messages = [
        {"role": "system", "content": f"Answer from documents like: {DOCS[0]} Be brief."},
        {"role": "user", "content": "Summarise the documents."},
        {"role": "assistant", "content": f"They say {DOCS[1]} and {DOCS[2]}"},
        {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {QUESTION}"},
    ]
    seg = segment_chat(messages, body_field={"documents": list(DOCS)})
    assert [d.message for d in seg.documents] == [3, 3, 3]
    assert seg.question.split() == ["Context:", "Question:", *QUESTION.split()]
    out = apply_chat(messages, seg, ["a", "b", "c"])
    assert out[:3] == messages[:3]
    assert out[3]["content"] == f"Context:\na\n\nb\n\nc\n\nQuestion: {QUESTION}"


def test_a_document_only_in_the_system_prompt_is_found_there_but_never_in_a_reply():
    messages = [
        {"role": "system", "content": f"Context: {DOCS[0]}"},
        {"role": "assistant", "content": DOCS[1]},
        {"role": "user", "content": QUESTION},
    ]
    seg = segment_chat(messages, body_field={"documents": list(DOCS[:2])})
    assert [(d.message, d.text) for d in seg.documents] == [(0, DOCS[0])]
    prompt = f"Example: {DOCS[0]}\nContext: {DOCS[0]}\n{DOCS[1]}\nQ: {QUESTION}"
    seg = segment_prompt(prompt, body_field={"documents": list(DOCS[:2])})
    assert [d.start for d in seg.documents] == [
        prompt.index("Context: ") + 9,
        prompt.index(DOCS[1]),
    ]
