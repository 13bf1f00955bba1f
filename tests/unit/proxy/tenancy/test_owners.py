"""Issue 33: the tenant → response id record (proxy/tenancy/owners.py) and the ids read from
/v1/responses answers (proxy/response/ids.py), called directly."""

import asyncio
import json

import pytest

from cache.store import MemoryStore
from proxy.errors import NotFound
from proxy.response.ids import WINDOW, ResponseIds, body_id
from proxy.settings import TenancySettings
from proxy.tenancy.owners import ResponseOwners
from tests.support.tapped import Tapped

TENANCY = TenancySettings(api_keys={"key-a": "acme", "key-b": "globex"},
                          salt_secret="owners-secret-16+", response_owners=2)  # fmt: skip


def test_a_response_is_its_creators_only_and_the_record_is_bounded():
    async def run():
        owners = ResponseOwners(TENANCY, MemoryStore())
        owners.record("acme", "resp_1")
        await owners.check("acme", "resp_1")
        with pytest.raises(NotFound, match="resp_1"):
            await owners.check("globex", "resp_1")
        with pytest.raises(NotFound):
            await owners.check("acme", "resp_unknown")
        owners.record("acme", "resp_2")
        owners.record("globex", "resp_3")  # resp_1 is the least recently used: forgotten
        with pytest.raises(NotFound):
            await owners.check("acme", "resp_1")  # fails closed
        await owners.check("globex", "resp_3")

    asyncio.run(run())


def test_replicas_agree_through_the_shared_store():
    async def run():
        shared = MemoryStore()
        one, two = ResponseOwners(TENANCY, shared), ResponseOwners(TENANCY, shared)
        one.shared = two.shared = shared  # as with Redis (only a RedisStore is shared)
        one.record("acme", "resp_9")
        await asyncio.gather(*one._writes)
        await two.check("acme", "resp_9")
        with pytest.raises(NotFound):
            await two.check("globex", "resp_9")

    asyncio.run(run())


def test_without_api_keys_nothing_is_recorded_or_checked():
    async def run():
        owners = ResponseOwners(TenancySettings(), MemoryStore())
        owners.record("", "resp_1")
        await owners.check("", "resp_other")

    asyncio.run(run())


def test_the_id_of_a_json_body_first_or_anywhere_in_a_small_one():
    made = json.dumps({"id": "resp_abc", "output": [{"id": "msg_1"}]}).encode()
    assert body_id([made[:5], made[5:]]) == "resp_abc"
    later = json.dumps({"object": "response", "id": "resp_late"}).encode()
    assert body_id([later]) == "resp_late"
    assert body_id([b"not json"]) is None and body_id([b'{"id": 5}']) is None


def test_the_stream_tap_finds_response_created_in_tiny_chunks_and_passes_bytes_on():
    found = []
    tap = Tapped(ResponseIds(found.append))
    text = 'said "response": {"id": "resp_fake"}'  # model text: escaped in the JSON
    event = {"response": {"id": "resp_7", "instructions": text}, "type": "response.created"}
    stream = b"data: " + json.dumps({"delta": text}).encode() + b"\n\n"
    stream += b"event: response.created\ndata: " + json.dumps(event).encode() + b"\n\n"
    out = b"".join(tap(stream[i : i + 3]) for i in range(0, len(stream), 3))
    assert out == stream and found == ["resp_7"]


def test_the_stream_tap_looks_only_at_the_first_window():
    found = []
    tap = Tapped(ResponseIds(found.append))
    tap(b" " * WINDOW)
    tap(b'data: {"response": {"id": "resp_late"}}\n\n')
    assert found == []
