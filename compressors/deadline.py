"""A compression's deadline, checked between phases, so an overrun really stops.

Python cannot stop a thread: the proxy answers a compression that overran its timeout
(it fails open), but the worker thread goes on. So the engine runs each job inside
`within(deadline)`, and the compressors' building blocks (protected
spans, sentence splitting, token counting, selection: each runs once per document) call
`check()`, which raises `DeadlineExceeded` once the deadline has passed. The job ends
at the next checkpoint and frees its worker; every phase between two checkpoints is
linear in one document, which the input caps bound (proxy/settings.py, `compression.limits`).
Why: docs/decisions/0013-text-kept-whole-and-bounded-work.md.

The deadline travels in a `contextvars.ContextVar`, as asyncio's and trio's cancel
scopes do, and not as an argument: the Compressor protocol (compressors/base.py) stays
as it is for every compressor, and a worker thread's context is its own (each job sets
and resets it), so one job never sees another's deadline. Outside `within` (tests,
offline tools, the LangChain integration) `check()` never raises.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("ragtrim_compression_deadline", default=None)


class DeadlineExceeded(Exception):  # noqa: N818 - reads as what happened
    """The compression ran past its deadline and stopped at a checkpoint."""


@contextmanager
def within(deadline: float | None) -> Iterator[None]:
    """Run the block with `deadline` (a `time.monotonic()` instant; None: no limit)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check() -> None:
    """Raise DeadlineExceeded when the current deadline has passed."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlineExceeded("compression deadline passed")
