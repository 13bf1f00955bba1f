"""calibrate_step_law's pure parts: the least-squares fits on synthetic timings, the
timing loop's warm-ups and setup, and that importing it needs no torch (no GPU)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.doubles import calibrate_step_law as cal
from tests.doubles.kv_replica import FLEET_PRESETS


def test_fit_line_recovers_an_exact_line():
    base, slope = cal.fit_line([512, 2048, 6144], [12.0 + 0.074 * n for n in (512, 2048, 6144)])
    assert base == pytest.approx(12.0)
    assert slope == pytest.approx(0.074)


def test_fit_line_is_least_squares_on_noisy_points():
    # y = 1 + 2x with residuals +1, -1, -1, +1 (orthogonal to 1 and x): the fit ignores them
    xs, noise = [0, 1, 2, 3], [1, -1, -1, 1]
    base, slope = cal.fit_line(xs, [1 + 2 * x + e for x, e in zip(xs, noise, strict=True)])
    assert (base, slope) == (pytest.approx(1.0), pytest.approx(2.0))


@pytest.mark.parametrize("xs, ys", [([1], [2.0]), ([1, 2], [1.0]), ([3, 3], [1.0, 2.0])])
def test_fit_line_refuses_too_few_or_degenerate_points(xs, ys):
    with pytest.raises(ValueError):
        cal.fit_line(xs, ys)


def test_fit_step_law_gives_the_step_law_figures():
    law = FLEET_PRESETS["qwen3-32b-2xh100"].law
    prefill = {n: law.step_ms(n, 0) for n in cal.PREFILL_TOKENS}
    decode = {b: 20.0 + law.per_seq_ms * b for b in cal.DECODE_BATCHES}
    fit = cal.fit_step_law(prefill, decode)
    assert fit == {
        "base_ms": pytest.approx(law.base_ms),
        "per_prefill_token_ms": pytest.approx(law.per_prefill_token_ms),
        "per_seq_ms": pytest.approx(law.per_seq_ms),
        "decode_base_ms": pytest.approx(20.0),
    }


def test_the_script_compares_against_the_fleet_preset():
    law, preset = FLEET_PRESETS["qwen3-32b-2xh100"].law, cal.PRESET
    assert preset == {
        "per_prefill_token_ms": law.per_prefill_token_ms,
        "base_ms": law.base_ms,
        "per_seq_ms": law.per_seq_ms,
    }


def test_median_ms_skips_warmups_and_runs_setup_before_each_call():
    calls, syncs = [], []
    timing = cal.median_ms(lambda: calls.append("fn"), lambda: syncs.append(1),
                           lambda: calls.append("setup"))  # fmt: skip
    runs = cal.WARMUPS + cal.REPEATS
    assert calls == ["setup", "fn"] * runs
    assert len(syncs) == 2 * runs
    assert len(timing["samples_ms"]) == cal.REPEATS
    assert timing["ms"] >= 0


def test_importing_the_script_needs_no_torch():
    code = (
        "import sys, tests.doubles.calibrate_step_law as c; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    root = Path(__file__).resolve().parents[3]
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=root)
