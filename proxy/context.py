"""RequestContext: all per-request state in one object, passed through every stage."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from compressors.segments import Segmentation


@dataclass
class RequestContext:
    request_id: str
    route: str  # "chat" | "completions"
    raw: bytes
    body: dict[str, Any]
    headers: dict[str, str]
    tenant: str = ""
    started: float = field(default_factory=time.perf_counter)
    modified: bool = False
    prefix_key: str | None = None
    options: dict[str, Any] = field(default_factory=dict)  # the body's `ragtrim` field
    segmentation: Segmentation | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    decisions: dict[str, Any] = field(default_factory=dict)
    response_headers: dict[str, str] = field(default_factory=dict)
    trace: list[str] = field(default_factory=list)
    scratch: dict[str, Any] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return self.body["model"]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def set_body_field(self, key: str, value: Any) -> None:
        if self.body.get(key) != value:
            self.body[key] = value
            self.modified = True

    def upstream_body(self) -> bytes:
        """The bytes sent upstream: the client's own bytes unless a stage changed the body."""
        if not self.modified:
            return self.raw
        return orjson.dumps(self.body)
