"""llmlingua2: the LLMLingua-2 compressor and its model-free word rule.

The word rule (words.py: llmlingua's chunking, token → word merging and keep threshold,
with `WordChunker`, named apart from the prompt `Segmenter` of proxy/prompt/segment)
serves only this compressor (compressor.py), so it lives beside it (why a package:
docs/decisions/0010-compressors-face-and-packages.md). Consumers import
`LLMLingua2Compressor` from `compressors` (the face).
"""

from compressors.llmlingua2.compressor import LLMLingua2Compressor

__all__ = ["LLMLingua2Compressor"]
