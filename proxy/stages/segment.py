"""Segment stage: find the context documents and the question (compressors.templates).

ragtrim's own request options (the `ragtrim` body field, `x-ragtrim-rate`) are
validated here, on every request: an invalid one is a 400 whether or not a RAG
context is found, so a typo never passes silently on the requests it would affect."""

from __future__ import annotations

from compressors.templates import segment_chat, segment_prompt
from proxy.context import RequestContext
from proxy.errors import InvalidRequest
from proxy.stages.compress import requested_rate

BODY_FIELD = "ragtrim"


class SegmentStage:
    name = "segment"

    def __init__(self, patterns: list[str]):
        self.patterns = patterns

    async def __call__(self, ctx: RequestContext) -> None:
        field = ctx.body.get(BODY_FIELD)
        if field is not None and not isinstance(field, dict):
            raise InvalidRequest("`ragtrim` must be an object", param=BODY_FIELD)
        if field is not None:
            ctx.options = field
            del ctx.body[BODY_FIELD]  # ragtrim's own field never reaches the backend
            ctx.modified = True
        requested_rate(ctx, None)  # raises InvalidRequest on a bad value
        seg = self._segment(ctx, field)
        if seg is not None:
            ctx.segmentation = seg
            ctx.decisions["template"] = seg.template
            ctx.response_headers["x-ragtrim-template"] = seg.template

    def _segment(self, ctx: RequestContext, field: dict | None):
        if ctx.route == "chat":
            return segment_chat(ctx.body["messages"], body_field=field, patterns=self.patterns)
        prompt = single_prompt(ctx.body.get("prompt"))
        if prompt is not None:
            return segment_prompt(prompt, body_field=field, patterns=self.patterns)
        return None


def single_prompt(prompt) -> str | None:
    """The one prompt text: a string, or a list holding exactly one string (what
    langchain_openai.OpenAI and other batching clients send for one prompt)."""
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    return prompt if isinstance(prompt, str) else None
