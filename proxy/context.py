"""RequestContext: the per-request state, typed (like the endpoint picker's CycleState).

Every field is a hand-off from one step to a later one; what nobody reads is not here.

    field             written by               read by
    principal         the edge (forwarder)     tenant stage (tenant, salt)
    tenant            tenant stage             compress (memo scope), quotas, accounting
    options           options stage            segment (body field), compress (rate)
    segmentation      segment stage            compress, canonicalize
    prefix_key        canonicalize stage       router (affinity), feedback (registry)
    replay            canonicalize stage       feedback (warm-up replay body)
    token_ids         router.prepare           kv_cache scorer (ids vLLM will see; [] = none)
    usage_added       usage stage              usage hook (strip the usage chunk again)
    outcome           stages, answer hook      headers hook, telemetry (proxy/outcome/)
    route_match       forwarder                owner hook (the response ids it records)
    cache_plan        compress stage (stable)  prefix-record hook (what was sent where)

The forwarder leaves the context in the ASGI scope under SCOPE_KEY, the scope being
the one object the telemetry middleware and the data plane share per request (as
Starlette's `request.state` rides in `scope["state"]`), never in a ContextVar.
Why: docs/decisions/0042-telemetry-operations.md.

The body is `prompt` (proxy/prompt/body.py), the one place it is rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cache.forwarded import Receipt
from cache.prompt_blocks import Blocks
from cache.stable_forms import FormKey, StableForm
from proxy.http.route_table import Match
from proxy.outcome.request import RequestOutcome
from proxy.prompt.body import Prompt, prompt_for
from proxy.prompt.ragtrim_options import RequestOptions
from proxy.prompt.segment import Segmentation
from proxy.tenancy.identity import Principal

SCOPE_KEY = "ragtrim.context"


@dataclass
class RequestContext:
    request_id: str
    route: str  # "chat" | "completions" | "responses" | "messages" | "other" (pass-through)
    raw: bytes
    body: dict[str, Any]
    headers: dict[str, str]
    tenant: str = ""
    principal: Principal | None = None  # who asks (proxy/tenancy/identity.py)
    options: RequestOptions = field(default_factory=RequestOptions)
    segmentation: Segmentation | None = None
    prefix_key: str | None = None
    replay: dict[str, Any] | None = None
    token_ids: list[int] | None = None  # None: not prepared (the scorer tokenizes inline)
    usage_added: bool = False
    outcome: RequestOutcome = field(default_factory=RequestOutcome)
    route_match: Match | None = None  # the route table's entry
    cache_plan: CachePlan | None = None  # None without cache-aware compression
    prompt: Prompt = field(init=False)

    def __post_init__(self) -> None:
        self.prompt = prompt_for(self.route, self.body)
        if self.principal is not None and self.principal.tenant is not None:
            self.tenant = self.principal.tenant

    @property
    def model(self) -> str | None:
        return self.prompt.model

    @property
    def stream(self) -> bool:
        return self.prompt.stream

    @property
    def requests(self) -> int:
        """The requests this body counts as, for quotas and accounting (a batch: its
        conversations; the route table's `Route.requests_in`)."""
        found = self.route_match
        return found.route.requests_in(self.body) if found is not None else 1

    def upstream_body(self) -> bytes:
        """The bytes sent upstream: the client's own bytes unless a stage changed the body."""
        return self.prompt.encode(self.raw)


@dataclass
class CachePlan:
    """One request's view of the prefix cache (RequestContext.cache_plan): written by the
    compress stage, read by the response hooks."""

    key: FormKey | None
    form: StableForm | None
    original: Blocks
    original_held: int  # leading tokens of the client's prompt the best backend holds
    form_blocks: Blocks | None = None  # the stored form's, when there is one
    sent: Blocks | None = None  # the blocks of what went upstream (None: nothing to record)
    receipt: Receipt | None = field(default=None, repr=False)
