"""Removed settings refuse to start and name their replacement (proxy/config/removed.py),
from every source: environment, YAML, flags."""

from __future__ import annotations

import pytest

from proxy.cli import build_parser
from proxy.settings import CompressionSettings, load_settings


def test_compression_policy_never_names_enabled_false(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGTRIM_COMPRESSION__POLICY", "never")
    with pytest.raises(ValueError) as info:
        load_settings()
    message = str(info.value)
    assert "compression.policy=never" in message and "compression.enabled=false" in message
    monkeypatch.delenv("RAGTRIM_COMPRESSION__POLICY")
    config = tmp_path / "ragtrim.yaml"
    config.write_text("compression: {policy: never}\n")
    with pytest.raises(ValueError, match="RAGTRIM_COMPRESSION__ENABLED=false"):
        load_settings(config)


def test_the_kept_values_and_the_one_switch_still_load():
    assert CompressionSettings(policy="always").policy == "always"
    assert CompressionSettings(enabled=False).enabled is False


def test_a_removed_routing_key_in_yaml_fails_too(tmp_path):
    config = tmp_path / "ragtrim.yaml"
    config.write_text("routing: {policy: roundrobin}\n")
    with pytest.raises(ValueError, match="routing.policy .* was removed"):
        load_settings(config)


def test_the_removed_flags_are_gone_from_the_cli(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--routing-policy", "roundrobin"])
    assert "unrecognized arguments: --routing-policy" in capsys.readouterr().err
