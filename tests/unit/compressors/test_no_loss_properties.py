"""No silent loss of context, over random text in many Unicode scripts (issue 23: a
Chinese document of 1,440 characters, a Japanese one of 3 sentences, an 8 KB base64
blob were compressed to nothing).

For the request-path compressor under a pooled budget (target = rate × tokens):
- the context is never emptied when it had tokens;
- the kept share is within the budget's bounds: greedy selection under a target keeps
  at most the target, or the single best unit when none fits, and stops short of the
  target by less than one unit (every unit it skipped did not fit); the units the scorer
  cannot judge (Thai, base64 runs: verbatim.keep_unjudged) are kept on top (issue 33);
- every protected span survives: no unit boundary falls inside one, and it is in the
  output whenever its unit is.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compressors import (
    MAX_SENTENCE_CHARS,
    ApproxTokenCounter,
    Budget,
    FastExtractiveCompressor,
    Protector,
    count_spans,
    split_sentences,
)
from compressors.verbatim import keep_unjudged

SCRIPTS = {
    "latin": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "cyrillic": "абвгдежзийклмнопрстуф",
    "greek": "αβγδεζηθικλμνξοπρστυφ",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "devanagari": "कखगघचछजझटठडढणतथदधनपफबभमयरलवशसह",
    "thai": "กขคงจฉชซญดตถทนบปผพฟภมยรลวศสหอฮ",
    "han": "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就",
    "kana": "あいうえおかきくけこさしすせそアイウエオカキクケコ",
    "hangul": "가나다라마바사아자차카타파하",
    "base64": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=",
}
GLUE = [" ", " ", "", "\n", "。", "！", ". ", "? ", "। ", "\n\n", ", "]
EXTRAS = ["https://example.com/a/b?c=1", "2024-03-15", "$3,400", "[1]", "not", "42%"]

word = st.one_of(
    st.sampled_from(sorted(SCRIPTS)).flatmap(
        lambda s: st.text(alphabet=SCRIPTS[s], min_size=1, max_size=40)
    ),
    st.sampled_from(EXTRAS),
)
document = st.lists(st.tuples(word, st.sampled_from(GLUE)), min_size=1, max_size=60).map(
    lambda parts: "".join(w + g for w, g in parts)
)


@pytest.fixture(scope="module")
def compressor(static_model):
    return FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model).load()


def _units(doc: str, protector: Protector):
    spans = protector.spans(doc)
    units = split_sentences(doc, spans, MAX_SENTENCE_CHARS)
    return spans, units, count_spans(ApproxTokenCounter(), doc, units)[1]


def _forced(doc: str, units, counts) -> int:
    """Tokens of the units kept whatever the budget (the scorer cannot judge them)."""
    flags = keep_unjudged(doc, units, [False] * len(units))
    return sum(c for c, f in zip(counts, flags, strict=True) if f)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(docs=st.lists(document, min_size=1, max_size=4), rate=st.sampled_from([0.2, 0.33, 0.5]),
       question=word)  # fmt: skip
def test_never_empty_within_budget_protected_spans_whole(compressor, docs, rate, question):
    total = sum(compressor.count_tokens(d) for d in docs)
    target = max(1, round(total * rate))
    result = compressor.compress(docs, question=question, budget=Budget(rate, target))
    units = [_units(d, compressor.protector) for d in docs]
    counts = [c for _, _, cs in units for c in cs]
    if any(counts):
        assert any(t.strip() for t in result.texts), (docs, result.texts)  # never emptied
    # re-joined units count at most their sum (a cut run may join: one token less a join)
    after, biggest, n = result.tokens_after, max(counts, default=0), len(counts)
    forced = sum(_forced(d, us, cs) for d, (_, us, cs) in zip(docs, units, strict=True))
    assert after <= max(target, biggest) + forced, (target, after, counts, forced)
    if after < total - n:  # something was dropped: it did not fit
        assert after >= target - biggest - n, (target, after, counts)
    for (spans, us, _), d in zip(units, docs, strict=True):
        for s, e in spans:  # atomic: no unit boundary inside a protected span
            inside = [(a, b) for a, b in us if a < e and s < b]
            assert len(inside) <= 1 and all(a <= s and e <= b for a, b in inside), (d, s, e)
    for d, o in zip(docs, result.texts, strict=True):  # whole units out, so never longer
        assert len(o.strip()) <= len(d.strip()), (d, o)
