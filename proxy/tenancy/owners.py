"""Who owns each stored response: the Responses API's ids, kept per tenant.

vLLM stores a response (`store=True`) under an id anyone may GET or cancel, and any
request may continue it (`previous_response_id`): behind one proxy that lets tenant B
read tenant A's answer. ragtrim records the tenant of every id a stored /v1/responses
answer names (the JSON body's `id`, or the `response.created` event's `response.id`:
proxy/response/hooks.py `OwnerHook`), and a GET, a cancel or a continuation naming an
id not recorded for the asking tenant is a 404 in the envelope, as OpenAI answers an
unknown id: it does not even tell B that the id exists.

An id belongs to whoever first stored it (why:
docs/decisions/0041-tenancy-quotas-accounting-owners.md). The forwarder does not pass a
client's `request_id` (proxy/request/forward.py), so ids are vLLM's random ones; here
the first writer wins all the same: a record naming
another tenant is never overwritten in process, and the shared record is claimed with
SET NX (one script: the claim, or the owner it already has, which this replica then
defers to).

The record is bounded, and each tenant has its own share of it: `tenancy.response_owners`
divided by the configured tenants, each share its tenant's most recently used ids, so
one tenant's flood never evicts another's records. With Redis (replicas) every id is
also written to the shared store for `tenancy.response_owner_ttl_s`, so a replica (or a
worker) that did not see the answer agrees; without Redis a process knows only its own,
which is why ragtrim refuses `--workers` > 1 with tenancy and no Redis
(proxy/server/workers.py). It fails closed: an id forgotten, or unreadable while Redis is
down, is a 404, never another tenant's answer. The creating request itself is never held
up by it: the shared write runs in a task after the answer is on its way. Without
api_keys there is one tenant and nothing to check (`enforced` False).
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
# The claim: the id's owner is ARGV[1] unless it has one already; returns the owner.
CLAIM_LUA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return ARGV[1] end
return redis.call('GET', KEYS[1])
"""


class ResponseOwners:
    def __init__(self, tenancy: TenancySettings, store: KVStore):
        self.enforced = bool(tenancy.api_keys)
        tenants = max(1, len(set(tenancy.api_keys.values())))
        self.share = max(1, tenancy.response_owners // tenants)  # ids each tenant keeps
        self.ttl = tenancy.response_owner_ttl_s
        # Redis is shared by the replicas; the in-process store would only copy _owner
        self.shared: KVStore | None = store if isinstance(store, RedisStore) else None
        self._owner: dict[str, str] = {}  # id -> tenant
        self._recent: dict[str, OrderedDict[str, None]] = {}  # tenant -> its ids, LRU first
        self._writes: set[asyncio.Task[None]] = set()  # shared writes in flight

    def record(self, tenant: str, response_id: str) -> None:
        """Called from a response hook: never raises, never waits. First writer wins."""
        if not self.enforced or not VALID_ID.fullmatch(response_id):
            return
        owner = self._owner.get(response_id)
        if owner is not None and owner != tenant:
            log.warning("a stored response id named again by another tenant: kept its owner")
            return
        self._remember(tenant, response_id)
        if self.shared is not None:
            task = asyncio.get_running_loop().create_task(self._share(tenant, response_id))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)

    def _remember(self, tenant: str, response_id: str) -> None:
        """Into `tenant`'s share, most recent last; its own oldest id leaves when full."""
        self._owner[response_id] = tenant
        recent = self._recent.setdefault(tenant, OrderedDict())
        recent[response_id] = None
        recent.move_to_end(response_id)
        while len(recent) > self.share:
            oldest, _ = recent.popitem(last=False)
            self._owner.pop(oldest, None)

    def _forget(self, response_id: str) -> None:
        tenant = self._owner.pop(response_id, None)
        if tenant is not None:
            self._recent[tenant].pop(response_id, None)

    async def _share(self, tenant: str, response_id: str) -> None:
        shared, key = self.shared, PREFIX + response_id
        assert shared is not None

        async def here() -> bytes | str:
            """No script engine (Redis down: its in-process fallback): get, then set."""
            found = await shared.get(key)
            if found is None:
                await shared.set(key, tenant.encode(), ttl=self.ttl)
            return found or tenant

        try:
            args = [tenant, max(1, int(self.ttl * 1000))]
            first = await shared.eval(CLAIM_LUA, [key], args, here)
        except Exception as exc:  # noqa: BLE001 - this replica still knows; others fail closed
            log.warning("response owner not shared: %s", type(exc).__name__)
            return
        if isinstance(first, bytes):
            first = first.decode()
        if first != tenant:  # another replica's tenant was first
            self._forget(response_id)  # from now on the shared record answers

    async def owner_of(self, response_id: str) -> str | None:
        tenant = self._owner.get(response_id)
        if tenant is not None:
            self._recent[tenant].move_to_end(response_id)
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
