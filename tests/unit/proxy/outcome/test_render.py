"""The request's outcome becomes headers in one place (proxy/outcome/render.py): no module
of the proxy writes or parses a decision string or a `response_headers` dict."""

import ast
import re
from pathlib import Path

from proxy.outcome.decision import Why, compress
from proxy.outcome.render import attributes, headers
from proxy.outcome.request import Compression, RequestOutcome

ROOT = Path(__file__).resolve().parents[4]
DECISION_TEXT = re.compile(r"(^|[^`/\w])(skip|compress|failed-open):")


def strings_outside_docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body and isinstance(n.body[0], ast.Expr)}  # fmt: skip
    strings = [n for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    return [n.value for n in strings if isinstance(n.value, str) and id(n) not in docs]


def test_no_decision_string_is_written_or_parsed_outside_the_outcome():
    found = {}
    for path in (ROOT / "proxy").rglob("*.py"):
        if path.parent.name == "outcome":
            continue
        text = path.read_text()
        bad = [s for s in strings_outside_docstrings(path) if DECISION_TEXT.search(s)]
        if re.search(r"\bresponse_headers\b", text) or bad:
            found[str(path.relative_to(ROOT))] = bad or ["response_headers"]
    assert not found


def test_the_outcome_renders_headers_and_typed_span_attributes():
    decided = compress(Why.AUTO, 0.5, saved_ms=20, cost_ms=3)
    squeezed = Compression("fast", 800, 300, 2.04, 1, 2, 1, 1)
    outcome = RequestOutcome("tags", "ab" * 32, decided, squeezed)
    assert headers(outcome) == {
        "x-ragtrim-template": "tags", "x-ragtrim-decision": "compress:auto(saved=20ms,cost=3ms)",
        "x-ragtrim-compressor": "fast", "x-ragtrim-tokens-before": "800",
        "x-ragtrim-tokens-after": "300", "x-ragtrim-compress-ms": "2.0",
        "x-ragtrim-cache-hits": "1/2", "x-ragtrim-features-seen": "1/1",
        "x-ragtrim-prefix-key": "ab" * 8,
    }  # fmt: skip
    spans = attributes(outcome)
    assert spans["ragtrim.tokens-before"] == 800 and spans["ragtrim.compress-ms"] == 2.0
    assert headers(RequestOutcome()) == {} == attributes(RequestOutcome())
