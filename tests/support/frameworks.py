"""RAG pipelines built the way each framework's own docs build them, for any base URL.

Used by the template-drift test (an in-process httpx transport records what each
framework sends) and by the client integration tests (real ragtrim in front of real
vLLM). Every prompt comes from the installed framework, except two texts that no
package ships (the LangChain hub's `rlm/rag-prompt` and Haystack's RAG tutorial
prompt): those are taken from ragtrim's recognisers, where their sources are named.
Needs the `clients` extra.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from proxy.prompt.segment.frameworks import framework_text

MAX_TOKENS = 8
HAYSTACK_TUTORIAL = framework_text("haystack_rag_tutorial", "user")
RLM_RAG_PROMPT = framework_text("langchain_rag_prompt", "user")


@dataclass
class Wire:
    """Where a framework's client sends requests, and what came back (headers per call)."""

    base_url: str  # ends in /v1
    model: str
    transport: httpx.BaseTransport | None = None
    calls: list[tuple[str, httpx.Headers]] = field(default_factory=list)

    def _record(self, response: httpx.Response) -> None:
        self.calls.append((response.request.url.path, response.headers))

    async def _arecord(self, response: httpx.Response) -> None:
        self._record(response)

    def client_kwargs(self) -> dict:
        kwargs: dict = {"timeout": 120, "event_hooks": {"response": [self._record]}}
        if self.transport is not None:
            kwargs["transport"] = self.transport
        return kwargs

    def client(self) -> httpx.Client:
        return httpx.Client(**self.client_kwargs())

    def aclient(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=120, event_hooks={"response": [self._arecord]})


@dataclass
class Run:
    answer: str
    chunks: int  # pieces the answer arrived in (1 = not streamed)


def _collect(pieces) -> Run:
    parts = [p for p in pieces if p]
    return Run("".join(parts), len(parts))


# ---- LangChain -------------------------------------------------------------------


def chat_openai(wire: Wire):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=wire.base_url, api_key="unused", model=wire.model, max_tokens=MAX_TOKENS,
        temperature=0, http_client=wire.client(), max_retries=0,
    )  # fmt: skip


def _lc_docs(docs: list[str]):
    from langchain_core.documents import Document

    return [Document(page_content=d) for d in docs]


def lc_stuff(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
    """create_stuff_documents_chain with the stuff chain's default chat prompt."""
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_classic.chains.question_answering.stuff_prompt import CHAT_PROMPT

    chain = create_stuff_documents_chain(chat_openai(wire), CHAT_PROMPT)
    inputs = {"context": _lc_docs(docs), "question": question}
    return _collect(chain.stream(inputs)) if stream else Run(chain.invoke(inputs), 1)


def lc_load_qa(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
    """load_qa_chain(chain_type="stuff"): a legacy Chain; its .stream yields one dict."""
    from langchain_classic.chains.question_answering import load_qa_chain

    chain = load_qa_chain(chat_openai(wire), chain_type="stuff")
    inputs = {"input_documents": _lc_docs(docs), "question": question}
    outs = list(chain.stream(inputs)) if stream else [chain.invoke(inputs)]
    return Run("".join(o["output_text"] for o in outs), len(outs))


def lc_load_qa_completion(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
    """load_qa_chain with a completion LLM (langchain_openai.OpenAI): the stuff PROMPT."""
    from langchain_classic.chains.question_answering import load_qa_chain
    from langchain_openai import OpenAI

    llm = OpenAI(
        base_url=wire.base_url, api_key="unused", model=wire.model, max_tokens=MAX_TOKENS,
        temperature=0, http_client=wire.client(), max_retries=0,
    )  # fmt: skip
    chain = load_qa_chain(llm, chain_type="stuff")
    return Run(chain.invoke({"input_documents": _lc_docs(docs), "question": question})[
        "output_text"], 1)  # fmt: skip


def lc_retrieval(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
    """create_retrieval_chain over a retriever; the stuff chat prompt reads `question`,
    the retrieval chain `input` (it passes every input key on)."""
    from langchain_classic.chains import create_retrieval_chain
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_classic.chains.question_answering.stuff_prompt import CHAT_PROMPT

    combine = create_stuff_documents_chain(chat_openai(wire), CHAT_PROMPT)
    chain = create_retrieval_chain(fixed_retriever(docs), combine)
    inputs = {"input": question, "question": question}
    if not stream:
        return Run(chain.invoke(inputs)["answer"], 1)
    return _collect(part.get("answer", "") for part in chain.stream(inputs))


def fixed_retriever(docs: list[str]):
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class FixedRetriever(BaseRetriever):
        """Returns the given documents (a vector store would need an embedding model)."""

        documents: list[Document]

        def _get_relevant_documents(self, query, *, run_manager):
            return self.documents

    return FixedRetriever(documents=_lc_docs(docs))


def lc_rag_prompt(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
    """The hub's rlm/rag-prompt as an LCEL chain (the hub is not installable)."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate

    prompt = ChatPromptTemplate.from_messages([("human", RLM_RAG_PROMPT)])
    chain = prompt | chat_openai(wire) | StrOutputParser()
    inputs = {"context": "\n\n".join(docs), "question": question}
    return _collect(chain.stream(inputs)) if stream else Run(chain.invoke(inputs), 1)


# ---- LlamaIndex ------------------------------------------------------------------


def li_query(mode: str, chat: bool) -> Callable[[Wire, list[str], str, bool], Run]:
    """A RetrieverQueryEngine over given nodes with the default response synthesizer."""

    def run(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
        from llama_index.core import get_response_synthesizer
        from llama_index.core.query_engine import RetrieverQueryEngine
        from llama_index.llms.openai_like import OpenAILike

        llm = OpenAILike(
            model=wire.model, api_base=wire.base_url, api_key="unused", is_chat_model=chat,
            max_tokens=MAX_TOKENS, temperature=0, context_window=4096, max_retries=0,
            http_client=wire.client(), async_http_client=wire.aclient(),
        )  # fmt: skip
        synth = get_response_synthesizer(llm=llm, response_mode=mode, streaming=stream)
        response = RetrieverQueryEngine(_li_retriever(docs), synth).query(question)
        return _collect(response.response_gen) if stream else Run(str(response), 1)

    run.__name__ = f"li_{mode}_{'chat' if chat else 'completion'}"
    return run


def _li_retriever(docs: list[str]):
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    class FixedRetriever(BaseRetriever):
        def _retrieve(self, query_bundle):
            return [NodeWithScore(node=TextNode(text=d), score=1.0) for d in docs]

    return FixedRetriever()


# ---- Haystack --------------------------------------------------------------------


def haystack_docs_template() -> str:
    """The RAG prompt of Haystack's own docs, as shipped in `Pipeline.run`'s docstring
    (a ChatPromptBuilder + chat generator example)."""
    from haystack.core.pipeline.pipeline import Pipeline

    found = re.search(r'prompt_template = """(.*?)"""', Pipeline.run.__doc__ or "", re.S)
    assert found, "Haystack's Pipeline.run docstring no longer holds its RAG example"
    return found.group(1)


def hs_chat(template: Callable[[], str]) -> Callable[[Wire, list[str], str, bool], Run]:
    """ChatPromptBuilder([ChatMessage.from_user(template)]) -> OpenAIChatGenerator."""

    def run(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
        from haystack import Document, Pipeline
        from haystack.components.builders import ChatPromptBuilder
        from haystack.components.generators.chat import OpenAIChatGenerator
        from haystack.dataclasses import ChatMessage
        from haystack.utils import Secret

        chunks: list[str] = []
        llm = OpenAIChatGenerator(
            api_key=Secret.from_token("unused"), model=wire.model, api_base_url=wire.base_url,
            generation_kwargs={"max_tokens": MAX_TOKENS, "temperature": 0}, max_retries=0,
            streaming_callback=(lambda c: chunks.append(c.content)) if stream else None,
            http_client_kwargs=wire.client_kwargs(),
        )  # fmt: skip
        pipe = Pipeline()
        pipe.add_component("prompt_builder", ChatPromptBuilder([ChatMessage.from_user(template())]))
        pipe.add_component("llm", llm)
        pipe.connect("prompt_builder.prompt", "llm.messages")
        data = {"documents": [Document(content=d) for d in docs], "question": question}
        reply = pipe.run({"prompt_builder": data})["llm"]["replies"][0].text or ""
        return Run(reply, len([c for c in chunks if c]) if stream else 1)

    run.__name__ = f"hs_{template.__name__}"
    return run


def haystack_tutorial_template() -> str:
    return HAYSTACK_TUTORIAL
