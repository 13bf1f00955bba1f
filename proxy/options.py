"""ragtrim's own per-request options, read once from the request.

Most specific first: header `x-ragtrim-compress: off`, header `x-ragtrim-rate`, then the
body field `ragtrim: {"rate": r, "compress": false, "documents": [...], "question": q}`;
settings fill in what a request does not say. An invalid value is a 400 whether or not a
RAG context is found, so a typo never passes silently on the requests it would affect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxy.errors import InvalidRequest

BODY_FIELD = "ragtrim"
_OFF = ("off", "false", "0", "no")


@dataclass(frozen=True)
class RequestOptions:
    compress: bool = True  # False: the client switched compression off
    rate: float | None = None  # the keep rate asked for; None: the settings' default
    field: dict[str, Any] | None = None  # the `ragtrim` body field (documents, question)

    def keep_rate(self, default: float | None) -> float | None:
        """The rate to compress at, or None for no compression."""
        if not self.compress:
            return None
        return default if self.rate is None else self.rate


def read_options(headers: dict[str, str], field: Any) -> RequestOptions:
    if field is not None and not isinstance(field, dict):
        raise InvalidRequest("`ragtrim` must be an object", param=BODY_FIELD)
    body = field or {}
    off = headers.get("x-ragtrim-compress", "").lower() in _OFF or body.get("compress") is False
    raw = headers.get("x-ragtrim-rate") or body.get("rate")
    return RequestOptions(compress=not off, rate=_rate(raw), field=field)


def _rate(raw: Any) -> float | None:
    if raw is None:
        return None
    try:
        rate = float(raw)
    except (TypeError, ValueError):
        rate = -1.0
    if not 0.0 < rate <= 1.0:
        raise InvalidRequest(f"rate must be a number in (0, 1], got {raw!r}", param="rate")
    return rate
