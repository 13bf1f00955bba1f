"""Reading vLLM's own account of a request: usage and cached tokens.

ragtrim asks for usage on every streamed request (`stream_options.include_usage`);
`ChatUsage` reads the stream's events (one parser per stream: proxy/response/events.py)
for the final usage chunk (`choices: []`) and, when the client had not asked for it,
removes that chunk so the client sees exactly the stream it asked for. Whole events
pass through unchanged, as soon as they end.

vLLM stamps `system_fingerprint` on the terminal chunks (those with a finish_reason)
only when usage is off; with usage on it moves it to the usage chunk (vLLM 0.32,
chat_completion/serving.py). So when `ChatUsage` strips a usage chunk ragtrim added, it
holds the terminal chunks until that chunk and gives them its fingerprint: the client
sees the stream vLLM would have sent it. With
several choices (n > 1, or a list of prompts) the chunks that follow the first terminal
one are held with it, in order, so the later choices' last tokens reach such a client
with the usage chunk's arrival (the end of the generation), not before.

A backend's usage is data from the network: `sane_usage` keeps it only when every
count is a non-negative integer. Anything else (`"prompt_tokens": "lots"`, a list) is
ignored and counted (`bad`): never an exception after a good completion.

The Responses API names its usage differently and sends it in its final
event (`response.completed`), unasked: `responses_usage` renames it to chat's names, and
`ResponsesUsage` reads it from the stream without changing a byte.

A non-streamed body is read as chunks (proxy/upstream/exchange.py) and never joined:
`usage_from_chunks` finds the last `"usage":` key and decodes only what follows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from proxy.response.sse import event_data

_EMPTY_CHOICES = (b'"choices":[]', b'"choices": []')
_FINISHED = re.compile(rb'"finish_reason"\s*:\s*"')
_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")
_USAGE_KEY = re.compile(rb'(?<!\\)"usage"\s*:\s*')
_USAGE_WINDOW = 64 << 10  # a usage object is a few hundred bytes; decode at most this
_DECODER = json.JSONDecoder()


def _count(value: Any) -> bool:
    return value is None or (type(value) is int and value >= 0)


def sane_usage(usage: Any) -> dict[str, Any] | None:
    """`usage` if every count in it is a non-negative int (or absent), else None."""
    if not isinstance(usage, dict) or not all(_count(usage.get(k)) for k in _COUNTS):
        return None
    details = usage.get("prompt_tokens_details")
    if details is not None and not (
        isinstance(details, dict) and _count(details.get("cached_tokens"))
    ):
        return None
    return usage


def cached_tokens(usage: dict[str, Any] | None) -> int:
    details = (usage or {}).get("prompt_tokens_details") or {}
    return int(details.get("cached_tokens") or 0)


def reported_cached_tokens(usage: dict[str, Any] | None) -> int | None:
    """`cached_tokens` when vLLM reported it (--enable-prompt-tokens-details), else None:
    an absent figure must not read as "nothing was cached" (the record of forwarded
    prompts, cache/forwarded.py, would shorten its horizons)."""
    details = (usage or {}).get("prompt_tokens_details")
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return int(value) if isinstance(value, int | float) and value >= 0 else None


def usage_from_chunks(chunks: Sequence[bytes]) -> tuple[Any, bool]:
    """(the raw `usage` value of a JSON body, whether the key was there), decoding only
    a window after the last `"usage":` key; chunks are scanned from the end, and no
    more than one chunk plus the window is ever copied."""
    for i in range(len(chunks) - 1, -1, -1):
        head = len(chunks[i])
        probe = chunks[i] + chunks[i + 1][:8] if i + 1 < len(chunks) else chunks[i]
        if b'"usage"' not in probe:
            continue
        window, j = chunks[i], i + 1
        while j < len(chunks) and len(window) < head + _USAGE_WINDOW:
            window += chunks[j][: head + _USAGE_WINDOW - len(window)]
            j += 1
        starts = [m for m in _USAGE_KEY.finditer(window) if m.start() < head]
        if not starts:
            continue
        text = window[starts[-1].end() :].decode("utf-8", "replace")
        try:
            return _DECODER.raw_decode(text)[0], True
        except ValueError:
            return None, True
    return None, False


class ChatUsage:
    """The chat/completions usage chunk (`choices: []`), read and, when `strip` (ragtrim
    asked for it, the client did not), removed: an `EventStream` rewriter
    (proxy/response/events.py). Terminal chunks are held until the usage chunk, which
    brings them their `system_fingerprint`."""

    def __init__(self, strip: bool):
        self.strip = strip
        self.usage: dict[str, Any] | None = None
        self.bad = 0  # usage chunks whose counts were not integers
        self._held: list[bytes] = []  # terminal chunks awaiting the usage chunk
        self._fingerprint: Any = None  # the stripped usage chunk's system_fingerprint

    def wants(self, chunk: bytes) -> bool:
        return (
            bool(self._held) or b'"usage"' in chunk or bool(self.strip and _FINISHED.search(chunk))
        )

    def flush(self) -> bytes:
        held, self._held = b"".join(self._held), []
        return held

    def rewrite(self, event: bytes) -> bytes:
        """What to send now for one event: terminal chunks are held while a usage chunk
        may still bring their fingerprint."""
        if self._is_usage_event(event):
            return self._release()
        if self.strip and (self._held or _FINISHED.search(event)):
            self._held.append(event)  # after a held one, in order (n > 1: other choices)
            return b""
        return self._release() + event

    def _release(self) -> bytes:
        held, self._held = self._held, []
        if self._fingerprint is not None:
            stamp = b',"system_fingerprint":' + json.dumps(self._fingerprint).encode()
            held = [_stamped(e, stamp) if _FINISHED.search(e) else e for e in held]
        return b"".join(held)

    def _is_usage_event(self, event: bytes) -> bool:
        """The usage chunk ragtrim asked for (stripped when the client did not); its
        counts are recorded only when sane."""
        if b'"usage"' not in event or not any(m in event for m in _EMPTY_CHOICES):
            return False
        try:
            data = json.loads(event_data(event))
        except ValueError:
            return False
        if not isinstance(data, dict) or "usage" not in data or data.get("choices") != []:
            return False
        if self.strip:
            self._fingerprint = data.get("system_fingerprint")
        self.usage = sane_usage(data["usage"])
        self.bad += self.usage is None and data["usage"] is not None
        return self.strip


def _stamped(event: bytes, stamp: bytes) -> bytes:
    """`event` with `stamp` as the last member of its JSON object (unless it has one)."""
    end = event.rfind(b"}")
    if end < 0 or b'"system_fingerprint"' in event:
        return event
    return event[:end] + stamp + event[end:]


_FINAL = (b'"response.completed"', b'"response.incomplete"')
_ANTHROPIC_CACHE = ("cache_read_input_tokens", "cache_creation_input_tokens")


def responses_usage(usage: Any) -> dict[str, Any] | None:
    """A Responses API usage (input_tokens, output_tokens, input_tokens_details.
    cached_tokens) in chat's names, so feedback, the gate and the prefix record read one
    shape; None when a count is not a non-negative integer (as sane_usage)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("input_tokens_details")
    if details is not None and not isinstance(details, dict):
        return None
    chat: dict[str, Any] = {
        "prompt_tokens": usage.get("input_tokens"),
        "completion_tokens": usage.get("output_tokens"),
        "total_tokens": usage.get("total_tokens"),
    }
    if details is not None:
        chat["prompt_tokens_details"] = {"cached_tokens": details.get("cached_tokens")}
    return sane_usage(chat)


class ResponsesUsage:
    """Usage from a Responses stream's final event (`response.completed`, or
    `response.incomplete`: the whole response, usage in it): an `EventStream` observer
    (proxy/response/events.py); ragtrim never asks for usage here, so nothing is
    stripped. An event too long to hold is not read (no usage), never an error."""

    final = _FINAL  # what marks the event that carries the usage

    def __init__(self) -> None:
        self.usage: dict[str, Any] | None = None
        self.bad = 0

    def wants(self, chunk: bytes) -> bool:
        return any(m in chunk for m in self.final)

    def event(self, event: bytes) -> None:
        if not any(m in event for m in self.final):
            return
        try:
            data = json.loads(event_data(event))
        except ValueError:
            return
        raw = self._raw(data) if isinstance(data, dict) else None
        if raw is not None:
            self.usage = self._renamed(raw)
            self.bad += self.usage is None

    def _raw(self, data: dict[str, Any]) -> Any:
        response = data.get("response")
        return response.get("usage") if isinstance(response, dict) else None

    def _renamed(self, raw: Any) -> dict[str, Any] | None:
        return responses_usage(raw)


class MessagesUsage(ResponsesUsage):
    """The Messages API's: vLLM puts the whole usage on the last `message_delta` event
    (the `message_start` one has no output yet), in Anthropic's names."""

    final = (b'"message_delta"',)

    def _raw(self, data: dict[str, Any]) -> Any:
        return data.get("usage") if data.get("type") == "message_delta" else None

    def _renamed(self, raw: Any) -> dict[str, Any] | None:
        return messages_usage(raw)


def messages_usage(usage: Any) -> dict[str, Any] | None:
    """Anthropic usage in chat's names. Its input_tokens leave out the cached ones
    (vLLM: input_tokens = prompt_tokens - cache_read - cache_creation), so the prompt
    is their sum; the cached tokens are cache_read_input_tokens."""
    if not isinstance(usage, dict):
        return None
    parts = [usage.get(k) for k in ("input_tokens", *_ANTHROPIC_CACHE)]
    if not all(_count(p) for p in parts):
        return None
    prompt = sum(p or 0 for p in parts) if parts[0] is not None else None
    chat: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": usage.get("output_tokens"),
    }
    if usage.get("cache_read_input_tokens") is not None:
        chat["prompt_tokens_details"] = {"cached_tokens": usage["cache_read_input_tokens"]}
    return sane_usage(chat)
