"""The framework default templates, loaded from their data file (frameworks.toml).

The texts are data, not code: adding or updating a framework's template is a table in
frameworks.toml; `load_frameworks()` turns each table into a `FrameworkTemplate`
(framework.py matches it). `framework_text(name, form)` gives a text exactly as the
framework ships it (Jinja included), for tests that render it with the framework.
Read once, when the Segmenter is built at start-up.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proxy.prompt.segment.framework import FrameworkTemplate
from proxy.prompt.segment.words import parse_template

DATA = Path(__file__).with_name("frameworks.toml")
FORMS = ("system", "user", "prompt")


@dataclass(frozen=True)
class FrameworkText:
    """One table of frameworks.toml: each form's text as the framework has it."""

    name: str
    texts: dict[str, str]
    placeholders: dict[str, str]
    preamble: str = ""
    skip_metadata: bool = False
    rewrite: tuple[tuple[str, str], ...] = ()

    def template(self) -> FrameworkTemplate:
        forms = {
            form: parse_template(self._braces(text), **self.placeholders)
            for form, text in self.texts.items()
        }
        return FrameworkTemplate(
            self.name,
            **forms,
            preamble=tuple(self.preamble.split()),
            skip_metadata=self.skip_metadata,
        )

    def _braces(self, text: str) -> str:
        """Jinja loops and variables as the {placeholder} form parse_template reads."""
        for old, new in self.rewrite:
            if old not in text:
                raise ValueError(f"{self.name}: rewrite {old!r} not in its text")
            text = text.replace(old, new)
        return text


def read_texts(path: Path = DATA) -> list[FrameworkText]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    shared = data.pop("shared", {})
    return [_entry(name, table, shared) for name, table in data.items()]


def _entry(name: str, table: dict[str, Any], shared: dict[str, str]) -> FrameworkText:
    texts = dict.fromkeys(table.get("forms", ()), table.get("text", ""))
    texts.update({form: table[form] for form in FORMS if form in table})
    unknown = set(texts) - set(FORMS)
    if unknown or not texts:
        raise ValueError(f"{name}: forms must be among {FORMS}, got {sorted(texts)}")
    return FrameworkText(
        name,
        texts,
        dict(table["placeholders"]),
        preamble=shared[table["preamble"]] if "preamble" in table else "",
        skip_metadata=bool(table.get("skip_metadata", False)),
        rewrite=tuple((old, new) for old, new in table.get("rewrite", ())),
    )


def load_frameworks(path: Path = DATA) -> tuple[FrameworkTemplate, ...]:
    """Every framework of the data file, in its order (the order they are tried)."""
    return tuple(entry.template() for entry in read_texts(path))


def framework_text(name: str, form: str, path: Path = DATA) -> str:
    """The text of one framework's form ("system", "user", "prompt", or "preamble"),
    as the framework ships it."""
    for entry in read_texts(path):
        if entry.name == name:
            return entry.preamble if form == "preamble" else entry.texts[form]
    raise KeyError(name)
