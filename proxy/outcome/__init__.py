"""What one request came to, typed: the gate's `Decision` and the `RequestOutcome` every
stage fills in and every reader (headers, access log, spans, accounting) reads.

The bottom of proxy/'s layers: it imports nothing of ragtrim's, so the gate, the
stages, the hooks and telemetry all can hold it. `render.headers` is the only place
the `x-ragtrim-*` strings are made.
"""
