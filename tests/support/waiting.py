"""Polling until a condition holds, for tests of work the code under test does later
(a background task, another thread, a real server): one home for the deadline loop."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable

import httpx


def _deadline(timeout: float, what: str) -> Callable[[], None]:
    end = time.monotonic() + timeout

    def check() -> None:
        assert time.monotonic() < end, f"{what} not reached in {timeout} s"

    return check


async def until(condition: Callable[[], object], timeout: float = 20.0,
                what: str = "condition", every: float = 0.02) -> None:  # fmt: skip
    """Await until `condition()` is true; AssertionError after `timeout` seconds."""
    check = _deadline(timeout, what)
    while not condition():
        check()
        await asyncio.sleep(every)


def wait_for(condition: Callable[[], object], timeout: float = 30.0,
             what: str = "condition", every: float = 0.05) -> None:  # fmt: skip
    """The blocking `until`, for a test outside an event loop."""
    check = _deadline(timeout, what)
    while not condition():
        check()
        time.sleep(every)


def _ok(resp: httpx.Response) -> bool:
    return resp.status_code == 200


def wait_serving(url: str, proc: subprocess.Popen, timeout: float = 60.0,
                 ready: Callable[[httpx.Response], bool] = _ok) -> None:  # fmt: skip
    """Until `url`/readyz answers as `ready` (200 by default); AssertionError once
    `timeout` passes or the process `proc` exits first (its own error is in its log)."""
    check = _deadline(timeout, f"{url} ready")
    while True:
        try:
            if ready(httpx.get(f"{url}/readyz", timeout=1)):
                return
        except (httpx.HTTPError, ValueError):
            pass
        assert proc.poll() is None, f"the server exited with {proc.returncode}"
        check()
        time.sleep(0.1)
