"""The compression decision, typed: an action, why, and the figures the gate weighed.

`Decision.reason` renders the `x-ragtrim-decision` value clients and benchmarks read
(`skip:not-worth-it(saved=3ms,cost=9ms)`); nothing in the proxy parses it back: code
branches on `action`, `why` and `figures`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Action(StrEnum):
    COMPRESS = "compress"
    SKIP = "skip"
    FAILED_OPEN = "failed-open"  # compression was attempted and the original went


class Why(StrEnum):
    POLICY_ALWAYS = "policy-always"
    SHORT_CONTEXT = "short-context"
    WARM_CACHE = "warm-cache"  # no prefill law yet, every document memoized
    NO_PREFILL_MEASUREMENT = "no-prefill-measurement"
    OVER_BUDGET = "over-budget"  # the job costs more than compression.max_added_ms
    NOT_WORTH_IT = "not-worth-it"  # saves less prefill than it costs
    CACHED = "cached"  # a backend holds the client's prompt: nothing to save
    AUTO = "auto"  # the gate found it pays
    STABLE = "stable"  # the stored compressed form is sent (or checked for the question)
    STABLE_GROWN = "stable-grown"  # ... grown by sentences this question needs
    OPAQUE = "opaque"  # no document the compressor can judge
    LIMITS = "limits"  # the context is beyond compression.limits
    EMPTIED = "emptied"  # the compressor returned nothing of a non-empty context
    BUSY = "busy"
    TIMEOUT = "timeout"
    CRASH = "crash"
    ERROR = "error"


@dataclass(frozen=True)
class Figures:
    """What the gate or the stable check weighed (None: not part of this decision), in
    the order `reason` writes them. Token counts are the tenant's estimate."""

    uncached: float | None = None  # tokens of the client's prompt no backend holds
    form: float | None = None  # tokens of the stored form no backend holds
    saved_ms: float | None = None  # prefill the cut saves
    cost_ms: float | None = None  # the job, its queue wait and its finish
    held: int | None = None  # context tokens a backend holds as sent
    fixed_ms: float | None = None  # the job's fixed part
    queued: float | None = None  # requests waiting at the backends (the multiplier's)
    wait_ms: float | None = None  # expected wait for a compression worker
    asked: bool = False  # this very question was checked against the form before
    context_tokens: int | None = None  # short-context: the context's size

    def text(self) -> str:
        pairs = (("uncached", self.uncached), ("form", self.form))
        parts = [f"{name}={value:.0f}" for name, value in pairs if value is not None]
        for name, value in (("saved", self.saved_ms), ("cost", self.cost_ms)):
            if value is not None:
                parts.append(f"{name}={value:.0f}ms")
        if self.held:
            parts.append(f"held={self.held}")
        if self.fixed_ms:
            parts.append(f"fixed={self.fixed_ms:.0f}ms")
        if self.queued:
            parts.append(f"queued={self.queued:.2g}")
        if self.wait_ms:
            parts.append(f"wait={self.wait_ms:.0f}ms")
        if self.asked:
            parts.append("asked")
        return ",".join(parts)


@dataclass(frozen=True)
class Decision:
    action: Action
    why: Why
    rate: float | None = None  # the keep rate to compress at (None: nothing is compressed)
    figures: Figures = field(default_factory=Figures)
    grown: int = 0  # stable-grown: sentences added to the form

    @property
    def for_cost(self) -> bool:
        """Skipped because the job was priced too dear (what a stale price would cause)."""
        return self.why in (Why.NOT_WORTH_IT, Why.OVER_BUDGET)

    @property
    def compresses(self) -> bool:
        return self.action is Action.COMPRESS

    @property
    def reason(self) -> str:
        """The `x-ragtrim-decision` value."""
        head = f"{self.action}:{self.why}"
        if self.why is Why.STABLE_GROWN:
            head += f"(+{self.grown})"
        if self.why is Why.SHORT_CONTEXT:
            return f"{head}({self.figures.context_tokens})"
        detail = self.figures.text()
        return f"{head}({detail})" if detail else head


def skip(why: Why, **figures) -> Decision:
    return Decision(Action.SKIP, why, None, Figures(**figures))


def compress(why: Why, rate: float | None, **figures) -> Decision:
    return Decision(Action.COMPRESS, why, rate, Figures(**figures))


def failed_open(why: Why) -> Decision:
    return Decision(Action.FAILED_OPEN, why)
