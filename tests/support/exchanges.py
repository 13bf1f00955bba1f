"""A request context and a finished Exchange without a backend: what the response-hook
tests hand a hook's points directly (mitmproxy-style: call the hook, check what it did)."""

from proxy.backends.endpoint import Endpoint
from proxy.context import RequestContext
from proxy.metrics import Metrics
from proxy.settings import TimeoutSettings
from proxy.upstream.exchange import Exchange

URL = "http://a"
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15,
         "prompt_tokens_details": {"cached_tokens": 4}}  # fmt: skip


class Answered:
    status, headers = 200, [(b"content-type", b"application/json")]


def ctx(stream=False, route="chat", usage_added=False) -> RequestContext:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    c = RequestContext("req-1", route, b"{}", body if route != "other" else {}, {})
    c.usage_added = usage_added
    return c


def exchange(status=200) -> Exchange:
    ex = Exchange(None, TimeoutSettings(), Metrics(), "POST", "/v1/chat/completions", b"", [])
    ex.endpoint, ex.response = Endpoint(URL, healthy=True), Answered()
    ex.response.status = status
    return ex
