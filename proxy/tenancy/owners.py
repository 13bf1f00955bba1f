"""Who owns each stored response: the Responses API's ids, kept per tenant (issue 33).

vLLM stores a response (`store=True`) under an id anyone may GET or cancel, and any
request may continue it (`previous_response_id`): behind one proxy that let tenant B
read tenant A's answer. ragtrim now records the tenant of every id a /v1/responses
answer names (the JSON body's `id`, or the `response.created` event's `response.id`:
proxy/response/hooks.py `OwnerHook`), and a GET, a cancel or a continuation naming an
id not recorded for the asking tenant is a 404 in the envelope, as OpenAI answers an
unknown id: it does not even tell B that the id exists.

The record is bounded: the `tenancy.response_owners` most recently used ids in this
process; with Redis (replicas) every id is also written to the shared store for
`tenancy.response_owner_ttl_s`, so a replica that did not see the answer agrees. It
fails closed: an id forgotten, or unreadable while Redis is down, is a 404, never
another tenant's answer. The creating request itself is never held up by it: the
shared write runs in a task after the answer is on its way. Without api_keys there is
one tenant and nothing to check (`enforced` False).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict

from cache.store import KVStore, RedisStore
from proxy.errors import NotFound
from proxy.settings import TenancySettings

log = logging.getLogger("ragtrim.owners")
PREFIX = "owner:response:"
VALID_ID = re.compile(r"[A-Za-z0-9_-]{1,256}")  # what the route table's `{id}` can name


class ResponseOwners:
    def __init__(self, tenancy: TenancySettings, store: KVStore):
        self.enforced = bool(tenancy.api_keys)
        self.capacity = tenancy.response_owners
        self.ttl = tenancy.response_owner_ttl_s
        # Redis is shared by the replicas; the in-process store would only copy _local
        self.shared: KVStore | None = store if isinstance(store, RedisStore) else None
        self._local: OrderedDict[str, str] = OrderedDict()  # id -> tenant, LRU first
        self._writes: set[asyncio.Task[None]] = set()  # shared writes in flight

    def record(self, tenant: str, response_id: str) -> None:
        """Called from a response hook: never raises, never waits."""
        if not self.enforced or not VALID_ID.fullmatch(response_id):
            return
        self._local[response_id] = tenant
        self._local.move_to_end(response_id)
        while len(self._local) > self.capacity:
            self._local.popitem(last=False)
        if self.shared is not None:
            task = asyncio.get_running_loop().create_task(self._share(tenant, response_id))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

    async def _share(self, tenant: str, response_id: str) -> None:
        assert self.shared is not None
        try:
            await self.shared.set(PREFIX + response_id, tenant.encode(), ttl=self.ttl)
        except Exception as exc:  # noqa: BLE001 - this replica still knows; others fail closed
            log.warning("response owner not shared: %s", type(exc).__name__)

    async def owner_of(self, response_id: str) -> str | None:
        tenant = self._local.get(response_id)
        if tenant is not None:
            self._local.move_to_end(response_id)
            return tenant
        if self.shared is None:
            return None
        try:
            raw = await self.shared.get(PREFIX + response_id)
        except Exception as exc:  # noqa: BLE001 - unknown is a 404 (fails closed)
            log.warning("response owner unreadable: %s", type(exc).__name__)
            return None
        return raw.decode() if raw is not None else None

    async def check(self, tenant: str, response_id: str, what: str = "Response") -> None:
        """A 404 unless `response_id` was recorded for `tenant`."""
        if not self.enforced:
            return
        if await self.owner_of(response_id) != tenant:
            shown = response_id[:64]
            raise NotFound(f"{what} with id '{shown}' not found.", code="not_found")
