"""vLLM's KV-event publisher, reproduced for simulated replicas (vLLM 0.32's wire format).

The structs below are vLLM's own declarations (vllm/distributed/kv_events.py, as pinned
in .venv-vllm), field for field and option for option, so msgspec encodes them to the
same bytes vLLM sends: `EventBatch` is `array_like` (`[ts, events, dp_rank]`), the
events are tagged maps (`{"type": "BlockStored", ...}`, `omit_defaults`: fields with a
default are left out while they hold it, fields without one are always sent).
tests/unit/doubles/test_kv_publisher.py re-encodes the captured real batches
(tests/fixtures/kv_events/) with them and gets the captured bytes back.

`ZmqPublisher` is vLLM's ZmqEventPublisher in miniature: `publish()` queues a batch;
one thread encodes it, sends `[topic, seq (8 bytes BE), payload]` on a PUB socket and
keeps the last `buffer_steps` payloads; between batches it serves the replay ROUTER:
`[client, b"", start_seq]` is answered with `[client, b"", topic, seq, payload]` for
every buffered seq >= start_seq, then `[client, b"", b"", END_SEQ, b""]`. Like vLLM's,
the thread waits for the queue up to 100 ms, so a replay waits as long at most.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from itertools import count
from typing import Any

import msgspec
import zmq

END_SEQ = (-1).to_bytes(8, "big", signed=True)


class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class KVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    """vLLM's base: tagged with the class name under "type"."""


class BlockStored(KVCacheEvent):
    block_hashes: list[bytes | int]
    parent_block_hash: bytes | int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[tuple[Any, ...] | None] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None
    ownership: str | None = None
    session_id: str | None = None


class BlockRemoved(KVCacheEvent):
    block_hashes: list[bytes | int]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None
    ownership: str | None = None


class AllBlocksCleared(KVCacheEvent):
    pass


KV_EVENT_TYPES = BlockStored | BlockRemoved | AllBlocksCleared


def bound(sock: zmq.Socket, endpoint: str) -> str:
    """Bind; `tcp://127.0.0.1:*` picks a free port: the endpoint actually bound."""
    sock.bind(endpoint)
    return sock.getsockopt_string(zmq.LAST_ENDPOINT)


class ZmqPublisher:
    def __init__(self, endpoint: str = "tcp://127.0.0.1:*",
                 replay_endpoint: str | None = "tcp://127.0.0.1:*", topic: str = "",
                 buffer_steps: int = 10_000, dp_rank: int = 0,
                 zctx: zmq.Context | None = None):  # fmt: skip
        self.topic = topic.encode()
        self.dp_rank = dp_rank
        self._ctx = zctx or zmq.Context.instance()
        self._pub = self._ctx.socket(zmq.PUB)
        self._pub.set_hwm(100_000)
        self.endpoint = bound(self._pub, endpoint)
        self._replay: zmq.Socket | None = None
        self.replay_endpoint: str | None = None
        if replay_endpoint is not None:
            self._replay = self._ctx.socket(zmq.ROUTER)
            self.replay_endpoint = bound(self._replay, replay_endpoint)
        self._buffer: deque[tuple[int, bytes]] = deque(maxlen=buffer_steps)
        self._queue: queue.Queue[EventBatch | None] = queue.Queue()
        self._seq = count()
        self._running = True
        self._thread = threading.Thread(target=self._run, name="kv-publisher", daemon=True)
        self._thread.start()

    def publish(self, events: list[KVCacheEvent], ts: float | None = None) -> None:
        """Queue one step's events, stamped now (vLLM: time.time() after the step)."""
        if not self._running:
            raise RuntimeError("Publisher is closed")
        self._queue.put(EventBatch(time.time() if ts is None else ts, events, self.dp_rank))

    def _run(self) -> None:
        encoder = msgspec.msgpack.Encoder()
        while self._running or not self._queue.empty():
            if self._replay is not None and self._replay.poll(0):
                self._serve_replay()
            try:
                batch = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if batch is None:
                break
            seq = next(self._seq)
            payload = encoder.encode(batch)
            self._pub.send_multipart((self.topic, seq.to_bytes(8, "big"), payload))
            self._buffer.append((seq, payload))

    def _serve_replay(self) -> None:
        assert self._replay is not None
        frames = self._replay.recv_multipart()
        if len(frames) != 3:
            return  # vLLM logs and ignores a malformed request
        client, _, start = frames
        first = int.from_bytes(start, "big")
        for seq, payload in list(self._buffer):
            if seq >= first:
                self._replay.send_multipart((client, b"", self.topic, seq.to_bytes(8, "big"),
                                             payload))  # fmt: skip
        self._replay.send_multipart((client, b"", b"", END_SEQ, b""))

    def close(self) -> None:
        """Drain what is queued, stop the thread, close the sockets (not the context)."""
        if not self._running:
            return
        self._running = False
        self._queue.put(None)
        self._thread.join(timeout=5)
        self._pub.close(linger=0)
        if self._replay is not None:
            self._replay.close(linger=0)
