"""With tenancy on, no header tells a client how long its compression took or which of
its documents a cache already held (issue 44: `x-ragtrim-compress-ms` showed 14.2 ms for
another tenant's documents against 1,122.8 ms for unseen ones). Without tenancy they are
sent, as before."""

from proxy.context import RequestContext
from proxy.outcome.decision import Why, compress
from proxy.outcome.render import CACHE_TELLING, headers
from proxy.outcome.request import Compression
from proxy.response.hooks import HeadersHook
from tests.support.compressor_doubles import HalfWords
from tests.support.rag_requests import ALWAYS, post, rag_body

SECRET = "timing-headers-secret-16+"
TENANCY = {"api_keys": {"key-a": "acme"}, "salt_secret": SECRET}


class Exchange:
    url = "http://backend"


def test_the_headers_hook_drops_what_tells_a_cache_hit_unless_timings_are_shown():
    """The stages keep every value (the access log and spans read them); only what
    leaves for the client is filtered."""
    ctx = RequestContext("r", "chat", b"", {"model": "m", "messages": []}, {})
    ctx.outcome.decision = compress(Why.AUTO, 0.5, saved_ms=9, cost_ms=2)
    ctx.outcome.compression = Compression("c", 800, 300, 1.0, memo_hits=1, memo_lookups=2,
                                          features_seen=1, features_missed=1)  # fmt: skip
    hidden = HeadersHook(False, CACHE_TELLING).headers(ctx, Exchange())
    shown = HeadersHook(False, frozenset()).headers(ctx, Exchange())
    assert [n for n, _ in hidden] == [b"x-request-id", b"x-ragtrim-decision",
                                      b"x-ragtrim-compressor", b"x-ragtrim-tokens-before",
                                      b"x-ragtrim-tokens-after"]  # fmt: skip
    assert {n.encode() for n in CACHE_TELLING} < {n for n, _ in shown}
    assert set(CACHE_TELLING) < set(headers(ctx.outcome))


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
