"""A real ragtrim process with a pathological operator pattern and a 0.3 s
compression timeout, and a /healthz prober in a process of its own: what the hostile
tests (tests/unit/proxy/server/test_hostile_*.py, issue 23) share."""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.servers import free_port
from tests.support.waiting import wait_serving

ROOT = Path(__file__).resolve().parents[2]
PATTERN = "(?P<context>(a+)+$)"  # backtracks without limit on Python's re
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start(args: list[str], env: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env)


def serve_hostile():
    """The stub and ragtrim, each its own process: none of their work shares the
    test's GIL, so the probes time ragtrim alone."""
    stub_port, port = free_port(), free_port()
    stub = start(["-m", "tests.doubles.stub_vllm", "--port", str(stub_port)])
    args = ["-m", "proxy", "serve", "--port", str(port),
            "--backends", f"http://127.0.0.1:{stub_port}",
            "--compression-policy", "always", "--compression-min-context-tokens", "0",
            "--compression-timeout-s", "0.3", "--log-level", "error"]  # fmt: skip
    proc = start(args, {"RAGTRIM_COMPRESSION__PATTERNS": json.dumps([PATTERN])})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(url, proc, 120, _compressor_ready)
        yield proc, url
    finally:
        for child in (proc, stub):
            child.kill()
            child.wait(10)


def _compressor_ready(resp: httpx.Response) -> bool:
    return resp.json().get("compressor") == "ready"


PROBE = """
import http.client, json, sys, time, select
host, port = sys.argv[1], int(sys.argv[2])
conn, times = http.client.HTTPConnection(host, port, timeout=30), []
while not select.select([sys.stdin], [], [], 0.005)[0]:
    began = time.perf_counter()
    conn.request("GET", "/healthz")
    conn.getresponse().read()
    times.append(time.perf_counter() - began)
    if len(times) == 1:
        print("probing", flush=True)
print(json.dumps(times))
"""


class Prober:
    """GET /healthz in a loop from a process of its own (the test's own GIL, busy with
    2 MB bodies, would delay a thread), timing each answer."""

    def __init__(self, url: str):
        host, port = url.removeprefix("http://").split(":")
        self._args = [sys.executable, "-c", PROBE, host, port]
        self.times: list[float] = []

    def __enter__(self) -> "Prober":
        self._proc = subprocess.Popen(self._args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._proc.stdout.readline() == b"probing\n"  # up before the hostile request
        return self

    def __exit__(self, *exc) -> None:
        out, _ = self._proc.communicate(b"stop\n", timeout=30)
        self.times = json.loads(out)[1:]  # the first one was before the request


def chat(question: str, context: str, **field) -> dict:
    messages = [{"role": "system", "content": "Answer from the context.\n\n" + context},
                {"role": "user", "content": question}]  # fmt: skip
    body = {"model": "stub-model", "messages": messages, "stub": {"echo": True}}
    return {**body, "ragtrim": field} if field else body


def p95(times: list[float]) -> float:
    """The 95th percentile of the probes (their max when there are few)."""
    return statistics.quantiles(times, n=20)[-1] if len(times) >= 20 else max(times, default=0)
