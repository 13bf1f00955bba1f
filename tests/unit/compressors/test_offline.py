import hashlib
import os

from compressors import offline


def test_cache_file_is_named_like_tiktoken_expects(tmp_path):
    path = offline.ensure_tiktoken_cache(tmp_path)
    assert path.name == hashlib.sha1(offline.CL100K_URL.encode()).hexdigest()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == offline.CL100K_SHA256


def test_seeding_is_idempotent_and_repairs_a_bad_file(tmp_path):
    path = offline.ensure_tiktoken_cache(tmp_path)
    path.write_bytes(b"corrupt")
    assert offline.ensure_tiktoken_cache(tmp_path) == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == offline.CL100K_SHA256
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_environment_only_on_request(tmp_path, monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    offline.ensure_tiktoken_cache(tmp_path)
    assert "TIKTOKEN_CACHE_DIR" not in os.environ
    offline.ensure_tiktoken_cache(tmp_path, set_env=True)
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)


def test_tiktoken_reads_the_seeded_cache(tmp_path, monkeypatch):
    import tiktoken.load

    offline.ensure_tiktoken_cache(tmp_path)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    data = tiktoken.load.read_file_cached(offline.CL100K_URL, offline.CL100K_SHA256)
    assert hashlib.sha256(data).hexdigest() == offline.CL100K_SHA256


def test_load_cl100k_needs_no_environment():
    enc = offline.load_cl100k()
    assert enc.encode_ordinary("hello world") == [15339, 1917]
    assert enc.n_vocab == 100277
