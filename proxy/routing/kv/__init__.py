"""Precise prefix-cache routing from vLLM's KV-cache events.
Why: docs/decisions/0024-kv-event-routing.md.

events.py         the wire format, both encodings of the inner events
chain.py          ragtrim's chain hash over a block's token ids and extra keys
index.py          what each backend holds, bounded (LRU), from its events
subscriber.py     one backend's stream: SUB, sequence gaps replayed, restarts
subscriptions.py  a subscriber per backend, following discovery
scorer.py         the `kv_cache` scorer (share of leading blocks held)
"""
