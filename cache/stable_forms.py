"""Stable compression: a document set's compressed form, reused byte for byte (issue 29,
item 3).

Why: `fast_extractive` selected sentences for each new question, so every turn of a
conversation over the same documents sent a different compressed context, and vLLM's
prefix cache never hit past the static prefix: follow-ups went ×3.9 slower than
direct (issue 29). Once a document set has been compressed, later turns over it, and
other questions over a hot set, send the same bytes as the first, so vLLM hits on
them. Which form to keep, so that it still answers the later questions (pinned to the
first question, the union of the questions so far, question-independent), is the
caller's choice: this store keeps the form and the questions it has served.

The key is tenant + static prefix + documents + compressor fingerprint (`FormKey`);
the conversation has no id, so any request with that prefix and those documents finds
the form. Callers put in the fingerprint everything that shapes the form (compressor,
version, settings, keep rate) and, as the static prefix, the request's prefix key
(model, system prompt, tools, tenant salt). Per form, in one hash of a KVStore (Redis
shares it across replicas; the in-process MemoryStore is the default):
    form     the texts and token counts, written with HSETNX: the first writer wins,
             across replicas, and the form never changes while it lives
    q:<n>    the n-th question seen over it (the first `max_questions`, each cut to
             MAX_QUESTION_CHARS), HSETNX too
    g<n>     the form grown for a later question (compressors/stable_growth.py: the
             n-th growth keeps every byte of the (n-1)-th), HSETNX, at most
             MAX_GENERATIONS; a lookup answers the deepest one present
    uses     a counter whose write restarts the expiry: `ttl` after its last use
The key's name is `memo:<tenant tag>:form-<hash>`: a tenant's forms share its fair part
of the in-process store (cache/keys.py owner_of, issue 33 item 7) and go with its memo.

Fails open (issue 29: "Redis down still gives a safe decision"): a store error, an
entry that does not decode, or one with the wrong number of texts reads as a miss and
is reported through `on_error`; `remember` then answers the form it was given.

The caller's walk (proxy/stages/compress.py would wire it):
    key = FormKey(tenant, prefix_key, tuple(documents), fingerprint)
    form = await forms.lookup(key)          # before pricing: a reuse costs no job
    ... send form.texts, or compress and build a StableForm ...
    form = await forms.remember(key, form, question)   # after each use
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

from cache.keys import content_key, tenant_tag
from cache.store import KVStore

log = logging.getLogger("ragtrim.cache")
OnError = Callable[[str, BaseException], None]
# Defaults the settings read (compression.stable_*): a day after its last use, 16
# questions; a question is kept to its first 2,000 characters (enough to select for).
STABLE_FORM_TTL_S = 24 * 3600.0
MAX_QUESTIONS = 16
MAX_QUESTION_CHARS = 2000
MAX_GENERATIONS = 8  # growths per form: each stores its texts again


@dataclass(frozen=True)
class FormKey:
    tenant: str
    static_prefix: str
    documents: tuple[str, ...]
    fingerprint: str

    @cached_property
    def name(self) -> str:
        """The store key (hashing every document once per FormKey)."""
        digest = content_key("stable-form", self.tenant, self.fingerprint, self.static_prefix,
                             *self.documents)  # fmt: skip
        tag = tenant_tag(self.tenant)
        return f"memo:{tag + ':' if tag else ''}form-{digest}"


@dataclass(frozen=True)
class StableForm:
    """`texts`: the compressed documents in their order, the bytes to send. `questions`:
    those asked over it so far, the first first. `uses`: remembered uses (the store's)."""

    texts: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    questions: tuple[str, ...] = ()
    uses: int = 0
    generation: int = 0  # 0: as first compressed; n: grown n times


class StableForms:
    def __init__(self, store: KVStore, *, ttl: float, max_questions: int,
                 on_error: OnError | None = None) -> None:  # fmt: skip
        self.store = store
        self.ttl = ttl
        self.max_questions = max_questions
        self.on_error = on_error or (lambda op, exc: log.warning("stable form %s: %r", op, exc))

    async def lookup(self, key: FormKey) -> StableForm | None:
        """The form remembered for `key`, or None (never stored, expired, unreadable)."""
        try:
            table = await self.store.hgetall(key.name)
        except Exception as exc:  # noqa: BLE001 - an outage reads as a miss
            self.on_error("lookup", exc)
            return None
        return self._decode(table, len(key.documents))

    async def remember(self, key: FormKey, form: StableForm, question: str | None) -> StableForm:
        """Keep `form` for `key` unless one is kept already (that one stays: the bytes
        never change), add `question` to it, restart its expiry. Returns the kept form:
        the one stored before, else the caller's (when another replica stores one between
        this read and this write, HSETNX keeps theirs and the next lookup finds it)."""
        if len(form.texts) != len(key.documents):
            raise ValueError("a stable form has one text per document")
        name = key.name
        try:
            table = await self.store.hgetall(name)
            kept = self._decode(table, len(key.documents))
            if kept is None and "form" in table:
                return form  # unreadable: not renewed, so it expires
            await self.store.hincr(name, {"uses": 1}, self.ttl)  # first: never a key without ttl
            if kept is None:
                await self.store.hsetnx(name, "form", _encode(form))
            base = kept or replace(form, questions=())
            return await self._add_question(name, base, question)
        except Exception as exc:  # noqa: BLE001 - an outage: the caller's form, unstored
            self.on_error("remember", exc)
            return form

    async def grow(self, key: FormKey, form: StableForm, question: str | None) -> StableForm:
        """Keep `form` as generation `form.generation` of `key` (unless another replica
        stored that generation first: the next lookup finds theirs) and add `question`.
        Fails open: the caller's form, unstored."""
        if not 0 < form.generation <= MAX_GENERATIONS:
            raise ValueError(f"generation {form.generation} outside 1..{MAX_GENERATIONS}")
        if len(form.texts) != len(key.documents):
            raise ValueError("a stable form has one text per document")
        try:
            await self.store.hincr(key.name, {"uses": 1}, self.ttl)
            await self.store.hsetnx(key.name, f"g{form.generation}", _encode(form))
            return await self._add_question(key.name, form, question)
        except Exception as exc:  # noqa: BLE001 - an outage: the caller's form, unstored
            self.on_error("grow", exc)
            return form

    async def _add_question(self, name: str, form: StableForm, question: str | None) -> StableForm:
        asked = form.questions
        if question is None or len(asked) >= self.max_questions:
            return form
        question = question[:MAX_QUESTION_CHARS]
        if question in asked:
            return form
        await self.store.hsetnx(name, f"q:{len(asked)}", json.dumps(question))  # one of two wins
        return replace(form, questions=(*asked, question))

    def _decode(self, table: dict[str, str], documents: int) -> StableForm | None:
        raw = table.get("form")
        if raw is None:
            return None
        try:
            generation = _deepest(table)
            if generation:
                raw = table[f"g{generation}"]
            data = json.loads(raw)
            texts = data["texts"]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise TypeError("texts are not a list of strings")
            if len(texts) != documents:
                raise ValueError(f"{len(texts)} texts for {documents} documents")
            return StableForm(tuple(texts), int(data["before"]), int(data["after"]),
                              _questions(table, self.max_questions),
                              int(float(table.get("uses", "0"))), generation)  # fmt: skip
        except (ValueError, TypeError, KeyError) as exc:  # JSONDecodeError is a ValueError
            self.on_error("decode", exc)
            return None


def _encode(form: StableForm) -> str:
    """JSON, ASCII only: every text comes back as the same code points, so the same bytes."""
    return json.dumps({"texts": list(form.texts), "before": form.tokens_before,
                       "after": form.tokens_after})  # fmt: skip


def _deepest(table: dict[str, str]) -> int:
    """The deepest generation stored without a gap (0: the first form only)."""
    n = 0
    while n < MAX_GENERATIONS and f"g{n + 1}" in table:
        n += 1
    return n


def _questions(table: dict[str, str], limit: int) -> tuple[str, ...]:
    """q:0, q:1, ... in order, up to the first gap (a lost race leaves none: HSETNX)."""
    asked = []
    while len(asked) < limit and (q := table.get(f"q:{len(asked)}")) is not None:
        asked.append(json.loads(q))
    return tuple(asked)
