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

        def make(backends: list[str], **overrides) -> ServerThread:
            settings = Settings(backends=backends, **overrides)
            return stack.enter_context(serving(create_app(settings)))

        yield make
