"""The generated CLI (issue 23, class 7): a list flag takes the plain string its help
names; invalid settings (tenancy without a salt_secret) stop `serve` with a clear
message before anything starts."""

import subprocess
import sys
from pathlib import Path

from proxy.cli import build_parser, main, overrides_from
from proxy.settings import load_settings

ROOT = Path(__file__).resolve().parents[3]
PATTERN = r"(?s)Context:\n(?P<context>.{1,5000}?)\nQuestion: (?P<question>.+)"


def settings_from(*argv: str):
    return load_settings(None, overrides_from(build_parser().parse_args(["serve", *argv])))


def test_a_list_flag_takes_one_plain_string_commas_and_all():
    s = settings_from("--compression-patterns", PATTERN, "--canonical-extra-volatile", r"\d+")
    assert s.compression.patterns == [PATTERN] and s.canonical.extra_volatile == [r"\d+"]


def test_a_list_flag_takes_json_and_comma_separated_where_the_field_splits():
    s = settings_from("--compression-patterns", '["a", "b,c"]', "--backends",
                      "http://a:1,http://b:2", "--routing-filters", "healthy")  # fmt: skip
    assert s.compression.patterns == ["a", "b,c"]
    assert s.backends == ["http://a:1", "http://b:2"]
    assert [f.name for f in s.routing.filters] == ["healthy"]


def test_help_names_what_a_list_flag_takes():
    text = build_parser()._subparsers._group_actions[0].choices["serve"].format_help()
    assert "--compression-patterns LIST" in text and "A JSON list, or one item" in text


def test_tenancy_without_a_salt_secret_refuses_to_start(capsys):
    assert main(["serve", "--tenancy-api-keys", '{"k": "acme"}']) == 2
    assert "salt_secret" in capsys.readouterr().err
    short = ["serve", "--tenancy-api-keys", '{"k": "acme"}', "--tenancy-salt-secret", "abc"]
    assert main(short) == 2


def test_the_refusal_is_the_process_exit_status():
    args = [sys.executable, "-m", "proxy", "serve", "--tenancy-api-keys", '{"k": "a"}']
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "RAGTRIM_TENANCY__SALT_SECRET" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_settings_reference_is_current():
    """docs/settings.md is `ragtrim settings`' output: regenerate it when a setting changes
    (`.venv/bin/python -m proxy settings > docs/settings.md`)."""
    from pathlib import Path

    from proxy.cli import settings_reference

    committed = (Path(__file__).resolve().parents[3] / "docs" / "settings.md").read_text()
    assert committed == settings_reference()
    assert "`compression.stable.enabled`" in committed
    assert "RAGTRIM_TIMEOUTS__CONNECT_S" in committed
