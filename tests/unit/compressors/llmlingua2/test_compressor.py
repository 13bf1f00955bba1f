import numpy as np
import pytest

from bench.lib.variants.lingua2_reference import ReferenceLLMLingua2Compressor
from bench.lib.variants.tiktoken_counter import TiktokenCounter
from compressors import Budget, Compressor, LLMLingua2Compressor, Protector
from compressors.llmlingua2.words import keep_flags, model_kind

DOCS = [
    "Super Bowl 50 was an American football game to determine the champion of the "
    "National Football League for the 2015 season. The Denver Broncos defeated the "
    "Carolina Panthers 24\u201310 to earn their third title. The game was played on "
    "February 7, 2016, at Levi's Stadium in the San Francisco Bay Area.",
    "The Panthers finished the regular season with a 15\u20131 record. They did not lose "
    "at home. See https://example.org/stats for details [3].\n\nTheir quarterback was "
    "named the league's Most Valuable Player.",
    "",
    "Short one.",
]
FORCE = (".", "?")


def make(path, cls=LLMLingua2Compressor, **kwargs):
    """fp32 unless asked: these tests compare decisions with llmlingua's own (fp32)."""
    kwargs.setdefault("precision", "fp32")
    return cls(TiktokenCounter(), model_path=path, force_tokens=FORCE, **kwargs)


@pytest.fixture(scope="module")
def fast(lingua_standin):
    return make(lingua_standin)


@pytest.fixture(scope="module")
def reference(lingua_standin, tiktoken_cache):
    return make(lingua_standin, ReferenceLLMLingua2Compressor)


def agreement(a, b) -> float:
    pairs = [p for da, db in zip(a, b, strict=True) for p in zip(da.keep, db.keep, strict=True)]
    return sum(x == y for x, y in pairs) / len(pairs)


def test_fast_engine_decides_like_llmlingua(fast, reference):
    long_doc = " ".join(DOCS[:2]) * 6  # several 510-token chunks
    docs = [*DOCS, long_doc]
    for rate in (0.5, 0.33):
        ours, theirs = fast.decide(docs, rate), reference.decide(docs, rate)
        assert [d.spans for d in ours] == [d.spans for d in theirs]
        assert agreement(ours, theirs) >= 0.99
    assert "engine=fast" in fast.fingerprint() and "engine=reference" in reference.fingerprint()


def test_deterministic_and_independent_of_batch(fast):
    budget = Budget(rate=0.4)
    together = fast.compress(DOCS, question="", budget=budget)
    assert together == fast.compress(DOCS, question="ignored", budget=budget)
    alone = [fast.compress([d], question="", budget=budget).texts[0] for d in DOCS]
    assert list(together.texts) == alone


def test_protected_spans_survive_and_order_is_kept(fast):
    r = fast.compress(DOCS, question="", budget=Budget(rate=0.2))
    for doc, out in zip(DOCS, r.texts, strict=True):
        for s, e in Protector().spans(doc):
            assert doc[s:e] in out
        words = out.split()
        positions = [doc.find(w) for w in words]
        assert -1 not in positions
    assert r.texts[2] == "" and r.documents[2].tokens_before == 0


def test_rate_is_roughly_met(fast):
    plain = make(fast.model_path, protector=Protector(kinds=()))
    for rate in (0.33, 0.5):
        r = plain.compress(DOCS[:2], question="", budget=Budget(rate=rate))
        assert rate - 0.12 <= 1 / r.ratio <= rate + 0.12


def test_target_tokens_and_full_rate(fast):
    r = fast.compress(DOCS[:2], question="", budget=Budget(target_tokens=40))
    assert r.tokens_after < r.tokens_before * 0.6
    r = fast.compress(DOCS, question="", budget=Budget(rate=1.0))
    assert r.texts == tuple(DOCS)


def test_precision_and_contract(fast, lingua_standin):
    assert isinstance(fast, Compressor) and not fast.question_aware
    bf16 = make(lingua_standin, precision="bf16")
    assert bf16.fingerprint() != fast.fingerprint()
    assert agreement(fast.decide(DOCS, 0.5), bf16.decide(DOCS, 0.5)) > 0.9
    with pytest.raises(ValueError):
        make(lingua_standin, precision="int4")
    with pytest.raises(ValueError):
        make(lingua_standin, ReferenceLLMLingua2Compressor, precision="bf16")
    with pytest.raises(ValueError):
        make("/models/some-roberta")  # llmlingua cannot tell how to merge tokens


def test_keep_rule_matches_llmlingua_arithmetic():
    probs = [np.float32(p) for p in (0.1, 0.9, 0.5, 0.7)]
    assert keep_flags(probs, [1, 1, 1, 1], 0.5) == [False, True, False, True]
    assert keep_flags(probs, [1, 1, 5, 1], 0.5) == [False, True, False, True]
    assert keep_flags([1.0, 1.0, np.float32(0.2)], [1, 1, 1], 0.1) == [True, True, False]
    assert keep_flags([], [], 0.5) == []
    assert model_kind("x/bert-base-multilingual-cased") == "bert"
    assert model_kind("microsoft/llmlingua-2-xlm-roberta-large-meetingbank") == "xlmr"
