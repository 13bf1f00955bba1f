"""Completions, tokenizer and scoring shapes (vLLM's documented completions API, its
/tokenize and /detokenize, and /generative_scoring)."""

from __future__ import annotations

from tests.integration.compat.shape import DROP, GEN, HI, Shape, variants

PROMPT = "The printing press was"
BOTH = {"include_usage": True, "continuous_usage_stats": True}


def completions(model: str) -> list[Shape]:
    s = {"stream": True}
    return variants("/v1/completions", {"model": model, "prompt": PROMPT, **GEN}, {
        "plain": None,
        "no model": {"model": DROP},
        "two prompts": {"prompt": [PROMPT, "The compass"]},
        "token ids": {"prompt": [1, 450, 1596, 278]},
        "n=2 sampled": {"n": 2, "temperature": 1.0, "seed": 11},
        "logprobs": {"logprobs": 3},
        "echo and logprobs": {"echo": True, "logprobs": 1, "max_tokens": 2},
        "return_token_ids": {"return_token_ids": True},
        "prompt_logprobs": {"prompt_logprobs": 1},
        "stop": {"stop": [" ", "e"]},
        "best_of refused": {"best_of": 2},
        "response_format json_object": {"response_format": {"type": "json_object"}},
        "structured_outputs choice": {"structured_outputs": {"choice": ["red", "blue"]}},
        "structured_outputs grammar": {"structured_outputs": {
            "grammar": 'root ::= "yes" | "no"'}},
        "stream": s,
        "stream two prompts n=2": {**s, "prompt": [PROMPT, "The compass"], "n": 2,
                                   "temperature": 1.0, "seed": 11},
        "stream logprobs": {**s, "logprobs": 2},
        "stream return_token_ids": {**s, "return_token_ids": True},
        "stream include_usage": {**s, "stream_options": {"include_usage": True}},
        "stream continuous_usage_stats": {**s, "stream_options": BOTH},
        "stream continuous_usage_stats alone": {**s, "stream_options": {
            "continuous_usage_stats": True}},
        "stream echo": {**s, "echo": True},
        "unknown model": {"model": "no-such-model"},
        "prompt missing": {"prompt": DROP},
        "prompt a number": {"prompt": 3.5},
        "max_tokens negative": {"max_tokens": -1},
        "logprobs above 20": {"logprobs": 21},
        "too long": {"max_tokens": 5000},
        "suffix refused": {"suffix": "end"},
        "stream too long": {**s, "max_tokens": 5000},
    })  # fmt: skip


def tokenize(model: str) -> list[Shape]:
    return variants("/tokenize", {"model": model}, {
        "prompt": {"prompt": PROMPT},
        "prompt without special tokens": {"prompt": PROMPT, "add_special_tokens": False},
        "prompt, token strings": {"prompt": PROMPT, "return_token_strs": True},
        "messages": {"messages": HI},
        "messages, no generation prompt": {"messages": HI, "add_generation_prompt": False},
        "unknown model": {"model": "no-such-model", "prompt": PROMPT},
        "neither prompt nor messages": {"add_special_tokens": True},
        "prompt a list": {"prompt": [PROMPT]},
    })  # fmt: skip


def detokenize(model: str) -> list[Shape]:
    return variants("/detokenize", {"model": model}, {
        "tokens": {"tokens": [1, 450, 1596, 278]},
        "no tokens": {"tokens": []},
        "unknown model": {"model": "no-such-model", "tokens": [1]},
        "tokens strings": {"tokens": ["a", "b"]},
        "token out of vocabulary": {"tokens": [10_000_000]},
    })  # fmt: skip


def generative_scoring(model: str) -> list[Shape]:
    base = {"model": model, "query": "Is the sky blue?", "items": [" Yes", " No"],
            "label_token_ids": [450, 1596]}  # fmt: skip
    return variants("/generative_scoring", base, {
        "two items": None,
        "raw probabilities, items first": {"apply_softmax": False, "item_first": True},
        "token ids": {"query": [1, 450, 1596], "items": [[278], [279]]},
        "label_token_ids missing": {"label_token_ids": DROP},
        "unknown model": {"model": "no-such-model"},
    })  # fmt: skip
