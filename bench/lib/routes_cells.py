"""bench.routes_ttft's runs: each case on every route (chat, responses, messages), each
route direct to vLLM and then through ragtrim, side by side in one run.

One ragtrim serves the three routes, each as its own tenant (an API key per route): the
tenant is part of the chunk memo's key and of the cache_salt ragtrim sends, so no route
finds another route's compressed documents or prefix cache; every request through
ragtrim is compressed on the request path (cold), as bench.ttft's cold path. Direct
requests send a salt per route. The route order turns with each case, so no route is
always the first to meet a case.

Gold retention is of what ragtrim sent, as in bench.ttft: when a request was compressed,
the documents and question its route's adapter finds (bench.lib.route_bodies) are sent
to POST /v1/compress with the route's key; they are in that tenant's memo, so the texts
read back are the texts sent (`readback_hits` counts the requests whose every document
was a memo hit); uncompressed, the original documents.
"""

from __future__ import annotations

import json

import httpx

from bench.lib.route_bodies import ROUTES, body, segmentation
from bench.lib.route_stream import stream_route
from bench.lib.squad import answer_retained
from bench.lib.stream import Timing

SALT_SECRET = "bench-routes-ttft-salt-secret"
KEYS = {route: f"bench-routes-{route}-key" for route in ROUTES}
OFF = {"x-ragtrim-compress": "off"}


def tenancy_env() -> dict[str, str]:
    """ragtrim settings: one API key (and so one tenant) per route."""
    return {
        "RAGTRIM_TENANCY__API_KEYS": json.dumps({key: route for route, key in KEYS.items()}),
        "RAGTRIM_TENANCY__SALT_SECRET": SALT_SECRET,
    }


def auth(route: str, extra: dict | None = None) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[route]}", **(extra or {})}


def send(client: httpx.Client, urls: dict, route: str, path: str, case, model: str,
         headers: dict | None = None) -> Timing:  # fmt: skip
    """`case` on `route`, on `path` ("direct" or "ragtrim")."""
    request = body(route, case, f"bench-routes-{route}-{path}", model)
    if path == "direct":
        return stream_route(client, urls["direct"], route, request, headers)
    return stream_route(client, urls["ragtrim"], route, request, auth(route, headers))


def prime(client: httpx.Client, urls: dict, cases: list, model: str) -> None:
    """Uncompressed requests on every route and path: vLLM caches the system prompt
    under each salt, the cost gate learns this backend's prefill."""
    for case in cases:
        for route in ROUTES:
            send(client, urls, route, "direct", case, model)
            send(client, urls, route, "ragtrim", case, model, OFF)


def readback(client: httpx.Client, proxy: str, route: str, request: dict, timing: Timing,
             rate: float) -> tuple[bool, list[str], bool]:  # fmt: skip
    """(was it compressed, the document texts ragtrim sent, were they all memo hits)."""
    seg = segmentation(route, request)
    docs = [slot.text for slot in seg.documents] if seg is not None else []
    compressed = timing.headers.get("x-ragtrim-decision", "").startswith("compress") and (
        "x-ragtrim-tokens-after" in timing.headers
    )
    if not compressed or not docs:
        return False, docs, False
    ask = {"documents": docs, "question": seg.question, "rate": rate}
    resp = client.post(f"{proxy}/v1/compress", json=ask, headers=auth(route), timeout=300)
    resp.raise_for_status()
    answer = resp.json()
    return True, [d["text"] for d in answer["documents"]], answer["cache_hits"] == len(docs)


def row(client, urls: dict, route: str, case, pair: list[Timing], rate: float,
        model: str) -> dict:  # fmt: skip
    """One case on one route: its two timings and what ragtrim sent."""
    direct, through = pair
    request = body(route, case, f"bench-routes-{route}-ragtrim", model)
    compressed, texts, hit = readback(client, urls["ragtrim"], route, request, through, rate)
    return {
        "case_id": case.case_id,
        "direct_ttft_ms": round(direct.ttft_ms, 1),
        "ragtrim_ttft_ms": round(through.ttft_ms, 1),
        "ttft_ratio": round(through.ttft_ms / direct.ttft_ms, 3),
        "direct_prompt_tokens": direct.usage.get("prompt_tokens"),
        "ragtrim_prompt_tokens": through.usage.get("prompt_tokens"),
        "decision": through.headers.get("x-ragtrim-decision", "").split("(")[0],
        "compress_ms": _float(through.headers.get("x-ragtrim-compress-ms")),
        "compressed": compressed,
        "readback_hit": hit,
        "gold_retained": answer_retained("\n\n".join(texts), case.answers),
        "answer_direct": answer_retained(direct.text, case.answers),
        "answer_ragtrim": answer_retained(through.text, case.answers),
    }


def _float(value: str | None) -> float | None:
    return float(value) if value is not None else None


def run_case(client, urls: dict, case, turn: int, rate: float, model: str) -> dict:
    """`case` on every route (the order turned by `turn`), direct then through ragtrim;
    route -> its row."""
    order = ROUTES[turn % len(ROUTES) :] + ROUTES[: turn % len(ROUTES)]
    pairs = {}
    for route in order:  # direct first, as bench.ttft
        pairs[route] = [send(client, urls, route, p, case, model) for p in ("direct", "ragtrim")]
    return {route: row(client, urls, route, case, pairs[route], rate, model) for route in ROUTES}


def run_all(urls: dict, cases_by_bucket: dict, priming: list, rate: float, model: str) -> list:
    """Every case on every route: a list of {route: row} with the case's bucket."""
    out = []
    with httpx.Client(timeout=600) as client:
        prime(client, urls, priming, model)
        for bucket, cases in cases_by_bucket.items():
            for case in cases:
                rows = run_case(client, urls, case, len(out), rate, model)
                out.append({"context_tokens": list(bucket), **rows})
                print(f"  {bucket} {case.case_id}: " + ", ".join(
                    f"{r} x{rows[r]['ttft_ratio']}" for r in ROUTES))  # fmt: skip
    return out
