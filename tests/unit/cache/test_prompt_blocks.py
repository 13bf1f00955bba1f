"""A prompt's chain with its recurring head memoized: the same hashes, hashed once."""

from __future__ import annotations

from cache.analysis import DocumentAnalyses
from cache.prompt_blocks import MIN_HEAD_BLOCKS, prompt_blocks

SALT = b"s" * 16
WIDTH = 16 * 4  # block size 16, four characters a token
CONTEXT = "".join(f"Document sentence number {i} says something. " for i in range(200))


class CountingMemo:
    """A memo by (kind, content) that counts what it computes."""

    def __init__(self):
        self.values: dict = {}
        self.computed = 0

    def __call__(self, kind, text, compute):
        if (kind, text) not in self.values:
            self.computed += 1
            self.values[kind, text] = compute(text)
        return self.values[kind, text]


def chain(text, head=0, heads=None, tenant="t", partition=""):
    return prompt_blocks(SALT, tenant, text, 16, partition=partition, head=head, heads=heads)


def test_a_memoized_head_gives_the_same_chain_as_hashing_it_all():
    memo = CountingMemo()
    for question in ("When?", "Who founded it, and in which year?", "x" * 500):
        text = "system\x1f" + CONTEXT + "\x1euser\x1f" + question
        head = text.find("\x1euser")
        assert chain(text, head, memo) == chain(text)
    assert memo.computed == 1  # the context's blocks were hashed for the first turn only


def test_a_head_ending_mid_block_keeps_its_full_blocks_only():
    memo = CountingMemo()
    text = CONTEXT + "tail"
    for head in (len(CONTEXT) - 1, len(CONTEXT) + 3, len(text) + 100):
        assert chain(text, head, memo) == chain(text)
    for (_, key), value in memo.values.items():
        assert len(key) % WIDTH == 0 and len(value.hashes) == len(key) // WIDTH


def test_a_short_head_is_not_memoized():
    memo = CountingMemo()
    text = CONTEXT[: (MIN_HEAD_BLOCKS - 1) * WIDTH + 10] + "question"
    assert chain(text, len(text) - 8, memo) == chain(text)
    assert memo.computed == 0


def test_a_head_is_kept_per_tenant_and_partition():
    memo = CountingMemo()
    text = CONTEXT + "?"
    a, b = chain(text, len(CONTEXT), memo, "a"), chain(text, len(CONTEXT), memo, "b")
    salted = chain(text, len(CONTEXT), memo, "a", partition="m\x00salt")
    assert a == chain(text, tenant="a") and b == chain(text, tenant="b")
    assert salted == chain(text, tenant="a", partition="m\x00salt")
    assert a.hashes != b.hashes != salted.hashes and memo.computed == 3


def test_the_analyses_memo_keeps_heads_per_tenant():
    analyses = DocumentAnalyses()

    def heads(tenant):
        return lambda kind, text, make: analyses.get(kind, tenant, text, make)

    text = CONTEXT + "?"
    for tenant in ("a", "a", "b"):
        assert chain(text, len(CONTEXT), heads(tenant), tenant) == chain(text, tenant=tenant)
    assert (analyses.hits, analyses.misses) == (1, 2)


def test_token_ids_never_use_the_head_memo():
    memo = CountingMemo()
    ids = list(range(40 * 16))
    assert chain(ids, 30 * 16, memo) == chain(ids) and memo.computed == 0
