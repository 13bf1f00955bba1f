"""Template matching in C scans (proxy/prompt/segment/words.py) finds exactly what the
word-by-word scan it replaced found (issue 43): the reference below is that scan, kept
as the specification, and both run on random renderings with quoted template words,
odd whitespace, preambles and cut texts."""

import random
import re

import pytest

from proxy.prompt.segment.words import WordTemplate, match_template, parse_template

_WORD = re.compile(r"\S+")
VOCAB = ["Question:", "Context:", "Answer:", "the", "river", "Helpful", "{x}", "a", "a", "b", "---"]
SPACES = [" ", "  ", "\n", "\n\n", "\t", " \n "]


def reference(template: WordTemplate, text: str, preamble=()):
    spans = [m.span() for m in _WORD.finditer(text)]
    words = [text[a:b] for a, b in spans]
    lits = template.literals
    lo = _after(words, lits[0], preamble)
    hi = len(words) - len(lits[-1])
    if lo is None or hi < lo or tuple(words[hi:]) != lits[-1]:
        return None
    bounds = []
    for group, literal in zip(template.groups[:-1], lits[1:-1], strict=True):
        k = _find(words, literal, lo, hi, group == "context")
        if k is None:
            return None
        bounds.append((lo, k))
        lo = k + len(literal)
    bounds.append((lo, hi))
    out = {}
    for group, (a, b) in zip(template.groups, bounds, strict=True):
        if a < b:
            out[group] = (spans[a][0], spans[b - 1][1])
        else:
            end = spans[b][0] if b < len(spans) else len(text)
            out[group] = (end, end)
    return out


def _after(words, prefix, preamble):
    if tuple(words[: len(prefix)]) == prefix:
        return len(prefix)
    if not preamble:
        return None
    k = _find(words, prefix, 0, len(words), False)
    if k is None or _find(words, preamble, 0, k, False) is None:
        return None
    return k + len(prefix)


def _find(words, target, lo, hi, last):
    starts = range(lo, hi - len(target) + 1)
    for k in reversed(starts) if last else starts:
        if tuple(words[k : k + len(target)]) == tuple(target):
            return k
    return None


TEMPLATES = [
    parse_template("Context: {c} Question: {q} Answer:", context="c", question="q"),
    parse_template("{c}\n\nQuestion: {q}\nHelpful Answer:", context="c", question="q"),
    parse_template("Use the river. ---\n{c}\n---\n{q}", context="c", question="q"),
    parse_template("{q} {c}", question="q", context="c"),
    parse_template("{c} a a {q}", context="c", question="q"),  # overlaps itself: "a a a"
]


def render(rng: random.Random) -> str:
    words = [rng.choice(VOCAB) for _ in range(rng.randint(0, 14))]
    return "".join(w + rng.choice(SPACES) for w in words).lstrip(rng.choice(["", " "]))


@pytest.mark.parametrize("seed", range(4))
def test_the_c_scans_find_what_the_word_scan_found(seed):
    rng, agreed = random.Random(seed), 0
    for _ in range(3000):
        template = rng.choice(TEMPLATES)
        parts = [render(rng)]
        for literal, group in zip(template.literals, [*template.groups, ""], strict=True):
            parts += [rng.choice(SPACES).join(literal), render(rng) if group else ""]
        if rng.random() < 0.3:  # some texts cut or extended: most of those must not match
            parts.append(rng.choice(VOCAB))
        text = rng.choice(SPACES).join(p for p in parts if p)
        preamble = ("the", "river") if rng.random() < 0.3 else ()
        expected = reference(template, text, preamble)
        assert match_template(template, text, preamble) == expected, (template, text)
        agreed += expected is not None
    assert agreed > 500  # the renderings exercise matches, not only rejections
