"""Replica discovery against a real DNS server: dnsmasq on loopback (started and
stopped here by PID, on a free port) whose records change while requests flow
through ragtrim to real stub replicas on 127.0.0.2-4 (same port: DNS gives
addresses only, as a headless Service does).

Shown: a replica added to DNS takes traffic within one refresh interval + 1 s and
gets the warm-up replays of the prefixes it owns; a removed one gets no new request
after that while its open streams finish; DNS down keeps the last good set.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn

from proxy.backends.discovery import NameserverResolver
from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import free_port

pytestmark = pytest.mark.integration
NAME = "vllm.ragtrim.test"
INTERVAL = 1.0
REPLICAS = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
PROMPTS = [f"You are assistant number {i}. Answer briefly." for i in range(24)]


def dnsmasq_binary() -> str | None:
    return shutil.which("dnsmasq") or shutil.which("dnsmasq", path="/usr/sbin:/sbin")


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Zone:
    """dnsmasq answering NAME from an --addn-hosts file; `set` rewrites it + SIGHUP."""

    def __init__(self, binary: str, workdir: Path):
        self.port = free_udp_port()
        self.hosts = workdir / "hosts"
        self.hosts.write_text("")
        user = pwd.getpwuid(os.getuid())
        self.argv = [
            binary, "--keep-in-foreground", f"--port={self.port}",
            "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv", "--no-hosts",
            "--local=/ragtrim.test/", f"--addn-hosts={self.hosts}", "--pid-file=",
            f"--user={user.pw_name}", f"--log-facility={workdir / 'dnsmasq.log'}",
        ]  # fmt: skip
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL)
        self.wait_for([])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)

    def set(self, addresses: list[str]) -> None:
        tmp = self.hosts.with_suffix(".tmp")
        tmp.write_text("".join(f"{a} {NAME}\n" for a in addresses))
        tmp.replace(self.hosts)
        os.kill(self.proc.pid, signal.SIGHUP)
        self.wait_for(addresses)

    def wait_for(self, addresses: list[str]) -> None:
        """Until the server itself answers `addresses` (SIGHUP is asynchronous)."""
        import asyncio

        resolver = NameserverResolver(f"127.0.0.1:{self.port}", 0.5)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if asyncio.run(resolver.resolve(NAME, 80)) == sorted(addresses):
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.02)
        raise AssertionError(f"dnsmasq never answered {addresses}")


class Recorder:
    """StubVllm plus a log of the completion bodies it received."""

    def __init__(self) -> None:
        self.stub = StubVllm()
        self.bodies: list[dict] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].endswith("completions"):
            return await self.stub(scope, receive, send)
        chunks = []
        while True:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(chunks)
        self.bodies.append(json.loads(body))
        replayed = iter([{"type": "http.request", "body": body, "more_body": False}])

        async def again():
            return next(replayed, None) or await receive()

        return await self.stub(scope, again, send)

    def replayed_prompts(self) -> set[str]:
        return {b["messages"][0]["content"] for b in self.bodies if b.get("max_tokens") == 1}


@contextmanager
def serve_on(app, host: str, port: int) -> Iterator[None]:
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            loop="asyncio", http="httptools", lifespan="on")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), f"{host}:{port} did not start"
        time.sleep(0.01)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def zone(tmp_path) -> Iterator[Zone]:
    binary = dnsmasq_binary()
    if binary is None:
        pytest.skip("dnsmasq not installed (.ci/run installs dnsmasq-base)")
    zone = Zone(binary, tmp_path)
    zone.start()
    try:
        yield zone
    finally:
        zone.stop()


@pytest.fixture
def replicas() -> Iterator[tuple[int, dict[str, Recorder]]]:
    port = free_port()
    recorders = {host: Recorder() for host in REPLICAS}
    with ExitStack() as stack:
        for host, recorder in recorders.items():
            stack.enter_context(serve_on(recorder, host, port))
        yield port, recorders


def url_of(host: str, port: int) -> str:
    return f"http://{host}:{port}"


def ask(client: httpx.Client, prompt: str) -> str:
    body = {
        "model": "stub-model",
        "max_tokens": 4,
        "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": "hi"}],
    }
    resp = client.post("/v1/chat/completions", json=body)
    assert resp.status_code == 200, resp.text
    return resp.headers["x-ragtrim-backend"]


def stream(base: str, prompt: str, opened: threading.Event) -> tuple[str, list[str]]:
    body = {
        "model": "stub-model",
        "max_tokens": 4,
        "stream": True,
        "stub": {"chunks": 30, "chunk_delay": 0.1},
        "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": "hi"}],
    }
    with (
        httpx.Client(base_url=base, timeout=30) as client,
        client.stream("POST", "/v1/chat/completions", json=body) as resp,
    ):
        assert resp.status_code == 200
        opened.set()
        lines = [line for line in resp.iter_lines() if line.startswith("data: ")]
        return resp.headers["x-ragtrim-backend"], lines


def wait_healthy(client: httpx.Client, n: int) -> None:
    deadline = time.monotonic() + 15
    while len(client.get("/readyz").json()["healthy"]) != n:
        assert time.monotonic() < deadline, client.get("/readyz").json()
        time.sleep(0.05)


def metric(client: httpx.Client, name: str, **labels) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f"{name}{{") and all(p in line for p in want.split(",")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_replicas_join_and_leave_through_real_dns(zone, replicas, ragtrim):
    port, rec = replicas
    a, b, c = (url_of(h, port) for h in REPLICAS)
    zone.set(REPLICAS[:2])
    proxy = ragtrim([f"dns+http://{NAME}:{port}"], compression={"enabled": False},
                    discovery={"interval_s": INTERVAL, "timeout_s": 0.5,
                               "nameserver": f"127.0.0.1:{zone.port}"},
                    health={"interval_s": INTERVAL}, warmup={"top_n": 64})  # fmt: skip
    client = httpx.Client(base_url=proxy.url, timeout=30)
    wait_healthy(client, 2)
    assert {ask(client, p) for p in PROMPTS} == {a, b}  # hot prefixes on both
    owners = join(client, zone, rec, c)
    leave(client, zone, rec, proxy.url, owners, a, b, c)
    dns_down(client, zone, a, c)
    client.close()


def join(client: httpx.Client, zone, rec, c: str) -> dict[str, str]:
    """Traffic to the joiner within one interval + 1 s, and the warm-up of what it owns."""
    zone.set(REPLICAS)
    joined_at, i = time.monotonic(), 0
    while ask(client, PROMPTS[i % len(PROMPTS)]) != c:
        i += 1
        assert time.monotonic() - joined_at <= INTERVAL + 1.0, "joiner got no traffic"
    took = time.monotonic() - joined_at
    print(f"joiner's first request {took:.2f} s after the DNS change (interval {INTERVAL} s)")
    assert took <= INTERVAL + 1.0
    owners = {p: ask(client, p) for p in PROMPTS}
    owned_by_c = {p for p, url in owners.items() if url == c}
    assert owned_by_c
    deadline = time.monotonic() + 5
    while rec[REPLICAS[2]].replayed_prompts() != owned_by_c:
        assert time.monotonic() < deadline, (rec[REPLICAS[2]].replayed_prompts(), owned_by_c)
        time.sleep(0.05)
    return owners


def leave(client, zone, rec, url: str, owners: dict[str, str], a: str, b: str, c: str) -> None:
    """Open streams to b finish; no new request reaches b after interval + 1 s (bounded
    load may send a second concurrent one elsewhere: those are checked too)."""
    to_b = [p for p, owner in owners.items() if owner == b][:3]
    with ThreadPoolExecutor(len(to_b)) as pool:
        streams = []
        for prompt in to_b:  # one at a time, so the first surely lands on b
            opened = threading.Event()
            streams.append(pool.submit(stream, url, prompt, opened))
            assert opened.wait(10)
        zone.set([REPLICAS[0], REPLICAS[2]])
        time.sleep(INTERVAL + 1.0)
        started = rec[REPLICAS[1]].stub.stats["started"]
        after = {ask(client, p) for p in PROMPTS}
        results = [s.result(timeout=30) for s in streams]
    assert after == {a, c} and rec[REPLICAS[1]].stub.stats["started"] == started
    assert b in {backend for backend, _ in results}
    for _, lines in results:  # every chunk, no error event, a clean end
        assert len(lines) == 31 and lines[-1] == "data: [DONE]"
        assert not any('"error"' in line for line in lines)
    assert rec[REPLICAS[1]].stub.stats["aborted"] == 0


def dns_down(client: httpx.Client, zone, a: str, c: str) -> None:
    """DNS down: the last good set stays, counted."""
    zone.stop()
    errors_before = metric(client, "ragtrim_discovery_refreshes_total", result="error")
    time.sleep(INTERVAL * 2.5)
    assert metric(client, "ragtrim_discovery_refreshes_total", result="error") > errors_before
    assert sorted(client.get("/readyz").json()["healthy"]) == [a, c]
    assert {ask(client, p) for p in PROMPTS} == {a, c}
