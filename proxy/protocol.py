"""Request bodies: parse once, check the few fields ragtrim reads, keep everything else.

Unknown fields are never touched: vLLM's own (cache_salt, chat_template_kwargs,
stream_options, guided decoding, ...) pass through unchanged. The checks are plain
code rather than a pydantic model: on the hot path a model validation of the whole
message list cost more than the rest of the parse (and the proxy reads only these).
orjson parses ≈ 5× faster than the stdlib and bounds nesting depth (a body nested
100,000 deep is a 400, not a RecursionError). It reads an integer beyond 64 bits as a
float (10**20 became 1e+20 in rewritten bodies: issue 23), so a body with a run of 19
or more digits, the shortest such integer, is parsed again by the stdlib, whose ints
are exact; proxy/prompt/body.py writes them back exactly.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from proxy.errors import InvalidRequest

# Every digit to "0", then one substring search: same meaning as re.search(rb"\d{19}"), but
# ~2 ms on a 2 MB body where the regex took 60-100 ms on the event loop (issue 23).
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def _has_long_digit_run(raw: bytes) -> bool:
    return _LONG_RUN in raw.translate(_DIGITS_TO_ZERO)


def parse_json(raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from exc
    if _has_long_digit_run(raw):  # maybe an integer orjson made a float: exact ints
        try:
            data = json.loads(raw)
        except RecursionError as exc:  # valid JSON that orjson's depth limit let through
            raise InvalidRequest("request body is nested too deeply") from exc
    if not isinstance(data, dict):
        raise InvalidRequest("request body must be a JSON object")
    return data


def _fail(param: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{param}: {message}", param=param)


def _check_common(data: dict[str, Any]) -> None:
    if not isinstance(data.get("model"), str):
        raise _fail("model", "a string is required")
    if not isinstance(data.get("stream", False), bool):
        raise _fail("stream", "must be a boolean")
    options = data.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise _fail("stream_options", "must be an object")


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list):
        raise _fail("messages", "a list of messages is required")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _fail(f"messages.{i}", "must be an object")
        if not isinstance(message.get("role"), str):
            raise _fail(f"messages.{i}.role", "a string is required")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise _fail(f"messages.{i}.content", "must be a string or a list of parts")
        if isinstance(content, list) and not all(isinstance(p, dict) for p in content):
            raise _fail(f"messages.{i}.content", "every part must be an object")


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


def parse_body(raw: bytes, route: str) -> dict[str, Any]:
    """JSON-decode and type-check; return the plain dict (the forwarded truth)."""
    data = parse_json(raw)
    _check_common(data)
    if route == "chat":
        _check_messages(data.get("messages"))
    elif not _is_prompt(data.get("prompt")):
        raise _fail("prompt", "a string, a list of strings or token ids is required")
    return data
