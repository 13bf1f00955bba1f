"""A fleet of simulated GPU replicas in one process, each with its own address, KV-event
ports and clock (issue 30).

A replica is kv_replica.KvReplica: vLLM's HTTP surface over sched_sim's step loop, its
prefix cache publishing KV events on a PUB socket with a replay ROUTER, as vLLM 0.32
does. Each has its own Scheduler, so its own ideal clock: its steps only sleep, so N
replicas have N GPUs' worth of compute on however few cores, as long as the event loop
keeps up (one Python loop serves them all; their publishers are one thread each, as
vLLM's are).

ragtrim finds each replica's event endpoints through `routing.kv_events.endpoints`
(`Fleet.kv_env()` gives the settings), since the ports are picked free at start.

    async with Fleet(16, "8b-h100", tokenizer=".models/smollm2-135m-instruct") as fleet:
        fleet.urls, fleet.endpoints()

Run: python -m tests.doubles.fleet --replicas 16 --preset 8b-h100 [--tokenizer DIR]
         [--out FILE]   (writes {url: {"pub", "replay"}} and serves until interrupted)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from tests.doubles.kv_publisher import ZmqPublisher
from tests.doubles.kv_replica import FLEET_PRESETS, KvReplica, KvScheduler


@dataclass
class Replica:
    url: str
    scheduler: KvScheduler
    publisher: ZmqPublisher
    server: uvicorn.Server
    task: asyncio.Task | None = None


def _listening(host: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class Fleet:
    def __init__(self, replicas: int, preset: str = "8b-h100", *, tokenizer: str = "",
                 model: str = "stub-model", capacity_blocks: int | None = None,
                 topic: str = "kv", host: str = "127.0.0.1"):  # fmt: skip
        self.n, self.preset = replicas, FLEET_PRESETS[preset]
        self.tokenizer, self.model, self.topic, self.host = tokenizer, model, topic, host
        self.capacity = capacity_blocks or self.preset.capacity_blocks
        self.replicas: list[Replica] = []

    @property
    def urls(self) -> list[str]:
        return [r.url for r in self.replicas]

    def endpoints(self) -> dict[str, dict[str, str | None]]:
        return {r.url: {"pub": r.publisher.endpoint, "replay": r.publisher.replay_endpoint}
                for r in self.replicas}  # fmt: skip

    def kv_env(self) -> dict[str, str]:
        """ragtrim's settings to subscribe to every replica (precise routing)."""
        return {"RAGTRIM_ROUTING__KV_EVENTS__ENABLED": "true",
                "RAGTRIM_ROUTING__KV_EVENTS__TOPIC": self.topic,
                "RAGTRIM_ROUTING__KV_EVENTS__ENDPOINTS": json.dumps(self.endpoints())}  # fmt: skip

    def _chat_tokenizer(self):
        if not self.tokenizer:
            return None
        from proxy.routing.kv.chat_tokens import ChatTokenizer

        return ChatTokenizer(self.tokenizer)

    async def start(self) -> None:
        chat = await asyncio.to_thread(self._chat_tokenizer)  # shared: it has its own lock
        for _ in range(self.n):
            sock = _listening(self.host)
            publisher = ZmqPublisher(f"tcp://{self.host}:*", f"tcp://{self.host}:*", self.topic)
            scheduler = KvScheduler(self.preset.law, self.capacity, publisher=publisher,
                                    chat_tokenizer=chat)  # fmt: skip
            app = KvReplica(self.model, scheduler, root=self.tokenizer)
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
            server = uvicorn.Server(config)
            port = sock.getsockname()[1]
            replica = Replica(f"http://{self.host}:{port}", scheduler, publisher, server)
            replica.task = asyncio.create_task(server.serve(sockets=[sock]))
            self.replicas.append(replica)
        while not all(r.server.started for r in self.replicas):
            if any(r.task is not None and r.task.done() for r in self.replicas):
                raise RuntimeError("a simulated replica failed to start")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        for r in self.replicas:
            r.server.should_exit = True
        for r in self.replicas:
            if r.task is not None:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await r.task
        await asyncio.gather(*(asyncio.to_thread(r.publisher.close) for r in self.replicas))
        self.replicas = []

    async def __aenter__(self) -> Fleet:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()


async def _serve(args: argparse.Namespace) -> None:
    async with Fleet(args.replicas, args.preset, tokenizer=args.tokenizer, model=args.model,
                     capacity_blocks=args.cache_blocks) as fleet:  # fmt: skip
        text = json.dumps(fleet.endpoints())
        if args.out:
            Path(args.out).write_text(text)
        print(text, flush=True)
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, done.set)
        await done.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--preset", choices=sorted(FLEET_PRESETS), default="8b-h100")
    parser.add_argument("--tokenizer", default="", help="HF model dir (default: word tokens)")
    parser.add_argument("--model", default="stub-model")
    parser.add_argument("--cache-blocks", type=int, default=None, help="override the preset")
    parser.add_argument("--out", default="", help="write the event endpoints here (JSON)")
    asyncio.run(_serve(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
