"""The router composed from settings: names → parts, env and CLI, unknown names and the
removed shorthands at start-up, and the counters the parts report to."""

from __future__ import annotations

import pytest

from proxy.backends.endpoint import Endpoint
from proxy.cli import build_parser, overrides_from
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.routing.affinity import PrefixAffinity
from proxy.routing.bounded import BoundedLoad
from proxy.routing.filters import Healthy, ServesModel
from proxy.routing.load import LeastLoaded
from proxy.routing.registry import FILTERS, PICKERS, SCORERS, build_router
from proxy.routing.router import HighestScore
from proxy.routing.scorers import RoundRobin
from proxy.settings import RoutingSettings, Settings, load_settings


def parts(router) -> list[tuple[type, float]]:
    return [(type(w.scorer), w.weight) for w in router.scorers]


def sample(metrics: Metrics, name: str, **labels) -> float:
    return metrics.registry.get_sample_value(name, labels or None) or 0.0


def test_defaults_are_affinity_and_load_with_a_bounded_picker_and_both_filters():
    router = build_router(RoutingSettings(), Metrics(), panic=True)
    assert [type(f) for f in router.filters] == [Healthy, ServesModel]
    assert parts(router) == [(PrefixAffinity, 1.0), (LeastLoaded, 0.3)]
    assert isinstance(router.picker, BoundedLoad)
    assert (router.picker.epsilon, router.picker.min_in_flight) == (0.25, 8)


def test_round_robin_is_its_scorer_and_the_highest_picker():
    s = RoutingSettings(scorers="roundrobin", picker={"name": "highest"})
    assert [(x.name, x.weight) for x in s.scorers] == [("roundrobin", 1.0)]
    router = build_router(s, Metrics(), panic=True)
    assert parts(router) == [(RoundRobin, 1.0)] and isinstance(router.picker, HighestScore)


def test_explicit_scorers_and_bounded_load_parameters_reach_the_router():
    s = RoutingSettings(scorers=[{"name": "affinity", "weight": 2}],
                        picker={"name": "bounded", "min_in_flight": 3, "epsilon": 0.5})  # fmt: skip
    router = build_router(s, Metrics(), panic=True)
    assert parts(router) == [(PrefixAffinity, 2.0)]
    assert (router.picker.epsilon, router.picker.min_in_flight) == (0.5, 3)


@pytest.mark.parametrize(
    ("key", "value"), [("policy", "roundrobin"), ("affinity_weight", "2"), ("load_weight", "0")]
)
def test_a_removed_shorthand_fails_at_start_naming_the_replacement(key, value, monkeypatch):
    monkeypatch.setenv(f"RAGTRIM_ROUTING__{key.upper()}", value)
    with pytest.raises(ValueError) as info:
        load_settings()
    message = str(info.value)
    assert f"routing.{key}" in message and "was removed" in message
    assert "routing.scorers" in message and "RAGTRIM_ROUTING__SCORERS" in message
    with pytest.raises(ValueError, match=f"routing.{key}"):
        Settings.model_validate({"routing": {key: value}})  # YAML and CLI overrides alike


def test_kv_events_and_the_kv_cache_scorer_go_together():
    with pytest.raises(ValueError, match="needs the kv_cache scorer"):
        RoutingSettings(kv_events={"enabled": True})  # no longer rewrites `scorers`
    with pytest.raises(ValueError, match="needs routing.kv_events.enabled"):
        RoutingSettings(scorers="kv_cache")
    on = RoutingSettings(kv_events={"enabled": True}, scorers="kv_cache:1,load:0.3")
    assert on.picker.min_in_flight == 8  # set it to 3 explicitly: no hidden rewrite


def test_settings_survive_a_round_trip():
    s = RoutingSettings(scorers="roundrobin", picker={"name": "highest"})
    assert RoutingSettings.model_validate(s.model_dump()) == s


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [("filters", ["healthy", "fresh"], "filter"), ("scorers", [{"name": "kv"}], "scorer")],
)
def test_unknown_names_fail_at_build_listing_the_known_ones(field, value, kind):
    with pytest.raises(ValueError) as info:
        build_router(RoutingSettings(**{field: value}), Metrics(), panic=True)
    message = str(info.value)
    table = FILTERS if kind == "filter" else SCORERS
    assert f"unknown {kind}" in message and all(name in message for name in table)


def test_pickers_by_name():
    assert set(PICKERS) == {"bounded", "cost", "highest"}
    with pytest.raises(ValueError):
        RoutingSettings(picker={"name": "random"})


def test_env_takes_a_json_scorer_list_and_comma_filters(monkeypatch):
    monkeypatch.setenv("RAGTRIM_ROUTING__SCORERS", '[{"name":"affinity","weight":1}]')
    monkeypatch.setenv("RAGTRIM_ROUTING__PICKER__MIN_IN_FLIGHT", "5")
    routing = load_settings().routing
    assert [(x.name, x.weight) for x in routing.scorers] == [("affinity", 1.0)]
    assert routing.picker.min_in_flight == 5
    assert build_router(routing, Metrics(), panic=True).picker.min_in_flight == 5


def test_env_takes_the_short_form_too(monkeypatch):
    """Nested list settings from the environment were JSON only (pydantic-settings
    decodes complex values first); NoDecode hands the text to the field's own split."""
    monkeypatch.setenv("RAGTRIM_ROUTING__SCORERS", "roundrobin,load:0.5")
    monkeypatch.setenv("RAGTRIM_ROUTING__FILTERS", "healthy")
    routing = load_settings().routing
    assert [(x.name, x.weight) for x in routing.scorers] == [("roundrobin", 1.0), ("load", 0.5)]
    assert [f.name for f in routing.filters] == ["healthy"]


def test_cli_flags_take_json_or_the_short_form():
    parser = build_parser()
    args = parser.parse_args(["serve", "--routing-scorers", '[{"name": "load", "weight": 0.5}]',
                              "--routing-filters", "healthy"])  # fmt: skip
    routing = load_settings(None, overrides_from(args)).routing
    assert [(x.name, x.weight) for x in routing.scorers] == [("load", 0.5)]
    assert [f.name for f in routing.filters] == ["healthy"]
    args = parser.parse_args(["serve", "--routing-scorers", "affinity:1,load:0.25,roundrobin"])
    routing = load_settings(None, overrides_from(args)).routing
    pairs = [(x.name, x.weight) for x in routing.scorers]
    assert pairs == [("affinity", 1.0), ("load", 0.25), ("roundrobin", 1.0)]


def test_help_lists_the_routing_flags(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    out = capsys.readouterr().out
    for flag in ("--routing-scorers", "--routing-filters", "--routing-picker-min-in-flight"):
        assert flag in out


def test_spills_and_panic_routes_are_counted():
    metrics = Metrics()
    router = build_router(RoutingSettings(picker={"min_in_flight": 0}), metrics, panic=True)
    c = RequestContext("r", "chat", b"", {"model": "m"}, {}, prefix_key="k")
    eps = [Endpoint(f"http://{n}", healthy=True, models=frozenset({"m"})) for n in "ab"]
    home = router.rank(c, eps)[0]
    home.in_flight = 5
    assert router.rank(c, eps)[0] is not home
    assert sample(metrics, "ragtrim_route_spills_total", backend=home.url) == 1.0
    for e in eps:
        e.healthy = False
    assert len(router.rank(c, eps)) == 2
    assert sample(metrics, "ragtrim_panic_routes_total") == 1.0
    no_panic = build_router(RoutingSettings(), Metrics(), panic=False)
    with pytest.raises(Exception, match="no healthy backend"):
        no_panic.rank(c, eps)


def test_the_per_backend_cap_is_the_room_filter_with_its_cap_where_it_is_named():
    from proxy.errors import Overloaded
    from proxy.routing.filters import HasRoom

    metrics = Metrics()
    routing = RoutingSettings(filters="healthy,serves_model,room:2")
    capped = build_router(routing, metrics, panic=True, retry_after_s=3)
    assert [type(f) for f in capped.filters] == [Healthy, ServesModel, HasRoom]
    assert capped.filters[-1].cap == 2
    a, b = (Endpoint(u, healthy=True, models=frozenset({"m"})) for u in ("http://a", "http://b"))
    a.in_flight, ctx = 2, RequestContext("r", "chat", b"{}", {"model": "m"}, {})
    assert capped.rank(ctx, [a, b]) == [b]  # a is full: not a candidate at all
    b.in_flight = 2
    with pytest.raises(Overloaded) as caught:
        capped.rank(ctx, [a, b])
    assert caught.value.status == 429 and caught.value.retry_after == 3
    assert sample(metrics, "ragtrim_overloaded_total", scope="backend") == 1


@pytest.mark.parametrize(
    ("filters", "why"),
    [
        ("healthy,room", "room needs its cap"),
        ("healthy:3", "'healthy' takes no parameter"),
        ([{"name": "room", "max_in_flight": 0}], "room needs its cap"),
    ],
)
def test_a_filter_parameter_belongs_to_its_filter(filters, why):
    with pytest.raises(ValueError, match=why):
        RoutingSettings(filters=filters)


def test_each_picker_takes_only_its_own_parameters():
    assert RoutingSettings(picker={"name": "highest"}).picker.name == "highest"
    with pytest.raises(ValueError, match="picker 'highest' does not read epsilon"):
        RoutingSettings(picker={"name": "highest", "epsilon": 0.1})
    with pytest.raises(ValueError, match="picker 'bounded' does not read queue_tokens"):
        RoutingSettings(picker={"name": "bounded", "queue_tokens": 10})


def test_a_bare_picker_name_is_refused_naming_picker_name(monkeypatch):
    """RAGTRIM_ROUTING__PICKER=x would hide RAGTRIM_ROUTING__PICKER__EPSILON set beside it."""
    monkeypatch.setenv("RAGTRIM_ROUTING__PICKER", "highest")
    with pytest.raises(ValueError, match="RAGTRIM_ROUTING__PICKER__NAME"):
        load_settings()
