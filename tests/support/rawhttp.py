"""HTTP/1.1 over a plain socket, for the shapes an HTTP client library will not send
(dot segments it would resolve, partial heads, bodies shorter than Content-Length)."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    elapsed: float

    def error(self) -> dict:
        assert self.headers.get("content-type") == "application/json", self.headers
        return json.loads(self.body)["error"]


def parse(data: bytes, elapsed: float) -> RawResponse:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return RawResponse(status, headers, body, elapsed)


def read_all(sock: socket.socket, timeout: float) -> bytes:
    """Everything until the server closes (or `timeout` passes)."""
    sock.settimeout(timeout)
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
            if _complete(b"".join(chunks)):
                break
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(chunks)


def _complete(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def exchange(port: int, request: bytes, timeout: float = 10) -> RawResponse:
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = read_all(sock, timeout)
    return parse(data, time.monotonic() - start)


def post(path: str, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "host: 127.0.0.1", f"content-length: {len(body)}",
             "content-type: application/json"]  # fmt: skip
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def get(path: str, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()
