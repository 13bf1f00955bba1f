"""Removed and renamed settings refuse to start and name their replacement
(proxy/config/removed.py), from every source: environment, YAML, flags; an unknown key
in any group is refused too (proxy/config/section.py)."""

from __future__ import annotations

import pytest
import yaml

from proxy.cli import build_parser, main, overrides_from
from proxy.config.removed import RENAMED, REPLACED, env_name, flag_name
from proxy.settings import CompressionSettings, Settings, load_settings


def _nested(path: str, value: object) -> dict:
    *parents, leaf = path.split(".")
    node: dict = {leaf: value}
    for part in reversed(parents):
        node = {part: node}
    return node


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_every_renamed_setting_is_refused_from_env_yaml_and_flags_naming_the_new(
    old, monkeypatch, tmp_path
):
    new = RENAMED[old]
    monkeypatch.setenv(env_name(old), "1")
    with pytest.raises(ValueError, match=f"set {new} \\({env_name(new)}"):
        load_settings()
    monkeypatch.delenv(env_name(old))
    config = tmp_path / "ragtrim.yaml"
    config.write_text(yaml.safe_dump(_nested(old, 1)))
    with pytest.raises(ValueError, match=f"{old} .* was renamed: set {new}"):
        load_settings(config)
    if flag_name(old) != flag_name(new):  # --redis-url kept its name: it is redis.url now
        args = build_parser().parse_args(["serve", flag_name(old), "1"])
        with pytest.raises(ValueError, match=f"set {new}"):
            load_settings(None, overrides_from(args))


@pytest.mark.parametrize("new", sorted(set(RENAMED.values())))
def test_every_new_name_is_a_setting(new):
    node = Settings.model_fields
    for part in new.split("."):
        assert part in node, new
        annotation = node[part].annotation
        node = getattr(annotation, "model_fields", {})


def test_the_kept_flag_redis_url_sets_redis_url():
    args = build_parser().parse_args(["serve", "--redis-url", "redis://127.0.0.1:1/0"])
    assert load_settings(None, overrides_from(args)).redis.url == "redis://127.0.0.1:1/0"


def test_every_replaced_setting_is_refused_naming_what_to_do(monkeypatch):
    for old, instead in REPLACED.items():
        monkeypatch.setenv(env_name(old), "1")
        with pytest.raises(ValueError) as info:
            load_settings()
        assert f"{old} ({env_name(old)}) was removed: " in str(info.value)
        assert instead in str(info.value)
        monkeypatch.delenv(env_name(old))


def test_the_per_backend_cap_names_the_room_filter(monkeypatch):
    monkeypatch.setenv("RAGTRIM_LIMITS__MAX_IN_FLIGHT_PER_BACKEND", "4")
    with pytest.raises(ValueError, match="room:8"):
        load_settings()


@pytest.mark.parametrize("source", ["env", "yaml"])
def test_an_unknown_key_in_a_group_is_refused(source, monkeypatch, tmp_path):
    config = None
    if source == "env":
        monkeypatch.setenv("RAGTRIM_HEALTH__INTERVALL_S", "1")
    else:
        config = tmp_path / "ragtrim.yaml"
        config.write_text("compression: {stable: {block_sise: 16}}\n")
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        load_settings(config)


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
    out = capsys.readouterr().out
    assert "--routing-policy" not in out and "--timeouts-connect " not in out


def test_ragtrim_serve_refuses_to_start_with_a_removed_env_var(monkeypatch, capsys):
    monkeypatch.setenv("RAGTRIM_ROUTING__AFFINITY_WEIGHT", "2")
    assert main(["serve"]) == 2  # before anything listens
    err = capsys.readouterr().err
    assert "not starting" in err and "routing.affinity_weight" in err
    assert "RAGTRIM_ROUTING__SCORERS" in err


def test_ragtrim_serve_refuses_to_start_with_a_renamed_env_var(monkeypatch, capsys):
    monkeypatch.setenv("RAGTRIM_REDIS_URL", "redis://127.0.0.1:6379/0")
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert "not starting" in err and "RAGTRIM_REDIS__URL" in err
