"""/v1/compress admission: at most `ingest_concurrency` requests per tenant (issue 23:
three 5 MB bodies each got 429, then kept the process busy for ~4 minutes)."""

import pytest

from proxy.errors import Overloaded
from proxy.ingest import Ingest
from proxy.settings import CompressionLimitSettings


def test_a_tenant_past_its_concurrency_is_refused_before_any_work():
    ingest = Ingest(engine=None, default_rate=0.5,
                    limits=CompressionLimitSettings(ingest_concurrency=2))  # fmt: skip
    with ingest.slot("a"), ingest.slot("a"):
        with pytest.raises(Overloaded), ingest.slot("a"):
            pass
        with ingest.slot("b"):  # another tenant is not held up
            pass
    with ingest.slot("a"), ingest.slot("a"):  # both freed, even after the refusal
        pass
    assert ingest._in_flight == {}
