"""Rendering the kustomize overlays with the pinned tools in .venv-tools, and reading
the rendered objects (containers, env from Secrets, mounted ConfigMaps)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".venv-tools" / "bin"
K8S = ROOT / "deploy" / "k8s"
OVERLAYS = ("sidecar", "gateway")
KUBERNETES_VERSION = "1.33.0"  # validated against; the preStop sleep action needs >= 1.30


def tool(name: str) -> Path:
    return TOOLS / name


def tools_missing() -> str:
    missing = [n for n in ("kubectl", "kubernetes-validate", "checkov") if not tool(n).exists()]
    return f"{', '.join(missing)} missing in .venv-tools (make setup-tools)" if missing else ""


def render(overlay: str) -> str:
    out = subprocess.run([str(tool("kubectl")), "kustomize", str(K8S / "overlays" / overlay)],
                         capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    return out.stdout


def objects(rendered: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def find(docs: list[dict], kind: str, name: str | None = None) -> list[dict]:
    return [d for d in docs if d["kind"] == kind and name in (None, d["metadata"]["name"])]


def pod_spec(deployment: dict) -> dict:
    return deployment["spec"]["template"]["spec"]


def container(deployment: dict, name: str) -> dict:
    (found,) = [c for c in pod_spec(deployment)["containers"] if c["name"] == name]
    return found


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def env_of(c: dict, docs: list[dict]) -> dict[str, str]:
    """The container's env as the kubelet would set it (literal values and secretKeyRef)."""
    out = {}
    for item in c.get("env", []):
        if "value" in item:
            out[item["name"]] = item["value"]
            continue
        ref = item["valueFrom"]["secretKeyRef"]
        (secret,) = find(docs, "Secret", ref["name"])
        out[item["name"]] = secret["stringData"][ref["key"]]
    return out


def materialize_config_mounts(deployment: dict, c: dict, docs: list[dict], tmp: Path):
    """Write each ConfigMap the container mounts under tmp; mountPath → local dir."""
    volumes = {v["name"]: v for v in pod_spec(deployment).get("volumes", [])}
    paths = {}
    for mount in c.get("volumeMounts", []):
        source = volumes[mount["name"]].get("configMap")
        if source is None:
            continue
        (cm,) = find(docs, "ConfigMap", source["name"])
        local = tmp / mount["name"]
        local.mkdir(parents=True)
        for key, value in cm["data"].items():
            (local / key).write_text(value)
        paths[mount["mountPath"]] = local
    return paths
