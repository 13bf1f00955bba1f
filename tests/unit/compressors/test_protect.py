import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compressors.protect import (
    KINDS,
    PatternTimeout,
    Protector,
    fold_protected,
    json_spans,
    merge_spans,
    overlaps,
)

TEXT = (
    "Revenue rose 12.5% to $3,400,000 on 2024-03-15 [1]. It did not fall; see "
    'https://example.com/a?b=1. We can\'t say. Config {"a": [1, {"b": 2}], "c": "x}"} '
    "here. On March 5, 2023 at 10:30. Use `pip install x`.\n```python\ndef f():\n"
    "    return 1\n```\nScores 15\u20131 without v1.2.3 [2, 3]."
)


def found(protector: Protector, text: str = TEXT) -> list[str]:
    return [text[s:e] for s, e in protector.spans(text)]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("number", ["12.5%", "$3,400,000", "15\u20131", "v1.2.3"]),
        ("date", ["2024-03-15", "March 5, 2023", "10:30"]),
        ("citation", ["[1]", "[2, 3]"]),
        ("url", ["https://example.com/a?b=1"]),
        ("negation", ["not", "can't", "without"]),
        ("json", ['{"a": [1, {"b": 2}], "c": "x}"}']),
        ("code", ["`pip install x`", "```python\ndef f():\n    return 1\n```"]),
    ],
)
def test_each_kind(kind, expected):
    spans = found(Protector([kind]))
    for piece in expected:
        assert piece in spans


def test_all_kinds_merge_and_sort():
    spans = Protector().spans(TEXT)
    assert spans == sorted(spans)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_invalid_json_and_plain_text_are_not_protected():
    assert found(Protector(["json"]), 'a {not json} b {"k": 1') == []
    assert Protector().spans("Plain words only here.") == []


def test_extra_patterns_and_fingerprint():
    base = Protector(["number"])
    extra = Protector(["number"], [r"\bACME-[A-Z]+\b"])
    assert found(extra, "ticket ACME-FOO is 3 days old") == ["ACME-FOO", "3"]
    assert base.fingerprint() != extra.fingerprint()
    assert Protector(KINDS).fingerprint() == Protector(reversed(KINDS)).fingerprint()
    with pytest.raises(ValueError):
        Protector(["emoji"])


def test_merge_and_overlap_helpers():
    assert merge_spans([(5, 8), (0, 2), (1, 3), (8, 9), (4, 4)]) == [(0, 3), (5, 9)]
    spans = [(0, 3), (5, 9)]
    assert overlaps(spans, 2, 4) and overlaps(spans, 4, 6) and overlaps(spans, 8, 20)
    assert not overlaps(spans, 3, 5) and not overlaps(spans, 9, 12)


def test_fold_protected_merges_overlapping_units_into_one_kept_unit():
    units, keep = fold_protected(
        [(0, 3), (4, 9), (10, 12), (13, 15)], [False, False, True, False], [(5, 11)]
    )
    assert units == [(0, 3), (4, 12), (13, 15)]
    assert keep == [False, True, False]
    units, keep = fold_protected([(0, 3)], [False], [(20, 25)])
    assert units == [(0, 3), (20, 25)] and keep == [False, True]


def test_fast_number_and_date_patterns_find_the_plain_spans():
    """The lookbehind / lookahead shortcuts in protect.py change speed, never spans."""
    import re

    from compressors.protect import _DATE, _PATTERNS

    plain = {
        "number": re.compile(r"[$€£¥]?(?:(?<!\w)[+-])?\w*\d(?:\w|[.,:/\u2013-](?=\d))*%?"),
        "date": re.compile(_DATE, re.IGNORECASE),
    }
    texts = [
        "x$5 a1b2 12%ab3 foo_1 -5 +3.2e5 ab-12 3\u20134 €12,500.00 1.2.3. v2 _9 a+1 __1x é1",
        "on 2024-03-05T10:00Z and 3/4/21, March 5th, 2020; 5 May 2021; sept 2019 at 10:30 p.m.",
        "jan 1 2000, DEC 2019, 12.11.1999, 7:05am, Mayday 2020 and mid-May 2020.",
    ]
    for kind, reference in plain.items():
        fast = re.compile(_PATTERNS[kind], reference.flags)
        for text in texts:
            assert [m.span() for m in fast.finditer(text)] == [
                m.span() for m in reference.finditer(text)
            ]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="a1_ $€£+-.,:/\u2013%é٣x9\n", max_size=40))
def test_numbers_searched_in_their_runs_are_the_whole_text_search(text):
    """number_spans runs the pattern only over digit-holding runs: same spans."""
    import re

    from compressors.protect import _PATTERNS, number_spans

    number = re.compile(_PATTERNS["number"])
    assert number_spans(number, text) == [m.span() for m in number.finditer(text)]


def test_number_runs_stay_linear():
    for text in ("1a" * 200_000, "a" * 400_000 + "1", "1 " * 200_000, "$1.2," * 80_000):
        started = time.perf_counter()
        Protector(["number"]).spans(text)
        assert time.perf_counter() - started < 1.5, text[:20]


@pytest.mark.parametrize(
    "text",
    [
        "It did not fall, nor rise; NOBODY knew. Scarcely without cannot nowhere none.",
        "We can't say; it isn\u2019t so, WON'T be, n't alone, Don\u2019T and no-one.",
        "snot notable annot knot, ano nothing: never, ever.",
    ],
)
def test_negation_word_shortcut_finds_the_single_pattern_spans(text):
    """Without an apostrophe-t the word-list regex stands in for the whole pattern."""
    import re

    from compressors.protect import _PATTERNS

    reference = re.compile(_PATTERNS["negation"], re.IGNORECASE)
    assert Protector(["negation"]).spans(text) == merge_spans(
        m.span() for m in reference.finditer(text)
    )


# -- bounded work (issue 23) -------------------------------------------------------------


def test_json_detection_is_linear_on_unbalanced_braces():
    """20k `{` cost 33 s of CPU: every `{` scanned up to MAX_JSON_CHARS."""
    started = time.perf_counter()
    Protector(["json"]).spans("{" * 20_000)
    Protector(["json"]).spans('{"a": ' * 20_000)
    assert time.perf_counter() - started < 1.0


def test_json_found_after_many_small_objects_and_with_escapes():
    text = 'x {"a": 1} ' * 2000 + '{"b": "x}\\"{"}'
    spans = json_spans(text)
    assert len(spans) == 2001 and text[slice(*spans[-1])] == '{"b": "x}\\"{"}'


def test_a_backtracking_extra_pattern_fails_the_compression_open():
    protector = Protector(extra_patterns=[r"(x|xx)+y"])
    started = time.perf_counter()
    with pytest.raises(PatternTimeout):
        protector.spans("x" * 5000)
    assert time.perf_counter() - started < 1.0
    assert Protector(extra_patterns=[r"ACME-\d+"]).spans("acme-12 and ACME-3") == [(0, 7), (12, 18)]


def test_json_arrays_and_tables_are_atomic():
    """Issue 33: a pretty-printed array was cut between its elements (invalid JSON), and
    table rows at the sentence ends inside their cells."""
    array = '[\n  {"a": "x. Y"},\n  "b. C",\n  [1, 2]\n]'
    text = f"Data:\n{array}\nDone."
    assert found(Protector(["json"]), text) == [array]
    table = "| a | b |\n|---|---|\n| 1 | Joined. Left. |"
    html = "<TABLE><tr><td>A. B.</td></tr><table><tr><td>x</td></tr></table></table>"
    gfm = "a | b\n--- | :-:\n1 | Two. Three."
    grid = "+---+---+\n| a | b |\n+---+---+"
    for piece in (table, html, gfm, grid):
        assert found(Protector(["table"]), f"Before. See:\n{piece}\nAfter.") == [piece]
    assert found(Protector(["table"]), "a | b but one line\nand no delimiter") == []
    assert "protect-v2:" in Protector().fingerprint()


def test_table_and_array_detection_stay_linear():
    for text in ("---|--- " + " " * 200_000 + "x", "|---|\n" * 100_000,
                 "<table>" * 50_000, "[" * 100_000, "| a\n" * 100_000):  # fmt: skip
        started = time.perf_counter()
        Protector(["json", "table"]).spans(text)
        assert time.perf_counter() - started < 1.0, text[:20]
