import pytest

from compressors import Budget, Compressor, HFTokenCounter, split_sentences
from compressors.extractive import ExtractiveCompressor, LRUEmbeddingCache
from tests.doubles.sentence_encoder import CountingEncoder

DOCS = [
    "The Eiffel Tower stands in Paris. It was completed in 1889 for the World's Fair. "
    "Gustave Eiffel's company designed and built it.\n\nMillions of people visit it "
    "every year. The Eiffel Tower is 330 metres tall.",
    "Photosynthesis turns light into chemical energy. Chlorophyll absorbs mostly blue "
    "and red light. Plants release oxygen as a by-product.",
    "Python was created by Guido van Rossum. The first version was released in 1991. "
    "Its name comes from Monty Python, not from the snake.",
]
QUESTION = "How tall is the Eiffel Tower?"


class CountingCache(LRUEmbeddingCache):
    def __init__(self):
        super().__init__(1000)
        self.misses = 0

    def get_many(self, keys):
        found = super().get_many(keys)
        self.misses += sum(v is None for v in found)
        return found


@pytest.fixture(scope="module")
def compressor(minilm_path):
    return ExtractiveCompressor(HFTokenCounter(minilm_path))


def test_protocol_and_fingerprint(compressor, minilm_path):
    assert isinstance(compressor, Compressor)
    assert compressor.question_aware
    other = ExtractiveCompressor(HFTokenCounter(minilm_path), min_sentences=0)
    assert compressor.fingerprint() != other.fingerprint()


def test_picks_the_sentence_that_answers(compressor):
    r = compressor.compress(DOCS[:1], question=QUESTION, budget=Budget(rate=0.25))
    assert r.texts[0] == "The Eiffel Tower is 330 metres tall."
    r = compressor.compress(DOCS[2:], question="Who created Python?", budget=Budget(rate=0.4))
    assert "Guido van Rossum" in r.texts[0]


def test_deterministic_and_order_preserving(compressor):
    budget = Budget(rate=0.7)
    first = compressor.compress(DOCS, question=QUESTION, budget=budget)
    fresh = ExtractiveCompressor(compressor.count_tokens)  # cold cache, same settings
    second = fresh.compress(DOCS, question=QUESTION, budget=budget)
    assert first == second
    for doc, out in zip(DOCS, first.texts, strict=True):
        positions = [doc.index(out[s:e]) for s, e in split_sentences(out)]
        assert positions == sorted(positions)
    assert len(split_sentences(first.texts[0])) > 2


def test_rate_budget_per_document(compressor):
    r = compressor.compress(DOCS, question=QUESTION, budget=Budget(rate=0.5))
    for d in r.documents:
        assert 0 < d.tokens_after <= d.tokens_before * 0.5 + 2
    assert r.ratio > 1.6


def test_target_tokens_is_one_pool(compressor):
    r = compressor.compress(DOCS, question=QUESTION, budget=Budget(target_tokens=20))
    assert r.tokens_after <= 22
    assert "330 metres" in r.texts[0]
    assert r.texts[1] == ""  # nothing about photosynthesis is worth the pool


def test_full_rate_and_blank_question(compressor):
    r = compressor.compress(DOCS, question=QUESTION, budget=Budget(rate=1.0))
    assert r.texts == tuple(DOCS)
    r = compressor.compress(DOCS, question="  ", budget=Budget(rate=0.5))
    assert all(r.texts) and r.ratio > 1.5


def test_only_the_question_is_embedded_when_sentences_are_cached(minilm_path):
    cache = CountingCache()
    c = ExtractiveCompressor(HFTokenCounter(minilm_path), embedding_cache=cache)
    c.compress(DOCS, question=QUESTION, budget=Budget(rate=0.5))
    cold = cache.misses
    c.compress(DOCS, question="When was Python released?", budget=Budget(rate=0.5))
    assert cold > 10 and cache.misses - cold == 1


def test_lru_cache_is_bounded():
    cache = LRUEmbeddingCache(2)
    cache.set_many({"a": b"1", "b": b"2"})
    cache.get_many(["a"])
    cache.set_many({"c": b"3"})
    assert cache.get_many(["a", "b", "c"]) == [b"1", None, b"3"]


def test_code_blocks_are_atomic(compressor):
    doc = (
        "To install, run the command below.\n```\npip install ragtrim. Then import it.\n```\n"
        "The weather was sunny in Lisbon. Birds sang all day."
    )
    r = compressor.compress([doc], question="How do I install ragtrim?", budget=Budget(rate=0.6))
    text = r.texts[0]
    assert text.count("```") in (0, 2)
    assert "pip install ragtrim. Then import it." in text


def test_one_scopes_embeddings_never_serve_another():
    """Issue 44: tenant A warms the cache; B with the same documents misses, as with
    documents never seen (CVE-2025-46570 class); A hits its own."""
    c = ExtractiveCompressor(model_path="unused")
    c._model = encoder = CountingEncoder()
    budget = Budget(rate=0.5)
    c.compress(DOCS, question=QUESTION, budget=budget, scope="tenant-a")
    cold = len(encoder.encoded)
    c.compress(DOCS, question=QUESTION, budget=budget, scope="tenant-b")
    assert cold > 10 and len(encoder.encoded) == 2 * cold
    c.compress(DOCS, question=QUESTION, budget=budget, scope="tenant-a")
    assert len(encoder.encoded) == 2 * cold
    unscoped = c.compress(DOCS, question=QUESTION, budget=budget)
    assert len(encoder.encoded) == 3 * cold and unscoped.texts  # "" is a scope of its own
