"""Typed extension points: the response hooks are sorted by the Protocol each implements,
once, at start-up (proxy/response/points.py); the router's preparing scorers likewise
(proxy/routing/router.py `Preparing`); no product code asks an object for a hook, a
scorer's method or an outcome's field by name."""

import ast
from pathlib import Path

import pytest

from proxy.response.points import HookPoints

ROOT = Path(__file__).resolve().parents[4]
# getattr on what is not ragtrim's extension point or outcome: exceptions (aiohttp's
# connect_failed, an OSError's os_error), third-party objects (a tokenizer, a LangChain
# message, a logging handler, the socket module), the compressor plugins' optional
# attributes, a settings model's own fields, and the traced wrappers' delegation.
ALLOWED = {
    "proxy/upstream/resources.py", "proxy/upstream/exchange.py", "proxy/backends/health.py",
    "proxy/backends/discovery.py", "proxy/server/workers.py", "proxy/telemetry/accesslog.py",
    "proxy/telemetry/traced.py", "proxy/config/routing.py", "proxy/routing/kv/chat_tokens.py",
    "proxy/routing/kv/prefix_chain.py", "proxy/integrations/langchain/chat.py",
    "proxy/compression/parts.py", "proxy/compression/token_counter.py",
    "proxy/compression/engine.py",
}  # fmt: skip


class Done:
    def done(self, ctx, ex, error) -> None: ...


class Misspelt:
    def on_done(self, ctx, ex, error) -> None: ...


def test_hooks_are_sorted_by_point_and_one_with_none_is_refused():
    done = Done()
    points = HookPoints.of([done])
    assert points.done == (done,) and points.headers == points.stream == points.body == ()
    with pytest.raises(TypeError, match="Misspelt"):
        HookPoints.of([done, Misspelt()])


def test_no_hasattr_and_getattr_only_on_foreign_objects():
    found = []
    for path in sorted((ROOT / "proxy").rglob("*.py")):
        name = str(path.relative_to(ROOT))
        calls = [n for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]  # fmt: skip
        for call in calls:
            if call.func.id == "hasattr" or (call.func.id == "getattr" and name not in ALLOWED):
                found.append(f"{name}:{call.lineno} {call.func.id}")
    assert not found
