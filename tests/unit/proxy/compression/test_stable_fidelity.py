"""Stable forms never serve a question they were not checked for (issue 44, item 1), end
to end: a real ragtrim with the default compressor (fast_extractive, the test static
model: real WordPiece, so BM25 is real) in front of the stub, which echoes the body it
was sent. Adversarial follow-ups over one document set: a user turn that opens with
over 2,000 characters of fixed text, an answer whose text sits inside another
document's negation, boilerplate shared by several documents, and two replicas sharing
Redis that grow the same form at once. Each answer sentence must reach the backend as
a whole sentence of its own document: in its document's text, or in the group that a
growth added under that document's marker.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from compressors import ApproxTokenCounter, FastExtractiveCompressor
from tests.support.models import minilm_path, static_model  # noqa: F401 - fixtures
from tests.support.rag_requests import SYSTEM

ALWAYS = {"policy": "always", "min_context_tokens": 0, "rate": 0.3, "tokenizer": ""}
PREAMBLE = (
    "You answer questions for the permits office. Use only the documents above, "
    "quote the sentence you rely on, and say so when they do not answer. "
) * 16
DOCS = [
    "Hamburg permit 9 covers a bakery extension in Altona. The bakery asked for two ovens. "
    "The fire service inspected the site in March. Approved with conditions on noise.",
    "Berlin permit 4 covers the new library on Museum Island. The architects are from Oslo. "
    "The budget is forty million euros. Approved by the city council.",
    "Cologne permit 2 covers a cycling bridge over the Rhine. Construction starts in May. "
    "The bridge carries two lanes for bicycles. This record is kept for ten years.",
    "Dresden permit 6 covers the repair of the opera roof. The roof leaks in winter. "
    "The repair uses copper sheets. This record is kept for ten years.",
    "Munich permit 17 covers a beer hall terrace near the river. The terrace seats three "
    "hundred guests. Neighbours objected to the opening hours. Not Approved by the city council.",
]
FIRST = "What does Munich permit 17 cover near the river and who objected?"
FOLLOW_UPS = [  # (question, document index, the answer sentence)
    ("Was Berlin permit 4 for the Museum Island library approved by the city council?", 1,
     "Approved by the city council."),
    ("How long is the Cologne permit 2 cycling bridge record kept, how many years?", 2,
     "This record is kept for ten years."),
    ("Which material does Dresden permit 6 use for the opera roof repair, copper?", 3,
     "The repair uses copper sheets."),
    ("When did the fire service inspect the Hamburg permit 9 bakery site in Altona?", 0,
     "The fire service inspected the site in March."),
]  # fmt: skip
MARKER = re.compile(r"\n\[document (\d+)\] ")


def held_for(content: str, doc: int, sentence: str, documents: list[str]) -> bool:
    """`sentence` is a whole sentence of document `doc` in the context sent: in that
    document's text or after its marker, never only as the tail of another sentence."""
    texts = content[len(SYSTEM) :].split("\n\n")
    assert len(texts) == len(documents), texts
    regions = [texts[doc]]
    for i, text in enumerate(texts):
        parts = MARKER.split(text)
        regions[0] = parts[0] if i == doc else regions[0]
        regions += [g for n, g in zip(parts[1::2], parts[2::2], strict=True) if int(n) == doc + 1]
    whole = re.compile(r"(?:^|(?<=[.!?]\s)|(?<=[.!?]\n))" + re.escape(sentence) + r"(?=\s|$)")
    return any(whole.search(region) for region in regions)


def ask(url: str, question: str, documents: list[str], preamble: str = "") -> tuple[str, str]:
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(documents)},
                {"role": "user", "content": preamble + question}]  # fmt: skip
    body = {"model": "stub-model", "messages": messages, "stub": {"echo": True}}
    resp = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60)
    assert resp.status_code == 200, resp.text
    return resp.headers.get("x-ragtrim-decision", ""), resp.json()["echo"]["messages"][0]["content"]


@pytest.fixture(scope="module")
def stub():
    from tests.doubles.stub_vllm import StubVllm
    from tests.support.servers import serving

    with serving(StubVllm()) as server:
        yield server


def proxy_for(stack, stub_url: str, model_path, **overrides):
    from proxy.server.app import create_app
    from proxy.settings import Settings
    from tests.support.servers import serving
    from tests.unit.proxy.conftest import wait_warm

    fast = FastExtractiveCompressor(ApproxTokenCounter(), model_path=model_path)
    settings = Settings(backends=[stub_url], compression=ALWAYS, **overrides)
    server = stack.enter_context(serving(create_app(settings, compressor=fast)))
    wait_warm(server.url)
    return server


@pytest.mark.parametrize("preamble", ["", PREAMBLE], ids=["plain", "long-preamble"])
def test_every_follow_up_answer_reaches_the_backend(stub, static_model, preamble):  # noqa: F811
    from contextlib import ExitStack

    assert not preamble or len(preamble) > 2000
    with ExitStack() as stack:
        url = proxy_for(stack, stub.url, static_model).url
        ask(url, FIRST, DOCS, preamble)
        lost = []
        for _ in range(2):  # every question twice: the second is the "already asked" path
            for question, doc, answer in FOLLOW_UPS:
                reason, content = ask(url, question, DOCS, preamble)
                assert reason.startswith("compress:"), reason
                if not held_for(content, doc, answer, DOCS):
                    lost.append((question, reason))
        assert lost == []


@pytest.mark.integration  # a real Redis server
def test_concurrent_growth_on_two_replicas_sharing_redis_loses_no_answer(stub, static_model):  # noqa: F811
    """50 trials: a first turn, then two follow-ups that each grow the form at once, one
    on each replica, then both again, crossed over."""
    from contextlib import ExitStack

    from tests.support.redis_server import RedisServer
    from tests.support.servers import free_port

    redis = RedisServer(free_port()).start()
    try:
        with ExitStack() as stack:
            shared = {"redis": {"url": redis.url}}
            urls = [proxy_for(stack, stub.url, static_model, **shared).url for _ in range(2)]
            lost = _trials(urls, trials=50)
    finally:
        redis.kill()
    assert lost == []


def _trials(urls: list[str], trials: int) -> list[tuple[int, str]]:
    (q1, d1, a1), (q2, d2, a2) = FOLLOW_UPS[0], FOLLOW_UPS[2]
    lost = []
    with ThreadPoolExecutor(2) as pool:
        for trial in range(trials):
            docs = [f"Register {trial}. {doc}" for doc in DOCS]  # a new document set
            ask(urls[0], FIRST, docs)
            for round_ in range(2):
                asks = [pool.submit(ask, urls[(i + round_) % 2], q, docs)
                        for i, q in enumerate((q1, q2))]  # fmt: skip
                (_, c1), (_, c2) = (f.result() for f in asks)
                lost += [(trial, q1)] * (not held_for(c1, d1, a1, docs))
                lost += [(trial, q2)] * (not held_for(c2, d2, a2, docs))
    return lost
