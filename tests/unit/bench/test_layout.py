"""bench/'s layout (issue 21): entry points at the top, each in the Makefile's BENCHES and
in bench/README.md with headline keys its result file really has; helpers in bench/lib/,
and no entry point imports another one."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench"
LIB_DOC = (
    '"""Benchmark helpers: workloads, load generators, process control and reports '
    '(not entry points)."""\n'
)


def benches() -> list[str]:
    line = re.search(r"^BENCHES\s*:=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    return line.group(1).split()


def entry_points() -> set[str]:
    return {p.stem for p in BENCH.glob("*.py") if p.stem != "__init__"}


def readme_rows() -> dict[str, list[str]]:
    """`bench.<name>` -> the backticked keys of its headline column."""
    rows = {}
    for line in (BENCH / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = re.fullmatch(r"`bench\.(\w+)`", cells[0]) if len(cells) > 2 else None
        if name:
            rows[name.group(1)] = re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", cells[2]))
    return rows


def has_key(data: dict, path: str) -> bool:
    """`a.b.c` resolved through nested objects; a key may itself hold a dot (p90_ratio_at_0.8)."""
    if path in data:
        return True
    heads = [i for i, ch in enumerate(path) if ch == "." and isinstance(data.get(path[:i]), dict)]
    return any(has_key(data[path[:i]], path[i + 1 :]) for i in heads)


def test_every_entry_point_is_a_bench_and_every_bench_an_entry_point():
    assert sorted(entry_points()) == sorted(benches())
    for name in benches():
        tree = ast.parse((BENCH / f"{name}.py").read_text())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "main" in functions, name
        assert any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)


def test_the_readme_lists_each_bench_with_keys_its_result_has():
    rows = readme_rows()
    assert sorted(rows) == sorted(benches())
    for name, keys in rows.items():
        result = json.loads((BENCH / "results" / f"{name}.json").read_text())
        assert keys, name
        missing = [k for k in keys if not has_key(result, k)]
        assert not missing, (name, missing)


def test_the_key_lookup_can_fail():
    assert has_key({"a": {"b.c": 1}}, "a.b.c") and has_key({"p90_at_0.8": 1}, "p90_at_0.8")
    assert not has_key({"a": {"b": 1}}, "a.c") and not has_key({"a": 1}, "a.b")


def test_entry_points_import_helpers_never_each_other():
    names = {f"bench.{n}" for n in entry_points()}
    for path in [*BENCH.glob("*.py"), *(BENCH / "lib").rglob("*.py")]:
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        assert not imported & names, (path.name, imported & names)


def test_the_helper_package_says_what_it_is():
    assert (BENCH / "lib" / "__init__.py").read_text() == LIB_DOC
