"""The cached prefixes of chat prompts: the static messages', and each conversation's
last turn.

Static: the leading system/developer messages rendered alone are a prefix P of the
whole text. P's ids are kept (LRU, `static_entries`) and only the rest is encoded,
when that is exact: the rest starts with a special token (special tokens are split
off before BPE, so no merge crosses the cut). Keyed by the static messages themselves
(with the tools and template kwargs, which can render into P), so a hit renders P no
more and `cached_cut` can tell the scorer, before any rendering, how much text a
request would really encode (a 6k-token tenant context already cached costs 0.2 ms:
no reason for a thread hop). A hit is still checked against the whole text (a
template that prints today's date renders another P tomorrow).

Turns: turn t's messages are turn t-1's plus the assistant's answer and a new
question, so turn t-1's text without its generation prompt is a prefix of turn t's,
cut before a special token. Each request is remembered that way (an LRU apart,
`turn_entries`, so a RAG application's one-off questions never push a tenant's
context out), keyed by its static prefix (the object) and the messages after it, and
holding only the text and ids after that prefix. The generation prompt's text and ids
are found once per template kwargs, so remembering costs no second rendering. Issue
20's 5-turn conversations encoded 1.3k tokens of history a turn (1.7 ms of BPE on one
core), about 400 now.
"""

from __future__ import annotations

import json
from array import array
from collections import OrderedDict
from typing import Any, Protocol

from proxy.routing.kv.prefix_chain import StaticPrefix

STATIC_ROLES = ("system", "developer")
MAX_BYTES = 64 << 20  # a cache's text, keys and ids: 16 MiB bodies must not fill memory
GEN_PROMPTS = 32  # generation prompts kept (one per chat_template_kwargs a client sends)
TENANT_SHARE = 4  # a partition (tenant) holds at most 1/4 of a cache's entries and bytes


class Template(Protocol):
    specials: tuple[str, ...]

    def render(self, messages: list[dict[str, Any]], body: dict[str, Any], gen: bool) -> str: ...
    def encode(self, text: str, special: bool = False) -> list[int]: ...


class Lru:
    """Prefixes by (partition, key), least recently used out first, bounded in entries
    and in bytes (the prefix's own text twice, the key holds its messages too, and 8
    bytes an id), and so is each partition, at 1/TENANT_SHARE of both.

    A partition is the request's cache_salt, per tenant with tenancy on (the tenant
    stage sets it): a hit is a timing tell, so one tenant never hits on another's text,
    nor fills the cache with its own. Why: docs/decisions/0022-edge-and-tenant-isolation.md."""

    def __init__(self, entries: int, max_bytes: int = MAX_BYTES):
        self.entries, self.max_bytes, self.bytes = entries, max_bytes, 0
        self.part_entries = max(1, entries // TENANT_SHARE)
        self.part_bytes = max_bytes // TENANT_SHARE
        self.items: OrderedDict[tuple[str, tuple], StaticPrefix] = OrderedDict()
        self.parts: dict[str, list[int]] = {}  # partition -> [entries, bytes]

    def __len__(self) -> int:
        return len(self.items)

    def has(self, part: str, key: tuple | None) -> bool:
        return key is not None and (part, key) in self.items

    def values(self):
        return self.items.values()

    def get(self, part: str, key: tuple | None) -> StaticPrefix | None:
        prefix = self.items.get((part, key)) if key is not None else None
        if prefix is not None:
            self.items.move_to_end((part, key))
        return prefix

    def put(self, part: str, key: tuple | None, prefix: StaticPrefix) -> None:
        if key is None or _weight(prefix) > self.part_bytes:
            return
        self._drop((part, key))
        self.items[(part, key)] = prefix
        self._count(part, 1, _weight(prefix))
        used = self.parts[part]
        while used[0] > self.part_entries or used[1] > self.part_bytes:
            self._drop(next(k for k in self.items if k[0] == part))
        while len(self.items) > self.entries or self.bytes > self.max_bytes:
            self._drop(next(iter(self.items)))

    def _drop(self, item: tuple[str, tuple]) -> None:
        old = self.items.pop(item, None)
        if old is not None:
            self._count(item[0], -1, -_weight(old))

    def _count(self, part: str, entries: int, size: int) -> None:
        used = self.parts.setdefault(part, [0, 0])
        used[0] += entries
        used[1] += size
        self.bytes += size
        if not used[0]:
            del self.parts[part]


def partition(body: dict[str, Any]) -> str:
    """The cache partition of a request: its cache_salt ("" without one)."""
    salt = body.get("cache_salt")
    return salt if isinstance(salt, str) else ""


def _weight(prefix: StaticPrefix) -> int:
    return 2 * len(prefix.own_text) + 8 * len(prefix.own)


class PromptPrefixes:
    def __init__(self, template: Template, static_entries: int = 256, turn_entries: int = 1024):
        self.template = template
        self.static, self.turns = Lru(static_entries), Lru(turn_entries)
        self.gen_prompts: dict[str, tuple[str, list[int]]] = {}

    def longest(
        self, messages: list[dict], body: dict[str, Any], text: str
    ) -> tuple[StaticPrefix | None, StaticPrefix | None]:
        """(the longest cached prefix of `text` at an exact cut, the static one): the
        conversation up to its last assistant message (the last turn's request), else
        the static messages (rendered and encoded on a miss)."""
        n = static_count(messages)
        static = self._static(messages[:n], body, text) if 0 < n < len(messages) else None
        for k in _cuts(messages, n):
            turn = self.turns.get(partition(body), self._turn_key(static, messages, n, k, body))
            if turn is not None and self.exact(text, turn):
                return turn, static
        return static, static

    def _static(self, messages: list[dict], body: dict[str, Any], text: str) -> StaticPrefix | None:
        key = message_key(messages, body)
        static = self.static.get(partition(body), key)
        if static is not None and self.exact(text, static):
            return static
        rendered = self.template.render(messages, body, False)
        if not text.startswith(rendered) or not self._cut(text, len(rendered)):
            return None
        static = StaticPrefix(rendered, self.template.encode(rendered))
        self.static.put(partition(body), key, static)
        return static

    def remember(
        self,
        messages: list[dict],
        body: dict[str, Any],
        text: str,
        ids: list[int],
        static: StaticPrefix | None,
    ) -> StaticPrefix | None:
        """This request without its generation prompt, as the next turn's prefix: its
        ids less the prompt's (exact when the prompt starts with a special token)."""
        n = static_count(messages)
        suffix, tail = self._generation_prompt(body)
        if n == len(messages) or not tail or not text.endswith(suffix) or ids[-len(tail) :] != tail:
            return None  # the prompt starts with a special token: the cut before it is exact
        start, at = (static.size, static.text_len) if static is not None else (0, 0)
        turn = StaticPrefix(text[at : -len(suffix)], array("I", ids[start : -len(tail)]), static)
        self.turns.put(
            partition(body), self._turn_key(static, messages, n, len(messages), body), turn
        )
        return turn

    def cached_cut(self, messages: list[dict], body: dict[str, Any]) -> int:
        """How many leading messages a cached prefix covers (0: none)."""
        n = static_count(messages)
        part, static = partition(body), None
        if 0 < n < len(messages):
            static = self.static.get(part, message_key(messages[:n], body))
        for k in _cuts(messages, n):
            if self.turns.has(part, self._turn_key(static, messages, n, k, body)):
                return k
        return n if static is not None else 0

    def exact(self, text: str, prefix: StaticPrefix) -> bool:
        """`prefix` starts `text` and the rest starts with a special token (split off
        before BPE, so no merge crosses the cut)."""
        return prefix.starts(text) and self._cut(text, prefix.text_len)

    def _cut(self, text: str, at: int) -> bool:
        return text.startswith(self.template.specials, at)

    def _turn_key(
        self,
        static: StaticPrefix | None,
        messages: list[dict],
        n: int,
        k: int,
        body: dict[str, Any],
    ) -> tuple | None:
        """A turn's key: its static prefix (the cached object, else the static messages)
        and the messages after it up to `k`."""
        if static is None:
            return message_key(messages[:k], body)
        rest = message_key(messages[n:k], body)
        return (static, rest) if rest is not None else None

    def _generation_prompt(self, body: dict[str, Any]) -> tuple[str, list[int]]:
        """The text the template adds for add_generation_prompt, and its ids, once per
        chat_template_kwargs (Qwen3's enable_thinking changes it); ("", []) if unknown."""
        kwargs = body.get("chat_template_kwargs")
        key = json.dumps(kwargs, sort_keys=True, default=str) if kwargs else ""
        if key not in self.gen_prompts:
            probe, found = [{"role": "user", "content": "x"}], ("", [])
            try:
                bare = self.template.render(probe, body, False)
                full = self.template.render(probe, body, True)
                if full.startswith(bare) and full[len(bare) :].startswith(self.template.specials):
                    found = (full[len(bare) :], self.template.encode(full[len(bare) :]))
            except Exception:  # noqa: BLE001 - a template that needs more than a user turn
                pass
            if len(self.gen_prompts) >= GEN_PROMPTS:  # a client's arbitrary kwargs
                del self.gen_prompts[next(iter(self.gen_prompts))]
            self.gen_prompts[key] = found
        return self.gen_prompts[key]


def static_count(messages: list[dict[str, Any]]) -> int:
    return next(
        (i for i, m in enumerate(messages) if m.get("role") not in STATIC_ROLES), len(messages)
    )


def _cuts(messages: list[dict[str, Any]], n: int) -> list[int]:
    """Where the last turn's request ended: before the last assistant message."""
    last = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), 0
    )
    return [last] if last > n else []


def message_key(messages: list[dict[str, Any]], body: dict[str, Any]) -> tuple | None:
    """What a prefix renders from; None when a value is not hashable."""
    extra = [body.get(k) for k in ("tools", "chat_template_kwargs")]
    try:
        key = (
            tuple(tuple(sorted(m.items())) for m in messages),
            json.dumps(extra, sort_keys=True) if any(extra) else "",
        )
        hash(key)  # a list among a message's values: no key
        return key
    except (TypeError, ValueError):
        return None
