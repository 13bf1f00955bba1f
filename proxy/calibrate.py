"""Measure the compressor once at start-up, so the cost gate's first decisions use this
machine's cost instead of a prior.

The priors in proxy/gate.py are figures from one machine; on another (or under load)
the real cost can be several times higher, and the first cold compressions would then
make requests slower — measured in bench.ttft_sim: the extractive prior of 0.12 ms per
token against ≈ 0.5 here made the first request of a run 1.5× slower than direct.
One compression of a synthetic ~700-token document after the model has loaded gives
the gate (and the engine's queue-wait estimate) a real sample before traffic needs it.
The engine runs it in its worker while loading (CompressionEngine.warm); the compress
stage hands the Outcome to the gate. A failure only leaves the prior in place.
"""

from __future__ import annotations

QUESTION = "What did the regional library report?"
SUBJECTS = ("the river authority", "a regional library", "the harvest committee",
            "an orbital survey", "the signal office", "a mountain school")  # fmt: skip


def calibration_documents(sentences: int = 40) -> list[str]:
    """Deterministic English-like prose with numbers and dates, in four documents."""
    lines = [
        f"In {1900 + 3 * i}, {SUBJECTS[i % len(SUBJECTS)]} reported {17 * i + 5} new "
        f"findings about {SUBJECTS[(i * 5 + 1) % len(SUBJECTS)]}, and its members met "
        f"again on {i % 28 + 1} March to review them."
        for i in range(sentences)
    ]
    quarter = sentences // 4
    return [" ".join(lines[k * quarter : (k + 1) * quarter]) for k in range(4)]
