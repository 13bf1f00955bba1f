"""vLLM's preStop drain (deploy/k8s/base/vllm-drain.py), run as the pod runs it: a
/metrics slower than the drain's timeout is a busy vLLM, not a gone one. A CI run saw
the drain return while vLLM was still streaming: under load its /metrics took over 2 s,
the timeout read as "vLLM is not answering", and the stream outlived the drain."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.support.servers import free_port

DRAIN = Path(__file__).resolve().parents[3] / "deploy" / "k8s" / "base" / "vllm-drain.py"
IDLE = b"vllm:num_requests_running 0.0\nvllm:num_requests_waiting 0.0\n"


def serve_slow_then_idle(slow: int) -> ThreadingHTTPServer:
    """/metrics answers idle, but only after 3 s (past the drain's 2 s) `slow` times."""
    answered = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            answered.append(1)
            if len(answered) <= slow:
                time.sleep(3)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(IDLE)

        def log_message(self, *args):
            pass

        def handle(self):
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()  # the drain may have given up on a slow answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def drain(metrics: str) -> float:
    started = time.monotonic()
    args = [sys.executable, str(DRAIN), "--metrics", metrics, "--sleep", "0", "--settle", "1",
            "--poll", "0.1"]  # fmt: skip
    assert subprocess.run(args, timeout=60).returncode == 0
    return time.monotonic() - started


def test_a_slow_metrics_answer_is_busy_not_gone():
    server = serve_slow_then_idle(slow=2)
    try:
        took = drain(f"http://127.0.0.1:{server.server_port}/metrics")
    finally:
        server.shutdown()
    assert took >= 2 * 2 + 1  # both timeouts waited out, then the settle period


def test_a_refused_connection_is_vllm_gone():
    assert drain(f"http://127.0.0.1:{free_port()}/metrics") < 2
