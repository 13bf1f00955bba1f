"""Matching a framework's template text against a rendering, word by word.

The template's literal text must appear word for word (a word = a run of
non-whitespace); any whitespace matches any whitespace, so dropped trailing spaces or
extra blank lines still match, a changed instruction does not. Placeholders must be
surrounded by whitespace in the template. A `context` placeholder is greedy (it ends
at the last occurrence of the literal after it: documents may quote the template's
words, e.g. "Question:"), every other placeholder is lazy. Matching is a linear scan
with no backtracking, so no input can make it slow.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_WORD = re.compile(r"\S+")

Words = tuple[str, ...]


@dataclass(frozen=True)
class WordTemplate:
    literals: tuple[Words, ...]  # one more than groups: literal, group, literal, ...
    groups: tuple[str, ...]


def parse_template(text: str, **groups: str) -> WordTemplate:
    """`groups` maps group name -> placeholder name: parse_template(T, context="context_str")."""
    names = {placeholder: group for group, placeholder in groups.items()}
    literals, found, pos = [], [], 0
    for match in _PLACEHOLDER.finditer(text):
        if match.group(1) not in names:
            raise ValueError(f"unmapped placeholder {match.group(0)!r}")
        _check_spacing(text, match)
        literals.append(tuple(text[pos : match.start()].split()))
        found.append(names[match.group(1)])
        pos = match.end()
    literals.append(tuple(text[pos:].split()))
    return WordTemplate(tuple(literals), tuple(found))


def match_template(
    template: WordTemplate, text: str, preamble: Words = ()
) -> dict[str, tuple[int, int]] | None:
    """Character spans (stripped) of each group, or None. `preamble`: words that may
    precede the template (with anything around them)."""
    if not _may_match(template.literals[0], text, preamble):
        return None
    spans = [m.span() for m in _WORD.finditer(text)]
    words = [text[a:b] for a, b in spans]
    bounds = _word_bounds(template, words, preamble)
    if bounds is None:
        return None
    pairs = zip(template.groups, bounds, strict=True)
    return {group: _char_span(spans, a, b, len(text)) for group, (a, b) in pairs}


def _may_match(prefix: Words, text: str, preamble: Words) -> bool:
    """Cheap rejection before splitting the whole text into words."""
    if not prefix:
        return True
    if preamble:
        return prefix[0] in text
    first = _WORD.search(text)
    return first is not None and first.group() == prefix[0]


def _word_bounds(
    template: WordTemplate, words: list[str], preamble: Words
) -> list[tuple[int, int]] | None:
    lo = _after_prefix(words, template.literals[0], preamble)
    suffix = template.literals[-1]
    hi = len(words) - len(suffix)
    if lo is None or hi < lo or tuple(words[hi:]) != suffix:
        return None
    bounds = []
    for group, literal in zip(template.groups[:-1], template.literals[1:-1], strict=True):
        k = find_words(words, literal, lo, hi, last=group == "context")
        if k is None:
            return None
        bounds.append((lo, k))
        lo = k + len(literal)
    bounds.append((lo, hi))
    return bounds


def _after_prefix(words: list[str], prefix: Words, preamble: Words) -> int | None:
    if tuple(words[: len(prefix)]) == prefix:
        return len(prefix)
    if not preamble:
        return None
    k = find_words(words, prefix, 0, len(words))
    if k is None or find_words(words, preamble, 0, k) is None:
        return None
    return k + len(prefix)


def find_words(
    words: Sequence[str], target: Words, lo: int, hi: int, *, last: bool = False
) -> int | None:
    """Index of the first (or last) occurrence of `target` inside words[lo:hi]."""
    starts = range(lo, hi - len(target) + 1)
    for k in reversed(starts) if last else starts:
        if (not target or words[k] == target[0]) and tuple(words[k : k + len(target)]) == target:
            return k
    return None


def _char_span(spans: list[tuple[int, int]], a: int, b: int, size: int) -> tuple[int, int]:
    if a < b:
        return spans[a][0], spans[b - 1][1]
    end = spans[b][0] if b < len(spans) else size
    return end, end


def _check_spacing(text: str, match: re.Match[str]) -> None:
    before = text[match.start() - 1 : match.start()]
    after = text[match.end() : match.end() + 1]
    if before.strip() or after.strip():
        raise ValueError(f"placeholder {match.group(0)!r} must be surrounded by whitespace")
