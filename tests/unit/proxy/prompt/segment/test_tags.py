"""<ragtrim:doc> / <ragtrim:question> tags: found, and stripped by apply."""

from proxy.prompt.segment import apply_chat, apply_prompt
from tests.support.segmenting import segment_chat, segment_prompt

DOCS = (
    "Rust's ownership model guarantees memory safety without a garbage collector.",
    "Borrowing lets code use a value without taking ownership; the borrow checker "
    "enforces that references never outlive their data.",
    "Lifetimes are annotations that tell the compiler how references relate.",
)
SHORT = ("Ownership: memory safety, no GC.", "Borrow checker: refs never outlive data.", "")
QUESTION = "How does Rust stay memory safe?"
SYSTEM = "Answer from the documents below.\n\n"


def tagged(docs) -> str:
    return "".join(f"<ragtrim:doc>{d}</ragtrim:doc>\n" for d in docs)


def plain(docs) -> str:
    return "".join(f"{d}\n" for d in docs)


def test_chat_with_question_tag():
    messages = [
        {"role": "system", "content": SYSTEM + tagged(DOCS)},
        {"role": "user", "content": f"<ragtrim:question>{QUESTION}</ragtrim:question>"},
    ]
    seg = segment_chat(messages)
    assert seg.template == "tags"
    assert [d.text for d in seg.documents] == list(DOCS)
    assert seg.question == QUESTION
    assert seg.static_end == (0, len(SYSTEM))
    stripped = [
        {"role": "system", "content": SYSTEM + plain(DOCS)},
        {"role": "user", "content": QUESTION},
    ]
    assert apply_chat(messages, seg, DOCS) == stripped
    assert apply_chat(messages, seg, SHORT)[0]["content"] == SYSTEM + plain(SHORT)
    assert messages[0]["content"] == SYSTEM + tagged(DOCS)  # input untouched


def test_question_defaults_to_the_last_user_message_without_documents():
    content = f"Context:\n{tagged(DOCS)}\nQuestion: {QUESTION}"
    messages = [{"role": "user", "content": content}]
    seg = segment_chat(messages)
    assert [d.text for d in seg.documents] == list(DOCS)
    assert seg.question == f"Context:\n\n\n\n\nQuestion: {QUESTION}"
    assert seg.static_end == (0, len("Context:\n"))
    out = apply_chat(messages, seg, DOCS)
    assert out[0]["content"] == f"Context:\n{plain(DOCS)}\nQuestion: {QUESTION}"


def test_question_before_the_documents_ends_the_static_part():
    prompt = f"Q: <ragtrim:question>{QUESTION}</ragtrim:question>\n{tagged(DOCS)}"
    seg = segment_prompt(prompt)
    assert seg.static_end == (None, len("Q: "))
    assert apply_prompt(prompt, seg, DOCS) == f"Q: {QUESTION}\n{plain(DOCS)}"


def test_documents_across_messages_keep_order():
    messages = [
        {"role": "system", "content": tagged(DOCS[:1])},
        {"role": "user", "content": tagged(DOCS[1:]) + QUESTION},
    ]
    seg = segment_chat(messages)
    assert [(d.message, d.text) for d in seg.documents] == [
        (0, DOCS[0]),
        (1, DOCS[1]),
        (1, DOCS[2]),
    ]
    assert seg.question == QUESTION
    out = apply_chat(messages, seg, SHORT)
    assert out[1]["content"] == plain(SHORT[1:]) + QUESTION


def test_empty_tagged_document_is_a_slot_so_its_tags_go():
    prompt = "<ragtrim:doc></ragtrim:doc>x"
    seg = segment_prompt(prompt)
    assert [d.text for d in seg.documents] == [""]
    assert apply_prompt(prompt, seg, [""]) == "x"


def test_unclosed_tag_is_not_a_document():
    assert segment_prompt("<ragtrim:doc>never closed") is None


def test_question_markers_inside_a_document_belong_to_the_document():
    doc = "<ragtrim:question>quoted</ragtrim:question>"
    prompt = f"<ragtrim:doc>{doc}</ragtrim:doc>"
    seg = segment_prompt(prompt)
    assert apply_prompt(prompt, seg, [doc]) == doc


def test_tags_in_an_assistant_turn_are_not_context():
    """Issue 33: an assistant turn is the model's own text; a quote in it is not context."""
    quoted = {"role": "assistant", "content": "You sent <ragtrim:doc>old</ragtrim:doc>."}
    messages = [quoted, {"role": "user", "content": "<ragtrim:doc>new</ragtrim:doc> Why?"}]
    seg = segment_chat(messages)
    assert [(d.message, d.text) for d in seg.documents] == [(1, "new")]
    assert apply_chat(messages, seg, ["n"]) == [quoted, {"role": "user", "content": "n Why?"}]
    assert segment_chat([quoted, {"role": "user", "content": "Why?"}]) is None
