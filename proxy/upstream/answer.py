"""Which backend answers ragtrim relays, and which become its own 502.

ragtrim promises the OpenAI envelope for every error (proxy/errors.py). A backend
that is vLLM answers 2xx with JSON or SSE, or 4xx for the client's own mistakes;
anything else is a backend fault, and its body is not the client's business:

- 4xx: relayed unchanged (they answer the client's request; vLLM's are
  already in the envelope, and Retry-After of a 429 must reach the client).
- 2xx: relayed when the content type matches what was asked: SSE for a streamed
  chat/completions request, JSON otherwise. A JSON body to a streamed request, SSE to
  a non-streamed one, or text/plain would reach an SDK that cannot read it.
  Pass-through routes (tokenize, ...) are judged on their status only.
- 5xx: a 502 in ragtrim's envelope, even vLLM's own JSON errors: their messages
  quote exception text and file paths (a text/plain traceback was forwarded verbatim).
  The status is named in the message and logged; the body is never read.
- 3xx: a 502. ragtrim never follows redirects (transport.py), and a Location header
  names a URL of the backend's network, not the client's.
- 1xx after the head, or a status outside 100-599 (e.g. 999): a 502; uvicorn could
  not even write such a status line (the client got an empty reply).

Why: docs/decisions/0026-backend-faults-and-local-shortages.md.
"""

from __future__ import annotations

from typing import Literal

Expect = Literal["sse", "json"] | None

_SSE = b"text/event-stream"


def _is_json(content_type: bytes) -> bool:
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json" or media.endswith(b"+json")


def refusal(status: int, content_type: bytes, expect: Expect) -> tuple[str, str] | None:
    """(metric reason, client message) when the answer becomes a 502, else None."""
    if 400 <= status < 500:
        return None
    if 200 <= status < 300:
        sse = content_type.lower().startswith(_SSE)
        if expect == "sse" and not sse:
            return "content_type", "backend did not answer a streamed request with SSE"
        if expect == "json" and not _is_json(content_type):
            return "content_type", "backend did not answer a non-streamed request with JSON"
        return None
    if 300 <= status < 400:
        return "status_3xx", f"backend answered with a redirect (HTTP {status})"
    if 500 <= status < 600:
        return "status_5xx", f"backend failed (HTTP {status})"
    return "status_unknown", f"backend answered with an invalid status ({status})"
