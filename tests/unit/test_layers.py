"""The package arrows of ARCHITECTURE.md, checked: the libraries never import the service,
and segmentation stands on its own (it never imports a compressor)."""

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


def test_segmentation_imports_only_itself_from_the_compressors():
    offending = {
        path: sorted(n for n in names if n.startswith("compressors.")
                     and not n.startswith("compressors.segment"))
        for path, names in imported_modules("compressors/segment").items()
    }  # fmt: skip
    assert not {path: names for path, names in offending.items() if names}


def test_the_layer_check_sees_imports():
    assert (
        "compressors.segment.model"
        in imported_modules("compressors/segment")["compressors/segment/splice.py"]
    )
