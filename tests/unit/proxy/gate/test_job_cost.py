"""A compression job's cost law (proxy/gate/job_cost.py): a fixed part plus a rate per token,
robust to stalled jobs, the ratio alone when the sizes do not spread."""

import pytest

from proxy.gate.job_cost import JobCost, fit


def test_fits_the_fixed_part_and_the_rate():
    law = JobCost()
    assert law.ms(500) is None and law.fixed_ms == 0.0
    for tokens in (450, 900, 2000, 3500):  # 12 ms per job + 4 ms per 1k tokens
        law.add(12 + 0.004 * tokens, tokens)
    assert law.per_token == pytest.approx(0.004) and law.fixed_ms == pytest.approx(12)
    assert law.ms(550) == pytest.approx(14.2)


def test_a_stalled_job_moves_neither_part():
    law = JobCost()
    for tokens, ms in ((400, 14), (800, 16), (1600, 20), (3200, 28), (1000, 400)):  # a stall
        law.add(ms, tokens)
    assert law.per_token == pytest.approx(0.005) and law.fixed_ms == pytest.approx(12)


def test_without_spread_the_ratio_and_no_fixed_part():
    law = JobCost()
    law.add(20, 500)
    law.add(21.6, 540)  # 8 % apart: no slope from this pair
    assert law.fixed_ms == 0.0 and law.per_token == pytest.approx(0.04)


def test_never_a_negative_part():
    steep = JobCost()  # a fitted slope above the ratio would need a negative fixed part
    steep.add(1, 1000)
    steep.add(30, 2000)
    assert steep.per_token == pytest.approx(0.008) and steep.fixed_ms == pytest.approx(3.5)
    flat = JobCost()  # bigger jobs faster: no negative rate
    flat.add(20, 500)
    flat.add(10, 2000)
    assert flat.per_token == 0.0 and flat.fixed_ms == 15.0


def test_tiny_or_negative_samples_are_ignored():
    law = JobCost()
    law.add(5, 10)
    law.add(-1, 1000)
    assert law.per_token is None


def test_the_prefill_law_is_the_slope_of_the_same_fit_and_no_law_at_zero():
    from proxy.gate.prefill_law import PrefillLaw

    job, law = JobCost(), PrefillLaw()
    for tokens, ms in ((1000, 40.0), (2000, 20.0), (4000, 30.0)):  # median slope < 0
        job.add(ms, tokens)
        law.add(ms, tokens)
    assert job.per_token == 0.0  # a job's cost is then its fixed part
    assert law.value() is None  # a prefill is never free: no measurement (prefill_cost.py)
    law.add(15 + 0.03 * 8000, 8000)
    live = [(tokens, ms) for tokens, ms, _ in law.streamed.get("").samples]
    assert law.value() == pytest.approx(fit(live)[0]) and law.value() > 0
    assert job.fixed_ms == pytest.approx(30.0)  # the median of ms - 0 × tokens


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_part_is_clamped_to_its_physical_band():
    """Issue 33: a job law is clamped (proxy/gate/job_cost.py says where the bounds come from)."""
    from proxy.gate.job_cost import MAX_FIXED_MS, MAX_MS_PER_TOKEN

    fixed = JobCost()
    for tokens in (100, 1000, 4000):  # 400 ms whatever the size: a giant question's part
        fixed.add(400, tokens)
    assert fixed.fixed_ms == MAX_FIXED_MS and fixed.per_token == 0.0
    steep = JobCost()
    steep.add(1e6, 1000)  # 1 s per token
    assert steep.per_token == MAX_MS_PER_TOKEN


def test_samples_age_out_so_a_poisoned_law_recovers_within_60_s():
    from proxy.gate.learning import MAX_AGE_S

    clock = Clock()
    law = JobCost(clock=clock)
    for tokens in (500, 1000, 2000):
        law.add(45 + 0.3 * tokens, tokens)  # poisoned: 45 ms fixed, 0.3 ms per token
    clock.now += MAX_AGE_S / 2
    for tokens in (500, 1000, 2000):
        law.add(2 + 0.01 * tokens, tokens)  # the truth, 30 s later
    assert law.fixed_ms > 2
    clock.now += MAX_AGE_S / 2 + 1  # the poisoned samples are 61 s old: gone
    assert law.per_token == pytest.approx(0.01) and law.fixed_ms == pytest.approx(2)
    clock.now += MAX_AGE_S  # nothing fresh: no law (the gate falls back)
    assert law.per_token is None and law.fixed_ms == 0.0 and law.ms(100) is None


def test_a_law_without_an_age_keeps_its_samples():
    clock = Clock()
    law = JobCost(max_age=None, clock=clock)  # the calibration runs' law
    law.add(10, 1000)
    clock.now += 1e6
    assert law.per_token == pytest.approx(0.01)
