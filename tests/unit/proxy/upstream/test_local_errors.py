"""A shortage of ragtrim's own file descriptors (EMFILE) is not the backend's fault:
the real aiohttp transport, with socket creation failing as it does at the
descriptor limit, must give a 503 LocalResourceError that neither ejects the backend
nor fails over to the next one (issue 23: a healthy backend was ejected)."""

import errno
import socket

import aiohappyeyeballs.impl
import pytest

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.backends.health import HealthChecker
from proxy.errors import LocalResourceError
from proxy.metrics import Metrics
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
async def test_a_health_check_failing_for_local_reasons_changes_nothing(monkeypatch, code):
    """Over the data plane's own transport (issue 21), socket creation failing locally."""

    def no_socket(*args, **kwargs):
        raise OSError(code, "local shortage")

    shortage = _NoDescriptorsLeft()
    monkeypatch.setattr(shortage, "socket", no_socket, raising=False)
    monkeypatch.setattr(aiohappyeyeballs.impl, "socket", shortage)
    ep = Endpoint("http://127.0.0.1:9", healthy=True, checked=True, models=frozenset({"m"}))
    transport = AiohttpTransport(connect_timeout=1)
    try:
        checker = HealthChecker(EndpointPool([ep]), transport, HealthSettings(unhealthy_after=1))
        await checker.check(ep)
    finally:
        await transport.aclose()
    assert ep.healthy and not ep.refused and ep.failures == 0


async def test_a_refused_health_check_still_ejects():
    with socket.socket() as probe:  # a port nobody listens on: connect(2) is refused
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    ep = Endpoint(url, healthy=True, checked=True, models=frozenset({"m"}))
    transport = AiohttpTransport(connect_timeout=1)
    try:
        await HealthChecker(EndpointPool([ep]), transport, HealthSettings()).check(ep)
    finally:
        await transport.aclose()
    assert not ep.healthy and ep.refused and "refused" in ep.last_error
