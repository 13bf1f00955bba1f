"""One cell of bench.path_cost: requests sent direct, through a ragtrim and (optionally)
through the compression-off floor, paired, with ragtrim's CPU and stage time over the cell."""

from __future__ import annotations

import re
import statistics
import time

import httpx

from bench.lib.common import percentile
from bench.lib.procs import cpu_ms

PATH = "/v1/chat/completions"
OFF = {"x-ragtrim-compress": "off"}
_STAGE = re.compile(r'^ragtrim_stage_seconds_sum\{stage="(\w+)"\} (\S+)$', re.M)


def stage_sums(client: httpx.Client, url: str) -> dict[str, float]:
    return {k: float(v) for k, v in _STAGE.findall(client.get(f"{url}/metrics").text)}


def timed(client: httpx.Client, url: str, body: dict, headers: dict | None = None):
    start = time.perf_counter()
    resp = client.post(url + PATH, json=body, headers=headers or {})
    resp.raise_for_status()
    return (time.perf_counter() - start) * 1000, resp


def uncached(resp: httpx.Response) -> int:
    """Prompt tokens the backend prefilled (not served from its prefix cache)."""
    usage = resp.json()["usage"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return usage["prompt_tokens"] - cached


class Cell:
    """Paired latencies of one cell, ragtrim's CPU and stage time over it. The stage sums
    are read once around the cell (a /metrics render between requests cost more than a
    request and made the figures swing); the floor goes through its own ragtrim, so the
    stage time is the measured requests' alone."""

    def __init__(self, client: httpx.Client, urls: dict, pid: int, proxy: str = "ragtrim"):
        self.client, self.urls, self.pid, self.proxy = client, urls, pid, proxy
        self.rows: list[dict] = []
        self.stage_ms: dict[str, float] = {}
        # each cell's prompts apart in the backend's cache: direct, ragtrim, the floor
        self.salts = {"direct": f"d-{proxy}", proxy: f"r-{proxy}", "floor": f"f-{proxy}"}

    def __enter__(self):
        self.stages = stage_sums(self.client, self.urls[self.proxy])
        self.cpu = cpu_ms(self.pid)
        return self

    def __exit__(self, *exc):
        n = max(1, len(self.rows))
        self.cpu = (cpu_ms(self.pid) - self.cpu) / n
        after = stage_sums(self.client, self.urls[self.proxy])
        self.stage_ms = {k: round((v - self.stages.get(k, 0)) * 1000 / n, 3)
                         for k, v in after.items()}  # fmt: skip

    def send(self, body: dict, floor: bool) -> None:
        """One request direct, then through ragtrim, then, with `floor`, through the floor
        ragtrim (same settings) with compression off."""
        direct, resp = self.post("direct", body)
        ours, mine = self.post(self.proxy, body)
        row = {"direct": direct, "ours": ours, "prompt": resp.json()["usage"]["prompt_tokens"],
               "decision": mine.headers.get("x-ragtrim-decision", "").split("(")[0],
               "uncached": (uncached(resp), uncached(mine))}  # fmt: skip
        if floor:
            row["floor"] = self.post("floor", body, OFF)[0]
        self.rows.append(row)

    def post(self, path: str, body: dict, headers: dict | None = None):
        """`body` to `path` ("direct", the cell's ragtrim, "floor") under its salt."""
        salted = {**body, "cache_salt": self.salts[path]}
        return timed(self.client, self.urls[path], salted, headers)

    def summary(self) -> dict:
        added = [r["ours"] - r["direct"] for r in self.rows]
        out = {"n": len(self.rows), "added_ms_p50": round(statistics.median(added), 3),
               "added_ms_p99": round(percentile(added, 99), 3),
               "direct_ms_p50": round(statistics.median(r["direct"] for r in self.rows), 3),
               "prompt_tokens_mean": round(statistics.mean(r["prompt"] for r in self.rows)),
               "cpu_ms_per_row": round(self.cpu, 3),
               "stage_ms_per_request": self.stage_ms}  # fmt: skip
        if "floor" in self.rows[0]:
            over = [r["ours"] - r["floor"] for r in self.rows]
            out["floor_added_ms_p50"] = round(statistics.median(
                r["floor"] - r["direct"] for r in self.rows), 3)  # fmt: skip
            out["over_floor_ms_p50"] = round(statistics.median(over), 3)
        out["uncached_tokens_p50"] = {  # what the backend prefilled: a grown form's tail
            path: statistics.median(r["uncached"][i] for r in self.rows)
            for i, path in enumerate(("direct", "ragtrim"))
        }
        decisions = [r["decision"] for r in self.rows]
        out["decisions"] = {d: decisions.count(d) for d in sorted(set(decisions))}
        return out
