"""One streamed request on any generation route, timed as bench.lib.stream times chat:
TTFT = the first event that carries output text; usage in chat's names.

    chat       delta.content of a chunk; usage on the last chunk (include_usage asked)
    responses  `response.output_text.delta` events' `delta`; usage from
               `response.completed` (`response.usage`), sent unasked
    messages   `content_block_delta` events whose delta is a `text_delta`; usage from
               the last `message_delta` (vLLM puts the whole usage there), sent unasked

Usage is renamed by ragtrim's own readers (proxy/response/usage_tap.py), so prompt_tokens means on
every route what it means on chat (Messages: input + cache read + cache creation).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

import httpx

from bench.lib.route_bodies import PATHS
from bench.lib.stream import Timing, stream_chat
from proxy.response.usage_tap import messages_usage, responses_usage


def event_text(route: str, event: dict) -> str:
    """The output text an event of `route` carries ('' when none)."""
    kind = event.get("type")
    if route == "responses" and kind == "response.output_text.delta":
        return event.get("delta") or ""
    if route == "messages" and kind == "content_block_delta":
        delta = event.get("delta") or {}
        return (delta.get("text") or "") if delta.get("type") == "text_delta" else ""
    return ""


def event_usage(route: str, event: dict) -> dict | None:
    """The usage an event of `route` reports, in chat's names (None when it has none)."""
    kind = event.get("type")
    if route == "responses" and kind in ("response.completed", "response.incomplete"):
        return responses_usage((event.get("response") or {}).get("usage"))
    if route == "messages" and kind == "message_delta":
        return messages_usage(event.get("usage"))
    return None


def read_events(route: str, lines: Iterable[str]) -> tuple[float | None, str, dict]:
    """(the perf_counter time of the first text, the text, the usage) from SSE lines."""
    first, parts, usage = None, [], {}
    for line in lines:
        if not line.startswith("data: {"):
            continue  # `event:` lines name what the data's own `type` says
        event = json.loads(line[6:])
        text = event_text(route, event)
        if text:
            first = first if first is not None else time.perf_counter()
            parts.append(text)
        usage = event_usage(route, event) or usage
    return first, "".join(parts), usage


def stream_route(client: httpx.Client, base_url: str, route: str, body: dict,
                 headers: dict | None = None) -> Timing:  # fmt: skip
    """Stream `body` to `route` at `base_url`; raise on a non-200 answer."""
    if route == "chat":
        return stream_chat(client, base_url, body, headers)
    start = time.perf_counter()
    request = {**body, "stream": True}
    with client.stream("POST", f"{base_url}{PATHS[route]}", json=request,
                       headers=headers or {}) as resp:  # fmt: skip
        if resp.status_code != 200:
            raise RuntimeError(f"{route} {resp.status_code}: {resp.read()[:300]!r}")
        first, text, usage = read_events(route, resp.iter_lines())
        resp_headers = dict(resp.headers)
    end = time.perf_counter()
    ttft = (first if first is not None else end) - start
    return Timing(ttft * 1000, (end - start) * 1000, text, usage, resp_headers)
