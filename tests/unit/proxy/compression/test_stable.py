"""proxy/compression/stable.py's choices, called directly (issue 29): what the record of
forwarded prompts holds decides, per tenant, and an outage falls back to pricing."""

import pytest

from cache.analysis import DocumentAnalyses
from cache.forwarded import ForwardedRecord
from cache.stable_forms import StableForm, StableForms
from cache.store import MemoryStore
from compressors.stable_growth import marker
from proxy.backends.endpoint import EndpointPool
from proxy.compression.cache_view import CacheView
from proxy.compression.stable import Prices, StableCompression, _head
from proxy.context import RequestContext
from proxy.gate.decide import CostGate
from proxy.metrics import Metrics
from proxy.outcome.decision import Why
from proxy.prompt.segment import Segmenter

BACKEND = "http://b1"
DOCS = [f"Document {i} says that fact number {i} holds for every case we looked at. " * 6
        for i in range(3)]  # fmt: skip
SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)


class BrokenStore(MemoryStore):
    async def hgetall(self, key):
        raise ConnectionError("redis down")


def ctx_for(question: str, tenant: str = "a") -> RequestContext:
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(DOCS)},
                {"role": "user", "content": question}]  # fmt: skip
    ctx = RequestContext("r", "chat", b"", {"model": "m", "messages": messages}, {})
    ctx.tenant = tenant
    ctx.segmentation = Segmenter().chat(messages)
    return ctx


def make(store=None, analyses=None) -> StableCompression:
    pool = EndpointPool.from_urls([BACKEND])
    gate = CostGate("auto", prior_ms_per_1k=1.0, min_context_tokens=0, max_added_ms=1e6,
                    prior_prefill_ms_per_token=1.0, pool=pool)  # fmt: skip
    view = CacheView(ForwardedRecord(max_bytes=1 << 20, ttl=900), gate.pool, 16, analyses)
    forms = StableForms(store or MemoryStore(), ttl=60, max_questions=4)
    return StableCompression(view, forms, gate, Metrics(), lambda rate: f"fp{rate}", analyses)


def prices(tenant: str = "a") -> Prices:
    return Prices(tenant, 4.0, sum(map(len, DOCS)) // 4, len(DOCS), 1)


async def send(stable: StableCompression, ctx: RequestContext, texts=None) -> None:
    """What the compress stage and the response hooks do once `texts` went upstream."""
    stable.record_sent(ctx, texts or ctx.segmentation.texts, 4.0)
    stable.view.expect(ctx.cache_plan, BACKEND)
    stable.view.confirm(ctx.cache_plan, None)


async def test_a_follow_up_over_documents_cached_as_sent_is_not_recompressed():
    stable = make()
    first = ctx_for("What holds?")
    assert (await stable.choose(first, first.segmentation.texts, "What holds?", 0.5,
                                prices())).held == 0  # fmt: skip
    await send(stable, first)  # the gate skipped it: the client's prompt went
    follow = ctx_for("And which fact is number two?")
    choice = await stable.choose(follow, follow.segmentation.texts, "q", 0.5, prices())
    assert choice.kind == "fresh" and choice.held >= prices().context_tokens * 0.9
    decision = stable.gate.decide(context_tokens=prices().context_tokens, cached_docs=0,
                                  total_docs=3, rate=0.5, held=choice.held)  # fmt: skip
    assert decision.action == "skip" and decision.why is Why.CACHED


async def test_the_clients_prompt_goes_when_it_is_cached_and_a_form_is_not():
    stable = make()
    first = ctx_for("What holds?")
    await stable.choose(first, first.segmentation.texts, "What holds?", 0.5, prices())
    key = first.cache_plan.key
    await stable.forms.remember(key, StableForm(("a", "b", "c"), 300, 3), "What holds?")
    await send(stable, first)  # the original is held, the form never went
    follow = ctx_for("Which fact is number two?")
    choice = await stable.choose(follow, follow.segmentation.texts, "q2", 0.5, prices())
    assert choice.kind == "original" and choice.decision.why is Why.CACHED


async def test_tenant_as_record_never_prices_tenant_bs_request():
    stable = make()
    first = ctx_for("What holds?", tenant="a")
    await stable.choose(first, first.segmentation.texts, "What holds?", 0.5, prices("a"))
    await send(stable, first)
    other = ctx_for("And which fact is number two?", tenant="b")
    choice = await stable.choose(other, other.segmentation.texts, "q", 0.5, prices("b"))
    assert choice.kind == "fresh" and choice.held == 0


@pytest.mark.parametrize("store", [BrokenStore()])
async def test_a_store_outage_falls_back_to_pricing_the_request_alone(store):
    stable = make(store)
    ctx = ctx_for("What holds?")
    choice = await stable.choose(ctx, ctx.segmentation.texts, "What holds?", 0.5, prices())
    assert choice.kind == "fresh" and choice.form is None


PREAMBLE = "You are a careful assistant. Answer from the documents only, cite them. " * 40


async def test_a_question_sharing_a_long_preamble_with_an_asked_one_is_checked():
    """Issue 44: a question counted as asked when its first 2,000 characters matched
    an earlier one, so the first asker's form served every later question unchecked."""
    assert len(PREAMBLE) > 2000
    stable = make()
    first = ctx_for(PREAMBLE + "Which fact is number one?")
    await stable.choose(first, first.segmentation.texts, PREAMBLE + "Which fact is number one?",
                        0.5, prices())  # fmt: skip
    form = StableForm(("a", "b", "c"), 300, 3)
    await stable.forms.remember(first.cache_plan.key, form, PREAMBLE + "Which fact is number one?")
    again = ctx_for(PREAMBLE + "Which fact is number one?")
    same = await stable.choose(again, again.segmentation.texts,
                               PREAMBLE + "Which fact is number one?", 0.5, prices())  # fmt: skip
    assert same.kind == "form" and same.decision.figures.asked
    follow = ctx_for(PREAMBLE + "Which fact is number two?")
    other = await stable.choose(follow, follow.segmentation.texts,
                                PREAMBLE + "Which fact is number two?", 0.5, prices())  # fmt: skip
    assert other.kind == "check" and not other.decision.figures.asked


async def test_a_check_is_priced_with_the_compression_queues_wait():
    """Issue 44: with another tenant's jobs queued, a check predicted at cost=8ms took
    2,013 ms: the queue's wait is part of its cost."""
    stable = make()
    first = ctx_for("Which fact is number one?")
    await stable.choose(first, first.segmentation.texts, "q1", 0.5, prices())
    await stable.forms.remember(first.cache_plan.key, StableForm(("a", "b", "c"), 300, 3), "q1")
    follow = ctx_for("Which fact is number two?")
    idle = await stable.choose(follow, follow.segmentation.texts, "q2", 0.5, prices())
    assert idle.kind == "check"
    queued = Prices("a", 4.0, sum(map(len, DOCS)) // 4, len(DOCS), 1, wait_ms=1e6)
    busy = await stable.choose(follow, follow.segmentation.texts, "q2", 0.5, queued)
    assert busy.kind == "original" and busy.decision.figures.wait_ms == 1e6


async def test_a_prompt_sent_with_compression_off_is_recorded_as_held():
    """Nothing was priced (no plan), yet the backend holds what went: a follow-up over the
    same documents must find it held, or it is compressed against a cache hit."""
    stable = make()
    first = ctx_for("What holds?")
    assert first.cache_plan is None  # compression off: `choose` never ran
    await send(stable, first)
    assert first.cache_plan is not None and first.cache_plan.sent is not None
    follow = ctx_for("And which fact is number two?")
    choice = await stable.choose(follow, follow.segmentation.texts, "q", 0.5, prices())
    assert choice.kind == "fresh" and choice.held >= prices().context_tokens * 0.9


async def test_follow_ups_hash_their_documents_blocks_once_and_chain_the_same():
    analyses = DocumentAnalyses()
    stable, plain = make(analyses=analyses), make()
    plain.view.record = stable.view.record  # one record (its salt), hashed without a memo
    for i, question in enumerate(("What holds?", "Which fact is two?", "And three?")):
        ctx = ctx_for(question)
        await stable.choose(ctx, ctx.segmentation.texts, question, 0.5, prices())
        again = ctx_for(question)
        await plain.choose(again, again.segmentation.texts, question, 0.5, prices())
        assert ctx.cache_plan.original == again.cache_plan.original
        await send(stable, ctx)
        if i == 0:
            misses = analyses.misses
    assert analyses.misses == misses  # the later turns computed no analysis: the head's
    assert sum(key[1].startswith("chain:") for key in analyses._values) == 1  # chain kept


def test_a_forms_generations_share_the_chain_of_its_own_text():
    """Growth appends after the form's last document: the head kept for the view ends
    before the first added group, so every generation (and what is sent) hits it."""
    analyses = DocumentAnalyses()
    view = make(analyses=analyses).view
    own = [d * 2 for d in DOCS]
    added = ""
    for generation in range(3):
        added += marker(generation % 3) + f"Added sentence {generation}."
        texts = own[:-1] + [own[-1] + added]
        text = "system\x1f" + SYSTEM + "\n\n".join(texts) + "\x1euser\x1fWhich?\x1e"
        head = _head(text, texts, 0)
        assert head == text.index(own[-1]) + len(own[-1])
        blocks = view.blocks("a", text, "p", 4.0, head)
        assert blocks == view.record.blocks("a", text, 16, partition="p", chars_per_token=4.0)
    assert sum(key[1].startswith("chain:") for key in analyses._values) == 1
