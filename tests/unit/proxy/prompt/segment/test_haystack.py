"""Haystack RAG example prompt, rendered exactly as Jinja2 renders it."""

import pytest

from proxy.prompt.segment import apply_chat, apply_prompt
from tests.support.segmenting import segment_chat, segment_prompt

DOCS = (
    "Jean lives in Paris and works as a baker near the Canal Saint-Martin.",
    "Mark moved to Berlin in 2019; he teaches mathematics at a secondary school.",
    "Giorgio lives in Rome. He restores old bicycles in a small workshop in Trastevere.",
)
SHORT = ("Jean: Paris, baker.", "Mark: Berlin since 2019.", "Giorgio: Rome.")
QUESTION = "Who lives in Berlin?"

JINJA = (
    "Given these documents, answer the question.\n"
    "Documents:\n"
    "{% for doc in documents %}\n"
    "{{ doc.content }}\n"
    "{% endfor %}\n"
    "Question: {{query}}\n\n"
    "Answer:"
)
# the variant in Haystack's tutorials (indented loop body, extra blank lines)
TUTORIAL = (
    "\nGiven these documents, answer the question.\nDocuments:\n"
    "{% for doc in documents %}\n    {{ doc.content }}\n{% endfor %}\n\n"
    "\nQuestion: {{query}}\n\nAnswer:\n"
)
INSTRUCTION = "Given these documents, answer the question.\nDocuments:\n"


def render(docs=DOCS) -> str:
    """What jinja2.Template(JINJA).render(...) gives: each doc as "\\n{content}\\n"."""
    loop = "".join(f"\n{d}\n" for d in docs)
    return f"{INSTRUCTION}{loop}\nQuestion: {QUESTION}\n\nAnswer:"


def assert_documents(seg):
    assert seg is not None
    assert seg.template == "haystack_rag"
    assert [d.text for d in seg.documents] == list(DOCS)
    assert seg.question == QUESTION


def test_completion():
    prompt = render()
    seg = segment_prompt(prompt)
    assert_documents(seg)
    assert prompt[: seg.static_end[1]] == INSTRUCTION + "\n"
    assert seg.static_end[0] is None
    assert apply_prompt(prompt, seg, DOCS) == prompt
    assert apply_prompt(prompt, seg, SHORT) == render(SHORT)


def test_single_user_message():
    messages = [{"role": "user", "content": render()}]
    seg = segment_chat(messages)
    assert_documents(seg)
    assert seg.static_end == (0, len(INSTRUCTION) + 1)
    assert apply_chat(messages, seg, DOCS) == messages
    assert apply_chat(messages, seg, SHORT) == [{"role": "user", "content": render(SHORT)}]


@pytest.mark.parametrize("template", [JINJA, TUTORIAL], ids=["documented", "tutorial"])
def test_rendered_by_jinja2(template):
    jinja2 = pytest.importorskip("jinja2")
    docs = [{"content": d} for d in DOCS]
    prompt = jinja2.Template(template).render(documents=docs, query=QUESTION)
    if template is JINJA:
        assert prompt == render()
    seg = segment_prompt(prompt)
    assert_documents(seg)
    assert apply_prompt(prompt, seg, DOCS) == prompt
