"""Request models: parse once, validate types, keep every unknown field.

`extra="allow"` is what lets vLLM's own fields (cache_salt, chat_template_kwargs,
stream_options, guided decoding, ...) pass through unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from proxy.errors import InvalidRequest


class _OpenAIRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str
    stream: bool = False
    stream_options: dict[str, Any] | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionRequest(_OpenAIRequest):
    messages: list[ChatMessage]


class CompletionRequest(_OpenAIRequest):
    prompt: str | list[str] | list[int] | list[list[int]]


ROUTE_MODELS: dict[str, type[_OpenAIRequest]] = {
    "chat": ChatCompletionRequest,
    "completions": CompletionRequest,
}


def parse_json(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidRequest("request body must be a JSON object")
    return data


def parse_body(raw: bytes, route: str) -> dict[str, Any]:
    """JSON-decode and type-check; return the plain dict (the forwarded truth)."""
    data = parse_json(raw)
    try:
        ROUTE_MODELS[route].model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidRequest(f"{param}: {first['msg']}", param=param) from exc
    return data
