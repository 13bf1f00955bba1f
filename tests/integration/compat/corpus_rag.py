"""RAG-shaped requests, which ragtrim compresses: LangChain's stuff prompt over thirty
short reports, on each route that compresses. Through ragtrim only the fields that
depend on the prompt may differ (blank.PROMPT_DEPENDENT)."""

from __future__ import annotations

from tests.integration.compat.shape import Shape

SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)
DOCS = "\n\n".join(
    f"Report {i}. The bridge number {i} was opened in {1900 + i} after {i % 7 + 2} years of "
    f"work. It carries {i % 5 + 2} lanes of traffic. Tourists walk across it every day. "
    f"The toll was removed in {1950 + i}."
    for i in range(30)
)
QUESTION = "When was bridge 12 opened?"


def rag(model: str) -> list[Shape]:
    gen = {"model": model, "temperature": 0, "seed": 7, "ignore_eos": True}
    chat = {
        **gen,
        "max_tokens": 6,
        "messages": [
            {"role": "system", "content": SYSTEM + DOCS},
            {"role": "user", "content": QUESTION},
        ],
    }
    responses = {
        **gen,
        "max_output_tokens": 6,
        "store": False,
        "instructions": SYSTEM + DOCS,
        "input": QUESTION,
    }
    messages = {
        **gen,
        "max_tokens": 6,
        "system": SYSTEM + DOCS,
        "messages": [{"role": "user", "content": QUESTION}],
    }
    return [
        Shape("/v1/chat/completions", "rag", chat),
        Shape("/v1/chat/completions", "rag stream", {**chat, "stream": True}),
        Shape("/v1/chat/completions", "rag stream usage", {
            **chat, "stream": True, "stream_options": {"include_usage": True}}),
        Shape("/v1/responses", "rag", responses),
        Shape("/v1/responses", "rag stream", {**responses, "stream": True}),
        Shape("/v1/messages", "rag", messages),
        Shape("/v1/messages", "rag stream", {**messages, "stream": True}),
    ]  # fmt: skip
