"""The gateway overlay's KV-event wiring lines up (issue 20): vLLM publishes on the ports
ragtrim subscribes to, both NetworkPolicies let exactly ragtrim through to them, and
the sidecar overlay has none of it (one backend: nothing to route between)."""

from __future__ import annotations

import json

import pytest

from tests.deploy.k8s import container, find, tools_missing
from tests.deploy.test_manifests import ragtrim_settings

pytestmark = pytest.mark.skipif(bool(tools_missing()), reason=tools_missing() or "tools")


def kv_config(vllm: dict) -> dict | None:
    flags = [a for a in vllm.get("args", []) if a.startswith("--kv-events-config=")]
    return json.loads(flags[0].split("=", 1)[1]) if flags else None


def port_of(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def policy_ports(policy: dict, direction: str, peer: str) -> set[int]:
    ports = set()
    for rule in policy["spec"].get(direction, []):
        peers = rule.get("from" if direction == "ingress" else "to", [])
        if any(p.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/name") == peer
               for p in peers):  # fmt: skip
            ports |= {p["port"] for p in rule.get("ports", [])}
    return ports


def test_gateway_vllm_publishes_where_ragtrim_subscribes(tmp_path, monkeypatch):
    docs, _, _, settings = ragtrim_settings("gateway", tmp_path, monkeypatch)
    (vllm_dep,) = find(docs, "Deployment", "vllm")
    vllm = container(vllm_dep, "vllm")
    config = kv_config(vllm)
    assert config and config["enable_kv_cache_events"] and config["publisher"] == "zmq"
    kv = settings.routing
    assert kv.kv_events.enabled and [s.name for s in kv.scorers][0] == "kv_cache"
    pub, replay = port_of(config["endpoint"]), port_of(config["replay_endpoint"])
    assert (pub, replay) == (kv.kv_events.port, kv.kv_events.replay_port)
    assert config["topic"] == kv.kv_events.topic
    assert {pub, replay} <= {p["containerPort"] for p in vllm["ports"]}
    (to_vllm,) = find(docs, "NetworkPolicy", "vllm")
    (from_ragtrim,) = find(docs, "NetworkPolicy", "ragtrim")
    assert {pub, replay} <= policy_ports(to_vllm, "ingress", "ragtrim")
    assert {pub, replay} <= policy_ports(from_ragtrim, "egress", "vllm")


def test_sidecar_has_no_kv_events(tmp_path, monkeypatch):
    docs, dep, _, settings = ragtrim_settings("sidecar", tmp_path, monkeypatch)
    assert kv_config(container(dep, "vllm")) is None
    assert not settings.routing.kv_events.enabled
