import numpy as np
import pytest

from compressors import (
    Budget,
    Compressor,
    FastExtractiveCompressor,
    HFTokenCounter,
    Protector,
    split_sentences,
)
from compressors.fast_extractive.static_embed import StaticEmbedder

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


@pytest.fixture(scope="module")
def counter(minilm_path):
    return HFTokenCounter(minilm_path)


@pytest.fixture(scope="module")
def compressor(static_model, counter):
    return FastExtractiveCompressor(counter, model_path=static_model, weights={"bm25": 1.0})


def test_protocol_and_fingerprint(compressor, static_model, counter):
    assert isinstance(compressor, Compressor) and compressor.question_aware
    hybrid = FastExtractiveCompressor(counter, model_path=static_model)
    custom = FastExtractiveCompressor(counter, model_path=static_model, weights={"cos": 2})
    prints = {c.fingerprint() for c in (compressor, hybrid, custom)}
    assert len(prints) == 3
    with pytest.raises(TypeError):  # a bench-only mode (bench/lib/variants), not an option
        FastExtractiveCompressor(counter, scorer="bm25")
    with pytest.raises(ValueError):
        FastExtractiveCompressor(counter, weights={"pagerank": 1})


def test_picks_the_sentence_that_answers(compressor):
    r = compressor.compress(DOCS[:1], question=QUESTION, budget=Budget(rate=0.25))
    assert r.texts[0] == "The Eiffel Tower is 330 metres tall."
    r = compressor.compress(DOCS[2:], question="Who created Python?", budget=Budget(rate=0.4))
    assert "Guido van Rossum" in r.texts[0]


def test_deterministic_order_preserving_byte_identical(static_model, counter):
    budget = Budget(rate=0.6)
    first = FastExtractiveCompressor(counter, model_path=static_model)
    a = first.compress(DOCS, question=QUESTION, budget=budget)
    b = FastExtractiveCompressor(counter, model_path=static_model).compress(
        DOCS, question=QUESTION, budget=budget
    )
    assert a == b
    for doc, out in zip(DOCS, a.texts, strict=True):
        sentences = [out[s:e] for s, e in split_sentences(out)]
        positions = [doc.index(s) for s in sentences]  # each kept sentence verbatim
        assert positions == sorted(positions)


def test_pooled_budget_favours_the_relevant_document(compressor, counter):
    total = sum(counter(d) for d in DOCS)
    budget = Budget(rate=0.3, target_tokens=round(total * 0.3))
    r = compressor.compress(DOCS, question=QUESTION, budget=budget)
    assert "330 metres" in r.texts[0] and r.documents[0].tokens_after > 0
    assert r.tokens_after <= budget.target_tokens + len(DOCS)  # joins may merge tokens
    assert r.documents[0].tokens_after > max(d.tokens_after for d in r.documents[1:])


def test_protected_spans_are_atomic_and_numbers_verbatim(compressor):
    doc = (
        "Version 2.1.0 shipped on 2024-03-05. Read https://example.org/a.b/c for notes. "
        "The build takes 12.5 minutes."
    )
    out = compressor.compress([doc], question="How long does the build take?",
                              budget=Budget(rate=0.4)).texts[0]  # fmt: skip
    assert out == "The build takes 12.5 minutes."
    keep_url = compressor.compress([doc], question="Where are the notes?", budget=Budget(0.5))
    assert "https://example.org/a.b/c" in keep_url.texts[0]
    for s, e in Protector().spans(keep_url.texts[0]):
        assert keep_url.texts[0][s:e] in doc


def test_blank_question_empty_documents_and_full_rate(compressor):
    r = compressor.compress([*DOCS, "", "   "], question="", budget=Budget(rate=0.5))
    assert [bool(t) for t in r.texts] == [True, True, True, False, False]
    full = compressor.compress(DOCS, question=QUESTION, budget=Budget(rate=1.0))
    assert full.texts == tuple(DOCS) and full.ratio == 1.0
    assert compressor.compress([], question=QUESTION, budget=Budget(rate=0.5)).texts == ()
    none = compressor.compress(["", " "], question=QUESTION, budget=Budget(0.5, target_tokens=3))
    assert none.texts == ("", "")


def test_missing_model(tmp_path, counter):
    c = FastExtractiveCompressor(counter, model_path=tmp_path / "nothing", build_missing=False)
    with pytest.raises(FileNotFoundError, match="build_static_minilm"):
        c.compress(DOCS, question=QUESTION, budget=Budget(rate=0.5))


def test_one_pass_sentence_vectors_match_sentence_alone(static_model):
    embedder = StaticEmbedder(static_model)
    doc = DOCS[0]
    spans = split_sentences(doc)
    tokens = embedder.tokens(doc)
    starts = np.array([s for s, _ in spans])
    owner = np.searchsorted(starts, tokens.starts, side="right") - 1
    sums = embedder.span_sums(tokens, owner, len(spans))
    for (s, e), row in zip(spans, sums, strict=True):
        alone = embedder.vector(doc[s:e])
        assert np.allclose(row / np.linalg.norm(row), alone, atol=1e-5)
