"""LlamaIndex tree_summarize and refine templates, Haystack's RAG tutorial prompt:
edge cases beyond the rendering checked in test_template_drift.py."""

from proxy.prompt.segment import apply_chat, apply_prompt
from proxy.prompt.segment.frameworks import framework_text
from tests.support.segmenting import segment_chat, segment_prompt

JINJA_TEMPLATE = framework_text("haystack_rag_tutorial", "user")
CHAT_TEMPLATE = framework_text("llamaindex_refine", "user")
PROMPT_TEMPLATE = framework_text("llamaindex_refine", "prompt")
SYSTEM_TEXT = framework_text("llamaindex_text_qa", "preamble")
USER_TEMPLATE = framework_text("llamaindex_tree_summarize", "user")

DOCS = ("Ada wrote the first published program. Query: quoted in a document.", "Babbage.")
QUESTION = "Who wrote the first program?"


def test_tree_summarize_skips_node_metadata_and_keeps_other_bytes():
    context = f"file_path: a.md\n\n{DOCS[0]}\n\nfile_path: b.md\n\n{DOCS[1]}"
    user = USER_TEMPLATE.format(context_str=context, query_str=QUESTION)
    messages = [{"role": "system", "content": SYSTEM_TEXT}, {"role": "user", "content": user}]
    seg = segment_chat(messages)
    assert seg.template == "llamaindex_tree_summarize"
    assert [s.text for s in seg.documents] == list(DOCS)
    assert seg.question == QUESTION
    out = apply_chat(messages, seg, ["A.", "B."])
    assert out[1]["content"] == user.replace(DOCS[0], "A.").replace(DOCS[1], "B.")
    completion = f"system: {SYSTEM_TEXT}\nuser: {user}"  # a completion model's role markers
    assert segment_prompt(completion).template == "llamaindex_tree_summarize"


def test_refine_chat_document_may_quote_the_template():
    text = CHAT_TEMPLATE.format(context_msg=DOCS[0], query_str=QUESTION, existing_answer="Ada")
    seg = segment_chat([{"role": "user", "content": text}])
    assert seg.template == "llamaindex_refine"
    assert [s.text for s in seg.documents] == [DOCS[0]]  # holds "Query:", still whole
    assert seg.question == QUESTION
    # the context ends at the last "Query:": an earlier answer quoting it cannot be
    # told apart, so the prompt passes through untouched rather than mis-split
    quoting = CHAT_TEMPLATE.format(
        context_msg=DOCS[1], query_str=QUESTION, existing_answer="Query: unclear"
    )
    assert segment_chat([{"role": "user", "content": quoting}]) is None


def test_refine_completion_question_first():
    text = PROMPT_TEMPLATE.format(context_msg=DOCS[1], query_str=QUESTION, existing_answer="Ada")
    seg = segment_prompt(text)
    assert seg.template == "llamaindex_refine"
    assert [s.text for s in seg.documents] == [DOCS[1]]
    assert seg.question == QUESTION
    assert seg.static_end == (None, text.index(QUESTION))
    assert apply_prompt(text, seg, ["B."]) == text.replace(DOCS[1], "B.")


def render_tutorial(docs) -> str:
    """What Jinja2 makes of the tutorial template (no trim_blocks, as in Haystack)."""
    loop = "".join(f"\n    {d}\n" for d in docs)
    head, rest = JINJA_TEMPLATE.split("{% for document in documents %}")
    tail = rest.split("{% endfor %}")[1]
    return head + loop + tail.replace("{{question}}", QUESTION)


def test_haystack_tutorial_as_completion_prompt():
    text = render_tutorial(DOCS)
    seg = segment_prompt(text)
    assert seg.template == "haystack_rag_tutorial"
    assert [s.text for s in seg.documents] == list(DOCS)
    assert seg.question == QUESTION
    assert segment_prompt(text.replace("Context:", "Contexts:")) is None
