"""Shared benchmark plumbing: processes, percentiles, result files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from proxy.settings import CompressionSettings

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spawn(args: list[str], ready_url: str, env: dict | None = None, timeout: float = 60,
          cwd: Path = ROOT):  # fmt: skip
    """Start a process in `cwd` and wait until `ready_url` answers 200."""
    proc = subprocess.Popen(
        args, cwd=cwd, env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(ready_url, timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"{args} exited with {proc.returncode}")
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{args} not ready after {timeout}s")


def spawn_ragtrim(backends: list[str], port: int, env: dict | None = None, cwd: Path = ROOT):
    """Start ragtrim (from the tree `cwd`) and wait until it is ready and its compressor
    has loaded (a benchmark measures the steady state, not the model load at start-up)."""
    args = [sys.executable, "-m", "proxy", "serve", "--port", str(port),
            "--backends", ",".join(backends), "--log-level", "warning"]  # fmt: skip
    proc = spawn(args, f"http://127.0.0.1:{port}/readyz", env, cwd=cwd)
    deadline = time.monotonic() + 300
    while httpx.get(f"http://127.0.0.1:{port}/readyz").json().get("compressor") in (
        "cold", "loading",
    ):  # fmt: skip
        if time.monotonic() > deadline:
            stop(proc)
            raise RuntimeError("ragtrim's compressor did not load in 300 s")
        time.sleep(0.2)
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


def write_result(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return path


def default_compressor() -> str:
    """What a user gets: the compressor ragtrim runs by default."""
    return CompressionSettings.model_fields["compressor"].default
