"""`--workers N`: N processes, each with its own `SO_REUSEPORT` listener on the same
port, so the kernel spreads connections across them (uvicorn's own `--workers` share
one accepting socket, which balances unevenly under keep-alive: the first worker to
wake takes most connections).

What is shared and what is not, with N > 1:
- shared through Redis (`redis.url`): the chunk memo and the prefix registry (hot
  prefixes, replay bodies), usage accounting, per-tenant quotas and the owners of
  stored responses; without Redis each worker keeps its own. For the memo and the
  registry that is correct but memoizes N times, and accounting's report shows one
  worker's share: a warning says so at start. For quotas and response owners it is
  wrong, so with tenancy keys or quotas and no Redis ragtrim refuses to start N > 1
  workers and says why (`unshared`); it never divides a quota by N (a tenant's
  keep-alive connection lands on one worker). Why: docs/decisions/0022-edge-and-tenant-isolation.md;
- the same in every worker by construction: routing. Prefix affinity is a rendezvous
  hash of the prefix key over the backend URLs, so every worker (and every ragtrim
  replica) sends a prefix to the same vLLM replica;
- per worker: the in-flight counts that the load scorer and the bounded-load picker
  read, the cost gate's prefill samples, health state, the compressor and its model
  (memory × N), Prometheus counters (scrape each worker's /metrics, or run one
  worker per pod and scale pods — the recommended shape on Kubernetes).

Workers are started with `spawn` (no fork of a parent that may hold torch state).
The supervisor restarts a worker that dies and, on SIGTERM/SIGINT, passes the signal
on and waits for every worker to drain.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
import sys
import time
from typing import Any

from proxy.http.edge import edge_protocol
from proxy.server.heap import settle
from proxy.settings import Settings

log = logging.getLogger("ragtrim.workers")
RESTART_BACKOFF_S = 1.0


def reuseport_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def uvicorn_options(settings: Settings, app: Any = None) -> dict[str, Any]:
    """httptools with ragtrim's limits on heads, bodies and connections (proxy/http),
    its refusals counted in the app's metrics."""
    metrics = getattr(app, "metrics", None)  # create_app's outermost layer carries them

    def refused(reason: str) -> None:
        if metrics is not None:
            metrics.http_refused.labels(reason).inc()

    return {
        "log_level": settings.log_level,
        "access_log": False,
        "proxy_headers": False,
        "server_header": False,
        "date_header": True,
        "loop": "uvloop",
        "http": edge_protocol(settings.http, refused),
        "ws": "none",  # no WebSocket routes
        "timeout_keep_alive": settings.http.keep_alive_timeout_s,
        "timeout_graceful_shutdown": settings.timeouts.drain_s,
    }


def run_one(settings: Settings, sock: socket.socket | None = None) -> None:
    """One worker: the app on uvicorn (uvloop + httptools)."""
    import uvicorn

    from proxy.server.app import create_app

    logging.getLogger("httpx").setLevel(logging.WARNING)
    sys.setswitchinterval(settings.compression.gil_switch_ms / 1000)  # this process only
    app = create_app(settings, on_loaded=settle)  # a tokenizer, a compressor: frozen once loaded
    settle()  # the imports and the app live as long as the process (proxy/server/heap.py)
    options = uvicorn_options(settings, app)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, **options)
    uvicorn.Server(config).run(sockets=[sock] if sock is not None else None)


def _worker_main(data: dict[str, Any]) -> None:
    settings = Settings.model_validate(data)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    run_one(settings, reuseport_socket(settings.host, settings.port))


def unshared(settings: Settings) -> list[str]:
    """What `--workers` > 1 without Redis would split per worker though it must be one
    record; empty when nothing is (one worker, Redis, or neither is on)."""
    if settings.workers <= 1 or settings.redis.url:
        return []
    out = []
    if settings.tenancy.quotas.active:
        out.append("quotas (each worker would admit a tenant's whole limit)")
    if settings.tenancy.api_keys:
        out.append("response owners (a worker that did not see a response would 404 its owner)")
    return out


class Supervisor:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.ctx = multiprocessing.get_context("spawn")
        self.procs: list[multiprocessing.process.BaseProcess] = []
        self.stopping = False

    def _start(self) -> multiprocessing.process.BaseProcess:
        proc = self.ctx.Process(target=_worker_main, args=(self.settings.model_dump(),))
        proc.start()
        return proc

    def _stop(self, _signum: int, _frame: Any) -> None:
        self.stopping = True  # each worker drains on SIGTERM (uvicorn graceful shutdown)
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()

    def preflight(self) -> bool:
        """Whether the workers may start: refused (an error says why) when `unshared`
        names anything; a warning says what stays per worker without Redis."""
        refused, workers = unshared(self.settings), self.settings.workers
        if refused:
            log.error(
                "not starting %d workers without redis.url: %s would be per worker. "
                "Set redis.url (RAGTRIM_REDIS__URL) to share them, or run --workers 1 "
                "and scale by replicas that share Redis.",
                workers,
                " and ".join(refused),
            )
            return False
        if not self.settings.redis.url:
            log.warning(
                "%d workers without redis.url: memo, prefix registry and usage "
                "accounting are per worker; quotas and response owners would be too, "
                "so ragtrim refuses to start with them",
                workers,
            )
        return True

    def run(self) -> int:
        if not self.preflight():
            return 2
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        self.procs = [self._start() for _ in range(self.settings.workers)]
        while not self.stopping:
            time.sleep(0.2)
            for i, proc in enumerate(self.procs):
                if not proc.is_alive() and not self.stopping:
                    log.warning("worker %s exited (%s); restarting", proc.pid, proc.exitcode)
                    time.sleep(RESTART_BACKOFF_S)
                    self.procs[i] = self._start()
        deadline = time.monotonic() + self.settings.timeouts.drain_s + 5
        for proc in self.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
        return 0
