"""What ragtrim adds on the way, beside two floors, in one interleaved run:

    direct    the raw-asyncio stub (tests/doubles/fast_stub.py)
    nginx     Debian's nginx-light, 1 worker, proxy_buffering off, keep-alive upstream
    floor     a bare pass-through ASGI app on ragtrim's own server + client stack
              (uvicorn + httptools + uvloop, aiohttp): the Python floor
    ragtrim   `ragtrim serve`, 1 worker (and 2 workers for throughput)
    ragtrim_traced  the same with tracing on, exporting every span over OTLP/HTTP to a
              sink (tests/doubles/otlp_sink.py): `tracing_added_p50_ms` is it minus ragtrim,
              paired request by request in the same interleaved run

c=1: each request goes to every target in turn (latency of JSON answers, time to the
first byte of SSE answers); CPU ms per request from each process tree's /proc
counters over that phase. c=32: throughput, alternated twice to spread machine noise.

    .venv/bin/python -m bench.overhead [--n 2000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.lib.common import free_port, percentile, spawn, spawn_ragtrim, stop, write_result
from bench.lib.loadgen import Timed, throughput
from bench.lib.procs import cpu_ms, start_nginx

PATH = "/v1/chat/completions"
BODY = {"model": "stub-model", "messages": [{"role": "user", "content": "hello " * 50}]}
TARGETS = ("direct", "nginx", "floor", "floor_granian", "ragtrim", "ragtrim_traced")


def _start_all(stub_port: int) -> dict:
    ports = {name: free_port() for name in (*TARGETS, "ragtrim2")}
    procs = {"direct": spawn([sys.executable, "-m", "tests.doubles.fast_stub", "--port",
                              str(stub_port)], f"http://127.0.0.1:{stub_port}/health")}  # fmt: skip
    ports["direct"] = stub_port
    backend = f"http://127.0.0.1:{stub_port}"
    nginx, _ = start_nginx(ports["nginx"], stub_port)
    procs["nginx"] = nginx
    floor_args = [sys.executable, "-m", "bench.lib.floor_app", "--port", str(ports["floor"]),
                  "--backend", backend]  # fmt: skip
    procs["floor"] = spawn(floor_args, f"http://127.0.0.1:{ports['floor']}/health")
    procs["floor_granian"] = _granian_floor(ports["floor_granian"], backend)
    procs["ragtrim"] = spawn_ragtrim([backend], ports["ragtrim"])
    procs["ragtrim2"] = spawn_ragtrim([backend], ports["ragtrim2"], {"RAGTRIM_WORKERS": "2"})
    procs["otlp_sink"], traced = _traced_env(free_port())
    procs["ragtrim_traced"] = spawn_ragtrim([backend], ports["ragtrim_traced"], traced)
    _wait_nginx(ports["nginx"])
    return {"ports": ports, "procs": procs}


def _traced_env(sink_port: int):
    """The OTLP sink, and the variables that turn ragtrim's tracing on towards it."""
    sink = spawn([sys.executable, "-m", "tests.doubles.otlp_sink", "--port", str(sink_port)],
                 f"http://127.0.0.1:{sink_port}/health")  # fmt: skip
    endpoint = f"http://127.0.0.1:{sink_port}/v1/traces"
    return sink, {"RAGTRIM_TRACING__ENABLED": "on", "RAGTRIM_TRACING__ENDPOINT": endpoint}


def _granian_floor(port: int, backend: str):
    """The same floor app on granian (Rust HTTP server), to compare server stacks."""
    granian = str(Path(sys.executable).with_name("granian"))
    args = [granian, "--interface", "asgi", "--factory", "--host", "127.0.0.1", "--port",
            str(port), "--loop", "uvloop", "--workers", "1", "--no-log",
            "bench.lib.floor_app:from_env"]  # fmt: skip
    return spawn(args, f"http://127.0.0.1:{port}/health", {"FLOOR_BACKEND": backend})


def _wait_nginx(port: int) -> None:
    import time

    import httpx

    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError("nginx did not start")


def _interleaved(clients: dict[str, Timed], n: int, stream: bool) -> dict[str, list[float]]:
    body = json.dumps({**BODY, "stream": stream}).encode()
    measure = "ttfb_ms" if stream else "total_ms"
    times: dict[str, list[float]] = {name: [] for name in clients}
    for i in range(n + n // 10):
        for name, client in clients.items():
            t = getattr(client, measure)(PATH, body)
            if i >= n // 10:  # the first 10% warm up every path
                times[name].append(t)
    return times


def _latency_phase(env: dict, n: int) -> tuple[dict, dict, dict]:
    clients = {name: Timed(env["ports"][name]) for name in TARGETS}
    before = {name: cpu_ms(env["procs"][name].pid) for name in TARGETS}
    json_t = _interleaved(clients, n, stream=False)
    sse_t = _interleaved(clients, n, stream=True)
    sent = 2 * (n + n // 10)
    cpu = {name: (cpu_ms(env["procs"][name].pid) - before[name]) / sent for name in TARGETS}
    return json_t, sse_t, cpu


def _throughput_phase(env: dict, seconds: float) -> dict[str, float]:
    body = json.dumps(BODY).encode()
    rps: dict[str, float] = {}
    for _ in range(2):
        for name in (*TARGETS, "ragtrim2"):
            got = throughput(env["ports"][name], PATH, body, 32, seconds)
            rps[name] = rps.get(name, 0.0) + got / 2
    return rps


def _added(times: dict, name: str, q: float) -> float:
    return round(percentile(times[name], q) - percentile(times["direct"], q), 3)


def _tracing(json_t: dict, sse_t: dict, cpu: dict) -> dict:
    """Tracing on minus off, both ragtrim with one worker, in the same interleaved run."""
    p50 = {name: percentile(json_t[name], 50) for name in ("ragtrim", "ragtrim_traced")}
    ttfb = {name: percentile(sse_t[name], 50) for name in ("ragtrim", "ragtrim_traced")}
    return {
        "tracing_added_p50_ms": round(p50["ragtrim_traced"] - p50["ragtrim"], 3),
        "tracing_ttfb_added_p50_ms": round(ttfb["ragtrim_traced"] - ttfb["ragtrim"], 3),
        "tracing_cpu_ms_per_request": round(cpu["ragtrim_traced"] - cpu["ragtrim"], 3),
    }


def _result(json_t: dict, sse_t: dict, cpu: dict, rps: dict, n: int) -> dict:
    floor_added = _added(json_t, "floor", 50)
    return {
        "added_p50_ms": _added(json_t, "ragtrim", 50),
        "added_p99_ms": _added(json_t, "ragtrim", 99),
        "ttfb_added_p50_ms": _added(sse_t, "ragtrim", 50),
        "ttfb_added_p99_ms": _added(sse_t, "ragtrim", 99),
        "floor_added_p50_ms": floor_added,
        "floor_ttfb_added_p50_ms": _added(sse_t, "floor", 50),
        "floor_granian_added_p50_ms": _added(json_t, "floor_granian", 50),
        "floor_granian_ttfb_added_p50_ms": _added(sse_t, "floor_granian", 50),
        "floor_granian_cpu_ms_per_request": round(cpu["floor_granian"], 3),
        "nginx_added_p50_ms": _added(json_t, "nginx", 50),
        "nginx_ttfb_added_p50_ms": _added(sse_t, "nginx", 50),
        "added_p50_vs_floor": round(_added(json_t, "ragtrim", 50) / max(floor_added, 1e-3), 3),
        "cpu_ms_per_request": round(cpu["ragtrim"], 3),
        "floor_cpu_ms_per_request": round(cpu["floor"], 3),
        "nginx_cpu_ms_per_request": round(cpu["nginx"], 3),
        "direct_cpu_ms_per_request": round(cpu["direct"], 3),
        "cpu_vs_floor": round(cpu["ragtrim"] / max(cpu["floor"], 1e-3), 3),
        **_tracing(json_t, sse_t, cpu),
        "rps_c32": {name: round(v, 1) for name, v in rps.items()},
        "throughput_vs_nginx": round(rps["ragtrim2"] / rps["nginx"], 3),
        "throughput_vs_nginx_1_worker": round(rps["ragtrim"] / rps["nginx"], 3),
        "throughput_ratio": round(rps["ragtrim"] / rps["direct"], 3),
        "direct_p50_ms": round(percentile(json_t["direct"], 50), 3),
        "n": n,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    env = _start_all(free_port())
    try:
        json_t, sse_t, cpu = _latency_phase(env, args.n)
        rps = _throughput_phase(env, args.seconds)
    finally:
        for proc in env["procs"].values():
            stop(proc)
    result = _result(json_t, sse_t, cpu, rps, args.n)
    write_result("overhead", result)
    print(
        f"overhead: added p50 {result['added_p50_ms']} ms (floor {result['floor_added_p50_ms']}, "
        f"nginx {result['nginx_added_p50_ms']}), p99 {result['added_p99_ms']} ms; ttfb added p50 "
        f"{result['ttfb_added_p50_ms']} ms; cpu {result['cpu_ms_per_request']} ms/req (floor "
        f"{result['floor_cpu_ms_per_request']}, nginx {result['nginx_cpu_ms_per_request']}); "
        f"added_p50_vs_floor {result['added_p50_vs_floor']}; "
        f"throughput_vs_nginx {result['throughput_vs_nginx']}; "
        f"tracing_added_p50_ms {result['tracing_added_p50_ms']}"
    )
    return result


if __name__ == "__main__":
    main()
