"""The served OpenAPI document asks for what parse_body asks for (issue 31)."""

from proxy.server.openapi import openapi_document


def test_model_is_optional_and_a_completion_takes_prompt_or_prompt_embeds():
    schemas = openapi_document()["components"]["schemas"]
    chat, completion = schemas["ChatRequest"], schemas["CompletionRequest"]
    assert chat["required"] == ["messages"] and "model" not in completion.get("required", [])
    assert completion["anyOf"] == [{"required": ["prompt"]}, {"required": ["prompt_embeds"]}]
    assert "prompt_embeds" in completion["properties"]
