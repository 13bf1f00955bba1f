"""Path normalisation and the route table, as functions (issue 23, class 3)."""

import pytest

from proxy.http.paths import normalise
from proxy.http.route_table import EXACT, match


@pytest.mark.parametrize(
    "raw",
    [
        b"/v1/x/../chat/completions", b"/v1/%2e%2e/metrics", b"/v1/%2E%2E/v1/chat/completions",
        b"/v1/./chat/completions", b"/v1/chat%3Fcompletions", b"/v1/chat/completions%23x",
        b"/v1/%252e%252e/metrics", b"/v1\\..\\metrics", b"/v1/chat/%00completions",
        b"/v1/%ff", b"v1/chat/completions", b"/v1/%2e",
    ],
)  # fmt: skip
def test_tricks_are_not_routable(raw):
    assert normalise(raw, raw.decode("latin-1")) is None


def test_decoded_once_and_exactly():
    assert normalise(b"/v1/%63hat/completions", "") == "/v1/chat/completions"
    assert normalise(b"/v1/chat%2fcompletions", "") == "/v1/chat/completions"  # one route
    assert normalise(None, "/v1/models") == "/v1/models"  # a server without raw_path


@pytest.mark.parametrize(
    "path",
    ["/v1/chat/completions/", "//v1/chat/completions", "/v1/unknown", "/v1/load_lora_adapter",
     "/v1", "/", "/health", "/version", "/v1/responses/a.b", "/v1/responses/x/y"],
)  # fmt: skip
def test_only_table_paths_match(path):
    assert match(path) is None


def test_table_routes_and_templates():
    assert match("/v1/chat/completions").route.kind == "chat"
    assert match("/tokenize").route.kind == "other"
    found = match("/v1/responses/resp_12-ab")
    assert (found.route.kind, found.path) == ("other", "/v1/responses/resp_12-ab")
    assert match("/v1/responses/resp_1/cancel").route.methods == {"POST"}
    keyed = {p for p, r in EXACT.items() if r.keyed}
    assert keyed == {"/v1/models", "/metrics", "/openapi.json"}
