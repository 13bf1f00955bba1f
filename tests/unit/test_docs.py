"""The docs name only what exists (issue 32). In ARCHITECTURE.md, the README, docs/*.md and
docs/decisions/*.md, every name written in single backticks outside fenced code blocks is
checked:

- a path of the repository (`proxy/...`, `tests/...`, ...) is there;
- a setting: a dotted lowercase name (`compression.stable.enabled`, `quotas.charge`) whose
  first part is a field of `Settings` (or the first part of a removed setting) resolves,
  part by part, to a field of the Settings tree; below a dict-valued field (`quotas.tenants`,
  `tenancy.api_keys`) the keys are free, and `section.*` names a section. One whose first
  part is a nested section (`kv_events.port`, `picker.name`, `limits.max_documents`) must
  resolve under at least one section of that name. A value after `=` or `: ` is not checked
  (`quotas.charge=computed`);
- an environment variable `RAGTRIM_A__B` (pydantic-settings: prefix RAGTRIM_, nested
  delimiter `__`, case-insensitive) is the setting `a.b`, checked as above; `NOT_SETTINGS`
  lists the RAGTRIM_ variables that only the snippets' tests and LiteLLM's config read;
- a setting that was renamed or removed (proxy/config/removed.py) may be named only in a
  sentence that says so ("renamed", "removed"), under a heading that does, or in a
  decision record (docs/decisions/: the history of what changed);
- a symbol of a module: a path to a `.py` file or a package followed by a backticked name,
  separated only by white space (`proxy/http/edge.py` `EdgeProtocol`), by an opening
  parenthesis (`route_table.py` (`LEFT_OUT`)), or by a colon that opens a list
  (`body.py`: `ChatPrompt`, `CompletionPrompt`), or written in one span as
  `path.py:Name` (a span that names a file, `_name.py`, is no symbol). The name must be
  defined at the module's top level (a function, class, assignment or import, followed to
  its definition) or be a method or attribute of a class defined there (`exchange.py`
  `read`); `Class.member` must be a method, class attribute or `self.` attribute of that
  class or of a base defined in the repository (a class with a third-party base, a
  pydantic model, is checked only for what it defines itself, and passes otherwise);
- `Class.member` alone, where `Class` is a class of proxy/, compressors/ or cache/ (a
  third-party class is not checked), or `ctx.field` (`RequestContext`): the member exists
  on some class of that name (of `ctx.outcome.answer`, only `outcome` is checked);
- a call's parameters, `Router.rank(ctx, endpoints)`: each name written is a parameter of
  that function, in its order (`self` left out; parameters may be left out).

The tier list of ARCHITECTURE.md is test_layers' TIERS."""

from __future__ import annotations

import ast
import re
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from pydantic import BaseModel

from proxy.config.removed import RENAMED, REPLACED
from proxy.settings import Settings
from tests.unit.test_layers import TIERS

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    "ARCHITECTURE.md",
    "README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "decisions").glob("*.md")),
]
TOPS = ("proxy", "compressors", "cache", "bench", "tests", "deploy", "docs")
PATH = re.compile(r"`((?:" + "|".join(TOPS) + r")/[\w./-]*)`")

FENCE = re.compile(r"^ *```.*?^ *```", re.M | re.S)
SPAN = re.compile(r"`([^`]+)`")
SETTING = re.compile(r"[a-z_][a-z0-9_]*(?:\.(?:[a-z0-9_]+|\*))+")
ENV = re.compile(r"RAGTRIM_[A-Z0-9_]*[A-Z0-9]")
VALUE = re.compile(r"(?:=|:\s).*", re.S)
NOT_SETTINGS = {"RAGTRIM_URL", "RAGTRIM_MODEL", "RAGTRIM_API_BASE", "RAGTRIM_API_KEY"}
REMOVED = {*RENAMED, *REPLACED}
SAYS_REMOVED = re.compile(r"removed|renamed", re.I)

CODE = ("proxy", "compressors", "cache", "bench", "tests")
MODULE = re.compile(r"((?:" + "|".join(CODE) + r")/[\w/]*?(?:\.py)?)(?::(.+))?")
NAME = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\((.*)\))?", re.S)
FILE = re.compile(r"\.(?:py|md|toml|json|yaml)$")
AFTER = re.compile(r"\s+\(?|\s*:\s+")
LIST = re.compile(r",\s*(?:and\s+)?|\s+and\s+")
MEMBER = re.compile(r"([A-Z]\w*|ctx)\.([A-Za-z_]\w*)(?:\.\w+)*(?:\((.*)\))?", re.S)
ALIASES = {"ctx": "RequestContext"}
PLAIN_BASES = {"object", "Protocol", "Generic", "ABC"}


def named_paths(doc: str) -> list[str]:
    """Backticked paths of the repository in `doc` (a symbol after a space is dropped)."""
    return [m.group(1).rstrip(".") for m in PATH.finditer((ROOT / doc).read_text())]


def prose(text: str) -> str:
    """`text` with its fenced code blocks blanked (their lines kept, for line numbers)."""
    return FENCE.sub(lambda m: "\n" * m.group().count("\n"), text)


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def sentence_at(text: str, pos: int) -> str:
    """The sentence, table row or paragraph around `pos`."""
    ends = re.compile(r"[.!?](?=\s)|\n\s*\n|\n\s*\|")
    start = max((m.end() for m in ends.finditer(text, 0, pos)), default=0)
    stop = ends.search(text, pos)
    return text[start : stop.start() if stop else len(text)]


def heading_at(text: str, pos: int) -> str:
    found = re.findall(r"^#+ .*$", text[:pos], re.M)
    return found[-1] if found else ""


# settings


def _model(annotation: object) -> type[BaseModel] | None:
    is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return annotation if is_model else None


def _free_keys(annotation: object) -> bool:
    return typing.get_origin(annotation) is dict or annotation is dict


def _resolves(model: type[BaseModel], parts: list[str]) -> bool:
    part, rest = parts[0], parts[1:]
    if part == "*":
        return not rest
    field = model.model_fields.get(part)
    if field is None:
        return False
    if not rest:
        return True
    if _free_keys(field.annotation):
        return True
    inner = _model(field.annotation)
    return inner is not None and _resolves(inner, rest)


def _sections(model: type[BaseModel]) -> Iterator[tuple[str, type[BaseModel]]]:
    for name, field in model.model_fields.items():
        inner = _model(field.annotation)
        if inner is not None:
            yield name, inner
            yield from _sections(inner)


NESTED: dict[str, list[type[BaseModel]]] = {}
for _name, _section in _sections(Settings):
    if _name not in Settings.model_fields:
        NESTED.setdefault(_name, []).append(_section)
ROOTS = {*Settings.model_fields, *NESTED, *(path.split(".")[0] for path in REMOVED)}


def setting_problem(name: str) -> str | None:
    """Why the dotted setting `name` is not one of ragtrim's, or None."""
    parts = name.split(".")
    if name in REMOVED:
        new = RENAMED.get(name)
        return f"`{name}` was {'renamed to ' + new if new else 'removed'}"
    if parts[0] in Settings.model_fields:
        ok = _resolves(Settings, parts)
    else:
        ok = any(_resolves(s, parts[1:]) for s in NESTED.get(parts[0], ()))
    return None if ok else f"`{name}` is no setting"


def setting_errors(text: str, history: bool = False) -> list[tuple[int, str]]:
    """(line, problem) for each setting or RAGTRIM_ variable `text` names that is none;
    `history`: a decision record, where removed settings may be named."""
    text = prose(text)
    errors = []
    for m in SPAN.finditer(text):
        span = m.group(1)
        env = ENV.match(span)
        head = env or re.match(r"[\w.*]+", span)
        if not head or VALUE.sub("", span[head.end() :]):
            continue
        if env:
            if env.group() in NOT_SETTINGS:
                continue
            name = env.group()[len("RAGTRIM_") :].lower().replace("__", ".")
        elif SETTING.fullmatch(head.group()) and head.group().split(".")[0] in ROOTS:
            name = head.group()
        else:
            continue
        problem = setting_problem(name)
        if problem and name in REMOVED:
            said = sentence_at(text, m.start()) + heading_at(text, m.start())
            problem = None if history or SAYS_REMOVED.search(said) else problem
        if problem:
            prefix = f"`{env.group()}`: " if env else ""
            errors.append((line_of(text, m.start()), prefix + problem))
    return errors


# symbols


@cache
def _tree(path: Path) -> ast.Module | None:
    return ast.parse(path.read_text()) if path.is_file() else None


def _file(module: str) -> Path:
    """The file of a module or package given as a path (`proxy/routing`) or dotted name."""
    if module.endswith(".py"):
        return ROOT / module
    base = ROOT / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "handlers", "finalbody"):
                yield from _top_level(getattr(node, block, []))
        elif isinstance(node, ast.ExceptHandler):
            yield from _top_level(node.body)


def _assigned(node: ast.stmt) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    names = []
    for target in targets:
        for sub in ast.walk(target) if target is not None else ():
            if isinstance(sub, ast.Name):
                names.append(sub.id)
    return names


def _defined(path: Path, name: str, depth: int = 0) -> tuple[ast.AST, Path] | None:
    """The definition of the top-level `name` of the module at `path`, following imports."""
    tree = _tree(path)
    if tree is None or depth > 8:
        return None
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return node, path
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            if name in _assigned(node):
                return node, path
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _imported(path, node, alias.name, depth) or (node, path)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.asname or alias.name).split(".")[0] == name:
                    return node, path
    return None


def _imported(path: Path, node: ast.ImportFrom, name: str, depth: int):
    if node.level:
        package = path.parent
        for _ in range(node.level - 1):
            package = package.parent
        dotted = str(package.relative_to(ROOT)).replace("/", ".")
        module = f"{dotted}.{node.module}" if node.module else dotted
    else:
        module = node.module or ""
    if module.split(".")[0] not in CODE:
        return None
    target = _file(module)
    submodule = _file(f"{module}.{name}")
    if _tree(target) is not None:
        found = _defined(target, name, depth + 1)
        if found:
            return found
    return (_tree(submodule), submodule) if _tree(submodule) is not None else None


def _members(cls: ast.ClassDef, path: Path, depth: int = 0) -> set[str] | None:
    """The names a class defines, its bases' included; None when a base is not ours."""
    names: set[str] = set()
    for node in _top_level(cls.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.ctx, ast.Store)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id == "self"
                ):
                    names.add(sub.attr)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            names.update(_assigned(node))
    for base in cls.bases:
        base = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(base, ast.Name) and base.id in PLAIN_BASES:
            continue
        found = _defined(path, base.id) if isinstance(base, ast.Name) else None
        if not found or not isinstance(found[0], ast.ClassDef) or depth > 8:
            return None
        inherited = _members(found[0], found[1], depth + 1)
        if inherited is None:
            return None
        names |= inherited
    return names


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    args = func.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if method and names and names[0] in ("self", "cls"):
        names = names[1:]
    names += [a.arg for a in (args.vararg, *args.kwonlyargs, args.kwarg) if a is not None]
    return names


def _signature_problem(node: ast.AST, written: str | None, method: bool) -> str | None:
    if written is None or not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    given = [re.match(r"\**(\w*)", p.strip()).group(1) for p in written.split(",")]
    given = [p for p in given if p]
    real = _params(node, method)
    at = [real.index(p) if p in real else -1 for p in given]
    if -1 in at or at != sorted(at):
        return f"takes ({', '.join(real)}), not ({written})"
    return None


def symbol_problem(path: Path, name: str, written: str | None) -> str | None:
    """Why `name` (`Name` or `Class.member`) is not defined in the module at `path`."""
    head, *rest = name.split(".")
    found = _defined(path, head)
    if found is None and not rest:  # `exchange.py` `read`: a method of a class there
        member = next(_class_members_named(path, head), None)
        return f"no `{head}`" if member is None else _signature_problem(member, written, True)
    if found is None:
        return f"no `{head}`"
    node, where = found
    if not rest:
        return _signature_problem(node, written, method=False)
    if isinstance(node, ast.Module):  # a submodule: `package` `module.name`
        return symbol_problem(where, ".".join(rest), written)
    if not isinstance(node, ast.ClassDef) or len(rest) > 1:
        return None
    members = _members(node, where)
    if members is not None and rest[0] not in members:
        return f"no `{name}`"
    func = next((n for n in node.body if getattr(n, "name", None) == rest[0]), None)
    return _signature_problem(func, written, method=True) if func else None


def _class_members_named(path: Path, name: str) -> Iterator[ast.AST]:
    """A method or attribute `name` of a class defined in the module at `path`."""
    for node in _top_level(_tree(path).body):
        if isinstance(node, ast.ClassDef) and name in (_members(node, path) or ()):
            func = next((n for n in node.body if getattr(n, "name", None) == name), node)
            yield func


@cache
def classes() -> dict[str, list[tuple[ast.ClassDef, Path]]]:
    """Every class of the product (proxy/, compressors/, cache/) by name."""
    found: dict[str, list[tuple[ast.ClassDef, Path]]] = {}
    for package in ("proxy", "compressors", "cache"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(_tree(path)):
                if isinstance(node, ast.ClassDef):
                    found.setdefault(node.name, []).append((node, path))
    return found


def member_problem(cls: str, member: str, written: str | None) -> str | None:
    """Why `cls.member` is no member of any product class named `cls` (None if no class)."""
    candidates = classes().get(ALIASES.get(cls, cls), [])
    problems = []
    for node, path in candidates:
        members = _members(node, path)
        if members is not None and member not in members:
            problems.append(f"no `{cls}.{member}`")
            continue
        func = next((n for n in node.body if getattr(n, "name", None) == member), None)
        problem = _signature_problem(func, written, method=True) if func else None
        if problem is None:
            return None
        problems.append(f"`{cls}.{member}` {problem}")
    return problems[0] if problems else None


def symbol_errors(text: str) -> list[tuple[int, str]]:
    """(line, problem) for each symbol `text` names after a module's path (or as
    `Class.member`) that the code does not define."""
    text = prose(text)
    errors = []
    anchored = set()
    for m in SPAN.finditer(text):
        module = MODULE.fullmatch(m.group(1))
        if not module:
            continue
        path = _file(module.group(1).rstrip("/"))
        if _tree(path) is None:
            continue  # not a module: the path check reports it
        names = []
        if module.group(2):
            names.append((m.start(), module.group(2)))
        after = AFTER.match(text, m.end())
        while after and after.end() < len(text) and text[after.end()] == "`":
            symbol = SPAN.match(text, after.end())
            if not symbol or not NAME.fullmatch(symbol.group(1)) or FILE.search(symbol.group(1)):
                break
            names.append((symbol.start(), symbol.group(1)))
            if ":" not in after.group():
                break
            after = LIST.match(text, symbol.end())
        for pos, written in names:
            name, params = NAME.fullmatch(written).groups()
            anchored.add(pos)
            problem = symbol_problem(path, name, params)
            if problem:
                where = module.group(1)
                errors.append((line_of(text, pos), f"`{where}` `{written}`: {problem}"))
    for m in SPAN.finditer(text):
        member = MEMBER.fullmatch(m.group(1))
        if member and m.start() not in anchored:
            problem = member_problem(*member.groups())
            if problem:
                errors.append((line_of(text, m.start()), f"`{m.group(1)}`: {problem}"))
    return errors


def report(doc: str, errors: list[tuple[int, str]]) -> str:
    return "\n".join(f"{doc}:{line}: {problem}" for line, problem in errors)


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_doc_names_exists(doc):
    missing = [p for p in named_paths(doc) if not (ROOT / p).exists()]
    assert not missing, f"{doc} names paths that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_setting_a_doc_names_exists(doc):
    errors = setting_errors((ROOT / doc).read_text(), history=doc.startswith("docs/decisions/"))
    assert not errors, "settings that do not exist:\n" + report(doc, errors)


@pytest.mark.parametrize("doc", DOCS)
def test_every_symbol_a_doc_names_exists(doc):
    errors = symbol_errors((ROOT / doc).read_text())
    assert not errors, "symbols that do not exist:\n" + report(doc, errors)


def test_the_architecture_lists_the_tiers_and_their_units():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    block = text[text.index("Tiers, highest first") :].split("```")[1]
    listed = {}
    for line in block.strip().splitlines():
        tier, units = line.split(maxsplit=1)
        listed[tier] = {u.strip().removesuffix("/").removesuffix(".py") for u in units.split(",")}
    assert list(listed) == list(reversed(TIERS))
    assert listed == {tier: set(units) for tier, units in TIERS.items()}


def test_the_path_check_sees_paths():
    assert "proxy/compression/service.py" in named_paths("ARCHITECTURE.md")


def test_the_setting_check_sees_wrong_settings():
    text = (
        "Set `compression.stable.enabeld` or `RAGTRIM_TENANCY__QUOTAS__CHARGED=sent`.\n"
        "Set `tenancy.quotas.charge=computed`, `RAGTRIM_TENANCY__QUOTAS__CHARGE`,\n"
        "`tenancy.quotas.tenants.acme.tokens_per_minute`, `requests.*`, `kv_events.port`\n"
        "and `ragtrim.documents`. Then `timeouts.connect` and `kv_events.prot`; and\n"
        "`quotas.charge`. `timeouts.connect` was renamed.\n"
    )
    assert setting_errors(text) == [
        (1, "`compression.stable.enabeld` is no setting"),
        (1, "`RAGTRIM_TENANCY__QUOTAS__CHARGED`: `tenancy.quotas.charged` is no setting"),
        (4, "`timeouts.connect` was renamed to timeouts.connect_s"),
        (4, "`kv_events.prot` is no setting"),
        (5, "`quotas.charge` was renamed to tenancy.quotas.charge"),
    ]


def test_the_symbol_check_sees_wrong_names():
    text = (
        "`proxy/routing/router.py` `Router.rnak` and `proxy/routing/router.py:Ruoter`;\n"
        "`proxy/routing/router.py` `Router.rank(ctx, pool)`, `Router.rank(ctx, endpoints)`;\n"
        "`proxy/prompt/body.py`: `ChatPrompt`, `ChatPormpt`; `Cycle.by_totals`, `ctx.modle`.\n"
        "`proxy/routing/router.py` (`Cycle.by_total`), `Picker.order(cycle)`, `Widget.x`.\n"
        "`Picker.order(ctx, totals, endpoints, cycle)`, `ctx.outcome.answer`, `ctx.answer`.\n"
    )
    assert [line for line, _ in symbol_errors(text)] == [1, 1, 2, 3, 3, 3, 5, 5]
    assert "`Router.rank(ctx, pool)`: takes (ctx, endpoints)" in report("x", symbol_errors(text))
