"""vLLM's KV-cache events: what ragtrim subscribes to for the `kv_cache`
scorer and the `cost` picker (proxy/routing/kv/)."""

from __future__ import annotations

from pydantic import Field

from proxy.config.section import Section


class KvEndpoint(Section):
    pub: str = Field(description="The backend's KV-event PUB endpoint, tcp://host:port.")
    replay: str = Field("", description="Its replay ROUTER endpoint; empty = none.")


class KvEventsSettings(Section):
    """ragtrim subscribes to every backend and indexes the blocks each one holds. vLLM
    publishes them with `--kv-events-config '{"enable_kv_cache_events": true,
    "publisher": "zmq", "endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5558",
    "topic": ""}'`."""

    enabled: bool = Field(
        False,
        description="Subscribe to the backends' KV events. Needs, and is needed by, the "
        "kv_cache scorer in routing.scorers (neither is implied: a start with one alone fails).",
    )
    port: int = Field(5557, gt=0, lt=65536, description="KV-event PUB port on each backend's host.")
    replay_port: int = Field(
        5558, ge=0, lt=65536, description="Replay ROUTER port on each backend's host; 0 = none."
    )
    topic: str = Field("", description="The topic vLLM publishes on (kv-events-config topic).")
    endpoints: dict[str, KvEndpoint] = Field(
        default_factory=dict, description="Backend URL -> its own {pub, replay} endpoints."
    )
    max_blocks_per_backend: int = Field(
        262_144, gt=0, description="Index cap per backend (LRU beyond; ~400 bytes a block)."
    )
    replay_timeout_s: float = Field(2.0, gt=0, description="Seconds a replay answer may take.")
    interval_s: float = Field(
        1.0, gt=0, description="Seconds between reconciling subscribers with the backend pool."
    )
    tokenize_thread_bytes: int = Field(
        4096,
        ge=0,
        description="kv_cache: a request with at least this many bytes of text "
        "to encode (a cached static prefix or last turn left out) is tokenized (chat "
        "template) in a worker thread, not on the event loop; below it the thread hop "
        "costs about what tokenizing does (0.1 ms; 1.4k tokens cost 1.2 ms).",
    )
    max_prefix_tokens: int = Field(
        32_768,
        gt=0,
        description="kv_cache: only a request's leading tokens can match a "
        "cache, so at most this many are tokenized and chain-hashed (the text is cut first, "
        "at this many tokens x 8 characters), whatever the prompt's size.",
    )
    max_message_bytes: int = Field(
        2 << 20,
        gt=0,
        description="ZMQ MAXMSGSIZE on every KV-event socket (SUB, replay): a "
        "bigger message is dropped by zmq unread, with the publisher's connection (a reconnect "
        "resyncs). Decoding holds the GIL ~13-27 ms per MB, so 2 MiB bounds the loop's wait "
        "to ~50 ms; a vLLM step publishes at most its max_num_batched_tokens of blocks "
        "(16k tokens: ~1k blocks, ~60 KB), a 300,000-block batch is ~21 MB.",
    )
