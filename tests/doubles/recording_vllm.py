"""A stub vLLM that answers every route ragtrim's table passes through (issue 33) and
records what reached it: method, path, headers and the JSON body's `cache_salt`.

It keeps the Responses API's state as vLLM does with `store=True`: a POST to
/v1/responses creates `resp_<n>` (non-streamed: a JSON body with `id` first; streamed:
a `response.created` event, then `response.completed`), GET /v1/responses/{id} returns
it with its `output_text`, POST .../cancel answers it. The chat and completions routes
and /v1/models are the plain stub's (tests.doubles.stub_vllm).
"""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from tests.doubles.stub_vllm import StubVllm

JSON_HEADERS = [(b"content-type", b"application/json")]


class RecordingVllm:
    def __init__(self) -> None:
        self.stub = StubVllm()
        self.seen: list[dict[str, Any]] = []
        self.responses: dict[str, dict[str, Any]] = {}
        self._ids = count(1)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.stub(scope, receive, send)
            return
        body = await _body(receive)
        path, method = scope["path"], scope["method"]
        seen = {"method": method, "path": path, "headers": _headers(scope), "body": body}
        seen["cache_salt"] = _salt(body)
        if path.startswith("/v1/responses") and path != "/v1/responses/render":
            self.seen.append(seen)
            await self._responses(method, path, body, send)
            return
        if path not in ("/v1/models", "/health"):
            self.seen.append(seen)
        if path in ("/v1/chat/completions", "/v1/completions", "/v1/models", "/health"):
            await self.stub(scope, _replay(body, receive), send)
        else:
            await _json(send, 200, {"object": "list", "data": [], "path": path})

    def at(self, path: str) -> list[dict[str, Any]]:
        return [s for s in self.seen if s["path"] == path]

    async def _responses(self, method: str, path: str, body: bytes, send) -> None:
        parts = path.split("/")  # "", v1, responses[, id[, cancel]]
        if len(parts) == 3:
            req = json.loads(body or b"{}")
            rid = f"resp_{next(self._ids)}"
            made = {"id": rid, "object": "response", "status": "completed",
                    "output_text": f"secret of {req.get('input')}"}  # fmt: skip
            self.responses[rid] = made
            if req.get("stream"):
                await _sse(send, made)
            else:
                await _json(send, 200, made)
            return
        found = self.responses.get(parts[3])
        if found is None:
            await _json(send, 404, {"error": {"message": "not found", "type": "NotFound"}})
        else:
            await _json(send, 200, {**found, "status": "cancelled"} if len(parts) == 5 else found)


async def _body(receive) -> bytes:
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            return body


def _replay(body: bytes, receive):
    """The body once more, then the connection's own messages (a disconnect)."""
    sent = False

    async def again():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def _headers(scope) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]


def _salt(body: bytes) -> Any:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data.get("cache_salt") if isinstance(data, dict) else None


async def _json(send, status: int, payload: dict) -> None:
    body = json.dumps(payload).encode()
    headers = [*JSON_HEADERS, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _sse(send, made: dict) -> None:
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    created = {"response": {**made, "status": "in_progress"}, "sequence_number": 0,
               "type": "response.created"}  # fmt: skip
    done = {"response": made, "sequence_number": 1, "type": "response.completed"}
    for event in (created, done):
        data = b"event: " + event["type"].encode() + b"\ndata: " + json.dumps(event).encode()
        await send({"type": "http.response.body", "body": data + b"\n\n", "more_body": True})
    await send({"type": "http.response.body", "body": b""})
