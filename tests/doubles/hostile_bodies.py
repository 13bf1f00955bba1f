"""Pieces of the request bodies that scale one field (issue 33's probe), shared by
tests/unit/proxy/server/test_hostile_fields.py and bench.abuse (bench/lib/abuse_fields.py)."""

from __future__ import annotations


def tool(i: int) -> dict:
    """One function tool of ~550 bytes: 25,000 of them make the probe's 14 MB body."""
    return {"type": "function", "function": {
        "name": f"lookup_{i}", "description": "Look a record up by its id. " * 11,
        "parameters": {"type": "object", "required": ["id"], "properties": {
            "id": {"type": "string", "description": "the record's id"},
            "unit": {"type": "string", "enum": ["a", "b", "c"]}}}}}  # fmt: skip


def schema(n: int) -> dict:
    """A `response_format` JSON schema of `n` properties (~67 bytes each)."""
    props = {f"field_{i}": {"type": "string", "description": f"the {i}th field"} for i in range(n)}
    return {"type": "json_schema", "json_schema": {"name": "s", "schema": {
        "type": "object", "properties": props}}}  # fmt: skip
