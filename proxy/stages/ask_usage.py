"""Usage stage: a streamed request asks vLLM for usage, so ragtrim learns the cached
tokens and the prompt size of every response (feedback, the gate, the registry).
When the client had not asked, `usage_added` tells the reply to remove that chunk
again (proxy/response/usage_tap.py `ChatUsage`): the client sees the stream it asked for."""

from __future__ import annotations

from proxy.context import RequestContext


class UsageStage:
    name = "usage"

    async def __call__(self, ctx: RequestContext) -> None:
        ctx.usage_added = ctx.prompt.request_usage()
