"""A tokenizer's tokens memoized per chunk of text: a cold document costs lookups.

Why: on the cold path each document goes through two tokenizers (the static model's
WordPiece and the target model's BPE), and each cost 3-4.5 ms per 1k tokens on one core
here, most of it in the tokenizer's own normalization, pre-tokenization and offset
alignment, paid again for every "the". A document is cut into chunks at positions where
the tokenizer's own pre-tokenization always splits and its normalization is local, so
its tokens are exactly its chunks' tokens, each chunk's offsets shifted by where it
starts. A chunk's tokens are memoized (a word, not a document); the chunks not yet
known are encoded in one call, joined at the same safe positions. Measured:
docs/decisions/0001-request-path-at-gpu-speed.md ("Third pass").

The safe positions depend on the tokenizer, read from its own configuration
(compressors/_chunk_rules.py); a tokenizer with none (SentencePiece, an unknown regex)
has each text encoded whole, as before. Where most of a request's chunks are unknown
(rare words, code, another script) its texts are encoded whole too, on the tokenizer's
threads, and with a scope its table learns their chunks from that.

A text that holds an added token's content (`[CLS]`, `<|im_start|>`) is encoded whole:
added tokens are matched before pre-tokenization, across any chunk boundary. At start-up
a sample text (punctuation, contractions, digits, runs of spaces and newlines, accents,
CJK, emoji) is encoded both ways; any difference turns chunking off for that tokenizer.

Across tenants nothing is learnt. The shared memo holds the tokenizer's own vocabulary,
learnt at load and never written after; a request's other chunks are learnt in its
scope's table (the proxy passes the tenant: compressors/_token_tables.py), or, without
a scope, in a table of the request's own. Whether a chunk is known, and so what a
request costs, depends on the vocabulary and on what its own tenant sent, never on what
another tenant sent. The tokenizers' own BPE word cache, which the backend's tokenizer
keeps too, is left on (decision 0001, fourth pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, filterfalse

import numpy as np

from compressors import _chunk_rules as chunk_rules
from compressors._chunk_rules import SAMPLE, config_of, rule
from compressors._token_tables import BITS as _BITS
from compressors._token_tables import CAPACITY, Learnt, ScopedTables, TokenTable

WHOLE_SHARE = 0.2  # unknown chunks per chunk above which the texts are encoded whole
PRIME_IDS = 50_000  # vocabulary tokens learnt at load (~0.7 s per tokenizer here)
SAMPLE_CHARS = 8_000  # of a request's texts, cut to decide (and then learnt from)
MAX_CHUNK_CHARS = 256  # a longer run (base64, a URL list) is encoded with its text


@dataclass(frozen=True)
class Encoded:
    """A text's token ids and each token's character offsets (start, end)."""

    ids: np.ndarray  # int64
    starts: np.ndarray  # int64
    ends: np.ndarray  # int64


def of_encoding(encoding) -> Encoded:
    """A `tokenizers.Encoding` as arrays."""
    offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
    ids = np.asarray(encoding.ids, dtype=np.int64)
    return Encoded(ids, np.ascontiguousarray(offsets[:, 0]), np.ascontiguousarray(offsets[:, 1]))


class ChunkedTokenizer:
    """`encode_many` of a `tokenizers.Tokenizer`, memoized per chunk where that is exact."""

    def __init__(
        self,
        tokenizer,
        whole_share: float = WHOLE_SHARE,
        prime: bool = True,
        capacity: int = CAPACITY,
    ) -> None:
        self.tokenizer = tokenizer
        self.whole_share = whole_share
        self.scopes = ScopedTables(capacity)
        self.chunks, self.lower = rule(config_of(tokenizer))
        self._added = tuple(a.content for a in tokenizer.get_added_tokens_decoder().values())
        if self.chunks is not None and not self._agrees(SAMPLE):
            self.chunks = None  # the configuration looked safe; the tokenizer says not
        self._shared = TokenTable()  # never written after this: see the module's docstring
        if self.chunks is not None and prime:
            self._shared = _table(self._learnt(self._vocabulary_chunks(PRIME_IDS)))

    def _vocabulary_chunks(self, ids: int) -> list[str]:
        """The text of the tokenizer's first `ids` tokens (the most frequent words first,
        in BPE merge order and in BERT's vocabulary) where it is one chunk, and for
        WordPiece with a space before it too: a new process knows the common words before
        any request, from nothing a request sent."""
        size = min(ids, self.tokenizer.get_vocab_size())
        texts = self.tokenizer.decode_batch([[i] for i in range(size)], skip_special_tokens=True)
        if self.chunks is chunk_rules.BERT_CHUNK:
            texts += [" " + t for t in texts]
        found = self.chunks.findall
        return sorted({t for t in texts if t and t.isprintable() and found(t) == [t]})

    @property
    def chunked(self) -> bool:
        return self.chunks is not None

    def encode_many(self, texts: Sequence[str], scope: str | None = None) -> list[Encoded]:
        """Each text's tokens; the chunks neither in the vocabulary nor in `scope`'s
        table are encoded in one call for all texts, into that table (without a scope:
        one of this request's), or, where they are most of the texts (rare words, code,
        another script), the texts are encoded whole (the tokenizer's threads)."""
        seen = self.scopes.get(scope) if scope is not None else None
        pieces, unknown, mostly_unknown = self._sample(texts, seen)
        if mostly_unknown:
            return self._whole(texts, pieces, set(unknown), scope, seen)
        mine = seen
        if unknown:
            learnt = self._learnt(unknown)
            mine = _table(learnt) if scope is None else self.scopes.learn(scope, seen, learnt)
        chunked = [i for i, p in enumerate(pieces) if p is not None]
        found = _assemble(self._shared, mine, [pieces[i] for i in chunked]) if chunked else []
        out: list[Encoded | None] = [None] * len(texts)
        for i, e in zip(chunked, found, strict=True):
            out[i] = e
        whole = [i for i, e in enumerate(out) if e is None]
        for i, e in zip(whole, self._encoded([texts[i] for i in whole]), strict=True):
            out[i] = e
        return out  # type: ignore[return-value]

    def _encoded(self, texts: Sequence[str]) -> list[Encoded]:
        """The texts encoded whole, in one batch (the tokenizer's threads)."""
        if not texts:
            return []
        batch = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [of_encoding(e) for e in batch]

    def _sample(
        self, texts: Sequence[str], seen: TokenTable | None
    ) -> tuple[list[list[str] | None], list[str], bool]:
        """Each text's chunks, the unknown ones, and whether more than `whole_share` of
        the chunks cut are unknown; once SAMPLE_CHARS of texts are cut and that holds,
        the rest are not cut (the request is encoded whole)."""
        pieces: list[list[str] | None] = []
        entries, unknown, chars, total = self._shared.entries, set(), 0, 0
        learnt = seen.entries if seen is not None else {}
        for text in texts:
            if chars >= SAMPLE_CHARS and len(unknown) > self.whole_share * total:
                return pieces, sorted(unknown), True
            pieces.append(self._pieces(text))
            chars += len(text)
            if pieces[-1]:
                new = filterfalse(entries.__contains__, pieces[-1])
                unknown.update(filterfalse(learnt.__contains__, new) if learnt else new)
                total += len(pieces[-1])
        return pieces, sorted(unknown), len(unknown) > self.whole_share * total

    def _whole(self, texts, pieces, unknown: set[str], scope: str | None, seen) -> list[Encoded]:
        """Encode the texts whole; with a scope, its table learns the unknown chunks of
        those cut (`pieces`, the first texts) from that."""
        out = self._encoded(texts)
        if scope is not None:
            parts = zip(out, pieces, strict=False)
            self.scopes.learn(scope, seen, [_split(e, p, unknown) for e, p in parts if p])
        return out

    def _pieces(self, text: str) -> list[str] | None:
        """The text's chunks, as memo keys (lowercased where that changes no token);
        None where the text must be encoded whole: no safe chunks for this tokenizer, an
        added token's content in it, or a chunk too long to memoize."""
        if self.chunks is None or any(a in text for a in self._added):
            return None
        if not self.lower:
            pieces = self.chunks.findall(text)
        elif text.isascii():
            pieces = self.chunks.findall(text.lower())
        else:
            pieces = [p.lower() if p.isascii() else p for p in self.chunks.findall(text)]
        return None if pieces and max(map(len, pieces)) > MAX_CHUNK_CHARS else pieces

    def _learnt(self, chunks: list[str]) -> list[Learnt]:
        """The chunks' tokens, encoded in one call, each after what makes its start a
        cut; the rest (at most a text's first and last chunk) in one batch."""
        before = [chunk_rules.before(self.chunks, c) for c in chunks]
        joined = [(c, b) for c, b in zip(chunks, before, strict=True) if b is not None]
        learnt = [_joined(self.tokenizer, joined)] if joined else []
        alone = [c for c, b in zip(chunks, before, strict=True) if b is None]
        if alone:
            batch = self._encoded(alone)
            tokens = [np.stack([e.ids, e.starts, e.ends]) for e in batch]
            counts = np.fromiter((len(e.ids) for e in batch), np.int64, len(batch))
            learnt.append((alone, np.concatenate(tokens, axis=1), np.r_[0, np.cumsum(counts)]))
        return learnt

    def _agrees(self, text: str) -> bool:
        """Whether the text's tokens read back from a table of its chunks are its whole
        encoding's, the chunks learnt either way: joined, and cut from the whole."""
        whole = of_encoding(self.tokenizer.encode(text, add_special_tokens=False))
        pieces = self._pieces(text)
        if pieces is None:
            return False
        ways = (self._learnt(sorted(set(pieces))), [_split(whole, pieces, set(pieces))])
        return all(_equal(whole, _assemble(TokenTable(), _table(w), [pieces])[0]) for w in ways)


def _equal(a: Encoded, b: Encoded) -> bool:
    pairs = ((a.ids, b.ids), (a.starts, b.starts), (a.ends, b.ends))
    return all(np.array_equal(x, y) for x, y in pairs)


def _split(whole: Encoded, pieces: list[str], unknown: set[str]) -> Learnt:
    """The tokens of a text's chunks in `unknown` (each once: taken out of the set), cut
    from the text's whole encoding: (chunks, tokens within each, where each starts)."""
    sizes = np.fromiter(map(len, pieces), np.int64, len(pieces))
    owner, tokens = _owned(whole, np.cumsum(sizes) - sizes, sizes)
    new = np.asarray([p in unknown and not unknown.discard(p) for p in pieces], bool)
    names = [p for p, n in zip(pieces, new, strict=True) if n]
    counts = np.bincount(owner, minlength=len(pieces))[new]
    return names, tokens[:, new[owner]], np.r_[0, np.cumsum(counts)]


def _table(learnt: list[Learnt]) -> TokenTable:
    table = TokenTable()
    for chunks, tokens, cuts in learnt:
        table.add(chunks, tokens, cuts)
    return table


def _assemble(
    shared: TokenTable, mine: TokenTable | None, pieces: list[list[str]]
) -> list[Encoded]:
    """Each text's tokens from its chunks' entries (in `shared`, else in `mine`), in one
    pass over all of them."""
    flat = list(chain.from_iterable(pieces))
    if not flat:
        empty = np.zeros(0, np.int64)
        return [Encoded(empty, empty, empty) for _ in pieces]
    code = np.asarray(_codes(shared, mine, flat), np.int64).reshape(-1)
    counts, where = code & ((1 << _BITS) - 1), code >> _BITS
    per_text = np.fromiter(map(len, pieces), np.int64, len(pieces))
    sizes = np.fromiter(map(len, flat), np.int64, len(flat))
    begins = np.cumsum(sizes) - sizes  # where each chunk starts in all texts joined
    text_first = np.cumsum(per_text) - per_text  # each text's first chunk
    text_begin = begins[np.minimum(text_first, len(flat) - 1)]  # (an empty text: unused)
    offset = begins - np.repeat(text_begin, per_text)  # where each starts in its text
    index = np.repeat(where - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
    shift = np.repeat(offset, counts)
    tokens = _gather(shared, mine, index)
    ids = tokens[0].astype(np.int64)
    starts, ends = tokens[1] + shift, tokens[2] + shift  # int64, as `shift`
    bounds = np.r_[0, np.cumsum(counts)][np.r_[text_first, len(flat)]].tolist()
    return [
        Encoded(ids[a:b], starts[a:b], ends[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)
    ]


def _codes(shared: TokenTable, mine: TokenTable | None, flat: list[str]) -> list[int]:
    """Each chunk's entry; one of `mine` as if its tokens followed `shared`'s."""
    if mine is None:
        return list(map(shared.entries.get, flat))
    get, get_mine, base = shared.entries.get, mine.entries.__getitem__, shared.used << _BITS
    return [c if (c := get(p)) is not None else base + get_mine(p) for p in flat]


def _gather(shared: TokenTable, mine: TokenTable | None, index: np.ndarray) -> np.ndarray:
    """The tokens at `index` of `shared`'s tokens followed by `mine`'s (nothing copied
    but what is read)."""
    if mine is None:
        return shared.tokens[:, index]
    in_mine = index >= shared.used
    out = np.empty((3, len(index)), np.int32)
    out[:, ~in_mine] = shared.tokens[:, index[~in_mine]]
    out[:, in_mine] = mine.tokens[:, index[in_mine] - shared.used]
    return out


def _joined(tokenizer, pieces: list[tuple[str, str]]):
    """Encode (chunk, what goes before it) pairs joined, once: (the chunks, their tokens
    with offsets within each chunk, where each chunk's tokens start and end). The tokens
    of what went before are dropped."""
    chunks = [c for c, _ in pieces]
    text = "".join(b + c for c, b in pieces)
    lead = np.fromiter((len(b) for _, b in pieces), np.int64, len(pieces))
    sizes = np.fromiter(map(len, chunks), np.int64, len(chunks))
    begin = np.cumsum(lead + sizes) - sizes
    encoded = of_encoding(tokenizer.encode(text, add_special_tokens=False))
    owner, tokens = _owned(encoded, begin, sizes)
    return chunks, tokens, np.searchsorted(owner, np.arange(len(chunks) + 1), side="left")


def _owned(e: Encoded, begin: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tokens of `e` that start inside a chunk (chunk k: `sizes[k]` characters from
    `begin[k]`, sorted): each one's chunk, and the tokens (ids, starts, ends) with
    offsets within it."""
    owner = np.searchsorted(begin, e.starts, side="right") - 1
    mine = (owner >= 0) & (e.starts < begin[owner] + sizes[owner])
    owner, shift = owner[mine], begin[owner[mine]]
    return owner, np.stack([e.ids[mine], e.starts[mine] - shift, e.ends[mine] - shift])
