"""RagtrimDocumentCompressor: a LangChain BaseDocumentCompressor over ragtrim's
compressors and chunk memo, e.g. the compressor of a ContextualCompressionRetriever.
Each document is compressed on its own (order and metadata kept; `ragtrim_compressed`
marks it); the query is the question for question-aware compressors.

At indexing time, `transform_documents` (LangChain's document-transformer
call, e.g. after a text splitter, before the vector store) stores each chunk's
question-independent features and returns the documents unchanged: a later
compression of those chunks, whatever the query, skips their document part."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor

from proxy.integrations.langchain.runtime import Wrapper


class RagtrimDocumentCompressor(Wrapper, BaseDocumentCompressor):
    rate: float | None = None

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        return await self._rt.arun(self._compress(documents, query))

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        return self._rt.run(self._compress(documents, query))

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[Document]:
        self._rt.run(self._rt.precompute([d.page_content for d in documents]))
        return list(documents)

    async def atransform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> list[Document]:
        await self._rt.arun(self._rt.precompute([d.page_content for d in documents]))
        return list(documents)

    async def _compress(self, documents: Sequence[Document], query: str) -> list[Document]:
        if not documents:
            return []
        outcome = await self._rt.compress([d.page_content for d in documents], query, self.rate)
        return [
            Document(
                page_content=text, metadata={**d.metadata, "ragtrim_compressed": True}, id=d.id
            )
            for d, text in zip(documents, outcome.texts, strict=True)
        ]
