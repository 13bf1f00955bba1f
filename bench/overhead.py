"""What ragtrim adds on the way: a fast stub upstream measured directly and through
ragtrim in one run, interleaved, at concurrency 1 (latency, TTFB) and 32 (throughput).

    .venv/bin/python -m bench.overhead [--n 2000] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import sys

from bench.common import free_port, percentile, spawn, spawn_ragtrim, stop, write_result
from bench.loadgen import Timed, throughput

PATH = "/v1/chat/completions"
BODY = {"model": "stub-model", "messages": [{"role": "user", "content": "hello " * 50}]}


def _interleaved(direct: Timed, proxied: Timed, n: int, stream: bool) -> tuple[list, list]:
    body = json.dumps({**BODY, "stream": stream}).encode()
    measure = "ttfb_ms" if stream else "total_ms"
    d_times, p_times = [], []
    for i in range(n + n // 10):
        d = getattr(direct, measure)(PATH, body)
        p = getattr(proxied, measure)(PATH, body)
        if i >= n // 10:  # the first 10% warm up both paths
            d_times.append(d)
            p_times.append(p)
    return d_times, p_times


def _added(d: list[float], p: list[float], q: float) -> float:
    return round(percentile(p, q) - percentile(d, q), 3)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    stub_port, proxy_port = free_port(), free_port()
    stub_args = [sys.executable, "deploy/local/stub_vllm.py", "--port", str(stub_port)]
    stub = spawn(stub_args, f"http://127.0.0.1:{stub_port}/health")
    proxy = spawn_ragtrim([f"http://127.0.0.1:{stub_port}"], proxy_port)
    try:
        direct, proxied = Timed(stub_port), Timed(proxy_port)
        d_json, p_json = _interleaved(direct, proxied, args.n, stream=False)
        d_sse, p_sse = _interleaved(direct, proxied, args.n, stream=True)
        body = json.dumps(BODY).encode()
        rps = {"direct": [], "proxied": []}
        for _ in range(2):  # alternate to spread machine noise over both
            rps["direct"].append(throughput(stub_port, PATH, body, 32, args.seconds))
            rps["proxied"].append(throughput(proxy_port, PATH, body, 32, args.seconds))
    finally:
        stop(proxy)
        stop(stub)
    result = {
        "added_p50_ms": _added(d_json, p_json, 50),
        "added_p99_ms": _added(d_json, p_json, 99),
        "ttfb_added_p50_ms": _added(d_sse, p_sse, 50),
        "ttfb_added_p99_ms": _added(d_sse, p_sse, 99),
        "throughput_ratio": round(sum(rps["proxied"]) / sum(rps["direct"]), 3),
        "direct_p50_ms": round(percentile(d_json, 50), 3),
        "proxied_p50_ms": round(percentile(p_json, 50), 3),
        "direct_rps_c32": round(sum(rps["direct"]) / 2, 1),
        "proxied_rps_c32": round(sum(rps["proxied"]) / 2, 1),
        "n": args.n,
    }
    write_result("overhead", result)
    print(
        f"overhead: added p50 {result['added_p50_ms']} ms, p99 {result['added_p99_ms']} ms; "
        f"ttfb added p50 {result['ttfb_added_p50_ms']} ms, p99 {result['ttfb_added_p99_ms']} ms; "
        f"throughput_ratio {result['throughput_ratio']}"
    )
    return result


if __name__ == "__main__":
    main()
