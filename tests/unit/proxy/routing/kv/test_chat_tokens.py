"""Request token ids with the model's own chat template (the tiny Llama of make setup);
equality with vLLM's /tokenize is tests/integration/test_kv_events.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.backends.endpoint import Endpoint, EndpointPool
from proxy.routing.kv.chat_tokens import ChatTokenizer, RequestTokens, vllm_messages

TINY = Path(__file__).resolve().parents[5] / ".models" / "tiny-llama"
pytestmark = pytest.mark.skipif(not (TINY / "tokenizer.json").exists(), reason="make setup")
SYSTEM = {"role": "system", "content": "You answer from the documents. " * 20}


def pool(root: str) -> EndpointPool:
    card = {"id": "tiny-llama", "root": root}
    return EndpointPool([Endpoint("http://a", healthy=True, model_cards=(card,))])


def test_static_prefix_cache_gives_the_ids_of_the_whole_text():
    tok = ChatTokenizer(str(TINY))
    body = {"messages": [SYSTEM, {"role": "user", "content": "What is in the box?"}]}
    whole = tok.encode(tok.render(vllm_messages(body["messages"]), body, True))
    assert tok.chat(body) == whole and len(tok.prefixes.static) == 1
    assert tok.chat(body) == whole and len(tok.prefixes.static) == 1  # from the cache
    (prefix,) = tok.prefixes.static.values()
    other = {"messages": [SYSTEM, {"role": "user", "content": "And the other one?"}]}
    ids = tok.chat(other)
    assert ids[: len(prefix.ids)] == whole[: len(prefix.ids)] == list(prefix.ids)
    assert ids.static is prefix


def test_content_parts_are_joined_as_vllm_does():
    parts = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert vllm_messages([{"role": "user", "content": parts}])[0]["content"] == "one\ntwo"


def test_request_tokens_find_the_model_root_and_report_the_cost():
    costs: list[float] = []
    tokens = RequestTokens(pool(str(TINY)), on_cost=costs.append)
    ids = tokens.ids(
        "chat", {"messages": [SYSTEM, {"role": "user", "content": "Hi"}]}, "tiny-llama"
    )
    assert ids and costs and costs[0] > 0
    assert tokens.ids("completions", {"prompt": "Hello there"}, "tiny-llama")
    assert tokens.ids("other", {}, "tiny-llama") is None
    assert tokens.pending_bytes("completions", {"prompt": "Hello there"}, "tiny-llama") == 11


def test_no_local_root_means_no_ids():
    assert RequestTokens(pool("/nonexistent")).ids("chat", {"messages": []}, "tiny-llama") is None
    explicit = RequestTokens(pool("/nonexistent"), explicit_dir=str(TINY))
    assert explicit.ids("completions", {"prompt": "Hi"}, "tiny-llama")


async def test_kv_warm_loads_the_tokenizer_off_the_loop():
    from proxy.metrics import Metrics
    from proxy.routing.kv.service import build_kv
    from proxy.settings import KvEventsSettings

    p = pool(str(TINY))
    loads: list[int] = []
    kv = build_kv(KvEventsSettings(enabled=True), p, Metrics(), "", lambda: loads.append(1))
    await kv.warm(p.endpoints[0])
    assert kv.tokens._by_root[str(TINY)] is not None and kv.tokens.loaded("tiny-llama")
    assert loads == [1]  # the app's hook: a served process freezes the new tokenizer
    await kv.warm(p.endpoints[0])  # known already: a health flap reports nothing
    assert loads == [1]


def test_without_wait_a_cold_tokenizer_loads_on_a_thread_and_gives_no_ids_yet():
    """The router asks with wait=False: it never loads a tokenizer on the event loop
    (seconds); the first ask starts one load on a thread, later asks get ids."""
    import time

    tokens = RequestTokens(pool(str(TINY)))
    body = {"messages": [SYSTEM, {"role": "user", "content": "Hi"}]}
    t0 = time.perf_counter()
    assert tokens.ids("chat", body, "tiny-llama", wait=False) is None
    assert tokens.ids("chat", body, "tiny-llama", wait=False) is None  # still loading
    assert time.perf_counter() - t0 < 0.5 and tokens._loading == {str(TINY)}
    for _ in range(300):
        if tokens.ids("chat", body, "tiny-llama", wait=False):
            break
        time.sleep(0.05)
    assert tokens.ids("chat", body, "tiny-llama", wait=False) == tokens.ids(
        "chat", body, "tiny-llama"
    )


def test_encode_gives_the_tokenizers_own_ids():
    """ChatTokenizer encodes with the Rust tokenizer directly: the ids tok.encode gives."""
    tok = ChatTokenizer(str(TINY))
    assert tok._rust is not None
    texts = ["Hello there", "", "<s>[INST] Hi [/INST]", " leading space\n\ttabs", "日本語 ok"]
    for text in texts:
        for special in (False, True):
            assert tok.encode(text, special) == tok.tok.encode(text, add_special_tokens=special)


def test_a_loaded_root_is_found_without_looking_at_the_disk(tmp_path):
    from proxy.compression.token_counter import local_model_root

    p = pool(str(tmp_path))  # no tokenizer.json there
    assert local_model_root(p, "tiny-llama") is None
    assert local_model_root(p, "tiny-llama", known={str(tmp_path)}) == str(tmp_path)


def test_encoding_on_a_thread_lets_the_loop_run():
    """Long texts are encoded on a worker thread so the event loop goes on meanwhile:
    the encoder must release the GIL (tokenizers' Tokenizer.encode does not; its
    encode_batch does). Held, the main thread would run about once per encode."""
    import threading

    tok = ChatTokenizer(str(TINY))
    text = " ".join(f"w{i * 7919 % 10**6}" for i in range(20_000))
    done, turns = threading.Event(), 0

    def work():
        for _ in range(5):
            tok.encode(text)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    while not done.is_set():
        turns += 1
        done.wait(0.0005)
    worker.join()
    assert turns > 50
