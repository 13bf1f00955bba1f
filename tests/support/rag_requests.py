"""RAG-shaped prompts and chat bodies the app tests send through a real ragtrim to the stub: a
LangChain "stuff" system prompt over a few documents, and the compression settings
that make the stage compress them whatever the gate would say."""

import httpx

SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)
DOCS = [
    "Paris is the capital of France and its largest city by population.",
    "The Seine river flows through Paris before reaching the English Channel.",
    "France borders Spain, Italy, Germany, Belgium and Switzerland.",
]
ALWAYS = {"policy": "always", "min_context_tokens": 0}
QUESTION = "What is the capital of France?"
LLAMA_USER = (  # LlamaIndex's default text-QA template over two documents
    "Context information is below.\n---------------------\nd1\n\nd2\n---------------------\n"
    "Given the context information and not prior knowledge, answer the query.\n"
    f"Query: {QUESTION}\nAnswer: "
)


def rag_body(**extra) -> dict:
    """Three short documents on France; the stub echoes what it was sent."""
    messages = [
        {"role": "system", "content": SYSTEM + "\n\n".join(DOCS)},
        {"role": "user", "content": QUESTION},
    ]
    return {"model": "stub-model", "messages": messages, "stub": {"echo": True}, **extra}


BRIDGE_QUESTION = "When was the secret bridge opened?"
BRIDGE_DOCS = [
    "The bridge was opened in 1932 after six years of work and carries eight lanes. " * 4,
    "The harbour hosts ferries to the northern beaches every half hour all day. " * 4,
]
BRIDGE_ALWAYS = {"policy": "always", "min_context_tokens": 0, "rate": 0.5}


def bridge_body() -> dict:
    """Two longer documents, the answer in the first: enough tokens to count per tenant."""
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(BRIDGE_DOCS)},
                {"role": "user", "content": BRIDGE_QUESTION}]  # fmt: skip
    return {"model": "stub-model", "messages": messages}


def post(proxy, body, headers=None) -> httpx.Response:
    """A chat completion through `proxy` that must succeed."""
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, headers=headers or {})
    assert resp.status_code == 200, resp.text
    return resp
