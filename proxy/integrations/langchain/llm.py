"""RagtrimLLM: a LangChain completion LLM (BaseLLM, e.g. langchain_openai.OpenAI on
vLLM's /v1/completions) whose prompts have their recognised context compressed
in-process first; batches are trimmed prompt by prompt. Streaming compresses once,
then passes the wrapped LLM's chunks on (one chunk if it cannot stream). Callbacks run
on this wrapper: BaseLLM leaves token callbacks to `_stream`, so this wrapper reports
each chunk and the wrapped LLM gets no run manager (nothing is reported twice)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from langchain_core.language_models.llms import BaseLLM
from langchain_core.outputs import GenerationChunk, LLMResult

from proxy.integrations.langchain.runtime import Wrapper


class RagtrimLLM(Wrapper, BaseLLM):
    inner: BaseLLM

    @property
    def _llm_type(self) -> str:
        return f"ragtrim[{self.inner._llm_type}]"

    async def _trim_all(self, prompts: list[str]) -> list[str]:
        return [await self._rt.trim_prompt(p) for p in prompts]

    def _generate(self, prompts, stop=None, run_manager=None, **kwargs) -> LLMResult:
        trimmed = self._rt.run(self._trim_all(prompts))
        return self.inner._generate(trimmed, stop=stop, **kwargs)

    async def _agenerate(self, prompts, stop=None, run_manager=None, **kwargs) -> LLMResult:
        trimmed = await self._rt.arun(self._trim_all(prompts))
        return await self.inner._agenerate(trimmed, stop=stop, **kwargs)

    def _stream(self, prompt, stop=None, run_manager=None, **kwargs) -> Iterator[GenerationChunk]:
        trimmed = self._rt.run(self._rt.trim_prompt(prompt))
        if type(self.inner)._stream is BaseLLM._stream:
            chunks = [_as_chunk(self.inner._generate([trimmed], stop=stop, **kwargs))]
        else:
            chunks = self.inner._stream(trimmed, stop=stop, **kwargs)
        for chunk in chunks:
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self, prompt, stop=None, run_manager=None, **kwargs
    ) -> AsyncIterator[GenerationChunk]:
        trimmed = await self._rt.arun(self._rt.trim_prompt(prompt))
        cls = type(self.inner)
        if cls._stream is BaseLLM._stream and cls._astream is BaseLLM._astream:
            whole = _as_chunk(await self.inner._agenerate([trimmed], stop=stop, **kwargs))
            chunks = _once(whole)
        else:
            chunks = self.inner._astream(trimmed, stop=stop, **kwargs)
        async for chunk in chunks:
            if run_manager is not None:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


async def _once(chunk: GenerationChunk) -> AsyncIterator[GenerationChunk]:
    yield chunk


def _as_chunk(result: LLMResult) -> GenerationChunk:
    generation = result.generations[0][0]
    return GenerationChunk(text=generation.text, generation_info=generation.generation_info)
