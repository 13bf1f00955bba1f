"""The docs name only what exists (issue 32): every file or folder path written in
backticks in ARCHITECTURE.md, the README and docs/ is there, and the package list of
ARCHITECTURE.md is test_layers' LAYERS."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.test_layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    "ARCHITECTURE.md",
    "README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
]
TOPS = ("proxy", "compressors", "cache", "bench", "tests", "deploy", "docs")
PATH = re.compile(r"`((?:" + "|".join(TOPS) + r")/[\w./-]*)`")


def named_paths(doc: str) -> list[str]:
    """Backticked paths of the repository in `doc` (a symbol after a space is dropped)."""
    return [m.group(1).rstrip(".") for m in PATH.finditer((ROOT / doc).read_text())]


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_doc_names_exists(doc):
    missing = [p for p in named_paths(doc) if not (ROOT / p).exists()]
    assert not missing


def test_the_architecture_lists_the_layers_in_their_order():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    block = text[text.index("Highest first") :].split("```")[1]
    named = [re.split(r"[/ ,.]", line.strip())[0] for line in block.strip().splitlines()]
    named = [n for n in named if n]
    order = [n for n in LAYERS if n in named]
    assert named == [n for n in named if n in LAYERS] and order == sorted(order, key=named.index)


def test_the_path_check_sees_paths():
    assert "proxy/compression/service.py" in named_paths("ARCHITECTURE.md")
