"""Every ```python block under the "Using ragtrim" section of the README and of
docs/clients.md runs, as a user would run it, against ragtrim (real uvicorn) in front
of the test vLLM: each snippet reads RAGTRIM_URL, VLLM_URL and RAGTRIM_MODEL and must
exit 0 having printed an answer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from proxy.server.app import create_app
from proxy.settings import Settings
from tests.support.servers import serving

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Using ragtrim"


def snippets() -> list[tuple[str, str]]:
    """(subsection title, code) for each python block of the section, in the README and
    in docs/clients.md (the clients the README has no room for)."""
    return [s for doc in ("README.md", "docs/clients.md") for s in snippets_of(doc)]


def snippets_of(doc: str) -> list[tuple[str, str]]:
    text = (ROOT / doc).read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end != -1 else len(text)]
    out, title = [], SECTION
    for match in re.finditer(r"^### ([^\n]+)$|^```python\n(.*?)^```$", section, re.M | re.S):
        if match.group(1):
            title = match.group(1)
        else:
            out.append((title, match.group(2)))
    return out


SNIPPETS = snippets()


@pytest.fixture(scope="module")
def proxy_url(vllm_tiny):
    with serving(create_app(Settings(backends=[vllm_tiny.base_url]))) as server:
        yield server.url


def test_the_section_has_a_snippet_per_way_of_using_ragtrim():
    titles = {title for title, _ in SNIPPETS}
    for way in ("openai SDK", "LangChain through the proxy", "LangChain wrapper",
                "document compressor", "LlamaIndex", "Haystack"):  # fmt: skip
        assert any(way in t for t in titles), f"no snippet for {way}"


@pytest.mark.parametrize(("title", "code"), SNIPPETS, ids=[t for t, _ in SNIPPETS])
def test_readme_snippet_runs(title, code, proxy_url, vllm_tiny):
    env = {
        **os.environ, "RAGTRIM_URL": proxy_url, "VLLM_URL": vllm_tiny.base_url,
        "RAGTRIM_MODEL": vllm_tiny.model, "HF_HUB_OFFLINE": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
    }  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=240)  # fmt: skip
    assert done.returncode == 0, f"{title}:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{title} printed nothing"
