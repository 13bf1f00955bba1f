"""fast_extractive: the request-path extractive compressor and the helpers only it uses.

The compressor (compressor.py) and, beside it, the private pieces only it uses (why a
package: docs/decisions/0010-compressors-face-and-packages.md):
- bm25.py: BM25 term weights over the request's sentences;
- stopwords.py: which WordPiece ids are content words (BM25's query terms);
- static_embed.py: the static MiniLM embedding (one row per token) and its loader;
- static_distill.py: distilling that model from MiniLM at setup time (torch, once).
Consumers import `FastExtractiveCompressor` from `compressors` (the face).
"""

from compressors.fast_extractive.compressor import FastExtractiveCompressor

__all__ = ["FastExtractiveCompressor"]
