"""The canonicalize stage: a big body in a worker thread, a small one on the loop
(issue 33: 300k system messages held the loop 1.7 s in this stage)."""

import json
import threading

import proxy.prompt.body
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.settings import CanonicalSettings
from proxy.stages.canonicalize import CanonicalizeStage


async def _canonicalized_in(size: int, monkeypatch) -> threading.Thread:
    seen = []
    original = proxy.prompt.body.canonicalize_chat

    def recording(*args, **kwargs):
        seen.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(proxy.prompt.body, "canonicalize_chat", recording)
    messages = [
        {"role": "system", "content": "Rules.  \r\n" * size},
        {"role": "user", "content": "q"},
    ]
    body = {"model": "m", "messages": messages}
    ctx = RequestContext("r", "chat", json.dumps(body).encode(), body, {})
    rules = CanonicalSettings(normalize_newlines=True, strip_trailing_whitespace=True)
    await CanonicalizeStage(rules, Metrics(), offload_bytes=1000)(ctx)
    assert ctx.prefix_key and ctx.body["messages"][0]["content"].startswith("Rules.\nRules.\n")
    return seen[0]


async def test_big_bodies_are_canonicalized_off_the_loop_small_ones_on_it(monkeypatch):
    assert await _canonicalized_in(500, monkeypatch) is not threading.main_thread()
    assert await _canonicalized_in(5, monkeypatch) is threading.main_thread()
