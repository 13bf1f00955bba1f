"""Issue 44 item 2: a stored response belongs to whoever first stored it. Tenant B cannot
read, continue, cancel or evict tenant A's response: with a `request_id` equal to A's
id, with `store: false`, after a flood of B's responses, and across two ragtrims that
share Redis (what `--workers 2` needs: tests/unit/proxy/server/test_shared_state.py)."""

import asyncio
import json
import time
import uuid

import httpx
import pytest

from cache.store import MemoryStore, RedisStore
from proxy.http.route_table import match
from proxy.response.hooks import OwnerHook
from proxy.settings import TenancySettings
from proxy.tenancy.owners import ResponseOwners
from tests.support.exchanges import ctx as make_ctx
from tests.support.exchanges import exchange
from tests.support.redis_server import RedisServer
from tests.support.servers import free_port, serving

KEYS = {"key-a": "acme", "key-b": "globex"}
TENANCY = {"api_keys": KEYS, "salt_secret": "owner-claims-secret-16+"}
ACME, GLOBEX = ({"authorization": f"Bearer {k}"} for k in KEYS)


class ResponsesStore:
    """vLLM 0.32's Responses store, as the probe met it: a client's `request_id` is the
    new response's id, `store` defaults to true, a stored id is overwritten by a later
    stored response with the same id; GET and cancel read the store."""

    def __init__(self) -> None:
        self.stored: dict[str, dict] = {}
        self.bodies: list[dict] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            msg = await receive()
            raw += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        parts = scope["path"].split("/")  # "", v1, responses[, id[, cancel]]
        if scope["path"] == "/v1/models":
            await _json(send, 200, {"object": "list", "data": [{"id": "stub-model"}]})
        elif len(parts) == 3:
            await self._create(json.loads(raw), send)
        else:
            found = self.stored.get(parts[3])
            status, out = (404, {"error": {"message": "nf"}}) if found is None else (200, found)
            await _json(send, status, out)

    async def _create(self, body: dict, send) -> None:
        self.bodies.append(body)
        rid = body.get("request_id") or f"resp_{uuid.uuid4().hex}"
        made = {"id": rid, "object": "response", "output_text": f"text of {body.get('input')}"}
        if body.get("store", True):
            self.stored[rid] = made
        await _json(send, 200, made)


async def _json(send, status: int, payload: dict) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})  # fmt: skip
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


@pytest.fixture
def store_backend():
    backend = ResponsesStore()
    with serving(backend) as server:
        server.backend = backend
        yield server


def create(proxy, key, text: str, **extra) -> httpx.Response:
    body = {"model": "stub-model", "input": text, **extra}
    return httpx.post(f"{proxy.url}/v1/responses", json=body, headers=key)


def assert_b_locked_out(proxy, rid: str) -> None:
    """B's GET, cancel and continuation of A's id are 404s; A still reads its own text."""
    assert httpx.get(f"{proxy.url}/v1/responses/{rid}", headers=GLOBEX).status_code == 404
    assert httpx.post(f"{proxy.url}/v1/responses/{rid}/cancel", headers=GLOBEX).status_code == 404
    assert create(proxy, GLOBEX, "and?", previous_response_id=rid).status_code == 404
    mine = httpx.get(f"{proxy.url}/v1/responses/{rid}", headers=ACME)
    assert mine.status_code == 200 and mine.json()["output_text"] == "text of acme's plan"


@pytest.mark.parametrize("store", [False, True])
def test_b_naming_as_id_as_its_request_id_gets_nothing_of_as(store_backend, make_proxy, store):
    proxy = make_proxy([store_backend.url], tenancy=TENANCY)
    rid = create(proxy, ACME, "acme's plan").json()["id"]
    taken = create(proxy, GLOBEX, "globex's plan", request_id=rid, store=store)
    assert taken.status_code == 200 and taken.json()["id"] != rid  # vLLM made B's id
    assert "request_id" not in store_backend.backend.bodies[-1]  # never passed upstream
    assert_b_locked_out(proxy, rid)


def test_b_flooding_responses_evicts_none_of_as(store_backend, make_proxy):
    """Over HTTP with a small record (40 ids: 20 a tenant); test_a_flood_of_20000_... is
    the same through the hook at the default size."""
    proxy = make_proxy([store_backend.url], tenancy={**TENANCY, "response_owners": 40})
    rid = create(proxy, ACME, "acme's plan").json()["id"]
    for i in range(60):
        assert create(proxy, GLOBEX, f"flood {i}", store=i % 2 == 0).status_code == 200
    assert_b_locked_out(proxy, rid)


def test_a_flood_of_20000_responses_stored_or_not_evicts_no_other_tenants_owner():
    owners = ResponseOwners(TenancySettings(**TENANCY), MemoryStore())  # 20,000: the default
    hook = OwnerHook(owners)
    found = match("/v1/responses")

    def answered(tenant: str, rid: str, store: bool | None) -> None:
        ctx = make_ctx(route="responses")
        ctx.route_match, ctx.tenant = found, tenant
        if store is not None:
            ctx.body["store"] = store
        hook.body(ctx, exchange(), [json.dumps({"id": rid, "object": "response"}).encode()])

    async def run():
        answered("acme", "resp_acme", None)  # store absent: vLLM's default, stored
        for i in range(20_000):
            answered("globex", f"resp_g{i}", store=i % 2 == 0)
        await owners.check("acme", "resp_acme")
        with pytest.raises(Exception, match="not found"):
            await owners.check("globex", "resp_acme")
        with pytest.raises(Exception, match="not found"):
            await owners.check("globex", "resp_g1")  # store: false was never recorded
        await owners.check("globex", "resp_g19998")

    asyncio.run(run())


def test_in_process_the_first_writer_keeps_the_id():
    async def run():
        owners = ResponseOwners(TenancySettings(**TENANCY), MemoryStore())
        owners.record("acme", "resp_1")
        owners.record("globex", "resp_1")  # last writer: ignored
        await owners.check("acme", "resp_1")
        with pytest.raises(Exception, match="not found"):
            await owners.check("globex", "resp_1")

    asyncio.run(run())


def test_replicas_sharing_redis_defer_to_the_first_writer():
    """Two processes (two workers, or two replicas) that each saw a different tenant
    name the same id: the shared record (SET NX) keeps the first, and the second
    process forgets its own claim."""
    server = RedisServer(free_port()).start()

    async def run():
        stores = [RedisStore(server.url), RedisStore(server.url)]
        one, two = (ResponseOwners(TenancySettings(**TENANCY), s) for s in stores)
        try:
            one.record("acme", "resp_x")
            await asyncio.gather(*one._writes)
            two.record("globex", "resp_x")
            await asyncio.gather(*two._writes)
            for owners in (one, two):
                await owners.check("acme", "resp_x")
                with pytest.raises(Exception, match="not found"):
                    await owners.check("globex", "resp_x")
        finally:
            for store in stores:
                await store.aclose()

    try:
        asyncio.run(run())
    finally:
        server.kill()


def test_two_ragtrims_sharing_redis_agree_on_owners(store_backend, make_proxy):
    """`--workers 2` with Redis: a response made through one process is its owner's
    through the other, and B naming its id through the other takes nothing."""
    server = RedisServer(free_port()).start()
    try:
        opts = {"tenancy": TENANCY, "redis": {"url": server.url}}
        one, two = make_proxy([store_backend.url], **opts), make_proxy([store_backend.url], **opts)
        rid = create(one, ACME, "acme's plan").json()["id"]
        for _ in range(50):  # the shared write runs after the answer: wait for it
            if httpx.get(f"{two.url}/v1/responses/{rid}", headers=ACME).status_code == 200:
                break
            time.sleep(0.02)
        for store in (False, True):
            assert create(two, GLOBEX, "globex's plan", request_id=rid, store=store).is_success
        time.sleep(0.1)  # any shared write of B's has landed
        for proxy in (one, two):
            assert_b_locked_out(proxy, rid)
    finally:
        server.kill()
