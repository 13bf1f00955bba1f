"""Options stage: ragtrim's own request options (proxy/prompt/ragtrim_options.py),
validated on every request; the `ragtrim` body field is taken out of the body (it never
reaches vLLM)."""

from __future__ import annotations

from proxy.context import RequestContext
from proxy.prompt.ragtrim_options import BODY_FIELD, read_options


class OptionsStage:
    name = "options"

    async def __call__(self, ctx: RequestContext) -> None:
        ctx.options = read_options(ctx.headers, ctx.body.get(BODY_FIELD))
        ctx.prompt.remove(BODY_FIELD)
