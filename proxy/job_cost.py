"""A compression job's cost: `fixed_ms + per_token × tokens`, learned from observed jobs.

Why: a job costs more than its tokens. The hand-off to a worker thread and back, the
question's encoding, the selection, the splice and the memo's bookkeeping cost about the
same for 400 tokens as for 4,000. bench.ttft_sim measured a 450–650-token job at 19 ms
where the median ms/token learned from the same traffic predicted ~7 ms (issue 18, Intel
Xeon, 0.03 ms/token cells): priced by a ratio alone, small contexts look cheap (and lose
at GPU speed) and big ones dear.

The fit (`fit`, whose slope is also PrefillLaw's, proxy/prefill_cost.py) is Theil–Sen:
the slope (the median of pairwise slopes, over pairs whose token counts differ by ≥
MIN_SPREAD; robust to a job that stalled on a busy CPU), capped by the median ms/token
ratio (with a non-negative fixed part the slope is below it), and the fixed part the
median of `ms − slope × tokens`, at least 0 (Sen 1968, "Estimates of the regression
coefficient based on Kendall's tau", JASA 63: the intercept as a median of residuals).
Without spread, the median ratio and no fixed part: a job of the size seen is priced
right, a bigger one too dear (the safe side). Refitted per sample over the last `window`
(32: 496 pairs, ~0.1 ms on the event loop).
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable

MIN_SAMPLE_TOKENS = 64
MIN_SPREAD = 1.25  # two samples give a slope only when their token counts differ this much


class JobCost:
    def __init__(self, window: int = 32):
        self.samples: deque[tuple[float, float]] = deque(maxlen=window)
        self.per_token: float | None = None  # None: nothing measured yet
        self.fixed_ms = 0.0

    def add(self, ms: float, tokens: float) -> None:
        if tokens >= MIN_SAMPLE_TOKENS and ms >= 0:
            self.samples.append((float(tokens), float(ms)))
            self.per_token, self.fixed_ms = fit(self.samples)

    def ms(self, tokens: float) -> float | None:
        """A job of `tokens`, or None before any sample."""
        if self.per_token is None:
            return None
        return self.fixed_ms + self.per_token * tokens


def fit(samples: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """(ms per token, fixed ms) of (tokens, ms) samples, as the module docstring says;
    PrefillLaw (proxy/prefill_cost.py) reads the slope of the same fit."""
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
