"""The LangChain wrappers run the real pipeline pieces in-process."""

import asyncio

from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from proxy.integrations.langchain import RagtrimChatModel, RagtrimDocumentCompressor
from proxy.settings import Settings
from tests.unit.proxy.doubles import HalfWords

DOCS = ["one two three four five six", "alpha beta gamma delta epsilon zeta"]
SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)


class EchoSystem(BaseChatModel):
    """Answers with the system message it was given (so tests can see it)."""

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        system = next(m.content for m in messages if isinstance(m, SystemMessage))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=system))])


def test_document_compressor_keeps_order_and_metadata():
    compressor = RagtrimDocumentCompressor(settings=Settings(), compressor=HalfWords(), rate=0.5)
    docs = [Document(page_content=t, metadata={"source": i}) for i, t in enumerate(DOCS)]
    out = compressor.compress_documents(docs, "which?")
    assert [d.page_content for d in out] == ["one two three", "alpha beta gamma"]
    assert [d.metadata["source"] for d in out] == [0, 1]
    again = asyncio.run(compressor.acompress_documents(docs, "which?"))
    assert [d.page_content for d in again] == ["one two three", "alpha beta gamma"]


def test_chat_model_compresses_recognised_context():
    model = RagtrimChatModel(inner=EchoSystem(), settings=Settings(), compressor=HalfWords())
    messages = [SystemMessage(content=SYSTEM + "\n\n".join(DOCS)), HumanMessage(content="q?")]
    seen = model.invoke(messages).content
    assert seen == SYSTEM + "one two three\n\nalpha beta gamma"
    plain = [SystemMessage(content="Be nice."), HumanMessage(content="hi")]
    assert model.invoke(plain).content == "Be nice."
