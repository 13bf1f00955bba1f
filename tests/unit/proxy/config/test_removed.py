"""Removed settings refuse to start and name their replacement (proxy/config/removed.py),
from every source: environment, YAML, flags."""

from __future__ import annotations

import pytest

from proxy.cli import build_parser, main, overrides_from
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


def test_a_removed_flag_names_the_replacement_and_is_not_in_help(capsys):
    args = build_parser().parse_args(["serve", "--routing-policy", "roundrobin"])
    with pytest.raises(ValueError, match="routing.policy .* was removed.*routing.scorers"):
        load_settings(None, overrides_from(args))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    assert "--routing-policy" not in capsys.readouterr().out


def test_ragtrim_serve_refuses_to_start_with_a_removed_env_var(monkeypatch, capsys):
    monkeypatch.setenv("RAGTRIM_ROUTING__AFFINITY_WEIGHT", "2")
    assert main(["serve"]) == 2  # before anything listens
    err = capsys.readouterr().err
    assert "not starting" in err and "routing.affinity_weight" in err
    assert "RAGTRIM_ROUTING__SCORERS" in err
