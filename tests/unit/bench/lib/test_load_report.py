"""bench.load's figures (bench/lib/load_report.py): per-level figures, which levels each
path holds, the headline ratios and where p90 crosses the SLO."""

from __future__ import annotations

from bench.lib.load_report import crossing, headline, held
from bench.lib.load_run import Row, level_figures


def row(ttft, error="", decision="compress:auto", at=1.0) -> Row:
    return Row(ttft_ms=ttft, error=error, decision=decision, done_at=at)


def test_level_figures_and_held_levels():
    rows = [row(100.0 + i, at=i / 10) for i in range(10)] + [row(None, error="http 502")]
    f = level_figures(rows, offered=10.0, slo_ms=105.0)
    assert f["errors"] == 1 and not f["meets_slo"]  # a failed request fails the level
    assert f["ttft_p50_ms"] == 104.0 and f["goodput_rps"] == round(6 / 0.9, 3)
    ok = level_figures(rows[:10], offered=10.0, slo_ms=200.0)
    assert ok["meets_slo"] and ok["compressed_share"] == 1.0

    def level(m, d, r):
        fig = {"meets_slo": True, "ttft_p50_ms": 1.0, "ttft_p90_ms": 2.0, "errors": 0}
        return {"multiple": m, "direct": {**fig, "meets_slo": d},
                "ragtrim": {**fig, "meets_slo": r, "gold_retention": 1.0}}  # fmt: skip

    levels = [level(0.25, True, True), level(0.5, True, True), level(0.8, False, True),
              level(1.0, True, True), level(1.5, False, False),
              level(2.0, False, True)]  # fmt: skip
    assert held(levels, "direct") == 0.5  # 1.0 held again, but 0.8 was not
    assert held(levels, "ragtrim") == 1.0
    h = headline(levels, slo_ms=3.0)
    assert h["capacity_ratio"] == 2.0 and h["p90_ratio_at_0.8"] == 1.0 and h["errors"] == 0


def test_crossing_interpolates_where_p90_meets_the_slo():
    def level(m, p90, errors=0):
        figures = {"meets_slo": p90 <= 100 and not errors, "ttft_p90_ms": p90, "errors": errors}
        return {"multiple": m, "direct": figures}

    levels = [level(0.25, 50), level(0.5, 80), level(1.0, 320)]
    assert crossing(levels, "direct", 100.0) == round(0.5 + 0.5 * 0.16096, 3)  # log 1.25 / log 4
    failed = [level(0.25, 50), level(0.5, 80), level(1.0, 90, errors=1)]
    assert crossing(failed, "direct", 100.0) == 0.5  # a level lost to errors is not interpolated
    assert crossing([level(0.25, 500)], "direct", 100.0) == 0.0
