"""Canonical static prefix: the same instruction gives the same bytes, and comes first.

vLLM's prefix cache chains block hashes: one changed byte early in the prompt loses every
block after it. These pure functions make the static part of a request (instruction text
and tools) byte-stable; `prefix_key` names it for routing. The static part is, for chat,
every leading system/developer message; or, with the RAG segmenter's `static_end=(i, off)`,
every message before `i` plus message `i`'s text up to `off` (a completion prompt has one
only with `static_end`). Only the static part is rewritten; the rest is left byte for byte.
A message's text is read exactly as the segmenter reads it (compressors.templates), so
`static_end` offsets index the same string.

Transformations, in this order, each switchable in `CanonicalRules`:
  newlines     CRLF and lone CR become LF.
  trailing ws  spaces/tabs before a line break go; also at the end of a whole static
               message, never at the end of a partial one (variable text follows there).
  volatile     (opt-in) each match of a volatile pattern (ISO date, datetime, time, UUID,
               extra regexes) is moved with its *unit*: the sentence around it within its
               line (bounded by `. ! ?` + whitespace), else the whole line. Units are cut
               (a line left blank disappears, so does the space joining a unit to its
               neighbours) and re-inserted in order, one per line, right after the static
               part: whole static messages -> appended to the last one after "\n\n";
               static_end inside message i -> after the last "\n" of the static slice, i.e.
               before its partial last line (no "\n" in it: after the slice, on a new line),
               each unit followed by "\n". The static text minus its volatile units -- the
               key -- and the bytes before the first unit are then the same across requests
               that differ only in those values.
  tools        every tool's dict keys sorted recursively (the proxy re-serialises with
               json.dumps, which keeps insertion order) and the list sorted by (type,
               function name), so declaration order does not change the bytes. Lists inside
               a tool (e.g. "required") keep their order.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from compressors.templates import SYSTEM_ROLES, message_text, role, with_text

VOLATILE_BUILTINS: tuple[tuple[str, str], ...] = (
    ("datetime", r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"),
    ("date", r"\b\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b"),
    ("time", r"(?<![\d:])(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?(?![\d:])"),
    ("uuid", r"\b[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\b"),
)
_SENTENCE_START = re.compile(r"[.!?][\"')\]]*[ \t]+")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_KEY_VERSION = "ragtrim-prefix-v1"

Position = tuple[int | None, int]


@dataclass(frozen=True)
class CanonicalRules:
    normalize_newlines: bool = True
    strip_trailing_whitespace: bool = True
    sort_tools: bool = True
    move_volatile: bool = False
    volatile_builtins: tuple[str, ...] = ("datetime", "date", "time", "uuid")
    extra_volatile: tuple[str, ...] = ()

    def volatile_patterns(self) -> list[re.Pattern[str]]:
        chosen = [rx for name, rx in VOLATILE_BUILTINS if name in self.volatile_builtins]
        return [re.compile(rx) for rx in (*chosen, *self.extra_volatile)]


@dataclass(frozen=True)
class CanonicalResult:
    """`messages` (the prompt, for completions) and `tools` are the input objects when
    unchanged. `static_prefix`: JSON [[role, stable text], ...] (chat) or the stable text
    (prompt). `static_end`: where the untouched rest of that message now starts (shift
    later offsets in it by `static_end[1] - old offset`)."""

    messages: Any
    tools: Any
    static_prefix: str
    tools_json: str
    static_end: Position | None
    trace: tuple[str, ...]
    changed: bool


def prefix_key(model: str, static_prefix: str, tools_canonical_json: str, tenant_salt: str) -> str:
    """sha256 hex over a length-prefixed encoding of the parts (no two inputs collide)."""
    digest = hashlib.sha256()
    for part in (_KEY_VERSION, model, static_prefix, tools_canonical_json, tenant_salt):
        data = part.encode()
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _strip_trailing(text: str, whole: bool) -> str:
    text = re.sub(r"[^\S\r\n]+(?=[\r\n])", "", text)
    return re.sub(r"[^\S\r\n]+\Z", "", text) if whole else text


def _extract_volatile(text: str, patterns: Sequence[re.Pattern[str]]) -> tuple[str, tuple]:
    spans = [m.span() for rx in patterns for m in rx.finditer(text) if m.end() > m.start()]
    units = _merge(_unit(text, start, end) for start, end in spans)
    moved = tuple(text[a:b].strip() for a, b in units)
    for a, b in reversed(units):
        text = _cut(text, a, b)
    return text, moved


def _line(text: str, start: int, end: int) -> tuple[int, int]:
    line_end = text.find("\n", end)
    return text.rfind("\n", 0, start) + 1, len(text) if line_end < 0 else line_end


def _unit(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence around text[start:end] inside its line, or the whole line."""
    line_start, line_end = _line(text, start, end)
    boundaries = list(_SENTENCE_START.finditer(text, line_start, start))
    stop = _SENTENCE_END.search(text, end, line_end)
    return (boundaries[-1].end() if boundaries else line_start), (stop.end() if stop else line_end)


def _merge(units: Any) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(units):
        overlaps = merged and a < merged[-1][1]
        merged[-1:] = (
            [(merged[-1][0], max(b, merged[-1][1]))] if overlaps else [*merged[-1:], (a, b)]
        )
    return merged


def _cut(text: str, a: int, b: int) -> str:
    line_start, line_end = _line(text, a, b)
    before, after = text[line_start:a], text[b:line_end]
    if not before.strip() and not after.strip():  # the unit is the whole line
        if line_end < len(text):
            return text[:line_start] + text[line_end + 1 :]
        return text[: max(line_start - 1, 0)]
    if not after.strip():  # at the end of its line: drop the space before it
        return text[: line_start + len(before.rstrip())] + text[b:]
    return text[:a] + text[b + len(after) - len(after.lstrip()) :]


def _insert(slice_: str, moved: Sequence[str]) -> str:
    """The moved units on their own lines after the slice's last line break."""
    if not moved:
        return slice_
    cut = slice_.rfind("\n") + 1
    block = "".join(unit + "\n" for unit in moved)
    if cut == 0 and slice_:
        return slice_ + "\n" + block
    return slice_[:cut] + block + slice_[cut:]


def _static_span(messages: Sequence[Any], static_end: Position | None) -> tuple[int, int | None]:
    """(number of whole static messages, offset into the next one or None)."""
    if static_end is not None and static_end[0] is not None:
        index, offset = static_end
        if 0 <= index < len(messages) and message_text(messages[index]) is not None:
            return index, offset
    count = 0
    while count < len(messages) and _role(messages[count]) in SYSTEM_ROLES:
        count += 1
    return count, None


def _role(message: Any) -> str:
    return role(message) or ""


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
            text = self._note(where, "normalized newlines", text, _newlines(text))
        if rules.strip_trailing_whitespace:
            text = self._note(
                where, "stripped trailing whitespace", text, _strip_trailing(text, whole)
            )
        if rules.move_volatile:
            text, moved = _extract_volatile(text, rules.volatile_patterns())
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
    whole, offset = _static_span(messages, static_end)
    chat = _Chat()
    for i in range(whole):
        text = message_text(messages[i])
        if text is None:
            chat.key.append([_role(messages[i]), json.dumps(messages[i], default=str)])
        else:
            chat.texts[i] = chat.add(f"message {i}", _role(messages[i]), text, rules, True)
    new_end = None
    if offset is not None:
        text = message_text(messages[whole])
        stable = chat.add(f"message {whole}", _role(messages[whole]), text[:offset], rules, False)
        head = _insert(stable, chat.moved)
        chat.texts[whole], new_end = head + text[offset:], (whole, len(head))
    elif chat.moved:
        last = max(chat.texts)
        chat.texts[last] += ("\n\n" if chat.texts[last] else "") + "\n".join(chat.moved)
    new_messages = _rebuild(messages, chat.texts)
    new_tools, tools_trace = canonical_tools(tools, rules)
    changed = new_messages is not messages or new_tools is not tools
    key = json.dumps(chat.key, ensure_ascii=False)
    trace = tuple(chat.trace + tools_trace)
    return CanonicalResult(
        new_messages, new_tools, key, tools_json(new_tools), new_end, trace, changed
    )


def _rebuild(messages: Sequence[Any], texts: dict[int, str]) -> Any:
    """The original list when no text changed, else a copy with changed messages copied."""
    changed = {i: t for i, t in texts.items() if t != message_text(messages[i])}
    if not changed:
        return messages
    return [with_text(m, changed[i]) if i in changed else m for i, m in enumerate(messages)]


def canonical_tools(tools: Any, rules: CanonicalRules) -> tuple[Any, list[str]]:
    """Keys sorted recursively, list sorted by (type, function name); `tools` if unchanged."""
    if not rules.sort_tools or not isinstance(tools, list):
        return tools, []
    new = sorted((_sorted_keys(tool) for tool in tools), key=_tool_sort_key)
    if json.dumps(new) == json.dumps(tools):
        return tools, []
    return new, ["canonical: tools sorted (keys and order)"]


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def _tool_sort_key(tool: Any) -> tuple[str, str, str]:
    tool_ = tool if isinstance(tool, dict) else {}
    function = tool_.get("function") if isinstance(tool_.get("function"), dict) else {}
    return (
        str(tool_.get("type", "")),
        str(function.get("name", "")),
        json.dumps(tool, sort_keys=True),
    )


def tools_json(tools: Any) -> str:
    """The canonical JSON of the tools ("" when there are none), for `prefix_key`."""
    if not tools:
        return ""
    return json.dumps(tools, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def canonicalize_prompt(
    prompt: str, rules: CanonicalRules, static_end: Position | None = None
) -> CanonicalResult:
    """A completion prompt: only `prompt[:offset]` is static; without it nothing is."""
    if static_end is None or not isinstance(prompt, str):
        return CanonicalResult(prompt, None, "", "", None, (), False)
    offset, chat = static_end[1], _Chat()
    head = _insert(chat.add("prompt", "", prompt[:offset], rules, False), chat.moved)
    new = head + prompt[offset:]
    stable, changed = chat.key[0][1], new != prompt
    result = new if changed else prompt
    return CanonicalResult(result, None, stable, "", (None, len(head)), tuple(chat.trace), changed)
