"""Grow a stable compressed form so that it answers a new question, keeping its bytes.

Why (issue 29): a follow-up over the same documents must hit vLLM's prefix cache on
the compressed form sent before (proxy/compression/stable.py reuses it byte for byte), yet
the form was selected for the earlier questions and may lack what the new one needs.
Selecting afresh for each question rewrote the documents every turn: no prefix hit
past the static prefix, follow-ups ×3.9 slower than direct. So the new question's own
selection (`fresh`, the compressor's output for it) is compared with the form, sentence
by sentence, and what the form lacks is added AT THE END of its last document:

- every byte of the form before that point is unchanged, so vLLM still serves the whole
  form from its cache and prefills only the added sentences (and what follows the
  documents: the conversation, the question), a few dozen tokens;
- added in place instead (each sentence inside its own document) would change the
  bytes from the first document that gained one, and every block after it misses:
  about half the form on average, several hundred tokens;
- the cost of the end: an added sentence sits after the last document instead of in
  its own, so a sentence that names its source only through its document's position
  loses that link. Extractive compression already cuts a sentence from its neighbours,
  and documents that carry their source in their text keep it: the added sentence
  comes with no source line. The README says so (Differences from vLLM).

What was sent therefore holds every sentence the compressor selected for the question
(the union of all questions' selections), so the form never keeps less for a question
than compressing for that question alone would. A sentence is looked for as text, in
its own document's form text or in the last one (where earlier growth put it).
Sentences are the compressor's units (compressors/sentences.py); for a compressor
that does not cut at sentences (LLMLingua-2 drops words) a "sentence" of its output is
rarely found verbatim, so the form grows by most of that output: correct, but reuse
pays little, and the gate prices it (proxy/compression/stable.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from compressors.sentences import split_sentences

SEPARATOR = "\n"  # between the last document's text and what is added after it


@dataclass(frozen=True)
class Growth:
    """`texts`: the form's texts, the last non-empty one extended by `added` sentences
    (`texts` is the form itself, the same objects, when `added` is 0)."""

    texts: tuple[str, ...]
    added: int
    added_chars: int


def missing_sentences(form: Sequence[str], fresh: Sequence[str]) -> list[str]:
    """The sentences of `fresh` (per document) found neither in that document's form
    text nor in the form's last non-empty text, in document order, each once."""
    if len(form) != len(fresh):
        raise ValueError(f"{len(fresh)} fresh texts for {len(form)} form texts")
    last = _last_nonempty(form)
    tail = form[last] if last is not None else ""
    missing: list[str] = []
    for own, new in zip(form, fresh, strict=True):
        for start, end in split_sentences(new):
            sentence = new[start:end]
            if sentence not in own and sentence not in tail and sentence not in missing:
                missing.append(sentence)
    return missing


def grow(form: Sequence[str], fresh: Sequence[str]) -> Growth:
    """`form` with the sentences of `fresh` it lacks appended to its last document."""
    missing = missing_sentences(form, fresh)
    if not missing:
        return Growth(tuple(form), 0, 0)
    last = _last_nonempty(form)
    texts = list(form)
    addition = " ".join(missing)
    if last is None:  # an empty form (nothing kept): the additions are the first text
        texts[0] = addition
    else:
        texts[last] = texts[last] + SEPARATOR + addition  # every earlier byte kept
    return Growth(tuple(texts), len(missing), len(addition))


def _last_nonempty(texts: Sequence[str]) -> int | None:
    return next((i for i in range(len(texts) - 1, -1, -1) if texts[i].strip()), None)
