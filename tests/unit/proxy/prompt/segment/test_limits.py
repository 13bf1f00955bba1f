"""Hostile inputs stay linear: segmentation runs on the request path."""

import time

import pytest

from proxy.prompt.segment import Segmenter, apply_prompt
from proxy.prompt.segment.patterns import PatternTimeout
from tests.support.segmenting import segment_chat, segment_prompt

STUFF_HEAD = (
    "Use the following pieces of context to answer the question at the end. If you don't "
    "know the answer, just say that you don't know, don't try to make up an answer.\n\n"
)
RAG_HEAD = (
    "You are an assistant for question-answering tasks. Use the following pieces of retrieved "
    "context to answer the question. If you don't know the answer, just say that you don't "
    "know. Use three sentences maximum and keep the answer concise.\nQuestion: "
)
N = 100_000  # a backtracking template regex needed ~10 s for 200 blank lines


@pytest.mark.parametrize(
    "prompt",
    [
        STUFF_HEAD + "\n" * N + "x",
        STUFF_HEAD + "Question: " * N,
        RAG_HEAD + "q\nContext: " + " \n" * N + "x",
        "<ragtrim:doc>" * N,
        "<ragtrim:question>" * (N // 4) + "<ragtrim:doc>x</ragtrim:doc>",
        "<ragtrim:doc>x</ragtrim:doc><ragtrim:question>" * (N // 10),
    ],
    ids=["blank-lines", "question-words", "whitespace-run", "unclosed", "markers", "many-tags"],
)
def test_pathological_prompts_are_fast(prompt):
    started = time.perf_counter()
    seg = segment_prompt(prompt)
    if seg is not None:
        apply_prompt(prompt, seg, [d.text for d in seg.documents])
    assert time.perf_counter() - started < 5.0  # generous: a quadratic scan takes minutes here


def test_huge_system_message_without_a_template_is_fast():
    messages = [{"role": "system", "content": "\n\n" * N}, {"role": "user", "content": "q"}]
    started = time.perf_counter()
    assert segment_chat(messages) is None
    assert time.perf_counter() - started < 5.0  # generous: a quadratic scan takes minutes here


# -- issue 23: the request's ragtrim field and operator patterns ---------------------------


def test_locating_absent_documents_is_linear():
    """20,000 documents not in a 2 MB prompt took 23.5 s (documents × prompt length)."""
    prompt = "x" * 2_000_000
    docs = [f"document {i} is not in the prompt" for i in range(20_000)]
    started = time.perf_counter()
    assert segment_prompt(prompt, body_field={"documents": docs}) is None
    assert time.perf_counter() - started < 1.0


def test_located_documents_in_order_still_found_after_absent_ones():
    docs = [f"doc-{i}" for i in range(2000)]
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": " ".join(docs)}]
    field = {"documents": ["absent"] * 3 + docs, "question": "q"}
    seg = segment_chat(messages, body_field=field)
    assert seg is not None and [d.text for d in seg.documents] == docs


def test_a_backtracking_operator_pattern_stops_at_its_time_limit():
    segmenter = Segmenter([r"(?P<context>(a|aa)+$)"], pattern_timeout=0.05)
    started = time.perf_counter()
    with pytest.raises(PatternTimeout):
        segmenter.prompt("a" * 5000 + "b")
    assert time.perf_counter() - started < 1.0
    assert Segmenter([r"DOCS:(?P<context>.*)"]).prompt("DOCS: one\n\ntwo") is not None
