"""The package arrows of ARCHITECTURE.md, checked: the libraries never import the service,
and segmentation (proxy/prompt/segment) stands on its own: it imports neither a
compressor nor the cache nor any other part of the proxy."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(package: str) -> dict[str, set[str]]:
    """Every module each file of `package` imports (absolute names)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


@pytest.mark.parametrize("package", ["compressors", "cache"])
def test_libraries_never_import_the_proxy(package):
    offending = {
        path: sorted(n for n in names if n == "proxy" or n.startswith("proxy."))
        for path, names in imported_modules(package).items()
    }
    assert not {path: names for path, names in offending.items() if names}


@pytest.mark.parametrize("package", ["compressors", "cache", "proxy"])
def test_the_product_never_imports_bench(package):
    """Bench-only variants (bench/lib/variants) subclass the product, never the reverse."""
    offending = {
        path: sorted(n for n in names if n == "bench" or n.startswith("bench."))
        for path, names in imported_modules(package).items()
    }
    assert not {path: names for path, names in offending.items() if names}


def test_segmentation_imports_only_itself():
    ours = ("proxy", "compressors", "cache")
    offending = {
        path: sorted(n for n in names if n.split(".")[0] in ours
                     and not n.startswith("proxy.prompt.segment"))
        for path, names in imported_modules("proxy/prompt/segment").items()
    }  # fmt: skip
    assert not {path: names for path, names in offending.items() if names}


def test_the_layer_check_sees_imports():
    assert "compressors" in imported_modules("bench/lib")["bench/lib/variants/tiktoken_counter.py"]
    assert (
        "proxy.prompt.segment.model"
        in imported_modules("proxy/prompt/segment")["proxy/prompt/segment/splice.py"]
    )
