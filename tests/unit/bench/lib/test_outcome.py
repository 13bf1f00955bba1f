"""bench/lib/outcome.py, the verdicts of bench.soak and bench.abuse: a complete answer
is ok, a clean error is an error, and anything partial without an error event is lost
(the soak could not fail otherwise)."""

import orjson

from bench.lib.outcome import CHUNKS, classify


def sse(*events) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else orjson.dumps(e)) + b"\n\n"
                    for e in events)  # fmt: skip


def chunk(i: int) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": f"t{i} "}}]}


def test_complete_stream_is_ok_and_a_cut_one_is_lost():
    full = [chunk(i) for i in range(CHUNKS)]
    assert classify(200, sse(*full, b"[DONE]"), stream=True) == ("ok", "ok")
    assert classify(200, sse(*full[:-1], b"[DONE]"), stream=True)[0] == "lost"  # a chunk gone
    assert classify(200, sse(*full), stream=True)[0] == "lost"  # no [DONE]
    cut = sse(*full[:3], {"error": {"message": "reset", "type": "upstream_error",
                                    "code": "upstream_unavailable"}})  # fmt: skip
    assert classify(200, cut, stream=True) == ("error", "stream:upstream_unavailable")


def test_errors_must_be_in_the_envelope():
    envelope = {"error": {"message": "m", "type": "upstream_error", "param": None, "code": "x"}}
    assert classify(502, orjson.dumps(envelope), stream=False) == ("error", "502:x")
    assert classify(500, b"Internal Server Error", stream=False) == ("lost", "500:not_in_envelope")
    ok = {"choices": [{"message": {"content": "hello"}}]}
    assert classify(200, orjson.dumps(ok), stream=False) == ("ok", "ok")
    assert classify(200, b'{"choices": []}', stream=False)[0] == "lost"
