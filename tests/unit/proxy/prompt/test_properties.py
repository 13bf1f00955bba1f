"""Property tests (hypothesis): canonicalization takes any input, and the app's
pipeline leaves an unrecognised prompt alone.

- canonicalize_chat / canonicalize_prompt never raise; with every rule off nothing
  changes; the prefix key of a canonical prefix is stable under a second pass;
- through the app's own pipeline (every stage, in its order), a request in which no
  template is recognised leaves ragtrim byte for byte as the client sent it (a stream
  only asks vLLM for usage besides; ragtrim's tags leave multi-part content).
"""

import asyncio

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cache.store import MemoryStore
from proxy.components import build
from proxy.context import RequestContext
from proxy.prompt.body import strip_multipart_tags
from proxy.prompt.prefix import CanonicalRules, canonicalize_chat, canonicalize_prompt, prefix_key
from proxy.request.parse import parse_body
from proxy.settings import Settings
from tests.support.compressor_doubles import HalfWords
from tests.support.prompts import PROPS, json_values, messages, parts, roles, texts

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
    asked = orjson.loads(raw)  # ragtrim's tags leave multi-part content (proxy/prompt/body.py)
    stripped = strip_multipart_tags(asked["messages"])
    if stripped is not None:
        asked["messages"] = stripped
    if ctx.segmentation is None and not ctx.usage_added:
        assert ctx.upstream_body() == (raw if stripped is None else orjson.dumps(asked))
    elif ctx.segmentation is None:  # a stream: the usage stage asked for usage, nothing else
        sent = orjson.loads(ctx.upstream_body())
        assert sent.pop("stream_options") == {**(asked.pop("stream_options", None) or {}),
                                              "include_usage": True}  # fmt: skip
        assert sent == asked
