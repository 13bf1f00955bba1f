"""A compression job's cost: `fixed_ms + per_token × tokens`, learned from observed jobs.

The fixed part is what costs about the same for 400 tokens as for 4,000: the hand-off to
a worker thread and back, the question's encoding, the selection, the splice and the
memo's bookkeeping. Why not a ratio alone: docs/decisions/0040-cost-gate-learned-laws.md.

The fit (`fit`, whose slope is also PrefillLaw's, proxy/gate/prefill_law.py) is Theil–Sen:
the slope (the median of pairwise slopes, over pairs whose token counts differ by ≥
MIN_SPREAD; robust to a job that stalled on a busy CPU), capped by the median ms/token
ratio (with a non-negative fixed part the slope is below it), and the fixed part the
median of `ms − slope × tokens`, at least 0 (Sen 1968, "Estimates of the regression
coefficient based on Kendall's tau", JASA 63: the intercept as a median of residuals).
Without spread, the median ratio and no fixed part: a job of the size seen is priced
right, a bigger one too dear (the safe side). Refitted when the samples change, over the
last `window` (32: 496 pairs, ~0.1 ms on the event loop).

Guarded against a request that would teach it a price for everyone. The question's part
of a job is timed apart and not learned here (the gate, proxy/gate/decide.py); the gate
keeps one law per tenant; and here:
- each part is clamped to a physical band: the fixed part to [0, MAX_FIXED_MS], the rate
  to [0, MAX_MS_PER_TOKEN] (their comments say where the numbers come from);
- a sample counts for `max_age` seconds (proxy/gate/learning.py `MAX_AGE_S`, 60 s), so a
  poisoned law is gone that long after its last poisoned sample, whatever follows
  (None: never ages, for the proxy's own calibration runs, which no request shapes).
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable

from proxy.gate.learning import MAX_AGE_S, clamp

MIN_SAMPLE_TOKENS = 64
MIN_SPREAD = 1.25  # two samples give a slope only when their token counts differ this much
# A job's fixed part is the hand-off to a worker and back, the splice and the memo's
# bookkeeping: 12 ms measured on a loaded Intel Xeon; the bound is 4 times that.
MAX_FIXED_MS = 50.0
# The dearest compressor measured, LLMLingua-2 fp32 on 2 CPU cores, costs 1.64 ms per
# token (DESIGN.md); the bound is 12 times that (a CPU shared with a busy neighbour).
MAX_MS_PER_TOKEN = 20.0


class JobCost:
    def __init__(
        self,
        window: int = 32,
        max_age: float | None = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.samples: deque[tuple[float, float, float]] = deque(maxlen=window)  # tokens, ms, at
        self.max_age, self.clock = max_age, clock
        self._law: tuple[float, float] | None = None  # None: nothing measured (or aged out)

    def add(self, ms: float, tokens: float) -> None:
        if tokens >= MIN_SAMPLE_TOKENS and ms >= 0:
            self.samples.append((float(tokens), float(ms), self.clock()))
            self._refit()

    def _current(self) -> tuple[float, float] | None:
        """(per token, fixed ms) over the samples young enough; the old ones leave."""
        if self.max_age is not None and self.samples:
            now, aged = self.clock(), False
            while self.samples and now - self.samples[0][2] > self.max_age:
                self.samples.popleft()
                aged = True
            if aged:
                self._refit()
        return self._law

    def _refit(self) -> None:
        if not self.samples:
            self._law = None
            return
        per_token, fixed = fit((tokens, ms) for tokens, ms, _ in self.samples)
        self._law = clamp(per_token, 0.0, MAX_MS_PER_TOKEN), clamp(fixed, 0.0, MAX_FIXED_MS)

    @property
    def per_token(self) -> float | None:
        """ms per token; None: nothing measured yet (or it all aged out)."""
        law = self._current()
        return None if law is None else law[0]

    @property
    def fixed_ms(self) -> float:
        law = self._current()
        return 0.0 if law is None else law[1]

    def ms(self, tokens: float) -> float | None:
        """A job of `tokens`, or None before any sample."""
        if self.per_token is None:
            return None
        return self.fixed_ms + self.per_token * tokens


def fit(samples: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """(ms per token, fixed ms) of (tokens, ms) samples, as the module docstring says;
    PrefillLaw (proxy/gate/prefill_law.py) reads the slope of the same fit."""
    pts = sorted(samples)
    ratio = statistics.median(ms / tokens for tokens, ms in pts)
    slopes = [
        (m2 - m1) / (t2 - t1)
        for i, (t1, m1) in enumerate(pts)
        for t2, m2 in pts[i + 1 :]
        if t2 >= MIN_SPREAD * t1
    ]
    if not slopes:
        return ratio, 0.0
    slope = min(ratio, max(0.0, statistics.median(slopes)))
    return slope, max(0.0, statistics.median(ms - slope * tokens for tokens, ms in pts))


class TenantLaws:
    """One tenant's laws (its jobs price its own requests only): all-unseen
    jobs teach `cold`, jobs with seen documents `seen` (proxy/gate/decide.py), and every
    compressing request `finish`: what it spends after its job (the merge, the stored
    form's settling and growth, the blocks of what is sent), on the event loop, charged
    with the job (~0.2 ms at 2k context tokens, ~1 ms at 16k)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.cold = JobCost(clock=clock)
        self.seen = JobCost(clock=clock)
        self.finish = JobCost(clock=clock)
