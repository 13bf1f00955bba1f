"""Canonicalize stage: the static prefix byte-stable and first; its prefix_key.

Runs after compress: the segmenter's `static_end` lies before every document, so
compressing documents never moves it, while canonicalizing would shift document
offsets — this order needs no offset bookkeeping.
"""

from __future__ import annotations

from compressors.templates import SYSTEM_ROLES, message_text, role, with_text
from proxy.canonical import (
    CanonicalRules,
    canonicalize_chat,
    canonicalize_prompt,
    prefix_key,
)
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.settings import CanonicalSettings


def rules_from(settings: CanonicalSettings) -> CanonicalRules:
    return CanonicalRules(
        normalize_newlines=settings.normalize_newlines,
        strip_trailing_whitespace=settings.strip_trailing_whitespace,
        sort_tools=settings.sort_tools,
        move_volatile=settings.move_volatile,
        extra_volatile=tuple(settings.extra_volatile),
    )


class CanonicalizeStage:
    name = "canonicalize"

    def __init__(self, settings: CanonicalSettings, metrics: Metrics):
        self.rules = rules_from(settings)
        self.metrics = metrics

    async def __call__(self, ctx: RequestContext) -> None:
        seg = ctx.segmentation
        static_end = seg.static_end if seg is not None else None
        if ctx.route == "chat":
            result = canonicalize_chat(
                ctx.body["messages"], ctx.body.get("tools"), self.rules, static_end
            )
        elif isinstance(ctx.body.get("prompt"), str):
            result = canonicalize_prompt(ctx.body["prompt"], self.rules, static_end)
        else:
            return
        if result.changed:
            field = "messages" if ctx.route == "chat" else "prompt"
            ctx.set_body_field(field, result.messages)
            if result.tools is not None and ctx.route == "chat":
                ctx.set_body_field("tools", result.tools)
            ctx.trace.extend(result.trace)
            self.metrics.canonical_rewrites.inc()
        if result.static_prefix not in ("", "[]") or result.tools_json:
            salt = str(ctx.body.get("cache_salt", ""))
            ctx.prefix_key = prefix_key(ctx.model, result.static_prefix, result.tools_json, salt)
            ctx.scratch["replay"] = replay_body(ctx, result.static_end)
            ctx.response_headers["x-ragtrim-prefix-key"] = ctx.prefix_key[:16]


def replay_body(ctx: RequestContext, static_end) -> dict | None:
    """The static part of this request as a max_tokens=1 request (for warm-up)."""
    body: dict = {"model": ctx.model, "max_tokens": 1, "temperature": 0}
    if "cache_salt" in ctx.body:
        body["cache_salt"] = ctx.body["cache_salt"]
    if ctx.route != "chat":
        if static_end is None:
            return None
        return {**body, "prompt": ctx.body["prompt"][: static_end[1]]}
    messages = ctx.body["messages"]
    if static_end is not None and static_end[0] is not None:
        i, offset = static_end
        head = with_text(messages[i], (message_text(messages[i]) or "")[:offset])
        static = [*messages[:i], head]
    else:
        static = []
        for message in messages:
            if role(message) not in SYSTEM_ROLES:
                break
            static.append(message)
    if ctx.body.get("tools"):
        body["tools"] = ctx.body["tools"]
    return {**body, "messages": static} if static else None
