"""ServesModel on a body that names no model, as vLLM 0.32 allows (issue 31)."""

import pytest

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.errors import InvalidRequest
from proxy.routing.filters import ServesModel

CHAT = {"messages": [{"role": "user", "content": "hi"}]}


def ep(url: str, models=("m",)) -> Endpoint:
    return Endpoint(url, healthy=True, models=frozenset(models))


def urls(route: str, body: dict, endpoints: list[Endpoint]) -> list[str]:
    ctx = RequestContext("r", route, b"", body, {})
    return [e.url for e in ServesModel().filter(ctx, endpoints)]


def test_no_model_goes_to_any_backend_when_they_all_serve_the_same_models():
    eps = [ep("http://a", ("m", "alias")), ep("http://b", ("m", "alias")), ep("http://c", ())]
    assert urls("chat", CHAT, eps) == ["http://a", "http://b", "http://c"]


@pytest.mark.parametrize(("route", "body"), [("chat", CHAT), ("completions", {"prompt": "q"})])
def test_no_model_in_a_fleet_of_different_models_is_a_400_naming_them(route, body):
    with pytest.raises(InvalidRequest) as info:
        urls(route, body, [ep("http://a", ("m",)), ep("http://b", ("x",))])
    assert info.value.param == "model" and "m" in str(info.value) and "x" in str(info.value)


def test_pass_through_routes_still_go_anywhere():
    assert urls("other", {}, [ep("http://a", ("m",)), ep("http://b", ("x",))]) == [
        "http://a", "http://b"]  # fmt: skip


def test_a_pass_through_body_read_for_its_quota_routes_by_model_and_vllm_judges_the_rest():
    """Issue 44 reads metered pass-through bodies (the batch route): a served model still
    picks its backends, an unknown one goes on for vLLM to answer in its own words."""
    eps = [ep("http://a", ("m",)), ep("http://b", ("x",))]
    assert urls("other", {"model": "x"}, eps) == ["http://b"]
    assert urls("other", {"model": "no-such-model"}, eps) == ["http://a", "http://b"]
    from proxy.errors import NotFound

    with pytest.raises(NotFound):
        urls("chat", {**CHAT, "model": "no-such-model"}, eps)
