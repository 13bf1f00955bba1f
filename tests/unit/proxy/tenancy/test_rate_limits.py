"""The per-tenant window (proxy/tenancy/rate_limits.py): fixed, refused requests not counted,
OpenAI's headers, and what happens without a shared store."""

import pytest

from cache.store import MemoryStore, RedisStore
from proxy.metrics import Metrics
from proxy.settings import QuotaSettings
from proxy.tenancy.rate_limits import (
    LocalWindow,
    PromptSize,
    RateLimited,
    RateLimiter,
    Verdict,
    prompt_size,
    reset_text,
)
from tests.support.redis_server import RedisServer
from tests.support.servers import free_port


class Clock:
    def __init__(self, now: float = 1_000_040.0):  # 20 s into a 60 s window
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_fixed_window_admits_the_limit_refuses_without_counting_and_recovers():
    clock = Clock()
    window = LocalWindow(60_000, clock)
    admitted = [window.admit("acme", 3, 0, 10)[0] for _ in range(5)]
    assert admitted == [1, 1, 1, 0, 0]
    assert window.admit("acme", 3, 0, 10)[1:3] == (3, 30)  # refusals were not counted
    assert window.admit("globex", 3, 0, 10)[0] == 1  # another tenant is untouched
    ok, _, _, reset, _start = window.admit("acme", 3, 0, 10)
    assert reset == 40_000  # ms to the window's end, aligned to the clock
    clock.now += 40.0  # the next window starts
    assert window.admit("acme", 3, 0, 10)[:3] == (1, 1, 10)


def test_tokens_limit_counts_what_the_request_carries():
    window = LocalWindow(60_000, Clock())
    assert window.admit("t", 0, 100, 60)[0] == 1
    assert window.admit("t", 0, 100, 50)[0] == 0  # 110 > 100
    assert window.admit("t", 0, 100, 40)[0] == 1  # exactly 100


def test_reset_is_written_as_openai_does():
    assert [reset_text(ms) for ms in (250, 1000, 17_500, 360_000, 61_250)] == [
        "250ms", "1s", "17.5s", "6m0s", "1m1.25s"]  # fmt: skip


def test_headers_and_the_429_envelope():
    verdict = Verdict.of((0, 5, 300, 1500), rpm=5, tpm=1000)
    assert verdict.refused_by == "requests"
    assert verdict.headers() == {
        "x-ratelimit-limit-requests": "5", "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1.5s", "x-ratelimit-limit-tokens": "1000",
        "x-ratelimit-remaining-tokens": "700", "x-ratelimit-reset-tokens": "1.5s",
    }  # fmt: skip
    error = RateLimited(verdict)
    assert error.status == 429 and error.envelope()["error"]["code"] == "rate_limit_exceeded"
    headers = dict(error.headers())
    assert headers[b"retry-after"] == b"2" and headers[b"x-ratelimit-remaining-requests"] == b"0"
    only_tokens = Verdict.of((0, 1, 90, 10), rpm=0, tpm=100)
    assert only_tokens.refused_by == "tokens" and "x-ratelimit-limit-requests" not in (
        only_tokens.headers()
    )


def test_estimate_counts_chat_contents_and_prompts():
    chat = {"model": "m", "messages": [{"role": "user", "content": "x" * 40}]}
    assert prompt_size(chat) == PromptSize(text_chars=40, fixed=4)  # {"role":"user"}: 15 B
    assert prompt_size(chat).tokens == 14
    tokens = prompt_size({"prompt": "abcdefgh"}).tokens
    assert tokens == prompt_size({"prompt": ["abcdefgh"]}).tokens == 2
    assert prompt_size({"prompt": ["abcd", "efg"]}) == PromptSize(0, 2)  # a batch: each counts


@pytest.mark.parametrize("prompt", [{}, {"prompt": "q"}, {"messages": []}])
def test_prompt_embeds_count_as_their_bytes_before_or_after_the_prompt(prompt):
    """A prompt_embeds body (vLLM --enable-prompt-embeds, issue 31) is a base64 string:
    its bytes count like any field's, also when it comes before `prompt` or `messages`."""
    embeds = "A" * 4000
    for body in ({"prompt_embeds": embeds, **prompt}, {**prompt, "prompt_embeds": embeds}):
        assert prompt_size(body).fixed >= 1000


HEAVY = "z" * 400_000  # 400 KB: ~100k tokens whatever field carries it (issue 33)
FORMS = {
    "token ids": {"prompt": list(range(100_000))},
    "batched token ids": {"prompt": [list(range(50_000)), list(range(50_000))]},
    "tools": {"messages": [], "tools": [{"type": "function",
                                         "function": {"name": "f", "description": HEAVY}}]},
    "tool-call arguments": {"messages": [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": HEAVY}}]}]},
    "text parts": {"messages": [{"role": "user", "content": [
        {"type": "text", "text": HEAVY[:200_000]}, {"type": "text", "text": HEAVY[:200_000]}]}]},
    "image parts": {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://x/i.png"}}] * 1200}]},
    "response_format": {"messages": [], "response_format": {"type": "json_schema",
                                                            "json_schema": {"schema": HEAVY}}},
    "documents": {"messages": [], "documents": [{"title": "t", "text": HEAVY}]},
    "guided_json": {"prompt": "q", "guided_json": {"description": HEAVY}},
}  # fmt: skip


@pytest.mark.parametrize("form", FORMS)
def test_every_prompt_form_counts_as_fixed_tokens(form):
    """What compression cannot shrink is `fixed`: 100k tokens, not ~0 as before."""
    size = prompt_size({"model": "m", **FORMS[form]})
    assert size.fixed >= 100_000 and size.text_chars <= 1, (form, size)


async def test_per_tenant_overrides_and_no_limit():
    tenants = {"big": {"requests_per_minute": 4}, "free": {"requests_per_minute": 0}}
    settings = QuotaSettings(requests_per_minute=2, tenants=tenants)
    limiter = RateLimiter(MemoryStore(), settings, Metrics(), shared=False, clock=Clock())
    assert [(await limiter.admit("big", 1)).allowed for _ in range(5)] == [True] * 4 + [False]
    assert [(await limiter.admit("x", 1)).allowed for _ in range(3)] == [True, True, False]
    assert await limiter.admit("free", 1) is None  # 0 = no limit for that tenant


@pytest.mark.parametrize("mode", ["open", "local"])
async def test_redis_down_fails_open_counted_or_limits_locally(mode):
    metrics = Metrics()
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.05)  # nothing listens
    settings = QuotaSettings(requests_per_minute=2, redis_down=mode)
    limiter = RateLimiter(store, settings, metrics, shared=True, clock=Clock())
    try:
        verdicts = [await limiter.admit("acme", 1) for _ in range(4)]
    finally:
        await store.aclose()
    allowed = [v.allowed for v in verdicts]
    fail_open = metrics.quota_fail_open._value.get()
    if mode == "open":
        assert allowed == [True] * 4 and fail_open == 4
    else:
        assert allowed == [True, True, False, False] and fail_open == 0


@pytest.mark.parametrize("where", ["redis", "process"])
async def test_a_body_of_n_requests_is_admitted_whole_or_refused_whole(where):
    """Issue 44: a batch of N conversations counts N requests, in the Redis script and
    in the process's own window alike; one that does not fit whole is not counted."""
    server = RedisServer(free_port()).start() if where == "redis" else None
    store = RedisStore(server.url) if server is not None else MemoryStore()
    limiter = RateLimiter(store, QuotaSettings(requests_per_minute=4), Metrics(),
                          shared=server is not None, clock=Clock())  # fmt: skip
    try:
        three = await limiter.admit("acme", 10, asked=3)
        two = await limiter.admit("acme", 10, asked=2)
        one = await limiter.admit("acme", 10, asked=1)
    finally:
        await store.aclose()
        if server is not None:
            server.kill()
    assert (three.allowed, three.requests, three.headers()["x-ratelimit-remaining-requests"]) == (
        True, 3, "1")  # fmt: skip
    assert not two.allowed and two.refused_by == "requests" and two.requests == 3
    assert one.allowed and one.requests == 4


def test_generate_token_ids_count_one_each():
    assert prompt_size({"token_ids": list(range(1000))}).tokens == 1000


@pytest.mark.parametrize("where", ["redis", "process"])
async def test_computed_charge_settles_the_admitted_window(where):
    """quotas.charge=computed: an admitted request's 40 tokens become the 10 vLLM
    computed, in the window it was admitted in, in Redis and in process alike; a window
    that turned is left alone, and nothing goes below 0."""
    server = RedisServer(free_port()).start() if where == "redis" else None
    store = RedisStore(server.url) if server is not None else MemoryStore()
    clock = Clock()
    limiter = RateLimiter(store, QuotaSettings(tokens_per_minute=100), Metrics(),
                          shared=server is not None, clock=clock)  # fmt: skip
    try:
        first = await limiter.admit("acme", 40)
        assert first.charged == 40 and first.tokens == 40
        await limiter.settle("acme", first, computed=10)
        second = await limiter.admit("acme", 40)
        assert second.tokens == 50  # 10 + 40
        await limiter.settle("acme", second, computed=500)  # dearer than admitted: charged
        assert not (await limiter.admit("acme", 1)).allowed
        stale = Verdict(True, 0, 100, 1, 40, 1000, charged=40, window=second.window - 60_000)
        await limiter.settle("acme", stale, computed=0)  # another window: nothing moves
        assert (await limiter.admit("acme", 0, commit=False)).tokens == 510
    finally:
        await store.aclose()
        if server is not None:
            server.kill()
