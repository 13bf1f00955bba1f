"""fast_extractive split in a document part and a request part (issue 18): the same bytes
as the unsplit compressor (a frozen copy: reference_compressor.py) on SQuAD
fidelity cases of both distractor kinds, and features that survive their encoding."""

from __future__ import annotations

import numpy as np
import pytest

from bench.lib.squad import build_cases, load_squad
from bench.lib.variants.fast_single_signal import SingleSignalFastExtractive
from compressors import (
    Budget,
    FastExtractiveCompressor,
    FeatureCompressor,
    HFTokenCounter,
    decode_features,
    encode_features,
)
from compressors.fast_extractive.static_embed import default_static_path
from tests.support.reference_compressor import ReferenceFastExtractive

N_CASES = 8  # per distractor kind: ~2k tokens each


@pytest.fixture(scope="module")
def counter(minilm_path):
    return HFTokenCounter(minilm_path)


@pytest.fixture(scope="module")
def cases(counter):
    articles = load_squad("train")
    return [
        c
        for kind in ("off_topic", "same_article")
        for c in build_cases(
            N_CASES, seed=11, count_tokens=counter, articles=articles, distractors=kind
        )  # fmt: skip
    ]


def _budgets(docs, counter):
    total = sum(counter(d) for d in docs)
    yield Budget(rate=1 / 3, target_tokens=round(total / 3))
    yield Budget(rate=1 / 2, target_tokens=round(total / 2))
    yield Budget(rate=1 / 3)


def _models(static_model, scorer: str):
    """The random test table; and the real distilled model where `make setup` built it."""
    real = default_static_path()
    built = scorer == "hybrid" and (real / "model.safetensors").exists()
    return [static_model] + ([real] if built else [])


def _split(scorer: str, counter, **opts):
    """The product (the hybrid mix) or bench's single-signal variant, which replaced the
    product's `scorer` option (issue 21): both must match the frozen copy."""
    if scorer == "hybrid":
        return FastExtractiveCompressor(counter, **opts)
    return SingleSignalFastExtractive(counter, signal=scorer, **opts)


def _same(got, want, exact: bool) -> bool:
    """Same bytes, same tokens before; tokens after equal too when re-counted ("exact")."""
    if exact:
        return got == want
    return got.texts == want.texts and [d.tokens_before for d in got.documents] == [
        d.tokens_before for d in want.documents
    ]


@pytest.mark.parametrize(("scorer", "kept"), [("hybrid", "exact"), ("hybrid", "spans"),
                                              ("bm25", "exact"), ("static", "exact")])  # fmt: skip
def test_byte_identical_to_the_unsplit_compressor(scorer, kept, cases, counter, static_model):
    for model in _models(static_model, scorer if kept == "exact" else "-"):
        opts = {"model_path": model, "build_missing": False}
        new = _split(scorer, counter, **opts, kept_counts=kept)
        old = ReferenceFastExtractive(counter, **opts, scorer=scorer)
        for case in cases:
            docs = list(case.documents)
            for budget in _budgets(docs, counter):
                for question in (case.question, ""):
                    got = new.compress(docs, question=question, budget=budget)
                    want = old.compress(docs, question=question, budget=budget)
                    assert _same(got, want, kept == "exact"), (case.case_id, budget, question)


def test_span_counts_stay_close_to_a_recount(cases, counter, static_model):
    """kept_counts="spans" (the default) sums the kept sentences' in-document counts."""
    fast = FastExtractiveCompressor(counter, model_path=static_model)
    for case in cases:
        docs = list(case.documents)
        budget = Budget(rate=1 / 3, target_tokens=round(sum(counter(d) for d in docs) / 3))
        got = fast.compress(docs, question=case.question, budget=budget)
        recount = sum(counter(t) for t in got.texts)
        assert got.tokens_after <= budget.target_tokens  # the budget's own arithmetic
        assert abs(got.tokens_after - recount) <= max(2, 0.03 * recount), case.case_id


def test_memoized_features_give_the_same_bytes_for_any_question(cases, counter, static_model):
    fast = FastExtractiveCompressor(counter, model_path=static_model)
    assert isinstance(fast, FeatureCompressor)
    docs = list(cases[0].documents)
    stored = [encode_features(fast.document_features(d)) for d in docs]  # what the cache keeps
    computed = fast.features_computed
    for case in cases[:6]:  # new questions over the same documents
        budget = Budget(rate=0.4, target_tokens=round(0.4 * sum(counter(d) for d in docs)))
        feats = [decode_features(b) for b in stored]
        got = fast.compress_features(docs, feats, question=case.question, budget=budget)
        assert got == fast.compress(docs, question=case.question, budget=budget)
    assert fast.features_computed == computed + 6 * len(docs)  # only compress() computed


def test_encoding_round_trip_and_rejects(static_model, counter):
    fast = FastExtractiveCompressor(counter, model_path=static_model)
    f = fast.document_features("One sentence here. Another one, 3.5 km long! And a third?")
    blob = encode_features(f)
    back = decode_features(blob)
    assert back.tokens == f.tokens and back.span_list() == f.span_list()
    for a, b in ((back.counts, f.counts), (back.ids, f.ids), (back.sums, f.sums)):
        assert np.array_equal(a, b)
    assert decode_features(blob[:-1]) is None and decode_features(b"XYZ" + blob[3:]) is None
    assert decode_features(b"") is None
    empty = fast.document_features("   ")
    assert decode_features(encode_features(empty)).sentences == 0
    feats = [decode_features(encode_features(empty))]
    assert fast.compress_features(["   "], feats, question="q", budget=Budget(0.5)).texts == ("",)


def test_feature_fingerprint_ignores_the_scorer_not_the_model(static_model, counter):
    a = SingleSignalFastExtractive(counter, model_path=static_model, signal="bm25")
    b = FastExtractiveCompressor(counter, model_path=static_model)
    assert a.feature_fingerprint() == b.feature_fingerprint()
    assert a.fingerprint() != b.fingerprint()
    c = FastExtractiveCompressor(counter, model_path=static_model, max_sentence_chars=100)
    assert c.feature_fingerprint() != a.feature_fingerprint()
