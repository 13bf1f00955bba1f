"""bench.fleet's figures: a run's summary, each regime's ratios, the top-level keys."""

from bench.lib.fleet_report import ratios, summarize, top_level


def _rec(sent, ttft, prompt=100, cached=50, out=16, status=200):
    return {"sent": sent, "done": sent + 1, "ttft": ttft, "status": status,
            "usage": {"prompt_tokens": prompt, "completion_tokens": out,
                      "prompt_tokens_details": {"cached_tokens": cached}}}  # fmt: skip


def test_summarize_leaves_the_warmup_out_of_ttft_and_counts_errors():
    records = [_rec(0.0, 9.0), _rec(2.0, 0.1), _rec(3.0, 0.2, cached=100),
               {**_rec(4.0, None), "usage": None}, _rec(5.0, 0.3, status=500)]  # fmt: skip
    out = summarize(records, [3, 1], warmup=1.0)
    assert out["measured"] == 2 and out["errors"] == 2
    assert out["error_samples"] == ["200", "500"]  # no first token; a 500
    assert out["ttft_p50_ms"] in (100.0, 200.0) and out["ttft_p99_ms"] == 200.0
    assert out["hit_ratio"] == 0.75
    assert out["max_mean_load"] == 1.5
    assert out["output_tps"] == round(48 / 6.0, 1)


def _mode(p50, p90=None, tps=1.0, load=1.0, errors=0):
    return {"ttft_p50_ms": p50, "ttft_p90_ms": p90 or p50, "output_tps": tps,
            "max_mean_load": load, "errors": errors}  # fmt: skip


def test_each_regime_gets_its_own_keys():
    one = ratios("one_application", {"kv": _mode(20, load=1.1), "rendezvous": _mode(50),
                                     "roundrobin": _mode(80)})  # fmt: skip
    assert one == {"kv_vs_rendezvous_ttft_p50": 0.4, "kv_vs_roundrobin_ttft_p50": 0.25,
                   "kv_max_mean_load": 1.1}  # fmt: skip
    rag = ratios("rag", {"kv": _mode(100), "kv_compress": _mode(70, errors=2)})
    assert rag == {"kv_compress_vs_kv_ttft_p50": 0.7, "kv_compress_errors": 2}
    shared = ratios("shared_context", {"kv": _mode(10, 30, tps=3.0), "roundrobin": _mode(1, 1)})
    assert shared == {"kv_vs_roundrobin_output_tps": 3.0}
    at_replicas = ratios(
        "shared_context",
        {
            "kv": {**_mode(30), "engine_ttft_p90_ms": 24.0},
            "rendezvous": {**_mode(28), "engine_ttft_p90_ms": 24.0},
        },
    )
    assert at_replicas["kv_vs_rendezvous_engine_ttft_p90"] == 1.0  # fmt: skip


def test_top_level_takes_each_regime_at_its_size_and_the_worst_lag():
    kv = {**_mode(1), "event_lag_p99_ms": 5.0, "event_lag_p99_ms_bare_subscriber": 2.0}
    regimes = {
        "shared_context": {"sizes": {"8": {"modes": {"kv": kv}, "kv_vs_random_ttft_p90": 0.5},
                                     "16": {"modes": {"kv": {**kv, "event_lag_p99_ms": 9.0}},
                                            "kv_vs_random_ttft_p90": 0.01}}},
        "rag": {"sizes": {"4": {"modes": {"kv_compress": {**kv, "event_lag_p99_ms": 7.0}},
                                "kv_compress_vs_kv_ttft_p50": 0.6}}},
    }  # fmt: skip
    out = top_level(regimes)
    assert out["kv_vs_random_ttft_p90"] == 0.01
    assert out["kv_compress_vs_kv_ttft_p50"] == 0.6
    assert out["ratios_at_replicas"] == {"shared_context": 16, "rag": 4}
    assert out["kv_event_lag_p99_ms"] == 9.0 and out["kv_event_lag_p99_ms_bare_subscriber"] == 2.0
