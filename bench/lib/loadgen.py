"""A minimal HTTP/1.1 keep-alive client, so the load generator's own cost stays small
and identical for the direct and the proxied path."""

from __future__ import annotations

import asyncio
import http.client
import time


def build_request(path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Timed:
    """Sequential requests on one keep-alive connection (http.client)."""

    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port)

    def total_ms(self, path: str, body: bytes) -> float:
        start = time.perf_counter()
        self.conn.request("POST", path, body, {"content-type": "application/json"})
        resp = self.conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
        return (time.perf_counter() - start) * 1000

    def ttfb_ms(self, path: str, body: bytes) -> float:
        """Time to the first body byte of a streamed response; the rest is drained."""
        start = time.perf_counter()
        self.conn.request("POST", path, body, {"content-type": "application/json"})
        resp = self.conn.getresponse()
        first = resp.read1(1)
        elapsed = (time.perf_counter() - start) * 1000
        assert first and resp.status == 200
        resp.read()
        return elapsed

    def close(self) -> None:
        self.conn.close()


async def _worker(port: int, request: bytes, stop_at: float, counter: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.perf_counter() < stop_at:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            counter[0] += 1
    finally:
        writer.close()


async def _throughput(port: int, request: bytes, concurrency: int, seconds: float) -> float:
    counter = [0]
    start = time.perf_counter()
    stop_at = start + seconds
    await asyncio.gather(*(_worker(port, request, stop_at, counter) for _ in range(concurrency)))
    return counter[0] / (time.perf_counter() - start)


def throughput(port: int, path: str, body: bytes, concurrency: int, seconds: float) -> float:
    """Requests per second with `concurrency` keep-alive connections."""
    return asyncio.run(_throughput(port, build_request(path, body), concurrency, seconds))
