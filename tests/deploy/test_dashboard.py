"""deploy/grafana/ragtrim.json queries only metrics that a live ragtrim exports: every
metric name in its PromQL is found on /metrics after real traffic (a streamed RAG
request compressed on its way to a stub vLLM, a second one hitting the prefix cache,
and one failing mid-stream), with samples, not just a declaration."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from proxy.server.app import create_app
from proxy.settings import Settings
from tests.doubles.prefill_sim import PrefillSim
from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import serving

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "ragtrim.json"
NAME = re.compile(r"\b(ragtrim_[a-z0-9_]+)\b")
# Series that only exist after a failure this test does not cause (their families are
# still checked to be declared on /metrics).
FAILURE_ONLY = {
    "ragtrim_compress_failures_total",
    "ragtrim_store_errors_total",
    "ragtrim_quota_refusals_total",
}  # a tenant over its limit (quotas off here)
DOCS = " ".join(f"Fact {i}: room {i} holds {i * 7} boxes of letters." for i in range(40))


def queries(node) -> list[str]:
    """Every PromQL string in the dashboard: panel targets and template queries."""
    if isinstance(node, dict):
        found = [node["expr"]] if isinstance(node.get("expr"), str) else []
        if isinstance(node.get("definition"), str):
            found.append(node["definition"])
        return found + [q for value in node.values() for q in queries(value)]
    if isinstance(node, list):
        return [q for item in node for q in queries(item)]
    return []


def family(sample: str) -> str:
    for suffix in ("_bucket", "_count", "_sum", "_total", "_created"):
        if sample.endswith(suffix):
            return sample[: -len(suffix)]
    return sample


def exported(text: str) -> tuple[set[str], set[str]]:
    """(names with at least one sample, declared family names) on a /metrics page."""
    samples, declared = set(), set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            declared.add(line.split()[2])
        elif line and not line.startswith("#"):
            samples.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return samples, declared


def rag_request(stream: bool, extra: dict | None = None) -> dict:
    user = f"<ragtrim:doc>{DOCS}</ragtrim:doc><ragtrim:question>How many boxes?</ragtrim:question>"
    body = {"model": "stub-model", "stream": stream, "max_tokens": 8,
            "messages": [{"role": "system", "content": "Answer from the documents only."},
                         {"role": "user", "content": user}]}  # fmt: skip
    return {**body, **(extra or {})}


def test_dashboard_is_valid_grafana_json():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] == "ragtrim" and dash["panels"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]


def test_savings_by_tenant_panel():
    """Issue 22: what each tenant saved, from the tenant-labelled counters."""
    panels = {p["title"]: p for p in json.loads(DASHBOARD.read_text())["panels"]}
    saved = next(p for t, p in panels.items() if t.startswith("Savings by tenant"))
    (target,) = saved["targets"]
    assert "ragtrim_tenant_tokens_removed_total" in target["expr"]
    assert "by (tenant)" in target["expr"] and target["legendFormat"] == "{{tenant}}"


def wait_ready(client: httpx.Client) -> None:
    """Backend healthy and the compressor loaded (requests meanwhile fail open)."""
    deadline = time.monotonic() + 30
    while True:
        ready = client.get("/readyz").json()
        if ready["ready"] and ready["compressor"] not in ("cold", "loading"):
            return
        assert time.monotonic() < deadline, ready
        time.sleep(0.05)


@pytest.mark.timeout(120)
def test_every_metric_the_dashboard_queries_is_on_a_live_ragtrim():
    names = {n for q in queries(json.loads(DASHBOARD.read_text())) for n in NAME.findall(q)}
    assert len(names) >= 12
    stub = StubVllm(prefill=PrefillSim(per_token_ms=0.05))
    settings = Settings(
        backends=[], compression={"compressor": "identity", "policy": "always",
                                  "min_context_tokens": 0}, health={"interval_s": 0.5},
    )  # fmt: skip
    with serving(stub) as backend:
        # through discovery (the system resolver on localhost), so its series exist too
        settings.backends = [f"dns+http://localhost:{backend.port}"]
        with (
            serving(create_app(settings)) as proxy,
            httpx.Client(base_url=proxy.url, timeout=30) as client,
        ):
            wait_ready(client)
            # chunks 5 ms apart: sent at once, a fast machine reads a whole stream in one
            # read, its first and last chunk share a timestamp and it has no TPOT (once in CI)
            paced = {"stub": {"chunk_delay": 0.005}}
            for n in range(2):  # the second one hits the (simulated) prefix cache
                with client.stream("POST", "/v1/chat/completions",
                                   json=rag_request(True, paced)) as r:  # fmt: skip
                    assert r.status_code == 200, r.read()
                    # the second goes as sent: vLLM holds it (issue 29's skip:cached)
                    assert r.headers["x-ragtrim-tokens-before" if n == 0 else "x-ragtrim-decision"]
                    list(r.iter_lines())
            failing = rag_request(True, {"stub": {"fail_after": 2}})
            with client.stream("POST", "/v1/chat/completions", json=failing) as r:
                list(r.iter_lines())
            samples, declared = exported(client.get("/metrics").text)
    missing = sorted(n for n in names - FAILURE_ONLY if n not in samples)
    assert not missing, f"dashboard queries metrics /metrics lacks: {missing}"
    assert all(n in declared or family(n) in declared for n in FAILURE_ONLY)
