"""ragtrim inside a LangChain app: the same segmentation, compressors and chunk memo
as the proxy, in-process (no HTTP hop), or a LangChain client pointed at a running
ragtrim.

    RagtrimChatModel           wraps any chat model: finds the retrieved context in the
                               messages (the templates the proxy recognises), compresses
                               it once, then calls or streams the wrapped model; tools,
                               structured output and callbacks pass through.
    RagtrimLLM                 the same for completion LLMs (BaseLLM, e.g.
                               langchain_openai.OpenAI on vLLM's /v1/completions).
    RagtrimDocumentCompressor  a BaseDocumentCompressor: compresses each retrieved
                               Document (order kept), e.g. in a
                               ContextualCompressionRetriever.
    ragtrim_chat_openai(url)   a ChatOpenAI (and ragtrim_openai(url), an OpenAI LLM) whose
                               requests go through a running ragtrim proxy.

Settings come from `proxy.settings.Settings` (pass one, or the environment is read);
each instance owns its engine and memo (no globals). Never imported by the server.
"""

from proxy.integrations.langchain.chat import RagtrimChatModel
from proxy.integrations.langchain.clients import ragtrim_chat_openai, ragtrim_openai
from proxy.integrations.langchain.documents import RagtrimDocumentCompressor
from proxy.integrations.langchain.llm import RagtrimLLM

__all__ = [
    "RagtrimChatModel",
    "RagtrimDocumentCompressor",
    "RagtrimLLM",
    "ragtrim_chat_openai",
    "ragtrim_openai",
]
