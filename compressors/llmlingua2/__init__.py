"""llmlingua2: the LLMLingua-2 compressor and its model-free word rule.

Why a package: the word rule (words.py: llmlingua's chunking, token → word merging and
keep threshold, with `WordChunker`, named apart from the prompt `Segmenter` of
proxy/prompt/segment) serves only this compressor (compressor.py), so it lives beside it
(issue 21, "packages cut by concept"). Consumers import `LLMLingua2Compressor` from
`compressors` (the face).
"""

from compressors.llmlingua2.compressor import LLMLingua2Compressor

__all__ = ["LLMLingua2Compressor"]
