"""`compression.options` entries the compressor would ignore refuse to start
(proxy/config/compressor_options.py; issue 21: `tokenizer_path` was silently ignored)."""

from __future__ import annotations

import pytest

from compressors.registry import accepted_options
from proxy.settings import CompressionSettings, load_settings


def test_tokenizer_path_names_compression_tokenizer(monkeypatch):
    monkeypatch.setenv("RAGTRIM_COMPRESSION__OPTIONS", '{"tokenizer_path": "/models/x"}')
    with pytest.raises(ValueError) as info:
        load_settings()
    message = str(info.value)
    assert "compression.options.tokenizer_path" in message
    assert "compression.tokenizer" in message and "RAGTRIM_COMPRESSION__TOKENIZER" in message


@pytest.mark.parametrize("key", ["device", "count_tokens"])
def test_entries_the_proxy_sets_itself_are_refused(key):
    with pytest.raises(ValueError, match=f"options.{key} is not used by the proxy"):
        CompressionSettings(options={key: "cpu"})


def test_an_unknown_entry_lists_what_the_compressor_accepts():
    with pytest.raises(ValueError) as info:
        CompressionSettings(compressor="fast_extractive", options={"windw": 3})
    message = str(info.value)
    assert "compression.options.windw" in message and "'fast_extractive'" in message
    listed = message.split("it accepts: ")[1].split(" [")[0].split(", ")
    expected = accepted_options("fast_extractive") - {"tokenizer_path", "count_tokens", "device"}
    assert set(listed) == expected and "model_path" in listed


def test_identity_takes_no_protector_options():
    with pytest.raises(ValueError, match="protect_kinds"):
        CompressionSettings(compressor="identity", options={"protect_kinds": ["url"]})
    ok = CompressionSettings(compressor="extractive", options={"protect_kinds": ["url"]})
    assert ok.options == {"protect_kinds": ["url"]}
