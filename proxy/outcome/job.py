"""What one compression job gave back: `Outcome`, made by the engine
(proxy/compression/engine.py), read by the compression service and the cost gate, which
learns its prices from these fields (proxy/gate/decide.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cache.memo import MemoEntry


@dataclass(frozen=True)
class Outcome:
    texts: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    hits: int
    misses: int
    ms: float  # total added to the request: lookup + queue wait + work
    work_ms: float = 0.0  # in the worker thread (what the gate learns cost from)
    wait_ms: float = 0.0  # queued for a worker
    seen: int = 0  # of the misses, documents whose features were memoized (cheap)
    in_flight: int = 1  # compressions in flight when this one started (contention)
    # what the gate may learn from, nothing a memo hit or the question inflates
    question_ms: float = 0.0  # of work_ms, the question's part (the compressor times it)
    fresh: tuple[int, ...] = ()  # documents compressed now (not memo hits), by index
    fresh_tokens: int = 0  # the compressor's own count of those documents' tokens
    sizes: tuple[tuple[int, int], ...] = ()  # each document's tokens before and after

    @classmethod
    def of(
        cls,
        entries: Sequence[MemoEntry],
        fresh: Sequence[int],
        ms: float,
        timing: Mapping[str, float],
        in_flight: int,
    ) -> Outcome:
        """From each document's entry, the indices computed now (the rest were memo
        hits) and the job's `timing` (the engine's keys: work_ms, wait_ms, seen,
        question_ms)."""
        return cls(
            texts=tuple(e.text for e in entries),
            sizes=tuple((e.tokens_before, e.tokens_after) for e in entries),
            tokens_before=sum(e.tokens_before for e in entries),
            tokens_after=sum(e.tokens_after for e in entries),
            hits=len(entries) - len(fresh),
            misses=len(fresh),
            ms=ms,
            work_ms=timing.get("work_ms", 0.0),
            wait_ms=timing.get("wait_ms", 0.0),
            seen=int(timing.get("seen", 0)),
            in_flight=in_flight,
            question_ms=timing.get("question_ms", 0.0),
            fresh=tuple(fresh),
            fresh_tokens=sum(entries[i].tokens_before for i in fresh),
        )
