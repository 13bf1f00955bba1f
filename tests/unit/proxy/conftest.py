import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import httpx
import pytest

from proxy.server.app import create_app
from proxy.settings import Settings
from tests.doubles.recording_vllm import RecordingVllm
from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import ServerThread, serving


@pytest.fixture
def stub() -> Iterator[ServerThread]:
    with serving(StubVllm()) as server:
        yield server


@pytest.fixture
def recording() -> Iterator[ServerThread]:
    """A vLLM double that records every request it is sent (`server.backend`)."""
    backend = RecordingVllm()
    with serving(backend) as server:
        server.backend = backend
        yield server


def wait_warm(url: str, timeout: float = 30, key: str = "") -> None:
    """With tenancy on, /readyz shows its details only to a valid key."""
    deadline = time.monotonic() + timeout
    headers = {"authorization": f"Bearer {key}"} if key else {}
    while httpx.get(f"{url}/readyz", headers=headers).json()["compressor"] in ("cold", "loading"):
        assert time.monotonic() < deadline, "compressor warm-up did not finish"
        time.sleep(0.05)


@pytest.fixture
def make_proxy() -> Iterator[Callable[..., ServerThread]]:
    """Start ragtrim (real uvicorn) in front of the given backends. Its /readyz means a
    healthy backend here (compression.ready_wait_s 0, unless a test sets it): these tests
    read it as the backends' health; test_readiness.py covers the wait for the warm-up."""
    with ExitStack() as stack:

        def make(backends: list[str], compressor=None, store=None, **overrides) -> ServerThread:
            compression = {"ready_wait_s": 0, **overrides.pop("compression", {})}
            settings = Settings(backends=backends, compression=compression, **overrides)
            app = create_app(settings, compressor=compressor, store=store)
            server = stack.enter_context(serving(app))
            if compressor is not None:  # let its warm-up finish (it holds the worker)
                wait_warm(server.url, key=next(iter(settings.tenancy.api_keys), ""))
            return server

        yield make
