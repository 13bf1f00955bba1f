"""One SQuAD RAG case as the body of each generation route ragtrim compresses (issue 31):
the same LlamaIndex text_qa prompt (bench.lib.squad_render) that bench.ttft sends on
chat, sent as

    chat       POST /v1/chat/completions   messages: [system, user]
    responses  POST /v1/responses          instructions (the system text) and one input
                                           item: a user message of one input_text part,
                                           as the openai SDK's typed `responses.create`
                                           input and LangChain's use_responses_api send it
    messages   POST /v1/messages           system (a string) and one user message, as the
                                           anthropic SDK's `messages.create` sends it

vLLM renders all three through the same chat template (instructions and system first,
as the system message), so the prompt is the same tokens on each route.

    body(route, case, salt, model)  -> the streamed request body
    segmentation(route, body)       -> what ragtrim's adapter for the route finds in it
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from bench.lib.squad import RagCase
from bench.lib.squad_render import render_llamaindex
from proxy.prompt.body import prompt_for
from proxy.prompt.segment import Segmentation, Segmenter

MAX_TOKENS = 24


def chat_body(case: RagCase, salt: str, model: str) -> dict:
    return {
        "model": model,
        "messages": render_llamaindex(case),
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "seed": 0,
        "cache_salt": salt,
    }


def responses_body(case: RagCase, salt: str, model: str) -> dict:
    system, user = render_llamaindex(case)
    item = {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": user["content"]}]}  # fmt: skip
    return {
        "model": model,
        "instructions": system["content"],
        "input": [item],
        "max_output_tokens": MAX_TOKENS,
        "temperature": 0,
        "seed": 0,
        "store": False,  # nothing kept on the backend: each case stands alone
        "cache_salt": salt,
    }


def messages_body(case: RagCase, salt: str, model: str) -> dict:
    system, user = render_llamaindex(case)
    return {
        "model": model,
        "system": system["content"],
        "messages": [{"role": "user", "content": user["content"]}],
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
        "cache_salt": salt,
    }


Builder = Callable[[RagCase, str, str], dict]
BUILDERS: MappingProxyType[str, Builder] = MappingProxyType(
    {"chat": chat_body, "responses": responses_body, "messages": messages_body}
)
PATHS: MappingProxyType[str, str] = MappingProxyType(
    {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
)
ROUTES = tuple(BUILDERS)


def body(route: str, case: RagCase, salt: str, model: str) -> dict:
    return BUILDERS[route](case, salt, model)


def segmentation(route: str, request: dict) -> Segmentation | None:
    """The documents and question ragtrim's own adapter for `route` finds in `request`
    (what it compresses, and what its chunk memo is keyed on)."""
    return prompt_for(route, request).segment(Segmenter(), request.get("ragtrim"))
