"""ragtrim's own block hash: a chain over each full block's token ids and extra keys.

vLLM's block hashes are random per process unless PYTHONHASHSEED is set (its
NONE_HASH seed), and reproducing them proved fragile for llm-d, so the index keys
blocks by this hash instead, as llm-d (FNV-64a over CBOR [parent, chunk, extra]) and
NVIDIA Dynamo (XXH3-64, seed 1337) do with theirs. Both sides compute it the same way:
the subscriber from BlockStored's token_ids and extra_keys, the scorer from the
request's token ids as vLLM tokenizes them.

    h(0) = blake2b-64(ZERO || tokens[0:B] || extra(0))
    h(i) = blake2b-64(h(i-1) || tokens[iB:(i+1)B] || extra(i))

The extra keys are what vLLM publishes per block (kv_cache_utils.to_event_extra_keys):
LoRA name, multimodal (identifier, offset) pairs, the cache_salt (first block only,
vLLM generate_block_hash_extra_keys) and prompt-embeds digests. Hashing them keeps one
tenant's blocks (its cache_salt) from ever matching another's; the chain carries the
first block's salt into every later block.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Sequence
from typing import Any

import msgspec

_PERSON = b"ragtrim-kv-v1"
_ZERO = bytes(8)
_encode = msgspec.msgpack.Encoder().encode


def _extra_bytes(extra: Any) -> bytes:
    """None and [] hash alike (vLLM publishes None for a block without keys)."""
    if not extra:
        return b""
    return _encode(list(extra))


def block_hash(parent: int | None, tokens: Sequence[int], extra: Any = None) -> int:
    """The hash of one block given its parent's (None for the first block)."""
    digest = hashlib.blake2b(digest_size=8, person=_PERSON)
    digest.update(_ZERO if parent is None else parent.to_bytes(8, "big"))
    digest.update(
        tokens if isinstance(tokens, array) and tokens.typecode == "I" else array("I", tokens)
    )
    digest.update(b"\xff")
    digest.update(_extra_bytes(extra))
    return int.from_bytes(digest.digest(), "big")


def chain(
    tokens: Sequence[int], block_size: int, extras: Sequence[Any] = (), parent: int | None = None
) -> list[int]:
    """The hashes of every full block of `tokens`; `extras[i]` is block i's extra keys.

    A trailing partial block has no hash: vLLM caches only full blocks.
    """
    if block_size <= 0:
        return []
    hashes: list[int] = []
    for i in range(len(tokens) // block_size):
        extra = extras[i] if i < len(extras) else None
        parent = block_hash(parent, tokens[i * block_size : (i + 1) * block_size], extra)
        hashes.append(parent)
    return hashes


def request_extras(cache_salt: str | None) -> list[Any]:
    """The extra keys vLLM gives a request's blocks: the salt on the first block only."""
    return [[cache_salt]] if cache_salt else []
