"""Grow a stable compressed form so that it answers a new question, keeping its bytes.

A follow-up over the same documents reuses the compressed form sent before byte for
byte (proxy/compression/stable.py), so that it hits vLLM's prefix cache; but the form was
selected for the earlier questions and may lack what the new one needs. So the new
question's own selection (`fresh`, the compressor's output for it) is compared with the
form, sentence by sentence, and what the form lacks is added AT THE END of its last
document (why there: docs/decisions/0015-prefix-cache-reuse.md):

- every byte of the form before that point is unchanged, so vLLM still serves the whole
  form from its cache and prefills only the added sentences (and what follows the
  documents: the conversation, the question);
- an added sentence keeps its document's identity: the sentences of one document go
  together under a marker that names it, `[document 3]`, 1-based in the context's
  order (~4 tokens a group, all in the uncached tail).

A sentence is present when the form holds it as a whole sentence (set membership of
the form's sentence spans: its own document's form text, or its document's group in
the tail), never as a substring: "Approved by the city council." is not present
inside another document's "Not approved by the city council.". A sentence the re-split
of the form does not give back exactly is added again: a duplicate, never a loss.

What was sent therefore holds every sentence the compressor selected for the question
(the union of all questions' selections), so the form never keeps less for a question
than compressing for that question alone would.
Sentences are the compressor's units (compressors/sentences.py); for a compressor
that does not cut at sentences (LLMLingua-2 drops words) a "sentence" of its output is
rarely found verbatim, so the form grows by most of that output: correct, but reuse
pays little, and the gate prices it (proxy/compression/stable.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from compressors.sentences import split_sentences

SEPARATOR = "\n"  # between the last document's text and each group added after it


@dataclass(frozen=True)
class Sentences:
    """A text's sentences (compressors/sentences.py), in order and as a set."""

    ordered: tuple[str, ...]
    present: frozenset[str]


def sentences_of(text: str) -> Sentences:
    ordered = tuple(text[a:b] for a, b in split_sentences(text))
    return Sentences(ordered, frozenset(ordered))


Reader = Callable[[str], Sentences]
_MARKER = re.compile(r"\n\[document (\d+)\] ")


def marker(index: int) -> str:
    """The line that opens document `index`'s (0-based) group of added sentences."""
    return f"{SEPARATOR}[document {index + 1}] "


@dataclass(frozen=True)
class Growth:
    """`texts`: the form's texts, the last non-empty one extended by `added` sentences
    (`texts` is the form itself, the same objects, when `added` is 0)."""

    texts: tuple[str, ...]
    added: int
    added_chars: int


def missing_sentences(
    form: Sequence[str], fresh: Sequence[str], read: Reader = sentences_of
) -> list[list[str]]:
    """Per document, the sentences of its `fresh` text the form lacks as sentences (in
    its own form text or its group of added ones), in order, each once. `read`: the
    sentences of a text (a memo of `sentences_of`: cache/analysis.py), the fresh texts'
    too: a document's selection repeats across questions
    (docs/decisions/0001-request-path-at-gpu-speed.md)."""
    if len(form) != len(fresh):
        raise ValueError(f"{len(fresh)} fresh texts for {len(form)} form texts")
    present = _present(form, read)
    missing: list[list[str]] = []
    for held, new, old in zip(present, fresh, form, strict=True):
        if new == old:  # the question selected what the form holds: nothing to read
            missing.append([])
            continue
        missing.append([s for s in dict.fromkeys(read(new).ordered) if s not in held])
    return missing


def grow(form: Sequence[str], fresh: Sequence[str], read: Reader = sentences_of) -> Growth:
    """`form` with the sentences of `fresh` it lacks appended after its last document,
    grouped under their documents' markers."""
    missing = missing_sentences(form, fresh, read)
    added = sum(map(len, missing))
    if not added:
        return Growth(tuple(form), 0, 0)
    last = _last_nonempty(form)
    texts = list(form)
    if last is None:  # an empty form (nothing kept): each document takes its own
        for i, lacking in enumerate(missing):
            texts[i] = " ".join(lacking)
        return Growth(tuple(texts), added, sum(map(len, texts)))
    addition = "".join(
        marker(i) + " ".join(lacking) for i, lacking in enumerate(missing) if lacking
    )
    texts[last] = texts[last] + addition  # every earlier byte kept
    return Growth(tuple(texts), added, len(addition))


def own_length(text: str) -> int:
    """How much of a form's text is its own: the characters before its first group of
    added sentences (all of them when it has none). Growth only appends, so this part,
    and every byte before it, stays the same across a form's generations."""
    found = _MARKER.search(text)
    return found.start() if found else len(text)


def _present(form: Sequence[str], read: Reader) -> list[frozenset[str]]:
    """Each document's sentences in the form: its own text's, and its added group's
    (parsed back from the last non-empty text's markers)."""
    own = list(form)
    groups: list[list[str]] = [[] for _ in form]
    last = _last_nonempty(form)
    if last is not None:
        parts = _MARKER.split(form[last])
        own[last] = parts[0]
        for number, group in zip(parts[1::2], parts[2::2], strict=True):
            index = int(number) - 1
            if 0 <= index < len(form):
                groups[index].append(group)
    return [
        read(text).present.union(*(read(g).present for g in extra)) if extra else read(text).present
        for text, extra in zip(own, groups, strict=True)
    ]  # a document without added sentences: its own set as read, no copy


def _last_nonempty(texts: Sequence[str]) -> int | None:
    return next((i for i in range(len(texts) - 1, -1, -1) if texts[i].strip()), None)
