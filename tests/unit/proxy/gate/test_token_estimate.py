"""The gate's token estimate (proxy/gate/token_estimate.py, issue 33): visible characters,
clamped to a physical band, per tenant, aged."""

from proxy.gate.learning import MAX_AGE_S
from proxy.gate.token_estimate import BAND, VISIBLE_PER_TOKEN, TokenEstimate, visible_chars


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_whitespace_is_not_counted():
    assert visible_chars(["a b\n\tc\r", " " * 10_000]) == 3


def test_the_prior_until_measured_then_the_median_per_tenant():
    est = TokenEstimate()
    assert est.sizes("a", ["x" * 700]).tokens() == round(700 / VISIBLE_PER_TOKEN)
    for chars in (300, 310, 290, 10_000):  # one outlier
        est.learn("a", chars, 100)
    assert est.chars_per_token("a") == 3.05
    assert est.chars_per_token("b") == VISIBLE_PER_TOKEN  # a's samples are a's


def test_clamped_to_the_band():
    low, high = TokenEstimate(), TokenEstimate()
    for _ in range(5):
        low.learn("a", 10, 100)  # 0.1 characters a token
        high.learn("a", 100_000, 100)
    assert low.chars_per_token("a") == BAND[0] and high.chars_per_token("a") == BAND[1]


def test_samples_age_out():
    clock = Clock()
    est = TokenEstimate(clock)
    est.learn("a", 800, 100)
    clock.now += MAX_AGE_S + 1
    assert est.chars_per_token("a") == VISIBLE_PER_TOKEN


def test_tiny_samples_are_ignored():
    est = TokenEstimate()
    est.learn("a", 1000, 3)
    est.learn("a", 0, 100)
    assert est.chars_per_token("a") == VISIBLE_PER_TOKEN
