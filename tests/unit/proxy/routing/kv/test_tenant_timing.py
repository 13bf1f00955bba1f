"""ragtrim's token-id caches tell no tenant what another sent, by timing (issue 44, item
3; vLLM's CVE-2025-46570 is this class). With `kv_cache` routing, the ids of a
request's static messages and of its last turn were cached by text for all tenants:
beta sending alpha's 20k-character system prompt cost 0.2 ms to tokenize here, an
unseen one 6.8 ms (the probe saw 4.3 vs 37.1 ms through ragtrim). The caches are now
keyed by the request's cache_salt, which the tenant stage sets per tenant, so beta
pays for alpha's text what it pays for text nobody sent. Timed on the real tiny Llama
tokenizer, 8 trials, interleaved.
"""

from __future__ import annotations

import random
import statistics
import time
from pathlib import Path

import pytest

from proxy.backends.endpoint import EndpointPool
from proxy.routing.kv.chat_tokens import RequestTokens

TINY = Path(__file__).resolve().parents[5] / ".models" / "tiny-llama"
needs_tiny = pytest.mark.skipif(not (TINY / "tokenizer.json").exists(), reason="make setup")
WORDS = ("permit", "bridge", "council", "harbour", "archive", "letter", "river", "roof")


def system_prompt(seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(2_500))[:20_000]


def timed(tokens: RequestTokens, salt: str, system: str) -> float:
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": "Which permit?"}]  # fmt: skip
    body = {"model": "m", "cache_salt": salt, "messages": messages}
    t0 = time.perf_counter()
    assert tokens.ids("chat", body, "m")
    return (time.perf_counter() - t0) * 1000


@pytest.fixture
def tokens() -> RequestTokens:
    tokens = RequestTokens(EndpointPool(), explicit_dir=str(TINY))
    for i in range(6):  # loaded, template compiled, allocator warm
        timed(tokens, "warm", system_prompt(-1 - i))
    return tokens


def medians(tokens: RequestTokens, round_: int) -> tuple[float, float]:
    """(beta's median for alpha's prompts, for unseen ones) over 8 interleaved trials."""
    seen, unseen = [], []
    for trial in range(8):
        theirs, fresh = system_prompt(1000 * round_ + 2 * trial), system_prompt(
            1000 * round_ + 2 * trial + 1)  # fmt: skip
        timed(tokens, "salt-alpha", theirs)  # alpha's prompt, cached for alpha
        pair = [(seen, theirs), (unseen, fresh)]
        for out, text in pair if trial % 2 else pair[::-1]:
            out.append(timed(tokens, "salt-beta", text))
    return statistics.median(seen), statistics.median(unseen)


@needs_tiny
def test_another_tenants_system_prompt_costs_what_an_unseen_one_costs(tokens):
    """A leak is a 30x effect (0.2 vs 6.8 ms); a shared 2-core machine's noise reaches
    1.2x now and then, so a round outside 1.2x is measured again, at most twice."""
    ratios = []
    for round_ in range(3):
        seen, unseen = medians(tokens, round_)
        ratios.append(unseen / seen)
        if 1 / 1.2 <= ratios[-1] <= 1.2:
            return
    raise AssertionError(f"unseen/seen medians {ratios}: a hit shows in the timing")


@needs_tiny
def test_a_tenants_own_repeat_still_hits_its_cache(tokens):
    """The test above would pass with no cache at all: within a tenant it still serves."""
    first, again = [], []
    for trial in range(8):
        text = system_prompt(100 + trial)
        first.append(timed(tokens, "salt-beta", text))
        again.append(timed(tokens, "salt-beta", text))
    assert statistics.median(again) < statistics.median(first) / 3, (first, again)
