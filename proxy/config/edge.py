"""The HTTP edge and the backends: timeouts, health, upstream caps, admission,
discovery, the HTTP server's limits."""

from __future__ import annotations

from pydantic import Field

from proxy.config.section import Section


class TimeoutSettings(Section):
    connect_s: float = Field(2.0, gt=0, description="Seconds to open a connection to a backend.")
    first_byte_s: float = Field(
        120.0,
        gt=0,
        description="Seconds until a streamed request's response headers arrive (a "
        "non-streamed POST waits up to `total_s`: vLLM answers it only once the whole "
        "generation is done).",
    )
    idle_s: float = Field(60.0, gt=0, description="Seconds allowed between two streamed chunks.")
    total_s: float = Field(900.0, gt=0, description="Seconds for a whole request, stream included.")
    drain_s: float = Field(
        30.0, ge=0, description="Seconds open requests may take to finish on shutdown (SIGTERM)."
    )


class HealthSettings(Section):
    interval_s: float = Field(5.0, gt=0, description="Seconds between backend health checks.")
    timeout_s: float = Field(2.0, gt=0, description="Seconds a health check may take.")
    unhealthy_after: int = Field(
        3,
        ge=1,
        description="Consecutive failed checks or timeouts before a backend is ejected "
        "(a refused connection ejects at once).",
    )
    panic: bool = Field(
        True, description="With no healthy backend, route to every known one rather than refuse."
    )


class UpstreamSettings(Section):
    """Limits on what a backend may send back (proxy/upstream/answer.py, proxy/response/sse.py)."""

    max_response_bytes: int = Field(
        64 << 20,
        ge=1024,
        description="Largest non-streamed backend body relayed (bytes); above it: 502.",
    )
    max_sse_event_bytes: int = Field(
        4 << 20,
        ge=1024,
        description="Largest SSE event held while looking for its end (bytes); above it the "
        "stream ends with an error event.",
    )
    backend_forces_usage: bool = Field(
        False,
        description="The backends run vLLM with --enable-force-include-usage: every stream "
        "ends with a usage chunk, which ragtrim then never strips (it cannot tell the one it "
        "asked for from the one the operator forced).",
    )


class AdmissionSettings(Section):
    """The per-worker cap on requests in flight (proxy/request/admission.py). The
    per-backend cap is the routing filter `room` (routing.filters, e.g. `room:8`)."""

    max_in_flight: int = Field(
        0, ge=0, description="Requests in flight per worker before new ones get 429 (0 = no limit)."
    )
    retry_after_s: int = Field(
        1, ge=0, description="Retry-After sent with an overload 429 (this cap's and room's)."
    )


class DiscoverySettings(Section):
    interval_s: float = Field(
        5.0, gt=0, description="Seconds between DNS look-ups of dns+http:// backends."
    )
    timeout_s: float = Field(2.0, gt=0, description="Seconds a DNS look-up may take.")
    nameserver: str = Field(
        "",
        description="DNS server (host or host:port) for dns+http:// backends; empty = the "
        "system resolver (getaddrinfo).",
    )


class HttpSettings(Section):
    """Limits on the client side of the HTTP edge (proxy/http/edge.py)."""

    max_headers: int = Field(
        100, ge=1, description="Most header fields in a request head (431 above)."
    )
    max_head_bytes: int = Field(
        64 * 1024,
        ge=1024,
        description="Most bytes in a request head, request line and headers (431 above).",
    )
    head_timeout_s: float = Field(
        10.0, gt=0, description="Seconds a client may take to send a whole request head (408)."
    )
    body_timeout_s: float = Field(
        30.0, gt=0, description="Seconds a client may take to send a whole request body (408)."
    )
    keep_alive_timeout_s: float = Field(
        5.0, gt=0, description="Seconds an idle keep-alive connection stays open."
    )
    max_connections: int = Field(
        0,
        ge=0,
        description="Open client connections per worker; more are answered 503 and closed "
        "(0 = half the open-file limit, RLIMIT_NOFILE, leaving the rest to backend "
        "connections).",
    )


class RequestLimitSettings(Section):
    """Caps on a request's shape: every one bounds work that grows with the
    body (parsing, checks, canonicalization, token estimates, encoding), so that one
    request cannot hold the event loop. Over a cap: a 400 or 413 in the envelope, with
    `param` naming the field where one can be named (proxy/request/parse.py)."""

    max_json_values: int = Field(
        300_000,
        ge=1_000,
        description="Most JSON values in a chat or completion body, an object's keys "
        "included (413 above), counted on the raw bytes before parsing as 1 + its commas, "
        "`:`, `[` and `{` (inside strings too: an upper bound). Bounds the parse (~50 ns a "
        "value, ~90 ns a new key: one call that holds the GIL); a 128k-token prompt of "
        "token ids is ~128k values.",
    )
    max_json_containers: int = Field(
        50_000,
        ge=100,
        description="Most JSON objects and arrays in a chat or completion body (413 above), "
        "counted as the `[` and `{` bytes before parsing (inside strings too); each costs "
        "~3 values to parse.",
    )
    max_messages: int = Field(
        4096,
        ge=1,
        description="Most messages in one request (400 above): chat's and Messages' "
        "`messages`, Responses' `input` items.",
    )
    max_content_parts: int = Field(
        4096,
        ge=1,
        description="Most content parts in one request, all messages together (400 above): "
        "chat's parts; Messages' content blocks, `system` blocks and tool_result blocks; "
        "Responses' item parts. OpenAI's vision guide allows up to 500 images per request.",
    )
    max_tools: int = Field(
        4096,
        ge=1,
        description="Most entries in `tools` (and in the legacy `functions`) on chat, "
        "completions, Messages and Responses (400 above). vLLM has no tool cap (OpenAI's "
        "128 is not vLLM's), so this one is as large as the other list caps: the work a "
        "tool costs is bounded by `max_json_values` and `max_body_bytes`.",
    )
    max_tool_calls: int = Field(
        4096,
        ge=1,
        description="Most tool calls in one request, all assistant messages together (400 "
        "above); OpenAI refuses more than 128 in one message.",
    )
    max_object_keys: int = Field(
        10_000,
        ge=16,
        description="Most keys in any one JSON object of a body (400 above, `param` naming "
        "the object). Real objects are far smaller: a tool's schema has tens of "
        "properties, OpenAI caps `logit_bias` at 300 tokens; one of 290k keys held the "
        "parse 70-150 ms. A vocabulary-wide `logit_bias` (vLLM takes up to the "
        "vocabulary's size) needs this raised, or vLLM's `allowed_token_ids` list.",
    )
    max_question_chars: int = Field(
        8192,
        ge=64,
        description="Longest question the compressor scores documents against (characters); "
        "a longer one keeps its head and tail for scoring, while the prompt sent upstream "
        "is unchanged (relevance encoders read ~512 tokens anyway).",
    )
