"""A misbehaving "vLLM": a small raw-asyncio HTTP/1.1 server that writes exactly the
bytes it is told to, which no ASGI server would (status 999, a 307 to an internal
URL, a text/plain traceback, SSE delimited by CRLF CRLF, unparseable usage).

Health checks (GET /v1/models) get a normal model list, so ragtrim routes to it.
A completion picks its misbehaviour with an extra body field, forwarded by ragtrim
unchanged: `"hostile": "<mode>"` (MODES below; "ok" answers like vLLM would).
Streamed modes send their events `"gap"` seconds apart (default 0.2 s).

Used by bench.abuse (a subprocess: `python -m tests.doubles.hostile_upstream --port N`) and
by ragtrim's unit tests (in a thread: `HostileUpstream().start()`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading

GOOD_USAGE = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
BAD_USAGE = {"prompt_tokens": "lots", "prompt_tokens_details": {"cached_tokens": "many"}}
TRACEBACK = b'Traceback (most recent call last):\n  File "/srv/vllm/secret.py", line 1\n'


def completion(usage: object) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": "hello"}}
    body = {"id": "cmpl-h", "object": "chat.completion", "choices": [choice], "usage": usage}
    return json.dumps(body).encode()


def sse_events(n: int, usage: object = GOOD_USAGE) -> list[bytes]:
    """n content events, the usage chunk, then [DONE]: each a JSON text (no framing)."""
    out = []
    for i in range(n):
        delta = {"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}
        out.append(json.dumps({"id": "cmpl-h", "choices": [delta]}).encode())
    out.append(json.dumps({"id": "cmpl-h", "choices": [], "usage": usage}).encode())
    return [*out, b"[DONE]"]


def head(status: int, ctype: bytes, length: int | None, extra: bytes = b"") -> bytes:
    size = b"content-length: %d\r\n" % length if length is not None else b""
    chunked = b"" if length is not None else b"transfer-encoding: chunked\r\n"
    return b"HTTP/1.1 %d X\r\ncontent-type: %s\r\n%s%s%s\r\n" % (
        status, ctype, size, chunked, extra,
    )  # fmt: skip


def whole(status: int, ctype: bytes, body: bytes, extra: bytes = b"") -> bytes:
    return head(status, ctype, len(body), extra) + body


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


FIXED = {
    "ok": lambda: whole(200, b"application/json", completion(GOOD_USAGE)),
    "bad_usage": lambda: whole(200, b"application/json", completion(BAD_USAGE)),
    "status_999": lambda: whole(999, b"application/json", completion(GOOD_USAGE)),
    "text_500": lambda: whole(500, b"text/plain", TRACEBACK),
    "json_500": lambda: whole(
        500, b"application/json", b'{"error": {"message": "at /srv/vllm/x.py", "type": "E"}}'
    ),
    "redirect_307": lambda: whole(
        307, b"text/plain", b"", b"location: http://10.0.0.7:8000/internal/admin\r\n"
    ),
    "text_200": lambda: whole(200, b"text/plain", b"hello in plain text"),
    "json_for_stream": lambda: whole(200, b"application/json", completion(GOOD_USAGE)),
}
DELIMITERS = {"crlf_sse": b"\r\n\r\n", "cr_sse": b"\r\r", "lf_sse": b"\n\n", "mixed_sse": None}
MODES = sorted([*FIXED, *DELIMITERS, "huge_body", "bad_usage_sse", "endless_event"])


class HostileUpstream:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, model: str = "stub-model"):
        self.host, self.port = host, port
        self.models = {"object": "list", "data": [{"id": model, "object": "model"}]}
        self.modes_seen: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def serve(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _one(self, reader, writer) -> bool:
        raw = await reader.readuntil(b"\r\n\r\n")
        line, *lines = raw.decode("latin-1").split("\r\n")
        fields = dict(h.split(":", 1) for h in lines if ":" in h)
        length = int({k.lower(): v for k, v in fields.items()}.get("content-length", "0"))
        body = json.loads(await reader.readexactly(length) or b"{}")
        if line.startswith("GET"):
            writer.write(whole(200, b"application/json", json.dumps(self.models).encode()))
            await writer.drain()
            return True
        mode = str(body.get("hostile", "ok"))
        self.modes_seen.append(mode)
        await self._answer(writer, mode, body)
        return mode in ("ok", "bad_usage", "json_500", "text_200", "json_for_stream")

    async def _answer(self, writer, mode: str, body: dict) -> None:
        gap = float(body.get("gap", 0.2))
        if mode in FIXED:
            writer.write(FIXED[mode]())
        elif mode == "huge_body":
            await _huge(writer, int(body.get("mb", 300)))
        elif mode == "endless_event":
            await _endless(writer, int(body.get("mb", 64)))
        else:
            usage = BAD_USAGE if mode == "bad_usage_sse" else GOOD_USAGE
            await _sse(writer, DELIMITERS.get(mode, b"\n\n"), gap, usage)
        await writer.drain()

    def start(self) -> HostileUpstream:
        """Serve from a background thread (tests); returns once it listens."""
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.serve())
            ready.set()
            self._loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)

    async def _shutdown(self) -> None:
        assert self._server is not None and self._loop is not None
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loop.call_soon(self._loop.stop)


async def _sse(writer, delimiter: bytes | None, gap: float, usage: object) -> None:
    writer.write(head(200, b"text/event-stream", None))
    cycle = [b"\r\n\r\n", b"\r\r", b"\n\n", b"\n\r\n", b"\r\n\n"]
    for i, data in enumerate(sse_events(5, usage)):
        end = delimiter if delimiter is not None else cycle[i % len(cycle)]
        writer.write(_chunk(b"data: " + data + end))
        await writer.drain()
        await asyncio.sleep(gap)
    writer.write(b"0\r\n\r\n")


async def _huge(writer, mb: int) -> None:
    """A JSON completion of `mb` MB: a giant content string, usage at the end."""
    pad = b"x" * (1 << 20)
    prefix = b'{"id":"h","choices":[{"index":0,"message":{"content":"'
    suffix = b'"}}],"usage":' + json.dumps(GOOD_USAGE).encode() + b"}"
    writer.write(head(200, b"application/json", len(prefix) + mb * len(pad) + len(suffix)))
    writer.write(prefix)
    for _ in range(mb):
        writer.write(pad)
        await writer.drain()
    writer.write(suffix)


async def _endless(writer, mb: int) -> None:
    """One SSE event that never ends: `mb` MB of data without a blank line."""
    writer.write(head(200, b"text/event-stream", None) + _chunk(b"data: "))
    pad = _chunk(b"x" * (1 << 20))
    for _ in range(mb):
        writer.write(pad)
        await writer.drain()
    writer.write(b"0\r\n\r\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8299)
    parser.add_argument("--model", default="stub-model")
    args = parser.parse_args(argv)
    upstream = HostileUpstream(args.host, args.port, args.model)

    async def run() -> None:
        await upstream.serve()
        await asyncio.Event().wait()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
