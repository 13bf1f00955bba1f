"""What a CompressionEngine call raises instead of giving back its `Outcome`
(proxy/outcome/job.py); the compression service fails the request open on each."""

from __future__ import annotations


class CompressionBusy(Exception):
    """Every compression worker is busy; the caller forwards the original."""


class WorkerCrashed(Exception):
    """The compressor raised a BaseException (SystemExit, KeyboardInterrupt, ...) in its
    worker. Left as it was, asyncio would re-raise it in the event loop and stop the
    server; as an ordinary exception it fails this request open like any other."""
