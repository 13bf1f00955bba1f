"""Where a tokenizer's tokens may be cut into chunks: positions its own
pre-tokenization always cuts at, where its normalization is local (_chunked_tokens.py).

Read from the tokenizer's own configuration (`Tokenizer.to_str()`):

- BERT WordPiece (`BertNormalizer`, `BertPreTokenizer`): it splits at every whitespace
  character and isolates every punctuation character, so a chunk is a run between spaces,
  tabs, CR, LF and ASCII punctuation, or one ASCII punctuation character, each with the
  whitespace before it; a lowercasing normalizer lets an ASCII chunk be looked up
  lowercased (same length, same offsets);
- byte-level BPE with no normalizer (GPT-2's `ByteLevel` regex, or a `Split` with
  Llama-3's or Qwen2's regex before a `ByteLevel` without one): none of those regexes'
  pieces holds a non-space followed by a space, nor an ASCII letter followed by ASCII
  punctuation, so a chunk starts at each single space between two non-spaces and at
  ASCII punctuation after an ASCII letter;
- anything else (SentencePiece, normalizers that are not local, an unknown regex): none.

`SAMPLE` is the text a ChunkedTokenizer checks its rule on at start-up.
"""

from __future__ import annotations

import json
import re

_ASCII_PUNCT = r"!-/:-@\[-`{-~"
PUNCT_SET = frozenset(chr(c) for c in range(33, 127) if not chr(c).isalnum())
# every character belongs to one piece: a word or a punctuation character with the
# whitespace before it (which holds no token), or the whitespace that ends a text
BERT_CHUNK = re.compile(rf"[ \t\n\r]*(?:[^ \t\n\r{_ASCII_PUNCT}]+|[{_ASCII_PUNCT}])|[ \t\n\r]+")
# a chunk starts at a space between two non-spaces, or at ASCII punctuation after an ASCII
# letter (no regex below has a piece that holds either pair)
_SPACE_BODY = rf"[^ {_ASCII_PUNCT}]|(?<![A-Za-z])[{_ASCII_PUNCT}]| (?!\S)|(?<!\S) "
_SPACE_CHUNK = re.compile(rf"(?: (?=\S)|[{_ASCII_PUNCT}])(?:{_SPACE_BODY})*|(?:{_SPACE_BODY})+")
LETTER = " a"  # put before a chunk that starts with punctuation, when joining chunks
KNOWN_SPLITS = (  # pre-tokenizer regexes whose pieces never hold "non-space, space"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
    r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",  # Llama-3
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
    r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",  # Qwen2
)
SAMPLE = (
    "Hello, world!  It's 3:45pm on 2024-05-06 (UTC); isn't it?\n\nNaïve café — "
    "résumé\tvs.  RÉSUMÉ... [1] $12,345.67 50% e.g. C++ x=y+1 'quoted' \"double\"\n"
    " leading space\r\n東京タワー는 한국어 😀 emoji  \u00a0nbsp don’t WE'LL ok.  end "
)


def config_of(tokenizer) -> dict:
    """The parts of a tokenizer's configuration the cut rules read (its whole JSON, with
    the vocabulary, takes a quarter second to parse)."""

    def part(component) -> dict | None:
        return None if component is None else json.loads(component.__getstate__())

    return {
        "normalizer": part(tokenizer.normalizer),
        "pre_tokenizer": part(tokenizer.pre_tokenizer),
        "model": {"type": type(tokenizer.model).__name__},
    }


def rule(config: dict) -> tuple[re.Pattern | None, bool]:
    """The chunk regex for a tokenizer's configuration (None: no safe chunks), and
    whether an ASCII text may be looked up lowercased."""
    normalizer, pre = config.get("normalizer"), config.get("pre_tokenizer") or {}
    model = (config.get("model") or {}).get("type")
    bert = normalizer is None or normalizer.get("type") == "BertNormalizer"
    if model == "WordPiece" and pre.get("type") == "BertPreTokenizer" and bert:
        return BERT_CHUNK, bool(normalizer and normalizer.get("lowercase"))
    if model == "BPE" and normalizer is None and _byte_level_regex(pre):
        return _SPACE_CHUNK, False
    return None, False


def _byte_level_regex(pre: dict) -> bool:
    if pre.get("type") == "ByteLevel":
        return pre.get("use_regex", True) and not pre.get("add_prefix_space", False)
    steps = pre.get("pretokenizers") or []
    if pre.get("type") != "Sequence" or len(steps) != 2:
        return False
    split, level = steps
    return (
        split.get("type") == "Split"
        and (split.get("pattern") or {}).get("Regex") in KNOWN_SPLITS
        and split.get("behavior") == "Isolated"
        and not split.get("invert", False)
        and level.get("type") == "ByteLevel"
        and not level.get("use_regex", True)
        and not level.get("add_prefix_space", False)
    )


def before(chunks: re.Pattern, chunk: str) -> str | None:
    """What to put before `chunk` in a text of joined chunks so that its start is a cut
    and its end is one too (None: it cannot be joined)."""
    if chunks is BERT_CHUNK:
        return " "
    if chunk[-1].isspace():
        return None
    if chunk[0] == " ":
        return ""  # a space, then a non-space: the space rule's first cut
    return LETTER if chunk[0] in PUNCT_SET else None
