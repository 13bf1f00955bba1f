"""The segmenter as the tests call it: one default Segmenter (built once, as the
composition root builds it), a fresh one only when a test brings its own patterns."""

from collections.abc import Sequence

from proxy.prompt.segment import Segmentation, Segmenter

DEFAULT = Segmenter()


def _segmenter(patterns: Sequence[str]) -> Segmenter:
    return Segmenter(patterns) if patterns else DEFAULT


def segment_chat(messages, *, body_field=None, patterns: Sequence[str] = ()) -> Segmentation | None:
    return _segmenter(patterns).chat(messages, body_field)


def segment_prompt(prompt, *, body_field=None, patterns: Sequence[str] = ()) -> Segmentation | None:
    return _segmenter(patterns).prompt(prompt, body_field)
