"""ragtrim's LangChain wrappers in-process, in front of real vLLM (no proxy): the chat
wrapper and the completion-LLM wrapper compress what the model sees (vLLM's prompt
token count drops against the same call without the wrapper), stream, and a second
identical call hits vLLM's prefix cache; the document compressor works inside a
ContextualCompressionRetriever."""

import pytest

pytest.importorskip("langchain_classic")
pytest.importorskip("langchain_openai")

from langchain_classic.chains.question_answering.stuff_prompt import (  # noqa: E402
    CHAT_PROMPT,
    PROMPT,
)
from langchain_classic.retrievers import ContextualCompressionRetriever  # noqa: E402
from langchain_openai import ChatOpenAI, OpenAI  # noqa: E402

from proxy.integrations.langchain import (  # noqa: E402
    RagtrimChatModel,
    RagtrimDocumentCompressor,
    RagtrimLLM,
)
from proxy.settings import Settings  # noqa: E402
from tests.integration.clients.measure import (  # noqa: E402
    QUESTION,
    VLLM,
    documents,
    settled,
    sums,
)
from tests.support.frameworks import MAX_TOKENS, fixed_retriever  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings()  # default compressor (extractive), rate 0.5


def _chat(vllm) -> ChatOpenAI:
    return ChatOpenAI(base_url=f"{vllm.base_url}/v1", api_key="unused", model=vllm.model,
                      max_tokens=MAX_TOKENS, temperature=0, stream_usage=True)  # fmt: skip


def _usage(message) -> tuple[int, int]:
    usage = message.usage_metadata or {}
    return usage["input_tokens"], (usage.get("input_token_details") or {}).get("cache_read", 0)


def test_chat_wrapper_compresses_streams_and_hits_the_prefix_cache(vllm_tiny, settings, report):
    messages = CHAT_PROMPT.format_messages(context="\n\n".join(documents()), question=QUESTION)
    direct, _ = _usage(_chat(vllm_tiny).invoke(messages))
    model = RagtrimChatModel(inner=_chat(vllm_tiny), settings=settings)
    first = model.invoke(messages)
    assert first.content
    trimmed, _ = _usage(first)
    assert trimmed < direct, "the wrapped model saw the whole context"
    chunks = list(model.stream(messages))
    assert len([c for c in chunks if c.content]) > 1, "the answer did not stream"
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    tokens, cached = _usage(whole)
    assert tokens == trimmed and cached > 0  # the same compressed prompt, from the cache
    report.append({"framework": "langchain (in-process)", "mode": "RagtrimChatModel(ChatOpenAI)",
                   "template": "langchain_stuff", "calls": 1, "tokens_before": direct,
                   "tokens_after": trimmed, "cached_second": cached, "streamed": True,
                   "chunks": len(chunks), "units": "prompt tokens"})  # fmt: skip


def test_completion_llm_wrapper(vllm_tiny, settings, report):
    prompt = PROMPT.format(context="\n\n".join(documents()), question=QUESTION)

    def llm(**kwargs):
        return OpenAI(base_url=f"{vllm_tiny.base_url}/v1", api_key="unused", model=vllm_tiny.model,
                      max_tokens=MAX_TOKENS, temperature=0, **kwargs)  # fmt: skip

    direct = llm().generate([prompt]).llm_output["token_usage"]["prompt_tokens"]
    wrapped = RagtrimLLM(inner=llm(), settings=settings)
    out = wrapped.generate([prompt])
    assert out.generations[0][0].text
    trimmed = out.llm_output["token_usage"]["prompt_tokens"]
    assert trimmed < direct
    before = sums(vllm_tiny.base_url, VLLM)
    wrapped.generate([prompt])  # the same call again: vLLM's metrics show the cache hit
    hits = settled(vllm_tiny.base_url, before, 1)["vllm:prefix_cache_hits"]
    cached = int(hits - before["vllm:prefix_cache_hits"])
    assert cached > 0
    chunks = [c for c in wrapped.stream(prompt) if c]
    assert len(chunks) > 1, "the answer did not stream"
    report.append({"framework": "langchain (in-process)", "mode": "RagtrimLLM(OpenAI completions)",
                   "template": "langchain_stuff", "calls": 1, "tokens_before": direct,
                   "tokens_after": trimmed, "cached_second": cached, "streamed": True,
                   "chunks": len(chunks),
                   "units": "prompt tokens"})  # fmt: skip


def test_document_compressor_in_contextual_compression_retriever(vllm_tiny, settings):
    docs = documents()
    retriever = ContextualCompressionRetriever(
        base_compressor=RagtrimDocumentCompressor(settings=settings),
        base_retriever=fixed_retriever(docs),
    )
    out = retriever.invoke(QUESTION)
    assert len(out) == len(docs)
    assert all(len(d.page_content) < len(doc) for d, doc in zip(out, docs, strict=True))
    assert all(d.metadata["ragtrim_compressed"] for d in out)
    context = "\n\n".join(d.page_content for d in out)
    answer = _chat(vllm_tiny).invoke(CHAT_PROMPT.format_messages(context=context,
                                                                 question=QUESTION))  # fmt: skip
    assert answer.content
