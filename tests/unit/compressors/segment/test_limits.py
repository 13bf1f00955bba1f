"""Hostile inputs stay linear: segmentation runs on the request path."""

import time

import pytest

from compressors.segment import apply_prompt
from tests.unit.compressors.segment.support import segment_chat, segment_prompt

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
