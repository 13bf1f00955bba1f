"""LangChain default RAG templates, rendered from their exact texts."""

import pytest

from proxy.prompt.segment import apply_chat, apply_prompt
from tests.support.segmenting import segment_chat, segment_prompt

DOCS = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
    "It was designed by the company of Gustave Eiffel and built from 1887 to 1889.",
    "Standing 330 metres tall, the tower was the tallest man-made structure in the world "
    "until the Chrysler Building in New York was finished in 1930.",
    "The tower has three levels for visitors, with restaurants on the first and second "
    "levels. The upper platform of the top level is 276 m above the ground.",
)
SHORT = ("Eiffel Tower, Paris, built 1887-1889.", "330 m; tallest until 1930.", "Three levels.")
QUESTION = "When was the Eiffel Tower built?"

# hub: rlm/rag-prompt (one human message)
RAG_PROMPT = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved "
    "context to answer the question. If you don't know the answer, just say that you don't "
    "know. Use three sentences maximum and keep the answer concise.\n"
    "Question: {question} \nContext: {context} \nAnswer:"
)
# langchain/chains/question_answering/stuff_prompt.py
STUFF_SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n{context}"
)
STUFF_PROMPT = (
    "Use the following pieces of context to answer the question at the end. If you don't "
    "know the answer, just say that you don't know, don't try to make up an answer.\n\n"
    "{context}\n\nQuestion: {question}\nHelpful Answer:"
)
# hub: langchain-ai/retrieval-qa-chat
QA_CHAT_SYSTEM = (
    "Answer any use questions based solely on the context below:\n\n"
    "<context>\n{context}\n</context>"
)


def render(template: str, docs=DOCS, question=QUESTION) -> str:
    return template.format(context="\n\n".join(docs), question=question)


def stuff_chat(docs=DOCS, history=()):
    return [
        {"role": "system", "content": render(STUFF_SYSTEM, docs)},
        *history,
        {"role": "user", "content": QUESTION},
    ]


def qa_chat(docs=DOCS, history=()):
    return [
        {"role": "system", "content": render(QA_CHAT_SYSTEM, docs)},
        *history,
        {"role": "user", "content": QUESTION},
    ]


def assert_documents(seg, name):
    assert seg is not None
    assert seg.template == name
    assert [d.text for d in seg.documents] == list(DOCS)
    assert seg.question == QUESTION


def static_prefix(template: str) -> str:
    return template[: min(i for i in map(template.find, ("{context}", "{question}")) if i >= 0)]


def test_rag_prompt_completion():
    prompt = render(RAG_PROMPT)
    seg = segment_prompt(prompt)
    assert_documents(seg, "langchain_rag_prompt")
    assert prompt[: seg.static_end[1]] == static_prefix(RAG_PROMPT)
    assert seg.static_end[0] is None
    assert apply_prompt(prompt, seg, DOCS) == prompt
    assert apply_prompt(prompt, seg, SHORT) == render(RAG_PROMPT, SHORT)


def test_rag_prompt_chat():
    messages = [{"role": "user", "content": render(RAG_PROMPT)}]
    seg = segment_chat(messages)
    assert_documents(seg, "langchain_rag_prompt")
    assert seg.static_end == (0, len(static_prefix(RAG_PROMPT)))
    assert apply_chat(messages, seg, DOCS) == messages
    assert apply_chat(messages, seg, SHORT) == [
        {"role": "user", "content": render(RAG_PROMPT, SHORT)}
    ]


def test_rag_prompt_tolerates_dropped_trailing_spaces():
    prompt = render(RAG_PROMPT).replace(" \n", "\n") + "\n"
    seg = segment_prompt(prompt)
    assert_documents(seg, "langchain_rag_prompt")
    assert apply_prompt(prompt, seg, DOCS) == prompt


def test_stuff_chat():
    messages = stuff_chat()
    seg = segment_chat(messages)
    assert_documents(seg, "langchain_stuff")
    assert seg.static_end == (0, len(static_prefix(STUFF_SYSTEM)))
    assert messages[0]["content"][: seg.static_end[1]] == static_prefix(STUFF_SYSTEM)
    assert apply_chat(messages, seg, DOCS) == messages
    out = apply_chat(messages, seg, SHORT)
    assert out == stuff_chat(SHORT)
    assert out[1] is messages[1]


def test_stuff_completion():
    prompt = render(STUFF_PROMPT)
    seg = segment_prompt(prompt)
    assert_documents(seg, "langchain_stuff")
    assert seg.static_end == (None, len(static_prefix(STUFF_PROMPT)))
    assert apply_prompt(prompt, seg, DOCS) == prompt
    assert apply_prompt(prompt, seg, SHORT) == render(STUFF_PROMPT, SHORT)


def test_stuff_completion_document_quoting_the_template_words():
    docs = (*DOCS[:2], "FAQ\nQuestion: Is it open at night?\nAnswer: Yes, until 23:45.")
    prompt = render(STUFF_PROMPT, docs)
    seg = segment_prompt(prompt)
    assert [d.text for d in seg.documents] == list(docs)
    assert seg.question == QUESTION


def test_stuff_with_different_instruction_is_not_recognised():
    prompt = render(STUFF_PROMPT.replace("don't try to make up", "never make up"))
    assert segment_prompt(prompt) is None


def test_retrieval_qa_chat():
    messages = qa_chat()
    seg = segment_chat(messages)
    assert_documents(seg, "langchain_retrieval_qa_chat")
    assert messages[0]["content"][: seg.static_end[1]] == static_prefix(QA_CHAT_SYSTEM)
    assert seg.static_end[0] == 0
    assert apply_chat(messages, seg, DOCS) == messages
    assert apply_chat(messages, seg, SHORT) == qa_chat(SHORT)


def test_retrieval_qa_chat_with_history_takes_the_last_user_message():
    history = [
        {"role": "user", "content": "How tall is the Eiffel Tower?"},
        {"role": "assistant", "content": "It is 330 metres tall."},
    ]
    messages = qa_chat(history=history)
    seg = segment_chat(messages)
    assert_documents(seg, "langchain_retrieval_qa_chat")
    out = apply_chat(messages, seg, SHORT)
    assert out == qa_chat(SHORT, history)
    assert all(a is b for a, b in zip(out[1:], messages[1:], strict=True))


def test_stuff_chat_rendered_by_langchain_core():
    prompts = pytest.importorskip("langchain_core.prompts")
    lc_messages = pytest.importorskip("langchain_core.messages")
    template = prompts.ChatPromptTemplate.from_messages(
        [("system", STUFF_SYSTEM), ("human", "{question}")]
    )
    rendered = template.invoke({"context": "\n\n".join(DOCS), "question": QUESTION})
    messages = lc_messages.convert_to_openai_messages(rendered.to_messages())
    seg = segment_chat(messages)
    assert_documents(seg, "langchain_stuff")
    assert apply_chat(messages, seg, DOCS) == messages
