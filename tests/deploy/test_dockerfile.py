"""The image's install steps work: deploy/docker/Dockerfile's runtime-stage RUN steps
(those marked "replayed"), read from the file, run in a clean venv on this machine from
a wheel of the project; then its ENTRYPOINT serves and its HEALTHCHECK passes.

Replayed with the proxy-only build args (RAGTRIM_EXTRAS="", TORCH_INDEX=""): the CPU
variant's torch comes from PyTorch's own index, which this machine cannot reach, and
the compressors are tested elsewhere. Absolute paths of the image (ENV values and the
exec forms) are re-rooted under a temporary directory; system steps (useradd) are not
replayed here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.deploy.dockerfile import Stage, stages
from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"
BUILD_ARGS = {"RAGTRIM_EXTRAS": "", "TORCH_INDEX": ""}


def runtime() -> Stage:
    return stages(DOCKERFILE)[-1]


def test_dockerfile_shape():
    build, final = stages(DOCKERFILE)
    assert final.name == "runtime" and build.name == "build"
    assert final.base == build.base == "${PYTHON_IMAGE}"
    assert [i.args for i in final.all("USER")] == ["10001:10001"]  # numeric: runAsNonRoot
    assert final.exec_form("ENTRYPOINT")[-1] == "serve"
    assert "/healthz" in " ".join(final.exec_form("HEALTHCHECK"))
    assert final.env()["PIP_NO_CACHE_DIR"] == "1"
    copies = [i.args for i in final.all("COPY")]
    assert copies == ["--from=build /wheels /tmp/wheels"]  # only the wheel crosses over
    assert any('rm -rf "$WHEELHOUSE"' in i.args for i in final.all("RUN"))
    assert {"RAGTRIM_EXTRAS", "TORCH_INDEX"} <= set(final.args())
    ignore = [x for x in (ROOT / ".dockerignore").read_text().splitlines() if x[:1] != "#"]
    assert ignore[0] == "*" and {"!proxy/", "!compressors/", "!cache/"} <= set(ignore)


def reroot(path: str, tmp: Path) -> str:
    return str(tmp / path.lstrip("/")) if path.startswith("/") else path


def replay_env(stage: Stage, tmp: Path) -> dict[str, str]:
    env = {**os.environ, **stage.args(), **BUILD_ARGS}
    for key, value in stage.env().items():
        env[key] = reroot(value, tmp)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    return env


def build_wheel(tmp: Path) -> Path:
    wheels = tmp / "tmp" / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(wheels),
         str(ROOT)], check=True, timeout=300,
    )  # fmt: skip
    return wheels


def wait_healthcheck(cmd: list[str], env: dict[str, str], proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while subprocess.run(cmd, env=env, capture_output=True, timeout=10).returncode != 0:
        assert proc.poll() is None, "ragtrim serve exited"
        assert time.monotonic() < deadline, "HEALTHCHECK never passed"
        time.sleep(0.2)


@pytest.mark.timeout(600)
def test_runtime_stage_installs_and_serves(tmp_path):
    stage = runtime()
    steps = [i.args for i in stage.all("RUN") if i.marked]
    assert len(steps) >= 2, "no replayed RUN steps found"
    env = replay_env(stage, tmp_path)
    assert Path(env["WHEELHOUSE"]) == build_wheel(tmp_path)
    for step in steps:  # the shell of the image: /bin/sh -c
        subprocess.run(["/bin/sh", "-c", step], env=env, check=True, timeout=600)
    assert not Path(env["WHEELHOUSE"]).exists()
    venv = Path(env["RAGTRIM_HOME"])
    assert not (venv / "bin" / "pip").exists()  # the installer does not ship
    entry = [reroot(part, tmp_path) for part in stage.exec_form("ENTRYPOINT")]
    check = [reroot(part, tmp_path) for part in stage.exec_form("HEALTHCHECK")]
    port = free_port()
    with serving(StubVllm()) as stub:
        serve_env = {**env, "RAGTRIM_HOST": "127.0.0.1", "RAGTRIM_PORT": str(port),
                     "RAGTRIM_BACKENDS": stub.url, "RAGTRIM_HEALTH__INTERVAL_S": "0.5",
                     # the proxy-only build has no compressor models (Dockerfile header)
                     "RAGTRIM_COMPRESSION__COMPRESSOR": "identity"}  # fmt: skip
        proc = subprocess.Popen(entry, env=serve_env, cwd=tmp_path)
        try:
            wait_healthcheck(check, serve_env, proc)
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 20
            while httpx.get(f"{base}/readyz").status_code != 200:
                assert time.monotonic() < deadline, httpx.get(f"{base}/readyz").text
                time.sleep(0.2)
            body = {"model": "stub-model", "messages": [{"role": "user", "content": "hi"}]}
            resp = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=30)
            assert resp.status_code == 200 and resp.headers["x-ragtrim-backend"] == stub.url
        finally:
            proc.terminate()
            proc.wait(timeout=20)
