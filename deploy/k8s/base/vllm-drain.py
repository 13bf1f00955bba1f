"""vLLM's preStop hook: return only when vLLM may stop without failing a request.

Kubernetes runs a container's preStop hook before its SIGTERM, and every container of
a terminating pod at once. An inbound proxy in front of vLLM needs vLLM to outlive the
proxy's in-flight requests, so vLLM's hook waits, in order:
  1. `--sleep` seconds: callers stop sending (Service endpoints / headless DNS drop the
     pod; ragtrim's discovery interval; the sidecar's own preStop sleep);
  2. `--wait-closed host:port` (sidecar): until ragtrim's listener is closed, i.e. it
     got its SIGTERM and accepts nothing new;
  3. until vLLM's /metrics shows no running and no waiting request for `--settle`
     seconds in a row (longer than ragtrim's compression timeout, so a request ragtrim
     accepted just before closing has reached vLLM by then); a /metrics that does not
     answer in time counts as busy, only a refused connection as vLLM gone.
terminationGracePeriodSeconds bounds the whole wait. Standard library only: it runs
with the vLLM image's python3.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
import urllib.request

GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def busy(metrics_url: str) -> float:
    """Running + waiting requests vLLM reports (summed over its label sets)."""
    with urllib.request.urlopen(metrics_url, timeout=2) as resp:
        text = resp.read().decode()
    total = 0.0
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in GAUGES:
            total += float(line.rsplit(" ", 1)[1])
    return total


def gone(exc: OSError) -> bool:
    """Nothing listens on vLLM's port any more: it has exited. A timeout or a reset is a
    busy vLLM still serving (under load its /metrics can take seconds to answer), and
    returning then would let the kubelet stop it mid-stream."""
    return isinstance(getattr(exc, "reason", exc), ConnectionRefusedError)


def is_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--metrics", default="http://127.0.0.1:8000/metrics")
    p.add_argument("--sleep", type=float, default=15.0)
    p.add_argument("--wait-closed", default="", help="host:port that must stop listening")
    p.add_argument("--settle", type=float, default=7.0)
    p.add_argument("--poll", type=float, default=0.5)
    args = p.parse_args(argv)
    time.sleep(args.sleep)
    if args.wait_closed:
        host, port = args.wait_closed.rsplit(":", 1)
        while is_open(host, int(port)):
            time.sleep(args.poll)
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < args.settle:
        try:
            if busy(args.metrics) > 0:
                idle_since = time.monotonic()
        except OSError as exc:
            if gone(exc):
                return 0  # vLLM has exited: nothing left to protect
            idle_since = time.monotonic()  # too slow to answer: busy
        time.sleep(args.poll)
    return 0


if __name__ == "__main__":
    sys.exit(main())
