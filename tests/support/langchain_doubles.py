"""LangChain model doubles that show what they were given (unit tests only)."""

from __future__ import annotations

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.llms import BaseLLM
from langchain_core.messages import AIMessage, AIMessageChunk, SystemMessage
from langchain_core.outputs import (
    ChatGeneration,
    ChatGenerationChunk,
    ChatResult,
    Generation,
    GenerationChunk,
    LLMResult,
)
from langchain_core.utils.function_calling import convert_to_openai_tool


class EchoSystem(BaseChatModel):
    """Answers with the system message it was given; streams it word by word. With tools
    bound, calls the first tool with {"text": <that system message>}."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _seen(self, messages) -> str:
        self.calls += 1
        return next(m.content for m in messages if isinstance(m, SystemMessage))

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        seen = self._seen(messages)
        tools = kwargs.get("tools") or []
        calls = [{"name": t["function"]["name"], "args": {"text": seen}, "id": "c1"}
                 for t in tools[:1]]  # fmt: skip
        message = AIMessage(content="" if calls else seen, tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        for i, word in enumerate(self._seen(messages).split(" ")):
            yield ChatGenerationChunk(message=AIMessageChunk(content=(" " if i else "") + word))

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


class NoStream(EchoSystem):
    """A chat model without streaming support."""

    _stream = BaseChatModel._stream


class EchoLLM(BaseLLM):
    """A completion LLM answering with its prompt; streams it word by word."""

    @property
    def _llm_type(self) -> str:
        return "echo-llm"

    def _generate(self, prompts, stop=None, run_manager=None, **kwargs):
        return LLMResult(generations=[[Generation(text=p)] for p in prompts])

    def _stream(self, prompt, stop=None, run_manager=None, **kwargs):
        assert run_manager is None, "the wrapper reports tokens itself"
        for i, word in enumerate(prompt.split(" ")):
            yield GenerationChunk(text=(" " if i else "") + word)
