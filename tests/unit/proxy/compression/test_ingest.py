"""/v1/compress admission: at most `ingest_concurrency` requests per tenant (issue 23:
three 5 MB bodies each got 429, then kept the process busy for ~4 minutes)."""

import pytest

from proxy.compression.ingest import Ingest
from proxy.errors import Overloaded
from proxy.settings import CompressionLimitSettings


def test_a_tenant_past_its_concurrency_is_refused_before_any_work():
    ingest = Ingest(engine=None, default_rate=0.5, max_question_chars=8192,
                    limits=CompressionLimitSettings(ingest_concurrency=2))  # fmt: skip
    with ingest.slot("a"), ingest.slot("a"):
        with pytest.raises(Overloaded), ingest.slot("a"):
            pass
        with ingest.slot("b"):  # another tenant is not held up
            pass
    with ingest.slot("a"), ingest.slot("a"):  # both freed, even after the refusal
        pass
    assert ingest._in_flight == {}


def test_the_scoring_question_is_capped_as_on_the_chat_path():
    """Issue 33: a 900k-character question to /v1/compress stalled /healthz 460 ms."""
    import asyncio

    seen = []

    class Engine:
        async def compress(self, docs, question, rate, tenant):
            seen.append(question)
            raise RuntimeError("stop here")

    ingest = Ingest(Engine(), 0.5, CompressionLimitSettings(), max_question_chars=100)
    raw = b'{"documents": ["The archive holds letters."], "question": "' + b"w" * 900_000 + b'"}'
    with pytest.raises(Overloaded):
        asyncio.run(ingest.compress(raw, "a"))
    assert len(seen[0]) == 100
