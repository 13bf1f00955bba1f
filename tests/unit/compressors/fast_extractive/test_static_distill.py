import json

import numpy as np

from compressors.fast_extractive.static_distill import build_atomically, is_built, pca, sif_weights
from compressors.fast_extractive.static_embed import StaticEmbedder


def test_pca_orders_components_and_fixes_signs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 6)) * np.array([5, 1, 3, 0.1, 0.2, 2])
    out = pca(x, 3)
    variances = out.var(axis=0)
    assert out.shape == (200, 3) and list(variances) == sorted(variances, reverse=True)
    assert np.allclose(variances, [25, 9, 4], rtol=0.25)
    assert np.allclose(pca(x, 3), pca(x * 1.0, 3))  # deterministic
    w = sif_weights(5, 1e-4)
    assert np.all(np.diff(w) > 0) and np.all(w < 1)  # frequent (early) tokens weigh less


def test_build_writes_a_loadable_model_once(tmp_path, minilm_path):
    out = tmp_path / "static"
    record = build_atomically(out, minilm_path, dims=8, limit=64)
    assert record["rows"] == 64 and record["dims"] == 8
    assert is_built(out, minilm_path) and not is_built(tmp_path / "absent", minilm_path)
    assert json.loads((out / "config.json").read_text())["model_type"] == "model2vec"
    embedder = StaticEmbedder(out).load()
    assert embedder.table.shape == (64, 8) and embedder.table.dtype == np.float32
    assert [p.name for p in tmp_path.iterdir()] == ["static"]  # no temp folder left
