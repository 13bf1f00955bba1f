"""The options and segment stages, called directly."""

import pytest

from proxy.context import RequestContext
from proxy.errors import InvalidRequest
from proxy.prompt.ragtrim_options import RequestOptions
from proxy.prompt.segment import Segmenter
from proxy.stages.options import OptionsStage
from proxy.stages.segment import SegmentStage

TAGGED = "<ragtrim:doc>Paris is in France.</ragtrim:doc>\nQuestion: where is Paris?"
CHAT = [{"role": "user", "content": "hi"}]


def ctx(body: dict, headers: dict | None = None, route: str = "completions") -> RequestContext:
    return RequestContext("r", route, b"{}", body, headers or {})


@pytest.mark.parametrize(
    ("headers", "field"), [({"x-ragtrim-rate": "5"}, None), ({}, {"rate": "abc"}), ({}, "x")]
)
async def test_bad_options_are_rejected_without_any_rag_context(headers, field):
    body = {"model": "m", "messages": CHAT}
    if field is not None:
        body["ragtrim"] = field
    with pytest.raises(InvalidRequest):
        await OptionsStage()(ctx(body, headers, route="chat"))


async def test_options_read_once_and_the_field_leaves_the_body():
    c = ctx({"model": "m", "messages": CHAT, "ragtrim": {"rate": 0.3, "question": "q"}},
            {"x-ragtrim-rate": "0.4"}, route="chat")  # fmt: skip
    await OptionsStage()(c)
    assert c.options == RequestOptions(True, 0.4, {"rate": 0.3, "question": "q"})
    assert "ragtrim" not in c.body and c.upstream_body() != b"{}"
    assert c.options.keep_rate(0.5) == 0.4


@pytest.mark.parametrize(
    ("headers", "field"), [({"x-ragtrim-compress": "off"}, None), ({}, {"compress": False})]
)
async def test_compression_switched_off_by_header_or_field(headers, field):
    body = {"model": "m", "messages": CHAT, **({"ragtrim": field} if field else {})}
    c = ctx(body, headers, route="chat")
    await OptionsStage()(c)
    assert c.options.keep_rate(0.5) is None


async def test_without_options_nothing_changes():
    c = ctx({"model": "m", "messages": CHAT}, route="chat")
    await OptionsStage()(c)
    assert c.options.keep_rate(0.5) == 0.5 and c.upstream_body() == b"{}"


async def test_prompt_as_one_element_list_is_segmented_like_a_string():
    as_list, as_str = ctx({"model": "m", "prompt": [TAGGED]}), ctx({"model": "m", "prompt": TAGGED})
    for c in (as_list, as_str):
        await SegmentStage(Segmenter())(c)
    assert as_list.segmentation is not None
    assert as_list.segmentation.documents == as_str.segmentation.documents
    assert as_list.outcome.template == "tags"


@pytest.mark.parametrize("prompt", [["a", "b"], [1, 2], 3])
async def test_only_one_prompt_text_is_segmented(prompt):
    c = ctx({"model": "m", "prompt": prompt})
    await SegmentStage(Segmenter())(c)
    assert c.segmentation is None and c.outcome.template is None


async def test_the_body_field_names_the_documents():
    c = ctx({"model": "m", "prompt": "Context: Ada. Question?"})
    c.options = RequestOptions(field={"documents": ["Ada."], "question": "Question?"})
    await SegmentStage(Segmenter())(c)
    assert c.segmentation.template == "body_field" and c.segmentation.texts == ["Ada."]
