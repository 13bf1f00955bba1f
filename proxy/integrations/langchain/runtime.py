"""What every in-process wrapper shares: a compression engine built from settings and
the event-loop thread that drives it, so sync LangChain calls work where a loop is
already running (notebooks), and the fields a wrapper takes to build them (`Wrapper`).
Compression fails open: on any error the prompt goes to the model as it was (logged),
as in the proxy."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr

from compressors import ApproxTokenCounter, HFTokenCounter
from proxy.compression.engine import CompressionEngine
from proxy.compression.parts import make_engine, make_store
from proxy.prompt.segment import Segmentation, Segmenter, apply_chat, apply_prompt
from proxy.settings import Settings, load_settings

log = logging.getLogger("ragtrim.langchain")
T = TypeVar("T")


class Runtime:
    def __init__(self, settings: Settings | None = None, compressor=None):
        settings = settings or load_settings()
        c = settings.compression
        store = make_store(settings)
        counter = HFTokenCounter(c.tokenizer) if c.tokenizer else ApproxTokenCounter()
        self.rate = c.rate
        self.enabled = c.enabled
        self.segmenter = Segmenter(c.patterns, pattern_timeout=c.limits.pattern_timeout_ms / 1000)
        self.engine: CompressionEngine = make_engine(c, store, counter, compressor)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name="ragtrim-lc").start()
        # load the model now, in the background; the first compression waits for it
        # (in-process there is no uncompressed fast path worth taking meanwhile)
        self._warm = asyncio.run_coroutine_threadsafe(self.engine.warm(c.torch_threads), self.loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def ready(self) -> None:
        """Wait until the compressor has loaded (raises if it failed to)."""
        await asyncio.wrap_future(self._warm)

    async def compress(self, texts: Sequence[str], question: str, rate: float | None = None):
        await self.ready()
        return await self.engine.compress(list(texts), question, rate or self.rate)

    async def precompute(self, texts: Sequence[str]) -> int:
        """Store the question-independent features of `texts`: later
        compressions of them, with any question, skip the document part."""
        await self.ready()
        return await self.engine.precompute(list(texts))

    async def trim_chat(self, messages: list[dict]) -> list[dict] | None:
        """OpenAI-format messages with the recognised context compressed, or None."""
        seg = self.segmenter.chat(messages) if self.enabled else None
        texts = await self._compressed(seg)
        return None if texts is None else apply_chat(messages, seg, texts)

    async def trim_prompt(self, prompt: str) -> str:
        seg = self.segmenter.prompt(prompt) if self.enabled else None
        texts = await self._compressed(seg)
        return prompt if texts is None else apply_prompt(prompt, seg, texts)

    async def _compressed(self, seg: Segmentation | None) -> list[str] | None:
        """The documents' new texts, or None when the prompt stays as it is (nothing
        found; or compression failed — fail open, like the proxy — and no marker has
        to go)."""
        if seg is None or not seg.documents:
            return None
        try:
            texts = list((await self.compress(seg.texts, seg.question)).texts)
        except Exception as exc:  # noqa: BLE001 - fail open, like the proxy
            log.warning("compression failed, sending the documents unchanged: %r", exc)
            texts = seg.texts
        return texts if seg.must_apply(texts) else None


class Wrapper(BaseModel):
    """The fields every wrapper (chat model, LLM, document compressor) takes, and the
    Runtime it builds from them once constructed; put first among a wrapper's bases."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: Settings | None = None
    compressor: Any = None  # a compressors.base.Compressor; None = from settings
    _rt: Runtime = PrivateAttr()

    def model_post_init(self, __context: Any) -> None:
        self._rt = Runtime(self.settings, self.compressor)
