"""deploy/docker/compose.yaml: no engine runs here, so check what can be checked: the
three services, ragtrim built from the Dockerfile, and every RAGTRIM_* variable it sets
accepted by ragtrim's own settings with the values given."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from proxy.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "docker" / "compose.yaml"


def test_compose_services_and_ragtrim_settings(monkeypatch):
    spec = yaml.safe_load(COMPOSE.read_text())
    services = spec["services"]
    assert set(services) == {"vllm", "ragtrim", "redis"}
    build = services["ragtrim"]["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == (
        ROOT / "deploy" / "docker" / "Dockerfile"
    )
    env = services["ragtrim"]["environment"]
    for key in [k for k in os.environ if k.startswith("RAGTRIM_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert settings.backends == ["http://vllm:8000"]
    assert settings.redis.url.startswith("redis://redis:")
    vllm_args = " ".join(services["vllm"]["command"])
    assert "--enable-prefix-caching" in vllm_args and "--enable-prompt-tokens-details" in vllm_args
    assert set(services["ragtrim"]["depends_on"]) == {"vllm", "redis"}
