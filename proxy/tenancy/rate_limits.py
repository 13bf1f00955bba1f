"""Per-tenant limits shared by every replica: requests and prompt tokens per window.

The window is FIXED, `tenancy.quotas.window_s` long (60 s: per minute), aligned to the Redis
server's clock (`TIME` inside the script), so replicas with skewed clocks still agree
on which window a request falls in. One Lua script per request reads the window's two
counts, admits the request only if both stay within the limits after adding it, and
only then increments them: Redis runs a script atomically, so however many replicas
ask at once, the fleet admits at most `limit` requests (and `limit` tokens) in one
window — no slack per replica. Refused requests are not counted. One body may count as
several requests (a batch of N conversations is N: proxy/http/route_table.py
`Route.requests_in`); it is admitted only if all N fit. The price of a fixed
window: a client may spend a whole window's quota at the end of one window and again
at the start of the next (up to 2× the limit over any span of window_s).

Tokens are estimated from every prompt form vLLM will count: message texts and string
prompts at 4 characters per token (OpenAI's rule of thumb), token ids one each
(`prompt`, and /inference/v1/generate's `token_ids`), every other field (tools, tool
calls, content parts, schemas, documents, ...) by its JSON bytes, 4 per token, and
each non-text content part at least NON_TEXT_PART_TOKENS. vLLM's own count exists only
once the answer comes back, too late to refuse the request. Two checks
(proxy/stages/quota.py): before segmentation, without counting, what compression
cannot shrink (everything but the message texts) must fit in what is left, so a tenant
already out costs no segmentation or compression; after compression the whole request
is counted (compression buys quota).

Redis down (or no Redis at all): the store calls `local`. Without a shared store, and
with `tenancy.quotas.redis_down=local`, each replica enforces the same limits alone (a fleet
of N then admits up to N× the limit); with `open` (the default) the request is
admitted unchecked and counted (ragtrim_quota_fail_open). Without Redis the window is
the process's own, so `--workers N` would admit N× the limit: ragtrim refuses to start
so (proxy/server/workers.py).

The headers follow OpenAI's API: x-ratelimit-{limit,remaining,reset}-{requests,tokens},
the reset as a duration ("1s", "6m0s", "250ms").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from cache.store import KVStore
from proxy.errors import Overloaded
from proxy.metrics import Metrics
from proxy.prompt.exact_json import dumps
from proxy.prompt.segment import message_text
from proxy.settings import QuotaSettings

CHARS_PER_TOKEN = 4
NON_TEXT_PART_TOKENS = 85  # OpenAI's price of a low-detail image: a part's least weight
Counts = tuple[int, ...]  # admitted (1/0), requests, tokens, ms to the window's end, its start

WINDOW_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local start = now - (now % window)
local key = KEYS[1] .. ':' .. start
local reqs = tonumber(redis.call('HGET', key, 'r') or '0')
local toks = tonumber(redis.call('HGET', key, 't') or '0')
local rl, tl, n = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local asked = tonumber(ARGV[6] or '1')
local ok = (rl == 0 or reqs + asked <= rl) and (tl == 0 or toks + n <= tl)
if ok and ARGV[5] == '1' then
  reqs = redis.call('HINCRBY', key, 'r', asked)
  toks = redis.call('HINCRBY', key, 't', n)
  redis.call('PEXPIRE', key, window * 2)
end
return {ok and 1 or 0, reqs, toks, start + window - now, start}
"""

# tenancy.quotas.charge=computed: the window's tokens move by ARGV[2] (what the engine computed
# less what was admitted), never below 0; a window that turned meanwhile is left alone
SETTLE_LUA = """
local key = KEYS[1] .. ':' .. ARGV[1]
if redis.call('EXISTS', key) == 1 then
  local toks = tonumber(redis.call('HGET', key, 't') or '0')
  local delta = math.max(tonumber(ARGV[2]), -toks)
  redis.call('HINCRBY', key, 't', delta)
end
return 1
"""


def reset_text(ms: int) -> str:
    """A duration as OpenAI writes x-ratelimit-reset-*: 250ms, 1s, 17.5s, 6m0s."""
    if ms < 1000:
        return f"{max(ms, 0)}ms"
    minutes, rest = divmod(ms, 60_000)
    seconds = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit_requests: int  # 0 = no limit
    limit_tokens: int
    requests: int  # counted in this window, this request included when admitted
    tokens: int
    reset_ms: int
    asked: int = 1  # the requests this body counts as (a batch: its conversations)
    charged: int = 0  # the tokens this request added to the window
    window: int = 0  # the window's start (ms), where a later settlement goes

    @classmethod
    def of(cls, counts: Counts, rpm: int, tpm: int, asked: int = 1, charged: int = 0) -> Verdict:
        ok, reqs, toks, reset, *start = (int(x) for x in counts)
        return cls(bool(ok), rpm, tpm, reqs, toks, reset, asked, charged if ok else 0,
                   start[0] if start else 0)  # fmt: skip

    @property
    def refused_by(self) -> str:
        over_requests = self.limit_requests and self.requests + self.asked > self.limit_requests
        return "requests" if over_requests else "tokens"

    def headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        reset = reset_text(self.reset_ms)
        for kind, limit, used in (("requests", self.limit_requests, self.requests),
                                  ("tokens", self.limit_tokens, self.tokens)):  # fmt: skip
            if limit:
                out[f"x-ratelimit-limit-{kind}"] = str(limit)
                out[f"x-ratelimit-remaining-{kind}"] = str(max(limit - used, 0))
                out[f"x-ratelimit-reset-{kind}"] = reset
        return out


class RateLimited(Overloaded):
    """429 for a tenant over its limits; OpenAI's code and headers (Overloaded is the
    per-replica in-flight refusal: proxy/request/admission.py)."""

    code = "rate_limit_exceeded"

    def __init__(self, verdict: Verdict):
        limit = verdict.limit_requests if verdict.refused_by == "requests" else verdict.limit_tokens
        super().__init__(f"Rate limit reached for {verdict.refused_by} per window: limit {limit}. "
                         f"Try again in {reset_text(verdict.reset_ms)}.")  # fmt: skip
        self.verdict = verdict
        self.retry_after = max(1, math.ceil(verdict.reset_ms / 1000))

    def headers(self) -> list[tuple[bytes, bytes]]:
        extra = [(k.encode(), v.encode()) for k, v in self.verdict.headers().items()]
        return [*super().headers(), *extra]


class LocalWindow:
    """The script's fixed window in process: per replica (no Redis, or Redis down with
    redis_down=local). One entry per tenant, replaced when its window turns."""

    def __init__(self, window_ms: int, clock: Callable[[], float] = time.time):
        self.window_ms = window_ms
        self.clock = clock
        self._counts: dict[str, tuple[int, int, int]] = {}  # tenant → (start, reqs, tokens)

    def admit(self, tenant: str, rpm: int, tpm: int, tokens: int, commit: bool = True,
              asked: int = 1) -> Counts:  # fmt: skip
        now = int(self.clock() * 1000)
        start = now - now % self.window_ms
        began, reqs, toks = self._counts.get(tenant, (start, 0, 0))
        if began != start:
            reqs = toks = 0
        ok = (rpm == 0 or reqs + asked <= rpm) and (tpm == 0 or toks + tokens <= tpm)
        if ok and commit:
            reqs, toks = reqs + asked, toks + tokens
        self._counts[tenant] = (start, reqs, toks)
        return int(ok), reqs, toks, start + self.window_ms - now, start

    def settle(self, tenant: str, window: int, delta: int) -> int:
        began, reqs, toks = self._counts.get(tenant, (-1, 0, 0))
        if began == window:
            self._counts[tenant] = (began, reqs, max(0, toks + delta))
        return 1


class RateLimiter:
    def __init__(self, store: KVStore, settings: QuotaSettings, metrics: Metrics, *,
                 shared: bool, owns_store: bool = False,
                 clock: Callable[[], float] = time.time):  # fmt: skip
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.shared = shared  # False: the store is in-process, the local window is the limit
        self.window_ms = max(1, int(settings.window_s * 1000))
        self.local = LocalWindow(self.window_ms, clock)
        self.owns_store = owns_store  # True: a store opened for the limiter alone

    async def admit(self, tenant: str, tokens: int, commit: bool = True,
                    asked: int = 1) -> Verdict | None:  # fmt: skip
        """The verdict for a body of `tokens` prompt tokens that counts as `asked`
        requests; None: no limit applies. `commit=False` only asks whether it would
        fit: nothing is counted."""
        rpm, tpm = self.settings.limits_of(tenant)
        if not rpm and not tpm:
            return None

        async def local() -> Counts:
            if self.shared and self.settings.redis_down == "open":
                self.metrics.quota_fail_open.inc()
                return 1, 0, 0, self.window_ms
            return self.local.admit(tenant, rpm, tpm, tokens, commit, asked)

        args = [self.window_ms, rpm, tpm, tokens, 1 if commit else 0, asked]
        counts = await self.store.eval(WINDOW_LUA, [f"quota:{tenant}"], args, local)
        return Verdict.of(counts, rpm, tpm, asked, tokens if commit else 0)

    async def settle(self, tenant: str, verdict: Verdict, computed: int) -> None:
        """tenancy.quotas.charge=computed: the admitted request's tokens become what the engine
        computed (its cached tokens and what compression removed cost nothing), in the
        window it was admitted in. Fails open like admission (nothing is settled)."""
        delta = computed - verdict.charged
        if not verdict.limit_tokens or not verdict.charged or not delta:
            return

        async def local() -> int:
            if self.shared and self.settings.redis_down == "open":
                return 0
            return self.local.settle(tenant, verdict.window, delta)

        args = [verdict.window, delta]
        await self.store.eval(SETTLE_LUA, [f"quota:{tenant}"], args, local)

    async def aclose(self) -> None:
        """Close the store when it is the limiter's own (components.own_store)."""
        if self.owns_store:
            await self.store.aclose()


@dataclass(frozen=True)
class PromptSize:
    """A request's estimated prompt tokens: `text_chars` of message texts and string
    prompt, what compression may shrink; `fixed` tokens of everything else."""

    text_chars: int
    fixed: int

    @property
    def tokens(self) -> int:
        return self.fixed + math.ceil(self.text_chars / CHARS_PER_TOKEN)


def prompt_size(body: dict) -> PromptSize:
    """Every field counts but `model` (the `ragtrim` field is gone before a check), in
    any order (a `prompt_embeds` before `prompt` counts too)."""
    text = size = ids = 0
    for key, value in body.items():
        if key == "messages" and isinstance(value, list):
            parts = _messages(value)
        elif key == "prompt" and isinstance(value, str | list):
            parts = _prompt(value)
        elif key == "token_ids" and isinstance(value, list):  # /inference/v1/generate
            parts = (0, 0, len(value))
        else:
            parts = (0, 0 if key == "model" else _json_size(value), 0)
        text, size, ids = text + parts[0], size + parts[1], ids + parts[2]
    return PromptSize(text, ids + math.ceil(size / CHARS_PER_TOKEN))


def _messages(messages: list) -> tuple[int, int, int]:
    """(text characters, JSON bytes of the rest, tokens of the non-text parts)."""
    text = size = parts = 0
    for message in messages:
        own = message_text(message) if isinstance(message, dict) else None
        if own is not None:
            text += len(own)
            message = {k: v for k, v in message.items() if k != "content"}
        size += _json_size(message)
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            parts += sum(not isinstance(p, dict) or p.get("type") != "text" for p in content)
    return text, size, parts * NON_TEXT_PART_TOKENS


def _prompt(prompt: str | list) -> tuple[int, int, int]:
    """(text characters, characters of a batch's strings, token ids)."""
    if isinstance(prompt, str) or (len(prompt) == 1 and isinstance(prompt[0], str)):
        return len(prompt if isinstance(prompt, str) else prompt[0]), 0, 0
    chars = sum(len(p) for p in prompt if isinstance(p, str))
    ids = sum(len(p) if isinstance(p, list) else 1 for p in prompt if not isinstance(p, str))
    return 0, chars, ids


def _json_size(value: object) -> int:
    return len(dumps(value))
