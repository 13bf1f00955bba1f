"""Stable compression: a document set's compressed form, reused byte for byte.

Once a document set has been compressed, later turns over it, and other questions over a
hot set, send the same bytes as the first, so vLLM's prefix cache hits on them (why:
docs/decisions/0015-prefix-cache-reuse.md). Which form to keep, so that it still
answers the later questions (pinned to the first question, the union of the questions
so far, question-independent), is the caller's choice: this store keeps the form and
the questions it has served.

The key is tenant + static prefix + documents + compressor fingerprint (`FormKey`);
the conversation has no id, so any request with that prefix and those documents finds
the form. Callers put in the fingerprint everything that shapes the form (compressor,
version, settings, keep rate) and, as the static prefix, the request's prefix key
(model, system prompt, tools, tenant salt). Per form, in one hash of a KVStore (Redis
shares it across replicas; the in-process MemoryStore is the default):
    form     generation 0: the texts, token counts and the digest of the question it
             was compressed for, in ONE field written with HSETNX: the first writer
             wins, across replicas, and the form never changes while it lives
    g<n>     the form grown for a later question (compressors/stable_growth.py: the
             n-th growth keeps every byte of the (n-1)-th), with the digest of the
             question it was grown for, in one field, HSETNX, at most MAX_GENERATIONS;
             a lookup answers the deepest one present
    a:<d>    question digest d was checked against generation <value> and needed
             nothing more (HSETNX; the first `max_questions` of them)
    uses     a counter whose write restarts the expiry: `ttl` after its last use

Invariant: a question counts as asked only when the very generation it was checked or
grown for is stored. Its digest travels in the same field as the texts it
was judged against (a lost HSETNX records nothing), or names a generation that is
stored; every generation keeps all the bytes of the ones before, so a question asked
of generation k is answered by every deeper one. "Asked" compares digests of the
whole question (as the segment stage caps it for scoring), never a prefix.
The key's name is `memo:<tenant tag>:form-<hash>`: a tenant's forms share its fair part
of the in-process store (cache/keys.py owner_of) and go with its memo.

Fails open: a store error, an entry that does not decode, or one with the wrong number
of texts reads as a miss and is reported through `on_error`; `remember` then answers the
form it was given.

The caller's walk (proxy/compression/stable.py):
    key = FormKey(tenant, prefix_key, names, fingerprint)  # names: the documents' digests
    form = await forms.lookup(key)          # before pricing: a reuse costs no job
    form.has_asked(question)                # checked for this very question before?
    await forms.remember(key, first, question)   # a first form
    await forms.reuse(key, form, question)       # checked: the form needed nothing
    await forms.grow(key, grown, question)       # checked: the form grown for it
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from cache.keys import content_key, tenant_tag
from cache.store import KVStore

log = logging.getLogger("ragtrim.cache")
OnError = Callable[[str, BaseException], None]
# Defaults the settings read (compression.stable_*): a day after its last use, 16
# questions recorded as answered by reuse.
STABLE_FORM_TTL_S = 24 * 3600.0
MAX_QUESTIONS = 16
MAX_GENERATIONS = 8  # growths per form: each stores its texts again
PARSED_CHARS = 8 << 20  # generation payloads kept parsed in process, by their size


def question_digest(question: str) -> str:
    """The whole question's digest: two questions are "the same" only byte for byte."""
    raw = question.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


@dataclass(frozen=True)
class FormKey:
    """`documents`: each document's name (cache/analysis.py `document_names`, its digest):
    the key names the bytes without hashing them again."""

    tenant: str
    static_prefix: str
    documents: tuple[str, ...]
    fingerprint: str

    @cached_property
    def name(self) -> str:
        """The store key (one hash over the prefix and the documents' names)."""
        digest = content_key(
            "stable-form", self.tenant, self.fingerprint, self.static_prefix, *self.documents
        )
        tag = tenant_tag(self.tenant)
        return f"memo:{tag + ':' if tag else ''}form-{digest}"


@dataclass(frozen=True)
class StableForm:
    """`texts`: the compressed documents in their order, the bytes to send. `asked`: the
    digests of the questions this form (or a shallower generation) was checked for.
    `uses`: remembered uses (the store's)."""

    texts: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    asked: frozenset[str] = field(default_factory=frozenset)
    uses: int = 0
    generation: int = 0  # 0: as first compressed; n: grown n times

    def has_asked(self, question: str) -> bool:
        return question_digest(question) in self.asked


class StableForms:
    def __init__(
        self, store: KVStore, *, ttl: float, max_questions: int, on_error: OnError | None = None
    ) -> None:
        self.store = store
        self.ttl = ttl
        self.max_questions = max_questions
        self.on_error = on_error or (lambda op, exc: log.warning("stable form %s: %r", op, exc))
        # each generation's payload parsed once, kept by its string (PARSED_CHARS in
        # all): a hit needs the very string read from this tenant's own key, so it
        # tells no tenant another's form
        self._parsed: OrderedDict[str, dict] = OrderedDict()
        self._parsed_chars = 0

    async def lookup(self, key: FormKey) -> StableForm | None:
        """The form remembered for `key`, or None (never stored, expired, unreadable)."""
        try:
            table = await self.store.hgetall(key.name)
        except Exception as exc:  # noqa: BLE001 - an outage reads as a miss
            self.on_error("lookup", exc)
            return None
        return self._decode(table, len(key.documents))

    async def remember(self, key: FormKey, form: StableForm, question: str | None) -> None:
        """Keep `form`, compressed for `question`, as generation 0 of `key` unless one is
        kept already (that one stays, and `question` is not recorded for it: it was not
        checked against it). Fails open: reported, nothing stored."""
        await self._store(key, "form", form, question, "remember")

    async def grow(self, key: FormKey, form: StableForm, question: str | None) -> None:
        """Keep `form`, grown for `question`, as generation `form.generation` of `key`
        unless another replica stored that generation first (then `question` is not
        recorded: the next lookup finds theirs, and checks it again)."""
        if not 0 < form.generation <= MAX_GENERATIONS:
            raise ValueError(f"generation {form.generation} outside 1..{MAX_GENERATIONS}")
        await self._store(key, f"g{form.generation}", form, question, "grow")

    async def reuse(self, key: FormKey, form: StableForm, question: str | None) -> None:
        """`question` was checked against `form` (as looked up) and needed nothing more:
        record it for that generation, restart the expiry."""
        try:
            await self.store.hincr(key.name, {"uses": 1}, self.ttl)
            if question is None or len(form.asked) >= self.max_questions:
                return
            digest = question_digest(question)
            if digest not in form.asked:
                await self.store.hsetnx(key.name, f"a:{digest}", str(form.generation))
        except Exception as exc:  # noqa: BLE001 - an outage: unrecorded, asked again later
            self.on_error("reuse", exc)

    async def _store(
        self, key: FormKey, name: str, form: StableForm, question: str | None, op: str
    ) -> None:
        if len(form.texts) != len(key.documents):
            raise ValueError("a stable form has one text per document")
        try:
            await self.store.hincr(key.name, {"uses": 1}, self.ttl)  # first: never without ttl
            await self.store.hsetnx(key.name, name, _encode(form, question))
        except Exception as exc:  # noqa: BLE001 - an outage: the caller's form, unstored
            self.on_error(op, exc)

    def _payload(self, raw: str) -> dict:
        parsed = self._parsed.get(raw)
        if parsed is not None:
            self._parsed.move_to_end(raw)
            return parsed
        parsed = json.loads(raw)
        if len(raw) <= PARSED_CHARS // 4:
            self._parsed[raw] = parsed
            self._parsed_chars += len(raw)
            while self._parsed_chars > PARSED_CHARS:
                self._parsed_chars -= len(self._parsed.popitem(last=False)[0])
        return parsed

    def _decode(self, table: dict[str, str], documents: int) -> StableForm | None:
        if "form" not in table:
            return None
        try:
            generation = _deepest(table)
            payloads = [self._payload(table[_field(n)]) for n in range(generation + 1)]
            texts = payloads[-1]["texts"]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise TypeError("texts are not a list of strings")
            if len(texts) != documents:
                raise ValueError(f"{len(texts)} texts for {documents} documents")
            asked = _asked(table, payloads, generation)
            before, after = int(payloads[-1]["before"]), int(payloads[-1]["after"])
            uses = int(float(table.get("uses", "0")))
            return StableForm(tuple(texts), before, after, asked, uses, generation)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # JSON errors too
            self.on_error("decode", exc)
            return None


def _field(generation: int) -> str:
    return f"g{generation}" if generation else "form"


def _encode(form: StableForm, question: str | None) -> str:
    """JSON, ASCII only: every text comes back as the same code points, so the same
    bytes; the digest of the question it was made for rides in the same field."""
    asked = [] if question is None else [question_digest(question)]
    return json.dumps(
        {
            "texts": list(form.texts),
            "before": form.tokens_before,
            "after": form.tokens_after,
            "asked": asked,
        }
    )


def _deepest(table: dict[str, str]) -> int:
    """The deepest generation stored without a gap (0: the first form only)."""
    n = 0
    while n < MAX_GENERATIONS and f"g{n + 1}" in table:
        n += 1
    return n


def _asked(table: dict[str, str], payloads: list[dict], generation: int) -> frozenset[str]:
    """Digests made with a stored generation, and those reused over one no deeper than
    `generation` (every generation holds the bytes of the shallower ones)."""
    asked = {d for p in payloads for d in p.get("asked", []) if isinstance(d, str)}
    for name, value in table.items():
        if name.startswith("a:") and value.isdigit() and int(value) <= generation:
            asked.add(name[2:])
    return frozenset(asked)
