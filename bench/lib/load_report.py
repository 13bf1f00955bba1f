"""bench.load's figures: which levels each path holds, the headline ratios, and the gold
retention of what ragtrim sent."""

from __future__ import annotations

import math
import statistics

import httpx

from bench.lib.load_workload import messages
from bench.lib.squad import answer_retained
from proxy.prompt.segment import Segmenter

ERROR_LEVELS_UP_TO = 1.5  # "errors: 0 at every level up to 1.5x direct's capacity"


def held(levels: list[dict], path: str) -> float:
    """The highest multiple this path holds with every lower level held too (0: none)."""
    best = 0.0
    for level in sorted(levels, key=lambda lv: lv["multiple"]):
        if not level[path]["meets_slo"]:
            break
        best = level["multiple"]
    return best


def crossing(levels: list[dict], path: str, slo_ms: float) -> float:
    """Where p90 reaches the SLO between the last held level and the next (p90 log-linear
    in the load between them): a finer capacity than the levels' grid."""
    ordered = sorted(levels, key=lambda lv: lv["multiple"])
    best = held(levels, path)
    later = [lv for lv in ordered if lv["multiple"] > best]
    if not best or not later or later[0][path]["errors"]:
        return best
    lo = next(lv for lv in ordered if lv["multiple"] == best)
    p_lo, p_hi = lo[path]["ttft_p90_ms"], later[0][path]["ttft_p90_ms"]
    if not 0 < p_lo < slo_ms < p_hi:
        return best
    share = (math.log(slo_ms) - math.log(p_lo)) / (math.log(p_hi) - math.log(p_lo))
    return round(best + share * (later[0]["multiple"] - best), 3)


def _at(levels: list[dict], multiple: float) -> dict | None:
    return next((lv for lv in levels if lv["multiple"] == multiple), None)


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b and a == a and b == b else None


def headline(levels: list[dict], slo_ms: float) -> dict:
    direct, ours = held(levels, "direct"), held(levels, "ragtrim")
    at08, low = _at(levels, 0.8), min(levels, key=lambda lv: lv["multiple"])
    return {
        "held_direct": direct,
        "held_ragtrim": ours,
        "capacity_ratio": _ratio(ours, direct),
        "capacity_ratio_interpolated": _ratio(
            crossing(levels, "ragtrim", slo_ms), crossing(levels, "direct", slo_ms)
        ),  # fmt: skip
        "p90_ratio_at_0.8": _ratio(at08["ragtrim"]["ttft_p90_ms"], at08["direct"]["ttft_p90_ms"])
        if at08
        else None,
        "idle_p50_ratio": _ratio(low["ragtrim"]["ttft_p50_ms"], low["direct"]["ttft_p50_ms"]),
        "errors": sum(
            lv[p]["errors"]
            for lv in levels
            for p in ("direct", "ragtrim")
            if lv["multiple"] <= ERROR_LEVELS_UP_TO
        ),  # fmt: skip
        "gold_retention": round(
            statistics.mean(lv["ragtrim"]["gold_retention"] for lv in levels), 4
        ),
    }


def gold_retention(proxy: str, arrivals, rows, rate: float) -> float:
    """Share of ragtrim's requests whose sent context kept a gold answer: the memo's texts
    (a hit: exactly the bytes sent) when it compressed, the original context otherwise."""
    kept, segmenter, seen = [], Segmenter(), {}
    with httpx.Client(timeout=60) as client:
        for arrival, row in zip(arrivals, rows, strict=True):
            if not (
                row.decision.startswith("compress") and "x-ragtrim-tokens-after" in row.headers
            ):
                kept.append(
                    answer_retained("\n\n".join(arrival.case.documents), arrival.case.answers)
                )
                continue
            key = (arrival.case.documents, arrival.case.question, arrival.template)
            if key not in seen:
                seg = segmenter.chat(messages(arrival))
                if seg is None:
                    kept.append(False)
                    continue
                docs = [slot.text for slot in seg.documents]
                resp = client.post(f"{proxy}/v1/compress", json={
                    "documents": docs, "question": seg.question, "rate": rate})  # fmt: skip
                resp.raise_for_status()
                texts = [d["text"] for d in resp.json()["documents"]]
                seen[key] = answer_retained("\n\n".join(texts), arrival.case.answers)
            kept.append(seen[key])
    return round(sum(kept) / len(kept), 4) if kept else float("nan")


def summarize(by_backend: dict, compress_capacity, args, levels, slo_factor: float,
              wall_s: float) -> dict:  # fmt: skip
    heads = {name: headline(b["levels"], b["slo_p90_ms"]) for name, b in by_backend.items()}
    return {
        "capacity_ratio": {n: h["capacity_ratio"] for n, h in heads.items()},
        "p90_ratio_at_0.8": {n: h["p90_ratio_at_0.8"] for n, h in heads.items()},
        "idle_p50_ratio": {n: h["idle_p50_ratio"] for n, h in heads.items()},
        "errors": {n: h["errors"] for n, h in heads.items()},
        "gold_retention": round(statistics.mean(h["gold_retention"] for h in heads.values()), 4),
        "compress_capacity": compress_capacity,
        "held": {
            n: {"direct": h["held_direct"], "ragtrim": h["held_ragtrim"]} for n, h in heads.items()
        },  # fmt: skip
        "capacity_ratio_interpolated": {
            n: h["capacity_ratio_interpolated"] for n, h in heads.items()
        },
        "backends": by_backend,
        "compressor": args.compressor,
        "rate": args.rate,
        "levels": list(levels),
        "slo": f"p90 TTFT <= {slo_factor:g} x direct's unloaded p50 (sequential requests), "
        "no failed request",
        "definitions": {
            "capacity_ratio": "highest offered multiple of direct's capacity ragtrim holds "
            "within the SLO (every lower level held too) / the same for direct",
            "capacity_ratio_interpolated": "the same with each path's capacity where its p90 "
            "crosses the SLO, log-linear between the last held level and the next",
            "p90_ratio_at_0.8": "ragtrim p90 TTFT / direct p90 at 0.8 x direct's capacity",
            "idle_p50_ratio": "ragtrim p50 / direct p50 at the lowest level",
            "errors": f"failed requests, both paths, at levels <= {ERROR_LEVELS_UP_TO} x",
            "goodput_rps": "requests/s whose TTFT met the SLO target",
        },
        "wall_s": round(wall_s, 1),
    }
