"""Replacing slots in one pass (segments.replace_slots copies the text once per slot)."""

from __future__ import annotations

from collections.abc import Sequence

from compressors.segments import Slot


def splice(text: str, pairs: Sequence[tuple[Slot, str]]) -> str:
    """Same result as `replace_slots` for non-overlapping slots, in linear time."""
    out, pos = [], 0
    for slot, new in sorted(pairs, key=lambda pair: pair[0].start):
        if slot.start < pos or slot.end > len(text):
            raise ValueError(f"slot out of place: {slot}")
        out += (text[pos : slot.start], new)
        pos = slot.end
    out.append(text[pos:])
    return "".join(out)
