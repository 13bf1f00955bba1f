"""vLLM's usage as data from the network (proxy/response/usage_tap.py): only sane counts are
believed, a non-streamed body's usage is found without joining it, and the usage
chunk is found in SSE with any delimiter."""

import json

import pytest

from proxy.response.usage_tap import ChatUsage, sane_usage, usage_from_chunks
from tests.support.tapped import Tapped

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
    tap, stream = Tapped(ChatUsage(strip=True)), _stream(end, USAGE)
    out = b"".join(tap(stream[i : i + 7]) for i in range(0, len(stream), 7)) + tap.flush()
    assert tap.usage == USAGE and b'"usage"' not in out
    assert out.count(b"data: ") == 2 and out.endswith(b"[DONE]" + end)


def test_the_tap_counts_bad_usage_and_still_relays_the_stream():
    tap, stream = Tapped(ChatUsage(strip=False)), _stream(b"\r\n\r\n", {"prompt_tokens": "lots"})
    out = tap(stream) + tap.flush()
    assert out == stream and tap.usage is None and tap.bad == 1


def _vllm_stream(end: bytes, usage_fp: bool = True) -> tuple[bytes, bytes]:
    """(what vLLM sends with include_usage, what it sends without): vLLM 0.32 puts the
    fingerprint on the usage chunk when usage is on, on the terminal chunks when off."""
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    first = {**head, "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]}
    last = {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {**head, "choices": [], "usage": USAGE}
    if usage_fp:
        usage["system_fingerprint"] = "fp-1"
    fin = {**last, "system_fingerprint": "fp-1"} if usage_fp else last

    def sse(events):
        return b"".join(b"data: " + json.dumps(e).encode() + end for e in events)

    done = b"data: [DONE]" + end
    return sse([first, last, usage]) + done, sse([first, fin]) + done


@pytest.mark.parametrize("end", [b"\n\n", b"\r\n\r\n"])
@pytest.mark.parametrize("usage_fp", [True, False])
def test_a_stripped_usage_chunk_leaves_its_fingerprint_where_vllm_would_have(end, usage_fp):
    """Issue 31: with usage on, vLLM moves system_fingerprint to the usage chunk; the
    client that did not ask for usage gets it on the terminal chunk, as from vLLM."""
    sent, expected = _vllm_stream(end, usage_fp)
    for size in (len(sent), 1, 7):
        tap = Tapped(ChatUsage(strip=True))
        out = b"".join(tap(sent[i : i + size]) for i in range(0, len(sent), size)) + tap.flush()
        events = [e for e in out.split(end) if e]
        want = [e for e in expected.split(end) if e]
        assert [_decoded(e) for e in events] == [_decoded(e) for e in want], size
        assert tap.usage == USAGE


def test_the_fingerprint_is_left_alone_when_the_client_asked_for_usage():
    sent, _ = _vllm_stream(b"\n\n")
    tap = Tapped(ChatUsage(strip=False))
    assert tap(sent) + tap.flush() == sent


def test_held_terminal_chunks_still_leave_when_no_usage_chunk_comes():
    _, plain = _vllm_stream(b"\n\n", usage_fp=False)
    tap = Tapped(ChatUsage(strip=True))
    assert tap(plain) + tap.flush() == plain
    cut = plain[: plain.index(b"data: [DONE]")]
    tap = Tapped(ChatUsage(strip=True))
    assert tap(cut) + tap.flush() == cut


def _decoded(event: bytes):
    data = event.removeprefix(b"data: ")
    return data if data == b"[DONE]" else json.loads(data)


def test_with_two_choices_every_terminal_chunk_gets_the_fingerprint():
    """n=2 (or two prompts): choice 0 finishes while choice 1 still streams; each
    terminal chunk gets the fingerprint vLLM would have stamped on it, and the events
    keep vLLM's order (issue 31's compatibility corpus: the first one lost it)."""
    head = {"id": "c", "object": "chat.completion.chunk", "model": "m"}

    def chunk(index: int, finish: str | None, fp: bool = False) -> dict:
        choice = {"index": index, "delta": {"content": "a"}, "finish_reason": finish}
        return {**head, "choices": [choice], **({"system_fingerprint": "fp-1"} if fp else {})}

    usage = {**head, "choices": [], "usage": USAGE, "system_fingerprint": "fp-1"}
    sent = [chunk(0, None), chunk(1, None), chunk(0, "length"), chunk(1, None), chunk(1, "length")]
    want = [chunk(0, None), chunk(1, None), chunk(0, "length", True), chunk(1, None),
            chunk(1, "length", True)]  # fmt: skip

    def sse(events):
        return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)

    stream = sse([*sent, usage]) + b"data: [DONE]\n\n"
    tap = Tapped(ChatUsage(strip=True))
    out = b"".join(tap(e + b"\n\n") for e in stream.split(b"\n\n") if e) + tap.flush()
    assert [_decoded(e) for e in out.split(b"\n\n") if e] == [*want, b"[DONE]"]
