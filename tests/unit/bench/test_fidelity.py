"""bench.fidelity: failures fail the run, kept text is checked verbatim, the 3x verdict."""

from __future__ import annotations

import pytest

from bench import fidelity
from bench.fidelity_report import fail, request_path, sentences_verbatim, verbatim
from bench.squad import RagCase
from compressors import render_kept, split_sentences

SOURCE = "Work began on 3 May 1920. It cost $4.5 million! The bridge opened in 1932."


def test_figures_must_be_verbatim():
    assert verbatim(SOURCE, "It cost $4.5 million!") == (1, 0)
    assert verbatim(SOURCE, "It cost $4.6 million!") == (1, 1)
    assert verbatim(SOURCE, "Work began on May 1932.") == (1, 1)  # a date that never was


def test_sentences_must_be_source_sentences_in_order():
    spans = split_sentences(SOURCE)
    for keep in ([True, False, True], [False, True, False], [True, True, True]):
        assert sentences_verbatim(SOURCE, render_kept(SOURCE, spans, keep))
    assert sentences_verbatim(SOURCE, "")
    gap = 'He said: "we hire. [. . .] Title VII is fair." It passed.'  # "[." "." ".]" too
    spans = split_sentences(gap)
    assert [gap[s:e] for s, e in spans][1:4] == ["[.", ".", ".]"]
    assert sentences_verbatim(gap, render_kept(gap, spans, [True, True, False, True, True, False]))
    assert not sentences_verbatim(SOURCE, "The bridge opened in 1932. Work began on 3 May 1920.")
    assert not sentences_verbatim(SOURCE, "It cost $4.5 million. The bridge opened in 1932.")


class Broken:
    name, version, question_aware = "broken", "1", True

    def fingerprint(self) -> str:
        return "broken"

    def compress(self, documents, *, question, budget):
        raise RuntimeError("model file is corrupt")


def test_a_crashing_compressor_fails_the_run(monkeypatch):
    monkeypatch.setitem(fidelity.ENTRIES, "broken", ("extractive", {}))
    monkeypatch.setattr(fidelity, "prepare", lambda name: None)
    monkeypatch.setattr(fidelity, "build_compressor", lambda name, options: Broken())
    case = RagCase("When?", ("1932",), SOURCE, (SOURCE,), "c1", ("Bridge",))
    prompts = {"off_topic": fidelity.segment([case])}
    rows = fidelity.run_compressor("broken", prompts, len, {}, {})
    assert len(rows) == 1 and "corrupt" in rows[0]["failed"] and rows[0]["n"] == 0
    result = {"results": rows, "segmentation": {"off_topic": {"exact": 1}}}
    with pytest.raises(SystemExit, match="broken failed"):
        fail(result, prompts)


def _row(kind, retention, ratio=3.01, name="fast_extractive"):
    return {"compressor": name, "budget": "pooled", "distractors": kind, "target_ratio": 3.0,
            "n": 300, "gold_retention": retention, "achieved_ratio": ratio}  # fmt: skip


def test_request_path_bar_per_kind():
    ok = request_path([_row("off_topic", 0.97), _row("same_article", 0.93)], "fast_extractive")
    assert ok["target_met"] and ok["same_article"]["bar"] == 0.93
    low = request_path([_row("off_topic", 0.99), _row("same_article", 0.92)], "fast_extractive")
    assert not low["target_met"] and low["off_topic"]["met"]
    short = request_path(
        [_row("off_topic", 1.0, 2.9), _row("same_article", 1.0)], "fast_extractive"
    )
    assert not short["target_met"]
    assert not request_path([_row("off_topic", 1.0)], "fast_extractive")["target_met"]


def test_adaptive_rows_judged_at_4x():
    from bench.fidelity_report import adaptive_verdict

    def row(kind, retention, ratio):
        return {**_row(kind, retention, ratio), "budget": "adaptive", "target_ratio": 0}

    ok = adaptive_verdict([row("off_topic", 0.98, 6.0), row("same_article", 0.94, 4.1)],
                          "fast_extractive")  # fmt: skip
    assert ok["target_met"] and ok["off_topic"]["achieved_ratio"] == 6.0
    low = adaptive_verdict([row("off_topic", 0.98, 3.9), row("same_article", 0.94, 4.1)],
                           "fast_extractive")  # fmt: skip
    assert not low["target_met"] and not low["off_topic"]["met"]
    assert not adaptive_verdict([row("off_topic", 1.0, 9.0)], "fast_extractive")["target_met"]
