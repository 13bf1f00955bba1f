"""Documents a sentence scorer cannot judge are kept whole, never compressed.

Why: a scorer ranks sentences by the words it knows (BM25 terms, embedding rows). An
8 KB base64 blob, a 3 KB URL or a fenced code block gives it nothing to rank: the
blob was cut into fixed-size pieces and half of them dropped (useless either way), and
"see <3 KB URL>" became "see" (issue 23). Such a document is *opaque* when at least
OPAQUE_SHARE of its non-space characters lie in

- runs of OPAQUE_RUN or more characters without whitespace (base64, URLs, hashes,
  minified JSON, paths), not counting letters of scripts written without spaces
  (Han, kana, Hangul, Thai: their sentences are runs too, and the scorer reads them), or
- fenced code blocks (``` ... ```).

`partition` says which documents go to the compressor; `merge` puts the compressed
ones back between the verbatim ones, in order. Linear in the text (two regex scans).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

OPAQUE_RUN = 32
OPAQUE_SHARE = 0.5
# Thai, CJK symbols and kana, Han, Hangul, compatibility ideographs, full-width forms
_SPACELESS = "\u0e00-\u0e7f\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\uffef"
_RUN = re.compile(rf"[^\s{_SPACELESS}]{{{OPAQUE_RUN},}}")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SPACE = re.compile(r"\s+")


def is_opaque(text: str) -> bool:
    """Whether the scorer has nothing to judge `text` by (module docstring)."""
    solid = len(text) - sum(len(m) for m in _SPACE.findall(text))
    if not solid:
        return False
    covered = _covered([m.span() for m in _FENCE.finditer(text)], text)
    return covered >= OPAQUE_SHARE * solid


def _covered(fences: list[tuple[int, int]], text: str) -> int:
    """Non-space characters inside fences or opaque runs (runs inside fences once)."""
    inside = sum(e - s - len("".join(_SPACE.findall(text, s, e))) for s, e in fences)
    outside, pos = 0, 0
    for start, end in [*fences, (len(text), len(text))]:
        outside += sum(len(m) for m in _RUN.findall(text, pos, start))
        pos = end
    return inside + outside


def partition(texts: Sequence[str]) -> list[int]:
    """Indices of the documents to compress (the others are kept verbatim)."""
    return [i for i, text in enumerate(texts) if not is_opaque(text)]


def merge(texts: Sequence[str], compressed: Sequence[int], new: Sequence[str]) -> list[str]:
    """`texts` with texts[compressed[k]] replaced by new[k]."""
    out = list(texts)
    for i, text in zip(compressed, new, strict=True):
        out[i] = text
    return out
