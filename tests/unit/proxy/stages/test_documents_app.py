"""vLLM's chat `documents` field through a real ragtrim and the stub backend (issue 31):
the entries' texts are compressed in place, their other keys and the messages stay."""

import httpx

from tests.support.compressor_doubles import HalfWords

DOCS = [
    "Paris is the capital of France and its largest city by population.",
    "The Seine river flows through Paris before reaching the English Channel.",
]
ALWAYS = {"policy": "always", "min_context_tokens": 0}


def test_the_documents_field_is_compressed_in_place(stub, make_proxy):
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=ALWAYS)
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    documents = [{"title": f"doc {i}", "text": text} for i, text in enumerate(DOCS)]
    body = {"model": "stub-model", "messages": messages, "documents": documents,
            "stub": {"echo": True}}  # fmt: skip
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body)
    assert resp.status_code == 200, resp.text
    echo = resp.json()["echo"]
    assert echo["messages"] == messages
    assert [d["title"] for d in echo["documents"]] == ["doc 0", "doc 1"]
    assert [d["text"] for d in echo["documents"]] == [
        " ".join(d.split()[: round(len(d.split()) / 2)]) for d in DOCS
    ]
    assert resp.headers["x-ragtrim-template"] == "documents"
    assert int(resp.headers["x-ragtrim-tokens-after"]) < int(
        resp.headers["x-ragtrim-tokens-before"]
    )


def test_a_repeat_is_compressed_the_same_way(stub, make_proxy):
    """cache_text renders no `documents` field: a repeat was judged skip:cached (the
    compressed and the client's forms looked alike) and sent uncompressed."""
    proxy = make_proxy([stub.url], compressor=HalfWords(), compression=ALWAYS)
    documents = [{"text": text} for text in DOCS]
    body = {"model": "stub-model", "messages": [{"role": "user", "content": "Where?"}],
            "documents": documents, "stub": {"echo": True}}  # fmt: skip
    sent = []
    for _ in range(3):
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body)
        assert not resp.headers["x-ragtrim-decision"].startswith("skip"), resp.headers
        sent.append(resp.json()["echo"]["documents"])
    assert sent[0] == sent[1] == sent[2] != documents
