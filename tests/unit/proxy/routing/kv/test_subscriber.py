"""The subscriber against a publisher that speaks vLLM's protocol (PUB + replay ROUTER,
as vllm/distributed/kv_events.py ZmqEventPublisher): in order, gaps replayed, a seq
going back resyncs, undecodable messages counted; on its own thread, so a blocked
event loop does not hold the index back."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import msgspec
import zmq
import zmq.asyncio

from proxy.routing.kv.chain import chain
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.subscriber import Hooks, KvSubscriber
from tests.support.servers import free_port
from tests.support.waiting import until

URL = "http://127.0.0.1:8000"
TOPIC = b"kv"


def stored(h: int, tokens: list[int], parent: int | None = None) -> dict:
    return {"type": "BlockStored", "block_hashes": [h], "parent_block_hash": parent,
            "token_ids": tokens, "block_size": 4, "medium": "GPU", "group_idx": 0}  # fmt: skip


def payload(*events: dict) -> bytes:
    import time

    return msgspec.msgpack.encode([time.time(), list(events), 0])


class FakePublisher:
    """PUB and replay ROUTER on loopback; `skip` leaves a seq out of the live stream."""

    def __init__(self, zctx: zmq.asyncio.Context):
        self.pub_port, self.replay_port = free_port(), free_port()
        self.pub = zctx.socket(zmq.PUB)
        self.pub.bind(f"tcp://127.0.0.1:{self.pub_port}")
        self.router = zctx.socket(zmq.ROUTER)
        self.router.bind(f"tcp://127.0.0.1:{self.replay_port}")
        self.buffer: list[tuple[int, bytes]] = []
        self.seq = 0
        self.replays: list[int] = []
        self.serving = asyncio.create_task(self._serve())

    async def send(self, body: bytes, *, live: bool = True) -> None:
        self.buffer.append((self.seq, body))
        if live:
            await self.pub.send_multipart([TOPIC, self.seq.to_bytes(8, "big"), body])
        self.seq += 1

    async def _serve(self) -> None:
        while True:
            ident, _, start = await self.router.recv_multipart()
            first = int.from_bytes(start, "big")
            self.replays.append(first)
            for seq, body in self.buffer:
                if seq >= first:
                    await self.router.send_multipart(
                        [ident, b"", TOPIC, seq.to_bytes(8, "big"), body]
                    )
            await self.router.send_multipart(
                [ident, b"", b"", (-1).to_bytes(8, "big", signed=True), b""]
            )

    def close(self) -> None:
        self.serving.cancel()
        self.pub.close(0)
        self.router.close(0)


@contextlib.contextmanager
def running(sub: KvSubscriber):
    """The subscriber on its own thread, as KvSubscriptions runs it; always stopped."""
    thread = threading.Thread(target=sub.run, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        sub.stopping.set()
        thread.join(5)
        assert not thread.is_alive()


def subscriber(pub: FakePublisher, index: KvIndex, hooks: Hooks | None = None,
               timeout: float = 1.0) -> KvSubscriber:  # fmt: skip
    return KvSubscriber(URL, f"tcp://127.0.0.1:{pub.pub_port}",
                        f"tcp://127.0.0.1:{pub.replay_port}", "kv", index, zmq.Context.instance(),
                        hooks, replay_timeout=timeout)  # fmt: skip


@contextlib.asynccontextmanager
async def rig():
    zctx = zmq.asyncio.Context()
    pub = FakePublisher(zctx)
    index = KvIndex()
    seen: dict[str, list] = {"resync": [], "lag": [], "bad": []}
    hooks = Hooks(lag=seen["lag"].append, resync=seen["resync"].append,
                  bad=lambda: seen["bad"].append(1))  # fmt: skip
    with running(subscriber(pub, index, hooks)):
        await until(lambda: index.backend(URL) is not None and index.backend(URL).synced)
        await asyncio.sleep(0.2)  # the SUB connection settles (slow joiner)
        try:
            yield pub, index, seen
        finally:
            pub.close()
            zctx.term()


def held(index: KvIndex, tokens: list[int]) -> int:
    return index.backend(URL).leading(chain(tokens, 4))


async def test_live_events_reach_the_index_with_lag():
    async with rig() as (pub, index, seen):
        await pub.send(payload(stored(1, [1, 2, 3, 4])))
        await pub.send(payload(stored(2, [5, 6, 7, 8], parent=1)))
        await until(lambda: held(index, [1, 2, 3, 4, 5, 6, 7, 8]) == 2)
        assert seen["lag"] and all(0 <= lag < 5 for lag in seen["lag"])


async def test_a_blocked_event_loop_does_not_hold_the_index_back():
    """The loop busy for 1.5 s (a long tokenization, a burst): the batch is applied
    meanwhile, on the subscriber's thread, with its lag measured there."""
    async with rig() as (pub, index, seen):
        await pub.send(payload(stored(1, [1, 2, 3, 4])))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5 and held(index, [1, 2, 3, 4]) == 0:
            time.sleep(0.01)  # blocks the loop: no await
        assert held(index, [1, 2, 3, 4]) == 1
        assert time.monotonic() - t0 < 1.5 and seen["lag"][-1] < 1.0


def test_a_stopped_subscriber_changes_nothing_more():
    """A leaver is forgotten under the index's lock once `stopping` is set (as
    KvSubscriptions.reconcile does): a batch it still handles must not bring it back."""
    index = KvIndex()
    sub = KvSubscriber(URL, "tcp://127.0.0.1:1", None, "kv", index, zmq.Context.instance())
    sub.expected = 0
    sub.handle([TOPIC, (0).to_bytes(8, "big"), payload(stored(1, [1, 2, 3, 4]))])
    assert held(index, [1, 2, 3, 4]) == 1
    with index.lock:
        sub.stopping.set()
        index.forget(URL)
    sub.handle([TOPIC, (1).to_bytes(8, "big"), payload(stored(2, [5, 6, 7, 8], parent=1))])
    assert index.backend(URL) is None


async def test_a_gap_is_replayed():
    async with rig() as (pub, index, seen):
        await pub.send(payload(stored(1, [1, 2, 3, 4])))
        await pub.send(payload(stored(2, [5, 6, 7, 8], parent=1)), live=False)  # lost on PUB
        await pub.send(payload(stored(3, [9, 10, 11, 12], parent=2)))
        await until(lambda: held(index, list(range(1, 13))) == 3)
        assert "gap" in seen["resync"] and pub.replays[-1] == 1


async def test_seq_going_back_is_a_restart():
    async with rig() as (pub, index, seen):
        await pub.send(payload(stored(1, [1, 2, 3, 4])))
        await until(lambda: held(index, [1, 2, 3, 4]) == 1)
        pub.buffer, pub.seq = [], 0  # a new process: empty cache, seq from 0
        await pub.send(payload(stored(7, [9, 9, 9, 9])))
        await until(lambda: held(index, [9, 9, 9, 9]) == 1)
        assert held(index, [1, 2, 3, 4]) == 0
        assert "restart" in seen["resync"]


async def test_undecodable_message_is_counted():
    async with rig() as (pub, index, seen):
        await pub.send(b"\xc1 not msgpack")
        await pub.send(payload(stored(1, [1, 2, 3, 4])))
        await until(lambda: held(index, [1, 2, 3, 4]) == 1)
        assert seen["bad"] == [1]


async def test_history_is_replayed_on_connect():
    zctx = zmq.asyncio.Context()
    pub = FakePublisher(zctx)
    await pub.send(payload(stored(1, [1, 2, 3, 4])), live=False)  # before ragtrim started
    index = KvIndex()
    try:
        with running(subscriber(pub, index, timeout=2.0)):
            await until(lambda: index.backend(URL) is not None and index.backend(URL).synced)
            assert held(index, [1, 2, 3, 4]) == 1 and pub.replays == [0]
    finally:
        pub.close()
        zctx.term()


def test_no_replay_answer_leaves_the_backend_out_of_sync():
    index = KvIndex()
    sub = KvSubscriber(URL, f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}",
                       "kv", index, zmq.Context.instance(), replay_timeout=0.2)  # fmt: skip
    with running(sub):
        time.sleep(0.5)
        state = index.backend(URL)
        assert state is None or not state.synced
