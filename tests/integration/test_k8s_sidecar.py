"""Sidecar truth: ragtrim started exactly as the rendered sidecar overlay starts it (the
image's ENTRYPOINT, the container's args and env, its mounted ConfigMap and Secret
values), in front of a real vLLM, answers a streamed RAG request with x-ragtrim-*
headers; and the overlay's stop order holds: after ragtrim's SIGTERM its listener is
closed, its open stream still finishes, and vLLM's preStop drain (the script from the
overlay's ConfigMap, with the overlay's arguments) returns only after that stream ended.

What differs from the pod, and only that: vLLM listens on a free port instead of
127.0.0.1:8000, ragtrim on a free loopback port instead of 0.0.0.0:8080, and the drain's
first sleep (time for the Service to drop the pod) is 0.
"""

from __future__ import annotations

import importlib.util
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

from tests.deploy.dockerfile import stages
from tests.deploy.k8s import (
    ROOT,
    container,
    env_of,
    find,
    materialize_config_mounts,
    objects,
    render,
    tools_missing,
)
from tests.support.servers import free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bool(tools_missing()), reason=tools_missing() or "tools"),
]
MODEL = "tiny-llama"
DOCS = " ".join(f"Note {i}: shelf {i} in the room holds {i * 3} atlases." for i in range(60))


def rag_body(model: str, max_tokens: int) -> dict:
    user = f"<ragtrim:doc>{DOCS}</ragtrim:doc><ragtrim:question>Which shelf?</ragtrim:question>"
    return {"model": model, "stream": True, "max_tokens": max_tokens, "ignore_eos": True,
            "temperature": 0, "messages": [{"role": "system", "content": "Answer briefly."},
                                           {"role": "user", "content": user}]}  # fmt: skip


class Sidecar:
    """The rendered overlay's ragtrim container, run as a local process."""

    def __init__(self, tmp: Path, vllm_url: str):
        self.docs = objects(render("sidecar"))
        self.pod = find(self.docs, "Deployment", "vllm")[0]
        self.ragtrim = container(self.pod, "ragtrim")
        self.vllm = container(self.pod, "vllm")
        mounts = materialize_config_mounts(self.pod, self.ragtrim, self.docs, tmp)
        self.drain_dir = materialize_config_mounts(self.pod, self.vllm, self.docs, tmp / "v")
        self.port = free_port()
        env = env_of(self.ragtrim, self.docs)
        vllm_port = self.vllm["ports"][0]["containerPort"]
        assert env["RAGTRIM_BACKENDS"] == f"http://127.0.0.1:{vllm_port}"
        env.update(RAGTRIM_BACKENDS=vllm_url, RAGTRIM_PORT=str(self.port),
                   RAGTRIM_HOST="127.0.0.1")  # fmt: skip
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("RAGTRIM_")}
        self.env.update(env)
        self.argv = self._entrypoint() + [self._local(a, mounts) for a in self.ragtrim["args"]]

    def _entrypoint(self) -> list[str]:
        entry = stages(ROOT / "deploy" / "docker" / "Dockerfile")[-1].exec_form("ENTRYPOINT")
        assert entry[0] == "/opt/ragtrim/bin/ragtrim"  # the image's venv → this machine's
        return [str(Path(sys.executable).parent / "ragtrim"), *entry[1:]]

    @staticmethod
    def _local(arg: str, mounts: dict[str, Path]) -> str:
        for mount_path, local in mounts.items():
            if arg.startswith(mount_path + "/"):
                return str(local / arg[len(mount_path) + 1 :])
        return arg

    def probe_url(self, probe: str) -> str:
        return f"http://127.0.0.1:{self.port}{self.ragtrim[probe]['httpGet']['path']}"

    def drain_argv(self, vllm_url: str) -> list[str]:
        cmd = list(self.vllm["lifecycle"]["preStop"]["exec"]["command"])
        assert cmd[0] == "python3"
        cmd[0], cmd[1] = sys.executable, self._local(cmd[1], self.drain_dir)
        cmd[cmd.index("--sleep") + 1] = "0"
        wait = cmd.index("--wait-closed") + 1
        assert cmd[wait] == f"127.0.0.1:{self.ragtrim['ports'][0]['containerPort']}"
        cmd[wait] = f"127.0.0.1:{self.port}"
        return [*cmd, "--metrics", f"{vllm_url}/metrics"]


def wait_ok(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, "ragtrim exited"
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{url} never answered 200"
        time.sleep(0.2)


def wait_compressor(readyz: str) -> None:
    """The compressor loads in a worker after start-up; requests meanwhile fail open."""
    deadline = time.monotonic() + 120
    while httpx.get(readyz, timeout=5).json()["compressor"] in ("cold", "loading"):
        assert time.monotonic() < deadline, "compressor never loaded"
        time.sleep(0.2)


def load_drain(path: str):
    spec = importlib.util.spec_from_file_location("vllm_drain", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except OSError:
        return True


@pytest.mark.timeout(600)
def test_sidecar_overlay_serves_and_drains_in_order(vllm_tiny, tmp_path):
    vllm_url = vllm_tiny.base_url
    side = Sidecar(tmp_path, vllm_url)
    proc = subprocess.Popen(side.argv, env=side.env, cwd=tmp_path)
    try:
        wait_ok(side.probe_url("startupProbe"), proc, 60)
        wait_ok(side.probe_url("readinessProbe"), proc, 60)  # vLLM healthy behind it
        wait_compressor(side.probe_url("readinessProbe"))
        base = f"http://127.0.0.1:{side.port}"
        # the overlay's policy is auto: the gate decides per request, from measured TTFT
        # (on this CPU vLLM with a tiny model it rightly skips: compressing costs more)
        decisions = [stream_once(base, vllm_url) for _ in range(3)]
        assert decisions[0] == "skip:no-prefill-measurement"  # nothing measured yet
        assert all(d.startswith(("skip:", "compress")) for d in decisions[1:]), decisions
        drain_in_order(side, proc, base, vllm_url)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def stream_once(base: str, vllm_url: str) -> str:
    """One streamed RAG answer through the sidecar; its gate decision."""
    with (
        httpx.Client(base_url=base, timeout=120) as client,
        client.stream("POST", "/v1/chat/completions", json=rag_body(MODEL, 16)) as resp,
    ):
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert resp.headers["x-ragtrim-backend"] == vllm_url
        assert resp.headers["x-ragtrim-template"] == "tags"
        decision = resp.headers["x-ragtrim-decision"]
        if decision.startswith("compress"):
            before = int(resp.headers["x-ragtrim-tokens-before"])
            assert int(resp.headers["x-ragtrim-tokens-after"]) < before
        lines = [ln for ln in resp.iter_lines() if ln.startswith("data: ")]
    assert len(lines) > 2 and lines[-1] == "data: [DONE]"
    return decision


def open_stream(base: str) -> tuple[threading.Thread, dict, threading.Event]:
    """A long streamed answer in a thread; `result` gets its lines and end time."""
    result: dict = {}
    first = threading.Event()

    def stream() -> None:
        with (
            httpx.Client(base_url=base, timeout=120) as client,
            client.stream("POST", "/v1/chat/completions", json=rag_body(MODEL, 3000)) as resp,
        ):
            lines = []
            for line in resp.iter_lines():
                if line.startswith("data: "):
                    lines.append(line)
                    first.set()
            result.update(lines=lines, ended=time.monotonic())

    thread = threading.Thread(target=stream)
    thread.start()
    return thread, result, first


def stream_while_busy(base: str, drain, vllm_url: str) -> tuple[threading.Thread, dict]:
    """A stream that vLLM's own gauges show as running (they lag a step; on a fast
    machine a stream may end before they catch up: then another one, at most 3)."""
    for _ in range(3):
        thread, result, first = open_stream(base)
        assert first.wait(60)
        deadline = time.monotonic() + 10
        while "ended" not in result and time.monotonic() < deadline:
            if drain.busy(f"{vllm_url}/metrics") > 0:
                return thread, result
            time.sleep(0.05)
        thread.join(timeout=120)
    raise AssertionError("vLLM never reported the stream as running")


def drain_in_order(side: Sidecar, proc: subprocess.Popen, base: str, vllm_url: str) -> None:
    drain_argv = side.drain_argv(vllm_url)
    drain = load_drain(drain_argv[1])
    thread, result = stream_while_busy(base, drain, vllm_url)
    os.kill(proc.pid, signal.SIGTERM)  # the kubelet, after ragtrim's preStop sleep
    drainer = subprocess.Popen(drain_argv)
    deadline = time.monotonic() + 10
    while not refused(side.port):  # the listener closes: nothing new gets in
        assert time.monotonic() < deadline, "ragtrim kept its listener after SIGTERM"
        time.sleep(0.05)
    assert "ended" not in result, "stream too short to show the order"
    assert drainer.wait(timeout=300) == 0
    drained = time.monotonic()
    thread.join(timeout=120)
    assert result["lines"][-1] == "data: [DONE]" and len(result["lines"]) > 50
    assert not any('"error"' in line for line in result["lines"])
    assert result["ended"] <= drained  # vLLM's preStop outlived ragtrim's stream
    assert proc.wait(timeout=60) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
