"""bench.fleet's regimes: every default run can give its regime's keys."""

from bench.fleet import REGIMES, parse_args, regimes_of
from bench.lib import fleet_run
from bench.lib.fleet_report import FIGURES, RATIO_SIZE, RATIOS, host_bound, ratios, top_level
from bench.lib.fleet_run import MODES, engine_quantiles


def test_each_regime_runs_the_modes_and_size_its_keys_compare():
    assert set(REGIMES) == set(RATIOS) == set(RATIO_SIZE)
    for name, regime in REGIMES.items():
        modes = regime.modes.split(",")
        assert set(modes) <= set(MODES)
        needed = {m for r in RATIOS[name] for m in r[:2]} | {f[0] for f in FIGURES.get(name, ())}
        assert needed <= set(modes), name
        assert str(RATIO_SIZE[name]) in regime.sizes.split(",")


def test_the_command_line_overrides_only_what_it_gives():
    args = parse_args(["--regimes", "rag,one_application", "--duration", "3", "--modes", "kv"])
    got = regimes_of(args)
    assert list(got) == ["rag", "one_application"]
    assert got["rag"].duration == 3.0 and got["rag"].modes == "kv"
    assert got["rag"].preset == REGIMES["rag"].preset
    assert got["one_application"].cache_blocks == REGIMES["one_application"].cache_blocks


def test_a_ratio_from_a_host_bound_run_is_named():
    fine = {"ttft_p50_ms": 28.3, "ttft_p90_ms": 37.9, "engine_ttft_mean_ms": 71.1}
    stalled = {"ttft_p50_ms": 2622.0, "ttft_p90_ms": 7413.6, "engine_ttft_mean_ms": 134.8}
    queued = {"ttft_p50_ms": 12805.9, "ttft_p90_ms": 20788.9, "engine_ttft_mean_ms": 10593.6}
    assert [host_bound(r) for r in (fine, stalled, queued)] == [False, True, False]
    by_mode = {m: {**r, "output_tps": 1.0, "host_bound": host_bound(r)}
               for m, r in (("kv", fine), ("rendezvous", stalled), ("random", queued),
                            ("roundrobin", queued))}  # fmt: skip
    out = ratios("shared_context", by_mode)
    assert out["host_bound_keys"] == ["kv_vs_rendezvous_ttft_p90"]
    regimes = {"shared_context": {"sizes": {"16": {"modes": {}, **out}}}}
    assert top_level(regimes)["host_bound_keys"] == ["kv_vs_rendezvous_ttft_p90"]


def test_engine_quantiles_take_the_measured_window_and_name_what_the_path_added(monkeypatch):
    class Stats:
        def __init__(self, first):
            self.first = first

        def json(self):
            return {"started": len(self.first), "first_tokens": self.first}

    # arrivals at the engine 100 s (monotonic) on; warm-up: the first 5 s
    pages = {"a/stub/stats": [[101.0, 9.9], [106.0, 0.010], [107.0, 0.030]],
             "b/stub/stats": [[108.0, 0.020]]}  # fmt: skip
    monkeypatch.setattr(fleet_run.httpx, "get", lambda url, timeout: Stats(pages[url]))
    records = [{"sent": 1.0, "sent_at": 101.0, "ttft": 9.95},
               {"sent": 6.0, "sent_at": 106.0, "ttft": 0.025}]  # fmt: skip
    out = engine_quantiles(["a", "b"], records, warmup=5.0)
    assert out == {"engine_ttft_p50_ms": 20.0, "engine_ttft_p90_ms": 30.0,
                   "added_ttft_p50_ms": 5.0}  # fmt: skip
