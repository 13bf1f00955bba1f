import itertools

import pytest

from bench.lib.variants.tiktoken_counter import TiktokenCounter
from compressors import Budget, ExtractiveCompressor, LLMLingua2Compressor
from compressors import _precision as precision
from compressors._precision import Trial, candidates, check, choose, pick, share_equal


def test_pick_the_fastest_that_keeps_the_bar():
    trials = [Trial("fp32", 1.0, 1.0), Trial("bf16", 0.5, 0.996), Trial("int8", 0.3, 0.95)]
    assert pick(trials, 0.99) == "bf16"  # int8 is faster but disagrees too often
    assert pick(trials, 0.9) == "int8"
    near = [Trial("fp32", 1.0, 1.0), Trial("bf16", 0.5, 0.9905)]
    assert pick(near, 0.99) == "fp32" and pick(near, 0.99, margin=0.0) == "bf16"  # noise margin
    slow = [Trial("fp32", 1.0, 1.0), Trial("bf16", 6.0, 1.0), Trial("int8", 0.3, 0.5)]
    assert pick(slow, 0.99) == "fp32"  # bf16 without native support: 6x slower


def test_choose_times_each_precision_against_fp32():
    ticks = itertools.count()
    cost = {"fp32": 10, "bf16": 4, "int8": 2}
    calls = []

    def run(p):
        def work():
            calls.append(p)
            for _ in range(cost[p] - 1):
                next(ticks)  # the fake clock advances while this precision "works"
            return [[True, p != "int8"], [False, False]]

        return work

    picked, trials = choose(run, ("int8", "bf16", "fp32"), share_equal, 0.99,
                            margin=0.0, repeats=2, clock=lambda: next(ticks))  # fmt: skip
    assert [t.precision for t in trials] == ["fp32", "int8", "bf16"]  # reference first
    assert [t.agreement for t in trials] == [1.0, 0.75, 1.0]
    assert [t.seconds for t in trials] == [10, 2, 4]
    assert picked == "bf16" and calls.count("fp32") == 3  # one warm-up + two timed


def test_devices_and_checks(monkeypatch):
    assert candidates("cpu") == ("fp32", "bf16", "int8")
    assert candidates("cuda:0") == ("fp32", "bf16")
    with pytest.raises(ValueError, match="CPU only"):
        check("cuda", "int8")
    with pytest.raises(ValueError, match="precision"):
        check("cpu", "fp8")
    check("auto", "int8")  # decided once the device is resolved
    import torch

    assert precision.resolve_device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert precision.resolve_device("auto") == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert precision.resolve_device("auto") == "cpu"


def test_llmlingua2_auto_picks_a_measured_precision(lingua_standin):
    auto = LLMLingua2Compressor(TiktokenCounter(), model_path=lingua_standin, device="auto")
    assert "precision=auto" in auto.fingerprint()
    docs = ["The bridge opened in 1932. Its arch spans 503 metres over the harbour."]
    out = auto.compress(docs, question="", budget=Budget(rate=0.5))
    assert auto.device == "cpu" and auto.chosen_precision in candidates("cpu")
    assert [t["precision"] for t in auto.precision_trials] == ["fp32", "bf16", "int8"]
    assert f"precision={auto.chosen_precision}" in auto.fingerprint()
    chosen = auto.precision_trials[[t["precision"] for t in auto.precision_trials].index(
        auto.chosen_precision)]  # fmt: skip
    assert chosen["precision"] == "fp32" or chosen["agreement"] >= 0.995
    same = LLMLingua2Compressor(TiktokenCounter(), model_path=lingua_standin,
                                precision=auto.chosen_precision)  # fmt: skip
    assert same.compress(docs, question="", budget=Budget(rate=0.5)) == out


def test_extractive_auto_keeps_fp32_picks_or_better(minilm_path):
    auto = ExtractiveCompressor(model_path=minilm_path, precision="auto")
    auto.compress(["One. Two."], question="?", budget=Budget(rate=0.5))
    trials = {t["precision"]: t for t in auto.precision_trials}
    assert set(trials) == {"fp32", "bf16", "int8"} and trials["fp32"]["agreement"] == 1.0
    best = min((t for t in trials.values() if t["agreement"] >= 0.995 or t is trials["fp32"]),
               key=lambda t: t["seconds"])  # fmt: skip
    assert auto.chosen_precision == best["precision"]
