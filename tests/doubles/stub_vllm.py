"""A fast fake vLLM for the overhead benchmark and the proxy's own tests.

It answers at once: JSON, or SSE with `chunks` events (default 20). A request can
steer it through an extra body field (ragtrim forwards unknown fields unchanged):

    "stub": {"delay": s, "chunk_delay": s, "chunks": n, "status": code,
             "fail_after": n, "model": name, "echo": true}

`echo` returns the request body it received under "echo" (non-streaming). With
`stream_options.include_usage` a stream ends with a usage chunk (`choices: []`).

`fail_after` drops the connection after n SSE events (a mid-stream failure);
`delay` waits before the response headers. GET /stub/stats reports how many
requests started, finished, and were aborted by the client (the proxy closing
its upstream connection); POST /stub/reset clears it (and the prefix cache).

GET /stub/requests lists what each completion request carried, as the backend saw
it (the last `RECORDS` of them): its `stub.tag` (a client's own label, forwarded by
ragtrim unchanged), its `cache_salt`, and the characters of each message (or of the
prompt). bench.abuse checks with it that no tenant's request reached the backend
under another tenant's salt, and that no context arrived empty. With `stub.keep_text`
the record also holds each message's content (bench.followups reads what was sent).

By default it answers at once with fixed usage (5 prompt tokens). With a
`PrefillSim` (prefill_sim.py) it behaves like a GPU-speed vLLM instead: the first
token waits `base + per_token × uncached prompt tokens`, a 16-token-block prefix
cache serves repeated prefixes, usage reports real prompt tokens and
`prompt_tokens_details.cached_tokens`, and GET /metrics exports vLLM's prefill
series. `root` puts a model dir in the /v1/models card, as vLLM does.

Run: python -m tests.doubles.stub_vllm --port 8199 [--model NAME]
         [--per-token-ms 0.1 [--base-ms 15] [--tokenizer DIR] [--cache-blocks N]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import deque

from tests.doubles.prefill_sim import PrefillSim

MODEL = "stub-model"
FIXED_USAGE = (5, 0)  # prompt tokens, cached tokens without a PrefillSim
RECORDS = 100_000  # completion requests remembered for GET /stub/requests


def _chars(content) -> int:
    """Characters of a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
    return 0


def record_of(req: dict, path: str) -> dict:
    messages = req.get("messages")
    if isinstance(messages, list):
        sizes = [_chars(m.get("content")) for m in messages if isinstance(m, dict)]
    else:
        sizes = [_chars(req.get("prompt"))]
    stub = req.get("stub") if isinstance(req.get("stub"), dict) else {}
    record = {"path": path, "tag": stub.get("tag"), "cache_salt": req.get("cache_salt"),
              "chars": sizes}  # fmt: skip
    if stub.get("keep_text") and isinstance(messages, list):  # bench.followups' retention
        record["texts"] = [m.get("content") for m in messages if isinstance(m, dict)]
    return record


def _usage(prompt: int, cached: int, completion: int) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}  # fmt: skip


def _completion(model: str, chat: bool, usage: dict) -> dict:
    choice = (
        {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
        if chat
        else {"index": 0, "text": "hello", "finish_reason": "stop"}
    )
    return {"id": "cmpl-stub", "object": "chat.completion", "model": model,
            "choices": [choice], "usage": usage}  # fmt: skip


def _event(model: str, chat: bool, i: int) -> bytes:
    delta = {"delta": {"content": f"t{i} "}} if chat else {"text": f"t{i} "}
    data = {"id": "cmpl-stub", "object": "chat.completion.chunk", "model": model,
            "choices": [{"index": 0, **delta, "finish_reason": None}]}  # fmt: skip
    return b"data: " + json.dumps(data).encode() + b"\n\n"


class StubVllm:
    def __init__(self, model: str = MODEL, *, prefill: PrefillSim | None = None, root: str = ""):
        self.model = model
        self.prefill = prefill
        self.root = root
        self.stats = {"started": 0, "finished": 0, "aborted": 0}
        self.requests: deque[dict] = deque(maxlen=RECORDS)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        path = scope["path"]
        if path in ("/v1/chat/completions", "/v1/completions"):
            req = json.loads(body or b"{}")
            self.requests.append(record_of(req, path))
            await self._complete(req, path.endswith("chat/completions"), receive, send)
        elif path == "/v1/models":
            root = {"root": self.root} if self.root else {}
            card = {"id": self.model, "object": "model", **root}
            await _json(send, 200, {"object": "list", "data": [card]})
        elif path == "/metrics" and self.prefill is not None:
            await _text(send, self.prefill.metrics_text(self.model))
        elif path == "/stub/stats":
            first = getattr(self.prefill, "first_tokens", None)  # sched_sim's engine TTFTs
            extra = {} if first is None else {"first_tokens": first}
            await _json(send, 200, {**self.stats, **extra})
        elif path == "/stub/requests":
            await _json(send, 200, {"requests": list(self.requests)})
        elif path == "/stub/reset":
            self.stats.update(started=0, finished=0, aborted=0)
            self.requests.clear()
            if self.prefill is not None:
                self.prefill.reset()
            await _json(send, 200, self.stats)
        elif path in ("/health", "/tokenize"):
            await _json(send, 200, {"tokens": [1, 2, 3], "count": 3} if path == "/tokenize" else {})
        else:
            await _json(send, 404, {"error": {"message": "not found", "type": "NotFound"}})

    async def _complete(self, req: dict, chat: bool, receive, send) -> None:
        opts = req.get("stub") or {}
        self.stats["started"] += 1
        watcher = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.sleep(opts.get("delay", 0))
            if watcher.done():
                raise ConnectionResetError
            if opts.get("status", 200) != 200:
                error = {"message": "stub error", "type": "BadRequestError"}
                await _json(send, opts["status"], {"error": error})
            elif req.get("stream"):
                await self._stream(req, chat, opts, send, watcher)
            else:
                prompt, cached = await self._prefill(req, chat)
                usage = _usage(prompt, cached, 1)
                payload = _completion(opts.get("model", self.model), chat, usage)
                if opts.get("echo"):
                    payload["echo"] = req
                await _json(send, 200, payload)
            self.stats["finished"] += 1
        except (ConnectionResetError, OSError):
            self.stats["aborted"] += 1
        finally:
            watcher.cancel()

    async def _prefill(self, req: dict, chat: bool) -> tuple[int, int]:
        """Wait as long as the simulated prefill takes; (prompt, cached) tokens."""
        if self.prefill is None:
            return FIXED_USAGE
        prompt, cached, seconds = self.prefill.admit(req, chat)
        await asyncio.sleep(seconds)
        self.prefill.record(prompt, cached, seconds)
        return prompt, cached

    async def _stream(self, req, chat, opts, send, watcher) -> None:
        headers = [(b"content-type", b"text/event-stream; charset=utf-8")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        prompt, cached = await self._prefill(req, chat)
        chunks = opts.get("chunks", 20)
        for i in range(chunks):
            if i == opts.get("fail_after", -1):
                raise _Drop()
            if opts.get("chunk_delay"):
                await asyncio.sleep(opts["chunk_delay"])
            if watcher.done():
                raise ConnectionResetError
            await send({"type": "http.response.body", "body": _event(self.model, chat, i),
                        "more_body": True})  # fmt: skip
        if (req.get("stream_options") or {}).get("include_usage"):
            usage = _usage(prompt, cached, chunks if self.prefill else 1)
            last = {"id": "cmpl-stub", "object": "chat.completion.chunk", "choices": [],
                    "usage": usage}  # fmt: skip
            await send({"type": "http.response.body", "more_body": True,
                        "body": b"data: " + json.dumps(last).encode() + b"\n\n"})  # fmt: skip
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


class _Drop(Exception):
    """Raised inside the ASGI app mid-response: uvicorn then drops the connection."""


async def _disconnected(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _text(send, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; version=0.0.4"),
               (b"content-length", str(len(body)).encode())]  # fmt: skip
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send, status: int, payload: dict) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8199)
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--per-token-ms", type=float, help="simulate prefill (else answer at once)")
    parser.add_argument("--base-ms", type=float, default=15.0)
    parser.add_argument("--tokenizer", default="", help="HF model dir (default: word tokens)")
    parser.add_argument("--cache-blocks", type=int, default=65_536, help="16-token blocks")
    args = parser.parse_args(argv)
    prefill = None
    if args.per_token_ms is not None:
        prefill = PrefillSim(args.per_token_ms, args.base_ms, capacity_blocks=args.cache_blocks,
                             tokenizer=args.tokenizer)  # fmt: skip
    uvicorn.run(StubVllm(args.model, prefill=prefill, root=args.tokenizer), host=args.host,
                port=args.port, log_level="warning", access_log=False, loop="uvloop",
                http="httptools")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
