"""The OpenAPI document ragtrim serves at /openapi.json.

Written out rather than generated: the traffic routes (chat, completions) run outside
the framework (proxy/server/dataplane.py) and the control routes are plain Starlette routes,
so FastAPI would describe none of them. The request schemas say what ragtrim itself
checks (proxy/request/parse.py, proxy/compression/ingest.py, the `ragtrim` options); every
other field passes through to vLLM unchanged, hence `additionalProperties: true`. It is what
schemathesis fuzzes (tests/unit/proxy/server/test_openapi_fuzz.py): every error, whatever
the input, is a 4xx in the OpenAI envelope, never a 5xx.
"""

from __future__ import annotations

from typing import Any

ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "param", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
OPTIONS = {
    "type": "object",
    "description": "ragtrim's own options; removed before the request reaches vLLM.",
    "additionalProperties": False,  # an unknown key is a 400 (proxy/prompt/ragtrim_options.py)
    "properties": {
        "rate": {
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                {"const": "auto", "description": "adaptive budget (compressors/adaptive.py)"},
            ]
        },
        "compress": {"type": "boolean"},
        "documents": {"type": "array", "items": {"type": "string"}},
        "question": {"type": "string"},
    },
}
COMMON = {
    "model": {"type": "string"},
    "stream": {"type": "boolean"},
    "stream_options": {"type": "object", "properties": {"include_usage": {"type": "boolean"}}},
    "max_tokens": {"type": "integer", "minimum": 1},
    "temperature": {"type": "number", "minimum": 0, "maximum": 2},
    "cache_salt": {"type": "string"},
    "ragtrim": {"$ref": "#/components/schemas/RagtrimOptions"},
}
MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"type": "string"},
        "content": {
            "anyOf": [
                {"type": "string"},
                {"type": "null"},
                {"type": "array", "items": {"type": "object"}},
            ]
        },
    },
}
EMBEDS = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
PROMPT = {
    "anyOf": [
        {"type": "string"},
        {"type": "array", "items": {"type": "string"}},
        {"type": "array", "items": {"type": "integer", "minimum": 0}},
        {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0}}},
    ]
}
COMPRESS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["documents"],
    "properties": {
        "documents": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "question": {"type": "string"},
        "rate": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1},
    },
}
RAGTRIM_HEADERS = [
    {"name": "x-ragtrim-rate", "in": "header", "required": False,
     "schema": {"type": "string"}, "description": "Share of context tokens kept, (0, 1]."},
    {"name": "x-ragtrim-compress", "in": "header", "required": False,
     "schema": {"type": "string", "enum": ["on", "off"]}},
]  # fmt: skip


def _errors(*statuses: int) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return {str(s): {"description": "error (OpenAI envelope)", **error} for s in statuses}


def _json(description: str, schema: dict | None = None) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": schema or {"type": "object"}}}}  # fmt: skip


def _generation(summary: str, body_ref: str) -> dict[str, Any]:
    ok = _json("the backend's answer, unchanged (JSON, or SSE with stream: true)")
    ok["content"]["text/event-stream"] = {"schema": {"type": "string"}}
    return {"post": {
        "summary": summary,
        "parameters": RAGTRIM_HEADERS,
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": body_ref}}}},
        "responses": {"200": ok, **_errors(400, 401, 404, 413, 429, 502, 503, 504)},
    }}  # fmt: skip


def _get(summary: str, response: dict[str, Any], *errors: int) -> dict[str, Any]:
    return {"get": {"summary": summary, "responses": {"200": response, **_errors(*errors)}}}


def openapi_document(version: str = "0") -> dict[str, Any]:
    # `model` optional and `prompt_embeds` instead of `prompt`, as in vLLM
    chat = {"type": "object", "required": ["messages"], "additionalProperties": True,
            "properties": {**COMMON, "messages": {"type": "array", "items": MESSAGE}}}  # fmt: skip
    completion = {"type": "object", "additionalProperties": True,
                  "anyOf": [{"required": ["prompt"]}, {"required": ["prompt_embeds"]}],
                  "properties": {**COMMON, "prompt": PROMPT, "prompt_embeds": EMBEDS}}  # fmt: skip
    text = {"description": "Prometheus text format",
            "content": {"text/plain": {"schema": {"type": "string"}}}}  # fmt: skip
    paths = {
        "/v1/chat/completions": _generation("Chat completion, compressed and routed",
                                            "#/components/schemas/ChatRequest"),
        "/v1/completions": _generation("Completion, compressed and routed",
                                       "#/components/schemas/CompletionRequest"),
        "/v1/compress": {"post": {
            "summary": "Compress documents ahead of time (warms the chunk memo)",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/CompressRequest"}}}},
            "responses": {"200": _json("compressed documents"), **_errors(400, 413, 429)},
        }},
        "/v1/models": _get("Models the healthy backends serve", _json("model list")),
        "/healthz": _get("Liveness", _json("alive")),
        "/readyz": {"get": {"summary": "Readiness: a healthy backend", "responses": {
            "200": _json("ready"), "503": _json("not ready (no healthy backend)")}}},
        "/metrics": _get("Prometheus metrics", text),
        "/v1/ragtrim/usage": _get("A tenant's totals for today and this month (an admin key: all)",
                                  _json("usage totals and costs"), 401, 404),
    }  # fmt: skip
    return {
        "openapi": "3.1.0",
        "info": {"title": "ragtrim", "version": version},
        "paths": paths,
        "components": {"schemas": {"Error": ERROR, "RagtrimOptions": OPTIONS,
                                   "ChatRequest": chat, "CompletionRequest": completion,
                                   "CompressRequest": COMPRESS}},
    }  # fmt: skip
