"""RequestContext: the per-request state, typed (like the endpoint picker's CycleState).

Every field is a hand-off from one step to a later one; what nobody reads is not here.

    field             written by               read by
    tenant            tenant stage             compress (memo scope), pass-through auth
    options           options stage            segment (body field), compress (rate)
    segmentation      segment stage            compress, canonicalize
    prefix_key        canonicalize stage       router (affinity), feedback (registry)
    replay            canonicalize stage       feedback (warm-up replay body)
    token_ids         router.prepare           kv_cache scorer (ids vLLM will see; [] = none)
    usage_added       usage stage              usage hook (strip the usage chunk again)
    response_headers  every stage              headers hook (x-ragtrim-* on the reply)
    route_match       forwarder                owner hook (the response ids it records)
    cache_plan        compress stage (stable)  prefix-record hook (what was sent where)

The body is `prompt` (proxy/prompt/body.py), the one place it is rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proxy.http.routes import Match
from proxy.options import RequestOptions
from proxy.prompt.body import Prompt, prompt_for
from proxy.prompt.segment import Segmentation

if TYPE_CHECKING:  # the plan's module reads the pool: no import at run time
    from proxy.cache_view import CachePlan


@dataclass
class RequestContext:
    request_id: str
    route: str  # "chat" | "completions" | "responses" | "messages" | "other" (pass-through)
    raw: bytes
    body: dict[str, Any]
    headers: dict[str, str]
    tenant: str = ""
    options: RequestOptions = field(default_factory=RequestOptions)
    segmentation: Segmentation | None = None
    prefix_key: str | None = None
    replay: dict[str, Any] | None = None
    token_ids: list[int] | None = None  # None: not prepared (the scorer tokenizes inline)
    usage_added: bool = False
    response_headers: dict[str, str] = field(default_factory=dict)
    route_match: Match | None = None  # the route table's entry (issue 33)
    cache_plan: CachePlan | None = None  # issue 29: None without cache-aware compression
    prompt: Prompt = field(init=False)

    def __post_init__(self) -> None:
        self.prompt = prompt_for(self.route, self.body)

    @property
    def model(self) -> str | None:
        return self.prompt.model

    @property
    def stream(self) -> bool:
        return self.prompt.stream

    def upstream_body(self) -> bytes:
        """The bytes sent upstream: the client's own bytes unless a stage changed the body."""
        return self.prompt.encode(self.raw)
