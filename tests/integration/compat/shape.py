"""One request shape of the corpus: a route of ragtrim's table, the path sent, a body."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# seeded, greedy unless a shape samples on purpose, and short: the answer is a function of
# the request alone, and the whole corpus runs in a minute on two shared cores
GEN = {"max_tokens": 6, "temperature": 0, "seed": 7}
QUESTION = "Tell me about the printing press."
HI = [{"role": "user", "content": QUESTION}]
DROP = "<drop>"  # in a variant: the field is left out of the body


@dataclass(frozen=True)
class Shape:
    route: str  # the table's path (proxy/http/route_table.py), `{id}` as is
    name: str
    body: Any = None  # JSON; None for a GET; bytes are sent raw (a malformed body)
    method: str = "POST"
    path: str = ""  # what is sent, when it is not `route`
    extra: dict[str, Any] = field(default_factory=dict)  # headers

    @property
    def url(self) -> str:
        return self.path or self.route

    @property
    def label(self) -> str:
        return f"{self.route}:{self.name}"


def variants(route: str, base: dict, named: dict[str, dict | None]) -> list[Shape]:
    """A shape per entry: `base` updated with the entry's fields (None: `base` as it
    is; a field whose value is DROP is left out)."""
    out = []
    for name, change in named.items():
        body = {**base, **(change or {})}
        out.append(Shape(route, name, {k: v for k, v in body.items() if v != DROP}))
    return out
