"""The fastest upstream we can write in Python: raw asyncio HTTP/1.1 keep-alive,
canned answers. The overhead benchmark measures proxies in front of it, so the
stub's own cost must be small and identical for every path.

    POST /v1/chat/completions  JSON, or SSE (4 events + usage + [DONE]) when the
                               body has "stream": true
    GET  /v1/models, /health   a model list (ragtrim's health check)

Run: python -m tests.doubles.fast_stub --port 8199
"""

from __future__ import annotations

import argparse
import asyncio
import json

MODEL = "stub-model"
_ANSWER = json.dumps({
    "id": "cmpl-stub", "object": "chat.completion", "model": MODEL,
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}).encode()  # fmt: skip
_MODELS = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()


def _event(i: int) -> bytes:
    choice = {"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}
    data = {"id": "cmpl-stub", "object": "chat.completion.chunk", "model": MODEL,
            "choices": [choice]}  # fmt: skip
    return b"data: " + json.dumps(data).encode() + b"\n\n"


_USAGE = b'data: {"id":"cmpl-stub","choices":[],"usage":{"prompt_tokens":5,' + (
    b'"completion_tokens":4,"total_tokens":9,"prompt_tokens_details":{"cached_tokens":0}}}\n\n'
)
_SSE_BODY = b"".join(_event(i) for i in range(4)) + _USAGE + b"data: [DONE]\n\n"


def _response(body: bytes, ctype: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: " + ctype + b"\r\ncontent-length: "
    return head + str(len(body)).encode() + b"\r\n\r\n" + body


def _chunked_sse() -> bytes:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    return head + b"%x\r\n" % len(_SSE_BODY) + _SSE_BODY + b"\r\n0\r\n\r\n"


JSON_REPLY = _response(_ANSWER, b"application/json")
MODELS_REPLY = _response(_MODELS, b"application/json")
SSE_REPLY = _chunked_sse()


class StubProtocol(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buf = transport, b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].lower()
            start = head.find(b"content-length:")
            length = int(head[start + 15 :].split(b"\r\n", 1)[0]) if start >= 0 else 0
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4 : end + 4 + length]
            self.buf = self.buf[end + 4 + length :]
            self.transport.write(self._reply(head, body))

    @staticmethod
    def _reply(head: bytes, body: bytes) -> bytes:
        if head.startswith(b"get"):
            return MODELS_REPLY
        return SSE_REPLY if b'"stream":true' in body.replace(b" ", b"") else JSON_REPLY


async def serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(StubProtocol, "127.0.0.1", port, backlog=2048)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8199)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
