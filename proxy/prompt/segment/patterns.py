"""Recogniser 4: regular expressions from settings.

Each pattern is compiled with re.DOTALL and must have a named group `context`; an
optional group `question` gives the question (else: the last user message minus the
documents, or "" for a completion). Patterns are tried in order, each on every
message in order (`re.search`) but assistant turns (messages.CONTEXT_ROLES); the
first match wins. The context is split into documents on blank lines. Template name:
"pattern:<index>". They are compiled once, when the Segmenter is built at start-up: a
pattern without a `context` group stops ragtrim there with a ValueError, not on the
first request.

An operator's pattern can backtrack without limit (`(?P<context>(a+)+$)` on a long
run of "a"), so the patterns run on the `regex` engine (Python's `re` syntax, VERSION0)
with a time limit shared by every search of one request (`timeout`, seconds; settings:
`compression.limits.pattern_timeout_ms`). Past it, PatternTimeout ends the search: the
segment stage fails open (counted), and the request is forwarded unsegmented.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import regex

from proxy.prompt.segment.explicit import fallback_question
from proxy.prompt.segment.messages import context_texts
from proxy.prompt.segment.model import Segmentation
from proxy.prompt.segment.split import split_documents

DEFAULT_TIMEOUT_S = 0.05


class PatternTimeout(Exception):  # noqa: N818 - reads as what happened
    """The operator patterns ran past their time limit on one request."""


def compile_pattern(source: str) -> regex.Pattern:
    pattern = regex.compile(source, regex.DOTALL | regex.VERSION0)
    if "context" not in pattern.groupindex:
        raise ValueError(f"pattern {source!r} has no named group 'context'")
    return pattern


@dataclass(frozen=True)
class Patterns:
    patterns: tuple[regex.Pattern, ...] = ()
    timeout: float = DEFAULT_TIMEOUT_S

    @classmethod
    def compile(cls, sources: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> Patterns:
        return cls(tuple(compile_pattern(source) for source in sources), timeout)

    def match_chat(self, messages: Sequence[Any]) -> Segmentation | None:
        return self._match(list(enumerate(context_texts(messages))), messages)

    def match_prompt(self, prompt: str) -> Segmentation | None:
        return self._match([(None, prompt)], ())

    def _match(
        self, sources: Sequence[tuple[int | None, str | None]], messages: Sequence[Any]
    ) -> Segmentation | None:
        deadline = time.monotonic() + self.timeout
        for index, pattern in enumerate(self.patterns):
            for message, text in sources:
                match = _search(pattern, text, deadline) if text is not None else None
                if match:
                    return _segmentation(f"pattern:{index}", match, message, messages)
        return None


def _search(pattern: regex.Pattern, text: str, deadline: float):
    left = deadline - time.monotonic()
    try:
        if left <= 0:
            raise TimeoutError
        return pattern.search(text, timeout=left, concurrent=True)  # the GIL released
    except TimeoutError as exc:
        raise PatternTimeout(f"segmentation patterns ran past {deadline}") from exc


def _segmentation(
    name: str, match: regex.Match, message: int | None, messages: Sequence[Any]
) -> Segmentation:
    start, end = match.span("context")
    documents = split_documents(match.string, start, end, message)
    has_question = "question" in match.re.groupindex and match.start("question") >= 0
    if has_question:
        question = match.group("question").strip()
        at = min(start, match.start("question"))
    else:
        question = fallback_question(messages, documents)
        at = start
    return Segmentation(name, documents, question, (message, at))
