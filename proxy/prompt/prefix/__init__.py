"""The static prefix: what vLLM's prefix cache can reuse across requests, in one place.

  span.py       THE static span (leading system messages, or up to the segmenter's
                static_end); used by canonicalization, the key and the warm-up replay
  rules.py      the text rules (newlines, trailing whitespace) and volatile patterns
  volatile.py   moving dates, times, UUIDs out of the static text
  tools.py      tool definitions in canonical order
  canonical.py  canonicalize_chat / canonicalize_prompt: the rules applied to the span
  key.py        prefix_key: the span's name (cache.keys.content_key)

Pure functions, no I/O: the canonicalize stage (proxy/stages/canonicalize.py) and the
request body adapter (proxy/prompt/body.py) call them.
"""

from proxy.prompt.prefix.canonical import CanonicalResult, canonicalize_chat, canonicalize_prompt
from proxy.prompt.prefix.key import prefix_key
from proxy.prompt.prefix.rules import CanonicalRules
from proxy.prompt.prefix.span import static_messages, static_prompt, static_span

__all__ = [
    "CanonicalResult",
    "CanonicalRules",
    "canonicalize_chat",
    "canonicalize_prompt",
    "prefix_key",
    "static_messages",
    "static_prompt",
    "static_span",
]
