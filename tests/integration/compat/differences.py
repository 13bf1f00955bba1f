"""The answers through ragtrim that are not vLLM's, each with its reason. The test checks
each one is still exactly this (so a fix fails it: then take the entry out).

All are errors: the status is vLLM's own, or the one named here, and the body is
ragtrim's OpenAI error envelope instead of vLLM's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Known:
    vllm: int  # vLLM's status
    ragtrim: int  # ragtrim's status
    reason: str


_MODEL = Known(404, 404, "no backend serves the model: ragtrim's router answers its own 404 "
               "(OpenAI's code model_not_found; vLLM lists its aliases, and on /v1/messages "
               "answers in Anthropic's error envelope)")  # fmt: skip
_READ = "ragtrim reads this field to find context and refuses a body it cannot read with " \
        "vLLM's status and its own message"  # fmt: skip
_5XX = Known(501, 502, "a backend 5xx becomes ragtrim's 502 (issue 23: vLLM's 5xx "
             "bodies can quote exception text); the tiny model has no /v1/systemone")  # fmt: skip
KNOWN: dict[str, Known] = {
    **{f"{route}:unknown model": _MODEL for route in (
        "/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages")},
    "/v1/chat/completions:stream unknown model": _MODEL,
    **{f"/v1/chat/completions:{name}": Known(400, 400, _READ) for name in (
        "messages missing", "messages not a list", "a message without role",
        "malformed JSON")},
    **{f"/v1/completions:{name}": Known(400, 400, _READ) for name in (
        "prompt missing", "prompt a number")},
    **{f"/v1/systemone:{name}": _5XX for name in (
        "a choice", "a yes-or-no", "an unknown question type")},
}  # fmt: skip

# ragtrim sorts the tools list by (type, name) (compression.canonical.sort_tools, on by
# default: the list's order then does not change the cached prefix); the Responses
# object echoes the tools, so it shows them sorted. Compared with both lists sorted.
TOOLS_SORTED: dict[str, str] = {
    "/v1/responses:two tools out of name order": "canonical.sort_tools (default on)",
}


def tools_sorted(value: Any) -> Any:
    """`value` with every list under a `tools` key in (type, name) order."""
    if isinstance(value, dict):
        return {k: _sorted(v) if k == "tools" else tools_sorted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tools_sorted(v) for v in value]
    return value


def _sorted(tools: Any) -> Any:
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        return tools_sorted(tools)
    name = lambda t: t.get("name") or (t.get("function") or {}).get("name") or ""  # noqa: E731
    return sorted(tools, key=lambda t: (str(t.get("type")), str(name(t))))
