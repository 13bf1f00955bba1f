"""A request's chain reuses its static prefix's hashes and equals the whole chain."""

from __future__ import annotations

import pytest

from proxy.routing.kv import prefix_chain
from proxy.routing.kv.chain import chain, request_extras
from proxy.routing.kv.prefix_chain import StaticPrefix, TokenIds, request_chain

PREFIX = list(range(1000, 1037))  # 9 full blocks of 4, one token over
REST = list(range(5, 19))


@pytest.fixture
def calls(monkeypatch) -> list[int]:
    """The lengths of the token lists prefix_chain hashes, call by call."""
    seen: list[int] = []
    real = prefix_chain.chain

    def counting(tokens, size, extras=(), parent=None):
        seen.append(len(tokens))
        return real(tokens, size, extras, parent)

    monkeypatch.setattr(prefix_chain, "chain", counting)
    return seen


def test_the_chain_is_the_whole_requests_with_and_without_a_salt():
    static = StaticPrefix("text", PREFIX)
    ids = TokenIds(PREFIX + REST, static)
    for extras in ([], request_extras("tenant-a")):
        assert request_chain(ids, 4, extras) == chain(PREFIX + REST, 4, extras)
    assert request_chain(PREFIX + REST, 4) == chain(PREFIX + REST, 4)  # a plain list


def test_the_prefix_is_hashed_once_per_block_size_and_salt(calls):
    static = StaticPrefix("text", PREFIX)
    for rest in (REST, REST[:5], REST[:1]):
        request_chain(TokenIds(PREFIX + rest, static), 4)
    assert calls.count(len(PREFIX)) == 1  # then only the tokens after its full blocks
    request_chain(TokenIds(PREFIX + REST, static), 4, request_extras("tenant-b"))
    request_chain(TokenIds(PREFIX + REST, static), 8)
    assert calls.count(len(PREFIX)) == 3


def test_a_prefix_shorter_than_a_block_hashes_the_whole_request():
    static = StaticPrefix("t", PREFIX[:3])
    assert request_chain(TokenIds(PREFIX[:3] + REST, static), 4) == chain(PREFIX[:3] + REST, 4)


def test_the_chains_kept_a_prefix_are_bounded():
    static = StaticPrefix("t", PREFIX)
    for n in range(prefix_chain.CHAINS_PER_PREFIX + 5):
        static.chain(4, request_extras(f"tenant-{n}"))
    assert len(static._chains) == prefix_chain.CHAINS_PER_PREFIX


def test_a_turn_leaves_its_chain_to_the_next_turn(calls):
    turn = StaticPrefix("turn one", PREFIX + REST[:6])  # the request less its gen prompt
    first = request_chain(TokenIds(PREFIX + REST[:9], None, turn), 4)
    second = request_chain(TokenIds(PREFIX + REST[:6] + REST, turn), 4)
    assert second == chain(PREFIX + REST[:6] + REST, 4) and first[:10] == second[:10]
    assert calls == [len(PREFIX) + 9, len(PREFIX) + 6 + len(REST) - 4 * 10]
