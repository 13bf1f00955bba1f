"""The backend record's health state machine (proxy/backends/endpoint.py): every
transition is a method; the checker and the exchange only report."""

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.metrics import Metrics

CARDS = ({"id": "m", "object": "model"},)


def test_a_passed_check_makes_it_healthy_with_its_models():
    ep = Endpoint("http://b")
    ep.check_passed(CARDS)
    assert ep.healthy and ep.checked and ep.models == {"m"} and ep.model_cards == CARDS


def test_a_busy_backend_is_ejected_only_after_unhealthy_after_failures():
    ep = Endpoint("http://b")
    ep.check_passed(CARDS)
    ep.check_failed("UpstreamTimeout: slow", refused=False, unhealthy_after=3)
    ep.check_failed("UpstreamTimeout: slow", refused=False, unhealthy_after=3)
    assert ep.healthy and ep.failures == 2
    ep.check_failed("UpstreamTimeout: slow", refused=False, unhealthy_after=3)
    assert not ep.healthy and not ep.refused and ep.last_error == "UpstreamTimeout: slow"
    ep.passed()  # a request it answered: alive again (it has models)
    assert ep.healthy and ep.failures == 0


def test_a_first_failed_check_or_a_refusal_ejects_at_once():
    never = Endpoint("http://new", healthy=True)  # never checked
    never.check_failed("x", refused=False, unhealthy_after=3)
    assert not never.healthy
    ep = Endpoint("http://b")
    ep.check_passed(CARDS)
    ep.check_failed("refused", refused=True, unhealthy_after=3)
    assert not ep.healthy and ep.refused
    ep.check_passed(CARDS)  # only a passed check closes the circuit
    assert ep.healthy and not ep.refused


def test_in_flight_slots_are_taken_and_given_back():
    ep = Endpoint("http://b")
    ep.take()
    ep.take()
    ep.give_back()
    assert ep.in_flight == 1


def test_removal_runs_the_pools_hooks_once_and_only_for_members():
    pool, gone = EndpointPool.from_urls(["http://a", "http://b"]), []
    pool.on_removed.append(gone.append)
    left = pool.remove("http://a")
    assert pool.remove("http://a") is None and pool.remove("http://zz") is None
    assert gone == [left] and [ep.url for ep in pool.endpoints] == ["http://b"]


def test_forget_backend_drops_only_that_backends_series():
    metrics = Metrics()
    for url in ("http://a", "http://b"):
        metrics.upstream_errors.labels(url, "timeout").inc()
        metrics.prefill_samples.labels(url, "metrics").inc()
    metrics.forget_backend("http://a")
    text = metrics.render().decode()
    assert "http://a" not in text and text.count('backend="http://b"') >= 2
