"""A prefix's reuse is the fan-out below it: requests that diverge after a shared
system prompt make it cheap to copy; a conversation's history stays at full price."""

from __future__ import annotations

import pytest

from proxy.routing.kv.reuse import MAX_FANOUT, STRIDE, Prices, Reuse, sampled

SYSTEM = [1, 2, 3]  # three blocks' hashes every conversation starts with


def turn(conv: int, n: int) -> list[int]:
    """Conversation `conv`'s n-th turn: the system prompt, then its own history."""
    return SYSTEM + [conv * 100 + i for i in range(n)]


def test_an_unseen_chain_has_reuse_one_everywhere():
    assert Reuse().profile(turn(1, 2))[0] == [1] * 5


def test_conversations_diverging_after_the_system_prompt_share_it():
    reuse = Reuse()
    for conv in range(1, 6):
        reuse.learn(turn(conv, 1))
    assert reuse.profile(turn(6, 1))[0] == [5, 5, 5, 1]  # a new conversation's first turn


def test_a_conversation_s_own_history_keeps_reuse_one():
    reuse = Reuse()
    for n in range(1, 6):  # one conversation, five turns, each extending the last
        reuse.learn(turn(1, n))
    assert reuse.profile(turn(1, 6))[0] == [1] * 9
    reuse.learn(turn(2, 1))  # a second conversation branches after the system prompt
    assert reuse.profile(turn(1, 6))[0] == [2, 2, 2, 1, 1, 1, 1, 1, 1]


def test_fanout_is_capped_and_the_oldest_blocks_are_forgotten():
    reuse = Reuse(max_blocks=50)
    for conv in range(1, 2 * MAX_FANOUT):
        reuse.learn(turn(conv, 1))
    assert len(reuse.blocks) <= 50
    wide = Reuse()
    for conv in range(1, 2 * MAX_FANOUT):
        wide.learn(turn(conv, 1))
    assert wide.profile([SYSTEM[-1]])[0] == [MAX_FANOUT]
    with pytest.raises(ValueError):
        Reuse(max_blocks=0)


def test_traffic_is_the_share_of_requests_since_a_block_was_first_seen():
    reuse = Reuse()
    reuse.learn([9])  # before the system prompt was first seen: not counted against it
    for conv in range(1, 4):
        reuse.learn(turn(conv, 1))
        reuse.learn([50 + conv])  # another tenant's request
    _, traffic = reuse.profile([SYSTEM[0], 100, 200, 12345])
    assert traffic == [3 / 6, 1 / 6, 1 / 4, 0.0]


def test_prices_charge_a_segment_s_blocks_its_unit_and_the_tail_in_full():
    prices = Prices([4.0, 16.0], blocks=2 * STRIDE + 3, block_size=16)  # 2 segments, 3 more
    tail = 3 * 16
    assert prices.missing(0) == 4 * STRIDE + 16 * STRIDE + tail
    assert prices.missing(STRIDE) == 16 * STRIDE + tail
    assert prices.missing(STRIDE - 2) == 2 * 4 + 16 * STRIDE + tail  # a segment begun
    assert prices.missing(2 * STRIDE + 1) == 2 * 16
    assert prices.missing(2 * STRIDE + 3) == 0
    assert Prices([], blocks=5, block_size=16).missing(2) == 3 * 16


def test_the_sampled_chain_is_each_whole_segment_s_last_block():
    chain = list(range(2 * STRIDE + 3))
    assert list(sampled(chain)) == [STRIDE - 1, 2 * STRIDE - 1]
