"""bench.soak: no request is ever lost, hung or half-answered, whatever fails around it.

ragtrim (`python -m proxy serve`, a subprocess) in front of three stub replicas
(tests/doubles/stub_vllm.py subprocesses) with a real redis-server of its own. An async
client sends `--requests` RAG requests at `--concurrency`, half of them streamed (the
stub trickles chunks), while one replica is killed (SIGKILL) and restarted every
`--kill-every` seconds and Redis is killed and restarted once, part way through.

Every request must end in exactly one of:
  ok     200 with the complete answer (JSON: the stub's message; SSE: every chunk, then
         [DONE], no error event)
  error  a clean error: a 4xx/5xx in the OpenAI envelope, or a stream that ends with
         an error event (the openai SDK raises on it) — counted by code in errors_by_kind
and never in:
  lost   a connection dropped without an error, a body outside the envelope, a stream
         cut or missing chunks without an error event (partial success)
  hung   no end before the client's deadline (`--deadline`, above ragtrim's own timeouts)

Writes bench/results/soak.json (`requests`, `lost`, `hung`, `errors_by_kind`, `p99_ms`,
...) and prints one line ending in lost/requests. Smoke: --requests 500.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import aiohttp
import orjson

from bench.lib.common import free_port, percentile, spawn, stop, write_result
from bench.lib.outcome import CHUNKS, SYSTEM, classify

STUB = ["-m", "tests.doubles.stub_vllm"]
JSON = {"content-type": "application/json"}


@dataclass
class Fleet:
    """The processes the soak runs and breaks, each started and stopped by PID."""

    stub_ports: list[int]
    redis_port: int
    stubs: dict[int, subprocess.Popen] = field(default_factory=dict)
    redis: subprocess.Popen | None = None
    kills: int = 0
    redis_restarts: int = 0

    def start_stub(self, port: int) -> None:
        args = [sys.executable, *STUB, "--port", str(port)]
        self.stubs[port] = spawn(args, f"http://127.0.0.1:{port}/health")

    def kill_stub(self, port: int, count: bool = True) -> None:
        proc = self.stubs.pop(port)
        os.killpg(proc.pid, signal.SIGKILL)  # spawn() gives each its own session
        proc.wait(10)
        self.kills += count

    def start_redis(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found (make setup installs it)")
        args = [binary, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no"]  # fmt: skip
        self.redis = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)

    def kill_redis(self) -> None:
        if self.redis is not None:
            self.redis.kill()
            self.redis.wait(10)
            self.redis = None

    def close(self) -> None:
        for port in list(self.stubs):
            self.kill_stub(port, count=False)
        self.kill_redis()


def start_ragtrim(fleet: Fleet, port: int) -> subprocess.Popen:
    backends = ",".join(f"http://127.0.0.1:{p}" for p in fleet.stub_ports)
    args = [sys.executable, "-m", "proxy", "serve", "--port", str(port), "--backends", backends,
            "--redis-url", f"redis://127.0.0.1:{fleet.redis_port}/0", "--log-level", "error",
            "--health-interval-s", "0.5", "--health-timeout-s", "0.5",
            "--timeouts-first-byte-s", "5", "--timeouts-idle-s", "5", "--timeouts-total-s", "20",
            "--compression-compressor", "identity", "--compression-policy", "always",
            "--compression-min-context-tokens", "0"]  # fmt: skip
    return spawn(args, f"http://127.0.0.1:{port}/readyz")


async def chaos(fleet: Fleet, done: asyncio.Event, kill_every: float, redis_after: float):
    """Kill one replica and restart it, in turn, every `kill_every` s; Redis once."""
    turn, started, redis_done = 0, time.monotonic(), False
    while not done.is_set():
        try:
            await asyncio.wait_for(done.wait(), kill_every)
            return
        except TimeoutError:
            pass
        port = fleet.stub_ports[turn % len(fleet.stub_ports)]
        turn += 1
        await asyncio.to_thread(fleet.kill_stub, port)
        await asyncio.sleep(min(1.0, kill_every / 2))
        await asyncio.to_thread(fleet.start_stub, port)
        if not redis_done and time.monotonic() - started > redis_after:
            redis_done = True
            await asyncio.to_thread(fleet.kill_redis)
            await asyncio.sleep(1.0)
            await asyncio.to_thread(fleet.start_redis)
            fleet.redis_restarts += 1


def request_body(i: int) -> dict:
    topic = f"topic{i % 40}"
    docs = [f"{topic} document {d}: the {topic} archive holds {d} boxes of letters." for d in
            range(3)]  # fmt: skip
    body = {
        "model": "stub-model", "max_tokens": 8, "stream": i % 2 == 1,
        "messages": [{"role": "system", "content": SYSTEM + "\n\n".join(docs)},
                     {"role": "user", "content": f"What does the {topic} archive hold?"}],
    }  # fmt: skip
    if body["stream"]:
        body["stub"] = {"chunks": CHUNKS, "chunk_delay": 0.01}
    return body


async def one(session: aiohttp.ClientSession, url: str, i: int, deadline: float):
    body = request_body(i)
    start = time.perf_counter()
    try:
        async with asyncio.timeout(deadline):
            async with session.post(url, data=orjson.dumps(body), headers=JSON) as resp:
                raw = await resp.read()
        outcome = classify(resp.status, raw, body["stream"])
    except TimeoutError:
        outcome = ("hung", "hung")
    except (aiohttp.ClientError, orjson.JSONDecodeError) as exc:
        outcome = ("lost", f"client:{type(exc).__name__}")
    return outcome, (time.perf_counter() - start) * 1000


async def drive(url: str, n: int, concurrency: int, deadline: float, fleet: Fleet,
                kill_every: float) -> tuple[list, float]:  # fmt: skip
    results: list = []
    counter = iter(range(n))
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout()) as s:

        async def worker() -> None:
            for i in counter:
                results.append(await one(s, url, i, deadline))

        done = asyncio.Event()
        breaker = asyncio.create_task(chaos(fleet, done, kill_every, redis_after=kill_every))
        start = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.monotonic() - start
        done.set()
        await breaker
    return results, elapsed


def summarise(results: list, elapsed: float, fleet: Fleet, args) -> dict:
    kinds = Counter(kind for (kind, _), _ in results)
    errors = Counter(detail for (kind, detail), _ in results if kind != "ok")
    latencies = [ms for _, ms in results]
    return {
        "requests": len(results), "ok": kinds["ok"], "clean_errors": kinds["error"],
        "lost": kinds["lost"], "hung": kinds["hung"], "errors_by_kind": dict(errors),
        "p50_ms": round(percentile(latencies, 50), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "duration_s": round(elapsed, 1), "replica_kills": fleet.kills,
        "redis_restarts": fleet.redis_restarts,
        "config": {"concurrency": args.concurrency, "kill_every_s": args.kill_every,
                   "deadline_s": args.deadline, "replicas": 3, "streamed_share": 0.5,
                   "chunks": CHUNKS, "chunk_delay_s": 0.01},
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--kill-every", type=float, default=3.0)
    parser.add_argument("--deadline", type=float, default=30.0, help="client deadline, s")
    args = parser.parse_args(argv)
    fleet = Fleet([free_port() for _ in range(3)], free_port())
    ragtrim = None
    try:
        fleet.start_redis()
        for port in fleet.stub_ports:
            fleet.start_stub(port)
        port = free_port()
        ragtrim = start_ragtrim(fleet, port)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        results, elapsed = asyncio.run(drive(url, args.requests, args.concurrency,
                                             args.deadline, fleet, args.kill_every))  # fmt: skip
    finally:
        if ragtrim is not None:
            stop(ragtrim)
        fleet.close()
    out = summarise(results, elapsed, fleet, args)
    write_result("soak", out)
    print(f"soak: {out['requests']} requests at c={args.concurrency} ({out['ok']} ok, "
          f"{out['clean_errors']} clean errors, {out['hung']} hung), {fleet.kills} replica "
          f"kills, {fleet.redis_restarts} Redis restart, p99 {out['p99_ms']:.0f} ms, "
          f"lost/requests={out['lost'] / max(1, out['requests']):.4f}")  # fmt: skip
    return 0 if out["lost"] == 0 and out["hung"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
