"""Settings are the only source of defaults (issue 21: epsilon 0.25, the bounded-load
floor 8, the memo TTL of a week and `panic` each lived twice or three times, so a change
to one copy left the other in force wherever the composition root forgot to pass it).

Every call in the composition roots is read from their source: an argument computed
from settings feeds a parameter, and that parameter must either have no default, or a
default that is a named constant which a Settings field's default also names (one
literal, in one home: cache/ and compressors/ keep their natural defaults and
proxy/config reads them from there), equal to what `Settings()` gives when the field
feeding it is that field. None (no value of its own) and empty defaults (nothing
configured, which must match Settings() too) are the exceptions.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import textwrap
from collections.abc import Iterator
from types import SimpleNamespace

from pydantic import BaseModel

from proxy.settings import Settings

ROOTS = ("proxy.components", "proxy.compression.parts", "proxy.routing.registry",
         "proxy.integrations.langchain.runtime", "proxy.tenancy.policy",
         "proxy.backends.parts")  # fmt: skip


def namespace() -> dict[str, object]:
    """The names the roots read settings through, bound to `Settings()`."""
    s = Settings()
    parts = SimpleNamespace(settings=s.routing, panic=s.health.panic)  # registry.Parts
    q, a = s.tenancy.quotas, s.tenancy.accounting
    return {"settings": s, "c": s.compression, "q": q, "a": a, "p": parts}


def settings_attribute(node: ast.expr) -> ast.Attribute | None:
    """The first `name.field...` in `node` rooted at a settings name, if any."""
    roots = namespace()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute):
            base = sub
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in roots:
                return sub
    return None


def evaluate(node: ast.expr) -> object:
    return eval(compile(ast.Expression(node), "<root>", "eval"), {}, namespace())  # noqa: S307


def calls(module_name: str) -> Iterator[tuple[str, object, ast.Call]]:
    module = importlib.import_module(module_name)
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            target = getattr(module, node.func.id, None)
            if callable(target) and getattr(target, "__module__", "").split(".")[0] in (
                "proxy", "cache", "compressors"
            ):  # fmt: skip
                yield f"{module_name}: {node.func.id}", target, node


def fed_parameters(target, call: ast.Call) -> Iterator[tuple[inspect.Parameter, ast.expr]]:
    """(parameter, argument) for each argument of `call` computed from settings."""
    params = list(inspect.signature(target).parameters.values())
    pairs = [(params[i], arg) for i, arg in enumerate(call.args) if i < len(params)]
    named = inspect.signature(target).parameters
    pairs += [(named[k.arg], k.value) for k in call.keywords if k.arg in named]
    for param, arg in pairs:
        names = {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
        if names and names <= namespace().keys() and settings_attribute(arg) is not None:
            try:
                evaluate(arg)
            except AttributeError:  # e.g. p.metrics: a collaborator, not settings
                continue
            yield param, arg  # computed from settings alone (a nested call is its own)


def default_of(target, param: inspect.Parameter) -> object:
    if dataclasses.is_dataclass(target):
        field = {f.name: f for f in dataclasses.fields(target)}[param.name]
        if field.default_factory is not dataclasses.MISSING:
            return field.default_factory()
    return param.default


def default_node(target, name: str) -> ast.expr:
    """The default's expression in `target`'s source (its __init__ for a class)."""
    func = target.__init__ if inspect.isclass(target) else target
    if dataclasses.is_dataclass(target):
        func = target
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == name:
            return node.value
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(
                zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True)
            )
            pairs += [
                (arg, d)
                for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                if d is not None
            ]
            for arg, default in pairs:
                if arg.arg == name:
                    return default
    raise LookupError(name)


def field_default_node(attr: ast.Attribute) -> ast.expr:
    """The default's expression of the Settings field `attr` reads (a value derived
    from settings, such as a method's result, has none: `None`)."""
    model = type(evaluate(attr.value))
    if not issubclass(model, BaseModel):
        return ast.Constant(None)
    tree = ast.parse(textwrap.dedent(inspect.getsource(model)))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == attr.attr:
            return field_default(node.value)
    return ast.Constant(None)


def names_in(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def settings_constants() -> set[str]:
    """Every name a Settings field's default is written with (proxy/config/*.py)."""
    found: set[str] = set()
    pending, seen = [Settings], set()
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.add(model)
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(model)))):
            if isinstance(node, ast.AnnAssign) and node.value is not None:
                found |= names_in(field_default(node.value))
        for info in model.model_fields.values():
            if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
                pending.append(info.annotation)
    return found


def field_default(value: ast.expr) -> ast.expr:
    if isinstance(value, ast.Call) and value.args:  # Field(default, ...)
        return value.args[0]
    return value


def empty(value: object) -> bool:
    return isinstance(value, str | list | tuple | dict | frozenset | set) and not value


def problem(target, param: inspect.Parameter, arg: ast.expr, homes: set[str]) -> str | None:
    """Why `param`'s default duplicates a setting, or None. None as a default is the
    callee having no value of its own; an empty one must equal what Settings() gives;
    any other must be a named constant that a Settings field's default names too."""
    default, given = default_of(target, param), evaluate(arg)
    if default is inspect.Parameter.empty or default is None:
        return None
    if empty(default):
        return None if empty(given) else f"default {default!r} != settings {given!r}"
    own = names_in(default_node(target, param.name))
    if not own & homes:
        return f"default {default!r} is a literal (or constant) of its own"
    if own & names_in(field_default_node(settings_attribute(arg))) and default != given:
        return f"default {default!r} != settings {given!r}"
    return None


def duplicated_defaults() -> list[str]:
    """Each settings-fed parameter whose default disagrees with Settings() or is a
    second literal of it; empty when settings are the only source of defaults."""
    homes, found = settings_constants(), []
    for root in ROOTS:
        for where, target, call in calls(root):
            for param, arg in fed_parameters(target, call):
                why = problem(target, param, arg, homes)
                if why:
                    found.append(f"{where}({param.name}) <- {ast.unparse(arg)}: {why}")
    return found


def test_no_constructor_default_disagrees_with_settings():
    assert duplicated_defaults() == []


def test_the_roots_pass_the_known_settings():
    """The walk sees the values issue 21 found duplicated (or it could pass vacuously)."""
    seen = {
        (getattr(t, "__name__", ""), p.name)
        for root in ROOTS
        for _, t, call in calls(root)
        for p, _ in fed_parameters(t, call)
    }
    known = {("BoundedLoad", "epsilon"), ("BoundedLoad", "min_in_flight"),
             ("Healthy", "panic"), ("build_router", "panic"), ("ChunkMemo", "ttl"),
             ("FeatureCache", "ttl"), ("PrefixRegistry", "ttl"), ("MemoryStore", "max_bytes"),
             ("Segmenter", "pattern_timeout")}  # fmt: skip
    assert known <= seen, known - seen
