"""What became of one request to ragtrim in front of tests/doubles/stub_vllm.py: "ok"
(the complete answer), "error" (a clean error: the OpenAI envelope, or a stream ending in
an error event) or "lost" (anything else: partial success counts as lost). bench.soak and
bench.abuse judge every request with it, and both send LangChain's stuff prompt (SYSTEM)
so that ragtrim's recognisers see the RAG shape they see in production.
"""

from __future__ import annotations

import orjson

SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)
CHUNKS = 8


def classify_error(status: int, raw: bytes) -> tuple[str, str]:
    try:
        error = orjson.loads(raw)["error"]
        if isinstance(error["message"], str) and isinstance(error["type"], str):
            return "error", f"{status}:{error.get('code') or error['type']}"
    except (orjson.JSONDecodeError, KeyError, TypeError):
        pass
    return "lost", f"{status}:not_in_envelope"


def classify_stream(raw: bytes) -> tuple[str, str]:
    events = [e[6:] for e in raw.split(b"\n\n") if e.startswith(b"data: ")]
    text = []
    for event in events:
        if event == b"[DONE]":
            continue
        data = orjson.loads(event)
        if "error" in data:
            return "error", f"stream:{data['error'].get('code') or data['error'].get('type')}"
        text += [c.get("delta", {}).get("content", "") for c in data.get("choices", [])]
    complete = "".join(text) == "".join(f"t{i} " for i in range(CHUNKS))
    if events and events[-1] == b"[DONE]" and complete:
        return "ok", "ok"
    return "lost", "stream:partial_without_error"


def classify(status: int, raw: bytes, stream: bool) -> tuple[str, str]:
    if status != 200:
        return classify_error(status, raw)
    if stream:
        return classify_stream(raw)
    try:
        answer = orjson.loads(raw)["choices"][0]["message"]["content"]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        answer = None
    return ("ok", "ok") if answer == "hello" else ("lost", "json:partial")
