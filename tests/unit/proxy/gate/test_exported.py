"""The gate's job-cost laws in /metrics (proxy/gate/exported.py, issue 43): what it
believes a compression costs, and a stale belief seen to correct itself while every
request skips for cost."""

import asyncio

from proxy.compression.recalibration import Recalibration
from proxy.gate.exported import GateLawCollector
from proxy.metrics import Metrics
from tests.support.jobs import job
from tests.unit.proxy.compression.test_recalibration import (
    Clock,
    Engine,
    Outcome,
    decide,
    gate,
    skip_then_settle,
)


def exported(metrics: Metrics) -> dict[str, float]:
    text = metrics.render().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("ragtrim_gate_job_ms_per_1k{"):
            law = line.split('law="')[1].split('"')[0]
            out[law] = float(line.rsplit(" ", 1)[1])
    return out


def test_the_laws_are_exported_and_a_stale_one_corrects_itself_while_skipping():
    g, clock, metrics = gate(), Clock(), Metrics()
    metrics.registry.register(GateLawCollector(g))
    assert exported(metrics) == {"prior": 10.0}  # nothing measured: the compressor's prior
    g.observe_calibration(Outcome(ms=450 * 1.0))  # measured on a loaded machine: 1 ms/token
    assert exported(metrics)["calibration"] == 1000.0 and decide(g).for_cost
    recal = Recalibration(Engine(ms=450 * 0.01), g, every_s=30, clock=clock)
    for _ in range(2):  # every request skips for cost; quiet re-measurements run
        clock.now += 30
        asyncio.run(skip_then_settle(recal))
    assert exported(metrics)["calibration"] == 10.0  # 0.01 ms/token: corrected
    assert decide(g).action == "compress"


def test_the_default_tenants_own_jobs_are_exported_no_named_tenants():
    g, metrics = gate(), Metrics()
    metrics.registry.register(GateLawCollector(g))
    g.observe_compression(_Job(ms=20.0, tokens=2000), "")
    g.observe_compression(_Job(ms=90.0, tokens=2000), "acme")
    laws = exported(metrics)
    assert set(laws) == {"prior", "cold"} and laws["cold"] < 20.0  # acme's 45 ms/1k: not shown


def _Job(ms: float, tokens: int):  # noqa: N802 - a finished cold job
    return job(tokens, ms, work_ms=ms, fresh_tokens=tokens)
