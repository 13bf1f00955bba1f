"""Real framework clients -> real ragtrim (uvicorn) -> real vLLM (tiny Llama, CPU).

One ragtrim per module with compression policy `always`, so what is checked does not
depend on the cost gate's estimate. Every case records a row (framework, mode,
template, tokens before -> after, cached tokens on the second identical call, chunks
the answer arrived in) to a JSON report: $RAGTRIM_CLIENTS_REPORT, default
/tmp/ragtrim-clients-report.json.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from proxy.server.app import create_app
from proxy.settings import Settings
from tests.support.servers import ServerThread, serving

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
REPORT = Path(os.environ.get("RAGTRIM_CLIENTS_REPORT", "/tmp/ragtrim-clients-report.json"))


def wait_warm(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while httpx.get(f"{url}/readyz").json().get("compressor") in ("cold", "loading"):
        assert time.monotonic() < deadline, "compressor warm-up did not finish"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def proxy(vllm_tiny) -> Iterator[ServerThread]:
    settings = Settings(backends=[vllm_tiny.base_url], compression={"policy": "always"})
    with serving(create_app(settings)) as server:
        wait_warm(server.url)
        yield server


@pytest.fixture(scope="session")
def report() -> Iterator[list[dict]]:
    rows: list[dict] = []
    yield rows
    old = json.loads(REPORT.read_text()) if REPORT.exists() else []
    keep = [r for r in old if (r["framework"], r["mode"]) not in {
        (n["framework"], n["mode"]) for n in rows}]  # fmt: skip
    REPORT.write_text(json.dumps(keep + rows, indent=1))
    for row in rows:
        print(row)
