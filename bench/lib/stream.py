"""One streamed chat request, timed: TTFT = first chunk carrying content."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import httpx


@dataclass
class Timing:
    ttft_ms: float
    total_ms: float
    text: str
    usage: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)


def stream_chat(client: httpx.Client, base_url: str, body: dict, headers=None) -> Timing:
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    start = time.perf_counter()
    ttft, parts, usage = None, [], {}
    with client.stream(
        "POST", f"{base_url}/v1/chat/completions", json=body, headers=headers or {}
    ) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"{resp.status_code}: {resp.read()[:300]!r}")
        for line in resp.iter_lines():
            if not line.startswith("data: {"):
                continue
            event = json.loads(line[6:])
            usage = event.get("usage") or usage
            for choice in event.get("choices", []):
                content = choice.get("delta", {}).get("content")
                if content:
                    ttft = ttft if ttft is not None else time.perf_counter()
                    parts.append(content)
        resp_headers = dict(resp.headers)
    end = time.perf_counter()
    first = ttft if ttft is not None else end
    return Timing((first - start) * 1000, (end - start) * 1000, "".join(parts), usage, resp_headers)
