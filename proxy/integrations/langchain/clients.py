"""LangChain clients pointed at a running ragtrim proxy: ragtrim is OpenAI-compatible,
so langchain_openai's own classes are the client; only the base URL changes.
`langchain-openai` is needed for these two only."""

from __future__ import annotations

from typing import Any


def _v1(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else f"{url}/v1"


def ragtrim_chat_openai(url: str = "http://127.0.0.1:8080", **kwargs: Any):
    """A ChatOpenAI whose requests go through ragtrim at `url` (with or without /v1).
    vLLM ignores the API key unless it was started with one; ragtrim's tenancy keys
    go here too."""
    from langchain_openai import ChatOpenAI

    kwargs.setdefault("api_key", "ragtrim")
    return ChatOpenAI(base_url=_v1(url), **kwargs)


def ragtrim_openai(url: str = "http://127.0.0.1:8080", **kwargs: Any):
    """A completion LLM (langchain_openai.OpenAI, /v1/completions) through ragtrim."""
    from langchain_openai import OpenAI

    kwargs.setdefault("api_key", "ragtrim")
    return OpenAI(base_url=_v1(url), **kwargs)
