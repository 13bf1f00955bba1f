r"""Matching a framework's template text against a rendering, word by word.

The template's literal text must appear word for word (a word = a run of
non-whitespace); any whitespace matches any whitespace, so dropped trailing spaces or
extra blank lines still match, a changed instruction does not. Placeholders must be
surrounded by whitespace in the template. A `context` placeholder is greedy (it ends
at the last occurrence of the literal after it: documents may quote the template's
words, e.g. "Question:"), every other placeholder is lazy. Each literal is one compiled
regex (its words, `\s+` between them, on word boundaries) searched in C: the text is
never split into words in Python. Linear, with no backtracking beyond one literal, so
no input can make it slow. Why: docs/decisions/0020-prompt-recognition.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from re import Pattern

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_WORD = re.compile(r"\S+")
_LEADING_SPACE = re.compile(r"\s*")

Words = tuple[str, ...]


@dataclass(frozen=True)
class WordTemplate:
    literals: tuple[Words, ...]  # one more than groups: literal, group, literal, ...
    groups: tuple[str, ...]
    patterns: tuple[Pattern[str] | None, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # compiled once, with the template
        object.__setattr__(self, "patterns", tuple(_pattern(w) for w in self.literals))


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
    bounds = _bounds(template, text, preamble)
    if bounds is None:
        return None
    pairs = zip(template.groups, bounds, strict=True)
    return {group: _stripped(text, a, b) for group, (a, b) in pairs}


def _may_match(prefix: Words, text: str, preamble: Words) -> bool:
    """Cheap rejection before any scan of the whole text."""
    if not prefix:
        return True
    if preamble:
        return prefix[0] in text
    first = _WORD.search(text)
    return first is not None and first.group() == prefix[0]


def _bounds(template: WordTemplate, text: str, preamble: Words) -> list[tuple[int, int]] | None:
    """Each group's character bounds between the literals around it."""
    found = template.patterns
    lo = _after_prefix(text, found[0], _pattern(preamble) if preamble else None)
    hi = _suffix_start(text, template.literals[-1], lo)
    if lo is None or hi is None:
        return None
    bounds = []
    for group, pattern in zip(template.groups[:-1], found[1:-1], strict=True):
        at = _find(text, pattern, lo, hi, last=group == "context")
        if at is None:
            return None
        bounds.append((lo, at[0]))
        lo = at[1]
    bounds.append((lo, hi))
    return bounds


def _after_prefix(text: str, prefix: Pattern[str] | None, preamble: Pattern[str] | None):
    """Where the text after the template's leading literal starts (None: no match)."""
    if prefix is None:
        return 0
    head = _LEADING_SPACE.match(text).end()  # type: ignore[union-attr]
    if (m := prefix.match(text, head)) is not None:
        return m.end()
    if preamble is None or (m := prefix.search(text)) is None:
        return None
    return m.end() if preamble.search(text, 0, m.start()) is not None else None


def _suffix_start(text: str, suffix: Words, lo: int | None) -> int | None:
    """Where the template's trailing literal starts, the text's last words (None: not
    there, or before `lo`). rsplit reads only those words from the right, in C."""
    if lo is None or not suffix:
        return None if lo is None else len(text)
    tail = text.rstrip()
    parts = tail.rsplit(None, len(suffix))
    if tuple(parts[-len(suffix) :]) != suffix:
        return None
    head = len(parts[0]) if len(parts) > len(suffix) else 0  # head: tail[:head], as is
    start = _WORD.search(tail, head).start()  # type: ignore[union-attr]
    return start if start >= lo else None


def _find(text: str, pattern: Pattern[str] | None, lo: int, hi: int, *, last: bool):
    """Character span of the first (or last) occurrence of a literal in text[lo:hi]."""
    if pattern is None:  # an empty literal: where the group ends
        return (hi, hi) if last else (lo, lo)
    if not last:
        m = pattern.search(text, lo, hi)
        return None if m is None else m.span()
    found, m = None, pattern.search(text, lo, hi)
    while m is not None:  # from each start + 1: overlapping occurrences count too
        found, m = m, pattern.search(text, m.start() + 1, hi)
    return None if found is None else found.span()


def _stripped(text: str, a: int, b: int) -> tuple[int, int]:
    """text[a:b] without its surrounding whitespace; empty: where the next word starts."""
    start = _WORD.search(text, a)
    begin = len(text) if start is None else start.start()
    if begin >= b:
        return begin, begin
    return begin, begin + len(text[begin:b].rstrip())


def _pattern(words: Words) -> Pattern[str] | None:
    """The literal's words with any whitespace between them, on word boundaries."""
    if not words:
        return None
    return re.compile(r"(?<!\S)" + r"\s+".join(map(re.escape, words)) + r"(?!\S)")


def _check_spacing(text: str, match: re.Match[str]) -> None:
    before = text[match.start() - 1 : match.start()]
    after = text[match.end() : match.end() + 1]
    if before.strip() or after.strip():
        raise ValueError(f"placeholder {match.group(0)!r} must be surrounded by whitespace")
