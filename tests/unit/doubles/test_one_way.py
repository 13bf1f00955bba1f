"""Doubles and deploy/local are reached one way (issue 21): imported as packages
(`tests.doubles.X`, `deploy.local.X`) and run as `python -m ...`, never through a
sys.path insert, a module loaded from a file path, or a process started by file path."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# the one file-path load left: vLLM's preStop drain as the sidecar overlay's ConfigMap
# mounts it (deploy/k8s/base/vllm-drain.py, rendered by kustomize into a temp folder)
LOADS_A_RENDERED_CONFIGMAP = {"tests/integration/test_k8s_sidecar.py"}
BY_PATH = re.compile(r"(deploy/local|tests/doubles|tests/support|bench)/[\w/]+\.py")
PATH_EDITS = ("sys.path.insert", "sys.path.append")
SHELL_BY_PATH = re.compile(
    r"(python3?\"?|\$\(PY\))\s+\"?(\$here/|deploy/local/|tests/|bench/)\S*\.py"
)


def sources() -> list[Path]:
    return [p for top in ("tests", "bench", "deploy") for p in (ROOT / top).rglob("*.py")]


def offences(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "spec_from_file_location":
            found.append("spec_from_file_location")
        if isinstance(node, ast.Call) and ast.unparse(node.func) in PATH_EDITS:
            found.append(ast.unparse(node.func))
        if isinstance(node, ast.List):
            found += [e.value for e in node.elts if isinstance(e, ast.Constant)
                      and isinstance(e.value, str) and BY_PATH.fullmatch(e.value)]  # fmt: skip
    return found


def test_python_reaches_doubles_and_builders_as_modules():
    bad = {}
    for path in sources():
        rel = str(path.relative_to(ROOT))
        if rel not in LOADS_A_RENDERED_CONFIGMAP and (
            found := offences(ast.parse(path.read_text()))
        ):
            bad[rel] = found
    assert not bad


def test_make_and_the_scripts_run_modules_not_files():
    scripts = [ROOT / "Makefile", *(ROOT / "deploy").rglob("*.sh"), ROOT / ".ci" / "run"]
    bad = {str(p.relative_to(ROOT)): SHELL_BY_PATH.findall(p.read_text()) for p in scripts}
    assert not {k: v for k, v in bad.items() if v}


def test_the_checks_see_each_way():
    code = 'import sys\nsys.path.insert(0, "x")\nu.spec_from_file_location("m", p)\n'
    code += 'run([sys.executable, "deploy/local/vllm_server.py", "stop"])\n'
    found = ("sys.path.insert", "spec_from_file_location", "deploy/local/vllm_server.py")
    assert tuple(offences(ast.parse(code))) == found
    assert SHELL_BY_PATH.search('python3 "$here/vllm_server.py" stop')
    assert SHELL_BY_PATH.search("@$(PY) deploy/local/build_smollm2.py --out x")
    assert not SHELL_BY_PATH.search("@$(PY) -m deploy.local.build_smollm2 --out x")
    assert not offences(ast.parse('run([sys.executable, "-m", "tests.doubles.stub_vllm"])'))
