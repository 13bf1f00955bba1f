"""The access log: one JSON line per request, on stderr, through `logging`.

    {"ts": "2026-12-01T22:30:00.123Z", "request_id": "…", "tenant": "acme",
     "method": "POST", "route": "/v1/chat/completions", "path": "/v1/chat/completions",
     "model": "…", "template": "langchain_stuff",
     "decision": "compress:auto(saved=31ms,cost=4ms)", "tokens_before": 812,
     "tokens_after": 406, "cached_tokens": 128, "backend": "http://10.0.0.5:8000",
     "status": 200, "stream": true, "ttft_ms": 41.2, "total_ms": 380.5}

`ttft_ms` is the client's: from the request's arrival to the first body byte ragtrim
sent back. Fields a request never reached are null (a 401 has no model). The line is
written to the `ragtrim.access` logger, which has its own stderr handler printing the
bare message (the root format would prefix it and break the JSON) and does not
propagate. No prompt text, ever, unless `log_prompts` (then the question is added).

Bounded (docs/decisions/0021-bounded-work-per-request.md): `route` is the route table's
name (`/v1/responses/{id}`; null for a path outside it), `path` the path as sent, and
every string field is cut to `telemetry.max_value_chars`, marked `…[+N]`
(proxy/http/capped.py).
"""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any

import orjson

from proxy.http.capped import UNMATCHED, capped_all, route_name
from proxy.outcome import render
from proxy.outcome.request import RequestOutcome
from proxy.settings import TelemetrySettings
from proxy.telemetry.record import RequestRecord

LOGGER = "ragtrim.access"


def access_logger() -> logging.Logger:
    """The access logger with its JSON-line handler on stderr (added once)."""
    logger = logging.getLogger(LOGGER)
    if not any(getattr(h, "ragtrim_access", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.ragtrim_access = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


def line_of(scope: dict[str, Any], record: RequestRecord, log_prompts: bool) -> dict[str, Any]:
    now = time.perf_counter()
    ctx = record.ctx
    h = record.headers  # the response's, as the client got them
    outcome = ctx.outcome if ctx else RequestOutcome()
    squeezed, usage = outcome.compression, record.usage
    cached = usage.cached_tokens if usage is not None and usage.cached_reported else None
    ttft = (record.first_byte - record.started) * 1000 if record.first_byte else None
    line = {
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "request_id": ctx.request_id if ctx else h.get("x-request-id"),
        "tenant": ctx.tenant if ctx else None,
        "method": scope.get("method"),
        "route": _route(scope),
        "path": scope.get("path"),
        "model": ctx.model if ctx else None,
        "template": outcome.template,
        "decision": outcome.decision.reason if outcome.decision else None,
        "tokens_before": squeezed.tokens_before if squeezed else None,
        "tokens_after": squeezed.tokens_after if squeezed else None,
        "cached_tokens": cached,
        "backend": record.backend or h.get(render.BACKEND),  # an error's: no answer
        "status": record.status,
        "stream": ctx.stream if ctx else None,
        "ttft_ms": round(ttft, 2) if ttft is not None else None,
        "total_ms": round((now - record.started) * 1000, 2),
    }
    if log_prompts and ctx is not None and ctx.segmentation is not None:
        line["question"] = ctx.segmentation.question
    return line


def _route(scope: dict[str, Any]) -> str | None:
    name = route_name(scope)
    return None if name == UNMATCHED else name


class AccessLog:
    def __init__(self, logger: logging.Logger, log_prompts: bool, telemetry: TelemetrySettings):
        self.logger = logger
        self.log_prompts = log_prompts
        self.limit = telemetry.max_value_chars

    def emit(self, scope: dict[str, Any], record: RequestRecord) -> None:
        line = capped_all(line_of(scope, record, self.log_prompts), self.limit)
        self.logger.info(orjson.dumps(line).decode())
