"""Property tests (hypothesis): segmentation and canonicalization take any input.

- segment_chat / segment_prompt never raise, on any messages, prompt or `ragtrim` field;
  every slot they return lies inside its text, and putting the found texts back
  (apply_*) changes nothing but tag markers;
- canonicalize_chat / canonicalize_prompt never raise; with every rule off nothing
  changes; the prefix key of a canonical prefix is stable under a second pass;
- through the app's own pipeline (every stage, in its order), a request in which no
  template is recognised leaves ragtrim byte for byte as the client sent it.

Inputs mix random text with fragments of every template ragtrim recognises (tags,
LangChain / LlamaIndex / Haystack markers) so that the recognisers' partial-match
paths are reached, not only their quick rejections.
"""

import asyncio
import importlib
import pkgutil
import re

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compressors.templates as templates_package
from cache.store import MemoryStore
from compressors.templates import (
    apply_chat,
    apply_prompt,
    message_text,
    segment_chat,
    segment_prompt,
)
from proxy.canonical import CanonicalRules, canonicalize_chat, canonicalize_prompt, prefix_key
from proxy.components import build
from proxy.context import RequestContext
from proxy.protocol import parse_body
from proxy.settings import Settings
from tests.unit.proxy.doubles import HalfWords

FRAGMENTS = [
    "<ragtrim:doc>", "</ragtrim:doc>", "<ragtrim:question>", "</ragtrim:question>",
    "Use the following pieces of context to answer the user's question.",
    "Use the following pieces of retrieved context to answer the question.",
    "----------------", "Context:", "Question:", "Answer:", "{context}", "{question}",
    "Context information is below.\n---------------------\n",
    "Given the context information and not prior knowledge, answer the query.\n",
    "Query: ", "Documents:\n", "{% for document in documents %}", "\n\n", "\n", "\r\n",
    " ", "\t", "2026-11-30", "12:30:00", "0f8fa0e2-1b7c-4c55-9b39-6d1f1d1f1d1f", "\x00",
    "\ud7ff", "é", "😀",
]  # fmt: skip
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

pieces = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=12).map(
    "".join
)
TEMPLATES = [
    value
    for info in pkgutil.iter_modules(templates_package.__path__)
    for name, value in vars(importlib.import_module(f"{templates_package.__name__}."
                                                    f"{info.name}")).items()
    if name.endswith("_TEMPLATE") and isinstance(value, str)
]  # fmt: skip


@st.composite
def rendered(draw) -> str:
    """A framework template filled with random text, sometimes with a random edit."""
    text = re.sub(r"\{\{?\s*\w+\s*\}?\}", lambda _: draw(pieces),
                  draw(st.sampled_from(TEMPLATES)))  # fmt: skip
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(pieces) + text[at + draw(st.integers(0, 8)) :]
    return text


texts = pieces | rendered()
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False)
    | texts,  # JSON numbers as orjson reads them (larger integers become floats)
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=10,
)  # fmt: skip
parts = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]), "text": texts})
    | st.dictionaries(st.text(max_size=6), json_values, max_size=3),
    max_size=3,
)
contents = st.one_of(texts, parts, st.none(), json_values)
roles = st.sampled_from(["system", "developer", "user", "assistant", "tool"]) | st.text(max_size=8)
junk_messages = st.lists(
    st.fixed_dictionaries({"role": roles, "content": contents})
    | st.dictionaries(st.text(max_size=8), json_values, max_size=3)
    | json_values,
    max_size=6,
)
rag_chats = st.tuples(
    st.lists(st.fixed_dictionaries({"role": roles, "content": texts}), max_size=3),
    st.sampled_from(["system", "developer", "user"]), rendered(),
    st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": texts}), max_size=2),
).map(lambda t: [*t[0], {"role": t[1], "content": t[2]}, *t[3]])  # fmt: skip
messages = junk_messages | rag_chats
body_fields = (
    st.none()
    | json_values
    | st.fixed_dictionaries(
        {"documents": st.lists(texts | json_values, max_size=4), "question": texts | json_values}
    )
)


def check_slots(seg, sources) -> None:
    for slot in seg.documents:
        source = sources(slot.message)
        assert source is not None and 0 <= slot.start <= slot.end <= len(source)
        if seg.template != "tags":
            assert source[slot.start : slot.end] == slot.text


@PROPS
@given(messages, body_fields)
def test_segment_chat_takes_anything(msgs, field):
    seg = segment_chat(msgs, body_field=field)
    if seg is None:
        return
    check_slots(seg, lambda i: message_text(msgs[i]) if i is not None else None)
    same = apply_chat(msgs, seg, [slot.text for slot in seg.documents])
    if seg.template != "tags":
        assert same == msgs  # putting the found texts back changes no byte


@PROPS
@given(texts, body_fields)
def test_segment_prompt_takes_anything(prompt, field):
    seg = segment_prompt(prompt, body_field=field)
    if seg is None:
        return
    check_slots(seg, lambda i: prompt if i is None else None)
    same = apply_prompt(prompt, seg, [slot.text for slot in seg.documents])
    if seg.template != "tags":
        assert same == prompt


ALL_ON = CanonicalRules(normalize_newlines=True, strip_trailing_whitespace=True,
                        sort_tools=True, move_volatile=True)  # fmt: skip
ALL_OFF = CanonicalRules(normalize_newlines=False, strip_trailing_whitespace=False,
                         sort_tools=False, move_volatile=False)  # fmt: skip
static_ends = st.none() | st.tuples(st.none() | st.integers(-2, 8), st.integers(-5, 400))


@PROPS
@given(messages, json_values, static_ends)
def test_canonicalize_chat_takes_anything(msgs, tools, end):
    for rules in (ALL_ON, ALL_OFF):
        result = canonicalize_chat(msgs, tools, rules, end)
        assert isinstance(result.static_prefix, str)
        prefix_key("m", result.static_prefix, result.tools_json, "salt")
    off = canonicalize_chat(msgs, tools, ALL_OFF, end)
    assert off.messages is msgs and off.tools is tools and not off.changed


@PROPS
@given(messages, json_values)
def test_canonical_prefix_is_stable_under_a_second_pass(msgs, tools):
    once = canonicalize_chat(msgs, tools, ALL_ON)
    twice = canonicalize_chat(once.messages, once.tools, ALL_ON)
    assert twice.tools_json == once.tools_json


@PROPS
@given(texts, static_ends)
def test_canonicalize_prompt_takes_anything(prompt, end):
    for rules in (ALL_ON, ALL_OFF):
        canonicalize_prompt(prompt, rules, end)
    assert canonicalize_prompt(prompt, ALL_OFF, end).messages is prompt


@pytest.fixture(scope="module")
def pipeline():
    """The pipeline create_app builds (its stages, in their order), with a test double
    compressor: only a recognised template may change the request."""
    settings_ = Settings(backends=["http://127.0.0.1:9"], compression={"policy": "always",
                         "min_context_tokens": 0})  # fmt: skip
    return build(settings_, store=MemoryStore(), compressor=HalfWords()).forwarder.pipeline


bodies = st.fixed_dictionaries(
    {"model": st.just("m"), "messages": st.lists(
        st.fixed_dictionaries({"role": roles, "content": texts | parts}), min_size=1, max_size=5)},
    optional={"temperature": st.floats(0, 2), "cache_salt": texts, "stream": st.booleans(),
              "extra_field": json_values},
)  # fmt: skip


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=bodies)
def test_unrecognised_prompt_leaves_byte_identical(pipeline, body):
    raw = orjson.dumps(body)
    ctx = RequestContext("r", "chat", raw, parse_body(raw, "chat"), {})
    asyncio.run(pipeline.run(ctx))
    if ctx.segmentation is None:
        assert ctx.upstream_body() == raw
