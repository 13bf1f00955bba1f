"""Responses and Anthropic Messages shapes (vLLM's documented Responses API, its stored
responses, its Messages API and count_tokens), and the structured decisions route."""

from __future__ import annotations

from tests.integration.compat.shape import DROP, HI, QUESTION, Shape, variants

PERSON = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CLOCK = {"type": "function", "name": "clock", "description": "The time in a zone.",
         "parameters": {"type": "object", "properties": {"zone": {"type": "string"}},
                        "required": ["zone"]}}  # fmt: skip
WEATHER = {"type": "function", "name": "weather", "parameters": {"type": "object", "properties": {
    "unit": {"type": "string"}, "city": {"type": "string"}}, "required": ["city"]}}  # fmt: skip


def responses(model: str) -> list[Shape]:
    s = {"stream": True}
    base = {"model": model, "input": QUESTION, "max_output_tokens": 6, "temperature": 0,
            "seed": 7, "store": False}  # fmt: skip
    return variants("/v1/responses", base, {
        "plain": None,
        "instructions": {"instructions": "Answer in one line."},
        "input items": {"input": [{"role": "developer", "content": "Be brief."},
                                  {"role": "user", "content": [
                                      {"type": "input_text", "text": QUESTION}]}]},
        "no model": {"model": DROP},
        "top_logprobs": {"top_logprobs": 2, "include": ["message.output_text.logprobs"]},
        "text.format json_schema": {"max_output_tokens": 12, "text": {"format": {
            "type": "json_schema", "name": "person", "schema": PERSON}}},
        "tools, required": {"tools": [CLOCK], "tool_choice": "required", "max_output_tokens": 20},
        "tools, none": {"tools": [CLOCK], "tool_choice": "none"},
        "two tools out of name order": {"tools": [WEATHER, CLOCK], "tool_choice": "required",
                                        "max_output_tokens": 20},
        "stream": s,
        "stream instructions": {**s, "instructions": "Answer in one line."},
        "stream text.format json_schema": {**s, "max_output_tokens": 12, "text": {"format": {
            "type": "json_schema", "name": "person", "schema": PERSON}}},
        "unknown model": {"model": "no-such-model"},
        "input missing": {"input": DROP},
        "max_output_tokens a string": {"max_output_tokens": "six"},
        "too long": {"max_output_tokens": 5000},
        "previous_response_id unknown": {"previous_response_id": "resp_missing"},
    })  # fmt: skip


def stored(model: str) -> list[Shape]:
    return [
        Shape("/v1/responses/{id}", "an unknown id", None, "GET", "/v1/responses/resp_missing"),
        Shape("/v1/responses/{id}/cancel", "an unknown id", {}, "POST",
              "/v1/responses/resp_missing/cancel"),
    ]  # fmt: skip


def messages(model: str) -> list[Shape]:
    s = {"stream": True}
    base = {"model": model, "messages": HI, "max_tokens": 6, "temperature": 0}
    tool = {"name": "clock", "input_schema": CLOCK["parameters"]}
    return variants("/v1/messages", base, {
        "plain": None,
        "system string": {"system": "Be brief."},
        "system blocks": {"system": [{"type": "text", "text": "Be brief."}]},
        "content blocks": {"messages": [{"role": "user", "content": [
            {"type": "text", "text": QUESTION}]}]},
        "stop_sequences": {"stop_sequences": ["e"]},
        "tools, any: no tool parser": {"tools": [tool], "tool_choice": {"type": "any"},
                                       "max_tokens": 20},
        "stream": s,
        "stream system": {**s, "system": "Be brief."},
        "tools, none": {"tools": [tool], "tool_choice": {"type": "none"}},
        "stream tools, tool: no tool parser": {**s, "tools": [tool], "max_tokens": 20,
                               "tool_choice": {"type": "tool", "name": "clock"}},
        "unknown model": {"model": "no-such-model"},
        "max_tokens missing": {"max_tokens": DROP},
        "messages a string": {"messages": QUESTION},
        "too long": {"max_tokens": 5000},
    })  # fmt: skip


def count_tokens(model: str) -> list[Shape]:
    tool = {"name": "clock", "input_schema": CLOCK["parameters"]}
    return variants("/v1/messages/count_tokens", {"model": model, "messages": HI}, {
        "messages": None,
        "system": {"system": "Be brief."},
        "tools, none": {"tools": [tool], "tool_choice": {"type": "none"}},
        "tools: no tool parser": {"tools": [tool]},
        "messages missing": {"messages": DROP},
    })  # fmt: skip


def systemone(model: str) -> list[Shape]:
    question = {"type": "choice", "instructions": "Which fits?",
                "criteria": {"press": "about printing", "compass": None}}  # fmt: skip
    return variants("/v1/systemone", {"model": model, "state": QUESTION}, {
        "a choice": {"questions": {"topic": question}},
        "a yes-or-no": {"questions": {"old": {"type": "noul"}}, "instructions": "Be strict."},
        "an unknown question type": {"questions": {"q": {"type": "nope"}}},
        "questions missing": None,
    })  # fmt: skip
