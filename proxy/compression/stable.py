"""Cache-aware compression: never cost a cache hit, and keep the compressed context
cacheable. Why: docs/decisions/0015-prefix-cache-reuse.md.

The compress stage asks `choose` before pricing a request with a context:
- no compressed form of these documents yet (`fresh`): the gate prices as before, less
  the context tokens a backend already holds as the client sent them (`held`; the
  gate's `skip:cached` when nothing is left to save). A compression is then remembered
  as the set's stable form (cache/stable_forms.py), keyed by tenant, the prompt up to
  the first document (the static prefix) and the documents;
- a form exists: the client's prompt and the form are priced by their uncached tokens
  (cache_view.py). The client's goes (`skip:cached`) when it has no more uncached
  tokens than the form. Otherwise the form goes, byte for byte: as it is when this
  question was asked over it before (`compress:stable`, no job); else after a check
  (`check`): the compressor selects for the new question with the adaptive budget (a
  score margin: the sentences close to the best, compressors/adaptive.py; its
  features are memoized: the seen rate, ~1 ms per 1k tokens), and whatever the form
  lacks of that selection is appended after its last document (compressors/
  stable_growth.py: `compress:stable-grown`), so the form's bytes still come first
  and stay cached. The check is priced as a job against what the form saves; a check
  that does not pay sends the client's prompt.

Fidelity: what is sent always holds the compressor's adaptive selection for the
question (the union of every question's so far), so a reused form never answers from
less than that selection alone (bench.fidelity: gold retention 0.97–0.99 at 5–8×).
The alternatives weighed: docs/decisions/0044-compression-service-path.md.

Fails open: a store outage reads as no form (`fresh`); a failed check sends the
client's prompt (the compress stage's failed-open path).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from cache.analysis import DocumentAnalyses, document_names
from cache.stable_forms import MAX_GENERATIONS, FormKey, StableForm, StableForms
from cache.writes import BackgroundWrites
from compressors.stable_growth import Reader, grow, own_length, sentences_of
from proxy.compression.cache_view import CacheView
from proxy.context import CachePlan
from proxy.gate.decide import CostGate
from proxy.gate.prefill_law import queue_multiplier
from proxy.metrics import Metrics
from proxy.outcome.decision import Action, Decision, Figures, Why
from proxy.prompt.cache_text import cache_text


@dataclass(frozen=True)
class Choice:
    """`kind`: "original" (send the client's prompt), "form" (the form as it is),
    "check" (compress for the question, then reuse or grow the form), "fresh" (price
    and compress as usual, `held` context tokens already cached)."""

    kind: str
    decision: Decision | None = None  # "original", "form", "check": what it decides
    held: int = 0
    form: StableForm | None = None


class Settled(NamedTuple):
    """What goes after a compression: the texts, and when they are a stored form (as it
    is or grown) the decision and the form's tokens (None: the compressor's own)."""

    texts: list[str]
    decision: Decision | None = None
    tokens_after: int | None = None


@dataclass(frozen=True)
class Prices:
    """What a request's pricing needs from the compress stage."""

    tenant: str
    chars_per_token: float
    context_tokens: int
    documents: int
    in_flight: float
    wait_ms: float = 0.0  # the compression queue's expected wait before a worker takes a job


class StableCompression:
    def __init__(
        self,
        view: CacheView,
        forms: StableForms,
        gate: CostGate,
        metrics: Metrics,
        fingerprint: Callable[[float], str],
        analyses: DocumentAnalyses | None = None,
    ):
        self.view = view
        self.analyses = analyses  # each form text split into sentences once
        self.forms = forms
        self.gate = gate
        self.metrics = metrics
        self.fingerprint = fingerprint
        self.writes = BackgroundWrites()  # the forms' writes: none delays the request

    async def choose(
        self, ctx, texts: list[str], question: str, rate: float, prices: Prices
    ) -> Choice:
        seg, cpt = ctx.segmentation, prices.chars_per_token
        text = cache_text(ctx.prompt)
        if seg is None or not text:
            return Choice("fresh")
        start = max(0, text.find(next((t for t in texts if t), "")))
        partition = _partition(ctx)
        original = self.view.blocks(ctx.tenant, text, partition, cpt, _head(text, texts, start))
        held = self.view.held(original)
        names = tuple(document_names(self.analyses, ctx.tenant, texts))  # digests, not bytes
        key = FormKey(ctx.tenant, text[:start], names, self.fingerprint(rate))
        form = await self.forms.lookup(key)
        ctx.cache_plan = CachePlan(key, form, original, held)
        if form is None:
            in_context = min(prices.context_tokens, max(0, held - int(start / cpt)))
            return Choice("fresh", held=in_context)
        form_text = cache_text(ctx.prompt, seg, form.texts) or ""
        form_head = _head(form_text, form.texts, start)
        form_blocks = self.view.blocks(ctx.tenant, form_text, partition, cpt, form_head)
        ctx.cache_plan.form_blocks = form_blocks
        form_held = self.view.held(form_blocks)
        uncached, form_uncached = len(text) / cpt - held, len(form_text) / cpt - form_held
        figures = Figures(uncached=uncached, form=form_uncached)
        if uncached <= form_uncached:
            return Choice("original", Decision(Action.SKIP, Why.CACHED, None, figures))
        if form.has_asked(question):  # this very question, checked against this form
            asked = replace(figures, asked=True)
            return Choice("form", Decision(Action.COMPRESS, Why.STABLE, None, asked), form=form)
        return self._price_check(uncached - form_uncached, figures, form, prices)

    def _price_check(
        self, tokens: float, figures: Figures, form: StableForm, prices: Prices
    ) -> Choice:
        """The check is a job over seen documents; it runs when the tokens the form
        saves over the client's prompt pay for it."""
        per_token = self.gate.prefill_ms_per_token(prices.tenant)
        if per_token is None:
            return Choice("check", Decision(Action.COMPRESS, Why.STABLE, None, figures), form=form)
        saved = tokens * per_token * queue_multiplier(self.gate.queue.waiting())
        n = prices.documents
        work = self.gate.work_ms(prices.context_tokens, 0, n, n, prices.in_flight, prices.tenant)
        finish = self.gate.finish_ms(prices.context_tokens, prices.tenant)  # settle, growth
        cost = work + prices.wait_ms + finish  # a check queues like any job
        priced = replace(figures, saved_ms=saved, cost_ms=cost, wait_ms=prices.wait_ms)
        if saved <= cost:
            return Choice("original", Decision(Action.SKIP, Why.CACHED, None, priced))
        return Choice("check", Decision(Action.COMPRESS, Why.STABLE, None, priced), form=form)

    def settle(
        self, ctx, choice: Choice, fresh: list[str], question: str, before: int, after: int
    ) -> Settled:
        """What to send after a compression for `question` (`fresh`: every document's
        text): the form, the form grown, or (a first compression) `fresh`, remembered as
        the form."""
        plan: CachePlan | None = ctx.cache_plan
        if plan is None or plan.key is None:
            return Settled(fresh)
        form = choice.form
        if form is None:
            self.metrics.stable_choices.labels("first").inc()
            self.writes.spawn(
                self.forms.remember(plan.key, StableForm(tuple(fresh), before, after), question)
            )
            return Settled(fresh)
        growth = grow(form.texts, fresh, self._reader(ctx.tenant))
        if not growth.added:
            self.metrics.stable_choices.labels("reused").inc()
            self.writes.spawn(self.forms.reuse(plan.key, form, question))
            return Settled(list(form.texts), choice.decision, form.tokens_after)
        self.metrics.stable_choices.labels("grown").inc()
        grown = replace(choice.decision, why=Why.STABLE_GROWN, grown=growth.added)
        tokens = form.tokens_after + growth.added_chars // 4
        if form.generation < MAX_GENERATIONS:
            bigger = replace(
                form, texts=growth.texts, generation=form.generation + 1, tokens_after=tokens
            )
            self.writes.spawn(self.forms.grow(plan.key, bigger, question))
        return Settled(list(growth.texts), grown, tokens)

    def _reader(self, tenant: str) -> Reader:
        """A form text's sentences, read once per text (cache/analysis.py)."""
        memo = self.analyses
        if memo is None:
            return sentences_of
        return lambda text: memo.get("sentences", tenant, text, sentences_of)

    def count(self, choice: Choice) -> None:
        if choice.kind in ("original", "form"):
            self.metrics.stable_choices.labels(
                "cached" if choice.kind == "original" else "reused"
            ).inc()

    def record_sent(self, ctx, texts: list[str], cpt: float) -> None:
        """The blocks of what goes upstream, for the response hooks to record."""
        plan: CachePlan | None = ctx.cache_plan
        seg = ctx.segmentation
        if seg is None:
            return
        if plan is None:  # nothing was priced (compression off), yet the backend will hold
            text = cache_text(ctx.prompt)  # the prompt: the record must know, or the
            if text:  # next request over these documents is priced as uncached
                head = _head(text, seg.texts, 0)
                blocks = self.view.blocks(ctx.tenant, text, _partition(ctx), cpt, head)
                ctx.cache_plan = CachePlan(None, None, blocks, 0, sent=blocks)
            return
        if texts == seg.texts:
            plan.sent = plan.original
            return
        if plan.form is not None and texts == list(plan.form.texts):  # hashed in `choose`
            plan.sent = plan.form_blocks
            return
        text = cache_text(ctx.prompt, seg, texts)
        if text:
            head = _head(text, texts, 0)
            plan.sent = self.view.blocks(ctx.tenant, text, _partition(ctx), cpt, head)


def _head(text: str, texts: Sequence[str], start: int) -> int:
    """Where the documents `texts` end in `text`, less a form's added sentences (0: not
    found): the part of a prompt that recurs across a conversation's turns and a form's
    generations, whose chain the view keeps."""
    last = next((t for t in reversed(texts) if t), "")
    at = text.rfind(last, start) if last else -1
    return at + own_length(last) if at >= 0 else 0


def _partition(ctx) -> str:
    """What keeps vLLM from sharing blocks: the model and the client's cache_salt."""
    salt = ctx.body.get("cache_salt")
    return f"{ctx.model or ''}\x00{salt if isinstance(salt, str) else ''}"
