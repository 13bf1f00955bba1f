"""Forwarding one request, as a straight line: read → parse → stages → rank → the
response path (proxy/response/: exchange, relay, response hooks), one call. Pure
ASGI: no framework Request object on the hot path.

The pass-through routes (the table in proxy/http/routes.py) take the same path with
route "other": no parsing, no stages. The upstream path is the table's, never the
client's bytes. The key is checked on the head, before the body is read and before
admission: an unauthenticated or stalled client holds no admission slot (issue 23).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import Receive, Scope, Send

from proxy.admission import Admission
from proxy.context import RequestContext
from proxy.errors import InvalidRequest, PayloadTooLarge, ProxyError
from proxy.pipeline import Pipeline, describe_error
from proxy.protocol import RequestParser
from proxy.relay import ClientDisconnected, Reply
from proxy.response.path import ResponsePath
from proxy.routing.endpoint import EndpointPool
from proxy.routing.router import Router
from proxy.upstream.headers import upstream_request_headers

log = logging.getLogger("ragtrim.forward")


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
    authenticate: Callable[[dict[str, str]], str]  # the tenant stage's, for pass-through
    max_body_bytes: int
    log_prompts: bool
    parser: RequestParser  # the body's parse and shape caps, off the loop when big (issue 33)

    async def __call__(self, scope: Scope, receive: Receive, send: Send, route: str,
                       path: str) -> None:  # fmt: skip
        """`route` and `path` come from the route table (proxy/http/routes.py)."""
        reply = Reply(send)
        try:
            headers = head_headers(scope)
            tenant = self.authenticate(headers)  # on the head: 401 before the body is read
            raw = await read_body(receive, headers.get("content-length"), self.max_body_bytes)
            self.admission.enter()  # the body is in: a stalled client never holds a slot
            try:
                ctx = await self._prepare(route, raw, headers, tenant)
                await self._forward(ctx, scope, receive, reply, path)
            finally:
                self.admission.leave()
        except ClientDisconnected:
            pass  # counted where it was noticed; nobody is listening any more
        except ProxyError as exc:
            await reply.error(exc)
        except Exception as exc:  # a bug must still leave in the envelope, never as plain text
            detail = describe_error(exc, self.log_prompts)  # messages may quote prompts
            log.error("unexpected error forwarding %s: %s", scope.get("path"), detail,
                      exc_info=self.log_prompts)  # fmt: skip
            await reply.error(ProxyError("internal error in ragtrim"))

    async def _prepare(self, route: str, raw: bytes, headers: dict[str, str],
                       tenant: str) -> RequestContext:  # fmt: skip
        request_id = headers.get("x-request-id") or uuid.uuid4().hex
        if route == "other":  # relayed unchanged (the key was checked on the head)
            ctx = RequestContext(request_id, route, raw, {}, headers)
            ctx.tenant = tenant
            return ctx
        body = await self.parser.parse(raw, route)
        ctx = RequestContext(request_id, route, raw, body, headers)
        await self.pipeline.run(ctx)
        return ctx

    async def _forward(self, ctx: RequestContext, scope: Scope, receive: Receive,
                       reply: Reply, path: str) -> None:  # fmt: skip
        await self.router.prepare(ctx)  # the kv_cache scorer's token ids, off the loop
        ranked = self.router.rank(ctx, self.pool.endpoints)  # the per-backend cap: filter `room`
        if ctx.route == "other":
            path = _with_query(path, scope.get("query_string") or b"")
        headers = upstream_request_headers(scope["headers"], scope.get("client"))
        await self.response.relay(ctx, ranked, reply, receive, scope["method"], path, headers)


def head_headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


_QUERY = re.compile(rb"[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*")


def _with_query(path: str, query: bytes) -> str:
    """The table's path plus the client's query, which may hold only the characters
    RFC 3986 §3.4 allows in a query (no `#`, no spaces, no control bytes)."""
    if not query:
        return path
    if not _QUERY.fullmatch(query):
        raise InvalidRequest("the query string holds characters a URL query may not")
    return path + "?" + query.decode("ascii")
