import pytest

from proxy.cli import build_parser, overrides_from
from proxy.settings import load_settings


def test_precedence_defaults_yaml_env_cli(tmp_path, monkeypatch):
    config = tmp_path / "ragtrim.yaml"
    config.write_text("port: 7000\nhost: 0.0.0.0\ntimeouts: {connect_s: 5, idle_s: 9}\n")
    monkeypatch.setenv("RAGTRIM_PORT", "7001")
    monkeypatch.setenv("RAGTRIM_TIMEOUTS__IDLE_S", "8")
    args = build_parser().parse_args(["serve", "--timeouts-idle-s", "7"])
    settings = load_settings(config, overrides_from(args))
    assert settings.host == "0.0.0.0"  # yaml
    assert settings.port == 7001  # env over yaml
    assert settings.timeouts.connect_s == 5  # yaml, nested
    assert settings.timeouts.idle_s == 7  # cli over env
    assert settings.timeouts.total_s == 900  # default


def test_backends_comma_separated(monkeypatch):
    monkeypatch.setenv("RAGTRIM_BACKENDS", "http://a:1/, http://b:2")
    assert load_settings().backends == ["http://a:1", "http://b:2"]


def test_invalid_values_are_rejected(monkeypatch):
    monkeypatch.setenv("RAGTRIM_PORT", "notaport")
    with pytest.raises(ValueError):
        load_settings()


def test_help_lists_every_option(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    out = capsys.readouterr().out
    for flag in ("--backends", "--timeouts-first-byte-s", "--redis-url", "--max-body-bytes"):
        assert flag in out
