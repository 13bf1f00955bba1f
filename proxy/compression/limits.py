"""The caps of `compression.limits` on what a request asks ragtrim to compress: the
documents a client names (`ragtrim.documents`, POST /v1/compress) and the question's
length. One home for both routes: the segment stage and the ingest route."""

from __future__ import annotations

from typing import Any

from proxy.errors import InvalidRequest, PayloadTooLarge
from proxy.settings import CompressionLimitSettings


def cap_question(question: str, cap: int) -> str:
    """At most `cap` characters: the head and the tail, joined by a line break."""
    if len(question) <= cap:
        return question
    head = cap // 2
    return question[:head] + "\n" + question[len(question) - (cap - head - 1) :]


def check_documents(docs: list[Any], limits: CompressionLimitSettings, param: str) -> None:
    """400 for more than max_documents, 413 for a document or a total too long."""
    if len(docs) > limits.max_documents:
        raise InvalidRequest(
            f"{param}: {len(docs)} documents, at most {limits.max_documents} "
            "(compression.limits.max_documents)",
            param=param,
            code="too_many_documents",
        )
    sizes = [len(d) for d in docs if isinstance(d, str)]
    longest = max(sizes, default=0)
    if longest > limits.max_document_chars:
        raise PayloadTooLarge(
            f"{param}: a document of {longest} characters, at most "
            f"{limits.max_document_chars} (compression.limits.max_document_chars)",
            param=param,
        )
    if sum(sizes) > limits.max_request_chars:
        raise PayloadTooLarge(
            f"{param}: {sum(sizes)} characters in all, at most {limits.max_request_chars} "
            "(compression.limits.max_request_chars)",
            param=param,
        )


def within_limits(texts: list[str], limits: CompressionLimitSettings) -> bool:
    """Whether a found context is small enough to compress (else it is forwarded as is)."""
    return (
        len(texts) <= limits.max_documents
        and max(map(len, texts), default=0) <= limits.max_document_chars
        and sum(map(len, texts)) <= limits.max_request_chars
    )
