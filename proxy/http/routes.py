"""THE route table: every path ragtrim answers, by exact match, and the upstream path
each pass-through route is sent to (built here, never from the client's bytes).

    kind         handled by                             upstream path
    chat         forwarder, with the pipeline           /v1/chat/completions
    completions  forwarder, with the pipeline           /v1/completions
    other        forwarder, relayed unchanged (a key)   the table's own path
    control      the FastAPI control app                (none)

Passed through are vLLM's OpenAI-compatible routes (vllm/entrypoints/openai/api_server.py)
that a client of an inference API calls, plus /tokenize and /detokenize. Left out on
purpose: vLLM's admin routes (/v1/load_lora_adapter, /v1/unload_lora_adapter change what
the backend serves), its /metrics, /health, /ping, /version and /load (ragtrim has its
own probes and metrics). `{id}` matches one segment of letters, digits, `_` and `-`.

`keyed` control routes need a valid key when tenancy is on (they reveal backend URLs
and fleet-wide figures); /healthz and /readyz stay open for probes (/readyz shows its
details only with a key: proxy/routes.py).

How each route keeps tenants apart (issue 33: tenants met on the pass-through routes):
`salted` routes run the model on a JSON body whose vLLM request model takes
`cache_salt` (chat, completions, responses and the pooling routes: embeddings, score,
rerank), so the tenant's salt is written over the client's. The others reach no prefix
cache (/tokenize, /detokenize, a stored response) or take no salt in vLLM (the audio
routes: a multipart form). `owner` is the Responses API's: "creates" records the ids
of the responses a tenant makes (and checks its `previous_response_id`), "reads" needs
the `{id}` to be the tenant's (proxy/owners.py). `name` is the table's own path, the
`{id}` left as is: what spans and logs call a route (never the raw path).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

POST, GET = frozenset({"POST"}), frozenset({"GET", "HEAD"})
_ID = re.compile(r"[A-Za-z0-9_-]{1,256}")


@dataclass(frozen=True)
class Route:
    kind: str  # "chat" | "completions" | "other" (pass-through) | "control"
    methods: frozenset[str]
    keyed: bool = False  # control routes only: a valid key when tenancy is on
    salted: bool = False  # the tenant's cache_salt is written into the body
    owner: str = ""  # "creates" | "reads": response ids (proxy/owners.py); "" = none


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
    "/v1/responses": Route("other", POST, salted=True, owner="creates"),
    **{
        path: Route("other", POST, salted=True)
        for path in ("/v1/embeddings", "/v1/score", "/v1/rerank")
    },
    **{
        path: Route("other", POST)
        for path in (
            "/v1/audio/transcriptions",
            "/v1/audio/translations",
            "/tokenize",
            "/detokenize",
        )
    },  # fmt: skip
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
