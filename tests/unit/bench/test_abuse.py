"""bench.abuse's judgements: what counts as a clean error, and what the backend's
records say about salts and contexts (a cross-tenant salt or an emptied context
must be counted, a right one must not)."""

import httpx
import pytest

from bench import abuse
from bench.lib.abuse_hostile import _request
from bench.lib.abuse_traffic import envelope_or_stream_error, normal_body
from bench.lib.outcome import SYSTEM
from proxy.tenancy.identity import tenant_salt
from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import serving


@pytest.mark.parametrize(
    ("status", "raw", "verdict"),
    [(502, b'{"error": {"message": "m", "type": "upstream_error"}}', "clean"),
     (200, b'{"choices": []}', "ok"),
     (200, b'data: {"error": {"message": "x"}}\n\n', "clean"),
     (500, b"Traceback (most recent call last):", "leaked"),
     (502, b"", "broken"), (307, b"", "broken")],
)  # fmt: skip
def test_hostile_upstream_answers_are_judged(status, raw, verdict):
    assert envelope_or_stream_error(status, raw) == verdict


def test_backend_checks_count_foreign_salts_and_emptied_contexts():
    good, foreign = tenant_salt("alpha", abuse.SECRET), tenant_salt("beta", abuse.SECRET)
    with serving(StubVllm()) as stub:
        sent = {}
        for i, (salt, context) in enumerate([(good, True), (foreign, True), (good, False)]):
            body = normal_body(2 * i, "alpha", "t") | {"cache_salt": salt}
            sent[body["stub"]["tag"]] = len(body["messages"][0]["content"]) - len(SYSTEM)
            if not context:  # what a compressor that drops everything would forward
                body["messages"][0]["content"] = SYSTEM
            httpx.post(f"{stub.url}/v1/chat/completions", json=body)
        checks = abuse.backend_checks([stub.url], sent)
    assert checks["cross_tenant"] == 1 and checks["cross_tenant_tags"] == ["alpha:t:2"]
    assert checks["emptied_contexts"] == 1 and checks["emptied_tags"] == ["alpha:t:4"]


def test_raw_requests_keep_dot_segments_as_sent():
    raw = _request("/v1/x/../chat/completions", {"a": 1}, "alpha")
    assert raw.startswith(b"POST /v1/x/../chat/completions HTTP/1.1\r\n")
    assert b"authorization: Bearer key-alpha-" in raw and raw.endswith(b'{"a":1}')


def test_the_summary_judges_each_target_from_both_phases():
    from argparse import Namespace

    from bench.lib.abuse_traffic import Tally

    clean, hostile = Tally(normal=[("ok", 10.0)] * 99 + [("ok", 20.0)]), Tally()
    hostile.normal = [("ok", 10.0)] * 98 + [("ok", 50.0), ("lost", 60.0)]
    checks = {"cross_tenant": 0, "emptied_contexts": 0}
    out = abuse.summarise((clean, [300.0, 310.0]), (hostile, [320.0, 600.0]), checks,
                          Namespace(seconds=1, rate=1))  # fmt: skip
    assert out["normal_p99_ratio"] == 5.0 and out["lost"] == 1  # p99: the 99th of 100
    assert out["rss_growth_mb"] == 290.0
    assert out["met"] == {"normal_p99_ratio": False, "healthz_max_ms_hostile": True,
                          "lost": False, "cross_tenant": True, "header_leaks": True,
                          "rss_growth_mb": False, "emptied_contexts": True}  # fmt: skip


def test_a_stalled_loop_and_header_leaks_are_counted():
    from argparse import Namespace

    from bench.lib.abuse_traffic import Tally

    clean, hostile = Tally(normal=[("ok", 10.0)] * 10), Tally(normal=[("ok", 10.0)] * 10)
    hostile.healthz_ms = [2.0, 51.0]
    hostile.hostile.update({"duplicate_auth:admitted": 2, "duplicate_auth:401": 5,
                            "huge_request_id:echoed": 1, "huge_request_id:200": 3})  # fmt: skip
    out = abuse.summarise((clean, [1.0]), (hostile, [1.0]), {"cross_tenant": 0,
                          "emptied_contexts": 0}, Namespace(seconds=1, rate=1))  # fmt: skip
    assert out["healthz_max_ms_hostile"] == 51.0 and out["header_leaks"] == 3
    assert not out["met"]["healthz_max_ms_hostile"] and not out["met"]["header_leaks"]


def test_the_field_bombs_stay_under_the_body_cap_and_scale_their_field():
    from bench.lib.abuse_fields import field_bombs

    bombs = {shape: raw for shape, _, raw in field_bombs()}
    assert all(len(raw) < 16 << 20 for raw in bombs.values())
    assert len(bombs["tools_25k"]) > 12_000_000 and len(bombs["schema_12mb"]) > 11_000_000


def test_issue_44_bodies_stay_under_the_body_cap():
    from bench.lib.abuse_bodies import body_bombs

    bombs = {shape: (path, raw) for shape, path, raw in body_bombs()}
    assert all(len(raw) < 16 << 20 for _, raw in bombs.values())
    assert bombs["messages_system_49k"][0] == "/v1/messages"
    assert bombs["responses_items_49k"][0] == "/v1/responses"
    assert len(bombs["chat_4mb"][1]) > 4_000_000


def test_the_hostile_kv_messages_are_malformed_and_the_big_batch_is_well_formed():
    """What the publisher sends must be what it claims: the product's decoder refuses
    every malformed message and reads the big batch (under MAXMSGSIZE) whole."""
    from bench.lib.abuse_bodies import BIG_BATCH_BLOCKS, _big_batch, _malformed
    from proxy.config.kv_events import KvEventsSettings
    from proxy.routing.kv.events import EventDecodeError, decode_batch

    for i in range(12):
        with pytest.raises(EventDecodeError):
            decode_batch(_malformed(i))
    big = _big_batch(1)
    assert len(big) < KvEventsSettings().max_message_bytes
    batch = decode_batch(big)
    assert sum(len(e.block_hashes) for e in batch.events) == BIG_BATCH_BLOCKS
