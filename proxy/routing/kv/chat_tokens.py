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

Prefix caches (proxy/routing/kv/prompt_prefixes.py): a request's static messages and
its conversation's last turn are encoded once; only the rest is encoded. The ids come
back as prefix_chain.TokenIds, holding the cached prefix whose chain hashes the scorer
reuses. tests/integration/test_kv_events.py compares the result with vLLM's /tokenize
for every framework template ragtrim recognises.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from proxy.backends.endpoint import EndpointPool
from proxy.compression.token_counter import local_model_root
from proxy.routing.kv.prefix_chain import TokenIds
from proxy.routing.kv.prompt_prefixes import PromptPrefixes

CHARS_PER_TOKEN = 8  # the text kept per token cap: twice English's ~4 (a denser text gets all)


def _text(content: Any) -> Any:
    if isinstance(content, list):
        parts = [
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "\n".join(parts)
    return content


def vllm_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "content": _text(m.get("content"))} if "content" in m else m for m in messages]


def capped(messages: list[dict[str, Any]], budget: int | None) -> tuple[list[dict], bool]:
    """(`messages` with their text cut to `budget` characters in all, whether any was):
    a template renders each message's text in order, so the rendered text's first
    `budget` characters are the same, and a 4 MB chat renders and encodes no more."""
    if budget is None:
        return messages, False
    out, cut = [], False
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            if len(content) > budget:
                m, cut = {**m, "content": content[:budget]}, True
            budget -= len(m["content"])
        out.append(m)
    return out, cut


def cut_at(text: str, limit: int) -> int:
    """Where to cut `text` at `limit` characters at most: before a space or newline
    near it, so the last word kept is whole (BPE merges never cross a word start)."""
    if len(text) <= limit:
        return len(text)
    start = max(limit - 256, 0)
    at = max(text.rfind(" ", start, limit), text.rfind("\n", start, limit))
    return at if at > 0 else limit


class ChatTokenizer:
    """One model's tokenizer and template, with its prompts' prefix caches."""

    def __init__(
        self,
        root: str,
        cache_entries: int = 256,
        turn_entries: int = 1024,
        max_tokens: int | None = None,
    ):
        """`max_tokens` (kv_events.max_prefix_tokens; None: all): only a prompt's leading
        blocks can match a cache, so the text is cut at max_tokens x CHARS_PER_TOKEN
        characters before rendering and encoding, and the ids at max_tokens."""
        from transformers import AutoTokenizer  # the `compress` extra; absent = no ids

        self.max_tokens = max_tokens
        self.max_chars = max_tokens * CHARS_PER_TOKEN if max_tokens else None

        self.tok = AutoTokenizer.from_pretrained(root)
        # A fast tokenizer's Rust encoder gives `tok.encode`'s ids without its ~0.1 ms
        # of Python per call (argument checks, BatchEncoding), on every request. Its
        # encode_batch, as tok.encode calls it: Tokenizer.encode holds the GIL (a 6k-token
        # context encoded on a worker thread would stall the loop and every subscriber).
        fast = self.tok.is_fast and not getattr(self.tok, "split_special_tokens", False)
        self._rust = self.tok.backend_tokenizer if fast else None
        if self._rust is not None:  # as tok.encode leaves it (a tokenizer.json may set them)
            self._rust.no_truncation()
            self._rust.no_padding()
        added = {t.content for t in self.tok.added_tokens_decoder.values()}
        self.specials = tuple(sorted(set(self.tok.all_special_tokens) | added))
        self.prefixes = PromptPrefixes(self, cache_entries, turn_entries)
        # The kv_cache scorer tokenizes in worker threads: a fast tokenizer's encode
        # mutably borrows its Rust state ("Already borrowed" when two threads encode),
        # and the prefix caches' LRU moves are not atomic.
        self.lock = threading.Lock()

    def render(self, messages: list[dict[str, Any]], body: dict[str, Any], gen: bool) -> str:
        kwargs = dict(body.get("chat_template_kwargs") or {})
        return self.tok.apply_chat_template(
            messages, tools=body.get("tools"), tokenize=False, add_generation_prompt=gen, **kwargs
        )

    def encode(self, text: str, special: bool = False) -> list[int]:
        if self._rust is not None:
            return self._rust.encode_batch([text], add_special_tokens=special)[0].ids
        return self.tok.encode(text, add_special_tokens=special)

    def chat(self, body: dict[str, Any]) -> TokenIds:
        with self.lock:
            return self._chat(body)

    def _chat(self, body: dict[str, Any]) -> TokenIds:
        messages, cut = capped(vllm_messages(body.get("messages") or []), self.max_chars)
        gen = bool(body.get("add_generation_prompt", True))
        text = self.render(messages, body, gen)
        if self.max_chars is not None and len(text) > self.max_chars:
            text, cut = text[: cut_at(text, self.max_chars)], True
        prefix, static = self.prefixes.longest(messages, body, text)
        at = prefix.size if prefix is not None else 0
        need = max(self.max_tokens - at, 1) if self.max_tokens is not None else None
        if prefix is None:
            ids = self._leading(text, need)
        else:
            ids = [*prefix.ids, *self._leading(text[prefix.text_len :], need)]
        if cut or (self.max_tokens is not None and len(ids) > self.max_tokens):
            ids = ids[: self.max_tokens]  # a cut text's last ids may differ: a miss at most
            keep = prefix if prefix is not None and prefix.size <= len(ids) else None
            return TokenIds(ids, keep, None)  # no next turn starts with a cut text
        turn = self.prefixes.remember(messages, body, text, ids, static) if gen else None
        return TokenIds(ids, prefix, turn)

    def _leading(self, text: str, need: int | None) -> list[int]:
        """The ids of `text`, or more than `need` of its leading ones: its first
        need x CHARS_PER_TOKEN / 2 characters are encoded first, which hold that many
        for most texts (a 4 MB chat: 0.05 s instead of 0.13), then all of it."""
        half = need * CHARS_PER_TOKEN // 2 if need is not None else len(text)
        if len(text) > half:
            head = self.encode(text[: cut_at(text, half)])
            if len(head) > need:  # the last id, at the cut, is left out
                return head
        return self.encode(text)

    def completion(self, prompt: str) -> list[int]:
        if self.max_chars is None:
            return self.encode(prompt, special=True)
        prompt = prompt[: cut_at(prompt, self.max_chars)]
        head = prompt[: cut_at(prompt, self.max_chars // 2)]
        ids = self.encode(head, special=True) if len(head) < len(prompt) else []
        if len(ids) <= self.max_tokens:
            ids = self.encode(prompt, special=True)
        return ids[: self.max_tokens]

    def pending_bytes(self, body: dict[str, Any]) -> int:
        """About how many bytes of text `chat` would encode: all of the messages' text,
        less that of the longest cached prefix."""
        messages = vllm_messages(body.get("messages") or [])
        sizes = [len(m["content"]) if isinstance(m.get("content"), str) else 0 for m in messages]
        if self.max_chars is not None and sum(sizes) >= self.max_chars:
            return self.max_chars  # a thread's work anyway: no key of it hashed on the loop
        return sum(sizes[self.prefixes.cached_cut(messages, body) :])  # lookups: no lock


class RequestTokens:
    """`ids(route, body, model)`: the token ids vLLM will see, or None when unknown.

    `on_cost(ms_per_1k)` reports what it cost (ragtrim_kv_tokenize_ms_per_1k).

    Loading a tokenizer takes seconds; on the event loop that stalls every request.
    So the router asks with `wait=False`: a tokenizer not yet loaded is loaded on a
    thread (once, however many ask) and this request gets no ids (the scorer falls
    back to affinity). service.KvRouting.warm loads it when a backend turns healthy,
    before the first request as a rule."""

    def __init__(
        self,
        pool: EndpointPool,
        on_cost: Callable[[float], None] | None = None,
        explicit_dir: str = "",
        max_tokens: int | None = None,
    ):
        """`max_tokens`: kv_events.max_prefix_tokens (ChatTokenizer; None: no cap)."""
        self.pool, self.on_cost, self.explicit_dir = pool, on_cost, explicit_dir
        self.max_tokens = max_tokens
        self._by_root: dict[str, ChatTokenizer | None] = {}
        self._loading: set[str] = set()
        self._lock = threading.Lock()  # one load at a time; a second caller gets its result

    def tokenizer(self, model: str | None, wait: bool = True) -> ChatTokenizer | None:
        """compression.tokenizer when set (a gateway whose pods do not share the model
        volume ships the tokenizer dir), else the backend's local model root."""
        root = self._root(model)
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

    def loaded(self, model: str | None) -> bool:
        """Whether `model`'s tokenizer is loaded (or known to be missing)."""
        root = self._root(model)
        return root is not None and root in self._by_root

    def _root(self, model: str | None) -> str | None:
        return self.explicit_dir or local_model_root(self.pool, model, self._by_root)

    def _load(self, root: str) -> ChatTokenizer | None:
        with self._lock:
            if root not in self._by_root:
                try:
                    self._by_root[root] = ChatTokenizer(root, max_tokens=self.max_tokens)
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
        return min(len(prompt), tok.max_chars or len(prompt)) if isinstance(prompt, str) else 0

    def ids(
        self, route: str, body: dict[str, Any], model: str | None, wait: bool = True
    ) -> list[int] | None:
        tok = self.tokenizer(model, wait)
        if tok is None:
            return None
        t0 = time.perf_counter()
        try:
            if route == "chat":
                ids = tok.chat(body)
            elif route == "completions" and isinstance(body.get("prompt"), str):
                with tok.lock:
                    ids = tok.completion(body["prompt"])
            else:
                return None
        except Exception:  # noqa: BLE001 - a template that refuses these messages: no ids
            return None
        if self.on_cost is not None and ids:
            self.on_cost((time.perf_counter() - t0) * 1000 * 1000 / len(ids))
        return ids
