"""proxy/compression/token_counter.py: the target tokenizer found by the model card's `root`."""

import json

import httpx
from tokenizers import Tokenizer, models, pre_tokenizers

from compressors import ApproxTokenCounter
from proxy.backends.endpoint import EndpointPool
from proxy.compression.token_counter import TargetTokenCounter
from tests.doubles.stub_vllm import StubVllm
from tests.support.compressor_doubles import Pooled
from tests.support.rag_requests import SYSTEM
from tests.support.servers import serving

LONG_WORD = "abcdefghijklm"  # one token for the word-level tokenizer, three for approx


def word_tokenizer_dir(tmp_path):
    """A local model dir whose tokenizer counts each word (and each punctuation) once."""
    vocab = {"[UNK]": 0, LONG_WORD: 1, ".": 2}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    return tmp_path


def test_counter_uses_the_root_once_a_backend_reports_it(tmp_path):
    root = word_tokenizer_dir(tmp_path)
    pool = EndpointPool.from_urls(["http://b1", "http://b2"])
    for ep in pool.endpoints:
        ep.healthy = True
    counter = TargetTokenCounter(pool, "")
    text = " ".join([LONG_WORD] * 10)
    assert counter.name == ApproxTokenCounter.name and counter(text) == 30  # no card yet
    pool.endpoints[0].model_cards = ({"id": "m", "root": "/nowhere/on/this/host"},)
    assert counter(text) == 30  # a root that is not a local dir is not used
    pool.endpoints[1].model_cards = ({"id": "m", "root": str(root)},)
    assert counter(text) == 10 and counter.name == f"hf:{root.name}"


def test_app_budgets_in_the_backend_models_tokens(tmp_path, make_proxy):
    root = word_tokenizer_dir(tmp_path)
    doc = " ".join([LONG_WORD] * 40)
    body = {"model": "stub-model", "messages": [
        {"role": "system", "content": SYSTEM + doc + "\n\n" + doc},
        {"role": "user", "content": "Which word?"}]}  # fmt: skip
    double = Pooled()
    with serving(StubVllm(root=str(root))) as stub:
        proxy = make_proxy([stub.url], compressor=double,
                           compression={"policy": "always", "rate": 0.5})  # fmt: skip
        resp = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, timeout=30)
    assert resp.status_code == 200, resp.text
    assert double.budgets[-1].target_tokens == 40  # half of 80 words; approx would say 120
