"""Per-backend series read from the pool at scrape time (Metrics.watch_pool)."""

from __future__ import annotations

from proxy.backends.endpoint import EndpointPool
from proxy.metrics import Metrics


def lines(metrics: Metrics, name: str) -> list[str]:
    return [ln for ln in metrics.render().decode().splitlines() if ln.startswith(name + "{")]


def test_each_backends_learned_prefill_law_is_exported_once_measured():
    pool, metrics = EndpointPool.from_urls(["http://fast:8000", "http://new:8000"]), Metrics()
    metrics.watch_pool(pool)
    fast = pool.get("http://fast:8000")
    for tokens in (200, 400, 800, 1600):
        fast.prefill.add(ms=0.05 * tokens, tokens=tokens)
    (line,) = lines(metrics, "ragtrim_backend_prefill_ms_per_token")
    assert 'backend="http://fast:8000"' in line and float(line.rsplit(" ", 1)[1]) == 0.05
