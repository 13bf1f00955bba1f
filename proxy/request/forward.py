"""Forwarding one request, as a straight line: read → parse → stages → rank → the
response path (proxy/response/: exchange, relay, response hooks), one call. Pure
ASGI: no framework Request object on the hot path.

The pass-through routes (the table in proxy/http/route_table.py) take the same path with
route "other": no stages. The upstream path is the table's, never the client's bytes.
The key is checked on the head, before the body is read and before admission: an
unauthenticated or stalled client holds no admission slot. A pass-through route keeps
tenants apart as the table says: a `salted` one gets the tenant's cache_salt over the
client's (its JSON parsed and written off the loop when big), a response id it names
must be the tenant's (proxy/tenancy/owners.py). The key is read from exactly one
Authorization header (`head_headers`), and never goes upstream.

A pass-through route that runs the model (the table's `meter`) is admitted by the
tenant's quota before it is sent, as chat is by the pipeline's quota stages (`quota`:
proxy/stages/quota.py; its JSON body parsed to size it), and the telemetry middleware
counts it in the usage report. A route that creates Responses API ids never passes the
client's `request_id` upstream: vLLM takes it as the new response's id, so a tenant
could name (and vLLM's store overwrite) another tenant's response; without it every id
is vLLM's own random one (with tenancy keys; one tenant may name its own).
Why: docs/decisions/0022-edge-and-tenant-isolation.md.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass

from starlette.types import Receive, Scope, Send

from proxy.backends.endpoint import EndpointPool
from proxy.context import SCOPE_KEY, RequestContext
from proxy.errors import InvalidRequest, PayloadTooLarge, ProxyError, describe_error
from proxy.http.capped import capped, request_id_of
from proxy.http.head import head_headers
from proxy.http.principal import EdgeIdentity
from proxy.http.route_table import Match
from proxy.prompt.body import Prompt
from proxy.request.admission import Admission
from proxy.request.parse import RequestParser, parse_json
from proxy.request.pipeline import Pipeline
from proxy.response.path import ResponsePath
from proxy.response.relay import ClientDisconnected, Reply
from proxy.routing.router import Router
from proxy.settings import TelemetrySettings
from proxy.stages.quota import QuotaStage
from proxy.tenancy.identity import Principal
from proxy.tenancy.owners import ResponseOwners
from proxy.upstream.headers import upstream_request_headers

log = logging.getLogger("ragtrim.forward")
CLIENT_RESPONSE_ID = "request_id"  # vLLM's ResponsesRequest field: the new response's id


async def read_body(receive: Receive, declared: str | None, limit: int) -> bytes:
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body exceeds {limit} bytes")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body exceeds {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


@dataclass
class Forwarder:
    pool: EndpointPool
    router: Router
    pipeline: Pipeline
    response: ResponsePath  # everything after ranking (proxy/response/)
    admission: Admission
    identity: EdgeIdentity  # the request's Principal, resolved once (proxy/http/principal.py)
    max_body_bytes: int
    log_prompts: bool
    parser: RequestParser  # the body's parse and shape caps, off the loop when big
    owners: ResponseOwners  # response id -> tenant
    telemetry: TelemetrySettings  # a longer x-request-id is replaced
    quota: QuotaStage | None  # the metered pass-through routes' admission

    async def __call__(self, scope: Scope, receive: Receive, send: Send, found: Match) -> None:
        """`found`: the data plane's match in the route table (proxy/http/route_table.py)."""
        reply = Reply(send)
        try:
            headers = head_headers(scope)
            principal = self.identity.of(scope)
            principal.require()  # on the head: 401 before the body is read
            raw = await read_body(receive, headers.get("content-length"), self.max_body_bytes)
            self.admission.enter()  # the body is in: a stalled client never holds a slot
            try:
                ctx = await self._prepare(found, raw, headers, principal)
                scope[SCOPE_KEY] = ctx  # for the telemetry middleware, before a stage refuses
                if ctx.route != "other":  # a pass-through route has no stages
                    await self.pipeline.run(ctx)
                elif self.quota is not None and found.route.meter:
                    await self.quota(ctx)  # a model run: the tenant's quota, as chat's
                await self._forward(ctx, scope, receive, reply, found.path)
            finally:
                self.admission.leave()
        except ClientDisconnected:
            pass  # counted where it was noticed; nobody is listening any more
        except ProxyError as exc:
            await reply.error(exc)
        except Exception as exc:  # a bug must still leave in the envelope, never as plain text
            detail = describe_error(exc, self.log_prompts)  # messages may quote prompts
            log.error(
                "unexpected error forwarding %s: %s",
                capped(scope.get("path"), 256),
                detail,
                exc_info=self.log_prompts,
            )
            await reply.error(ProxyError("internal error in ragtrim"))

    async def _prepare(
        self, found: Match, raw: bytes, headers: dict[str, str], principal: Principal
    ) -> RequestContext:
        request_id = request_id_of(headers.get("x-request-id"), self.telemetry.max_request_id_chars)
        route = found.route.kind
        tenant = principal.require()  # checked on the head
        if route == "other":
            return await self._pass_through(found, request_id, raw, headers, principal)
        body = await self.parser.parse(raw, route)
        previous = body.get("previous_response_id")
        if found.route.owner == "creates" and isinstance(previous, str):
            await self.owners.check(tenant, previous, "Previous response")
        ctx = RequestContext(
            request_id, route, raw, body, headers, route_match=found, principal=principal
        )
        if found.route.owner == "creates" and self.owners.enforced:
            ctx.prompt.remove(CLIENT_RESPONSE_ID)  # vLLM makes the id
        return ctx

    async def _pass_through(
        self,
        found: Match,
        request_id: str,
        raw: bytes,
        headers: dict[str, str],
        principal: Principal,
    ) -> RequestContext:
        """The table's rules for a pass-through route: the owner of a response id it
        names, the tenant's salt written over the client's, no client-chosen response
        id; a metered JSON body is parsed when quotas size it (or a batch is counted
        for the usage report). Nothing else changes."""
        spec, body, tenant = found.route, {}, principal.require()
        if spec.owner == "reads":
            await self.owners.check(tenant, found.object_id)
        salt = principal.salt if spec.salted else None
        creates = spec.owner == "creates" and self.owners.enforced
        sized = spec.reads_body and (self.quota is not None or spec.meter == "batch")
        if salt is not None or creates or sized:
            if len(raw) > self.parser.offload_bytes:
                raw, body = await asyncio.to_thread(salted, raw, salt, self.parser, creates)
            else:
                raw, body = salted(raw, salt, self.parser, creates)
        previous = body.get("previous_response_id")
        if spec.owner == "creates" and isinstance(previous, str):
            await self.owners.check(tenant, previous, "Previous response")
        return RequestContext(
            request_id, "other", raw, body, headers, route_match=found, principal=principal
        )

    async def _forward(
        self, ctx: RequestContext, scope: Scope, receive: Receive, reply: Reply, path: str
    ) -> None:
        await self.router.prepare(ctx)  # the kv_cache scorer's token ids, off the loop
        ranked = self.router.rank(ctx, self.pool.endpoints)  # the per-backend cap: filter `room`
        if ctx.route not in ("chat", "completions"):  # a pass-through, Responses or Messages
            path = _with_query(path, scope.get("query_string") or b"")
        headers = upstream_request_headers(scope["headers"], scope.get("client"), ctx.request_id)
        await self.response.relay(ctx, ranked, reply, receive, scope["method"], path, headers)


def salted(
    raw: bytes, salt: str | None, parser: RequestParser, creates: bool = False
) -> tuple[bytes, dict]:
    """(the bytes to send, the body): the JSON parsed (a 400 when it is not an object)
    and, with a salt, written again with the tenant's cache_salt over the client's;
    on a route that `creates` response ids, without the client's `request_id`."""
    body = parse_json(raw, parser.limits)
    prompt = Prompt(body)
    if salt is not None:
        prompt.set("cache_salt", salt)
    if creates:
        prompt.remove(CLIENT_RESPONSE_ID)
    return prompt.encode(raw), body


_QUERY = re.compile(rb"[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*")


def _with_query(path: str, query: bytes) -> str:
    """The table's path plus the client's query, which may hold only the characters
    RFC 3986 §3.4 allows in a query (no `#`, no spaces, no control bytes)."""
    if not query:
        return path
    if not _QUERY.fullmatch(query):
        raise InvalidRequest("the query string holds characters a URL query may not")
    return path + "?" + query.decode("ascii")
