"""Segmenter: tries the recognisers in THE order; the first match wins.

    1. body field  the request's `ragtrim` field names the documents (body_field.py)
    2. tags        <ragtrim:doc> markers in the text (tags.py)
    3. framework   default RAG templates of LangChain, LlamaIndex and Haystack, from
                   their exact texts (frameworks.toml, framework.py)
    4. patterns    operator regexes from settings (patterns.py)

Built once, in the composition root: the framework texts are parsed and the patterns
compiled at start-up, so a request pays for matching only and a bad pattern stops
ragtrim before it serves. Only the body field is per request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from proxy.prompt.segment.body_field import BodyField
from proxy.prompt.segment.framework import FrameworkTemplate
from proxy.prompt.segment.frameworks import load_frameworks
from proxy.prompt.segment.model import Segmentation
from proxy.prompt.segment.patterns import DEFAULT_TIMEOUT_S, Patterns
from proxy.prompt.segment.tags import Tags


class Recogniser(Protocol):
    """A recogniser is two methods: each returns a Segmentation, or None for no match."""

    def match_chat(self, messages: Sequence[Any]) -> Segmentation | None: ...

    def match_prompt(self, prompt: str) -> Segmentation | None: ...


Match = Callable[[Recogniser], Segmentation | None]


class Segmenter:
    def __init__(
        self,
        patterns: Sequence[str] = (),
        frameworks: Sequence[FrameworkTemplate] | None = None,
        pattern_timeout: float = DEFAULT_TIMEOUT_S,
    ):
        chosen = load_frameworks() if frameworks is None else tuple(frameworks)
        found = Patterns.compile(patterns, pattern_timeout)
        self.recognisers: tuple[Recogniser, ...] = (Tags(), *chosen, found)

    def _order(self, body_field: dict | None) -> Sequence[Recogniser]:
        if body_field is None:
            return self.recognisers
        return (BodyField(body_field), *self.recognisers)

    def chat(self, messages: Sequence[Any], body_field: dict | None = None) -> Segmentation | None:
        return self._first(body_field, lambda recogniser: recogniser.match_chat(messages))

    def prompt(self, prompt: str, body_field: dict | None = None) -> Segmentation | None:
        return self._first(body_field, lambda recogniser: recogniser.match_prompt(prompt))

    def _first(self, body_field: dict | None, match: Match) -> Segmentation | None:
        """The first recogniser's match, in THE order; None when none matches."""
        for recogniser in self._order(body_field):
            seg = match(recogniser)
            if seg is not None:
                return seg
        return None
