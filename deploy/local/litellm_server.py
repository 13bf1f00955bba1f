"""Start, wait for and stop LiteLLM's proxy in front of ragtrim (standard library only).

    server = start("http://127.0.0.1:8080/v1", port=4000, log_path=".run/litellm.log")
    wait_healthy(server)   # raises LitellmError with the log tail if LiteLLM died
    stop(server)           # server.base_url == "http://127.0.0.1:4000" in between

LiteLLM runs from its own venv (``.venv-litellm``, built by setup_litellm.sh) with
deploy/litellm/config.yaml, in its own process group, bound to 127.0.0.1, with its
bundled model cost map (it fetches one from the internet otherwise).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VENV = ROOT / ".venv-litellm"
CONFIG = ROOT / "deploy" / "litellm" / "config.yaml"
LITELLM_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}


class LitellmError(RuntimeError):
    """LiteLLM could not be started, died, or did not become healthy in time."""


@dataclass(frozen=True)
class LitellmServer:
    proc: subprocess.Popen
    port: int
    base_url: str
    log_path: Path
    key: str  # LiteLLM's master key: what clients send as their API key


def available(venv: str | os.PathLike = DEFAULT_VENV) -> tuple[bool, str]:
    if not (Path(venv) / "bin" / "litellm").exists():
        return False, f"no LiteLLM venv at {venv} (run deploy/local/setup_litellm.sh)"
    return True, "ok"


def installed_version(venv: str | os.PathLike = DEFAULT_VENV) -> str:
    """The litellm version in `venv` (from its dist-info, without importing it)."""
    found = sorted(Path(venv).glob("lib/python3*/site-packages/litellm-*.dist-info"))
    return found[-1].name.removeprefix("litellm-").removesuffix(".dist-info") if found else ""


def start(
    ragtrim_v1: str, *, port: int, log_path: str | os.PathLike, api_key: str = "unused",
    venv: str | os.PathLike = DEFAULT_VENV, config: str | os.PathLike = CONFIG,
) -> LitellmServer:  # fmt: skip
    """Launch LiteLLM with ragtrim (`ragtrim_v1`, ending in /v1) as its backend; returns
    at once: call wait_healthy() next."""
    ok, reason = available(venv)
    if not ok:
        raise LitellmError(reason)
    cmd = [str(Path(venv) / "bin" / "litellm"), "--config", str(config),
           "--host", HOST, "--port", str(port), "--num_workers", "1"]  # fmt: skip
    key = f"sk-{secrets.token_hex(32)}"
    env = {**os.environ, **LITELLM_ENV, "LITELLM_MASTER_KEY": key,
           "RAGTRIM_API_BASE": ragtrim_v1, "RAGTRIM_API_KEY": api_key}  # fmt: skip
    log = Path(log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(cmd)}\n".encode())
        out.flush()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, env=env,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    return LitellmServer(proc, port, f"http://{HOST}:{port}", log, key)


def log_tail(server: LitellmServer, lines: int = 40) -> str:
    try:
        return "\n".join(server.log_path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def wait_healthy(server: LitellmServer, timeout: float = 180) -> None:
    """Until LiteLLM's liveness route answers 200 (its start-up imports take seconds)."""
    deadline = time.monotonic() + timeout
    url = f"{server.base_url}/health/liveliness"
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise LitellmError(f"LiteLLM exited with {server.proc.returncode}:\n{log_tail(server)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    stop(server)
    raise LitellmError(f"LiteLLM not healthy after {timeout:.0f} s:\n{log_tail(server)}")


def stop(server: LitellmServer, grace: float = 10) -> None:
    """SIGTERM to its process group, SIGKILL after `grace` seconds."""
    if server.proc.poll() is not None:
        return
    os.killpg(server.proc.pid, signal.SIGTERM)
    try:
        server.proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(5)
