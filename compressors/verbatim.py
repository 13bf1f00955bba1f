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
ones back between the verbatim ones, in order. Linear in the text (~20 ms per MB of
prose: str.split in C, Python only for the rare words of OPAQUE_RUN characters); the
compress stage runs it in a thread for big contexts.
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


def is_opaque(text: str) -> bool:
    """Whether the scorer has nothing to judge `text` by (module docstring)."""
    solid = covered = pos = 0  # non-space characters; those in fences or opaque runs
    for start, end in [*(m.span() for m in _FENCE.finditer(text)), (len(text), len(text))]:
        words = text[pos:start].split()  # C: only the rare long words go through Python
        solid += sum(map(len, words))
        covered += sum(sum(map(len, _RUN.findall(w))) for w in words if len(w) >= OPAQUE_RUN)
        fenced = sum(map(len, text[start:end].split()))
        solid, covered, pos = solid + fenced, covered + fenced, end
    return solid > 0 and covered >= OPAQUE_SHARE * solid


def partition(texts: Sequence[str]) -> list[int]:
    """Indices of the documents to compress (the others are kept verbatim)."""
    return [i for i, text in enumerate(texts) if not is_opaque(text)]


def merge(texts: Sequence[str], compressed: Sequence[int], new: Sequence[str]) -> list[str]:
    """`texts` with texts[compressed[k]] replaced by new[k]."""
    out = list(texts)
    for i, text in zip(compressed, new, strict=True):
        out[i] = text
    return out
