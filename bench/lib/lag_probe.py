"""A bare KV-event subscriber, the floor under ragtrim's event lag (bench.prefix_routing).

    .venv/bin/python -m bench.lib.lag_probe --out FILE tcp://127.0.0.1:PUB [...]

Its own process, one SUB socket on every replica's PUB endpoint, and nothing else: at
each message it reads the batch's `ts` (vLLM's time.time() at the end of the step that
made the events) and keeps `time.time() - ts`, until SIGTERM; then it writes the exact
p50/p99 and the count to FILE. What it sees is the lag vLLM's publisher, the loopback
and the OS scheduler put on every consumer; ragtrim's histogram
(ragtrim_kv_event_lag_seconds) holds that plus its own receive and index update, so the
difference of the two is what ragtrim adds.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import threading
import time

import msgspec
import zmq


def quantiles(lags_s: list[float]) -> dict:
    if not lags_s:
        return {"batches": 0, "lag_p50_ms": None, "lag_p99_ms": None}
    cuts = statistics.quantiles(lags_s, n=100, method="inclusive") if len(lags_s) > 1 else []
    p99 = cuts[98] if cuts else lags_s[0]
    return {"batches": len(lags_s), "lag_p50_ms": round(statistics.median(lags_s) * 1000, 2),
            "lag_p99_ms": round(p99 * 1000, 2),
            "lag_max_ms": round(max(lags_s) * 1000, 2)}  # fmt: skip


def listen(endpoints: list[str], stop: threading.Event) -> list[float]:
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.LINGER, 0)
    for ep in endpoints:
        sub.connect(ep)
    lags: list[float] = []
    try:
        while not stop.is_set():
            if sub.poll(100):
                frames = sub.recv_multipart()
                got = time.time()
                lags.append(max(got - float(msgspec.msgpack.decode(frames[-1])[0]), 0.0))
    finally:
        sub.close(0)
        ctx.term()
    return lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("endpoints", nargs="+")
    args = parser.parse_args()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    lags = listen(args.endpoints, stop)
    with open(args.out, "w") as f:
        json.dump(quantiles(lags), f)


if __name__ == "__main__":
    main()
