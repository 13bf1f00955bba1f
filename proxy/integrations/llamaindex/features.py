"""RagtrimFeatures: a LlamaIndex TransformComponent that makes every chunk "seen".

It stores a question-aware compressor's per-chunk, question-independent features at
indexing time (why: docs/decisions/0027-reusing-document-work.md),
as a transformation in an IngestionPipeline:

    pipeline = IngestionPipeline(transformations=[
        SentenceSplitter(), RagtrimFeatures(base_url="http://ragtrim:8000"), embed_model])

Each batch of nodes is sent to the proxy's POST /v1/compress without a question (the
node text, as LlamaIndex's text_qa_template puts it in the prompt and ragtrim's
segmenter finds it again: metadata headers are not part of it), so the proxy computes
and stores the features under its own keys (its compressor, its token counter, the
caller's tenant from `api_key`) in the shared store; nodes pass through unchanged.
A failure is logged and the nodes still pass (indexing must not depend on ragtrim).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import httpx
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

log = logging.getLogger("ragtrim.llamaindex")


class RagtrimFeatures(TransformComponent):
    base_url: str
    api_key: str | None = None
    batch: int = 64
    timeout: float = 120.0

    def _requests(self, nodes: Sequence[BaseNode]):
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        texts = [t for t in texts if t.strip()]
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        url = f"{self.base_url.rstrip('/')}/v1/compress"
        for i in range(0, len(texts), self.batch):
            yield url, {"documents": texts[i : i + self.batch]}, headers

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        with httpx.Client(timeout=self.timeout) as client:
            for url, body, headers in self._requests(nodes):
                try:
                    client.post(url, json=body, headers=headers).raise_for_status()
                except httpx.HTTPError as exc:
                    log.warning("ragtrim feature precompute failed: %r", exc)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            for url, body, headers in self._requests(nodes):
                try:
                    (await client.post(url, json=body, headers=headers)).raise_for_status()
                except httpx.HTTPError as exc:
                    log.warning("ragtrim feature precompute failed: %r", exc)
        return nodes
