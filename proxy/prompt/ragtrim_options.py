"""ragtrim's own per-request options, read once from the request.

Most specific first: header `x-ragtrim-compress: off`, header `x-ragtrim-rate`, then the
body field `ragtrim: {"rate": r, "compress": false, "documents": [...], "question": q}`;
settings fill in what a request does not say. An invalid value is a 400 whether or not a
RAG context is found, so a typo never passes silently on the requests it would affect:
every value is checked strictly, each one present (a header does not hide a bad body
value), and an unknown key in the body field is a 400 too. Accepted switches: on/off,
true/false, yes/no, 1/0. A rate is a number in (0, 1] or exactly "auto" (an adaptive
budget: compressors/adaptive.py).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from compressors import AUTO
from proxy.errors import InvalidRequest

BODY_FIELD = "ragtrim"
FIELD_KEYS = frozenset({"rate", "compress", "documents", "question"})
_SWITCH = {
    "on": True,
    "true": True,
    "yes": True,
    "1": True,
    "off": False,
    "false": False,
    "no": False,
    "0": False,
}


@dataclass(frozen=True)
class RequestOptions:
    compress: bool = True  # False: the client switched compression off
    rate: float | str | None = None  # the keep rate asked for ("auto"); None: the default
    field: dict[str, Any] | None = None  # the `ragtrim` body field (documents, question)

    def keep_rate(self, default: float | None) -> float | str | None:
        """The rate to compress at, or None for no compression."""
        if not self.compress:
            return None
        return default if self.rate is None else self.rate


def read_options(headers: dict[str, str], field: Any) -> RequestOptions:
    body = _check_field(field)
    header_on = _switch(headers.get("x-ragtrim-compress"))
    body_on = body.get("compress")
    if body_on is not None and not isinstance(body_on, bool):
        raise _bad("compress", f"must be true or false, got {body_on!r}")
    header_rate = _rate(headers.get("x-ragtrim-rate"), "header x-ragtrim-rate")
    body_rate = _rate(body.get("rate"), "ragtrim.rate")
    off = header_on is False or body_on is False
    rate = header_rate if header_rate is not None else body_rate
    return RequestOptions(compress=not off, rate=rate, field=field)


def _check_field(field: Any) -> dict[str, Any]:
    if field is None:
        return {}
    if not isinstance(field, dict):
        raise _bad(BODY_FIELD, "must be an object")
    unknown = sorted(set(field) - FIELD_KEYS)
    if unknown:
        raise _bad(
            BODY_FIELD, f"unknown key {unknown[0]!r}; known: {', '.join(sorted(FIELD_KEYS))}"
        )
    docs = field.get("documents")
    if docs is not None and not (isinstance(docs, list) and all(isinstance(d, str) for d in docs)):
        raise _bad("documents", "must be a list of strings")
    question = field.get("question")
    if question is not None and not isinstance(question, str):
        raise _bad("question", "must be a string")
    return field


def _switch(raw: str | None) -> bool | None:
    if raw is None:
        return None
    value = _SWITCH.get(raw.strip().lower())
    if value is None:
        raise _bad("x-ragtrim-compress", f"must be on or off, got {raw!r}")
    return value


def _rate(raw: Any, source: str) -> float | str | None:
    if raw is None:
        return None
    if raw == AUTO:  # exactly "auto", header or body (strict: no "Auto", no " auto")
        return AUTO
    rate = -1.0
    if source.startswith("header") and isinstance(raw, str):  # a header: the number's text
        with contextlib.suppress(ValueError):
            rate = float(raw)
    elif isinstance(raw, int | float) and not isinstance(raw, bool):  # JSON: a number, not true
        rate = float(raw)
    if not 0.0 < rate <= 1.0:  # NaN fails this too
        raise InvalidRequest(
            f'{source} must be a number in (0, 1] or "auto", got {raw!r}', param="rate"
        )
    return rate


def _bad(param: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"{param}: {message}", param=param)
