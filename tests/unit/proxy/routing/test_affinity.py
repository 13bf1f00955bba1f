"""Prefix affinity: rendezvous hashing is stable, balanced and agreed by every replica."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.routing.affinity import PrefixAffinity
from tests.support.rendezvous import rendezvous_order

ROOT = Path(__file__).resolve().parents[4]
URLS = [f"http://vllm-{i}:8000" for i in range(5)]
KEYS = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(10_000)]


def ctx(key: str | None) -> RequestContext:
    return RequestContext("r", "chat", b"", {"model": "m"}, {}, prefix_key=key)


def owners(urls: list[str]) -> dict[str, str]:
    return {key: rendezvous_order(key, urls)[0] for key in KEYS}


def test_golden_order_never_changes():
    # pinned: a change here re-shuffles every prefix cache in a running fleet
    urls = ["http://a:8000", "http://b:8000", "http://c:8000", "http://d:8000"]
    assert rendezvous_order("golden-key", urls) == [
        "http://c:8000",
        "http://b:8000",
        "http://d:8000",
        "http://a:8000",
    ]


def test_order_ignores_input_order_and_trailing_slash():
    assert rendezvous_order("k", URLS) == rendezvous_order("k", list(reversed(URLS)))
    slashed = [url + "/" for url in URLS]
    assert [u.rstrip("/") for u in rendezvous_order("k", slashed)] == rendezvous_order("k", URLS)


def test_adding_a_sixth_endpoint_moves_about_a_sixth_of_keys_all_to_it():
    before = owners(URLS)
    new = "http://vllm-5:8000"
    after = owners([*URLS, new])
    moved = [key for key in KEYS if before[key] != after[key]]
    assert 0.12 <= len(moved) / len(KEYS) <= 0.22
    assert {after[key] for key in moved} == {new}


def test_removing_an_endpoint_moves_only_its_keys():
    before = owners(URLS)
    gone = URLS[2]
    after = owners([url for url in URLS if url != gone])
    moved = {key for key in KEYS if before[key] != after[key]}
    assert moved == {key for key in KEYS if before[key] == gone}
    # each goes to its second choice: the order of the others is unchanged
    assert all(after[key] == rendezvous_order(key, URLS)[1] for key in moved)


def test_keys_spread_within_twenty_percent_of_even():
    counts = Counter(owners(URLS).values())
    mean = len(KEYS) / len(URLS)
    assert set(counts) == set(URLS)
    assert all(0.8 * mean <= n <= 1.2 * mean for n in counts.values()), counts


def test_two_scorer_instances_agree():
    endpoints_a = [Endpoint(url, healthy=True) for url in URLS]
    endpoints_b = [Endpoint(url, healthy=True, in_flight=3) for url in reversed(URLS)]
    for key in KEYS[:200]:
        a = PrefixAffinity().score(ctx(key), endpoints_a)
        b = PrefixAffinity().score(ctx(key), endpoints_b)
        assert {ep.url: s for ep, s in a.items()} == {ep.url: s for ep, s in b.items()}


def test_other_processes_agree_whatever_their_hash_seed():
    code = (
        "import sys; from tests.support.rendezvous import rendezvous_order as r; "
        "print([r(k, sys.argv[1:])[0] for k in ('a', 'b', 'c', 'd', 'e')])"
    )
    here = str([rendezvous_order(k, URLS)[0] for k in "abcde"])
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code, *URLS],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == here


def test_scores_are_rank_based():
    endpoints = [Endpoint(url, healthy=True) for url in URLS]
    scores = PrefixAffinity().score(ctx("k"), endpoints)
    by_rank = [
        scores[next(ep for ep in endpoints if ep.url == url)] for url in rendezvous_order("k", URLS)
    ]
    assert by_rank == pytest.approx([1.0, 0.8, 0.6, 0.4, 0.2])


def test_no_prefix_key_means_no_preference():
    endpoints = [Endpoint(url, healthy=True) for url in URLS]
    assert set(PrefixAffinity().score(ctx(None), endpoints).values()) == {0.0}
    assert PrefixAffinity().score(ctx("k"), []) == {}


def test_mix64_is_splitmix64s_finalizer():
    """Its published first output for seed 0 (state + golden gamma, then mixed)."""
    from proxy.routing.affinity import mix64

    assert mix64(0x9E3779B97F4A7C15) == 0xE220A8397B1DCDAF
    assert mix64(0) == 0 and 0 <= mix64(2**70 + 5) < 2**64
