"""The gate's job-cost laws in /metrics, read at scrape time: what the gate believes a
compression costs (proxy/gate/job_cost.py). Why: docs/decisions/0040-cost-gate-learned-laws.md.

    ragtrim_gate_job_ms_per_1k{law}   the per-token part, per 1k tokens
    ragtrim_gate_job_fixed_ms{law}    the fixed part of a job

`law`: "calibration" (the proxy's own runs of the calibration workload, at start-up and
while the gate skips: proxy/compression/recalibration.py), "prior" (the compressor's
own figure, used until a measurement lands), and, without tenancy, "cold" and "seen"
(the jobs of the default tenant) and "finish" (its compressions' work after the job,
proxy/gate/job_cost.py `TenantLaws`). Tenants' own laws are never exported: their
figures would tell one tenant's traffic to another.
"""

from __future__ import annotations

from prometheus_client.core import GaugeMetricFamily

from proxy.gate.decide import CostGate
from proxy.gate.job_cost import JobCost


class GateLawCollector:
    def __init__(self, gate: CostGate) -> None:
        self.gate = gate

    def laws(self) -> dict[str, tuple[float, float]]:
        """law -> (ms per 1k tokens, fixed ms), for the laws measured so far."""
        out = {"prior": (self.gate.compressor_prior * 1000, 0.0)}
        mine = self.gate.laws.peek("")
        candidates: dict[str, JobCost | None] = {
            "calibration": self.gate.calibrated,
            "cold": mine.cold if mine is not None else None,
            "seen": mine.seen if mine is not None else None,
            "finish": mine.finish if mine is not None else None,
        }
        for name, law in candidates.items():
            if law is not None and law.per_token is not None:
                out[name] = (law.per_token * 1000, law.fixed_ms)
        return out

    def collect(self):
        per_1k = GaugeMetricFamily(
            "ragtrim_gate_job_ms_per_1k",
            "The gate's compression cost law: ms per 1k context tokens (proxy/gate/exported.py)",
            labels=["law"],
        )
        fixed = GaugeMetricFamily(
            "ragtrim_gate_job_fixed_ms",
            "The gate's compression cost law: fixed ms per job",
            labels=["law"],
        )
        for name, (rate, base) in self.laws().items():
            per_1k.add_metric([name], rate)
            fixed.add_metric([name], base)
        return [per_1k, fixed]
