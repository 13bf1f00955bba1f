"""Start, wait for and stop a real vLLM OpenAI server on CPU (standard library only).

    server = start(".models/tiny-llama", port=8101, log_path=".run/vllm-8101.log")
    wait_healthy(server)   # raises VllmError with the log tail if vLLM died
    stop(server)           # server.base_url == "http://127.0.0.1:8101" in between
    python -m deploy.local.vllm_server start --model DIR --port P --log F [--pid-file F]
    python -m deploy.local.vllm_server stop --pid-file F

vLLM runs from its own venv (``.venv-vllm``, built by setup_vllm.sh) in its own process
group, bound to 127.0.0.1, with the prefix cache on and cached-token counts in ``usage``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
DEFAULT_VENV = ".venv-vllm"
VLLM_ENV = {
    "VLLM_HOST_IP": HOST,
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
VLLM_FLAGS = (
    "--enable-prefix-caching",
    "--enable-prompt-tokens-details",
    "--dtype", "float32",
    "--enforce-eager",
    "--max-model-len", "4096",
)  # fmt: skip


def kv_events_args(port: int, replay_port: int | None = None, topic: str = "") -> list[str]:
    """vLLM flags publishing its KV-cache events (ragtrim's routing.kv_events, issue 20):
    PUB on tcp://*:port, replay ROUTER on tcp://*:replay_port."""
    config = {"enable_kv_cache_events": True, "publisher": "zmq",
              "endpoint": f"tcp://*:{port}", "topic": topic}  # fmt: skip
    if replay_port:
        config["replay_endpoint"] = f"tcp://*:{replay_port}"
    return ["--kv-events-config", json.dumps(config)]


class VllmError(RuntimeError):
    """vLLM could not be started, died, or did not become healthy in time."""


@dataclass(frozen=True)
class VllmServer:
    pid: int
    port: int
    base_url: str
    log_path: Path
    pid_file: Path
    model: str  # the name clients send as "model" (served name, else the model dir)


def vllm_python(venv: str | os.PathLike = DEFAULT_VENV) -> Path:
    return Path(venv) / "bin" / "python"


def vllm_available(venv: str | os.PathLike = DEFAULT_VENV) -> tuple[bool, str]:
    """Cheap check (no import of vllm, which takes seconds) for pytest skips."""
    python = vllm_python(venv)
    if not python.exists():
        return False, f"no vLLM venv at {venv} (run deploy/local/setup_vllm.sh)"
    site = list(Path(venv).glob("lib/python3*/site-packages"))
    if not any((s / "vllm" / "entrypoints" / "openai" / "api_server.py").exists() for s in site):
        return False, f"vllm is not installed in {venv} (run deploy/local/setup_vllm.sh)"
    return True, "ok"


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def build_command(
    model_dir: str | os.PathLike,
    port: int,
    venv: str | os.PathLike = DEFAULT_VENV,
    served_name: str | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    cmd = [str(vllm_python(venv)), "-m", "vllm.entrypoints.openai.api_server"]
    cmd += ["--model", str(model_dir), "--host", HOST, "--port", str(port), *VLLM_FLAGS]
    if served_name:
        cmd += ["--served-model-name", served_name]
    return cmd + list(extra_args)


def _check_can_start(model_dir: str | os.PathLike, port: int, venv: str | os.PathLike) -> None:
    ok, reason = vllm_available(venv)
    if not ok:
        raise VllmError(reason)
    if not (Path(model_dir) / "config.json").exists():
        raise VllmError(f"no model at {model_dir} (config.json missing)")
    if port_in_use(port):
        raise VllmError(f"port {port} on {HOST} is already in use")


def start(
    model_dir: str | os.PathLike,
    *,
    port: int,
    venv: str | os.PathLike = DEFAULT_VENV,
    log_path: str | os.PathLike,
    served_name: str | None = None,
    extra_args: Sequence[str] = (),
    pid_file: str | os.PathLike | None = None,
) -> VllmServer:
    """Launch vLLM in the background and return at once; call wait_healthy() next."""
    _check_can_start(model_dir, port, venv)
    log = Path(log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    pid_path = Path(pid_file) if pid_file else log.with_suffix(".pid")
    cmd = build_command(model_dir, port, venv, served_name, extra_args)
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(cmd)}\n".encode())
        out.flush()
        # its own process group (start_new_session): stop() signals the whole tree
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ, **VLLM_ENV},
                                start_new_session=True)  # fmt: skip
    pid_path.parent.mkdir(parents=True, exist_ok=True)
    pid_path.write_text(f"{proc.pid}\n")
    return VllmServer(pid=proc.pid, port=port, base_url=f"http://{HOST}:{port}", log_path=log,
                      pid_file=pid_path, model=served_name or str(model_dir))  # fmt: skip


def is_running(pid: int) -> bool:
    """True while pid lives; reaps it when it is our own dead child (no zombies)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass  # not our child: fall through to a signal-0 probe
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    return False


def log_tail(path: str | os.PathLike, lines: int = 40) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(line[:400] for line in text.splitlines()[-lines:])


def health_ok(base_url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_healthy(server: VllmServer, timeout: float = 240.0, interval: float = 1.0) -> float:
    """Poll /health until 200; return the seconds waited. Fails fast if vLLM dies."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not is_running(server.pid):
            raise VllmError(f"vLLM (pid {server.pid}) exited:\n{log_tail(server.log_path)}")
        if health_ok(server.base_url):
            return time.monotonic() - t0
        time.sleep(interval)
    raise VllmError(
        f"vLLM on port {server.port} not healthy after {timeout:.0f} s:\n"
        f"{log_tail(server.log_path)}"
    )


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def stop(server: VllmServer, grace: float = 20.0) -> None:
    """SIGTERM vLLM's process group, SIGKILL it after `grace` s; remove the PID file."""
    stop_pid(server.pid, grace)
    with contextlib.suppress(FileNotFoundError):
        server.pid_file.unlink()


def stop_pid(pid: int, grace: float = 20.0) -> None:
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    _signal_group(pid, signal.SIGKILL)  # also catches stragglers left in the group
    while is_running(pid) and time.monotonic() < deadline + 5:
        time.sleep(0.1)


def _looks_like_vllm(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return b"vllm" in Path(f"/proc/{pid}/cmdline").read_bytes()
    return False


def stop_from_pid_file(pid_file: str | os.PathLike, grace: float = 20.0) -> str:
    path = Path(pid_file)
    if not path.exists():
        return f"no PID file {path}: nothing to stop"
    pid = int(path.read_text().split()[0])
    if not is_running(pid):
        path.unlink()
        return f"pid {pid} was not running"
    if not _looks_like_vllm(pid):
        return f"pid {pid} is not a vLLM process; PID file {path} left alone"
    stop_pid(pid, grace)
    path.unlink()
    return f"stopped vLLM pid {pid}"


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("start", help="start vLLM and wait until /health answers")
    st.add_argument("--model", required=True, help="model directory")
    st.add_argument("--port", type=int, required=True)
    st.add_argument("--log", required=True, help="log file (appended)")
    st.add_argument("--pid-file", help="default: the log path with suffix .pid")
    st.add_argument("--venv", default=os.environ.get("RAGTRIM_VLLM_VENV", DEFAULT_VENV))
    st.add_argument("--served-name", help="--served-model-name (default: the model dir)")
    st.add_argument("--timeout", type=float, default=240.0, help="health wait, seconds")
    st.add_argument("--no-wait", action="store_true", help="return without waiting")
    st.add_argument("extra", nargs="*", help="more vLLM flags, after --")
    sp = sub.add_parser("stop", help="stop the vLLM whose pid is in --pid-file")
    sp.add_argument("--pid-file", required=True)
    for unused in ("--model", "--port", "--log"):  # accepted for symmetry with start
        sp.add_argument(unused, help=argparse.SUPPRESS)
    sp.add_argument("--grace", type=float, default=20.0)
    return parser.parse_args(argv)


def _cli_start(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    server = start(args.model, port=args.port, venv=args.venv, log_path=args.log,
                   served_name=args.served_name, extra_args=args.extra,
                   pid_file=args.pid_file)  # fmt: skip
    print(f"vLLM pid {server.pid} starting on {server.base_url} (log {server.log_path})")
    if args.no_wait:
        return 0
    try:
        wait_healthy(server, timeout=args.timeout)
    except VllmError as exc:
        stop(server)
        print(exc, file=sys.stderr)
        return 1
    print(f"vLLM healthy after {time.monotonic() - t0:.1f} s; model name {server.model!r}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        if args.command == "start":
            return _cli_start(args)
        print(stop_from_pid_file(args.pid_file, args.grace))
        return 0
    except VllmError as exc:
        print(exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
