"""Per-document analyses (cache/analysis.py): once per (kind, tenant, text), by tenant,
under a byte cap, from several threads."""

import threading

from cache.analysis import DocumentAnalyses, analysis_key, document_digest, document_names
from compressors.sentences import split_sentences


class Counted:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, text):
        self.calls += 1
        return self.fn(text)


def test_each_text_is_analysed_once_and_the_result_is_the_same():
    memo, split = DocumentAnalyses(), Counted(split_sentences)
    text = "The river rises in spring. It floods the mills. Nobody minds."
    first = memo.get("sentences", "acme", text, split)
    assert first == split_sentences(text) and split.calls == 1
    for _ in range(5):
        assert memo.get("sentences", "acme", text, split) is first
    assert split.calls == 1 and (memo.hits, memo.misses) == (5, 1)
    memo.get("sentences", "acme", text + " More.", split)  # other bytes: analysed
    memo.get("opaque", "acme", text, split)  # another kind of analysis: its own entry
    assert split.calls == 3


def test_a_tenant_never_gets_another_tenants_analysis():
    """A hit is faster than a miss: a shared entry would tell beta that acme sent it."""
    memo, split = DocumentAnalyses(), Counted(split_sentences)
    memo.get("sentences", "acme", "Secret plan. Two sentences.", split)
    memo.get("sentences", "beta", "Secret plan. Two sentences.", split)
    assert split.calls == 2
    a, b = (analysis_key("sentences", t, "x") for t in ("acme", "beta"))
    owner = memo.order.owner
    assert a != b and owner(a) and owner(a) != owner(b)  # shared fairly by tenant


def test_the_byte_cap_holds():
    memo = DocumentAnalyses(max_bytes=20_000)
    for i in range(500):
        memo.get("sentences", "acme", f"Sentence {i}. Another one {i}.", split_sentences)
    assert memo.order.total <= 20_000 and 0 < len(memo) < 500


def test_threads_share_it_safely():
    memo, errors = DocumentAnalyses(max_bytes=50_000), []

    def work(k):
        try:
            for i in range(300):
                text = f"Doc {i % 40}. Thread {k % 2}."
                assert memo.get("sentences", "t", text, split_sentences) == split_sentences(text)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and memo.order.total <= 50_000


def test_a_digest_is_charged_as_itself_and_the_text_its_key_holds():
    """The key holds the document (charged once); a digest result is 64 characters, not
    pieces of the text."""
    memo, text = DocumentAnalyses(), "x" * 10_000
    memo.get("digest", "t", text, document_digest)
    memo.get("sentences", "t", text, split_sentences)
    digest, sentences = (
        memo.order.size(analysis_key(k, "t", text)) for k in ("digest", "sentences")
    )
    assert 10_000 < digest < 10_500 and sentences > 2 * 10_000


def test_a_sets_names_are_one_lookup_and_a_new_set_reuses_its_seen_documents():
    analyses = DocumentAnalyses()
    docs = [f"document {i} " * 50 for i in range(5)]
    names = document_names(analyses, "t", docs)
    assert names == [document_digest(d) for d in docs] == document_names(None, "t", docs)
    hits = analyses.hits
    assert document_names(analyses, "t", list(docs)) == names and analyses.hits == hits + 1
    misses = analyses.misses
    other = document_names(analyses, "t", docs[1:] + ["a new one"])
    assert other == names[1:] + [document_digest("a new one")]
    assert analyses.misses == misses + 2  # the set, and its one new document
    assert document_names(analyses, "u", docs) == names and analyses.misses == misses + 8


def test_each_is_one_lookup_for_a_recurring_set_and_per_text_for_a_new_one():
    memo, calls = DocumentAnalyses(), []

    def length(text):
        calls.append(text)
        return len(text)

    assert memo.each("len", "t", ["ab", "abc"], length) == (2, 3)
    hits = memo.hits
    assert memo.each("len", "t", ["ab", "abc"], length) == (2, 3) and memo.hits == hits + 1
    assert memo.each("len", "t", ["abc", "abcd"], length) == (3, 4)
    assert calls == ["ab", "abc", "abcd"]  # "abc" was computed once, for the first set
    assert memo.each("len", "u", ["ab"], length) == (2,) and calls[-1] == "ab"  # per tenant
