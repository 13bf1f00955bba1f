"""The segment stage called directly: options validated on every request, and a
completion prompt given as a one-element list segmented like a string."""

import pytest

from proxy.context import RequestContext
from proxy.errors import InvalidRequest
from proxy.stages.segment import SegmentStage, single_prompt

TAGGED = "<ragtrim:doc>Paris is in France.</ragtrim:doc>\nQuestion: where is Paris?"


def _ctx(body: dict, headers: dict | None = None, route: str = "completions") -> RequestContext:
    return RequestContext("r", route, b"", body, headers or {})


async def test_prompt_as_one_element_list_is_segmented_like_a_string():
    as_list, as_str = (
        _ctx({"model": "m", "prompt": [TAGGED]}),
        _ctx({"model": "m", "prompt": TAGGED}),
    )
    for ctx in (as_list, as_str):
        await SegmentStage([])(ctx)
    assert as_list.segmentation is not None
    assert as_list.segmentation.documents == as_str.segmentation.documents


def test_single_prompt_only_takes_exactly_one_string():
    assert single_prompt(["a"]) == "a" and single_prompt("a") == "a"
    assert single_prompt(["a", "b"]) is None and single_prompt([1, 2]) is None


@pytest.mark.parametrize(
    ("headers", "options"), [({"x-ragtrim-rate": "5"}, None), ({}, {"rate": "abc"})]
)
async def test_bad_options_are_rejected_without_any_rag_context(headers, options):
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if options is not None:
        body["ragtrim"] = options
    with pytest.raises(InvalidRequest):
        await SegmentStage([])(_ctx(body, headers, route="chat"))
