"""A follow-up over seen documents analyses none of them again (issue 43): the
readable-script check (compressors/verbatim.py `is_opaque`) and the stable form's
sentence split run once per text and tenant (cache/analysis.py), through a real ragtrim
with the default compressor in front of the echo stub."""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack

import pytest

import proxy.compression.service as service
import proxy.compression.stable as stable
from compressors import verbatim
from tests.support.models import minilm_path, static_model  # noqa: F401 - fixtures
from tests.unit.proxy.compression.test_stable_fidelity import (
    DOCS,
    FIRST,
    FOLLOW_UPS,
    ask,
    proxy_for,
)


@pytest.fixture(scope="module")
def stub():
    from tests.doubles.stub_vllm import StubVllm
    from tests.support.servers import serving

    with serving(StubVllm()) as server:
        yield server


def counting(monkeypatch, module, name: str) -> Counter:
    seen, real = Counter(), getattr(module, name)

    def counted(text, *args, **kwargs):
        seen[text] += 1
        return real(text, *args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return seen


def test_follow_ups_analyse_no_seen_document_again(stub, static_model, monkeypatch):  # noqa: F811
    judged = counting(monkeypatch, service, "is_opaque")
    split = counting(monkeypatch, stable, "sentences_of")
    with ExitStack() as stack:
        url = proxy_for(stack, stub.url, static_model).url
        ask(url, FIRST, DOCS)
        assert sorted(judged) == sorted(DOCS) and max(judged.values()) == 1
        reasons = [ask(url, question, DOCS)[0] for question, _, _ in FOLLOW_UPS * 2]
    assert any("stable-grown" in r for r in reasons), reasons  # the forms were split
    assert max(judged.values()) == 1 and sorted(judged) == sorted(DOCS)  # none judged again
    assert split and max(split.values()) == 1  # no text split twice


def test_without_the_memo_every_turn_judges_again(stub, static_model, monkeypatch):  # noqa: F811
    """compression.analysis_bytes 0: each turn judges every document again (so the count
    above is one that can fail)."""
    from compressors import ApproxTokenCounter, FastExtractiveCompressor
    from proxy.server.app import create_app
    from proxy.settings import Settings
    from tests.support.servers import serving
    from tests.unit.proxy.compression.test_stable_fidelity import ALWAYS
    from tests.unit.proxy.conftest import wait_warm

    judged = counting(monkeypatch, verbatim, "is_opaque")
    fast = FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model)
    settings = Settings(backends=[stub.url], compression={**ALWAYS, "analysis_bytes": 0})
    with serving(create_app(settings, compressor=fast)) as server:
        wait_warm(server.url)
        for question in [FIRST, *(q for q, _, _ in FOLLOW_UPS)]:
            ask(server.url, question, DOCS)
    assert sorted(judged) == sorted(DOCS) and set(judged.values()) == {1 + len(FOLLOW_UPS)}
