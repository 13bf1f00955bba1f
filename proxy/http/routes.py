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


@dataclass(frozen=True)
class Match:
    route: Route
    path: str  # the table's path (the ids filled in): what the app and upstream see


EXACT: dict[str, Route] = {
    "/v1/chat/completions": Route("chat", POST),
    "/v1/completions": Route("completions", POST),
    **{
        path: Route("other", POST)
        for path in (
            "/v1/embeddings",
            "/v1/responses",
            "/v1/audio/transcriptions",
            "/v1/audio/translations",
            "/v1/score",
            "/v1/rerank",
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
    (("", "v1", "responses", "{id}"), Route("other", GET)),
    (("", "v1", "responses", "{id}", "cancel"), Route("other", POST)),
)


_EXACT_MATCHES = MappingProxyType({path: Match(route, path) for path, route in EXACT.items()})


def match(path: str) -> Match | None:
    """The route of a normalised path (proxy/http/paths.py), or None (a 404)."""
    found = _EXACT_MATCHES.get(path)
    if found is not None:
        return found
    segments = path.split("/")
    for template, route in TEMPLATES:
        if len(template) == len(segments) and all(map(_fits, template, segments)):
            return Match(route, path)
    return None


def _fits(template: str, segment: str) -> bool:
    return template == segment or (template == "{id}" and _ID.fullmatch(segment) is not None)
