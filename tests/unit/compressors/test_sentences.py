from compressors.protect import Protector
from compressors.sentences import render_kept, split_sentences

DOC = (
    '  Dr. Smith went to Washington. He said "hello!" Then e.g. this happens. '
    "The U.S. economy grew 3.5% in 2023.\n- item one\n- item two\nwrapped line\n"
    'goes on. Config {"a": "x. Y"} is here.\n\nNext paragraph ends here.  '
)


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text, Protector().spans(text))]


def test_split_handles_abbreviations_lists_and_paragraphs():
    assert sentences(DOC) == [
        "Dr. Smith went to Washington.",
        'He said "hello!"',
        "Then e.g. this happens.",
        "The U.S. economy grew 3.5% in 2023.",
        "- item one",
        "- item two\nwrapped line\ngoes on.",
        'Config {"a": "x. Y"} is here.',
        "Next paragraph ends here.",
    ]


def test_no_boundary_inside_atomic_spans():
    text = "Run this:\n```\nx = 1. Y = 2.\nprint(x)\n```\nDone. Then more."
    assert "```\nx = 1. Y = 2.\nprint(x)\n```" in sentences(text)


def test_long_sentences_are_cut_at_whitespace():
    text = "word " * 600
    spans = split_sentences(text, max_chars=100)
    assert all(e - s <= 100 for s, e in spans)
    assert " ".join(text[s:e] for s, e in spans) == text.strip()


def test_render_everything_is_the_source():
    spans = split_sentences(DOC)
    assert render_kept(DOC, spans, [True] * len(spans)) == DOC


def test_render_keeps_order_and_source_whitespace():
    spans = split_sentences(DOC)
    keep = [i in (0, 2, 6, 7) for i in range(len(spans))]
    assert render_kept(DOC, spans, keep) == (
        "  Dr. Smith went to Washington. Then e.g. this happens.\n"
        'Config {"a": "x. Y"} is here.\n\nNext paragraph ends here.  '
    )
    assert render_kept(DOC, spans, [False] * len(spans)) == ""


def test_render_words_with_dropped_neighbours():
    text = "alpha beta,gamma\n\ndelta"
    units = [(0, 5), (6, 10), (10, 11), (11, 16), (18, 23)]
    assert render_kept(text, units, [True, True, True, True, True]) == text
    assert render_kept(text, units, [True, False, False, True, True]) == "alpha gamma\n\ndelta"
    assert render_kept(text, units, [True, False, False, False, True]) == "alpha\n\ndelta"
