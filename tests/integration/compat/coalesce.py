"""A stream read independently of how vLLM cut it into events.

vLLM sends the tokens that are ready when its API server gets to the request: on a busy
machine two tokens come in one chunk (`'handlehandle'`), or the finish_reason rides on
the last token's chunk, and the same request cut differently twice to vLLM itself. So a
run of consecutive delta events of one kind (one choice's chunks; Responses'
`*.delta`; Messages' `content_block_delta`) is merged into one: texts and lists joined,
any other field the last non-null value. Every other event, and the order of the runs,
stay as they were."""

from __future__ import annotations

from typing import Any

# what a delta carries in pieces: joined when two deltas are merged
JOINED = frozenset(
    {"content", "text", "delta", "partial_json", "arguments", "reasoning", "tokens",
     "token_logprobs", "top_logprobs", "text_offset", "token_ids", "logprobs"}
)  # fmt: skip
DELTA_EVENTS = ("response.output_text.delta", "content_block_delta")


def coalesced(stream: list[list[Any]]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for name, data in stream:
        if out and _run(out[-1], [name, data]):
            out[-1] = [name, merged(out[-1][1], data)]
        else:
            out.append([name, data])
    return out


def _run(a: list[Any], b: list[Any]) -> bool:
    """Whether event b continues a's run of deltas."""
    if a[0] != b[0] or not isinstance(a[1], dict) or not isinstance(b[1], dict):
        return False
    if a[0].endswith(DELTA_EVENTS):
        return all(a[1].get(k) == b[1].get(k) for k in ("index", "output_index"))
    first, second = a[1].get("choices"), b[1].get("choices")
    return (
        isinstance(first, list) and isinstance(second, list) and len(first) == len(second) == 1
        and first[0].get("index") == second[0].get("index")
    )  # fmt: skip


def merged(a: Any, b: Any, key: str = "") -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: merged(a.get(k), b.get(k), k) for k in [*a, *(k for k in b if k not in a)]}
    if isinstance(a, list) and isinstance(b, list):
        if key in JOINED:
            return a + b
        return [merged(x, y) for x, y in zip(a, b, strict=False)] + a[len(b) :] + b[len(a) :]
    if isinstance(a, str) and isinstance(b, str) and key in JOINED:
        return a + b
    return a if b is None else b
