"""The response half of a request, as a pipeline of hooks, mirroring the request stages
(proxy/request/pipeline.py). Why: docs/decisions/0043-response-path-and-hooks.md.

path.py   `ResponsePath.relay`: the one call the forwarder makes after ranking. It
          drives the exchange (failover, accept, deadlines, close: proxy/upstream/),
          relays SSE chunk by chunk or a JSON body whole (proxy/response/relay.py), and calls
          the hooks at their points. Errors are raised, never returned.
hooks.py  the hooks ragtrim ships: usage, response headers, TTFT/TPOT, feedback.

A hook is a plain object with any of these methods (as mitmproxy's addons: the points
it does not define are never called); `ex` is the request's `Exchange`, the record of
the upstream leg (backend, status, chunk times, usage):

    headers(ctx, ex) -> RawHeaders           the answer is accepted, nothing sent yet:
                                             headers to add to the client's response
    stream(ctx, ex) -> Observer | None       an SSE answer: what reads its events (one
                                             parser per stream feeds them all; one
                                             rewriter at most: events.py)
    body(ctx, ex, parts) -> RawHeaders       a JSON answer, read whole and not yet sent
    done(ctx, ex, error)                     after the exchange closed; `error` is what
                                             ended it, None when the last byte went out

They run in the order of the list in proxy/components.py `make_hooks`. A hook must
not raise: it runs after the backend answered, where failing would cost the client a
good completion (counted, like a bad usage, instead).
"""
