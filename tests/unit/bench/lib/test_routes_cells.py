"""bench/lib/routes_cells.py: one tenant per route, and gold retention read back from the
route tenant's memo with the documents and question that route's adapter finds."""

from __future__ import annotations

import json

import httpx
import pytest

from bench.lib.route_bodies import ROUTES, body
from bench.lib.routes_cells import KEYS, readback, run_case, tenancy_env
from bench.lib.squad import RagCase
from bench.lib.stream import Timing
from proxy.settings import Settings

DOCS = ("Paris is the capital of France.", "The Seine flows through Paris.")
CASE = RagCase(question="What is the capital of France?", answers=("Paris",), gold=DOCS[0],
               documents=DOCS, case_id="t:1", titles=("France", "Seine"))  # fmt: skip
COMPRESSED = {"x-ragtrim-decision": "compress:auto", "x-ragtrim-tokens-after": "9"}


def test_each_route_is_its_own_tenant(monkeypatch):
    for name, value in tenancy_env().items():
        monkeypatch.setenv(name, value)
    tenancy = Settings().tenancy
    assert sorted(tenancy.api_keys.values()) == sorted(ROUTES)
    assert {tenancy.api_keys[KEYS[r]] for r in ROUTES} == set(ROUTES)


def memo(hits: int, seen: list) -> httpx.Client:
    """A /v1/compress that keeps each document's first word (`hits` of them memoized)."""

    def answer(request: httpx.Request) -> httpx.Response:
        ask = json.loads(request.content)
        seen.append((request.url.path, request.headers["authorization"], ask))
        docs = [{"text": d.split()[0]} for d in ask["documents"]]
        return httpx.Response(200, json={"documents": docs, "cache_hits": hits})

    return httpx.Client(transport=httpx.MockTransport(answer))


@pytest.mark.parametrize("route", ["responses", "messages"])
def test_a_compressed_request_is_read_back_under_its_route(route):
    seen: list = []
    timing = Timing(1.0, 2.0, "", {}, COMPRESSED)
    got = readback(memo(2, seen), "http://rt", route, body(route, CASE, "s", "m"), timing, 0.33)
    assert got == (True, ["Paris", "The"], True)
    ((path, key, ask),) = seen
    assert (path, key) == ("/v1/compress", f"Bearer {KEYS[route]}")
    assert ask == {"documents": list(DOCS), "question": CASE.question, "rate": 0.33}


def test_a_memo_miss_is_flagged():
    timing = Timing(1.0, 2.0, "", {}, COMPRESSED)
    got = readback(memo(1, []), "http://rt", "chat", body("chat", CASE, "s", "m"), timing, 0.33)
    assert got[2] is False


def test_an_uncompressed_request_sent_the_original_documents():
    seen: list = []
    timing = Timing(1.0, 2.0, "", {}, {"x-ragtrim-decision": "skip:limits"})
    got = readback(memo(2, seen), "http://rt", "messages", body("messages", CASE, "s", "m"),
                   timing, 0.33)  # fmt: skip
    assert got == (False, list(DOCS), False) and seen == []


def test_routes_take_turns_and_each_sends_direct_first(monkeypatch):
    sent = []

    def send(client, urls, route, path, case, model, headers=None):
        sent.append((route, path))
        return Timing(10.0, 20.0, "Paris", {"prompt_tokens": 5}, {})

    monkeypatch.setattr("bench.lib.routes_cells.send", send)
    rows = run_case(None, {"ragtrim": "http://rt"}, CASE, 1, 0.33, "m")
    assert [r for r, p in sent if p == "direct"] == ["responses", "messages", "chat"]
    assert sent[:2] == [("responses", "direct"), ("responses", "ragtrim")]
    assert set(rows) == set(ROUTES) and rows["chat"]["ttft_ratio"] == 1.0
    assert rows["messages"]["gold_retained"] and not rows["messages"]["compressed"]
