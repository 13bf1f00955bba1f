from compressors import Protector, render_kept, split_sentences

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
    text = "Run this.\n```\nx = 1. Y = 2.\nprint(x)\n```\nDone. Then more."
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


# -- scripts without spaces or Latin punctuation (issue 23) --------------------------------


def test_cjk_full_stops_end_sentences_without_whitespace():
    text = "東京は日本の首都です。人口は約1400万人です！本当ですか？はい「そうです。」次"
    assert sentences(text) == [
        "東京は日本の首都です。",
        "人口は約1400万人です！",
        "本当ですか？",
        "はい「そうです。」",
        "次",
    ]
    hindi = "यह पहला वाक्य है। यह दूसरा है।"
    assert sentences(hindi) == ["यह पहला वाक्य है।", "यह दूसरा है।"]


def test_a_space_between_thai_characters_ends_a_sentence():
    text = "ภาษาไทยไม่มีช่องว่าง ประโยคที่สอง ประโยคที่สาม"
    assert sentences(text) == ["ภาษาไทยไม่มีช่องว่าง", "ประโยคที่สอง", "ประโยคที่สาม"]


def test_runs_without_whitespace_are_cut_at_a_fixed_size():
    """1,440 Chinese characters without punctuation were one unit over any budget."""
    assert [e - s for s, e in split_sentences("中" * 1440)] == [240] * 6
    assert [e - s for s, e in split_sentences("A" * 500, max_chars=100)] == [20] * 25


def test_the_fixed_size_cut_never_splits_an_atomic_span():
    text = "see https://example.com/" + "a" * 3000
    spans = split_sentences(text, Protector().spans(text))
    assert [text[s:e] for s, e in spans] == ["see", text[4:]]
    prose = ("word " * 100).strip()  # whitespace within max_chars: one sentence, as before
    assert split_sentences(prose) == [(0, len(prose))]


def test_a_label_line_goes_on_into_its_value_and_tables_split_only_whole():
    """Issue 33: "- Owner:" and its value on the next line were two sentences, and a
    table was cut at the sentence ends inside its cells."""
    text = "- Owner:\n  Alice Smith runs it.\n- Site:  \nOslo.\nAnswer:\n\n42"
    assert sentences(text) == ["- Owner:\n  Alice Smith runs it.", "- Site:  \nOslo.",
                               "Answer:", "42"]  # fmt: skip
    table = "| a | b |\n|---|---|\n| 1 | Joined 2019. Leads it. |\n| 2 | Left. Moved on. |"
    assert sentences(f"Intro. See below.\n{table}\nAfter. Done.") == [
        "Intro.", "See below.", table, "After.", "Done.",
    ]  # fmt: skip


def test_khmer_full_stops_end_a_sentence():
    assert sentences("ភ្នំពេញជារាជធានី។ទន្លេមេគង្គ។") == ["ភ្នំពេញជារាជធានី។", "ទន្លេមេគង្គ។"]
