"""With tenancy on, no header tells a client how long its compression took or which of
its documents a cache already held (issue 44: `x-ragtrim-compress-ms` showed 14.2 ms for
another tenant's documents against 1,122.8 ms for unseen ones). Without tenancy they are
sent, as before."""

import asyncio

import pytest

from proxy.stages.compress import CACHE_TELLING, CompressStage
from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import ALWAYS, post, rag_body

SECRET = "timing-headers-secret-16+"
TENANCY = {"api_keys": {"key-a": "acme"}, "salt_secret": SECRET}


class Service:
    """decide_and_run as the real service leaves it: every x-ragtrim-* header set."""

    def __init__(self, fail: bool = False):
        self.fail = fail

    async def decide_and_run(self, ctx, texts, question, rate):
        ctx.response_headers.update({name: "1" for name in CACHE_TELLING})
        ctx.response_headers["x-ragtrim-decision"] = "compress:gate"
        if self.fail:
            raise RuntimeError("refused after its headers were set")
        return texts


class Seg:
    texts, question = ["a document"], "a question?"

    def must_apply(self, texts):
        return False


class Options:
    def keep_rate(self, default):
        return default


class Ctx:
    segmentation, options = Seg(), Options()

    def __init__(self):
        self.response_headers = {}


@pytest.mark.parametrize("fail", [False, True])
def test_the_stage_drops_what_tells_a_cache_hit_unless_timings_are_shown(fail):
    hidden, shown = Ctx(), Ctx()
    for ctx, show in ((hidden, False), (shown, True)):
        try:
            asyncio.run(CompressStage(Service(fail), 0.5, show_timings=show)(ctx))
        except RuntimeError:
            assert fail
    assert hidden.response_headers == {"x-ragtrim-decision": "compress:gate"}
    assert set(CACHE_TELLING) < set(shown.response_headers)


def test_with_tenancy_no_timing_or_hit_header_reaches_the_client(stub, make_proxy):
    stable_off = {**ALWAYS, "stable": {"enabled": False}}
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=stable_off,
                       tenancy=TENANCY)  # fmt: skip
    auth = {"authorization": "Bearer key-a"}
    for _ in range(2):  # cold, then the memo's hits
        h = post(proxy, rag_body(), auth).headers
        assert not set(CACHE_TELLING) & set(h), h
        assert h["x-ragtrim-decision"].startswith("compress") and h["x-ragtrim-tokens-after"]
    open_proxy = make_proxy([stub.url], compressor=HalfWords(), compression=stable_off)
    assert set(CACHE_TELLING) < set(post(open_proxy, rag_body()).headers)
