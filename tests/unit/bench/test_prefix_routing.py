"""bench.prefix_routing's arithmetic without vLLM: hit ratio, load, medians over repeats,
targets, and the summary line that ends in the headline ratio."""

from __future__ import annotations

from bench import prefix_routing as pr
from bench.lib import kv_limit
from bench.lib import one_application as oa
from bench.lib import prefix_workload as wl
from bench.lib.prefix_kv import KV_TARGETS, kv_regime, quantile

STATS = {0: {"static": 300, "system_tokens": 290}, 1: {"static": 300, "system_tokens": 290}}
A, B = "http://a", "http://b"


def rec(seq, prompt, cached, backend=A, ttft=10.0) -> dict:
    return {"seq": seq, "prompt": prompt, "cached_tokens": cached, "backend": backend,
            "ttft_ms": ttft, "ttft_is_content": True}  # fmt: skip


def test_the_filler_is_excluded_and_hits_count_block_aligned():
    records = [rec(0, 0, 0), rec(1, 0, 256), rec(2, 1, 0, B), rec(3, 1, 128, B), rec(4, 0, 256)]
    s = wl.summarize(records, STATS, [A, B])
    assert s["static_prefix_tokens_sum"] == 900  # three later requests, 300 tokens each
    assert s["hit_ratio"] == round(640 / 900, 4)
    assert s["hit_ratio_block_aligned"] == round(640 / 768, 4)
    assert s["misses_after_first"] == 1  # 128 < 256 cacheable
    assert s["requests_per_backend"] == {A: 3, B: 2} and s["max_mean_load"] == 1.2
    assert s["prompts_homed_per_backend"] == {A: 1, B: 1}


def test_prompt_sets_differ_from_the_first_words():
    texts = {wl.system_prompt(wl.set_id(r, m), 5, 2) for r in range(3) for m in range(2)}
    assert len(texts) == 6
    assert len({t.split("\n", 1)[1] for t in texts}) == 1  # same body, own header


def test_median_summary_takes_medians_sums_counts_and_ands_flags():
    runs = [{"hit_ratio": h, "ok": ok, "requests_per_backend": {A: 1, B: 2}}
            for h, ok in ((0.9, True), (0.5, True), (0.7, False))]  # fmt: skip
    out = wl.median_summary(runs)
    assert out == {"hit_ratio": 0.7, "ok": False, "requests_per_backend": {A: 3, B: 6}}


def test_pressure_blocks_cache_the_share_of_one_prompt_set_besides_requests_in_flight():
    static = [787] * 64  # 6 full blocks each; a request's tail: 1 block
    assert wl.tail_blocks(static) == 1
    blocks = wl.pressure_blocks(static, 0.65, concurrency=4)
    assert blocks == 250 + 4 + 1  # ceil(0.65 * 384) + 4 tails + vLLM's null block
    assert round(wl.share_cached(blocks, static, 4), 2) == 0.65


def fake_result(cp_ratio=0.6, cp_hit=0.95, cp_load=1.1, hit=0.96, ratio=0.8) -> dict:
    mode = {"hit_ratio": hit, "ttft_p50_ms": 30.0, "max_mean_load": 1.2}
    cp_mode = {"hit_ratio": cp_hit, "ttft_p50_ms": 30.0, "max_mean_load": cp_load}
    cp = {"ragtrim": cp_mode, "roundrobin": {**cp_mode, "hit_ratio": 0.6, "ttft_p50_ms": 50.0},
          "ttft_p50_ratio": cp_ratio, "hit_ratio": cp_hit, "max_mean_load": cp_load}  # fmt: skip
    return {"ragtrim": mode, "roundrobin": dict(mode), "ttft_p50_ratio": ratio,
            "cache_pressure": cp}  # fmt: skip


def test_targets_are_judged_on_the_figures_they_name():
    met = wl.judge(fake_result(), pr.TARGETS)  # no kv figures: those targets left out
    assert all(t["met"] for t in met.values()) and set(met) == set(pr.TARGETS) - set(KV_TARGETS)
    missed = wl.judge(fake_result(cp_ratio=0.71, cp_load=1.312), pr.TARGETS)
    assert [k for k, t in missed.items() if not t["met"]] == [
        "cache_pressure.ttft_p50_ratio",
        "cache_pressure.max_mean_load",
    ]


def test_the_summary_line_ends_in_the_cache_pressure_ratio():
    line = pr.summary_line(fake_result(cp_ratio=0.61))
    assert line.startswith("prefix_routing:") and line.endswith(
        "cache_pressure.ttft_p50_ratio 0.61"
    )
    res = fake_result()
    del res["cache_pressure"]
    assert pr.summary_line(res).endswith("ttft_p50_ratio 0.8")


def test_kv_targets_are_judged_when_the_kv_figures_are_there():
    res = fake_result()
    res["cache_pressure"]["kv"] = {"hit_ratio": 0.97}
    repeats = [{"kv_vs_rendezvous": 0.9}, {"kv_vs_rendezvous": 1.2}, {"kv_vs_rendezvous": 0.8}]
    res["cache_pressure"].update(kv_regime(res["cache_pressure"], repeats, {}))
    assert res["cache_pressure"]["kv_vs_rendezvous_ttft_p50"] == 0.9
    assert res["cache_pressure"]["kv_minus_rendezvous_hit_ratio"] == round(0.97 - 0.95, 4)
    res["kv_event_lag_p99_ms"] = 60.0
    met = wl.judge(res, pr.TARGETS)
    assert met["cache_pressure.kv_vs_rendezvous_ttft_p50"]["met"]
    assert met["cache_pressure.kv_minus_rendezvous_hit_ratio"]["met"]
    assert not met["kv_event_lag_p99_ms"]["met"]


def test_one_application_turns_extend_the_last_and_hits_are_block_aligned():
    first, second = oa.conversation(0, 3, 1, 2), oa.conversation(0, 3, 2, 2)
    assert second[: len(first)] == first and second[len(first)]["role"] == "assistant"
    assert oa.conversation(1, 3, 1, 2)[0] != first[0]  # each mode its own system prompt
    recs = [{"conversation": 0, "turn": 1, "prompt_tokens": 300, "cached_tokens": 0,
             "backend": A, "ttft_ms": 50.0},
            {"conversation": 0, "turn": 2, "prompt_tokens": 420, "cached_tokens": 256,
             "backend": A, "ttft_ms": 10.0}]  # fmt: skip
    s = oa.summarize(recs, [A, B])
    assert s["hit_ratio_block_aligned"] == 1.0  # floor(300 / 128) * 128 = 256
    assert s["max_mean_load"] == 2.0 and s["requests_per_backend"] == {A: 2, B: 0}
    assert s["hit_ratio_by_turn"] == {2: 1.0}
    assert oa.conversation(0, 3, 2, 2, n=10) != oa.conversation(0, 3, 2, 2, n=4)


def test_the_kv_limit_is_read_from_vllms_log_and_metrics(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("INFO Overriding num_gpu_blocks=2048 with num_gpu_blocks_override=308\n"
                   "INFO CPU KV cache size: 39,424 tokens, Maximum concurrency ...\n")  # fmt: skip
    assert kv_limit.from_log(log) == {"profiled_blocks": 2048, "override_blocks": 308,
                                      "kv_cache_tokens": 39424}  # fmt: skip
    assert kv_limit.from_log(tmp_path / "absent.log")["override_blocks"] is None
    after = {kv_limit.COUNTERS[0]: 300.0, kv_limit.COUNTERS[1]: 150.0}
    before = {kv_limit.COUNTERS[0]: 100.0, kv_limit.COUNTERS[1]: 50.0}
    assert kv_limit.delta(after, before) == {"queried_tokens": 200.0, "hit_tokens": 100.0,
                                             "hit_ratio": 0.5}  # fmt: skip


def test_histogram_quantile_interpolates_as_prometheus():
    buckets = [(0.001, 50.0), (0.005, 99.0), (0.01, 100.0), (float("inf"), 100.0)]
    assert quantile(buckets, 0.5) == 0.001
    assert abs(quantile(buckets, 0.99) - 0.005) < 1e-9
    assert quantile([], 0.99) is None
