"""Tool definitions in a canonical form: declaration order does not change the bytes.

Every tool's dict keys are sorted recursively and the list is sorted by (type, function
name, canonical JSON). Lists inside a tool (e.g. "required") keep their order: their
order can mean something.

Each tool is encoded once (issue 33: 25k tools were sorted and JSON-encoded three or
four times, 1.39 s on the event loop): orjson with sorted keys (proxy/prompt/
exact_json.py), ~10x the stdlib's speed in one call that holds the GIL. The same bytes
give the sort key, tell whether anything changed, and make the key's JSON.
"""

from __future__ import annotations

from typing import Any

from proxy.prompt.exact_json import dumps


def canonical_tools(tools: Any, sort: bool) -> tuple[Any, str, list[str]]:
    """(the tools, canonical: `tools` itself when nothing changes; their canonical JSON
    for the key, "" when there are none; trace)."""
    if not sort or not isinstance(tools, list):
        return tools, tools_json(tools), []
    encoded = [canonical_json(tool) for tool in tools]
    order = sorted(range(len(tools)), key=lambda i: (*_names(tools[i]), encoded[i]))
    joined = "[" + ",".join(encoded[i] for i in order) + "]" if tools else ""
    in_order = order == list(range(len(tools)))
    if in_order and all(_plain_json(t) == e for t, e in zip(tools, encoded, strict=True)):
        return tools, joined, []
    new = [_sorted_keys(tools[i]) for i in order]
    return new, joined, ["canonical: tools sorted (keys and order)"]


def tools_json(tools: Any) -> str:
    """The canonical JSON of the tools ("" when there are none), for the prefix key."""
    if not tools:
        return ""
    return canonical_json(tools)


def canonical_json(value: Any) -> str:
    """Compact JSON, keys sorted, non-ASCII as is."""
    return dumps(value, sort_keys=True).decode()


def _plain_json(value: Any) -> str:
    """The same encoding with the keys in their own order (equal: already canonical)."""
    return dumps(value).decode()


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def _names(tool: Any) -> tuple[str, str]:
    tool_ = tool if isinstance(tool, dict) else {}
    function = tool_.get("function") if isinstance(tool_.get("function"), dict) else {}
    return str(tool_.get("type", "")), str(function.get("name", ""))
