"""ragtrim inside a LangChain app: the same segmentation, compressors and chunk memo
as the proxy, in-process (no HTTP hop).

    RagtrimDocumentCompressor  a BaseDocumentCompressor: compresses each retrieved
                               Document (order kept), e.g. in a
                               ContextualCompressionRetriever.
    RagtrimChatModel           wraps any chat model: finds the retrieved context in the
                               messages (the templates the proxy recognises) and
                               compresses it before the wrapped model sees them.

Settings come from `proxy.settings.Settings` (pass one, or the environment is read);
each instance owns its engine and memo — no globals. Sync calls run on a private
event-loop thread, so they also work where a loop is already running (notebooks).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.documents.compressor import BaseDocumentCompressor
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.outputs import ChatResult
from pydantic import ConfigDict, PrivateAttr

from cache.store import MemoryStore, RedisStore
from compressors.templates import apply_chat, segment_chat
from compressors.tokens import ApproxTokenCounter, HFTokenCounter
from proxy.components import make_engine
from proxy.compression import CompressionEngine
from proxy.settings import Settings, load_settings


class _Runtime:
    """An engine plus the event-loop thread that drives it for sync callers."""

    def __init__(self, settings: Settings, compressor=None):
        c = settings.compression
        store = RedisStore(settings.redis_url) if settings.redis_url else MemoryStore()
        counter = HFTokenCounter(c.tokenizer) if c.tokenizer else ApproxTokenCounter()
        self.rate = c.rate
        self.engine: CompressionEngine = make_engine(c, store, counter, compressor)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name="ragtrim-lc").start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


class RagtrimDocumentCompressor(BaseDocumentCompressor):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: Settings | None = None
    rate: float | None = None
    compressor: Any = None  # a compressors.base.Compressor; None = from settings
    _rt: _Runtime = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        self._rt = _Runtime(self.settings or load_settings(), self.compressor)

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._compress(documents, query), self._rt.loop)
        )

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        return self._rt.run(self._compress(documents, query))

    async def _compress(self, documents: Sequence[Document], query: str) -> list[Document]:
        if not documents:
            return []
        texts = [d.page_content for d in documents]
        outcome = await self._rt.engine.compress(texts, query, self.rate or self._rt.rate)
        return [
            Document(
                page_content=text, metadata={**d.metadata, "ragtrim_compressed": True}, id=d.id
            )  # fmt: skip
            for d, text in zip(documents, outcome.texts, strict=True)
        ]


class RagtrimChatModel(BaseChatModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseChatModel
    settings: Settings | None = None
    compressor: Any = None
    _rt: _Runtime = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        self._rt = _Runtime(self.settings or load_settings(), self.compressor)

    @property
    def _llm_type(self) -> str:
        return f"ragtrim[{self.inner._llm_type}]"

    async def _trim(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        openai_messages = convert_to_openai_messages(messages)
        seg = segment_chat(openai_messages)
        if seg is None or not seg.documents:
            return messages
        texts = [slot.text for slot in seg.documents]
        outcome = await self._rt.engine.compress(texts, seg.question, self._rt.rate)
        return convert_to_messages(apply_chat(openai_messages, seg, list(outcome.texts)))

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs):
        trimmed = self._rt.run(self._trim(messages))
        return self.inner._generate(trimmed, stop=stop, **kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        trimmed = await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(self._trim(messages), self._rt.loop)
        )
        return await self.inner._agenerate(trimmed, stop=stop, **kwargs)
