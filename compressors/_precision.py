"""Device and precision for the torch compressors, chosen by measuring on this machine.

`precision="auto"` runs a fixed calibration workload (calibration.py) once at load in
every candidate precision, and keeps the fastest whose decisions agree with fp32's on at
least `bar + MARGIN` of the units (words for LLMLingua-2, sentences for extractive); fp32
is the reference and always qualifies. MARGIN is for the calibration sample's noise.
Why measure, and the margin's size: docs/decisions/0011-compressor-cost-and-calibration.md.

- `resolve_device("auto")` → "cuda" when torch sees a GPU, else "cpu" (compressors
  resolve it at load, so building one imports no model library);
- `prepare(device, precision, num_threads)` → the device, resolved and checked, with
  torch's threads set (what each torch compressor does first at load);
- `candidates(device)` → the precisions worth trying there (int8 is CPU-only);
- `choose(run, precisions, agree, bar)` → (picked precision, trials), where
  `run(precision)` returns a zero-argument callable doing the calibration work and
  returning its decisions; each is timed `repeats` times after one warm-up call and
  its best time counts (the least disturbed by other work on a shared machine).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "bf16", "int8")
AUTO = "auto"
DEFAULT_BAR = 0.99  # the agreement bar of bench.compress_cost
MARGIN = 0.005


def resolve_device(device: str) -> str:
    """ "auto" → "cuda" when torch sees a GPU, else "cpu"; anything else unchanged."""
    if device != AUTO:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def check(device: str, precision: str) -> None:
    """Reject unknown values, and int8 on a GPU (`device` "auto" is checked once resolved:
    resolving imports torch, which building a compressor must not)."""
    if precision != AUTO and precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {(*PRECISIONS, AUTO)}, got {precision!r}")
    if device != AUTO and precision == "int8" and not device.startswith("cpu"):
        raise ValueError("int8 (dynamic quantization) runs on CPU only")


def prepare(device: str, precision: str | None = None, num_threads: int = 0) -> str:
    """What a torch compressor does first when it loads its model: `device` resolved,
    `precision` (when it has one) checked against it, torch's thread count set when
    `num_threads` is given (process-wide: torch has one pool). Returns the device."""
    device = resolve_device(device)
    if precision is not None:
        check(device, precision)
    if num_threads:
        import torch

        torch.set_num_threads(num_threads)
    return device


def candidates(device: str) -> tuple[str, ...]:
    """Precisions to try on `device`, fp32 (the reference) first."""
    if device.startswith("cpu"):
        return PRECISIONS
    return ("fp32", "bf16")


@dataclass(frozen=True)
class Trial:
    precision: str
    seconds: float  # best of the timed runs
    agreement: float  # share of decisions equal to fp32's

    def as_dict(self) -> dict:
        return {
            "precision": self.precision,
            "seconds": round(self.seconds, 5),
            "agreement": round(self.agreement, 4),
        }


def pick(trials: Sequence[Trial], bar: float, margin: float = MARGIN) -> str:
    """The fastest trial that keeps bar + margin (ties: earlier in `trials`); fp32 always
    does."""
    qualifying = [t for t in trials if t.precision == "fp32" or t.agreement >= bar + margin]
    return min(qualifying, key=lambda t: t.seconds).precision


def _timed(work: Callable[[], object], repeats: int, clock) -> tuple[float, object]:
    result = work()  # warm-up: lazy initialisation, kernel selection, allocator
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        result = work()
        best = min(best, clock() - start)
    return best, result


def choose(
    run: Callable[[str], Callable[[], object]],
    precisions: Sequence[str],
    agree: Callable[[object, object], float],
    bar: float = DEFAULT_BAR,
    *,
    margin: float = MARGIN,
    repeats: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[str, list[Trial]]:
    """Measure every precision (fp32 first, as the reference) and pick one."""
    order = ["fp32", *[p for p in precisions if p != "fp32"]]
    trials, reference = [], None
    for precision in order:
        seconds, decisions = _timed(run(precision), repeats, clock)
        if reference is None:
            reference = decisions
        trials.append(Trial(precision, seconds, agree(reference, decisions)))
    return pick(trials, bar, margin), trials


def share_equal(a: Sequence[Sequence[bool]], b: Sequence[Sequence[bool]]) -> float:
    """Share of equal flags between two lists of flag lists of the same shapes."""
    pairs = [(x, y) for xs, ys in zip(a, b, strict=True) for x, y in zip(xs, ys, strict=True)]
    return sum(x == y for x, y in pairs) / len(pairs) if pairs else 1.0
