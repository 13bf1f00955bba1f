"""What two answers to the same request may differ in: ids, timestamps and the
prefix-cache state (blanked), and where ragtrim compressed, the prompt-dependent fields.

An answer is read as [status, media type, payload]: the payload is the parsed JSON body,
or for a stream the list of its server-sent events, each [event name, parsed data],
grouped by choice when there are several and read independently of how vLLM cut the
tokens into events (coalesce.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.integration.compat.coalesce import coalesced

# random or clock-made in every answer; cached_tokens is the prefix cache's state: the
# second of two equal requests finds the first one's blocks, whichever way it went;
# sequence_number counts a Responses stream's events, so it follows vLLM's chunking
VOLATILE = frozenset(
    {"id", "created", "created_at", "completed_at", "item_id", "response_id", "call_id",
     "request_id", "sequence_number", "cached_tokens", "cached_tokens_per_turn",
     "cache_write_tokens", "created_cache_tokens", "cache_read_input_tokens",
     "cache_creation_input_tokens"}
)  # fmt: skip
# what a compressed prompt changes: its length, and the text the model wrote after it
PROMPT_DEPENDENT = frozenset(
    {"prompt_tokens", "total_tokens", "input_tokens", "content", "text", "delta", "logprobs",
     "token_ids", "prompt_token_ids", "prompt_logprobs", "output_text"}
)  # fmt: skip
BLANK = "<blank>"


def blank(value: Any, keys: frozenset[str] = VOLATILE) -> Any:
    """`value` with every field named in `keys` replaced by BLANK, at any depth."""
    if isinstance(value, dict):
        return {k: BLANK if k in keys else blank(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [blank(v, keys) for v in value]
    return value


def events(text: str) -> list[list[Any]]:
    """A stream's server-sent events: [event name, data parsed as JSON when it is]."""
    out = []
    for raw in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in raw.split("\n"):
            field, _, rest = line.partition(":")
            rest = rest.removeprefix(" ")
            if field == "event":
                name = rest
            elif field == "data":
                data.append(rest)
        if data:
            out.append([name, _parsed("\n".join(data))])
    return out


def by_choice(stream: list[list[Any]]) -> Any:
    """A stream of several choices as each choice's own events, in order, and the rest:
    vLLM interleaves the choices of n > 1 or of a list of prompts as their tokens come
    (it merges one generator a choice), so their interleaving differs between two
    identical requests to vLLM itself. One choice: the stream as it is."""
    indexes = {_choice(data) for _, data in stream} - {None}
    if len(indexes) < 2:
        return stream
    choices: dict[int, list] = {i: [] for i in sorted(indexes)}
    rest = []
    for name, data in stream:
        index = _choice(data)
        (rest if index is None else choices[index]).append([name, data])
    return {"choices": choices, "rest": rest}


def _choice(data: Any) -> int | None:
    choices = data.get("choices") if isinstance(data, dict) else None
    if isinstance(choices, list) and len(choices) == 1 and isinstance(choices[0], dict):
        return choices[0].get("index")
    return None


def _parsed(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data


def answer(resp: httpx.Response, keys: frozenset[str] = VOLATILE) -> list[Any]:
    """[status, media type, payload with `keys` blanked]."""
    media = resp.headers.get("content-type", "").split(";")[0].strip()
    if media == "text/event-stream":
        payload: Any = by_choice(events(resp.text))
        if isinstance(payload, dict):
            payload["choices"] = {i: coalesced(run) for i, run in payload["choices"].items()}
        else:
            payload = coalesced(payload)
    else:
        payload = _parsed(resp.text)
    return [resp.status_code, media, blank(payload, keys)]


def first_difference(a: Any, b: Any, at: str = "") -> str | None:
    """Where two payloads first differ (a JSON path and both values), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            found = first_difference(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{at}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{at}[{i}]")
            if found:
                return found
        return None if len(a) == len(b) else f"{at}: {len(a)} items against {len(b)}"
    return None if a == b else f"{at}: {a!r} against {b!r}"
