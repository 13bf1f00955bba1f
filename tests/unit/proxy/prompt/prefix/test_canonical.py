"""Golden cases for the canonical static prefix (proxy/prompt/prefix)."""

from __future__ import annotations

import json

from proxy.prompt.prefix import CanonicalRules, canonicalize_chat, canonicalize_prompt, prefix_key
from proxy.prompt.prefix.tools import tools_json

MOVE = CanonicalRules(move_volatile=True)
TOOL_A = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the docs",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
TOOL_A_REORDERED = {
    "function": {
        "parameters": {"properties": {"q": {"type": "string"}}, "type": "object"},
        "description": "Search the docs",
        "name": "search",
    },
    "type": "function",
}
TOOL_B = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}


def chat(system: str, user: str = "What is new?") -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def key_of(result, salt: str = "tenant-a") -> str:
    return prefix_key("m", result.static_prefix, result.tools_json, salt)


def test_crlf_and_trailing_spaces_are_normalised_in_the_static_part_only():
    messages = chat("You are Bot.  \r\nBe brief.\t\r\nCite sources. ", user="Q?  \r\nmore")
    result = canonicalize_chat(messages, None, CanonicalRules())
    assert result.messages[0] == {
        "role": "system",
        "content": "You are Bot.\nBe brief.\nCite sources.",
    }
    assert result.messages[1] is messages[1]  # the user message is not static: untouched
    assert messages[0]["content"].startswith("You are Bot.  \r\n")  # input not mutated
    assert result.changed
    assert result.trace == (
        "canonical: message 0: normalized newlines",
        "canonical: message 0: stripped trailing whitespace",
    )
    clean = canonicalize_chat(
        chat("You are Bot.\nBe brief.\nCite sources."), None, CanonicalRules()
    )
    assert key_of(clean) == key_of(result)


def test_rules_can_switch_normalisation_off():
    messages = chat("A  \r\nB")
    off = CanonicalRules(normalize_newlines=False, strip_trailing_whitespace=False)
    assert canonicalize_chat(messages, None, off).messages is messages
    only_newlines = CanonicalRules(strip_trailing_whitespace=False)
    assert canonicalize_chat(messages, None, only_newlines).messages[0]["content"] == "A  \nB"


def test_tools_in_any_key_or_list_order_give_the_same_key():
    one = canonicalize_chat(chat("Sys"), [TOOL_A, TOOL_B], CanonicalRules())
    two = canonicalize_chat(chat("Sys"), [TOOL_B, TOOL_A_REORDERED], CanonicalRules())
    assert [t["function"]["name"] for t in one.tools] == ["add", "search"]
    assert one.tools_json == two.tools_json == tools_json(one.tools)
    assert key_of(one) == key_of(two)
    assert "canonical: tools sorted (list order)" in one.trace


def test_a_tools_own_key_order_is_never_changed():
    """Issue 31: property order is part of the prompt (a template renders tools as
    JSON) and steers the order the model writes arguments in: only the list is sorted."""
    schema = {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}}
    tool = {"type": "function", "function": {"parameters": schema, "name": "zeta"}}
    result = canonicalize_chat(chat("Sys"), [tool, TOOL_A_REORDERED, TOOL_B], CanonicalRules())
    assert [t["function"]["name"] for t in result.tools] == ["add", "search", "zeta"]
    assert result.tools[1] is TOOL_A_REORDERED and result.tools[2] is tool
    assert list(result.tools[2]["function"]["parameters"]["properties"]) == ["z", "a"]
    alone = canonicalize_chat(chat("Sys"), [TOOL_A_REORDERED], CanonicalRules())
    assert alone.tools[0] is TOOL_A_REORDERED and not alone.changed


def test_tools_already_canonical_are_returned_as_is():
    tools = canonicalize_chat(chat("Sys"), [TOOL_A, TOOL_B], CanonicalRules()).tools
    again = canonicalize_chat(chat("Sys"), tools, CanonicalRules())
    assert again.tools is tools
    assert not again.changed
    assert (
        canonicalize_chat(chat("Sys"), [TOOL_B, TOOL_A], CanonicalRules(sort_tools=False)).tools[0]
        is TOOL_B
    )


def test_a_date_line_in_the_system_prompt_moves_after_the_static_part():
    system = "You are Bot.\nCurrent date: 2026-11-29\nBe concise."
    result = canonicalize_chat(chat(system), None, MOVE)
    assert result.messages[0]["content"] == (
        "You are Bot.\nBe concise.\n\nCurrent date: 2026-11-29"
    )
    assert json.loads(result.static_prefix) == [["system", "You are Bot.\nBe concise."]]
    assert "canonical: message 0: moved volatile 'Current date: 2026-11-29'" in result.trace


def test_the_key_and_the_byte_prefix_are_equal_across_dates():
    day1 = canonicalize_chat(chat("You are Bot. Today is 2026-11-29. Answer briefly."), None, MOVE)
    day2 = canonicalize_chat(chat("You are Bot. Today is 2026-11-30. Answer briefly."), None, MOVE)
    assert day1.messages[0]["content"] == "You are Bot. Answer briefly.\n\nToday is 2026-11-29."
    assert day2.messages[0]["content"] == "You are Bot. Answer briefly.\n\nToday is 2026-11-30."
    assert key_of(day1) == key_of(day2)
    off = CanonicalRules()  # opt-in: by default the date stays and the keys differ
    plain1 = canonicalize_chat(chat("Today is 2026-11-29."), None, off)
    plain2 = canonicalize_chat(chat("Today is 2026-11-30."), None, off)
    assert key_of(plain1) != key_of(plain2)


def test_datetimes_uuids_and_extra_patterns_move_in_order():
    rules = CanonicalRules(move_volatile=True, extra_volatile=(r"req-\d+",))
    system = (
        "Session 123e4567-e89b-12d3-a456-426614174000\n"
        "You are Bot. Now: 2026-11-29T10:15:00Z.\n"
        "Trace req-42\n"
        "Be kind."
    )
    result = canonicalize_chat(chat(system), None, rules)
    assert result.messages[0]["content"] == (
        "You are Bot.\nBe kind.\n\n"
        "Session 123e4567-e89b-12d3-a456-426614174000\nNow: 2026-11-29T10:15:00Z.\nTrace req-42"
    )


def test_volatile_units_from_several_system_messages_go_to_the_last_one():
    messages = [
        {"role": "system", "content": "Rules. Date: 2026-11-29."},
        {"role": "developer", "content": "Dev notes."},
        {"role": "user", "content": "Hi 2026-11-29"},
    ]
    result = canonicalize_chat(messages, None, MOVE)
    assert [m["content"] for m in result.messages] == [
        "Rules.",
        "Dev notes.\n\nDate: 2026-11-29.",
        "Hi 2026-11-29",
    ]
    assert result.messages[2] is messages[2]


def test_static_end_inside_a_message_inserts_before_its_partial_line():
    head = "Rules here.\nToday is 2026-11-29.\nContext: "
    text = head + "DOC ONE\n\nQuestion: why?"
    result = canonicalize_chat([{"role": "system", "content": text}], None, MOVE, (0, len(head)))
    # the date line already sat right before the partial line: bytes unchanged
    assert result.messages[0]["content"] == text
    assert json.loads(result.static_prefix) == [["system", "Rules here.\nContext: "]]
    moved = "Today is 2026-11-29. Rules here.\nContext:  "
    other = canonicalize_chat(
        [{"role": "user", "content": moved + "DOC"}], None, MOVE, (0, len(moved))
    )
    new = "Rules here.\nToday is 2026-11-29.\nContext:  DOC"  # partial line keeps its spaces
    assert other.messages[0]["content"] == new
    assert other.static_end == (0, len(new) - 3)
    assert json.loads(other.static_prefix) == [["user", "Rules here.\nContext:  "]]


def test_static_end_includes_earlier_messages_and_reports_the_shift():
    messages = [
        {"role": "system", "content": "Sys  \r\n"},
        {"role": "user", "content": [{"type": "text", "text": "Intro \r\nDocs: D1"}]},
    ]
    result = canonicalize_chat(messages, None, CanonicalRules(), (1, len("Intro \r\nDocs: ")))
    assert result.messages[0]["content"] == "Sys\n"
    assert result.messages[1]["content"] == [{"type": "text", "text": "Intro\nDocs: D1"}]
    assert result.static_end == (1, len("Intro\nDocs: "))
    assert json.loads(result.static_prefix) == [["system", "Sys\n"], ["user", "Intro\nDocs: "]]


def test_nothing_to_change_returns_the_same_objects():
    messages = chat("You are Bot.\nBe brief.")
    tools = [TOOL_B]
    canonical_tools = canonicalize_chat(messages, tools, MOVE).tools
    result = canonicalize_chat(messages, canonical_tools, MOVE)
    assert result.messages is messages
    assert result.tools is canonical_tools
    assert not result.changed
    assert result.trace == ()


def test_tenant_salt_model_and_tools_all_change_the_key():
    result = canonicalize_chat(chat("You are Bot."), [TOOL_A], CanonicalRules())
    base = key_of(result)
    assert len(base) == 64 and int(base, 16) >= 0
    assert key_of(result, "tenant-b") != base
    assert prefix_key("m2", result.static_prefix, result.tools_json, "tenant-a") != base
    assert prefix_key("m", result.static_prefix, "", "tenant-a") != base
    assert prefix_key("m", "ab", "c", "") != prefix_key("m", "a", "bc", "")  # length-prefixed
    assert key_of(canonicalize_chat(chat("You are Bot."), [TOOL_A], CanonicalRules())) == base


def test_no_system_message_means_an_empty_static_prefix():
    messages = [{"role": "user", "content": "Today is 2026-11-29"}]
    result = canonicalize_chat(messages, None, MOVE)
    assert result.messages is messages
    assert json.loads(result.static_prefix) == []


def test_completion_prompt_with_static_end():
    head = "Answer from the context. Date: 2026-11-29.  \r\nContext: "
    prompt = head + "DOC"
    result = canonicalize_prompt(prompt, MOVE, (None, len(head)))
    assert result.messages == "Answer from the context.\nDate: 2026-11-29.\nContext: DOC"
    assert result.static_prefix == "Answer from the context.\nContext: "
    assert result.static_end == (None, len(result.messages) - 3)
    assert result.changed
    assert canonicalize_prompt(prompt, MOVE).messages is prompt
