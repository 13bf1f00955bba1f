from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from stub_vllm import StubVllm

from proxy.app import create_app
from proxy.settings import Settings
from tests.support.servers import ServerThread, serving


@pytest.fixture
def stub() -> Iterator[ServerThread]:
    with serving(StubVllm()) as server:
        yield server


@pytest.fixture
def make_proxy() -> Iterator[Callable[..., ServerThread]]:
    """Start ragtrim (real uvicorn) in front of the given backends."""
    with ExitStack() as stack:

        def make(backends: list[str], compressor=None, store=None, **overrides) -> ServerThread:
            settings = Settings(backends=backends, **overrides)
            app = create_app(settings, compressor=compressor, store=store)
            return stack.enter_context(serving(app))

        yield make
