"""A compression past its deadline stops at the next checkpoint (issue 23)."""

import time

import pytest

from compressors import ApproxTokenCounter, Protector, count_spans, split_sentences
from compressors._selection import pooled_keep
from compressors.deadline import DeadlineExceeded, check, within


def test_check_raises_only_past_the_deadline_and_only_inside_within():
    check()  # no deadline: never raises
    with within(time.monotonic() + 60):
        check()
    with within(time.monotonic() - 1), pytest.raises(DeadlineExceeded):
        check()
    check()  # reset on exit


@pytest.mark.parametrize(
    "phase",
    [
        lambda: Protector().spans("text"),
        lambda: split_sentences("One. Two."),
        lambda: count_spans(ApproxTokenCounter(), "One.", [(0, 4)]),
        lambda: pooled_keep([[1.0]], [[1]], 1),
    ],
    ids=["protect", "sentences", "tokens", "selection"],
)
def test_every_phase_is_a_checkpoint(phase):
    phase()
    with within(time.monotonic() - 1), pytest.raises(DeadlineExceeded):
        phase()
