"""Capture vLLM KV-event samples for tests/fixtures/kv_events (run with .venv-vllm's python).

    .venv-vllm/bin/python -m tests.support.kv_capture --http 18100 --pub 18557 \
        --replay 18558 --topic kv --out tests/fixtures/kv_events

Sends a few chat requests (one salted) to a running vLLM started with
--kv-events-config, records every multipart message it publishes, asks the replay
endpoint for everything from seq 0, and writes:
  tagged_batches.msgpack   the captured payloads (vLLM 0.32 sends tagged maps)
  tagged_meta.json         topic, seqs, and the requests' token ids from /tokenize
  positional_batches.msgpack  the same events re-encoded positionally (array_like=True),
      built from vLLM's own msgspec structs: vLLM 0.32 emits only maps, and the
      positional form is the one before vLLM PR #42892.
Payload files are msgpack arrays of bin payloads.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import httpx
import msgspec
import zmq
from vllm.distributed import kv_events as ke

SYSTEM = "You are a careful assistant. " * 12
MESSAGES = [
    [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is a prefix cache?"}],
    [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is a block?"}],
    *(
        [
            {"role": "system", "content": f"Topic {i}. " + "Filler words to fill blocks. " * 40},
            {"role": "user", "content": "Go on."},
        ]
        for i in range(3)
    ),
]  # fmt: skip (the last three overflow a 24-block cache: BlockRemoved)


class PStored(ke.BlockStored, array_like=True, tag="BlockStored"):
    pass


class PRemoved(ke.BlockRemoved, array_like=True, tag="BlockRemoved"):
    pass


class PCleared(ke.AllBlocksCleared, array_like=True, tag="AllBlocksCleared"):
    pass


class PBatch(ke.EventBatch):
    events: list[PStored | PRemoved | PCleared]


def positional(payload: bytes) -> bytes:
    batch = msgspec.msgpack.decode(payload, type=ke.KVEventBatch)
    kinds = {ke.BlockStored: PStored, ke.BlockRemoved: PRemoved, ke.AllBlocksCleared: PCleared}
    events = [kinds[type(e)](**msgspec.structs.asdict(e)) for e in batch.events]
    return msgspec.msgpack.encode(PBatch(batch.ts, events, batch.data_parallel_rank))


def drain(sub: zmq.Socket, seconds: float) -> list[list[bytes]]:
    got, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        if sub.poll(100):
            got.append(sub.recv_multipart())
    return got


def replay_seqs(ctx: zmq.Context, port: int) -> list[int]:
    """The seqs the replay ROUTER sends back from seq 0 (DEALER: [b"", start])."""
    dealer = ctx.socket(zmq.DEALER)
    dealer.connect(f"tcp://127.0.0.1:{port}")
    dealer.send_multipart([b"", (0).to_bytes(8, "big")])
    replayed = []
    while dealer.poll(5000):
        _, _, seq, _ = dealer.recv_multipart()
        if int.from_bytes(seq, "big", signed=True) == -1:
            break
        replayed.append(int.from_bytes(seq, "big"))
    return replayed


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("http", "pub", "replay"):
        ap.add_argument(f"--{name}", type=int, required=True)
    ap.add_argument("--topic", default="kv")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.connect(f"tcp://127.0.0.1:{a.pub}")
    sub.setsockopt(zmq.SUBSCRIBE, a.topic.encode())
    time.sleep(0.5)
    base, tokens = f"http://127.0.0.1:{a.http}", []
    for i, messages in enumerate(MESSAGES):
        body = {"model": "tiny-llama", "messages": messages, "max_tokens": 4}
        if i == 1:
            body["cache_salt"] = "tenant-b"  # the salt appears in the first block's extra_keys
        httpx.post(f"{base}/v1/chat/completions", json=body, timeout=60).raise_for_status()
        tok = httpx.post(f"{base}/tokenize", json={"model": "tiny-llama", "messages": messages})
        tokens.append(tok.json()["tokens"])
    frames = drain(sub, 2.0)
    replayed = replay_seqs(ctx, a.replay)
    a.out.mkdir(parents=True, exist_ok=True)
    payloads = [f[2] for f in frames]
    (a.out / "tagged_batches.msgpack").write_bytes(msgspec.msgpack.encode(payloads))
    (a.out / "positional_batches.msgpack").write_bytes(
        msgspec.msgpack.encode([positional(p) for p in payloads]))  # fmt: skip
    meta = {"topic": a.topic, "seqs": [int.from_bytes(f[1], "big") for f in frames],
            "replayed_seqs": replayed, "request_tokens": tokens,
            "salts": [None, "tenant-b", None, None, None]}  # fmt: skip
    (a.out / "tagged_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{len(frames)} batches, replayed {len(replayed)}")


if __name__ == "__main__":
    main()
