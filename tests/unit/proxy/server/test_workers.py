"""`ragtrim serve --workers 2` as a real process tree: SO_REUSEPORT listeners in two
spawned workers, a dead worker replaced, SIGTERM drains and exits."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parents[4]
CHAT = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}


def _children(pid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    kids = {int(p) for p in out.split()}
    workers = set()
    for kid in kids:  # the spawn context also starts a resource tracker: skip it
        try:
            cmd = Path(f"/proc/{kid}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue  # it exited (the killed worker, reaped) between pgrep and the read
        if b"spawn_main" in cmd:
            workers.add(kid)
    return workers


def _wait(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def supervisor(stub):
    port = free_port()
    args = [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--workers", "2",
            "--backends", stub.url, "--compression-compressor", "identity",
            "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: len(_children(proc.pid)) == 2 and _ready(url), 60)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _fresh_connection_requests(url: str, n: int) -> list[int]:
    statuses = []
    for _ in range(n):
        with httpx.Client() as client:  # a new connection each: the kernel picks a worker
            statuses.append(client.post(f"{url}/v1/chat/completions", json=CHAT).status_code)
    return statuses


def test_two_workers_serve_replace_a_dead_one_and_drain_on_sigterm(supervisor):
    proc, url = supervisor
    assert _fresh_connection_requests(url, 20) == [200] * 20
    victim = min(_children(proc.pid))
    os.kill(victim, signal.SIGKILL)
    _wait(lambda: victim not in _children(proc.pid) and len(_children(proc.pid)) == 2, 30)
    _wait(lambda: _ready(url), 30)
    assert _fresh_connection_requests(url, 10) == [200] * 10
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
