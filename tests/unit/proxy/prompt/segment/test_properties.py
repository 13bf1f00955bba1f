"""Property tests (hypothesis): segmentation takes any input.

The Segmenter never raises, on any messages, prompt or `ragtrim` field; every slot
it returns lies inside its text and is exactly the text there; putting the found
texts back (apply_*) changes nothing but the markers.
"""

from hypothesis import given

from proxy.prompt.segment import apply_chat, apply_prompt, message_text
from proxy.prompt.segment.splice import splice
from tests.support.prompts import PROPS, body_fields, messages, texts
from tests.support.segmenting import segment_chat, segment_prompt


def check_slots(seg, sources) -> None:
    for slot in seg.documents:
        source = sources(slot.message)
        assert source is not None and 0 <= slot.start <= slot.end <= len(source)
        assert source[slot.start : slot.end] == slot.text


@PROPS
@given(messages, body_fields)
def test_segment_chat_takes_anything(msgs, field):
    seg = segment_chat(msgs, body_field=field)
    if seg is None:
        return
    check_slots(seg, lambda i: message_text(msgs[i]) if i is not None else None)
    same = apply_chat(msgs, seg, seg.texts)
    for i, message in enumerate(msgs):  # putting the found texts back: only markers go
        marks = [(m, "") for m in seg.markers if m.message == i]
        text = message_text(message)
        assert message_text(same[i]) == (splice(text, marks) if marks else text)
    if not seg.markers:
        assert same == msgs


@PROPS
@given(texts, body_fields)
def test_segment_prompt_takes_anything(prompt, field):
    seg = segment_prompt(prompt, body_field=field)
    if seg is None:
        return
    check_slots(seg, lambda i: prompt if i is None else None)
    same = apply_prompt(prompt, seg, seg.texts)
    assert same == splice(prompt, [(m, "") for m in seg.markers])
