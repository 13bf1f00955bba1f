"""vLLM's usage as data from the network (proxy/usage.py): only sane counts are
believed, a non-streamed body's usage is found without joining it, and the usage
chunk is found in SSE with any delimiter."""

import json

import pytest

from proxy.usage import UsageTap, sane_usage, usage_from_chunks

USAGE = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9,
         "prompt_tokens_details": {"cached_tokens": 4}}  # fmt: skip


@pytest.mark.parametrize(
    "bad",
    [{"prompt_tokens": "lots"}, {"prompt_tokens": -1}, {"completion_tokens": 1.5},
     {"prompt_tokens": True}, {"prompt_tokens_details": {"cached_tokens": "many"}},
     {"prompt_tokens_details": []}, [], "usage", 3],
)  # fmt: skip
def test_insane_usage_is_not_believed(bad):
    assert sane_usage(bad) is None


def test_sane_usage_passes_as_it_is():
    assert sane_usage(USAGE) is USAGE and sane_usage({}) == {}


def _body(usage=USAGE, content="hello", tail=None) -> bytes:
    body = {"choices": [{"message": {"content": content}}], "usage": usage}
    if tail is not None:
        body["prompt_logprobs"] = tail
    return json.dumps(body).encode()


def test_usage_is_found_wherever_the_chunks_are_cut():
    body = _body(content='he wrote "usage": {"prompt_tokens": 1}')
    for cut in range(1, len(body)):
        assert usage_from_chunks([body[:cut], body[cut:]]) == (USAGE, True), cut


def test_usage_before_a_large_field_and_absent_usage():
    body = _body(tail=[[0.1] * 50] * 2000)
    chunks = [body[i : i + 4096] for i in range(0, len(body), 4096)]
    assert usage_from_chunks(chunks) == (USAGE, True)
    assert usage_from_chunks([b'{"choices": []}']) == (None, False)
    assert usage_from_chunks([b'{"usage": {"prompt_tokens": "lots"}}'])[0] == {
        "prompt_tokens": "lots"
    }


def _stream(end: bytes, usage) -> bytes:
    events = [{"choices": [{"delta": {"content": "a"}}]}, {"choices": [], "usage": usage}]
    return b"".join(b"data: " + json.dumps(e).encode() + end for e in events) + (
        b"data: [DONE]" + end
    )


@pytest.mark.parametrize("end", [b"\n\n", b"\r\n\r\n", b"\r\r"])
def test_the_tap_reads_and_strips_usage_with_any_delimiter(end):
    tap, stream = UsageTap(strip=True), _stream(end, USAGE)
    out = b"".join(tap(stream[i : i + 7]) for i in range(0, len(stream), 7)) + tap.flush()
    assert tap.usage == USAGE and b'"usage"' not in out
    assert out.count(b"data: ") == 2 and out.endswith(b"[DONE]" + end)


def test_the_tap_counts_bad_usage_and_still_relays_the_stream():
    tap, stream = UsageTap(strip=False), _stream(b"\r\n\r\n", {"prompt_tokens": "lots"})
    out = tap(stream) + tap.flush()
    assert out == stream and tap.usage is None and tap.bad == 1
