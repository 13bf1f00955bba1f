"""bench.fidelity: a compressor that fails fails the run (the checks of kept text and the
verdicts: lib/test_fidelity_report.py)."""

from __future__ import annotations

import pytest

from bench import fidelity
from bench.lib.fidelity_report import fail
from bench.lib.squad import RagCase

SOURCE = "Work began on 3 May 1920. It cost $4.5 million! The bridge opened in 1932."


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
