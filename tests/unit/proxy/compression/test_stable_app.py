"""Cache-aware compression (issue 29) end to end: a real ragtrim in front of the stub
backend with a simulated prefix cache (tests/doubles/prefill_sim.py), which reports
`cached_tokens` as vLLM does."""

import re
from collections.abc import Sequence

import httpx
import pytest

from compressors.base import Budget, CompressionResult, DocumentResult
from compressors.stable_growth import SEPARATOR
from tests.doubles.prefill_sim import PrefillSim
from tests.doubles.stub_vllm import StubVllm
from tests.support.servers import free_port, serving

DOCS = [
    "Paris is the capital of France. The city lies on the Seine. It has two airports.",
    "Lyon is the third city of France. Lyon is known for its food. It lies on the Rhone.",
    "Marseille is a port on the sea. Its harbour is old. The port trades with Africa.",
]
SYSTEM = (
    "Use the following pieces of context to answer the user's question. \n"
    "If you don't know the answer, just say that you don't know, don't try to make up an "
    "answer.\n----------------\n"
)
ALWAYS = {"policy": "always", "min_context_tokens": 0}


class QuestionWords:
    """Question-aware: keeps the sentences that share a word of 4+ letters with the
    question (the first sentence when none does); counts words as tokens."""

    name, version, question_aware = "question_words", "1", True
    prior_ms_per_1k = 1.0

    def fingerprint(self) -> str:
        return "question_words:v1"

    def compress(self, documents: Sequence[str], *, question: str,
                 budget: Budget) -> CompressionResult:  # fmt: skip
        words = {w for w in re.findall(r"\w{4,}", question.lower())}
        out = []
        for doc in documents:
            sentences = re.findall(r"[^.]+\.", doc)
            kept = [s.strip() for s in sentences if words & set(re.findall(r"\w+", s.lower()))]
            text = " ".join(kept or [sentences[0].strip()])
            out.append(DocumentResult(text, len(doc.split()), len(text.split())))
        return CompressionResult(self.name, tuple(out))


def body(question: str) -> dict:
    messages = [{"role": "system", "content": SYSTEM + "\n\n".join(DOCS)},
                {"role": "user", "content": question}]  # fmt: skip
    return {"model": "stub-model", "messages": messages, "stub": {"echo": True}}


def ask(proxy, question: str, headers=None) -> tuple[str, str]:
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body(question),
                      headers=headers or {})  # fmt: skip
    assert resp.status_code == 200, resp.text
    return resp.headers["x-ragtrim-decision"], resp.json()["echo"]["messages"][0]["content"]


@pytest.fixture
def sim():
    with serving(StubVllm("stub-model", prefill=PrefillSim(per_token_ms=0.0, base_ms=0))) as s:
        yield s


def test_a_follow_up_reuses_the_compressed_form_byte_for_byte(sim, make_proxy):
    proxy = make_proxy([sim.url], compressor=QuestionWords(), compression=ALWAYS)
    first_reason, first = ask(proxy, "Which city lies on the Seine?")
    assert first_reason.startswith("compress:") and "Seine" in first and "harbour" not in first
    reason, again = ask(proxy, "What does the city on the Seine have?")
    assert reason.startswith("compress:stable(") and again == first  # byte-identical
    metrics = httpx.get(f"{proxy.url}/metrics").text
    assert 'ragtrim_stable_choices_total{choice="reused"} 1.0' in metrics


def test_a_question_the_form_lacks_grows_it_after_its_bytes(sim, make_proxy):
    proxy = make_proxy([sim.url], compressor=QuestionWords(), compression=ALWAYS)
    _, first = ask(proxy, "Which city lies on the Seine?")
    reason, grown = ask(proxy, "What is Lyon known for?")
    assert reason.startswith("compress:stable-grown(+")
    assert grown.startswith(first) and grown[len(first) :].startswith(SEPARATOR)
    assert "Lyon is known for its food." in grown  # the new question's selection is sent
    _, third = ask(proxy, "What does Lyon's food look like?")
    assert third == grown  # the grown form is the stored one now


def test_a_tenant_never_reuses_another_tenants_form(sim, make_proxy):
    keys = {"key-a": "a", "key-b": "b"}
    proxy = make_proxy([sim.url], compressor=QuestionWords(), compression=ALWAYS,
                       tenancy={"api_keys": keys, "salt_secret": "s" * 32})  # fmt: skip
    ask(proxy, "Which city lies on the Seine?", {"authorization": "Bearer key-a"})
    reason, _ = ask(proxy, "What is Lyon known for?", {"authorization": "Bearer key-b"})
    assert not reason.startswith("compress:stable")


def test_stable_forms_off_compresses_each_question_on_its_own(sim, make_proxy):
    settings = {**ALWAYS, "stable": {"enabled": False}}
    proxy = make_proxy([sim.url], compressor=QuestionWords(), compression=settings)
    _, first = ask(proxy, "Which city lies on the Seine?")
    reason, second = ask(proxy, "What is Lyon known for?")
    assert reason.startswith("compress:policy-always") and not second.startswith(first)


def test_redis_down_still_answers_every_turn(sim, make_proxy):
    """No Redis at all: the store's in-process fallback keeps the forms (never a 5xx)."""
    proxy = make_proxy([sim.url], compressor=QuestionWords(), compression=ALWAYS,
                       redis={"url": f"redis://127.0.0.1:{free_port()}"})  # fmt: skip
    _, first = ask(proxy, "Which city lies on the Seine?")
    reason, again = ask(proxy, "What does the city on the Seine have?")
    assert reason.startswith("compress:stable") and again == first
