"""Stable compression's store (issue 29, item 3): a document set's compressed form comes
back byte for byte for any later question, keyed by tenant + static prefix +
documents + compressor; the first form stays; a store outage reads as a miss."""

import asyncio
import time

import pytest

from cache.keys import owner_of, tenant_tag
from cache.stable_forms import FormKey, StableForm, StableForms, question_digest
from cache.store import MemoryStore, RedisStore
from tests.support.redis_server import RedisServer
from tests.support.servers import free_port

DOCS = (
    "The Loire is the longest river in France.",
    'แม่น้ำเจ้าพระยาไหลผ่านกรุงเทพ 🌊 — «guillemets», "quotes", back\\slash, \u2028 NUL:\x00',
    '[{"year": 1889, "tower": "Eiffel"}]',
)
FORM = StableForm(("Loire: longest in France.", "เจ้าพระยา 🌊 \x00", '[{"year": 1889}]'), 90, 30)


def key(tenant="alpha", prefix="pk-1", docs=DOCS, fingerprint="fast_extractive:1:0.5") -> FormKey:
    return FormKey(tenant, prefix, tuple(docs), fingerprint)


def forms(store=None, **kw) -> StableForms:
    args = {"ttl": 3600.0, "max_questions": 16} | kw
    return StableForms(MemoryStore() if store is None else store, **args)


def utf8(texts) -> list[bytes]:
    return [t.encode("utf-8", "surrogatepass") for t in texts]


async def test_a_reused_compressed_form_is_byte_identical():
    store = forms()
    assert await store.lookup(key()) is None
    await store.remember(key(), FORM, "how long is the Loire?")
    later = await store.lookup(key())  # a later turn: same tenant, prefix, documents
    assert utf8(later.texts) == utf8(FORM.texts)
    assert (later.tokens_before, later.tokens_after) == (90, 30)
    assert later.has_asked("how long is the Loire?") and later.uses == 1


async def test_every_part_of_the_key_separates_forms():
    store = forms()
    await store.remember(key(), FORM, "q1")
    changed = [DOCS[0], DOCS[1] + " ", DOCS[2]]
    for other in (key(tenant="beta"), key(tenant=""), key(prefix="pk-2"), key(docs=changed),
                  key(fingerprint="fast_extractive:1:0.3"), key(docs=DOCS[:2])):  # fmt: skip
        assert await store.lookup(other) is None
    assert await store.lookup(key()) is not None


async def test_the_first_form_stays_and_a_losers_question_is_not_recorded_for_it():
    store = forms()
    await store.remember(key(), FORM, "q1")
    other = StableForm(("a", "b", "c"), 90, 3)
    await store.remember(key(), other, "q2")  # compressed for q2, but FORM stays
    kept = await store.lookup(key())
    assert kept.texts == FORM.texts
    assert kept.has_asked("q1") and not kept.has_asked("q2")  # q2 was never checked on FORM


async def test_asked_is_the_whole_question_never_a_prefix():
    """Issue 44: a question counted as asked when its first 2,000 characters matched."""
    store = forms()
    preamble = "Answer from the documents only. " * 100  # 3,200 characters of fixed text
    await store.remember(key(), FORM, preamble + "Who built the tower?")
    kept = await store.lookup(key())
    assert kept.has_asked(preamble + "Who built the tower?")
    assert not kept.has_asked(preamble + "When was it built?")
    assert not kept.has_asked(preamble)


async def test_reuses_are_recorded_by_digest_and_bounded_in_count():
    store = forms(max_questions=4)
    await store.remember(key(), FORM, "question 0")
    for i in range(1, 10):
        await store.reuse(key(), await store.lookup(key()), f"question {i}")
    await store.reuse(key(), await store.lookup(key()), "question 1")  # seen: not again
    await store.reuse(key(), await store.lookup(key()), None)
    found = await store.lookup(key())
    assert [found.has_asked(f"question {i}") for i in range(6)] == [True] * 4 + [False] * 2
    assert len(found.asked) == 4 and found.uses == 12


async def test_a_form_expires_its_ttl_after_its_last_use():
    store = forms(ttl=0.2)
    await store.remember(key(), FORM, "q1")
    await asyncio.sleep(0.12)
    await store.reuse(key(), FORM, "q2")  # a use restarts the expiry
    await asyncio.sleep(0.12)
    assert await store.lookup(key()) is not None
    await asyncio.sleep(0.25)
    assert await store.lookup(key()) is None


async def test_a_tenants_forms_are_its_own_in_the_fair_share():
    assert owner_of(key(tenant="alpha").name) == tenant_tag("alpha")
    assert owner_of(key(tenant="").name) == ""


class Broken(MemoryStore):
    async def hgetall(self, key):
        raise ConnectionError("store down")


async def test_a_store_outage_reads_as_a_miss_and_remember_answers_the_form_given():
    errors = []
    store = forms(Broken(), on_error=lambda op, exc: errors.append(op))
    assert await store.lookup(key()) is None
    await store.remember(key(), FORM, "q")
    assert errors == ["lookup"]  # hgetall only fails here: remember writes


@pytest.mark.parametrize("raw", ["not json", '{"texts": "abc", "before": 1, "after": 1}',
                                 '{"texts": ["a", "b"], "before": 1, "after": 1}',
                                 '{"texts": ["a", "b", 3], "before": 1, "after": 1}'])  # fmt: skip
async def test_an_unreadable_entry_is_a_miss_and_is_left_to_expire(raw):
    errors = []
    memory = MemoryStore()
    store = forms(memory, on_error=lambda op, exc: errors.append(op))
    await memory.hsetnx(key().name, "form", raw)
    assert await store.lookup(key()) is None and errors == ["decode"]
    await store.remember(key(), FORM, "q")
    assert (await memory.hgetall(key().name))["form"] == raw  # kept as it was


async def test_a_form_must_have_one_text_per_document():
    with pytest.raises(ValueError):
        await forms().remember(key(), StableForm(("a",), 1, 1), "q")


@pytest.mark.integration  # a real Redis server
def test_replicas_share_forms_through_redis_and_the_first_writer_wins():
    server = RedisServer(free_port()).start()

    async def scenario():
        a, b = RedisStore(server.url), RedisStore(server.url)  # two replicas
        try:
            one, two = forms(a), forms(b)
            rival = StableForm(("x", "y", "z"), 90, 3)
            await asyncio.gather(one.remember(key(), FORM, "q1"), two.remember(key(), rival, "q2"))
            seen = [await one.lookup(key()), await two.lookup(key())]
            assert seen[0] == seen[1] and seen[0].texts in (FORM.texts, rival.texts)
            winner = "q1" if seen[0].texts == FORM.texts else "q2"
            assert seen[0].asked == {question_digest(winner)}  # the loser's is not recorded
            await one.remember(key(), rival if seen[0].texts == FORM.texts else FORM, "q3")
            assert utf8((await two.lookup(key())).texts) == utf8(seen[0].texts)
        finally:
            await a.aclose()
            await b.aclose()

    try:
        asyncio.run(scenario())
    finally:
        server.kill()


def test_redis_down_is_a_fast_miss():
    async def scenario():
        store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5,
                           on_error=lambda op, exc: None)  # fmt: skip
        t0 = time.perf_counter()
        try:
            found = await forms(store).lookup(key())
            await forms(store).remember(key(), FORM, "q")
        finally:
            await store.aclose()
        return found, time.perf_counter() - t0

    found, seconds = asyncio.run(scenario())
    assert found is None and seconds < 1.0


async def test_a_grown_form_is_found_and_the_deepest_generation_wins():
    forms = StableForms(MemoryStore(), ttl=60, max_questions=4)
    key = FormKey("t", "prefix", ("doc one", "doc two"), "fp")
    await forms.remember(key, StableForm(("one", "two"), 10, 4), "q1")
    kept = await forms.lookup(key)
    await forms.grow(key, StableForm(("one", "two\nextra"), 10, 6, generation=1), "q2")
    found = await forms.lookup(key)
    assert found is not None and found.texts == ("one", "two\nextra") and found.generation == 1
    assert found.has_asked("q1") and found.has_asked("q2") and not kept.has_asked("q2")
    with pytest.raises(ValueError):
        await forms.grow(key, StableForm(("a", "b"), 1, 1, generation=0), None)


async def test_a_generation_and_its_question_are_one_write():
    """Issue 44: two replicas grew generation 1 for two questions; one form won and the
    other's question stayed recorded as asked over a form that lacks its answer."""
    forms = StableForms(MemoryStore(), ttl=60, max_questions=4)
    key = FormKey("t", "prefix", ("doc one", "doc two"), "fp")
    await forms.remember(key, StableForm(("one", "two"), 10, 4), "q1")
    mine = StableForm(("one", "two\nmine"), 10, 6, generation=1)
    theirs = StableForm(("one", "two\ntheirs"), 10, 6, generation=1)
    await asyncio.gather(forms.grow(key, mine, "qa"), forms.grow(key, theirs, "qb"))
    found = await forms.lookup(key)
    assert found.texts == mine.texts and found.has_asked("qa") and not found.has_asked("qb")


async def test_a_reuse_recorded_for_a_deeper_generation_than_stored_is_ignored():
    memory = MemoryStore()
    forms = StableForms(memory, ttl=60, max_questions=4)
    key = FormKey("t", "prefix", ("doc",), "fp")
    await forms.remember(key, StableForm(("one",), 10, 4), "q1")
    await memory.hsetnx(key.name, "a:" + question_digest("q9"), "3")  # a generation not kept
    assert not (await forms.lookup(key)).has_asked("q9")


def test_generation_payloads_are_parsed_once_and_bounded(monkeypatch):
    """A lookup read every generation's JSON on every follow-up (issue 43): each is parsed
    once while kept, and what is kept stays under PARSED_CHARS."""
    import json as real_json

    import cache.stable_forms as sf

    forms = sf.StableForms(MemoryStore(), ttl=60, max_questions=8)
    parsed, loads = [], real_json.loads
    monkeypatch.setattr(sf.json, "loads", lambda raw: parsed.append(raw) or loads(raw))
    key = sf.FormKey("acme", "", ("Doc one. Two.",), "fp")
    asyncio.run(forms.remember(key, sf.StableForm(("Doc one.",), 4, 2), "q?"))
    grown = sf.StableForm(("Doc one. Two.",), 4, 3, generation=1)
    asyncio.run(forms.grow(key, grown, "q2?"))
    for _ in range(5):
        assert asyncio.run(forms.lookup(key)).texts == ("Doc one. Two.",)
    assert len(parsed) == 2  # two generations, each parsed once
    monkeypatch.setattr(sf, "PARSED_CHARS", 4000)
    for i in range(100):
        forms._payload(real_json.dumps({"texts": [f"{i} " * 100]}))
    assert forms._parsed_chars <= 4000
