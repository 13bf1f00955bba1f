import pytest

from compressors import Budget, Compressor, HFTokenCounter, Protector
from compressors.longllmlingua import (
    LegacyCacheLM,
    LongLLMLinguaCompressor,
    from_legacy,
    protected_token_mask,
    rank_deltas,
    to_legacy,
)

DOCS = [
    "The Denver Broncos defeated the Carolina Panthers 24\u201310 in Super Bowl 50, played "
    "on February 7, 2016, at Levi's Stadium. The game was broadcast by CBS and the "
    "halftime show was headlined by Coldplay. Tickets cost $5,000 on average [2].",
    "Photosynthesis turns light into chemical energy in plants. Chlorophyll absorbs "
    "mostly blue and red light, and the plant releases oxygen. It does not need sugar.",
    "",
    "The stadium in Santa Clara holds 68,500 people. It opened in 2014 and hosts the "
    "San Francisco 49ers. The field is natural grass and the roof is open.",
]
QUESTION = "Who won Super Bowl 50?"


@pytest.fixture(scope="module")
def compressor(tiny_causal_lm, tiktoken_cache):
    return LongLLMLinguaCompressor(HFTokenCounter(tiny_causal_lm), model_path=tiny_causal_lm)


def test_legacy_cache_round_trip():
    import torch

    legacy = [(torch.ones(1, 2, 3, 4), torch.zeros(1, 2, 3, 4)) for _ in range(2)]
    cache = from_legacy(legacy)
    assert cache.get_seq_length() == 3
    back = to_legacy(cache)
    for (k, v), (k2, v2) in zip(legacy, back, strict=True):
        assert torch.equal(k, k2) and torch.equal(v, v2)
    assert from_legacy(None) is None and to_legacy(None) is None


def test_get_ppl_with_past_key_values_works(compressor):
    """llmlingua's get_ppl with a legacy cache: broken on transformers >= 4.57 unwrapped."""
    import torch

    pc = compressor._load()
    assert isinstance(pc.model, LegacyCacheLM)
    enc = pc.tokenizer(DOCS[0], return_tensors="pt")
    ids, mask = enc["input_ids"], enc["attention_mask"]
    half = ids.shape[1] // 2
    loss1, past = pc.get_ppl("", "token", ids, mask, return_kv=True, end=half)
    assert isinstance(past, list) and past[0][0].shape[2] == half
    loss2, past = pc.get_ppl("", "token", ids, mask, past_key_values=past, return_kv=True)
    full = pc.get_ppl("", "token", ids, mask)
    # full[i] is the loss of token i+1 given tokens 0..i: the first call scores tokens
    # 1..half-1, the cached call tokens half+1..n-1 (token half is nobody's label)
    assert loss1.shape[0] == half - 1 and loss2.shape[0] == full.shape[0] - half
    assert torch.allclose(loss1, full[: half - 1], atol=1e-5)
    assert torch.allclose(loss2, full[half:], atol=1e-5)  # only right if the cache was used


def test_compresses_each_document_in_place(compressor):
    assert isinstance(compressor, Compressor) and compressor.question_aware
    r = compressor.compress(DOCS, question=QUESTION, budget=Budget(rate=0.4))
    assert len(r.texts) == len(DOCS) and r.texts[2] == ""
    assert 1.5 < r.ratio < 5
    assert "Photosynthesis" not in r.texts[0] and "Santa Clara" not in r.texts[1]
    assert r == compressor.compress(DOCS, question=QUESTION, budget=Budget(rate=0.4))


def test_protected_spans_are_kept(compressor):
    r = compressor.compress(DOCS, question=QUESTION, budget=Budget(rate=0.2))
    for doc, out in zip(DOCS, r.texts, strict=True):
        for s, e in Protector().spans(doc):
            assert doc[s:e] in out


def test_question_changes_the_rates(compressor):
    a = compressor.compress(DOCS, question=QUESTION, budget=Budget(rate=0.4))
    b = compressor.compress(DOCS, question="", budget=Budget(rate=0.4))
    assert a.texts != b.texts and all(b.texts[i] for i in (0, 1, 3))


def test_full_rate_is_identity(compressor):
    r = compressor.compress(DOCS, question=QUESTION, budget=Budget(rate=1.0))
    assert r.texts == tuple(DOCS)


def test_rank_deltas_follow_llmlingua():
    assert rank_deltas([2, 0, 1], 0.3) == {2: 0.3, 0: 0.0, 1: -0.3}
    assert rank_deltas([0], 0.3) == {0: 0.0}


def test_protected_token_mask(tiny_causal_lm):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    doc = "Revenue was $3,400,000 in 2024."
    joined = "Question?\n\n" + doc
    mask = protected_token_mask(tok, joined, len(joined) - len(doc), Protector().spans(doc))
    ids = tok(joined, add_special_tokens=False)["input_ids"]
    kept = tok.decode([i for i, m in zip(ids, mask.tolist(), strict=True) if m])
    assert "$3,400,000" in kept and "2024" in kept and "Revenue" not in kept
