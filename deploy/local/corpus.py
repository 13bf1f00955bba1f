"""English text for training the stand-in models' tokenizers: the docstrings of
Python's standard library, in a fixed (sorted) file order.

Why: it is on every machine that runs the builders (nothing to download), it is
mostly English prose with some code (like RAG documents), and the same Python gives
the same corpus, so a tokenizer trained on it is the same each time."""

from __future__ import annotations

import ast
import sysconfig
from pathlib import Path

MAX_CORPUS_CHARS = 3_000_000


def _docstrings(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docs = (ast.get_docstring(node) for node in ast.walk(tree) if isinstance(node, kinds))
    return [doc for doc in docs if doc]


def stdlib_corpus(limit: int = MAX_CORPUS_CHARS) -> list[str]:
    """English text from the stdlib's docstrings, in a fixed (sorted) file order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    texts, total = [], 0
    for path in sorted(root.glob("*.py")):
        for doc in _docstrings(path.read_text(encoding="utf-8", errors="replace")):
            texts.append(doc)
            total += len(doc)
            if total >= limit:
                return texts
    return texts
