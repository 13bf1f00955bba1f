"""A shortage of ragtrim's own file descriptors (EMFILE) is not the backend's fault:
the real aiohttp transport, with socket creation failing as it does at the
descriptor limit, must give a 503 LocalResourceError that neither ejects the backend
nor fails over to the next one (issue 23: a healthy backend was ejected)."""

import errno
import socket

import aiohappyeyeballs.impl
import httpx
import pytest

from proxy.errors import LocalResourceError
from proxy.metrics import Metrics
from proxy.routing.endpoint import Endpoint, EndpointPool
from proxy.routing.health import HealthChecker
from proxy.settings import HealthSettings, TimeoutSettings
from proxy.upstream.exchange import Exchange
from proxy.upstream.transport import AiohttpTransport


class _NoDescriptorsLeft:
    """The `socket` module as aiohttp's connect step (aiohappyeyeballs) sees it at the
    process's descriptor limit: socket() fails with EMFILE, as socket(2) does."""

    def __getattr__(self, name):
        return getattr(socket, name)

    @staticmethod
    def socket(*args, **kwargs):
        raise OSError(errno.EMFILE, "Too many open files")


async def test_emfile_on_connect_is_local_and_marks_no_backend(monkeypatch):
    monkeypatch.setattr(aiohappyeyeballs.impl, "socket", _NoDescriptorsLeft())
    pool = [Endpoint("http://127.0.0.1:9", healthy=True), Endpoint("http://127.0.0.1:10",
                                                                   healthy=True)]  # fmt: skip
    transport, metrics = AiohttpTransport(connect_timeout=1), Metrics()
    ex = Exchange(transport, TimeoutSettings(), metrics, "POST", "/v1/chat/completions",
                  b"{}", [])  # fmt: skip
    try:
        with pytest.raises(LocalResourceError) as caught:
            await ex.open(pool)
        await ex.close(caught.value)
    finally:
        await transport.aclose()
    assert caught.value.status == 503 and "EMFILE" in caught.value.message
    assert all(ep.healthy and not ep.refused and ep.in_flight == 0 for ep in pool)
    assert metrics.local_resource_errors.labels("upstream_connect")._value.get() == 1
    errors = [s for m in metrics.upstream_errors.collect() for s in m.samples]
    assert not [s for s in errors if s.value]  # nothing counted against a backend


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE, errno.ENOBUFS])
async def test_a_health_check_failing_for_local_reasons_changes_nothing(code):
    def handler(request):
        raise httpx.ConnectError("connect failed") from OSError(code, "local shortage")

    ep = Endpoint("http://b", healthy=True, checked=True, models=frozenset({"m"}))
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        checker = HealthChecker(EndpointPool([ep]), client, HealthSettings(unhealthy_after=1))
        await checker.check(ep)
    assert ep.healthy and not ep.refused and ep.failures == 0


async def test_a_refused_health_check_still_ejects():
    def handler(request):
        raise httpx.ConnectError("refused") from ConnectionRefusedError(errno.ECONNREFUSED, "no")

    ep = Endpoint("http://b", healthy=True, checked=True, models=frozenset({"m"}))
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        await HealthChecker(EndpointPool([ep]), client, HealthSettings()).check(ep)
    assert not ep.healthy and ep.refused
