"""Chat completions shapes (vLLM's documented OpenAI chat API and its extra parameters),
and the two routes that take chat bodies: the batch and SageMaker's /invocations."""

from __future__ import annotations

from tests.integration.compat.shape import DROP, GEN, HI, QUESTION, Shape, variants

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {
        "unit": {"type": "string", "enum": ["c", "f"]}, "city": {"type": "string"}},
        "required": ["city", "unit"]}}}  # fmt: skip
CLOCK = {"type": "function", "function": {
    "name": "clock", "parameters": {"type": "object", "properties": {
        "zone": {"type": "string"}}, "required": ["zone"]}}}  # fmt: skip
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}  # fmt: skip
USAGE = {"include_usage": True}
BOTH = {"include_usage": True, "continuous_usage_stats": True}


def _requests() -> dict[str, dict | None]:
    return {
        "plain": None,
        "system and turns": {"messages": [{"role": "system", "content": "Be brief."}, *HI,
                             {"role": "assistant", "content": "It printed."},
                             {"role": "user", "content": "When?"}]},  # fmt: skip
        "no model": {"model": DROP},
        "max_completion_tokens": {"max_tokens": DROP, "max_completion_tokens": 5},
        "stop": {"stop": ["e", "\n"], "include_stop_str_in_output": True},
        "n=2 sampled": {"n": 2, "temperature": 1.0, "seed": 11},
        "logprobs": {"logprobs": True, "top_logprobs": 3},
        "return_token_ids": {"return_token_ids": True},
        "prompt_logprobs": {"prompt_logprobs": 2},
        "echo": {"echo": True, "max_tokens": 3},
        "ignore_eos min_tokens": {"ignore_eos": True, "min_tokens": 4},
        "tools, tool_choice none": {"tools": [WEATHER], "tool_choice": "none"},
        "two tools out of name order": {"tools": [WEATHER, CLOCK], "tool_choice": "none"},
        "tools, required: no tool parser": {"tools": [CLOCK, WEATHER],
                                            "tool_choice": "required", "max_tokens": 24},
        "tools, named: no tool parser": {"tools": [WEATHER, CLOCK], "max_tokens": 24,
                         "tool_choice": {"type": "function", "function": {"name": "clock"}}},
        "response_format json_object": {"response_format": {"type": "json_object"}},
        "response_format json_schema": {"max_tokens": 16, "response_format": {
            "type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}},
        "structured_outputs choice": {"structured_outputs": {"choice": ["yes", "no"]}},
        "structured_outputs regex": {"structured_outputs": {"regex": "[0-9]{3}"}},
        "structured_outputs json": {"max_tokens": 16, "structured_outputs": {"json": PERSON}},
        "documents": {"documents": [{"title": "Press", "text": "Gutenberg, around 1440."}]},
        "chat_template_kwargs": {"chat_template_kwargs": {"enable_thinking": False}},
    }  # fmt: skip


def _streams() -> dict[str, dict | None]:
    s = {"stream": True}
    return {
        "stream": s,
        "stream n=2 sampled": {**s, "n": 2, "temperature": 1.0, "seed": 11},
        "stream logprobs": {**s, "logprobs": True, "top_logprobs": 2},
        "stream return_token_ids": {**s, "return_token_ids": True},
        "stream include_usage": {**s, "stream_options": USAGE},
        "stream include_usage false": {**s, "stream_options": {"include_usage": False}},
        "stream continuous_usage_stats": {**s, "stream_options": BOTH},
        "stream continuous_usage_stats alone": {**s, "stream_options": {
            "continuous_usage_stats": True}},
        "stream n=2 logprobs usage": {**s, "n": 2, "temperature": 1.0, "seed": 11,
                                       "logprobs": True, "stream_options": BOTH},
        "stream tools, required: no tool parser": {**s, "tools": [CLOCK, WEATHER],
                                                   "tool_choice": "required", "max_tokens": 24},
        "stream structured_outputs json": {**s, "max_tokens": 16,
                                           "structured_outputs": {"json": PERSON}},
        "stream unknown model": {**s, "model": "no-such-model"},
    }  # fmt: skip


def _errors() -> dict[str, dict | None]:
    return {
        "unknown model": {"model": "no-such-model"},
        "max_tokens a string": {"max_tokens": "six"},
        "temperature a list": {"temperature": [0]},
        "messages missing": {"messages": DROP},
        "messages not a list": {"messages": QUESTION},
        "a message without role": {"messages": [{"content": QUESTION}]},
        "too long": {"max_tokens": 5000},
        "n=0": {"n": 0},
        "top_logprobs above 20": {"logprobs": True, "top_logprobs": 21},
        "tool_choice auto without a parser": {"tools": [WEATHER], "tool_choice": "auto"},
        "tool_choice names an unknown tool": {"tools": [WEATHER], "tool_choice": {
            "type": "function", "function": {"name": "nope"}}},
        "invalid json_schema": {"response_format": {"type": "json_schema"}},
    }  # fmt: skip


def chat(model: str) -> list[Shape]:
    base = {"model": model, "messages": HI, **GEN}
    route = "/v1/chat/completions"
    out = variants(route, base, _requests() | _streams() | _errors())
    out.append(Shape(route, "malformed JSON", b'{"model": "x", "messages": ['))
    return out


def batch(model: str) -> list[Shape]:
    base = {"model": model, "messages": [HI, [{"role": "user", "content": "And the compass?"}]],
            **GEN}  # fmt: skip
    return variants("/v1/chat/completions/batch", base, {
        "two conversations": None,
        "logprobs": {"logprobs": True, "top_logprobs": 2},
        "structured_outputs choice": {"structured_outputs": {"choice": ["yes", "no"]}},
        "stream refused": {"stream": True},
        "unknown model": {"model": "no-such-model"},
        "messages a string": {"messages": QUESTION},
    })  # fmt: skip


def invocations(model: str) -> list[Shape]:
    return variants("/invocations", {"model": model, **GEN}, {
        "a chat body": {"messages": HI},
        "a chat body, streamed": {"messages": HI, "stream": True},
        "a completions body": {"prompt": "The printing press was"},
        "neither": {"max_tokens": 3},
    })  # fmt: skip
