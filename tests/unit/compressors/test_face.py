"""The public face (compressors/__init__.py): every exported name resolves to its
module's object, and importing the face, or the whole protocol, loads no model library
(the proxy starts fast and without torch)."""

import importlib
import subprocess
import sys

import pytest

import compressors

HEAVY = ("torch", "transformers", "llmlingua", "tiktoken", "tokenizers")


def test_every_exported_name_is_its_modules_object():
    assert sorted(compressors.__all__) == sorted(compressors._EXPORTS)
    for name, (module, attribute) in compressors._EXPORTS.items():
        assert getattr(compressors, name) is getattr(importlib.import_module(module), attribute)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'TiktokenCounter'"):
        compressors.TiktokenCounter  # noqa: B018 - moved to bench/lib/variants


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)  # fmt: skip
    return out.stdout.split()


def test_import_compressors_loads_nothing_behind_it():
    loaded = _loaded_after("import compressors")
    assert [m for m in loaded if m.startswith("compressors.")] == []
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_what_the_proxy_imports_loads_no_model_library():
    names = ", ".join(n for n in compressors.__all__ if not n.endswith("Compressor"))
    loaded = _loaded_after(f"from compressors import {names}, build_compressor, calibration")
    assert "compressors.tokens" in loaded  # the check sees imports
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]
