"""Hypothesis strategies for prompts: random text mixed with fragments of every
template ragtrim recognises (tags, LangChain / LlamaIndex / Haystack markers), so
that the recognisers' partial-match paths are reached, not only their quick
rejections. Shared by the segmentation, canonicalization and pipeline properties."""

import re

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from proxy.prompt.segment.frameworks import read_texts

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
TEMPLATES = [text for entry in read_texts() for text in entry.texts.values()]


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
