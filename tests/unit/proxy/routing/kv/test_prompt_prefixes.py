"""The prompts' prefix caches: a static prefix and a conversation's last turn are
encoded once, and the ids are always those of the whole text (the tiny Llama of make
setup)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.routing.kv import prompt_prefixes
from proxy.routing.kv.chat_tokens import ChatTokenizer
from proxy.routing.kv.prefix_chain import StaticPrefix
from proxy.routing.kv.prompt_prefixes import Lru

TINY = Path(__file__).resolve().parents[5] / ".models" / "tiny-llama"
pytestmark = pytest.mark.skipif(not (TINY / "tokenizer.json").exists(), reason="make setup")
SYSTEM = {"role": "system", "content": "You answer from the documents. " * 20}
QUESTION = {"role": "user", "content": "What is in the box?"}


def whole(tok: ChatTokenizer, body: dict) -> list[int]:
    return tok.encode(tok.render(body["messages"], body, True))


def test_a_changed_static_message_is_another_prefix():
    tok = ChatTokenizer(str(TINY))
    tok.chat({"messages": [SYSTEM, QUESTION]})
    changed = {**SYSTEM, "content": SYSTEM["content"] + " Be brief."}
    body = {"messages": [changed, QUESTION]}
    assert tok.chat(body) == whole(tok, body)
    assert len(tok.prefixes.static) == 2


def test_pending_bytes_leave_out_a_cached_prefix():
    tok = ChatTokenizer(str(TINY))
    body = {"messages": [SYSTEM, QUESTION]}
    assert tok.pending_bytes(body) == len(SYSTEM["content"]) + len(QUESTION["content"])
    tok.chat(body)
    assert tok.pending_bytes(body) == len(QUESTION["content"])
    listed = {"messages": [{**SYSTEM, "extra": ["unhashable"]}, QUESTION]}
    assert tok.chat(listed) == whole(tok, listed)
    assert tok.pending_bytes(listed) > len(QUESTION["content"])


def test_the_next_turn_starts_from_the_last_turns_ids_and_holds_only_its_own():
    tok = ChatTokenizer(str(TINY))
    tok.chat({"messages": [SYSTEM, QUESTION]})
    (static,) = tok.prefixes.static.values()
    (turn,) = tok.prefixes.turns.values()
    assert turn.head is static and len(turn.own) == turn.size - static.size < 20
    second = {"messages": [SYSTEM, QUESTION, {"role": "assistant", "content": "A cat."},
                           {"role": "user", "content": "Is it alive?"}]}  # fmt: skip
    ids = tok.chat(second)
    assert ids == whole(tok, second) and ids.static is turn
    assert tok.pending_bytes(second) == len("A cat.") + len("Is it alive?")
    third = {"messages": [*second["messages"], {"role": "assistant", "content": "Yes."},
                          {"role": "user", "content": "How old?"}]}  # fmt: skip
    ids = tok.chat(third)
    assert ids == whole(tok, third) and ids.static.head is static


def test_a_conversation_without_a_system_prompt_is_remembered_whole():
    tok = ChatTokenizer(str(TINY))
    tok.chat({"messages": [QUESTION]})
    second = {"messages": [QUESTION, {"role": "assistant", "content": "A cat."},
                           {"role": "user", "content": "Is it alive?"}]}  # fmt: skip
    ids = tok.chat(second)
    assert ids == whole(tok, second) and ids.static is not None and ids.static.head is None


def test_one_off_questions_never_push_a_static_prefix_out():
    tok = ChatTokenizer(str(TINY), cache_entries=8, turn_entries=8)  # a tenant's share: 2
    for n in range(5):
        tok.chat({"messages": [SYSTEM, {"role": "user", "content": f"Question {n}?"}]})
    assert len(tok.prefixes.static) == 1 and len(tok.prefixes.turns) == 2


def test_a_template_kwarg_that_changes_the_generation_prompt_is_found_apart():
    tok = ChatTokenizer(str(TINY))
    plain = {"messages": [SYSTEM, QUESTION]}
    kwargs = {**plain, "chat_template_kwargs": {"enable_thinking": False}}
    assert tok.chat(plain) == whole(tok, plain) and tok.chat(kwargs) == whole(tok, kwargs)
    assert len(tok.prefixes.gen_prompts) == 2


def test_the_caches_are_bounded_in_bytes_as_well_as_entries():
    lru = Lru(entries=40, max_bytes=4000)  # a partition: 10 entries, 1000 bytes
    for n in range(4):
        lru.put("a", (n,), StaticPrefix("x" * 100, [1] * 20))  # 360 bytes each
    assert list(lru.items) == [("a", (2,)), ("a", (3,))] and lru.bytes == 720
    lru.put("a", ("huge",), StaticPrefix("x" * 600, []))  # alone over the bound: not kept
    assert not lru.has("a", ("huge",)) and lru.bytes == 720


def test_each_tenant_holds_a_share_of_a_cache_and_evicts_only_its_own():
    lru = Lru(entries=8, max_bytes=1 << 20)  # a partition: 2 entries
    lru.put("a", ("ctx",), StaticPrefix("x", [1]))
    for n in range(50):  # tenant b's flood
        lru.put("b", (n,), StaticPrefix("x", [1]))
    assert lru.has("a", ("ctx",)) and not lru.has("b", ("ctx",))
    assert lru.parts["b"][0] == 2 and len(lru) == 3


def test_a_client_cannot_grow_the_generation_prompts_without_bound():
    tok = ChatTokenizer(str(TINY))
    for n in range(prompt_prefixes.GEN_PROMPTS + 5):
        tok.chat({"messages": [QUESTION], "chat_template_kwargs": {"junk": n}})
    assert len(tok.prefixes.gen_prompts) == prompt_prefixes.GEN_PROMPTS
