"""No blind cuts (issue 33), end to end: a real ragtrim with the default compressor
(fast_extractive, with the test static model: real WordPiece, so BM25 is real) in front
of the stub, compression always on at a keep rate of 0.3, the forwarded body captured.

Before the fix: a Thai or an emoji-only document was compressed with nothing to judge
it by and its needle dropped; a markdown table was cut at sentence ends inside cells
(a fact ended up under another row); a pretty-printed JSON array came out invalid; and
a document named in `ragtrim.documents` was rewritten where it first occurs, in the
system prompt or an earlier assistant turn that quoted it, instead of the context.
"""

import httpx
import pytest

from compressors import ApproxTokenCounter, FastExtractiveCompressor
from tests.support.fidelity_cases import (
    CASES,
    QUOTED,
    QUOTED_DOCS,
    QUOTED_QUESTION,
    check_case,
)
from tests.support.models import minilm_path, static_model  # noqa: F401 - fixtures
from tests.support.rag_requests import ALWAYS, SYSTEM

RATE = {"x-ragtrim-rate": "0.3"}


@pytest.fixture(scope="module")
def proxy(static_model, tmp_path_factory):  # noqa: F811
    from proxy.server.app import create_app
    from proxy.settings import Settings
    from tests.doubles.stub_vllm import StubVllm
    from tests.support.servers import serving
    from tests.unit.proxy.conftest import wait_warm

    fast = FastExtractiveCompressor(ApproxTokenCounter(), model_path=static_model)
    with serving(StubVllm()) as stub:
        settings = Settings(backends=[stub.url], compression={**ALWAYS, "tokenizer": ""})
        with serving(create_app(settings, compressor=fast)) as server:
            wait_warm(server.url)
            yield server


def _forward(proxy, body: dict) -> dict:
    body = {"model": "stub-model", "stub": {"echo": True}, **body}
    resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, headers=RATE, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()["echo"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_needle_survives_and_structure_stays_whole(proxy, name):
    """The LangChain stuff template: the documents sit in the system message."""
    case = CASES[name]
    messages = [
        {"role": "system", "content": SYSTEM + "\n\n".join(case.documents)},
        {"role": "user", "content": case.question},
    ]
    echo = _forward(proxy, {"messages": messages})
    system = echo["messages"][0]["content"]
    assert system.startswith(SYSTEM)
    check_case(case, system[len(SYSTEM) :])


def test_only_the_context_is_rewritten_never_a_quoting_system_prompt_or_turn(proxy):
    """The system prompt's instruction and an earlier assistant turn quote the documents
    named in `ragtrim.documents`; the last user message carries them as context."""
    context = "\n\n".join(QUOTED_DOCS)
    messages = [
        {"role": "system", "content": QUOTED},
        {"role": "user", "content": "What did the report say?"},
        {"role": "assistant", "content": f"It said: {QUOTED_DOCS[0]}"},
        {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {QUOTED_QUESTION}"},
    ]
    field = {"documents": list(QUOTED_DOCS), "question": QUOTED_QUESTION}
    echo = _forward(proxy, {"messages": messages, "ragtrim": field})
    assert echo["messages"][:3] == messages[:3]  # byte for byte
    last = echo["messages"][3]["content"]
    assert last != messages[3]["content"]  # the context itself was compressed
    assert last.startswith("Context:\n") and last.endswith(f"Question: {QUOTED_QUESTION}")
