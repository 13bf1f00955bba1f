"""The Python floor for ragtrim's data plane: a bare pass-through ASGI app on the same
server and client stack (uvicorn + httptools + uvloop, one aiohttp ClientSession),
doing nothing but relay: body in, one upstream request, chunks back.

Run: python -m bench.lib.floor_app --port 8081 --backend http://127.0.0.1:8199
 or: FLOOR_BACKEND=... granian --interface asgi --factory bench.lib.floor_app:from_env
"""

from __future__ import annotations

import argparse
import os

import aiohttp

HOP = {b"host", b"content-length", b"connection", b"transfer-encoding", b"keep-alive"}
BACK_HOP = {b"connection", b"transfer-encoding", b"keep-alive", b"date", b"server"}


class Floor:
    def __init__(self, backend: str):
        self.backend = backend
        self.session: aiohttp.ClientSession | None = None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        if self.session is None:
            self.session = aiohttp.ClientSession(auto_decompress=False)
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k not in HOP]
        url = self.backend + scope["path"]
        async with self.session.request(scope["method"], url, data=body, headers=headers) as r:
            out = [(k.lower(), v) for k, v in r.raw_headers if k.lower() not in BACK_HOP]
            await send({"type": "http.response.start", "status": r.status, "headers": out})
            async for chunk in r.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})


def from_env() -> Floor:
    """Factory for other servers (granian --factory bench.lib.floor_app:from_env)."""
    return Floor(os.environ["FLOOR_BACKEND"])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--backend", required=True)
    args = parser.parse_args()
    uvicorn.run(Floor(args.backend), host="127.0.0.1", port=args.port, log_level="warning",
                access_log=False, loop="uvloop", http="httptools", lifespan="off")  # fmt: skip


if __name__ == "__main__":
    main()
