"""A slow-reading client: ragtrim relays with backpressure (no unbounded buffer), so
its memory stays flat while a large stream waits for the reader, and the backend is
held back too. Measured on a real `ragtrim serve` process (VmRSS from /proc)."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.asgi_upstreams import BigStream
from tests.support.servers import free_port, serving
from tests.support.waiting import wait_serving

ROOT = Path(__file__).resolve().parents[4]
EVENTS, SIZE = 200, 1 << 20  # a 200 MiB stream


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _start(backend_url: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    args = [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--backends",
            backend_url, "--compression-compressor", "identity",
            "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wait_serving(f"http://127.0.0.1:{port}", proc)
    return proc, port


def _send_request(port: int) -> socket.socket:
    body = json.dumps({"model": "stub-model", "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()  # fmt: skip
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json"
            f"\r\ncontent-length: {len(body)}\r\n\r\n")  # fmt: skip
    sock.sendall(head.encode() + body)
    return sock


def test_memory_stays_bounded_while_the_client_does_not_read():
    backend = BigStream(EVENTS, SIZE)
    with serving(backend) as upstream:
        proc, port = _start(upstream.url)
        try:
            warm = {"model": "stub-model", "stream": True, "messages": []}  # one event
            httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=warm, timeout=30)
            time.sleep(0.5)
            before = _rss_mib(proc.pid)
            sock = _send_request(port)
            time.sleep(1)
            early = _rss_mib(proc.pid)
            time.sleep(2)  # the client still reads nothing
            held = _rss_mib(proc.pid)
            assert backend.completions == 2 and backend.sent < EVENTS // 2, "not held back"
            received = 0
            while chunk := sock.recv(1 << 20):
                received += len(chunk)
                if b"data: [DONE]" in chunk[-20:]:
                    break
            sock.close()
        finally:
            proc.kill()
            proc.wait(10)
    assert held - before < 64, f"RSS grew {held - before:.0f} MiB while the client waited"
    assert held - early < 32, "RSS kept growing while the client did not read"
    assert received > EVENTS * SIZE  # the whole stream arrived once the client read it
