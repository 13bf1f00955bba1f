"""The body adapters on bodies vLLM accepts without `prompt` or `model` (issue 31)."""

from proxy.prompt.body import prompt_for
from proxy.prompt.prefix import CanonicalRules


def test_a_prompt_embeds_only_body_has_nothing_to_segment_canonicalize_or_replay():
    prompt = prompt_for("completions", {"model": "m", "prompt_embeds": "AAAA"})
    assert prompt.segment(None, None) is None
    assert prompt.canonicalize(CanonicalRules(), None) is None
    assert prompt.replay(None) is None
    assert not prompt.modified


def test_a_replay_without_model_names_none_as_the_client_did():
    prompt = prompt_for("completions", {"prompt": "static part"})
    replay = prompt.replay((0, 6))
    assert replay is not None and replay["prompt"] == "static" and "model" not in replay
    assert prompt.model is None
