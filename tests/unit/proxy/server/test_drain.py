"""SIGTERM with open streams, against a real `ragtrim serve` process: the listener
closes at once (new connections are refused), open streams finish, and a stream
still open at the drain deadline ends with an error event instead of a cut."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.servers import free_port
from tests.support.waiting import wait_serving

ROOT = Path(__file__).resolve().parents[4]


def _stream(url: str, chunks: int, out: list) -> None:
    body = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}],
            "stream": True, "stub": {"chunks": chunks, "chunk_delay": 0.1}}  # fmt: skip
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=30) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                out.append(line.removeprefix("data: "))


@pytest.fixture
def ragtrim(stub):
    port = free_port()
    args = [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--backends",
            stub.url, "--timeouts-drain-s", "2", "--compression-compressor", "identity",
            "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    wait_serving(url, proc)
    yield proc, port
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def test_sigterm_refuses_new_requests_finishes_open_streams_cuts_the_rest(ragtrim):
    proc, port = ragtrim
    url = f"http://127.0.0.1:{port}"
    short, long = [], []
    threads = [threading.Thread(target=_stream, args=(url, 10, short)),
               threading.Thread(target=_stream, args=(url, 300, long))]  # fmt: skip
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while not (short and long):
        assert time.monotonic() < deadline, "streams did not start"
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    for t in threads:
        t.join(15)
    assert short[-1] == "[DONE]" and len(short) == 11  # 10 events + [DONE]: finished
    assert json.loads(long[-1])["error"]["code"] == "shutting_down"
    assert len(long) < 100  # cut at the 2 s drain deadline, not at the end (30 s)
    assert proc.wait(10) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it caught
