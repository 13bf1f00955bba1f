"""The HTTP edge's limits on a real `ragtrim serve` process (issue 23, class 4): a slow
head, a head sent a byte at a time, a body shorter than its Content-Length, a huge
head and a malformed request are each cut within their limit with an answer in the
envelope, while /healthz keeps answering within 50 ms; unauthenticated or stalled
clients hold no admission slot; a worker takes no more than its connections."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support import rawhttp
from tests.support.servers import free_port
from tests.support.waiting import wait_serving

ROOT = Path(__file__).resolve().parents[4]
HEAD_S, BODY_S, MAX_CONNECTIONS = 1.0, 1.5, 24
KEY = {"authorization": "Bearer key-a"}
CHAT = json.dumps({"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]})


@pytest.fixture(scope="module")
def module_stub():
    from tests.doubles.stub_vllm import StubVllm
    from tests.support.servers import serving

    with serving(StubVllm()) as server:
        yield server


@pytest.fixture(scope="module")
def edge(module_stub):
    port = free_port()
    tenancy = json.dumps({"key-a": "acme"})
    args = [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--backends",
            module_stub.url, "--compression-compressor", "identity", "--log-level", "error",
            "--http-head-timeout-s", str(HEAD_S), "--http-body-timeout-s", str(BODY_S),
            "--http-max-headers", "20", "--http-max-head-bytes", "8192",
            "--http-max-connections", str(MAX_CONNECTIONS), "--admission-max-in-flight", "2",
            "--tenancy-api-keys", tenancy, "--tenancy-salt-secret", "edge-limits-secret-1",
            ]  # fmt: skip
    proc = subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wait_serving(f"http://127.0.0.1:{port}", proc)
    warm = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", content=CHAT, headers=KEY)
    assert warm.status_code == 200  # first-request costs (lazy imports) out of the timings
    yield proc, port
    proc.kill()
    proc.wait(10)


def _open(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _cut(port: int, parts: list[bytes], gap: float, out: dict, name: str) -> None:
    """Send `parts` `gap` seconds apart; record the answer and when the server cut us."""
    start = time.monotonic()
    with _open(port) as sock:
        try:
            for part in parts:
                sock.sendall(part)
                time.sleep(gap)
        except OSError:
            pass  # the server closed while we were still sending: that is the point
        data = rawhttp.read_all(sock, 10)
    out[name] = (time.monotonic() - start, data)


def _healthz_latencies(port: int, stop: threading.Event, out: list[float]) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        while not stop.is_set():
            start = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            out.append(time.perf_counter() - start)
            time.sleep(0.05)


def test_slow_heads_short_bodies_and_huge_heads_are_cut_while_healthz_answers(edge):
    _, port = edge
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer key-a\r\n"
    short = head + b"content-length: 1000\r\n\r\n" + CHAT.encode()[:10]
    shapes = {
        "partial_head": ([b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"], 0),
        "byte_a_second": ([bytes([b]) for b in head * 3], 0.2),
        "short_body": ([short], 0),
        "many_headers": ([b"GET /healthz HTTP/1.1\r\n" + b"x-a: b\r\n" * 30 + b"\r\n"], 0),
        "long_header": ([b"GET /healthz HTTP/1.1\r\nx-big: " + b"a" * 4000] * 3, 0.05),
    }
    out: dict = {}
    stop, latencies = threading.Event(), []
    probe = threading.Thread(target=_healthz_latencies, args=(port, stop, latencies))
    probe.start()
    threads = [threading.Thread(target=_cut, args=(port, parts, gap, out, name))
               for name, (parts, gap) in shapes.items()]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    stop.set()
    probe.join(5)
    _check_cuts(out)
    metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", headers=KEY).text
    for reason, least in (("head_timeout", 2), ("body_timeout", 1),
                          ("request_header_fields_too_large", 2)):  # fmt: skip
        assert _counted(metrics, reason) >= least, reason
    # Within 50 ms, and never as long as a cut: a loop held by a slow client would hold
    # a probe for ≥ HEAD_S. On a loaded 2-core box the slowest few probes wait for a
    # core (spikes of 100-500 ms show with no hostile client at all), so the median
    # carries the 50 ms (the maximum is worth reading on a quiet machine).
    ordered = sorted(latencies)
    median = ordered[len(ordered) // 2]
    assert len(ordered) >= 10 and median < 0.05 and ordered[-1] < HEAD_S, ordered


def _check_cuts(out: dict) -> None:
    expected = {"partial_head": (408, HEAD_S), "byte_a_second": (408, HEAD_S),
                "short_body": (408, BODY_S), "many_headers": (431, 0.0),
                "long_header": (431, 0.0)}  # fmt: skip
    for name, (status, limit) in expected.items():
        elapsed, data = out[name]
        resp = rawhttp.parse(data, elapsed)
        assert resp.status == status, (name, data[:200])
        assert resp.error()["code"] in ("request_timeout", "request_header_fields_too_large")
        assert resp.headers["connection"] == "close"
        assert limit - 0.1 <= elapsed < limit + 1.5, (name, elapsed)  # slack: a busy CI box


def _counted(metrics: str, reason: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(f'ragtrim_http_refused_total{{reason="{reason}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_a_flood_of_headers_is_cut_early_without_growing_memory(edge):
    proc, port = edge
    before = _rss_kb(proc.pid)
    header = b"x-pad: " + b"a" * 1017 + b"\r\n"  # 1 KB per field, 64,000 of them
    start, sent = time.monotonic(), 0
    with _open(port) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")
        with pytest.raises(OSError):  # cut long before the 64 MB are out
            for _ in range(64_000):
                sock.sendall(header)
                sent += len(header)
    assert time.monotonic() - start < 2 and sent < 8 << 20
    assert _rss_kb(proc.pid) - before < 20_000  # KB


def test_malformed_requests_get_a_400_in_the_envelope(edge):
    _, port = edge
    for raw in (b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nbad header\r\n\r\n",
                b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: x\r\n\r\n"):  # fmt: skip
        resp = rawhttp.exchange(port, raw)
        assert resp.status == 400 and resp.error()["code"] == "bad_http_request", raw


def test_a_kept_alive_connection_gets_a_fresh_head_timeout(edge):
    _, port = edge
    with _open(port) as sock:
        sock.sendall(rawhttp.get("/healthz"))
        first = rawhttp.read_all(sock, 5)
        assert rawhttp.parse(first, 0).status == 200
        time.sleep(0.8)  # most of a head timeout, idle (keep-alive), then a partial head
        start = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        resp = rawhttp.parse(rawhttp.read_all(sock, 5), 0)
    assert resp.status == 408 and HEAD_S - 0.1 <= time.monotonic() - start < HEAD_S + 1.5


def _stalled(port: int, key: bool) -> socket.socket:
    sock = _open(port)
    auth = b"authorization: Bearer key-a\r\n" if key else b""
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n" + auth +
                 b"content-length: 500\r\n\r\n{")  # fmt: skip
    return sock


def test_stalled_or_unauthenticated_clients_hold_no_admission_slot(edge):
    _, port = edge  # admission.max_in_flight is 2
    stalled = [_stalled(port, key) for key in (True, True, True, False, False, False)]
    try:
        time.sleep(0.2)
        for _ in range(3):
            resp = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", content=CHAT,
                              headers=KEY, timeout=5)  # fmt: skip
            assert resp.status_code == 200, resp.text
        unauthenticated = rawhttp.parse(rawhttp.read_all(stalled[-1], 2), 0)
        assert unauthenticated.status == 401  # at once, on the head: the body never read
    finally:
        for sock in stalled:
            sock.close()


def test_connections_beyond_the_cap_get_a_503_at_accept(edge):
    _, port = edge
    time.sleep(BODY_S)  # earlier tests' connections are gone
    held = [_open(port) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.2)
        resp = rawhttp.parse(rawhttp.read_all(_open(port), 2), 0)
        assert resp.status == 503 and resp.error()["code"] == "too_many_connections"
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 5  # the server sees the closes soon, not at once
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "connections were not freed"
        time.sleep(0.05)


def test_a_pipelined_request_gets_its_clocks_after_the_one_before(edge):
    _, port = edge
    slow = {"chunks": 15, "chunk_delay": 0.1}  # 1.5 s, past the 1 s head timeout
    stream = json.dumps({**json.loads(CHAT), "stream": True, "stub": slow})
    first = rawhttp.post("/v1/chat/completions", stream.encode(), KEY)
    with _open(port) as sock:
        start = time.monotonic()
        sock.sendall(first + b"GET /healthz HTTP/1.1\r\n")  # a second head, never finished
        data = rawhttp.read_all(sock, 10)
        elapsed = time.monotonic() - start
        while chunk := sock.recv(65536):  # read_all stops at the first response's end
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"data: [DONE]" in rest  # stream whole
    assert rest.count(b"HTTP/1.1 408") == 1 and rest.rindex(b"HTTP/1.1 408") > rest.index(
        b"[DONE]")  # fmt: skip
    assert elapsed > 1.5 + HEAD_S - 0.2  # the second head's clock began after the stream


def test_an_upgrade_request_is_plain_http(edge):
    _, port = edge  # no WebSocket protocol at all: nothing outlives the edge's clocks
    upgrade = {"connection": "upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
               "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="}  # fmt: skip
    resp = rawhttp.exchange(port, rawhttp.get("/healthz", upgrade))
    assert resp.status == 200 and json.loads(resp.body) == {"status": "alive"}
