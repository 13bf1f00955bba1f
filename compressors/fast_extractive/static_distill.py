"""Distil static token embeddings from a sentence-transformers model (model2vec's recipe).

Why: a transformer forward costs ~300-500 ms per 1k tokens on one CPU core; a static
embedding (one row per vocabulary token, a sentence = the mean of its tokens' rows)
costs a table lookup. model2vec (Tulkens & van Dongen, 2024, github.com/MinishLab/model2vec)
showed that rows distilled from the model itself keep much of its ranking quality.

Recipe, as `model2vec.distill.distill_from_model` 0.10 does it with its defaults:
every vocabulary token runs through the model alone as `[CLS] token [SEP]`; its row is
the mean of the three output vectors; PCA (eigendecomposition of the covariance, signs
fixed by the largest score) to `dims`; each row scaled by the SIF weight
`sif / (sif + p)` with `p` from Zipf's law on the vocabulary rank; stored as float16.
We run it ourselves because `model2vec[distill]` 0.10 pins transformers < 5.4 (the
project runs 5.24); the folder it writes is laid out like a model2vec one
(`model.safetensors` with `embeddings`, `tokenizer.json`, `config.json`).

Every token id keeps its row (no vocabulary pruning), so ids from the model's own
WordPiece tokenizer index the table directly. Imports torch and transformers: used at
setup time (deploy/local/build_static_minilm.py), never on the request path.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

FORMAT = "ragtrim-static-v1"


def token_vectors(model_dir: Path, batch_size: int = 512, limit: int | None = None) -> np.ndarray:
    """Mean output vector of `[CLS] t [SEP]` for every token id t (the first `limit`)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).float().eval()
    size = len(tokenizer) if limit is None else min(limit, len(tokenizer))
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    rows = []
    with torch.inference_mode():
        for start in range(0, size, batch_size):
            ids = torch.arange(start, min(size, start + batch_size))
            batch = torch.stack([torch.full_like(ids, cls), ids, torch.full_like(ids, sep)], dim=1)
            out = model(input_ids=batch, attention_mask=torch.ones_like(batch))
            rows.append(out.last_hidden_state.float().mean(dim=1).numpy())
    return np.nan_to_num(np.concatenate(rows).astype(np.float64))


def pca(x: np.ndarray, dims: int) -> np.ndarray:
    """model2vec's PCA: covariance eigenvectors, largest first, sign by largest score."""
    centred = x - x.mean(axis=0)
    cov = centred.T @ centred / max(1, x.shape[0] - 1)
    _, vectors = np.linalg.eigh(cov)
    components = vectors[:, ::-1][:, : min(dims, x.shape[1])].T
    scores = centred @ components.T
    biggest = np.argmax(np.abs(scores), axis=0)
    return scores * np.sign(scores[biggest, range(scores.shape[1])])


def sif_weights(n: int, sif: float) -> np.ndarray:
    """sif / (sif + p(rank)), p from Zipf's law over vocabulary order (model2vec's)."""
    inv_rank = 1 / np.arange(2, n + 2)
    return sif / (sif + inv_rank / inv_rank.sum())


def source_digest(model_dir: Path) -> str:
    digest = hashlib.sha256()
    for name in ("model.safetensors", "tokenizer.json"):
        digest.update((model_dir / name).read_bytes())
    return digest.hexdigest()[:16]


def _config(table: np.ndarray, model_dir: Path, dims: int, sif: float) -> dict:
    """model2vec's config.json for the table (what StaticModel.from_pretrained reads)."""
    return {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": model_dir.name,
        "apply_pca": dims,
        "sif_coefficient": sif,
        "hidden_dim": int(table.shape[1]),
        "seq_length": 1000000,
        "normalize": True,
        "pooling": "mean",
    }


def distill(
    model_dir: Path, out: Path, *, dims: int = 256, sif: float = 1e-4, limit: int | None = None
) -> dict:
    """Write a static model for `model_dir` into `out`; returns its build record."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer

    start = time.perf_counter()
    vectors = pca(token_vectors(model_dir, limit=limit), dims)
    table = (vectors * sif_weights(len(vectors), sif)[:, None]).astype(np.float16)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    tokenizer.save(str(out / "tokenizer.json"))
    save_file({"embeddings": table}, str(out / "model.safetensors"))
    (out / "config.json").write_text(
        json.dumps(_config(table, model_dir, dims, sif), indent=2) + "\n"
    )
    record = {
        "format": FORMAT,
        "source": str(model_dir),
        "source_sha256_16": source_digest(model_dir),
        "rows": int(table.shape[0]),
        "dims": int(table.shape[1]),
        "sif": sif,
        "pooling": "mean of [CLS] t [SEP]",
        "seconds": round(time.perf_counter() - start, 1),
    }
    (out / "ragtrim_build.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def is_built(out: Path, model_dir: Path) -> bool:
    """Whether `out` holds a complete static model distilled from `model_dir` as it is."""
    try:
        record = json.loads((out / "ragtrim_build.json").read_text())
    except (OSError, ValueError):
        return False
    complete = all((out / n).exists() for n in ("model.safetensors", "tokenizer.json"))
    same = record.get("source_sha256_16") == source_digest(model_dir)
    return complete and record.get("format") == FORMAT and same


def build_atomically(
    out: Path, model_dir: Path, *, dims: int = 256, limit: int | None = None
) -> dict:
    """`distill` into a temp folder beside `out`, then rename: a reader never sees a
    half-written model, and two builders racing leave one complete copy."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        record = distill(model_dir, tmp, dims=dims, limit=limit)
        tmp.chmod(0o755)
        for path in tmp.iterdir():
            path.chmod(0o644)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
        return record
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
