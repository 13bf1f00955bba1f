"""RagtrimChatModel: any LangChain chat model, with the retrieved context in its
messages compressed in-process before the model sees them.

The context is compressed once per call, then the wrapped model is called or
streamed (its chunks are passed on as they come). Only the messages that held
documents are replaced (copies with new content; ids, tool calls and metadata kept).
`bind_tools` and `with_structured_output` bind the wrapped model's own request
arguments to this wrapper, so tools and response formats reach the wrapped model
unchanged; callbacks run on this wrapper as for any chat model (the wrapped model gets
no run manager, so no event is reported twice).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableBinding, RunnableSequence

from proxy.integrations.langchain.runtime import Wrapper


class RagtrimChatModel(Wrapper, BaseChatModel):
    inner: BaseChatModel

    @property
    def _llm_type(self) -> str:
        return f"ragtrim[{self.inner._llm_type}]"

    async def _trim(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        openai_messages = convert_to_openai_messages(messages)
        trimmed = await self._rt.trim_chat(openai_messages)
        if trimmed is None:
            return messages
        out = list(messages)
        for i, (old, new) in enumerate(zip(openai_messages, trimmed, strict=True)):
            if new is not old:
                out[i] = messages[i].model_copy(update={"content": new["content"]})
        return out

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        trimmed = self._rt.run(self._trim(messages))
        return self.inner._generate(trimmed, stop=stop, **kwargs)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        trimmed = await self._rt.arun(self._trim(messages))
        return await self.inner._agenerate(trimmed, stop=stop, **kwargs)

    def _stream(
        self, messages, stop=None, run_manager=None, **kwargs
    ) -> Iterator[ChatGenerationChunk]:
        trimmed = self._rt.run(self._trim(messages))
        if not _streams(self.inner, async_api=False):
            yield _as_chunk(self.inner._generate(trimmed, stop=stop, **kwargs))
            return
        yield from self.inner._stream(trimmed, stop=stop, **kwargs)

    async def _astream(
        self, messages, stop=None, run_manager=None, **kwargs
    ) -> AsyncIterator[ChatGenerationChunk]:
        trimmed = await self._rt.arun(self._trim(messages))
        if not _streams(self.inner, async_api=True):
            yield _as_chunk(await self.inner._agenerate(trimmed, stop=stop, **kwargs))
            return
        async for chunk in self.inner._astream(trimmed, stop=stop, **kwargs):
            yield chunk

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any):
        """The wrapped model formats the tools; its request arguments bind to us."""
        return self._rebind(self.inner.bind_tools(tools, **kwargs))

    def with_structured_output(self, schema, *, include_raw: bool = False, **kwargs: Any):
        """The wrapped model's own structured output (json_schema, function calling,
        ...), with its model step replaced by this wrapper bound to the same arguments."""
        chain = self.inner.with_structured_output(schema, include_raw=include_raw, **kwargs)
        if isinstance(chain, RunnableSequence) and _binds(chain.first, self.inner):
            return RunnableSequence(self._rebind(chain.first), *chain.middle, chain.last)
        return super().with_structured_output(schema, include_raw=include_raw, **kwargs)

    def _rebind(self, binding: Any):
        if not _binds(binding, self.inner):
            raise NotImplementedError(f"{type(self.inner).__name__} did not bind to itself")
        return RunnableBinding(bound=self, kwargs=binding.kwargs, config=binding.config)


def _binds(runnable: Any, model: BaseChatModel) -> bool:
    return isinstance(runnable, RunnableBinding) and runnable.bound is model


def _streams(model: BaseChatModel, *, async_api: bool) -> bool:
    """Whether the wrapped model implements streaming (LangChain's own test)."""
    cls = type(model)
    sync = cls._stream is not BaseChatModel._stream
    return sync or (async_api and cls._astream is not BaseChatModel._astream)


def _as_chunk(result: ChatResult) -> ChatGenerationChunk:
    """A whole answer as one chunk, for wrapped models that cannot stream."""
    generation = result.generations[0]
    message = generation.message
    chunk = AIMessageChunk(
        content=message.content,
        id=message.id,
        response_metadata=message.response_metadata,
        usage_metadata=getattr(message, "usage_metadata", None),
        tool_call_chunks=[
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(getattr(message, "tool_calls", []) or [])
        ],
    )
    return ChatGenerationChunk(message=chunk, generation_info=generation.generation_info)
