"""The LangChain wrappers run the real pipeline pieces in-process."""

import asyncio

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from proxy.integrations.langchain import (
    RagtrimChatModel,
    RagtrimDocumentCompressor,
    RagtrimLLM,
    ragtrim_chat_openai,
    ragtrim_openai,
)
from proxy.prompt.segment.frameworks import framework_text
from proxy.settings import Settings
from tests.support.compressor_doubles import HalfWords
from tests.support.langchain_doubles import EchoLLM, EchoSystem, NoStream

DOCS = ["one two three four five six", "alpha beta gamma delta epsilon zeta"]
SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)
MESSAGES = [SystemMessage(content=SYSTEM + "\n\n".join(DOCS), id="s1"), HumanMessage("q?")]
COMPRESSED = SYSTEM + "one two three\n\nalpha beta gamma"


class Tokens(BaseCallbackHandler):
    def __init__(self):
        self.tokens, self.starts = [], 0

    def on_chat_model_start(self, *args, **kwargs):
        self.starts += 1

    def on_llm_start(self, *args, **kwargs):
        self.starts += 1

    def on_llm_new_token(self, token, **kwargs):
        self.tokens.append(token)


def chat(inner=None, compressor=None) -> RagtrimChatModel:
    return RagtrimChatModel(inner=inner or EchoSystem(), settings=Settings(),
                            compressor=compressor or HalfWords())  # fmt: skip


def test_document_compressor_keeps_order_and_metadata():
    compressor = RagtrimDocumentCompressor(settings=Settings(), compressor=HalfWords(), rate=0.5)
    docs = [Document(page_content=t, metadata={"source": i}) for i, t in enumerate(DOCS)]
    out = compressor.compress_documents(docs, "which?")
    assert [d.page_content for d in out] == ["one two three", "alpha beta gamma"]
    assert [d.metadata["source"] for d in out] == [0, 1]
    again = asyncio.run(compressor.acompress_documents(docs, "which?"))
    assert [d.page_content for d in again] == ["one two three", "alpha beta gamma"]


def test_chat_model_compresses_recognised_context_only():
    model = chat()
    assert model.invoke(MESSAGES).content == COMPRESSED
    plain = [SystemMessage(content="Be nice."), HumanMessage("hi")]
    assert model.invoke(plain).content == "Be nice."


def test_stream_compresses_once_then_passes_chunks_and_callbacks():
    compressor, inner, seen = HalfWords(), EchoSystem(), Tokens()
    model = chat(inner, compressor)
    model._rt.run(model._rt.ready())
    compressor.calls = 0  # the warm-up compressed once
    stream = model.stream(MESSAGES, config={"callbacks": [seen]})
    chunks = [c.content for c in stream if c.content]  # LangChain adds an empty last chunk
    assert len(chunks) == len(COMPRESSED.split(" ")) > 1
    assert "".join(chunks) == COMPRESSED
    assert compressor.calls == 1 and inner.calls == 1
    assert [t for t in seen.tokens if t] == chunks and seen.starts == 1  # reported once


def test_astream_and_ainvoke():
    async def go():
        model = chat()
        chunks = [c.content async for c in model.astream(MESSAGES) if c.content]
        return chunks, (await model.ainvoke(MESSAGES)).content

    chunks, whole = asyncio.run(go())
    assert len(chunks) > 1 and "".join(chunks) == whole == COMPRESSED


def test_stream_of_a_model_that_cannot_stream_is_one_chunk():
    chunks = [c.content for c in chat(NoStream()).stream(MESSAGES) if c.content]
    assert chunks == [COMPRESSED]


def test_compression_failure_fails_open():
    model = chat(compressor=HalfWords(fail=True))
    assert model.invoke(MESSAGES).content == MESSAGES[0].content


class Answer(BaseModel):
    text: str


def search(query: str) -> str:
    """Search the web."""
    return query


def test_document_compressor_in_a_contextual_compression_retriever():
    classic = pytest.importorskip("langchain_classic.retrievers")
    from tests.support.frameworks import fixed_retriever

    retriever = classic.ContextualCompressionRetriever(
        base_compressor=RagtrimDocumentCompressor(settings=Settings(), compressor=HalfWords()),
        base_retriever=fixed_retriever(DOCS),
    )
    out = retriever.invoke("which?")
    assert [d.page_content for d in out] == ["one two three", "alpha beta gamma"]
    assert all(d.metadata["ragtrim_compressed"] for d in out)


def test_tool_binding_and_structured_output_pass_through():
    message = chat().bind_tools([search]).invoke(MESSAGES)
    assert message.tool_calls[0]["name"] == "search"
    assert message.tool_calls[0]["args"] == {"text": COMPRESSED}  # the model saw it trimmed
    assert chat().with_structured_output(Answer).invoke(MESSAGES) == Answer(text=COMPRESSED)


def test_completion_llm_wrapper_invoke_batch_and_stream():
    prompt = framework_text("langchain_stuff", "prompt").format(
        context="\n\n".join(DOCS), question="q?"
    )
    expected = prompt.replace(DOCS[0], "one two three").replace(DOCS[1], "alpha beta gamma")
    llm = RagtrimLLM(inner=EchoLLM(), settings=Settings(), compressor=HalfWords())
    assert llm.invoke(prompt) == expected
    assert llm.batch([prompt, "plain"]) == [expected, "plain"]
    seen = Tokens()
    chunks = list(llm.stream(prompt, config={"callbacks": [seen]}))
    assert len(chunks) > 1 and "".join(chunks) == expected
    assert seen.tokens == chunks and seen.starts == 1
    assert "".join(asyncio.run(_acollect(llm.astream(prompt)))) == expected


async def _acollect(stream):
    return [c async for c in stream]


def test_clients_point_at_ragtrim():
    pytest.importorskip("langchain_openai")
    assert ragtrim_chat_openai("http://ragtrim:8080", model="m").openai_api_base == (
        "http://ragtrim:8080/v1"
    )
    assert ragtrim_openai("http://ragtrim:8080/v1/", model="m").openai_api_base == (
        "http://ragtrim:8080/v1"
    )
