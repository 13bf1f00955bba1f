"""deploy/k8s: every overlay rendered by `kubectl kustomize`, validated strictly by
kubernetes-validate against a pinned Kubernetes version, scanned by checkov (every
finding explained in deploy/k8s/checkov-skips.yaml), and read back for what the
schemas cannot see: probes, drain order, selectors and ports that must line up."""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml

from proxy.settings import load_settings
from tests.deploy.k8s import (
    K8S,
    KUBERNETES_VERSION,
    OVERLAYS,
    ROOT,
    container,
    env_of,
    find,
    matches,
    materialize_config_mounts,
    objects,
    pod_spec,
    render,
    tool,
    tools_missing,
)

pytestmark = pytest.mark.skipif(bool(tools_missing()), reason=tools_missing() or "tools")


@cache
def rendered(overlay: str) -> str:
    return render(overlay)


def docs_of(overlay: str) -> list[dict]:
    return objects(rendered(overlay))


@pytest.fixture(scope="module")
def rendered_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rendered")
    for overlay in OVERLAYS:
        (out / f"{overlay}.yaml").write_text(rendered(overlay))
    return out


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_validates_strictly(overlay, rendered_dir):
    path = rendered_dir / f"{overlay}.yaml"
    result = subprocess.run(
        [str(tool("kubernetes-validate")), "--strict", "--quiet", "-k", KUBERNETES_VERSION,
         str(path)], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    unknown = [ln for ln in result.stdout.splitlines() if "Couldn't find schema" in ln]
    assert all("ServiceMonitor" in ln for ln in unknown), unknown  # the one CRD: see below


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_servicemonitors_scrape_a_named_port_of_a_selected_pod(overlay):
    docs = docs_of(overlay)
    monitors = find(docs, "ServiceMonitor")
    assert monitors
    for sm in monitors:
        assert set(sm["spec"]) <= {"selector", "endpoints", "namespaceSelector"}
        services = [
            s
            for s in find(docs, "Service")
            if matches(sm["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])
        ]
        for ep in sm["spec"]["endpoints"]:
            assert set(ep) <= {"port", "path", "interval"} and ep["path"] == "/metrics"
            ports = [p for s in services for p in s["spec"]["ports"] if p["name"] == ep["port"]]
            assert ports, f"{sm['metadata']['name']}: no Service port {ep['port']}"


def containers_of(docs: list[dict]):
    for dep in find(docs, "Deployment"):
        for c in pod_spec(dep)["containers"]:
            yield dep, c


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_is_bounded_probed_drained_and_locked_down(overlay):
    for dep, c in containers_of(docs_of(overlay)):
        where = f"{dep['metadata']['name']}/{c['name']}"
        pod = pod_spec(dep)
        assert {"requests", "limits"} <= set(c["resources"]), where
        assert {"startupProbe", "livenessProbe", "readinessProbe"} <= set(c), where
        assert "preStop" in c["lifecycle"], where
        assert pod["terminationGracePeriodSeconds"] > prestop_seconds(c), where
        sc, psc = c["securityContext"], pod["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"], where
        assert sc["capabilities"]["drop"] == ["ALL"], where
        assert sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, where
        seccomp = sc.get("seccompProfile", psc.get("seccompProfile"))
        assert seccomp == {"type": "RuntimeDefault"}, where
        if c["name"] == "ragtrim":
            assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
            assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"


def prestop_seconds(c: dict) -> float:
    hook = c["lifecycle"]["preStop"]
    if "sleep" in hook:
        return hook["sleep"]["seconds"]
    cmd = hook["exec"]["command"]
    return float(cmd[cmd.index("--sleep") + 1]) + float(cmd[cmd.index("--settle") + 1])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_workload_has_a_pdb_and_every_pod_a_network_policy(overlay):
    docs = docs_of(overlay)
    pdbs, policies = find(docs, "PodDisruptionBudget"), find(docs, "NetworkPolicy")
    for dep in find(docs, "Deployment"):
        labels = dep["spec"]["template"]["metadata"]["labels"]
        assert any(matches(p["spec"]["selector"]["matchLabels"], labels) for p in pdbs)
        own = [p for p in policies if p["spec"]["podSelector"].get("matchLabels")
               and matches(p["spec"]["podSelector"]["matchLabels"], labels)]  # fmt: skip
        assert own, f"{dep['metadata']['name']}: only default-deny applies"
    targets = {h["spec"]["scaleTargetRef"]["name"] for h in find(docs, "HorizontalPodAutoscaler")}
    assert targets >= ({"vllm"} if overlay == "sidecar" else {"ragtrim", "vllm"})


def ragtrim_settings(overlay: str, tmp_path: Path, monkeypatch):
    """ragtrim's Settings exactly as the rendered container would load them."""
    docs = docs_of(overlay)
    dep = find(docs, "Deployment", "vllm" if overlay == "sidecar" else "ragtrim")[0]
    c = container(dep, "ragtrim")
    mounts = materialize_config_mounts(dep, c, docs, tmp_path)
    args = list(c["args"])
    config = args[args.index("--config") + 1]
    local = mounts[str(Path(config).parent)] / Path(config).name
    for key in [k for k in os.environ if k.startswith("RAGTRIM_")]:
        monkeypatch.delenv(key)
    for key, value in env_of(c, docs).items():
        monkeypatch.setenv(key, value)
    return docs, dep, c, load_settings(local)


def assert_drain_fits(dep: dict, c: dict, settings) -> None:
    """preStop sleep, then up to timeouts.drain_s for open streams: inside the grace period."""
    grace = pod_spec(dep)["terminationGracePeriodSeconds"]
    assert prestop_seconds(c) + settings.timeouts.drain_s < grace
    assert settings.timeouts.drain_s >= 120  # a long answer streams for minutes


def test_sidecar_wiring_lines_up(tmp_path, monkeypatch):
    docs, dep, c, settings = ragtrim_settings("sidecar", tmp_path, monkeypatch)
    assert_drain_fits(dep, c, settings)
    vllm = container(dep, "vllm")
    vllm_port = vllm["ports"][0]["containerPort"]
    assert settings.backends == [f"http://127.0.0.1:{vllm_port}"]
    (svc,) = find(docs, "Service", "vllm")
    assert svc["spec"]["ports"][0]["port"] == vllm_port  # the port clients already use
    assert svc["spec"]["ports"][0]["targetPort"] == c["ports"][0]["name"]
    assert c["ports"][0]["containerPort"] == settings.port
    drain = vllm["lifecycle"]["preStop"]["exec"]["command"]
    assert drain[drain.index("--wait-closed") + 1] == f"127.0.0.1:{settings.port}"
    assert prestop_seconds(vllm) > c["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert float(drain[drain.index("--settle") + 1]) > settings.compression.timeout_s


def test_gateway_wiring_lines_up(tmp_path, monkeypatch):
    docs, dep, c, settings = ragtrim_settings("gateway", tmp_path, monkeypatch)
    assert_drain_fits(dep, c, settings)
    assert dep["spec"]["replicas"] >= 2
    (backend,) = settings.backends
    name, port = backend.removeprefix("dns+http://").split(":")
    (headless,) = find(docs, "Service", name)
    assert headless["spec"]["clusterIP"] == "None"
    assert [p["port"] for p in headless["spec"]["ports"]] == [int(port)]
    (vllm,) = find(docs, "Deployment", "vllm")
    assert matches(headless["spec"]["selector"], vllm["spec"]["template"]["metadata"]["labels"])
    redis_host = settings.redis.url.split("//")[1].split(":")[0]
    assert find(docs, "Service", redis_host)


def checkov_findings(rendered_dir: Path) -> set[tuple[str, str]]:
    """(check id, "<source>:<resource>") for every failed checkov check."""
    found = set()
    runs = [("kubernetes", ["-d", str(rendered_dir)]),
            ("dockerfile", ["-f", "deploy/docker/Dockerfile"])]  # fmt: skip
    for framework, target in runs:
        result = subprocess.run(
            [str(tool("checkov")), *target, "--framework", framework, "--skip-download",
             "--quiet", "--compact", "-o", "json"],
            capture_output=True, text=True, cwd=ROOT, timeout=600,
        )  # fmt: skip
        reports = json.loads(result.stdout)
        for report in reports if isinstance(reports, list) else [reports]:
            for check in report["results"]["failed_checks"]:
                source = Path(check["file_path"]).stem if framework == "kubernetes" else framework
                found.add((check["check_id"], f"{source}:{check['resource']}"))
    return found


def test_checkov_finds_nothing_but_the_explained_skips(rendered_dir):
    skips = yaml.safe_load((K8S / "checkov-skips.yaml").read_text())["skips"]
    assert all(s["reason"].strip() for s in skips)
    allowed = {(s["check"], r) for s in skips for r in s["resources"]}
    assert checkov_findings(rendered_dir) == allowed
