"""SSE framing (proxy/response/sse.py): every delimiter the spec allows ends an event as soon
as it arrives, bytes pass through unchanged, and an unfinished event is bounded."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.errors import UpstreamTooLarge
from proxy.response.sse import EventSplitter, event_data

DELIMITERS = [b"\n\n", b"\r\n\r\n", b"\r\r", b"\n\r\n", b"\r\n\n", b"\r\r\n", b"\n\r"]


@pytest.mark.parametrize("end", DELIMITERS)
def test_an_event_is_released_as_soon_as_its_delimiter_arrives(end):
    splitter = EventSplitter(1 << 20)
    assert splitter.feed(b'data: {"a": 1}' + end) == [b'data: {"a": 1}' + end]
    assert not splitter.pending
    assert splitter.feed(b"data: two") == [] and splitter.pending


def test_a_single_line_end_is_not_an_event_end():
    splitter = EventSplitter(1 << 20)
    assert splitter.feed(b"data: a\r\ndata: b\r\n") == []
    assert splitter.feed(b"\r\n") == [b"data: a\r\ndata: b\r\n\r\n"]
    assert event_data(b"data: a\r\ndata:b\r\nid: 3\r\n\r\n") == b"a\nb"


def test_a_delimiter_split_across_chunks_is_found():
    splitter = EventSplitter(1 << 20)
    assert splitter.feed(b"data: a\r\n") == []
    assert splitter.feed(b"\r\ndata: b\r\n\r\n") == [b"data: a\r\n\r\n", b"data: b\r\n\r\n"]


def test_an_event_over_the_cap_is_an_error_not_memory():
    splitter = EventSplitter(1024)
    splitter.feed(b"data: " + b"x" * 1000)
    with pytest.raises(UpstreamTooLarge) as caught:
        splitter.feed(b"x" * 100)
    assert caught.value.code == "upstream_event_too_large" and not splitter.pending


_chars = st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",))
_datas = st.lists(st.text(_chars, max_size=20), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(datas=_datas, ends=st.lists(st.sampled_from(DELIMITERS), min_size=8, max_size=8),
       cuts=st.lists(st.integers(1, 400), max_size=10))  # fmt: skip
def test_any_chunking_of_any_delimiters_gives_back_the_bytes_and_the_events(datas, ends, cuts):
    events = [b"data: " + d.encode() + e for d, e in zip(datas, ends, strict=False)]
    stream = b"".join(events)
    splitter, out, at = EventSplitter(1 << 20), [], 0
    for cut in sorted(set(cuts)):
        out += splitter.feed(stream[at:cut])
        at = max(at, cut)
    out += splitter.feed(stream[at:])
    assert b"".join(out) + splitter.flush() == stream
    assert [event_data(e) for e in out] == [d.encode() for d in datas]
