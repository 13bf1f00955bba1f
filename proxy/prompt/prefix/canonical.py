"""Canonical static prefix: the same instruction gives the same bytes, and comes first.

vLLM's prefix cache chains block hashes: one changed byte early in the prompt loses every
block after it. These pure functions make the static part of a request (span.py:
instruction text and tools) byte-stable under the rules of rules.py, in their order
(newlines, trailing whitespace, volatile moves, tools). Only the static part is
rewritten; the rest is left byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from proxy.prompt.prefix.rules import CanonicalRules, normalize_newlines, strip_trailing
from proxy.prompt.prefix.span import static_span
from proxy.prompt.prefix.tools import canonical_json, canonical_tools
from proxy.prompt.prefix.volatile import extract_volatile, insert_moved
from proxy.prompt.segment import Position, message_text, role, with_text


@dataclass(frozen=True)
class CanonicalResult:
    """`messages` (the prompt, for completions) and `tools` are the input objects when
    unchanged. `static_prefix`: JSON [[role, stable text], ...] (chat) or the stable text
    (prompt). `static_end`: where the untouched rest of that message now starts (shift
    later offsets in it by `static_end[1] - old offset`). `trace`: what changed, for
    tests and debugging (it quotes prompt text: never logged by default)."""

    messages: Any
    tools: Any
    static_prefix: str
    tools_json: str
    static_end: Position | None
    trace: tuple[str, ...]
    changed: bool


@dataclass
class _Chat:
    """One call's working state: new texts by index, key parts, trace, moved units."""

    texts: dict[int, str] = field(default_factory=dict)
    key: list[list[str]] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)

    def add(self, where: str, role: str, text: str, rules: CanonicalRules, whole: bool) -> str:
        """Canonicalize one static text; record its key part, moved units and trace."""
        if rules.normalize_newlines:
            text = self._note(where, "normalized newlines", text, normalize_newlines(text))
        if rules.strip_trailing_whitespace:
            text = self._note(
                where, "stripped trailing whitespace", text, strip_trailing(text, whole)
            )
        if rules.move_volatile:
            text, moved = extract_volatile(text, rules.volatile_patterns)
            self.moved.extend(moved)
            self.trace.extend(f"canonical: {where}: moved volatile {u!r}" for u in moved)
        self.key.append([role, text])
        return text

    def _note(self, where: str, what: str, old: str, new: str) -> str:
        if new != old:
            self.trace.append(f"canonical: {where}: {what}")
        return new


def canonicalize_chat(
    messages: Sequence[Any],
    tools: Any,
    rules: CanonicalRules,
    static_end: Position | None = None,
) -> CanonicalResult:
    whole, offset = static_span(messages, static_end)
    chat = _Chat()
    for i in range(whole):
        text = message_text(messages[i])
        if text is None:
            chat.key.append([role(messages[i]) or "", canonical_json(messages[i])])
        else:
            chat.texts[i] = chat.add(f"message {i}", role(messages[i]) or "", text, rules, True)
    new_end = None
    if offset is not None:
        text = message_text(messages[whole])
        stable = chat.add(
            f"message {whole}", role(messages[whole]) or "", text[:offset], rules, False
        )
        head = insert_moved(stable, chat.moved)
        chat.texts[whole], new_end = head + text[offset:], (whole, len(head))
    elif chat.moved:
        last = max(chat.texts)
        chat.texts[last] += ("\n\n" if chat.texts[last] else "") + "\n".join(chat.moved)
    new_messages = _rebuild(messages, chat.texts)
    new_tools, tools_key, tools_trace = canonical_tools(tools, rules.sort_tools)
    changed = new_messages is not messages or new_tools is not tools
    key = canonical_json(chat.key)  # orjson: C speed on a 10 MB system prompt
    trace = tuple(chat.trace + tools_trace)
    return CanonicalResult(new_messages, new_tools, key, tools_key, new_end, trace, changed)


def _rebuild(messages: Sequence[Any], texts: dict[int, str]) -> Any:
    """The original list when no text changed, else a copy with changed messages copied."""
    changed = {i: t for i, t in texts.items() if t != message_text(messages[i])}
    if not changed:
        return messages
    return [with_text(m, changed[i]) if i in changed else m for i, m in enumerate(messages)]


def canonicalize_prompt(
    prompt: str, rules: CanonicalRules, static_end: Position | None = None
) -> CanonicalResult:
    """A completion prompt: only `prompt[:offset]` is static; without it nothing is."""
    if static_end is None or not isinstance(prompt, str):
        return CanonicalResult(prompt, None, "", "", None, (), False)
    offset, chat = static_end[1], _Chat()
    head = insert_moved(chat.add("prompt", "", prompt[:offset], rules, False), chat.moved)
    new = head + prompt[offset:]
    stable, changed = chat.key[0][1], new != prompt
    result = new if changed else prompt
    return CanonicalResult(result, None, stable, "", (None, len(head)), tuple(chat.trace), changed)
