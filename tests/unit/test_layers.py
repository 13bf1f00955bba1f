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


# proxy/'s packages and top-level modules, highest first: each may import only those after
# it (issue 32). Type-only imports count: a TYPE_CHECKING import is still an arrow.
LAYERS = [
    "__main__", "cli", "server", "components", "request", "telemetry", "integrations",
    "response", "stages", "routing", "compression", "backends", "context", "http",
    "tenancy", "upstream", "settings", "config", "prompt", "errors", "metrics", "gate",
    "outcome",
]  # fmt: skip
TOP_LEVEL = {"__init__", "__main__", "cli", "components", "context", "errors", "metrics",
             "settings"}  # fmt: skip


def unit_of(module: str) -> str:
    """proxy.routing.kv.scorer -> routing; proxy.errors -> errors."""
    return module.split(".")[1]


def proxy_arrows() -> set[tuple[str, str, str]]:
    """(importer unit, imported unit, importing file) for every arrow between units."""
    arrows = set()
    for path, names in imported_modules("proxy").items():
        here = unit_of(path.removesuffix(".py").replace("/", "."))
        for name in names:
            if name.startswith("proxy.") and unit_of(name) != here:
                arrows.add((here, unit_of(name), path))
    return arrows


def test_proxy_packages_are_layered():
    """No package imports one above it, so there is no circle between them either."""
    units = {unit_of(m) for m in (f"proxy.{p.stem}" for p in (ROOT / "proxy").iterdir())}
    assert units - {"__init__", "__pycache__"} <= set(LAYERS)
    upward = sorted(
        (path, above)
        for here, above, path in proxy_arrows()
        if LAYERS.index(above) <= LAYERS.index(here)
    )
    assert not upward


def test_proxy_top_level_holds_only_the_roots():
    """The composition root, settings, CLI, errors, metrics and context; the rest is in
    a package named for its concept."""
    modules = {p.stem for p in (ROOT / "proxy").glob("*.py")}
    assert modules == TOP_LEVEL


def test_the_layer_order_sees_an_upward_import():
    assert ("backends", "gate", "proxy/backends/endpoint.py") in proxy_arrows()
    assert LAYERS.index("backends") < LAYERS.index("gate")
