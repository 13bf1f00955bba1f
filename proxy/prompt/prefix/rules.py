"""The text rules of a canonical static prefix, each switchable (CanonicalSettings).

  newlines     CRLF and lone CR become LF.
  trailing ws  spaces/tabs before a line break go; also at the end of a whole static
               message, never at the end of a partial one (variable text follows there).
  volatile     (opt-in) dates, times, UUIDs and operator regexes move out of the static
               text (volatile.py says where to).
  tools        tool definitions serialised deterministically (tools.py).

The volatile patterns are compiled once per rule set (the composition root builds one),
not per request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

VOLATILE_BUILTINS: tuple[tuple[str, str], ...] = (
    ("datetime", r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"),
    ("date", r"\b\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b"),
    ("time", r"(?<![\d:])(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?(?![\d:])"),
    ("uuid", r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b"),
)


@dataclass(frozen=True)
class CanonicalRules:
    normalize_newlines: bool = True
    strip_trailing_whitespace: bool = True
    sort_tools: bool = True
    move_volatile: bool = False
    volatile_builtins: tuple[str, ...] = ("datetime", "date", "time", "uuid")
    extra_volatile: tuple[str, ...] = ()

    @cached_property
    def volatile_patterns(self) -> tuple[re.Pattern[str], ...]:
        chosen = [rx for name, rx in VOLATILE_BUILTINS if name in self.volatile_builtins]
        return tuple(re.compile(rx) for rx in (*chosen, *self.extra_volatile))


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# What `[^\S\r\n]` matches: every str.isspace() character but CR and LF (checked
# against the regex over all code points: tests/unit/proxy/prompt/prefix/test_rules.py).
BLANKS = (
    "\t\x0b\x0c\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def strip_trailing(text: str, whole: bool) -> str:
    r"""re.sub(r"[^\S\r\n]+(?=[\r\n])", "") (and `+\Z` when whole), line by line: the
    regex took 330 ms on a 10 MB system prompt in one call that holds the GIL (issue
    33); rstrip per line is ~5x cheaper and lets other threads in between lines."""
    lines = text.split("\n")
    last = len(lines) - 1
    for i, line in enumerate(lines):
        end = whole or i < last  # a line break (or the end of a whole message) follows
        if "\r" in line:
            pieces = line.split("\r")
            tail = pieces[-1].rstrip(BLANKS) if end else pieces[-1]
            lines[i] = "\r".join([*(p.rstrip(BLANKS) for p in pieces[:-1]), tail])
        elif end:
            lines[i] = line.rstrip(BLANKS)
    return "\n".join(lines)
