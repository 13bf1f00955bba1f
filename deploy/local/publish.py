"""A model folder built beside its destination and published in one rename.

Why: a reader (vLLM, a test fixture, a benchmark) must never see a half-built model at
`out`, and a failed build must leave nothing behind; `os.rename` of a folder within one
file system is atomic (POSIX rename(2)). mkdtemp and safetensors write owner-only
files, so the folder is made readable to all before it is published (vLLM may run as
another user)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def building(out: Path) -> Iterator[Path]:
    """A fresh folder to build into; when the block ends without an error it replaces
    `out` (readable to all), else it is removed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield tmp
        publish_modes(tmp)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish_modes(folder: Path) -> None:
    """Make the folder and its files readable to all."""
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)
