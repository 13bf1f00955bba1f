"""Tenancy (cache_salt) and the canonicalize stage through a real ragtrim + stub."""

import httpx

TENANCY = {
    "api_keys": {"key-a": "acme", "key-b": "globex"},
    "salt_secret": "tenant-canonical-secret",
}


def chat(system: str, **extra) -> dict:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]
    return {"model": "stub-model", "messages": messages, "stub": {"echo": True}, **extra}


def post(proxy, body, key=None) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{proxy.url}/v1/chat/completions", json=body, headers=headers)


def test_cache_salt_from_tenant_overwrites_client_value(stub, make_proxy):
    proxy = make_proxy([stub.url], tenancy=TENANCY)
    a = post(proxy, chat("sys"), "key-a").json()["echo"]["cache_salt"]
    spoofed = post(proxy, chat("sys", cache_salt="other"), "key-a").json()["echo"]["cache_salt"]
    b = post(proxy, chat("sys"), "key-b").json()["echo"]["cache_salt"]
    assert a == spoofed != b
    denied = post(proxy, chat("sys"), "nope")
    assert denied.status_code == 401
    assert denied.json()["error"]["code"] == "invalid_api_key"


def test_without_tenancy_client_salt_passes(stub, make_proxy):
    proxy = make_proxy([stub.url])
    assert post(proxy, chat("sys", cache_salt="mine")).json()["echo"]["cache_salt"] == "mine"


def test_static_prefix_normalised_and_keyed(stub, make_proxy):
    rules = {"move_volatile": True, "normalize_newlines": True, "strip_trailing_whitespace": True}
    proxy = make_proxy([stub.url], canonical=rules)
    one = post(proxy, chat("You are helpful.  \r\nToday is 2026-11-29.\r\nBe brief."))
    two = post(proxy, chat("You are helpful.\nToday is 2026-11-30.\nBe brief."))
    assert one.headers["x-ragtrim-prefix-key"] == two.headers["x-ragtrim-prefix-key"]
    sent = one.json()["echo"]["messages"][0]["content"]
    assert sent.startswith("You are helpful.\nBe brief.") and "2026-11-29" in sent
    other = post(proxy, chat("You are terse."))
    assert other.headers["x-ragtrim-prefix-key"] != one.headers["x-ragtrim-prefix-key"]


def test_tools_order_does_not_change_the_key(stub, make_proxy):
    proxy = make_proxy([stub.url])
    f1 = {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}
    f2 = {"function": {"parameters": {"type": "object"}, "name": "b"}, "type": "function"}
    k1 = post(proxy, chat("sys", tools=[f1, f2])).headers["x-ragtrim-prefix-key"]
    k2 = post(proxy, chat("sys", tools=[f2, f1])).headers["x-ragtrim-prefix-key"]
    assert k1 == k2
