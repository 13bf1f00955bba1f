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


# proxy/'s units in four tiers, lowest first. A unit imports any unit of a lower tier; a
# unit of its own tier only through that tier's ports (a named module, or a package
# with ".*"); never a higher tier. Type-only imports count: a TYPE_CHECKING import is
# still an arrow. Foundation units import only the foundation units listed before them.
TIERS = {
    "foundation": ["errors", "metrics", "outcome", "prompt", "config", "settings"],
    "domain": ["gate", "upstream", "tenancy", "http", "context", "backends", "compression",
               "routing"],
    "flow": ["stages", "response", "telemetry", "request"],
    "entry": ["integrations", "components", "server", "cli", "__main__"],
}  # fmt: skip
PORTS = {
    # the request's state, a replica's record, the cost gate, the calls upstream, who
    # asks, the route table, the target model's token counter
    "domain": {"proxy.context", "proxy.backends.endpoint", "proxy.gate.*",
               "proxy.upstream.control", "proxy.upstream.transport", "proxy.tenancy.identity",
               "proxy.http.route_table", "proxy.compression.token_counter"},
    # the response path and its hook points, the quota stage, the stage tracer
    "flow": {"proxy.response.path", "proxy.response.relay", "proxy.response.points",
             "proxy.response.hooks", "proxy.response.usage_tap", "proxy.response.quota_settle",
             "proxy.stages.quota", "proxy.telemetry.tracing"},
    # the composition root, the CLI, the worker check
    "entry": {"proxy.components", "proxy.cli", "proxy.server.workers"},
}  # fmt: skip
TIER_OF = {unit: rank for rank, units in enumerate(TIERS.values()) for unit in units}
TOP_LEVEL = {"__init__", "__main__", "cli", "components", "context", "errors", "metrics",
             "settings"}  # fmt: skip


def is_port(module: str, tier: str) -> bool:
    ports = PORTS.get(tier, set())
    return module in ports or any(p.endswith(".*") and module.startswith(p[:-1]) for p in ports)


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


def wrong_arrows(arrows) -> list[tuple[str, str]]:
    """(importing file, imported module) for every arrow the tiers forbid."""
    wrong = []
    foundation = TIERS["foundation"]
    for path, names in arrows:
        here = unit_of(path.removesuffix(".py").replace("/", "."))
        for name in names:
            if not name.startswith("proxy.") or unit_of(name) == here:
                continue
            there, tier = unit_of(name), list(TIERS)[TIER_OF[here]]
            if TIER_OF[there] > TIER_OF[here]:
                wrong.append((path, name))
            elif TIER_OF[there] == TIER_OF[here] and tier == "foundation":
                if foundation.index(there) > foundation.index(here):
                    wrong.append((path, name))
            elif TIER_OF[there] == TIER_OF[here] and not is_port(name, tier):
                wrong.append((path, name))
    return wrong


def test_proxy_units_import_only_lower_tiers_and_their_tiers_ports():
    units = {unit_of(m) for m in (f"proxy.{p.stem}" for p in (ROOT / "proxy").iterdir())}
    assert units - {"__init__", "__pycache__"} <= set(TIER_OF)
    assert not wrong_arrows(imported_modules("proxy").items())


def test_there_is_no_circle_between_units():
    graph: dict[str, set[str]] = {}
    for here, there, _ in proxy_arrows():
        graph.setdefault(here, set()).add(there)
    done: set[str] = set()

    def visit(unit: str, path: tuple[str, ...]) -> None:
        assert unit not in path, " -> ".join((*path, unit))
        if unit not in done:
            for nxt in graph.get(unit, ()):
                visit(nxt, (*path, unit))
            done.add(unit)

    for unit in list(graph):
        visit(unit, ())


def test_the_tier_check_sees_wrong_arrows():
    """Upward, a same-tier import past the ports, a foundation unit importing a later one."""
    arrows = [("proxy/gate/decide.py", {"proxy.routing.router"}),
              ("proxy/routing/router.py", {"proxy.compression.service", "proxy.context"}),
              ("proxy/prompt/base.py", {"proxy.settings"})]  # fmt: skip
    assert wrong_arrows(arrows) == [("proxy/gate/decide.py", "proxy.routing.router"),
                                    ("proxy/routing/router.py", "proxy.compression.service"),
                                    ("proxy/prompt/base.py", "proxy.settings")]  # fmt: skip


def test_proxy_top_level_holds_only_the_roots():
    """The composition root, settings, CLI, errors, metrics and context; the rest is in
    a package named for its concept."""
    modules = {p.stem for p in (ROOT / "proxy").glob("*.py")}
    assert modules == TOP_LEVEL
