"""The request's token ids as vLLM will see them: its chat template, its tokenizer.

The kv_cache scorer (proxy/routing/kv/scorer.py) hashes these ids block by block as
the KV events' token ids are hashed; any difference from vLLM's own ids (another
template, special tokens added twice) would match nothing. So this does what vLLM's
OpenAI server does (vllm/entrypoints/chat_utils.py, serving_chat; /tokenize with
`messages` is the same path): text content parts joined with "\\n" (the "string"
content format), `tokenizer.apply_chat_template(messages, tools=...,
add_generation_prompt=True, tokenize=False, **chat_template_kwargs)`, then the text
encoded with `add_special_tokens=False` (the template writes BOS itself). Completions:
the prompt encoded with special tokens. The tokenizer is the backend's own, found from
its model root as the token counter finds it (proxy/compression/token_counter.py); with none on
this machine there are no ids, and the scorer falls back to affinity.

Static prefix cache: the leading system/developer messages rendered alone are a
prefix P of the whole text. P's ids are cached (LRU, `cache_entries`) and only the rest
is encoded, when that is exact: the rest starts with a special token (special tokens
are split off before BPE, so no merge crosses the cut). The cache is keyed by the
static messages themselves (with the tools and template kwargs, which can render into
P), so a hit renders P no more, and `pending_bytes` tells the scorer, before any
rendering, how much text a request would really encode (a 6k-token tenant context
already cached costs 0.2 ms: no reason for a thread hop). A hit is still checked
against the whole text (a template that prints today's date renders another P
tomorrow). The ids come back as prefix_chain.TokenIds, holding the StaticPrefix whose
chain hashes the scorer reuses.

Conversation turns: turn t's messages are turn t-1's plus the assistant's answer and
a new question, so turn t-1's text without its generation prompt is a prefix of turn
t's, cut before a special token. Each request is remembered that way (`turns`, an LRU
apart from the static one, `turn_entries`; ids as 4-byte arrays), and the next turn
encodes only its answer and question: issue 20's 5-turn conversations encoded 1.3k
tokens of history a turn (1.7 ms of BPE on one core), about 400 now.
tests/integration/test_kv_events.py compares the result with vLLM's /tokenize for
every framework template ragtrim recognises.
"""

from __future__ import annotations

import json
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from proxy.backends.endpoint import EndpointPool
from proxy.compression.token_counter import local_model_root
from proxy.routing.kv.prefix_chain import StaticPrefix, TokenIds

STATIC_ROLES = ("system", "developer")


def _text(content: Any) -> Any:
    if isinstance(content, list):
        parts = [
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "\n".join(parts)
    return content


def vllm_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "content": _text(m.get("content"))} if "content" in m else m for m in messages]


class ChatTokenizer:
    """One model's tokenizer and template, with the static-prefix cache."""

    def __init__(self, root: str, cache_entries: int = 256, turn_entries: int = 1024):
        from transformers import AutoTokenizer  # the `compress` extra; absent = no ids

        self.tok = AutoTokenizer.from_pretrained(root)
        added = {t.content for t in self.tok.added_tokens_decoder.values()}
        self.specials = tuple(sorted(set(self.tok.all_special_tokens) | added))
        self.cache: OrderedDict[tuple, StaticPrefix] = OrderedDict()  # static messages
        self.turns: OrderedDict[tuple, StaticPrefix] = OrderedDict()  # last turns, apart:
        # a RAG application's one-off questions never push a tenant's context out
        self.cache_entries, self.turn_entries = cache_entries, turn_entries
        # The kv_cache scorer tokenizes in worker threads: a fast tokenizer's encode
        # mutably borrows its Rust state ("Already borrowed" when two threads encode),
        # and the prefix cache's LRU moves are not atomic.
        self.lock = threading.Lock()

    def render(self, messages: list[dict[str, Any]], body: dict[str, Any], gen: bool) -> str:
        kwargs = dict(body.get("chat_template_kwargs") or {})
        return self.tok.apply_chat_template(messages, tools=body.get("tools"), tokenize=False,
                                            add_generation_prompt=gen, **kwargs)  # fmt: skip

    def encode(self, text: str, special: bool = False) -> list[int]:
        return self.tok.encode(text, add_special_tokens=special)

    def chat(self, body: dict[str, Any]) -> TokenIds:
        with self.lock:
            return self._chat(body)

    def _chat(self, body: dict[str, Any]) -> TokenIds:
        messages = vllm_messages(body.get("messages") or [])
        gen = bool(body.get("add_generation_prompt", True))
        text = self.render(messages, body, gen)
        prefix = self._prefix(messages, body, text)
        if prefix is None:
            ids = self.encode(text)
        else:
            ids = [*prefix.ids, *self.encode(text[len(prefix.text) :])]
        turn = None
        if gen and _static_count(messages) < len(messages):
            turn = self._remember(messages, body, text, ids)
        return TokenIds(ids, prefix, turn)

    def _prefix(self, messages: list[dict], body: dict[str, Any], text: str) -> StaticPrefix | None:
        """The longest cached prefix of `text` at an exact cut: the conversation up to
        its last assistant message (the last turn's request, `_remember`), else the
        static messages (rendered and encoded on a miss)."""
        n = _static_count(messages)
        cuts = [(k, self.turns) for k in _cuts(messages)]
        for k, cache in cuts + ([(n, self.cache)] if 0 < n < len(messages) else []):
            key = _static_key(messages[:k], body)
            prefix = cache.get(key) if key is not None else None
            if prefix is not None and self._exact(text, prefix.text):
                cache.move_to_end(key)
                return prefix
        if not 0 < n < len(messages):
            return None
        rendered = self.render(messages[:n], body, False)
        if not self._exact(text, rendered):
            return None
        return self._store(self.cache, _static_key(messages[:n], body), rendered,
                           self.encode(rendered))  # fmt: skip

    def _remember(self, messages: list[dict], body: dict[str, Any], text: str,
                  ids: list[int]) -> StaticPrefix | None:  # fmt: skip
        """This request without its generation prompt, as the next turn's prefix: its
        ids less the prompt's (exact when the prompt starts with a special token)."""
        rendered = self.render(messages, body, False)
        if not self._exact(text, rendered):
            return None
        tail = self.encode(text[len(rendered) :])
        if not tail or ids[-len(tail) :] != tail:
            return None
        return self._store(self.turns, _static_key(messages, body), rendered, ids[: -len(tail)])

    def _exact(self, text: str, prefix: str) -> bool:
        """`prefix` starts `text` and the rest starts with a special token (split off
        before BPE, so no merge crosses the cut)."""
        return text.startswith(prefix) and text[len(prefix) :].startswith(self.specials)

    def _store(self, cache: OrderedDict, key: tuple | None, text: str,
               ids: list[int]) -> StaticPrefix:  # fmt: skip
        prefix = StaticPrefix(text, array("I", ids))  # 4 bytes a token, not a list's ~36
        if key is not None:
            cache[key] = prefix
            cache.move_to_end(key)
            bound = self.cache_entries if cache is self.cache else self.turn_entries
            if len(cache) > bound:
                cache.popitem(last=False)
        return prefix

    def pending_bytes(self, body: dict[str, Any]) -> int:
        """About how many bytes of text `chat` would encode: all of the messages' text,
        less that of the longest cached prefix."""
        messages = vllm_messages(body.get("messages") or [])
        sizes = [len(m["content"]) if isinstance(m.get("content"), str) else 0 for m in messages]
        n = _static_count(messages)
        cuts = [(k, self.turns) for k in _cuts(messages)] + [(n, self.cache)]
        k = next((k for k, cache in cuts if _static_key(messages[:k], body) in cache), 0)
        return sum(sizes[k:])


def _cuts(messages: list[dict[str, Any]]) -> list[int]:
    """Where the last turn's request ended: before the last assistant message."""
    last = next((i for i in range(len(messages) - 1, -1, -1)
                 if messages[i].get("role") == "assistant"), 0)  # fmt: skip
    return [last] if last > _static_count(messages) else []


def _static_count(messages: list[dict[str, Any]]) -> int:
    return next((i for i, m in enumerate(messages) if m.get("role") not in STATIC_ROLES),
                len(messages))  # fmt: skip


def _static_key(messages: list[dict[str, Any]], body: dict[str, Any]) -> tuple | None:
    """What the static prefix renders from; None when a value is not hashable."""
    extra = [body.get(k) for k in ("tools", "chat_template_kwargs")]
    try:
        key = (tuple(tuple(sorted(m.items())) for m in messages),
               json.dumps(extra, sort_keys=True) if any(extra) else "")  # fmt: skip
        hash(key)  # a list among a message's values: no key
        return key
    except (TypeError, ValueError):
        return None


class RequestTokens:
    """`ids(route, body, model)`: the token ids vLLM will see, or None when unknown.

    `on_cost(ms_per_1k)` reports what it cost (ragtrim_kv_tokenize_ms_per_1k).

    Loading a tokenizer takes seconds; on the event loop that stalls every request.
    So the router asks with `wait=False`: a tokenizer not yet loaded is loaded on a
    thread (once, however many ask) and this request gets no ids (the scorer falls
    back to affinity). service.KvRouting.warm loads it when a backend turns healthy,
    before the first request as a rule."""

    def __init__(self, pool: EndpointPool, on_cost: Callable[[float], None] | None = None,
                 explicit_dir: str = ""):  # fmt: skip
        self.pool, self.on_cost, self.explicit_dir = pool, on_cost, explicit_dir
        self._by_root: dict[str, ChatTokenizer | None] = {}
        self._loading: set[str] = set()
        self._lock = threading.Lock()  # one load at a time; a second caller gets its result

    def tokenizer(self, model: str | None, wait: bool = True) -> ChatTokenizer | None:
        """compression.tokenizer when set (a gateway whose pods do not share the model
        volume ships the tokenizer dir), else the backend's local model root."""
        root = self.explicit_dir or local_model_root(self.pool, model)
        if root is None:
            return None
        if root in self._by_root:
            return self._by_root[root]
        if wait:
            return self._load(root)
        if root not in self._loading:
            self._loading.add(root)
            threading.Thread(target=self._load, args=(root,), daemon=True).start()
        return None

    def _load(self, root: str) -> ChatTokenizer | None:
        with self._lock:
            if root not in self._by_root:
                try:
                    self._by_root[root] = ChatTokenizer(root)
                except Exception:  # noqa: BLE001 - no transformers, no template: no ids
                    self._by_root[root] = None
        return self._by_root[root]

    def pending_bytes(self, route: str, body: dict[str, Any], model: str | None) -> int:
        """About how much text `ids` would encode (0 with no tokenizer loaded yet)."""
        tok = self.tokenizer(model, wait=False)
        if tok is None:
            return 0
        if route == "chat":
            return tok.pending_bytes(body)
        prompt = body.get("prompt")
        return len(prompt) if isinstance(prompt, str) else 0

    def ids(self, route: str, body: dict[str, Any], model: str | None,
            wait: bool = True) -> list[int] | None:  # fmt: skip
        tok = self.tokenizer(model, wait)
        if tok is None:
            return None
        t0 = time.perf_counter()
        try:
            if route == "chat":
                ids = tok.chat(body)
            elif route == "completions" and isinstance(body.get("prompt"), str):
                with tok.lock:
                    ids = tok.encode(body["prompt"], special=True)
            else:
                return None
        except Exception:  # noqa: BLE001 - a template that refuses these messages: no ids
            return None
        if self.on_cost is not None and ids:
            self.on_cost((time.perf_counter() - t0) * 1000 * 1000 / len(ids))
        return ids
