"""Regex patterns from settings."""

import pytest

from proxy.prompt.segment import apply_chat, apply_prompt
from tests.support.segmenting import segment_chat, segment_prompt

DOCS = (
    "PostgreSQL uses MVCC so readers never block writers.",
    "VACUUM reclaims space held by dead tuples.",
    "Autovacuum runs VACUUM and ANALYZE automatically.",
)
QUESTION = "Why does PostgreSQL need VACUUM?"
PATTERN = r"### Sources\n(?P<context>.*?)\n### End\n(?:Q: (?P<question>[^\n]*))?"
HEAD = "You are a DBA assistant.\n### Sources\n"


def render(docs=DOCS, question=QUESTION) -> str:
    tail = f"Q: {question}" if question else ""
    return HEAD + "\n\n".join(docs) + "\n### End\n" + tail


def test_prompt_with_question_group():
    prompt = render()
    seg = segment_prompt(prompt, patterns=[PATTERN])
    assert seg.template == "pattern:0"
    assert [d.text for d in seg.documents] == list(DOCS)
    assert seg.question == QUESTION
    assert prompt[: seg.static_end[1]] == HEAD
    assert apply_prompt(prompt, seg, DOCS) == prompt
    assert apply_prompt(prompt, seg, ["a", "b", "c"]) == render(("a", "b", "c"))


def test_chat_without_question_uses_the_last_user_message():
    messages = [
        {"role": "system", "content": render(question="")},
        {"role": "user", "content": QUESTION},
    ]
    seg = segment_chat(messages, patterns=["no match (?P<context>x)", PATTERN])
    assert seg.template == "pattern:1"
    assert seg.question == QUESTION
    assert seg.static_end == (0, len(HEAD))
    out = apply_chat(messages, seg, ["a", "b", "c"])
    assert out == [{"role": "system", "content": render(("a", "b", "c"), "")}, messages[1]]


def test_templates_win_over_patterns():
    prompt = "Context information is below.\n---------------------\nd\n---------------------\n"
    prompt += "Given the context information and not prior knowledge, answer the query.\n"
    prompt += "Query: q\nAnswer: "
    assert segment_prompt(prompt, patterns=[r"(?P<context>.*)"]).template == "llamaindex_text_qa"


def test_pattern_without_context_group_is_an_error():
    with pytest.raises(ValueError, match="context"):
        segment_prompt("anything", patterns=[r"(?P<question>.*)"])


def test_no_pattern_matches():
    assert segment_prompt(render(), patterns=[r"nope(?P<context>.*)"]) is None


def test_patterns_never_match_inside_an_assistant_turn():
    """Issue 33: a reply that quoted the context matched first and was rewritten."""
    pattern = [r"DOCS:(?P<context>.*?)END"]
    messages = [
        {"role": "assistant", "content": "Earlier: DOCS: quoted text END"},
        {"role": "user", "content": "DOCS: real context END Why?"},
    ]
    seg = segment_chat(messages, patterns=pattern)
    assert [(d.message, d.text) for d in seg.documents] == [(1, "real context")]
    assert segment_chat(messages[:1], patterns=pattern) is None
