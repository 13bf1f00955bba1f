"""The record of what ragtrim forwarded to each backend (issue 29, item 1): it answers
how many leading tokens of a prompt a backend holds, stays under its byte cap, ages
out, learns from vLLM's cached_tokens, and never prices one tenant's request with
another's record."""

import gc
import time
import tracemalloc

import pytest

from cache.forwarded import BYTES_PER_BLOCK, MIN_HORIZON_S, ForwardedRecord

DOCS = "".join(f"Document {i}: the river Loire flows west to the Atlantic. " for i in range(60))
B = 16  # GPU vLLM's block size; a text block is B × 4 = 64 characters


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record(max_bytes: int = 1 << 24, ttl: float = 600.0) -> tuple[ForwardedRecord, Clock]:
    clock = Clock()
    return ForwardedRecord(max_bytes=max_bytes, ttl=ttl, clock=clock), clock


def send(rec: ForwardedRecord, backend: str, blocks, cached: int | None = None):
    receipt = rec.expect(backend, blocks)
    rec.confirm(receipt, cached)
    return receipt


def test_a_confirmed_prompt_is_held_by_its_backend_only():
    rec, _ = record()
    blocks = rec.blocks("t", DOCS, B)
    assert rec.held("a", blocks) == 0
    receipt = rec.expect("a", blocks)
    assert rec.held("a", blocks) == 0  # sent is not held: only a response confirms it
    rec.confirm(receipt, 0)
    assert rec.held("a", blocks) == len(DOCS) // 64 * B
    assert rec.held("b", blocks) == 0


def test_a_prompt_is_held_up_to_its_first_changed_block():
    """vLLM's chained blocks: one changed byte invalidates its block and all after it."""
    rec, _ = record()
    send(rec, "a", rec.blocks("t", DOCS, B))
    changed = DOCS[:1000] + "X" + DOCS[1001:]
    assert rec.held("a", rec.blocks("t", changed, B)) == 1000 // 64 * B
    follow_up = DOCS + "\nuser: and the Seine?"  # the same documents, a new question
    assert rec.held("a", rec.blocks("t", follow_up, B)) == len(DOCS) // 64 * B


def test_the_compressed_form_sent_before_is_held_and_the_original_is_not():
    rec, _ = record()
    system = "system: answer from the documents.\n"
    kept = "".join(f"Document {i}: the river Loire flows west to the Atlantic. "
                   for i in range(0, 60, 3))  # fmt: skip
    send(rec, "a", rec.blocks("t", system + kept, B))
    later = rec.blocks("t", system + kept + "\nuser: a later question", B)
    assert rec.held("a", later) == len(system + kept) // 64 * B
    assert rec.held("a", rec.blocks("t", system + DOCS, B)) == B  # their first 64 chars


def test_token_ids_count_exact_blocks_and_never_the_last_token():
    rec, _ = record()
    ids = list(range(1000, 1064))  # 4 full blocks of 16
    send(rec, "a", rec.blocks("t", ids, B))
    assert rec.held("a", rec.blocks("t", ids, B)) == 48  # vLLM computes the last token
    assert rec.held("a", rec.blocks("t", ids + [7], B)) == 64
    assert rec.held("a", rec.blocks("t", ids[:20] + [0] + ids[21:] + [7], B)) == 16


def test_units_block_sizes_and_partitions_never_match_each_other():
    rec, _ = record()
    send(rec, "a", rec.blocks("t", DOCS, B))
    assert rec.held("a", rec.blocks("t", DOCS, 128)) == 0
    assert rec.held("a", rec.blocks("t", DOCS, B, partition="salt-1")) == 0
    send(rec, "a", rec.blocks("t", list(range(64)), B))
    assert rec.held("a", rec.blocks("t", "".join(map(chr, range(64))), B)) == 0


def test_tenant_as_record_never_prices_tenant_bs_request():
    rec, _ = record()
    for backend in ("a", "b"):
        send(rec, backend, rec.blocks("alpha", DOCS, B))
    assert rec.held("a", rec.blocks("alpha", DOCS, B)) > 0
    for backend in ("a", "b"):
        assert rec.held(backend, rec.blocks("beta", DOCS, B)) == 0
        assert rec.held(backend, rec.blocks("", DOCS, B)) == 0


def test_one_tenants_flood_evicts_its_own_blocks_never_anothers():
    rec, _ = record(max_bytes=2000 * BYTES_PER_BLOCK)
    warm = rec.blocks("beta", DOCS, B)
    send(rec, "a", warm)
    for i in range(5000):  # alpha's distinct prompts, always the most recent
        send(rec, "a", rec.blocks("alpha", f"{i:064d}", B))
    assert rec.held("a", warm) == len(DOCS) // 64 * B
    assert rec.bytes <= 2000 * BYTES_PER_BLOCK


def test_a_prompts_tail_is_evicted_before_its_head():
    """Parents are touched after their blocks: eviction shortens a chain from its end,
    and what is left is still a leading run that a later prompt can hit."""
    rec, _ = record(max_bytes=100 * BYTES_PER_BLOCK)
    long = rec.blocks("t", "".join(f"{j:064d}" for j in range(41)), B)  # 41 blocks
    send(rec, "a", long)
    for i in range(8):  # 80 more blocks: 21 of the long prompt's must go
        send(rec, "a", rec.blocks("t", "".join(f"p{i}b{j}".rjust(64, "-") for j in range(10)), B))
    assert rec.held("a", long) == 20 * B


def test_a_shared_prefix_outlives_the_prompts_that_extend_it():
    rec, _ = record(max_bytes=300 * BYTES_PER_BLOCK)
    prefix = "system: answer from the documents only. " * 8  # 320 chars: 5 blocks
    for i in range(2000):
        send(rec, "a", rec.blocks("t", prefix + eight_blocks(i), B))
    assert rec.held("a", rec.blocks("t", prefix + "a new question", B)) == 5 * B


def eight_blocks(i: int) -> str:
    """Prompt i: eight 64-character blocks, none of them in any other prompt."""
    return "".join(f"{i:063d}{j}" for j in range(8))


def test_the_record_stays_under_its_cap_with_a_million_blocks():
    """A million distinct blocks (125,000 distinct prompts of 8 blocks): every one
    through ByteLRU's eviction. A million distinct prompts of two blocks each took
    ~10 s on 2 busy cores (ByteLRU.set alone: ~4 µs per block), hence a million blocks."""
    cap = 1 << 20
    rec, _ = record(max_bytes=cap)
    t0 = time.perf_counter()
    for i in range(125_000):
        send(rec, "a", rec.blocks(f"tenant-{i % 4}", eight_blocks(i), B))
        assert rec.bytes <= cap
    elapsed = time.perf_counter() - t0
    assert len(rec) == cap // BYTES_PER_BLOCK
    assert rec.held("a", rec.blocks("tenant-3", eight_blocks(124_999), B)) == 8 * B
    assert rec.held("a", rec.blocks("tenant-0", eight_blocks(0), B)) == 0
    assert elapsed < 60  # ~6 s measured on 2 shared cores


def test_bytes_per_block_bounds_what_the_record_really_holds():
    """tracemalloc: a record filled far past its cap holds less than the cap in fact."""
    cap = 5000 * BYTES_PER_BLOCK
    rec, _ = record(max_bytes=cap)
    chains = [rec.blocks(f"t{i % 3}", f"{i:064d}", B) for i in range(15_000)]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for blocks in chains:
        send(rec, "a", blocks)
    del blocks
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(rec) == 5000
    assert held <= cap, f"{held / len(rec):.0f} bytes per block"


def test_blocks_age_out_after_the_ttl():
    rec, clock = record(ttl=600)
    blocks = rec.blocks("t", DOCS, B)
    send(rec, "a", blocks)
    clock.now += 599
    assert rec.held("a", blocks) > 0
    clock.now += 2
    assert rec.held("a", blocks) == 0


def test_fewer_cached_tokens_than_predicted_shortens_the_backends_horizon():
    """vLLM had evicted a block confirmed 120 s before: every block of that backend
    older than 120 s reads as evicted; the prompt itself was just prefilled: held."""
    rec, clock = record()
    old = rec.blocks("t", list(range(5000, 5160)), B)
    send(rec, "a", old)  # confirmed at t=0
    clock.now += 30
    ids = list(range(1, 161))  # 10 blocks
    send(rec, "a", rec.blocks("t", ids, B))  # confirmed at t=30
    clock.now += 120  # t=150
    receipt = rec.expect("a", rec.blocks("t", ids, B))
    assert receipt.predicted == 9
    rec.confirm(receipt, cached_tokens=48)  # block 3 was gone
    assert rec.horizon("a", "t") == pytest.approx(120)
    assert rec.held("a", old) == 0  # 150 s old: past the horizon
    assert rec.held("a", rec.blocks("t", ids, B)) == 144  # the request refreshed it
    assert rec.horizon("b", "t") == 600  # another backend learns nothing


def test_one_tenants_misses_never_shorten_anothers_horizon():
    """A tenant whose requests vLLM does not serve from cache (say, its own cache_salt
    left out of `partition`) reports misses: only its own pricing changes."""
    rec, clock = record()
    beta = rec.blocks("beta", DOCS, B)
    send(rec, "a", beta)
    alpha = rec.blocks("alpha", DOCS, B)
    send(rec, "a", alpha)
    for _ in range(5):
        clock.now += 30
        send(rec, "a", alpha, cached=0)
    assert rec.horizon("a", "alpha") == pytest.approx(30)
    assert rec.horizon("a", "beta") == 600
    assert rec.held("a", beta) == len(DOCS) // 64 * B  # 150 s old, still priced held


def test_more_cached_tokens_than_predicted_raises_the_horizon_again():
    rec, clock = record()
    ids = list(range(1, 161))
    send(rec, "a", rec.blocks("t", ids, B))
    clock.now += 10
    send(rec, "a", rec.blocks("t", list(range(500, 660)), B), cached=0)
    rec.confirm(rec.expect("a", rec.blocks("t", list(range(500, 660)), B)), 0)
    assert rec.horizon("a", "t") == MIN_HORIZON_S  # prefix caching off, as far as it knows
    clock.now += 50
    receipt = rec.expect("a", rec.blocks("t", ids, B))
    assert receipt.predicted == 0 and len(receipt.ages) == 9
    rec.confirm(receipt, cached_tokens=144)  # vLLM had all of it, 60 s old
    assert rec.horizon("a", "t") == pytest.approx(60)


def test_text_estimates_within_the_slack_teach_nothing():
    rec, _ = record()
    blocks = rec.blocks("t", DOCS, B, chars_per_token=4.4)
    send(rec, "a", blocks)
    receipt = rec.expect("a", blocks)
    rec.confirm(receipt, cached_tokens=int(blocks.tokens(receipt.predicted) * 0.93))
    assert rec.horizon("a", "t") == 600
    rec.confirm(rec.expect("a", blocks), cached_tokens=0)  # a real miss still teaches
    assert rec.horizon("a", "t") == MIN_HORIZON_S


def test_a_forgotten_backend_holds_nothing():
    rec, _ = record()
    blocks = rec.blocks("t", DOCS, B)
    send(rec, "a", blocks)
    rec.confirm(rec.expect("a", blocks), 0)
    assert rec.horizon("a", "t") == MIN_HORIZON_S
    rec.forget("a")
    assert rec.held("a", blocks) == 0 and rec.horizon("a", "t") == 600
    send(rec, "a", blocks)
    assert rec.held("a", blocks) > 0


def test_a_4k_token_prompt_is_priced_in_tens_of_microseconds():
    """Measured ~40-60 µs for `blocks` and ~1.3 µs for `held` (bisection) at block size
    16; the bound is loose for a loaded machine."""
    rec, _ = record()
    prompt = (DOCS * 5)[:16_000]  # ~4k tokens as text
    for backend in ("a", "b", "c"):
        send(rec, backend, rec.blocks("t", prompt, B))
    n = 200
    t0 = time.perf_counter()
    for _ in range(n):
        blocks = rec.blocks("t", prompt, B)
        held = [rec.held(backend, blocks) for backend in ("a", "b", "c")]
    per_query_us = (time.perf_counter() - t0) / n * 1e6
    assert held == [4000, 4000, 4000]
    assert per_query_us < 1000, per_query_us
