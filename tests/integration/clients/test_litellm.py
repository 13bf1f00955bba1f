"""LiteLLM's proxy in front of ragtrim: client -> LiteLLM -> ragtrim -> vLLM (issue 31).

LiteLLM (its own venv, built by `make setup`) runs with the committed example config
deploy/litellm/config.yaml, ragtrim as its OpenAI-compatible backend. A RAG request
(LangChain's stuff chat prompt) sent to LiteLLM with the openai SDK is recognised and
compressed by ragtrim: ragtrim's headers come back through LiteLLM
(llm_provider-x-ragtrim-*), and the prompt tokens vLLM counted are fewer than vLLM
counts for the same body sent to it directly."""

from collections.abc import Iterator

import pytest

pytest.importorskip("langchain_classic")

import openai  # noqa: E402
from langchain_classic.chains.question_answering.stuff_prompt import CHAT_PROMPT  # noqa: E402
from langchain_core.messages import convert_to_openai_messages  # noqa: E402

from deploy.local import litellm_server  # noqa: E402
from tests.integration.clients.measure import QUESTION, documents  # noqa: E402
from tests.integration.conftest import RUN_DIR  # noqa: E402
from tests.support.frameworks import MAX_TOKENS, Wire  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

pytestmark = pytest.mark.integration
PROVIDER = "llm_provider-"  # LiteLLM's prefix on its backend's response headers


@pytest.fixture(scope="module")
def litellm(proxy) -> Iterator[litellm_server.LitellmServer]:
    ok, reason = litellm_server.available()
    if not ok:
        pytest.skip(reason)
    port = free_port()
    server = litellm_server.start(f"{proxy.url}/v1", port=port,
                                  log_path=RUN_DIR / f"litellm-{port}.log")  # fmt: skip
    try:
        litellm_server.wait_healthy(server)
        yield server
    finally:
        litellm_server.stop(server)


def _body(model: str) -> dict:
    messages = CHAT_PROMPT.format_messages(context="\n\n".join(documents()), question=QUESTION)
    return {"model": model, "messages": convert_to_openai_messages(messages),
            "max_tokens": MAX_TOKENS, "temperature": 0}  # fmt: skip


def _ask(base_url: str, key: str, wire: Wire, body: dict, stream: bool) -> tuple[str, int]:
    """The answer and the prompt tokens vLLM reported, through the openai SDK."""
    client = openai.OpenAI(base_url=base_url, api_key=key, http_client=wire.client(),
                           max_retries=0)  # fmt: skip
    if not stream:
        out = client.chat.completions.create(**body)
        return out.choices[0].message.content, out.usage.prompt_tokens
    answer, prompt_tokens = "", 0
    chunks = client.chat.completions.create(
        stream=True, stream_options={"include_usage": True}, **body
    )
    for chunk in chunks:
        if chunk.choices:
            answer += chunk.choices[0].delta.content or ""
        if chunk.usage:
            prompt_tokens = chunk.usage.prompt_tokens
    return answer, prompt_tokens


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_rag_request_through_litellm_is_compressed(stream, litellm, proxy, vllm_tiny, report):
    body = _body(vllm_tiny.model)
    _, direct_tokens = _ask(f"{vllm_tiny.base_url}/v1", "unused", Wire("", ""), body, False)
    wire = Wire(f"{litellm.base_url}/v1", vllm_tiny.model)
    answer, prompt_tokens = _ask(wire.base_url, litellm.key, wire, body, stream)

    assert answer, "no answer arrived"
    (path, headers), *_ = wire.calls
    assert path == "/v1/chat/completions"
    assert headers["x-litellm-model-api-base"] == f"{proxy.url}/v1", "LiteLLM did not use ragtrim"
    assert headers[f"{PROVIDER}x-ragtrim-template"] == "langchain_stuff"
    before = int(headers[f"{PROVIDER}x-ragtrim-tokens-before"])
    after = int(headers[f"{PROVIDER}x-ragtrim-tokens-after"])
    assert after < before, f"context not compressed ({before} -> {after})"
    assert 0 < prompt_tokens < direct_tokens, f"vLLM counted {prompt_tokens} vs {direct_tokens}"
    report.append({
        "framework": "LiteLLM proxy", "mode": "chat " + ("(stream)" if stream else "(invoke)"),
        "template": "langchain_stuff", "calls": len(wire.calls), "tokens_before": before,
        "tokens_after": after, "vllm_prompt_tokens_direct": direct_tokens,
        "vllm_prompt_tokens": prompt_tokens, "streamed": stream,
    })  # fmt: skip


def test_cached_tokens_pass_through_litellm_untouched(litellm, proxy, vllm_tiny):
    """The ledger's cached tokens reach a client behind LiteLLM (LiteLLM #22984 dropped
    vLLM's count on some paths): the same RAG request twice, the second one's
    `prompt_tokens_details.cached_tokens` is vLLM's, as ragtrim counted it."""
    body = _body(vllm_tiny.model)
    wire = Wire(f"{litellm.base_url}/v1", vllm_tiny.model)
    client = openai.OpenAI(base_url=wire.base_url, api_key=litellm.key,
                           http_client=wire.client(), max_retries=0)  # fmt: skip
    client.chat.completions.create(**body)
    again = client.chat.completions.create(**body)
    cached = again.usage.prompt_tokens_details.cached_tokens
    assert cached and cached > 0, again.usage
    assert cached == int(wire.calls[-1][1][f"{PROVIDER}x-ragtrim-cached-tokens"])
