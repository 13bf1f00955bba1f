"""The official anthropic SDK against ragtrim, no other client change than base_url:
`messages.create`, streamed and not, against vLLM's own Messages API (/v1/messages),
with a RAG request shaped as LangChain's stuff chat prompt (context in `system`).

Compression is read three ways: ragtrim's x-ragtrim-* response headers, the usage the
SDK parses (input_tokens through ragtrim below vLLM's own count for the same body),
and `messages.count_tokens`, relayed as is."""

from collections.abc import Mapping

import pytest

pytest.importorskip("langchain_classic")
pytest.importorskip("anthropic")

import anthropic  # noqa: E402
from langchain_classic.chains.question_answering.stuff_prompt import CHAT_PROMPT  # noqa: E402

from tests.integration.clients.measure import QUESTION, documents  # noqa: E402
from tests.support.frameworks import MAX_TOKENS, Run  # noqa: E402

pytestmark = pytest.mark.integration


def _body(model: str) -> dict:
    system, human = CHAT_PROMPT.format_messages(context="\n\n".join(documents()), question=QUESTION)
    return {
        "model": model, "max_tokens": MAX_TOKENS, "extra_body": {"temperature": 0},
        "system": system.content, "messages": [{"role": "user", "content": human.content}],
    }  # fmt: skip


def _client(base_url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=0)


def _prompt_tokens(usage) -> int:
    """The whole prompt: Anthropic's input_tokens leaves out the prefix-cache reads."""
    parts = (usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens)
    return sum(p or 0 for p in parts)


def _create(base_url: str, body: dict, stream: bool) -> tuple[Run, int, Mapping[str, str]]:
    """The answer, the prompt tokens the backend reported (as the SDK parsed them) and
    the response headers."""
    raw = _client(base_url).messages.with_raw_response.create(stream=stream, **body)
    if not stream:
        out = raw.parse()
        text = "".join(b.text for b in out.content if b.type == "text")
        return Run(text, 1), _prompt_tokens(out.usage), raw.headers
    parts, input_tokens = [], 0  # the last count given wins
    for event in raw.parse():
        if event.type == "message_start":
            input_tokens = _prompt_tokens(event.message.usage)
        elif event.type == "message_delta" and event.usage.input_tokens is not None:
            input_tokens = _prompt_tokens(event.usage)
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            parts.append(event.delta.text)
    parts = [p for p in parts if p]
    return Run("".join(parts), len(parts)), input_tokens, raw.headers


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_anthropic_sdk_messages_through_ragtrim(stream, proxy, vllm_tiny, report):
    body = _body(vllm_tiny.model)
    _, direct_tokens, _ = _create(vllm_tiny.base_url, body, stream=False)
    run, input_tokens, headers = _create(proxy.url, body, stream)

    assert run.answer, "no answer arrived"
    if stream:
        assert run.chunks > 1, "the answer did not arrive in pieces"
    assert headers.get("x-ragtrim-template") == "langchain_stuff"
    before, after = int(headers["x-ragtrim-tokens-before"]), int(headers["x-ragtrim-tokens-after"])
    assert after < before, f"context not compressed ({before} -> {after})"
    assert input_tokens < direct_tokens, f"vLLM counted {input_tokens} vs {direct_tokens} direct"
    report.append({
        "framework": "anthropic SDK", "mode": "messages " + ("(stream)" if stream else "(create)"),
        "template": headers["x-ragtrim-template"], "calls": 1, "tokens_before": before,
        "tokens_after": after, "vllm_input_tokens_direct": direct_tokens,
        "vllm_input_tokens": input_tokens, "chunks": run.chunks, "streamed": run.chunks > 1,
    })  # fmt: skip


def test_anthropic_sdk_count_tokens_relayed(proxy, vllm_tiny):
    """/v1/messages/count_tokens is relayed untouched: the same count as vLLM's."""
    keep = ("model", "system", "messages")
    body = {k: v for k, v in _body(vllm_tiny.model).items() if k in keep}
    counts = [
        _client(url).messages.count_tokens(**body).input_tokens
        for url in (vllm_tiny.base_url, proxy.url)
    ]
    assert counts[0] > 0 and counts[0] == counts[1], counts
