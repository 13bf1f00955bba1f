"""Issue 11 item 12: tenant isolation through a real ragtrim and the stub.

With tenants configured: the memo, the prefix registry and the replay bodies are
scoped to the tenant (a second tenant sending the same documents gets no memo hit,
which would tell it what the first one sent); a client cannot pick another tenant's
cache_salt; API keys are compared in constant time; no prompt text reaches the logs
(at DEBUG, failures included) or /metrics unless log_prompts is set.
"""

import json
import logging
import threading
import uuid

import httpx
import pytest

from cache.store import MemoryStore
from proxy.tenancy import identity as tenant_module
from proxy.tenancy.identity import match_key, tenant_salt
from tests.support.compressor_doubles import HalfWords
from tests.support.waiting import wait_for

SECRET = "isolation-s3cret-16+"
TENANCY = {"api_keys": {"key-a": "acme", "key-b": "globex"}, "salt_secret": SECRET}
# the memo is what these requests exercise: stable forms (issue 29) would answer repeats
ALWAYS = {"policy": "always", "min_context_tokens": 0, "stable": {"enabled": False}}
SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)


def rag(marker: str, **extra) -> dict:
    docs = [f"Document {i} about {marker}: the quarterly figures rose by {i} percent." for i in
            range(3)]  # fmt: skip
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(docs)},
                {"role": "user", "content": f"What happened to {marker}?"}]  # fmt: skip
    return {"model": "stub-model", "messages": messages, "stub": {"echo": True}, **extra}


def post(proxy, body: dict, key: str, **kw) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"}
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, headers=headers, **kw)
    assert resp.status_code == 200, resp.text
    return resp


def test_memo_prefix_registry_and_replay_are_per_tenant(stub, make_proxy):
    store, compressor = MemoryStore(), HalfWords()
    proxy = make_proxy([stub.url], compressor=compressor, store=store, tenancy=TENANCY,
                       compression=ALWAYS)  # fmt: skip
    body, warm = rag("isolation"), compressor.calls  # (its warm-up and calibration runs)
    post(proxy, body, "key-a")
    post(proxy, body, "key-a")
    assert compressor.calls == warm + 1  # acme's second: its memo's hits
    globex = post(proxy, body, "key-b")
    assert compressor.calls == warm + 2  # acme's entries are not globex's
    assert "x-ragtrim-cache-hits" not in globex.headers  # nor shown with tenancy (issue 44)
    memo = [k for k in store._data if k.startswith("memo:")]
    tags = {k.split(":")[1] for k in memo}
    assert len(memo) == 6 and len(tags) == 2  # 3 documents × 2 tenants, one tag each

    replays, registry = recorded(store, replays=2)  # written after the answer (feedback.py)
    salts = {r["cache_salt"] for r in replays.values()}
    assert len(replays) == 2
    assert salts == {tenant_salt("acme", SECRET), tenant_salt("globex", SECRET)}
    assert len(registry) == 2  # one per tenant, though the prompt is the same


def recorded(store: MemoryStore, replays: int, limit: float = 5.0) -> tuple[dict, list]:
    """The replay bodies and prefix hashes in `store` once `replays` of them are there:
    the registry is written in a task after the answer is relayed, so a read straight
    after the response can come first (a CI run saw 1 replay of 2)."""

    def bodies() -> dict:
        return {k: json.loads(v) for k, (v, _) in list(store._data.items()) if "replay:" in k}

    wait_for(lambda: len(bodies()) >= replays, limit, f"{replays} replay bodies", every=0.01)
    return bodies(), [k for k in list(store._hashes) if k.startswith("prefix:")]


def test_a_client_cannot_choose_another_tenants_salt(stub, make_proxy):
    proxy = make_proxy([stub.url], tenancy=TENANCY)
    stolen = tenant_salt("acme", SECRET)
    sent = post(proxy, rag("salt", cache_salt=stolen), "key-b").json()["echo"]["cache_salt"]
    assert sent == tenant_salt("globex", SECRET) != stolen
    no_key = httpx.post(f"{proxy.url}/v1/chat/completions", json=rag("salt", cache_salt=stolen))
    assert no_key.status_code == 401 and no_key.json()["error"]["code"] == "invalid_api_key"


def test_api_keys_are_compared_with_every_configured_key(monkeypatch):
    calls = []

    def counting(a, b):
        calls.append((a, b))
        return a == b

    monkeypatch.setattr(tenant_module.hmac, "compare_digest", counting)
    keys = {f"key-{i}": f"tenant-{i}" for i in range(5)}
    assert match_key("key-0", keys) == "tenant-0" and len(calls) == 5  # no early exit
    calls.clear()
    assert match_key("nope", keys) is None and len(calls) == 5


def scrape_everything(proxy, compressor, caplog, marker: str) -> str:
    """Send the marker through every path that might log it; return logs + metrics."""
    caplog.set_level(logging.DEBUG)
    post(proxy, rag(marker), "key-a")  # compressed, memoized, registered
    post(proxy, rag(marker, stream=True), "key-a")
    compressor.fail = True  # the compressor's exception quotes the document
    post(proxy, rag(marker + "-fail"), "key-a")
    compressor.fail = False
    bad = httpx.post(f"{proxy.url}/v1/chat/completions", headers={"authorization": "Bearer x"},
                     json=rag(marker))  # fmt: skip
    assert bad.status_code == 401
    httpx.post(f"{proxy.url}/v1/{marker}", json={"x": marker})  # a path is no metrics label
    metrics = httpx.get(f"{proxy.url}/metrics", headers={"authorization": "Bearer key-a"}).text
    mine = threading.get_ident()  # this test's own client logs its request lines
    records = [r for r in caplog.records if r.thread != mine]
    logs = [r.getMessage() + "\n" + (r.exc_text or "") for r in records]
    for record in records:  # a traceback formatted later would carry it too
        if record.exc_info and record.exc_info[1] is not None:
            logs.append(repr(record.exc_info[1]))
    return metrics + "\n".join(logs)


class Quoting(HalfWords):
    """Fails, when asked to, with the document in its message (as tokenizers do)."""

    def compress(self, documents, *, question, budget):
        if self.fail:
            raise ValueError(f"cannot split {documents[0]!r}")
        return super().compress(documents, question=question, budget=budget)


@pytest.mark.parametrize("log_prompts", [False, True])
def test_no_prompt_text_in_logs_or_metrics(stub, make_proxy, caplog, log_prompts):
    canonical = {"move_volatile": True}  # its trace quotes the moved text
    compressor = Quoting()
    proxy = make_proxy([stub.url], compressor=compressor, tenancy=TENANCY,
                       compression=ALWAYS, canonical=canonical,
                       log_prompts=log_prompts)  # fmt: skip
    marker = f"zq{uuid.uuid4().hex}"
    seen = scrape_everything(proxy, compressor, caplog, marker)
    assert any("compression failed open" in r.getMessage() for r in caplog.records)
    assert (marker in seen) == log_prompts  # off: nowhere; on: the failure quotes it
