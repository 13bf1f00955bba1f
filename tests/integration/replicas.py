"""ragtrim replicas as separate processes (`python -m proxy serve`), sharing one Redis:
what a gateway with several replicas runs. Settings go in as RAGTRIM_* variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / ".run" / "tests"


class Replica:
    def __init__(self, env: dict[str, str], name: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        LOGS.mkdir(parents=True, exist_ok=True)
        self.log = (LOGS / f"{name}-{self.port}.log").open("wb")
        child = {**os.environ, **env, "RAGTRIM_PORT": str(self.port)}
        self.proc = subprocess.Popen([sys.executable, "-m", "proxy", "serve"], env=child,
                                     cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)  # fmt: skip

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, f"replica exited: see {self.log.name}"
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"replica not ready: see {self.log.name}"
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def replica_env(backend: str, settings: dict) -> dict[str, str]:
    """RAGTRIM_* for `settings` (nested dicts as JSON, as the CLI and env accept)."""
    env = {"RAGTRIM_BACKENDS": backend, "RAGTRIM_LOG_LEVEL": "warning",
           "RAGTRIM_WARMUP__ENABLED": "false"}  # fmt: skip
    for key, value in settings.items():
        env[f"RAGTRIM_{key.upper()}"] = json.dumps(value) if not isinstance(value, str) else value
    return env
