"""Moving volatile units is bounded (issue 33): 16k dates on one 256 KB line cost 16 s
before; the sentence marks are now found once and at most MAX_UNITS units move."""

import random
import re
import time

from proxy.prompt.prefix import volatile
from proxy.prompt.prefix.rules import CanonicalRules

PATTERNS = CanonicalRules(move_volatile=True).volatile_patterns


def test_thousands_of_dates_on_one_line_leave_the_text_as_is_quickly():
    text = "on 2024-01-02 x " * 16_000
    began = time.perf_counter()
    assert volatile.extract_volatile(text, PATTERNS) == (text, ())
    assert time.perf_counter() - began < 0.5


def test_a_few_dates_in_a_long_line_are_found_in_one_pass():
    text = "x" * 1_000_000 + ". Today is 2024-01-02. Done."
    began = time.perf_counter()
    stripped, moved = volatile.extract_volatile(text, PATTERNS)
    assert moved == ("Today is 2024-01-02.",) and stripped.endswith("x. Done.")
    assert time.perf_counter() - began < 0.5


def _windowed_unit(text: str, start: int, end: int) -> tuple[int, int]:
    """The unit as the code before issue 33 found it: a scan from the line's start."""
    line_start, line_end = volatile._line(text, start, end)
    found = list(volatile._SENTENCE_START.finditer(text, line_start, start))
    stop = volatile._SENTENCE_END.search(text, end, line_end)
    return (found[-1].end() if found else line_start), (stop.end() if stop else line_end)


def test_units_are_those_the_windowed_scan_found():
    rng = random.Random(3)
    alphabet = list("ab .!?\"')] \t\n2024-01-02")
    patterns = (*PATTERNS, re.compile(r"[ \t]+b"), re.compile(r"\.\s"))
    for _ in range(5_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        marks = volatile._Marks(text)
        for rx in patterns:
            for m in rx.finditer(text):
                assert marks.unit(*m.span()) == _windowed_unit(text, *m.span()), (text, m)
