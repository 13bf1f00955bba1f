"""What a CompressionEngine call raises instead of giving back its `Outcome`
(proxy/outcome/job.py); the compression service fails the request open on each."""

from __future__ import annotations

from compressors import DeadlineExceeded
from proxy.outcome.decision import Why


class CompressionBusy(Exception):
    """Every compression worker is busy; the caller forwards the original."""


class WorkerCrashed(Exception):
    """The compressor raised a BaseException (SystemExit, KeyboardInterrupt, ...) in its
    worker. Left as it was, asyncio would re-raise it in the event loop and stop the
    server; as an ordinary exception it fails this request open like any other."""


def failure_reason(exc: BaseException) -> Why:
    """The `failed-open` reason a compression's exception is reported under."""
    if isinstance(exc, CompressionBusy):
        return Why.BUSY
    if isinstance(exc, (TimeoutError, DeadlineExceeded)):  # the worker's own deadline
        return Why.TIMEOUT
    if isinstance(exc, WorkerCrashed):
        return Why.CRASH
    return Why.ERROR
