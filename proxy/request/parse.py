"""Request bodies: parse once, check the few fields ragtrim reads, keep everything else.

Unknown fields are never touched: vLLM's own (cache_salt, chat_template_kwargs,
stream_options, guided decoding, ...) pass through unchanged. The checks are plain
code rather than a pydantic model: on the hot path a model validation of the whole
message list cost more than the rest of the parse (and the proxy reads only these).
orjson parses ≈ 5× faster than the stdlib and bounds nesting depth (a body nested
100,000 deep is a 400, not a RecursionError). It reads an integer beyond 64 bits as a
float, so a body with a run of 19 or more digits, the shortest such integer, is parsed
again by the stdlib, whose ints are exact; proxy/prompt/exact_json.py writes them back
exactly.

Bounded work: a JSON parser holds the GIL for its whole call, in a worker thread too,
so the parse itself is bounded before it starts: the raw bytes' commas, colons and
brackets bound the values it will build, an object's keys included
(`requests.max_json_values`, `max_json_containers`; 413): a key costs the parse about
two values. After it, one object's keys (`max_object_keys`; looked for only when the
colons alone pass the cap, so an ordinary body pays one count) and the counts ragtrim's
later work walks (messages, content parts, tools, tool calls; on chat, and on Messages
and Responses under their own names) are capped, each a 400 naming its field as
OpenAI's API does (`array_above_max_length`).
`RequestParser` runs all of it in a worker thread for a body above `offload_bytes`,
where the Python-level checks let the loop in between.
Why: docs/decisions/0021-bounded-work-per-request.md.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson

from proxy.errors import InvalidRequest, PayloadTooLarge
from proxy.prompt.exact_json import exact_int
from proxy.settings import RequestLimitSettings

# Every digit to "0" and "[" to "{", then substring searches and counts: the same
# meaning as re.search(rb"\d{19}"), ~2 ms on a 2 MB body where the regex took 60-100 ms
# on the event loop; the same bytes count the containers and values. JSON's
# whitespace becomes '"', so every key, whatever the spacing before its `:`, shows as
# '":' (prose's "Rule: ..." does not): a bound on keys tighter than the colons.
_MARKS = bytes.maketrans(b"123456789[ \t\r\n", b'000000000{""""')
_LONG_RUN = b"0" * 19


def parse_json(raw: bytes, limits: RequestLimitSettings | None = None) -> dict[str, Any]:
    marks = raw.translate(_MARKS)
    keys = _check_size(marks, limits) if limits is not None else 0
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from exc
    if _LONG_RUN in marks:  # maybe an integer orjson made a float: exact ints
        try:
            data = json.loads(raw, parse_int=exact_int)  # BigInt beyond 64 bits
        except RecursionError as exc:  # valid JSON that orjson's depth limit let through
            raise InvalidRequest("request body is nested too deeply") from exc
    if not isinstance(data, dict):
        raise InvalidRequest("request body must be a JSON object")
    if limits is not None and keys > limits.max_object_keys:  # else no object can pass it
        _check_object_keys(data, limits.max_object_keys)
    return data


def _check_size(marks: bytes, limits: RequestLimitSettings) -> int:
    """413 before parsing: upper bounds on what the parse would build;
    the bound on keys (every `:`), for the cap on one object's keys."""
    containers, keys = marks.count(b"{"), marks.count(b":")
    if keys > limits.max_object_keys:  # ~1 ms a MB: only where the colons could matter
        keys = marks.count(b'":')
    values = 1 + marks.count(b",") + containers + keys
    for count, cap, what in (
        (containers, limits.max_json_containers, "max_json_containers"),
        (values, limits.max_json_values, "max_json_values"),
    ):
        if count > cap:
            raise PayloadTooLarge(
                f"request body has up to {count} JSON {what.removeprefix('max_json_')}, at "
                f"most {cap} (requests.{what})",
                code="request_too_complex",
            )
    return keys


def _check_object_keys(data: dict[str, Any], cap: int) -> None:
    """A 400 naming the first object with more than `cap` keys. Walks the containers
    without naming them (49k content blocks: ~5 ms, where building a path for each
    held the GIL 100-150 ms); only an object found too large is named, by a second walk."""
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        if isinstance(value, dict) and len(value) > cap:
            where = _path_to(data, value) or "body"
            raise InvalidRequest(
                f"Invalid '{where}': too many properties. Expected an object with at most "
                f"{cap} properties, but got an object with {len(value)} properties instead "
                f"(requests.max_object_keys).",
                param=where,
                code="object_above_max_keys",
            )
        stack += [v for v in children if type(v) is dict or type(v) is list]


def _path_to(data: Any, target: Any) -> str:
    """The dotted path of the container `target` (by identity) inside `data`."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if value is target:
            return path
        items = value.items() if isinstance(value, dict) else enumerate(value)
        stack += [
            (f"{path}.{k}" if path else str(k), v)
            for k, v in items
            if type(v) is dict or type(v) is list
        ]
    return ""


def _fail(param: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{param}: {message}", param=param)


def _too_long(param: str, count: int, cap: int, setting: str) -> InvalidRequest:
    return InvalidRequest(
        f"Invalid '{param}': array too long. Expected an array with maximum length {cap}, "
        f"but got an array with length {count} instead (requests.{setting}).",
        param=param,
        code="array_above_max_length",
    )


def _check_common(data: dict[str, Any], limits: RequestLimitSettings) -> None:
    model = data.get("model")  # optional, as in vLLM: its served model answers
    if model is not None and not isinstance(model, str):
        raise _fail("model", "must be a string")
    if not isinstance(data.get("stream", False), bool):
        raise _fail("stream", "must be a boolean")
    options = data.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise _fail("stream_options", "must be an object")
    for field in ("tools", "functions"):
        value = data.get(field)
        if isinstance(value, list) and len(value) > limits.max_tools:
            raise _too_long(field, len(value), limits.max_tools, "max_tools")


def _check_messages(messages: Any, limits: RequestLimitSettings) -> None:
    if not isinstance(messages, list):
        raise _fail("messages", "a list of messages is required")
    if len(messages) > limits.max_messages:
        raise _too_long("messages", len(messages), limits.max_messages, "max_messages")
    parts = calls = 0
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _fail(f"messages.{i}", "must be an object")
        if not isinstance(message.get("role"), str):
            raise _fail(f"messages.{i}.role", "a string is required")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise _fail(f"messages.{i}.content", "must be a string or a list of parts")
        if isinstance(content, list):
            parts += len(content)
            if parts > limits.max_content_parts:
                raise _too_long(
                    f"messages.{i}.content", parts, limits.max_content_parts, "max_content_parts"
                )
            if not all(isinstance(p, dict) for p in content):
                raise _fail(f"messages.{i}.content", "every part must be an object")
        tool_calls = message.get("tool_calls")
        calls += len(tool_calls) if isinstance(tool_calls, list) else 0
        if calls > limits.max_tool_calls:
            raise _too_long(
                f"messages.{i}.tool_calls", calls, limits.max_tool_calls, "max_tool_calls"
            )


def _check_anthropic(data: dict[str, Any], limits: RequestLimitSettings) -> None:
    """/v1/messages under chat's caps: `messages`; content blocks, `system` blocks and
    tool_result contents as parts."""
    parts = _count_parts(data.get("system"), "system", 0, limits)
    messages = data.get("messages")
    if not isinstance(messages, list):
        return  # vLLM's request model judges the shape; the adapter reads what it finds
    if len(messages) > limits.max_messages:
        raise _too_long("messages", len(messages), limits.max_messages, "max_messages")
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        parts = _count_parts(content, f"messages.{i}.content", parts, limits)
        for j, block in enumerate(content if isinstance(content, list) else ()):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                at = f"messages.{i}.content.{j}.content"
                parts = _count_parts(block.get("content"), at, parts, limits)


def _check_responses(data: dict[str, Any], limits: RequestLimitSettings) -> None:
    """/v1/responses under chat's caps: `input` items as messages, their
    content parts (and a function_call_output's listed output) as parts."""
    items = data.get("input")
    if not isinstance(items, list):
        return
    if len(items) > limits.max_messages:
        raise _too_long("input", len(items), limits.max_messages, "max_messages")
    parts = 0
    for i, item in enumerate(items):
        if isinstance(item, dict):
            for field in ("content", "output"):
                parts = _count_parts(item.get(field), f"input.{i}.{field}", parts, limits)


def _count_parts(listed: Any, param: str, parts: int, limits: RequestLimitSettings) -> int:
    """`parts` plus the entries of `listed` when it is a list; a 400 past the cap."""
    if not isinstance(listed, list):
        return parts
    parts += len(listed)
    if parts > limits.max_content_parts:
        raise _too_long(param, parts, limits.max_content_parts, "max_content_parts")
    return parts


def _is_prompt(prompt: Any) -> bool:
    if isinstance(prompt, str):
        return True
    if not isinstance(prompt, list) or not prompt:
        return isinstance(prompt, list)
    first = prompt[0]
    kind = str if isinstance(first, str) else list if isinstance(first, list) else int
    if kind is list:
        return all(isinstance(p, list) and all(type(t) is int for t in p) for p in prompt)
    return all(type(p) is kind for p in prompt)


def parse_body(raw: bytes, route: str, limits: RequestLimitSettings | None = None) -> dict:
    """JSON-decode, bound and type-check; return the plain dict (the forwarded truth).

    What vLLM accepts passes: `model` may be absent (vLLM answers with its
    served model; proxy/routing/filters.py ServesModel routes such a request), and a
    completions body may carry `prompt_embeds` instead of `prompt` (vLLM with
    --enable-prompt-embeds; relayed uncompressed, its base64 left for vLLM to judge)."""
    limits = limits or RequestLimitSettings()
    data = parse_json(raw, limits)
    _check_common(data, limits)
    if route == "chat":
        _check_messages(data.get("messages"), limits)
    elif route == "messages":
        _check_anthropic(data, limits)  # counts only: vLLM's request model judges the shape
    elif route == "responses":
        _check_responses(data, limits)
    elif not _is_prompt(data.get("prompt")) and (
        data.get("prompt") is not None or data.get("prompt_embeds") is None  # null: absent
    ):
        raise _fail(
            "prompt", "a string, a list of strings or token ids is required (or prompt_embeds)"
        )
    return data


class RequestParser:
    """parse_body for the forwarder: in a worker thread above `offload_bytes` (the
    setting compression.limits.offload_bytes), where its Python-level checks let the
    event loop in between; on the loop below, where the thread hop costs more."""

    def __init__(self, limits: RequestLimitSettings, offload_bytes: int):
        self.limits = limits
        self.offload_bytes = offload_bytes

    async def parse(self, raw: bytes, route: str) -> dict[str, Any]:
        if len(raw) > self.offload_bytes:
            return await asyncio.to_thread(parse_body, raw, route, self.limits)
        return parse_body(raw, route, self.limits)
